"""``tilelang.math``: integer helpers scripts use to pick tile sizes on the host."""

from __future__ import annotations


def next_power_of_2(x: int) -> int:
    """The smallest power of two >= ``x`` (for ``x >= 1``; TileLang's formula, kept as is)."""
    return 1 << (x - 1).bit_length()


def cdiv(a: int, b: int) -> int:
    """Ceiling division of integers."""
    return (a + b - 1) // b


__all__ = ["cdiv", "next_power_of_2"]
