"""``tilelang.layout.swizzle``: shared-memory swizzles and fragment layouts, kept as
``T.annotate_layout`` hints (Triton picks shared-memory swizzles and register layouts itself)."""

from __future__ import annotations

from .types import Fragment, Layout


def make_swizzled_layout(buffer, k_major: bool = True, allow_pad: bool = True) -> Layout:
    return Layout(buffer, k_major=k_major, allow_pad=allow_pad)


def make_volta_swizzled_layout(buffer, is_a: bool = True, k_inner: bool = True) -> Layout:
    return Layout(buffer, is_a=is_a, k_inner=k_inner)


def make_wgmma_swizzled_layout(buffer, continuity: int | None = None, k_major: bool = True) -> Layout:
    return Layout(buffer, continuity=continuity, k_major=k_major)


def make_tcgen05mma_swizzled_layout(buffer, continuity: int | None = None, k_major: bool = True) -> Layout:
    return Layout(buffer, continuity=continuity, k_major=k_major)


def make_full_bank_swizzled_layout(buffer) -> Layout:
    """128-byte swizzle."""
    return Layout(buffer, swizzle_bytes=128)


def make_half_bank_swizzled_layout(buffer) -> Layout:
    """64-byte swizzle."""
    return Layout(buffer, swizzle_bytes=64)


def make_quarter_bank_swizzled_layout(buffer) -> Layout:
    """32-byte swizzle."""
    return Layout(buffer, swizzle_bytes=32)


def make_linear_layout(buffer) -> Layout:
    """Row-major (no swizzle)."""
    return Layout(buffer)


def make_gemm_fragment_8x8() -> Fragment:
    """The 8x8 ldmatrix/stmatrix fragment of one warp."""
    return Fragment("gemm_fragment_8x8")


def make_gemm_fragment_8x8_transposed() -> Fragment:
    """The transposed 8x8 ldmatrix/stmatrix fragment of one warp."""
    return Fragment("gemm_fragment_8x8_transposed")


def make_fully_replicated_layout_fragment(buffer, threads: int) -> Fragment:
    """Every thread holds the whole buffer (results are the same in any layout)."""
    return Fragment(buffer, threads=threads)
