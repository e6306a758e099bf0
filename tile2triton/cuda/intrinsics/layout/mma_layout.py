"""``tilelang.cuda.intrinsics.layout.mma_layout``: shared-memory swizzles as layout hints."""

from __future__ import annotations

from ....layout import Layout


def make_mma_swizzle_layout(shared_buf, is_smooth: bool = False) -> Layout:
    """A layout hint for ``T.annotate_layout``; Triton chooses the shared-memory layout itself."""
    return Layout(shared_buf, is_smooth=is_smooth)


def get_swizzle_layout(row_idx, col_idx, row_size, dtype, swizzle_bytes=None):
    raise NotImplementedError(
        "get_swizzle_layout computes CUDA shared-memory swizzled indices; tile2triton does not provide it "
        "(T.annotate_layout hints have no effect: Triton picks shared-memory layouts)"
    )


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
