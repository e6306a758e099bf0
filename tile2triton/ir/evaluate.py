"""Host-side evaluation of the IR expressions a call needs before launch: grids, output shapes,
shapes and strides of inputs given by expressions of the sizes (``2 * N``, ``T.ceildiv(N, 64)``).

One walker (``HostEvaluator``) decides which expressions can run on the host: integer
constants, sizes and scalar parameters, ``+ - * // %``, ``max``/``min``, casts (looked through).
Its subclasses give that walk a meaning: a value (``host_eval``), a closure specialised once
(``host_fn``), Python source for a generated launcher (runtime/launcher.py), and a readable form
for error messages (``format_expr``).

Also here: the row-major strides of a shape, which the binder declares for ``T.Tensor`` and the
runtime recognises (as contiguous) by structural comparison (``same_exprs``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable

from .dtypes import INT32
from .nodes import BinOp, Call, Cast, Const, Var, VarRef

HOST_OPS: dict[str, Callable] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "//": operator.floordiv,
    "%": operator.mod,
}
# the bit operations of two ints, as constant folding in codegen and passes/held_locals.py apply them
INT_BIT_OPS: dict[str, Callable] = {
    "<<": operator.lshift,
    ">>": operator.rshift,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
}
HOST_CALLS: dict[str, Callable] = {"max": max, "min": min}


class NotHostEvaluable(ValueError):
    """An expression the host cannot evaluate (a float op, a comparison, ...)."""


class HostEvaluator:
    """The walk over a host expression; subclasses say what a constant, a variable and an
    operation become (``visit`` returns that)."""

    def visit(self, e):
        if isinstance(e, int):
            return self.const(e)
        if isinstance(e, Const):
            return self.const(e.value)
        if isinstance(e, VarRef):
            return self.var(e.var)
        if isinstance(e, Cast):
            return self.visit(e.value)
        if isinstance(e, BinOp) and e.op in HOST_OPS:
            return self.apply(e.op, HOST_OPS[e.op], self.visit(e.lhs), self.visit(e.rhs))
        if isinstance(e, Call) and e.fn in HOST_CALLS and len(e.args) == 2:
            return self.apply(e.fn, HOST_CALLS[e.fn], self.visit(e.args[0]), self.visit(e.args[1]))
        raise NotHostEvaluable(f"cannot evaluate {e!r} on the host")

    def const(self, value):
        raise NotImplementedError

    def var(self, var: Var):
        raise NotImplementedError

    def apply(self, name: str, fn: Callable, a, b):
        raise NotImplementedError


class _Values(HostEvaluator):
    def __init__(self, values: dict):
        self.values = values

    def const(self, value):
        return value

    def var(self, var: Var):
        return self.values[var]

    def apply(self, name: str, fn: Callable, a, b):
        return fn(a, b)


def host_eval(e, values: dict):
    """The value of ``e`` given the run-time values of its variables."""
    return _Values(values).visit(e)


class _Closure(HostEvaluator):
    """A constant where ``e`` has no variables (folded), else a function of the values dict."""

    def const(self, value):
        return value

    def var(self, var: Var):
        return lambda v: v[var]

    def apply(self, name: str, fn: Callable, a, b):
        if not callable(a) and not callable(b):
            return fn(a, b)
        fa = a if callable(a) else (lambda v, a=a: a)
        fb = b if callable(b) else (lambda v, b=b: b)
        return lambda v: fn(fa(v), fb(v))


_CLOSURE = _Closure()


def host_fn(e):
    """``host_eval`` specialised once: a constant, or a closure over the values dict."""
    return _CLOSURE.visit(e)


class PythonSource(HostEvaluator):
    """``e`` as a Python expression; ``var`` and ``const`` name what the source refers to."""

    def apply(self, name: str, fn: Callable, a, b):
        return f"({a} {name} {b})" if name in HOST_OPS else f"{name}({a}, {b})"


class _Readable(PythonSource):
    def __init__(self, values: dict | None):
        self.values = values

    def const(self, value):
        return str(value)

    def var(self, var: Var):
        return var.name if not self.values or var not in self.values else f"{var.name}={self.values[var]}"


def format_expr(e, values: dict | None = None) -> str:
    """``e`` as a user reads it (sizes by name, with their values where known); ``?`` where the
    host cannot evaluate it."""
    try:
        return _Readable(values).visit(e)
    except NotHostEvaluable:
        return "?"


def row_major_strides(shape) -> tuple:
    """The strides of a row-major (contiguous) tensor of ``shape``: ints where the extents are,
    the innermost dynamic extent its own stride, products as ``BinOp("*")`` above it."""
    strides, running = [], 1
    for d in reversed(tuple(shape)):
        strides.append(running)
        if isinstance(running, int) and isinstance(d, int):
            running = running * d
        elif isinstance(running, int) and running == 1:
            running = d
        else:
            running = BinOp("*", _int_expr(running), _int_expr(d), INT32)
    return tuple(reversed(strides))


def _int_expr(value):
    if isinstance(value, int):
        return Const(value, INT32, weak=True)
    if isinstance(value, Var):
        return VarRef(value)
    return value


def same_exprs(a, b) -> bool:
    """Are two tuples of dims or strides the same expressions (structurally, variables by identity)?"""

    def norm(x):
        if isinstance(x, int):
            return x
        if isinstance(x, Const):
            return x.value
        if isinstance(x, VarRef):
            return ("var", id(x.var))
        if isinstance(x, BinOp):
            return (x.op, norm(x.lhs), norm(x.rhs))
        return ("node", id(x))

    return len(a) == len(b) and all(norm(x) == norm(y) for x, y in zip(a, b))
