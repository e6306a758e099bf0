"""``tilelang.layout``: layout annotations.  Triton chooses its own layouts, so these are
accepted and carry no meaning for the generated code (TileLang's results do not depend on them)."""

from __future__ import annotations


class Layout:
    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


class Fragment(Layout):
    pass


def make_swizzled_layout(buffer, *args, **kwargs) -> Layout:
    return Layout(buffer, *args, **kwargs)


def make_full_bank_swizzled_layout(buffer, *args, **kwargs) -> Layout:
    return Layout(buffer, *args, **kwargs)


def make_half_bank_swizzled_layout(buffer, *args, **kwargs) -> Layout:
    return Layout(buffer, *args, **kwargs)


class MetadataLayout(Layout):
    """Where a ``T.gemm_sp`` metadata tile's elements sit in memory (CUTLASS's interleaved order).
    On a shared buffer it only places elements (no effect here); on a global tensor it would say the
    tensor's bytes are stored permuted, which tile2triton does not read (the binder refuses it)."""


def make_cutlass_metadata_layout(buffer, mma_dtype="float16", arch=None, **extra_args) -> MetadataLayout:
    return MetadataLayout(buffer, mma_dtype, arch, **extra_args)


def make_metadata_layout(buffer, mma_dtype="float16", backend="cutlass", arch=None, **extra_args) -> MetadataLayout:
    return MetadataLayout(buffer, mma_dtype, backend, arch, **extra_args)
