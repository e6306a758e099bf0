"""Symbolic sizes in host code: ``T.dynamic`` / ``T.symbolic`` (``Dynamic``) and the integer
expressions built from them (``SizeExpr``).
"""

from __future__ import annotations

import builtins

from .dtypes import to_dtype


class _SizeArith:
    """Integer arithmetic on symbolic sizes in host code: ``T.Tensor((M // 128, 2 * N), ...)``
    builds a ``SizeExpr`` the binder turns into a kernel expression (evaluated at call time)."""

    def _op(self, op, other, swap=False):
        if isinstance(other, builtins.bool) or not isinstance(other, (builtins.int, _SizeArith)):
            return NotImplemented
        return SizeExpr(op, other, self) if swap else SizeExpr(op, self, other)

    def __add__(self, other):
        return self._op("+", other)

    def __radd__(self, other):
        return self._op("+", other, True)

    def __sub__(self, other):
        return self._op("-", other)

    def __rsub__(self, other):
        return self._op("-", other, True)

    def __mul__(self, other):
        return self._op("*", other)

    def __rmul__(self, other):
        return self._op("*", other, True)

    def __floordiv__(self, other):
        return self._op("//", other)

    def __rfloordiv__(self, other):
        return self._op("//", other, True)

    def __mod__(self, other):
        return self._op("%", other)

    def __rmod__(self, other):
        return self._op("%", other, True)


class SizeExpr(_SizeArith):
    """An integer expression of symbolic sizes (``op`` is + - * // % ceildiv max min)."""

    def __init__(self, op: str, lhs, rhs):
        self.op, self.lhs, self.rhs = op, lhs, rhs

    def __repr__(self) -> str:
        if self.op in ("ceildiv", "max", "min"):
            return f"T.{self.op}({self.lhs!r}, {self.rhs!r})"
        return f"({self.lhs!r} {self.op} {self.rhs!r})"


class Dynamic(_SizeArith):
    """A symbolic size bound at call time from tensor shapes (one kernel serves every size)."""

    def __init__(self, name: str, dtype="int32"):
        self.name = name
        self.dtype = to_dtype(dtype)

    def __repr__(self) -> str:
        return f"T.dynamic({self.name!r})"


def dynamic(name: str, dtype="int32"):
    """``T.dynamic("N")`` or ``T.dynamic("M, N")``."""
    names = [n for n in name.replace(",", " ").split() if n]
    if len(names) == 1:
        return Dynamic(names[0], dtype)
    return tuple(Dynamic(n, dtype) for n in names)


symbolic = dynamic
Var = Dynamic  # TileLang's T.dynamic returns a TVM Var: `isinstance(n, T.Var)` tells a symbolic size from an int
