"""``tilelang.layout``: layout annotations.  Triton chooses its own register and shared-memory
layouts, so these are hints: accepted by ``T.annotate_layout`` and carrying no meaning for the
generated code (TileLang's results do not depend on them).  Querying a layout (``map_forward_index``,
``inverse``...) needs TileLang's index maps over TVM expressions and raises ``NotImplementedError``."""

from __future__ import annotations

from .swizzle import (
    make_full_bank_swizzled_layout,
    make_fully_replicated_layout_fragment,
    make_gemm_fragment_8x8,
    make_gemm_fragment_8x8_transposed,
    make_half_bank_swizzled_layout,
    make_linear_layout,
    make_quarter_bank_swizzled_layout,
    make_swizzled_layout,
    make_tcgen05mma_swizzled_layout,
    make_volta_swizzled_layout,
    make_wgmma_swizzled_layout,
)
from .swizzle_mode import SwizzleMode
from .types import Fragment, Layout

__all__ = [
    "Fragment",
    "Layout",
    "MetadataLayout",
    "SwizzleMode",
    "make_cutlass_metadata_layout",
    "make_fully_replicated_layout_fragment",
    "make_full_bank_swizzled_layout",
    "make_gemm_fragment_8x8",
    "make_gemm_fragment_8x8_transposed",
    "make_half_bank_swizzled_layout",
    "make_linear_layout",
    "make_metadata_layout",
    "make_quarter_bank_swizzled_layout",
    "make_swizzled_layout",
    "make_tcgen05mma_swizzled_layout",
    "make_volta_swizzled_layout",
    "make_wgmma_swizzled_layout",
]


class MetadataLayout(Layout):
    """Where a ``T.gemm_sp`` metadata tile's elements sit in memory (CUTLASS's interleaved order).
    On a shared buffer it only places elements (no effect here); on a global tensor it would say the
    tensor's bytes are stored permuted, which tile2triton does not read (the binder refuses it)."""


def make_cutlass_metadata_layout(buffer, mma_dtype="float16", arch=None, **extra_args) -> MetadataLayout:
    return MetadataLayout(buffer, mma_dtype, arch, **extra_args)


def make_metadata_layout(buffer, mma_dtype="float16", backend="cutlass", arch=None, **extra_args) -> MetadataLayout:
    return MetadataLayout(buffer, mma_dtype, backend, arch, **extra_args)
