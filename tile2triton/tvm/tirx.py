"""``tvm.tirx`` (``tvm.tir``): the expression helpers TileLang kernels call.

Inside a kernel ``const``, ``Cast``, ``reinterpret`` and ``Select`` mean what ``T.cast``,
``T.Cast``, ``T.reinterpret`` and ``T.if_then_else`` mean (they carry the same binder tags, with
TVM's argument order).  The expression classes exist so annotations (``x: tirx.PrimExpr``) and
``isinstance`` checks in helper code resolve; tile2triton's IR is not TVM's, so no value of a
tile2triton kernel is an instance of them.
"""

from __future__ import annotations

from ..language import Cast, _kernel_only, if_then_else
from ..language.dtypes import TypedLiteral, to_dtype


def const(value, dtype=None, span=None):
    """A typed constant (``tirx.const(1, "uint8")``); the dtype defaults as in TVM (int32 / float32)."""
    if dtype is None:
        dtype = "bool" if isinstance(value, bool) else ("int32" if isinstance(value, int) else "float32")
    return TypedLiteral(to_dtype(dtype), value)


@_kernel_only("reinterpret")
def reinterpret(dtype, value, span=None):
    """Bit cast of ``value`` to ``dtype`` (TVM's order: dtype first)."""


Select = if_then_else


class PrimExpr:
    """TVM expression base class (annotations only)."""

    def __init__(self, *args, **kwargs):
        from . import OUT_OF_SCOPE

        raise TypeError(f"tilelang.tvm.tirx.{type(self).__name__}(...): {OUT_OF_SCOPE}")


class Var(PrimExpr):
    pass


class IntImm(PrimExpr):
    pass


class FloatImm(PrimExpr):
    pass


class BufferLoad(PrimExpr):
    pass


class Call(PrimExpr):
    pass


class Stmt:
    pass


__all__ = ["Call", "Cast", "BufferLoad", "FloatImm", "IntImm", "PrimExpr", "Select", "Stmt", "Var", "const",
           "reinterpret"]  # fmt: skip


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    from . import OUT_OF_SCOPE

    raise AttributeError(f"tilelang.tvm.tirx.{name}: {OUT_OF_SCOPE}")
