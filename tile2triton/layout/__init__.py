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
    "SwizzleMode",
    "make_cutlass_metadata_layout",
    "make_fully_replicated_layout_fragment",
    "make_full_bank_swizzled_layout",
    "make_gemm_fragment_8x8",
    "make_gemm_fragment_8x8_transposed",
    "make_half_bank_swizzled_layout",
    "make_linear_layout",
    "make_quarter_bank_swizzled_layout",
    "make_swizzled_layout",
    "make_tcgen05mma_swizzled_layout",
    "make_volta_swizzled_layout",
    "make_wgmma_swizzled_layout",
]


def make_cutlass_metadata_layout(*args, **kwargs) -> Layout:
    """Metadata layout of TileLang's 2:4 sparse GEMM; T.gemm_sp is not supported, so neither is this."""
    raise NotImplementedError(
        "tilelang.layout.make_cutlass_metadata_layout: the metadata layout of T.gemm_sp (2:4 structured-sparse "
        "GEMM), which tile2triton does not support"
    )
