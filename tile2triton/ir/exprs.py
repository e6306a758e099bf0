"""Static-expression helpers shared by the stages: lifting Python values into TileIR, TVM's
typing of binary ops, static extents and structural keys.  They read TileIR and build nothing
but expressions; every stage after the binder may use them."""

from __future__ import annotations

import dataclasses

from ..errors import TileLangCompileError
from ..language.dtypes import DType, TypedLiteral, promote
from . import nodes as ir
from .dtypes import BOOL, FLOAT32, INT32


def const_int(value: int) -> ir.Const:
    """A Python int as a weak int32 constant (it adopts the other operand's dtype)."""
    return ir.Const(value, INT32, weak=True)


def static(value):
    """The Python int behind an extent, or None when it is only known at run time."""
    if isinstance(value, int):
        return value
    if isinstance(value, ir.Const) and isinstance(value.value, int):
        return value.value
    return None


def is_python_value(v) -> bool:
    """A compile-time Python value (not a kernel value the binder turned into TileIR)."""
    return not isinstance(v, (ir.Expr, ir.Buffer, ir.Region, ir.Var))


def as_expr(value, loc: ir.Loc | None = None) -> ir.Expr:
    """Lift a compile-time Python value into a TileIR constant."""
    if isinstance(value, ir.Expr):
        return value
    if isinstance(value, ir.Var):
        return ir.VarRef(value)
    if isinstance(value, bool):
        return ir.Const(value, BOOL, weak=True)
    if isinstance(value, int):
        return ir.Const(value, INT32, weak=True)
    if isinstance(value, float):
        return ir.Const(value, FLOAT32, weak=True)
    if isinstance(value, TypedLiteral):
        return ir.Const(value.value if value.value is not None else 0, value.dtype)
    raise TileLangCompileError(f"{value!r} cannot be used as a kernel value", loc)


def is_weak(e: ir.Expr) -> bool:
    return isinstance(e, ir.Const) and e.weak


# the integer ops whose value C's promotion carries past an 8- or 16-bit type (TVM types ``A[i] * A[i]`` of
# int8 as int8, its CUDA computes ``(int)(A[i] * A[i])``); &, |, ^, >>, % and max / min of one signedness
# stay within it, so they keep the narrow type (and the generated code its narrow arithmetic)
_PAST_NARROW = ("+", "-", "*", "<<", "//", "/")


def binary_dtype(op: str, a: ir.Expr, b: ir.Expr) -> DType:
    """TVM's typing of a binary op as TileLang's CUDA computes it: a Python int adopts the other
    operand's type; a Python float is a float32 constant, so ``half * 0.5`` is float32 arithmetic
    (``(float)x * 0.5f``); integers narrower than 32 bits add, subtract, multiply, divide and shift
    left in int32, as C promotes them (``int8 * int8`` stored to an int32 buffer is the full product),
    as does any op of two narrow integers of different signedness. ``op``: the operator, or the
    call's name (``"max"``, ``"select"``, a comparison's operator)."""
    if op in ("and", "or"):
        return BOOL
    if is_weak(a) and not is_weak(b):
        a, b = b, a
    if is_weak(b) and not is_weak(a):
        dtype = promote(a.dtype, FLOAT32) if b.dtype.is_float else a.dtype
        mixed = False
    else:
        dtype = promote(a.dtype, b.dtype)
        mixed = a.dtype.kind != b.dtype.kind
    if dtype.is_int and dtype.bits < 32 and (op in _PAST_NARROW or mixed):
        return INT32
    return dtype


def tvm_dtype(e: ir.Expr) -> DType:
    """The type TVM gives ``e`` where ``binary_dtype`` computes in int32: two integers narrower than 32
    bits keep their (promoted) narrow type in TVM, whose bits ``T.reinterpret`` reads (``(Hi << T.uint16(8))
    | Lo`` is uint16); a Python int beside one is int32 there too (``(int)A[i] + 100``)."""
    if (
        isinstance(e, ir.BinOp)
        and e.dtype == INT32
        and e.op not in ("and", "or")
        and not (is_weak(e.lhs) or is_weak(e.rhs))
    ):
        return promote(tvm_dtype(e.lhs), tvm_dtype(e.rhs))
    return e.dtype  # (a negation stays int32: its int_promoted cast cannot be told from the user's own)


def int_promoted(e: ir.Expr) -> ir.Expr:
    """``e`` as C's integer promotion computes with it: an integer narrower than 32 bits as int32
    (TileLang's CUDA negates an int8 in int: ``-A[i]`` of -128 is 128)."""
    return ir.Cast(e, INT32) if e.dtype.is_int and e.dtype.bits < 32 and not is_weak(e) else e


def int_const(node):
    """The value of an int constant, else None."""
    if isinstance(node, ir.Const) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    return None


def ir_key(node):
    """A structural key for an expression (for cancelling equal terms)."""
    if isinstance(node, ir.VarRef):
        return ("var", id(node.var))
    if isinstance(node, ir.Const):
        return ("const", node.value)
    if isinstance(node, ir.BinOp):
        return ("bin", node.op, ir_key(node.lhs), ir_key(node.rhs))
    if isinstance(node, ir.Load):
        return ("load", id(node.buffer), tuple(ir_key(i) for i in node.indices))
    return ("node", id(node))


