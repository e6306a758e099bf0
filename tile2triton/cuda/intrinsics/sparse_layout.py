"""``tilelang.cuda.intrinsics.sparse_layout``: the 2:4 structured-sparsity contract of ``T.gemm_sp``.

A dense row is cut into groups of ``group`` elements along K, each holding at most ``elem``
nonzeros. The compressed operand keeps the ``elem`` values per group in order; the metadata keeps,
per group, a 4-bit code: bits [1:0] and [3:2] are the positions (0-3) of the two kept values. For
32-bit elements (1:2 sparsity) the positions count 16-bit halves (``0b0100``: the first element,
``0b1110``: the second). Codes are packed little-endian, ``meta_bits // 4`` groups per metadata
element, in row-major order (``E[m, j]`` covers dense columns ``j * e_factor ...``).
``tile2triton/frontend/rules_gemm.py`` (``bind_gemm_sp``) decodes this format."""

from __future__ import annotations

from ...language.dtypes import DType, dtype

BITS_PER_GROUP = 4

GROUP_CONFIG: dict[DType, tuple[int, int]] = {
    dtype("float32"): (1, 2),
    dtype("float16"): (2, 4),
    dtype("bfloat16"): (2, 4),
    dtype("int8"): (2, 4),
    dtype("uint8"): (2, 4),
    dtype("float8_e4m3fn"): (2, 4),
    dtype("float8_e5m2"): (2, 4),
}


def get_e_factor(a_dtype, meta_dtype) -> int:
    """How many dense ``a_dtype`` elements one ``meta_dtype`` metadata element describes."""
    _, group = GROUP_CONFIG[dtype(a_dtype)]
    return (dtype(meta_dtype).bits // BITS_PER_GROUP) * group


def get_e_replicate_factor(a_dtype) -> int:
    """How many consecutive MMA threads share one metadata value (a CUDA detail, kept for callers)."""
    return 1 if dtype(a_dtype).bits <= 8 else 2
