"""``tilelang.cuda.intrinsics.layout.mma_layout``: shared-memory swizzles as layout hints."""

from __future__ import annotations

from ....language.dtypes import to_dtype
from ....layout import Layout


def make_mma_swizzle_layout(shared_buf, is_smooth: bool = False) -> Layout:
    """A layout hint for ``T.annotate_layout``; Triton chooses the shared-memory layout itself."""
    return Layout(shared_buf, is_smooth=is_smooth)


def get_swizzle_layout(row_idx, col_idx, row_size, dtype, swizzle_bytes=None):
    """TileLang's shared-memory swizzle of element (row_idx, col_idx) in rows of ``row_size``
    elements: (column tile, row, swizzled column), 16-byte vectors XOR-permuted within each group of
    8 rows.  Host arithmetic for layout functions (T.annotate_layout hints have no effect here)."""
    bits = to_dtype(dtype).bits
    row_bytes = bits * row_size // 8
    if row_bytes % 32:
        raise ValueError(f"get_swizzle_layout: a row must be a multiple of 32 bytes, got {row_bytes}")
    if swizzle_bytes is None:
        swizzle_bytes = min(128, row_bytes)
    elem_per_16b = 128 // bits
    swizzle_vectors = int(swizzle_bytes) // 16
    col_16b = col_idx // elem_per_16b
    col_in_16b = col_idx % elem_per_16b
    col_tile = col_16b // swizzle_vectors
    vector = col_16b % swizzle_vectors
    source = (row_idx % 8) // (8 // swizzle_vectors)
    return col_tile, row_idx, (vector ^ source) * elem_per_16b + col_in_16b


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)

    def mma_fragment_layout(*args, **kwargs):
        raise NotImplementedError(
            f"tilelang.cuda.intrinsics.layout.mma_layout.{name}: MMA register-fragment layouts are below "
            "Triton's abstraction (T.gemm lowers to tl.dot)"
        )

    mma_fragment_layout.__name__ = name
    return mma_fragment_layout