# an update ``acc[i] = acc[i] OP v`` -> the atomic kind that adds ``v``'s contribution
_UPDATE_BINOPS = {"+": "add", "&": "and", "|": "or", "^": "xor"}


def is_element(e, buffer, indices) -> bool:
    """Is ``e`` a load of ``buffer[indices]`` (the same index expressions, structurally)?"""
    return (
        isinstance(e, ir.Load)
        and e.buffer is buffer
        and len(e.indices) == len(indices)
        and all(ir_key(a) == ir_key(b) for a, b in zip(e.indices, indices))
    )


def update_of(buffer, indices, value, kinds=None):
    """``(kind, v)`` when ``value`` is ``buffer[indices]`` combined with ``v`` (``acc[i] + v``,
    ``T.max(acc[i], v)``, ``&``, ``|``, ``^``): the element updated with ``v``, each kind of update
    (an ``ir.Atomic`` kind: add, max, min, and, or, xor) taken only if in ``kinds``; None for any
    other value."""
    if isinstance(value, ir.BinOp) and value.op in _UPDATE_BINOPS:
        kind, operands = _UPDATE_BINOPS[value.op], (value.lhs, value.rhs)
    elif isinstance(value, ir.Call) and value.fn in ("max", "min") and len(value.args) == 2:
        kind, operands = value.fn, tuple(value.args)
    else:
        return None
    if kinds is not None and kind not in kinds:
        return None
    if is_element(operands[0], buffer, indices):
        return kind, operands[1]
    if is_element(operands[1], buffer, indices):
        return kind, operands[0]
    return None


def static_difference(e):
    """The int value of a slice extent such as ``(off + n) - off`` or ``(bx + 1) * bm - bx * bm``:
    expand it as a linear form over its symbolic terms; None unless they all cancel."""
    terms: dict = {}

    def add(node, coef):
        if isinstance(node, ir.Const) and isinstance(node.value, int) and not isinstance(node.value, bool):
            terms[None] = terms.get(None, 0) + coef * node.value
        elif isinstance(node, ir.BinOp) and node.op in ("+", "-"):
            add(node.lhs, coef)
            add(node.rhs, coef if node.op == "+" else -coef)
        elif isinstance(node, ir.BinOp) and node.op == "*" and int_const(node.rhs) is not None:
            add(node.lhs, coef * int_const(node.rhs))
        elif isinstance(node, ir.BinOp) and node.op == "*" and int_const(node.lhs) is not None:
            add(node.rhs, coef * int_const(node.lhs))
        elif isinstance(node, ir.UnaryOp) and node.op == "-":
            add(node.operand, -coef)
        else:
            key = ir_key(node)
            terms[key] = terms.get(key, 0) + coef

    add(e, 1)
    if all(v == 0 for k, v in terms.items() if k is not None):
        return terms.get(None, 0)
    return None


def map_children(e, f):
    """``e`` with ``f`` applied to each expression it holds directly (operands, indices, call
    arguments, a warp op's mask); unchanged children keep the node as it is."""
    if not isinstance(e, ir.Expr) or not dataclasses.is_dataclass(e):
        return e
    changes = {}
    for fl in dataclasses.fields(e):
        old = getattr(e, fl.name)
        if isinstance(old, ir.Expr):
            new = f(old)
        elif isinstance(old, tuple) and any(isinstance(x, ir.Expr) for x in old):
            new = tuple(f(x) if isinstance(x, ir.Expr) else x for x in old)
        else:
            continue
        if new is not old:
            changes[fl.name] = new
    return dataclasses.replace(e, **changes) if changes else e


def conjuncts(cond) -> list:
    """The terms of a condition's and-chain (``a and b``, ``a & b`` of booleans), left to right; a
    condition that is not a conjunction is its one term."""
    if isinstance(cond, ir.BinOp) and (cond.op == "and" or (cond.op == "&" and cond.dtype.kind == "bool")):
        return conjuncts(cond.lhs) + conjuncts(cond.rhs)
    return [cond]


def substitute(e, var: ir.Var, value: ir.Expr):
    """``e`` with ``var`` replaced by ``value`` (the unchanged nodes shared, not copied)."""
    if isinstance(e, ir.VarRef):
        return value if e.var is var else e
    return map_children(e, lambda x: substitute(x, var, value))


def mentions(e, var: ir.Var) -> bool:
    """Whether expression ``e`` reads ``var`` (anything not an expression reads nothing)."""
    return isinstance(e, ir.Expr) and any(isinstance(sub, ir.VarRef) and sub.var is var for sub in ir.iter_expr_tree(e))


def static_trips(loop: ir.For) -> int | None:
    """A loop's iteration count where its bounds and step are constants."""
    start, stop, step = (static(e) for e in (loop.start, loop.stop, loop.step))
    if start is None or stop is None or not step:
        return None
    return max(0, -(-(stop - start) // step))
