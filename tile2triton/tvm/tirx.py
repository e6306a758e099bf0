"""``tvm.tirx`` (``tvm.tir``): the expression helpers TileLang kernels call.

Inside a kernel ``const``, ``Cast``, ``reinterpret`` and ``Select`` mean what ``T.cast``,
``T.Cast``, ``T.reinterpret`` and ``T.if_then_else`` mean (they carry the same binder tags, with
TVM's argument order).  The expression classes exist so annotations (``x: tirx.PrimExpr``) and
``isinstance`` checks in helper code resolve; tile2triton's IR is not TVM's, so no value of a
tile2triton kernel is an instance of them.  ``Var(name, dtype)`` is a symbolic size, as
``T.dynamic(name, dtype)`` is.
"""

from __future__ import annotations

import re

from ..language import And, Cast, Dynamic, Not, Or, _primitive, if_then_else
from ..language._primitive import _kernel_only
from ..language.dtypes import DTYPES, UNSUPPORTED, TypedLiteral, to_dtype


def const(value, dtype=None, span=None):
    """A typed constant (``tirx.const(1, "uint8")``); the dtype defaults as in TVM (int32 / float32)."""
    if dtype is None:
        dtype = "bool" if isinstance(value, bool) else ("int32" if isinstance(value, int) else "float32")
    return TypedLiteral(to_dtype(dtype), value)


@_kernel_only("reinterpret")
def reinterpret(dtype, value, span=None):
    """Bit cast of ``value`` to ``dtype`` (TVM's order: dtype first)."""


Select = if_then_else


_VECTOR = re.compile(r"(\w+?)x(\d+)")  # a vector dtype name: float16x2


class PrimExpr:
    """TVM expression base class (annotations only)."""

    def __init__(self, *args, **kwargs):
        from . import OUT_OF_SCOPE

        raise TypeError(f"tilelang.tvm.tirx.{type(self).__name__}(...): {OUT_OF_SCOPE}")


class Var(Dynamic, PrimExpr):
    """``tirx.Var("n", "int32")``: a named symbolic value; as a buffer size it is what
    ``T.dynamic("n", "int32")`` is (bound at call time from the tensors' shapes)."""

    def __init__(self, name: str, dtype="int32", span=None):
        vector = _VECTOR.fullmatch(str(getattr(dtype, "name", dtype)))
        if vector is not None and vector[1] in DTYPES:
            # a packed value's variable (T.float16x2): host code reads its dtype, as TileLang's checks
            # of T.add2 and the like do; as a size it stays an error
            self.name, self.dtype = name, UNSUPPORTED[vector[0]]
            return
        Dynamic.__init__(self, name, dtype)

    def __repr__(self) -> str:
        return f"tirx.Var({self.name!r}, {str(self.dtype)!r})"


class IntImm(TypedLiteral, PrimExpr):
    """``tirx.IntImm("int32", 3)``: a typed constant, as ``T.int32(3)`` is."""

    def __init__(self, dtype, value, span=None):
        object.__setattr__(self, "dtype", to_dtype(dtype))
        object.__setattr__(self, "value", int(value))


class FloatImm(TypedLiteral, PrimExpr):
    """``tirx.FloatImm("float32", 0.5)``: a typed constant, as ``T.float32(0.5)`` is."""

    def __init__(self, dtype, value, span=None):
        object.__setattr__(self, "dtype", to_dtype(dtype))
        object.__setattr__(self, "value", float(value))


class BufferLoad(PrimExpr):
    pass


class Call(PrimExpr):
    """``tirx.Call(dtype, op, args)``: a call expression built in host code (see T.__exp on a Var);
    it records the call, which only a kernel body lowers."""

    def __init__(self, dtype, op, args, span=None):
        self.dtype = str(dtype)
        self.op = op
        self.args = tuple(args)

    def __repr__(self) -> str:
        return f"tirx.Call({self.dtype!r}, {self.op!r}, {list(self.args)!r})"


_primitive._host_call_class = Call


class Stmt:
    pass


# TVM's logical operators (language/_math.py; frontend/rules_tvm.py binds them); ``tirx.expr``
# (tir_expr.py, attached by tvm/__init__.py) re-exports them with the expression classes above


__all__ = ["And", "Call", "Cast", "BufferLoad", "FloatImm", "IntImm", "Not", "Or", "PrimExpr", "Select", "Stmt", "Var",
           "const", "reinterpret"]  # fmt: skip


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    from . import OUT_OF_SCOPE

    raise AttributeError(f"tilelang.tvm.tirx.{name}: {OUT_OF_SCOPE}")
