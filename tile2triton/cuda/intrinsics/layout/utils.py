"""``tilelang.cuda.intrinsics.layout.utils``."""

from __future__ import annotations


def get_mma_micro_size(dtype) -> tuple[int, int, int]:
    """(x, y, k) of one tensor-core MMA tile: k is 32 for 8-bit inputs, 16 otherwise."""
    return 16, 16, 32 if str(dtype) in ("float8_e4m3", "float8_e4m3fn", "float8_e5m2", "int8", "uint8") else 16
