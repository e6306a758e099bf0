"""Binding rules of atomics and reducers: ``T.atomic_*`` (their memory orders, checked at
decoration where TileLang checks them), ``T.reducer_init``/``T.reducer_update``/``T.finalize_reducer``.
"""

from __future__ import annotations

import ast
import inspect

from .. import ir
from ..errors import CheckFailedError, InvalidArgumentError, LoweringCheckError, TileLangCompileError
from ..ir import BOOL, INT32
from ..ir.exprs import as_expr, const_int, is_weak
from ..language.dtypes import TypedLiteral, lookup_dtype
from . import vectors
from .regions import extent_of, legalize_pairwise_extents, to_region, whole
from .rules_base import RULES, BinderLike, _operand, _product, rule
from .source import KernelSource

# The C++ memory orders each operation accepts (a load cannot release, a store cannot acquire).
_ALL_ORDERS = (None, "relaxed", "consume", "acquire", "release", "acq_rel", "seq_cst")
_MEMORY_ORDERS = {
    "atomic_load": ("relaxed", "consume", "acquire", "seq_cst"),
    "atomic_store": ("relaxed", "release", "seq_cst"),
}


def _memory_order_error(name: str, order) -> str | None:
    if order in _MEMORY_ORDERS.get(name, _ALL_ORDERS):
        return None
    valid = ", ".join(repr(o) for o in _MEMORY_ORDERS.get(name, _ALL_ORDERS[1:]))
    return f"T.{name} does not support memory_order={order!r}; use one of {valid}"


def _check_memory_order(b: BinderLike, node, name: str, order) -> None:
    message = _memory_order_error(name, order)
    if message is not None:
        raise InvalidArgumentError(message, b.loc(node))


_UNKNOWN = object()  # an argument whose value is not known when the kernel is decorated


def _value_at_definition(expr: ast.expr, scope):
    """A literal, a bound name or an attribute of one (``T.float32``); else _UNKNOWN."""
    if isinstance(expr, ast.Constant):
        return expr.value
    if isinstance(expr, ast.Name):
        return scope[expr.id] if expr.id in scope else _UNKNOWN
    if isinstance(expr, ast.Attribute):
        base = _value_at_definition(expr.value, scope)
        return _UNKNOWN if base is _UNKNOWN else getattr(base, expr.attr, _UNKNOWN)
    return _UNKNOWN


def _definition_memory_order(name: str, args: dict) -> TileLangCompileError | None:
    order = args.get("memory_order", _UNKNOWN)
    message = _memory_order_error(name, order) if isinstance(order, str) else None
    return InvalidArgumentError(message) if message else None


def _definition_reducer_dtype(name: str, args: dict) -> TileLangCompileError | None:
    op, dt = args.get("op", "sum"), lookup_dtype(args.get("dtype", _UNKNOWN))
    if isinstance(op, str) and op.startswith("bit") and dt is not None and not (dt.is_int or dt == BOOL):
        return CheckFailedError(f"bitwise reducer op {op!r} requires an integer dtype, got {dt.name}")
    return None


# what TileLang checks while it builds the prim_func, per primitive
_DEFINITION_CHECKS = {"atomic_load": _definition_memory_order, "atomic_store": _definition_memory_order,
                      "alloc_reducer": _definition_reducer_dtype}  # fmt: skip


def _arguments_at_definition(source: KernelSource) -> None:
    """Arguments TileLang rejects while it builds a prim_func (``T.atomic_load(...,
    memory_order="release")``, a bitwise ``T.alloc_reducer`` of floats): an error when the kernel is
    decorated, as in TileLang, where the argument is a literal or a name bound by then (anything
    else is checked when the kernel is bound)."""
    for node in ast.walk(source.tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        check = _DEFINITION_CHECKS.get(node.func.attr)
        fn = _value_at_definition(node.func, source.scope) if check is not None else None
        if getattr(fn, "__t2t__", None) != node.func.attr:
            continue  # not that T primitive
        values = [_value_at_definition(a, source.scope) for a in node.args]
        named = {k.arg: _value_at_definition(k.value, source.scope) for k in node.keywords if k.arg}
        try:
            bound = inspect.signature(fn).bind(*values, **named)
        except TypeError:
            continue  # the binder says what is wrong with the call
        bound.apply_defaults()
        error = check(node.func.attr, {k: v for k, v in bound.arguments.items() if v is not _UNKNOWN})
        if error is not None:
            end = node.end_col_offset if node.end_lineno == node.lineno else None
            error.loc = ir.Loc(source.file, node.lineno, node.col_offset, end)
            error.args = (error.render(),)
            raise error


KernelSource.definition_checks.append(_arguments_at_definition)

# TileLang's atomic_add/max/min/or with no memory_order are relaxed (memory order id 0, CUDA's
# atomicAdd); T.atomic_addx2/x4 take none and are relaxed too.
RELAXED = "relaxed"


def _atomic_rule(kind):
    def bind(b: BinderLike, node, args):
        _check_memory_order(b, node, f"atomic_{kind}", args.get("memory_order"))
        order = args.get("memory_order") or RELAXED
        dst, value = args["dst"], args["value"]
        if isinstance(dst, ir.Load) and not isinstance(value, (ir.Buffer, ir.Region)):
            return _element_atomic(b, node, kind, dst, as_expr(value), args.get("return_prev", False), order)
        if args.get("return_prev"):
            raise b.error(f"T.atomic_{kind}(..., return_prev=True) takes one element (dst[i, j]), not a tile", node)
        dst = _operand(b, dst, node, "atomic destination")
        if kind == "add" and args.get("use_tma"):
            _check_tma_atomic_add(b, node, dst, value)
        if isinstance(value, (ir.Buffer, ir.Region, ir.Load)):
            src_ext, dst_ext = extent_of(value), extent_of(dst)
            src_ext = src_ext if src_ext is not None else [1] * len(dst_ext)
            dst_ext = dst_ext if dst_ext is not None else [1] * len(src_ext)
            src_ext, dst_ext = legalize_pairwise_extents(src_ext, dst_ext)
            b.emit(ir.Atomic(b.loc(node), kind, to_region(dst, dst_ext), to_region(value, src_ext), order=order))
        else:
            region = dst if isinstance(dst, ir.Region) else whole(dst)
            b.emit(ir.Atomic(b.loc(node), kind, region, as_expr(value), order=order))
        return None

    return bind


for _kind in ("add", "max", "min"):
    RULES["atomic_" + _kind] = _atomic_rule(_kind)

# the dtypes of PTX's cp.reduce.async.bulk .add (TileLang's IsValidTMAReduceAddDtype)
_TMA_ADD_DTYPES = ("float16", "bfloat16", "float32", "int32", "uint32", "uint64")


def _check_tma_atomic_add(b: BinderLike, node, dst, value) -> None:
    """``T.atomic_add(dst, src, use_tma=True)``: tile2triton's atomics need no TMA, but TileLang's
    lowering rejects what the bulk reduction cannot do, an error there (an ICHECK, InternalError)."""
    if not isinstance(value, (ir.Buffer, ir.Region, ir.Load)):
        return

    def name(x):
        buf = x if isinstance(x, ir.Buffer) else x.buffer
        lanes = vectors.info(b, buf)
        return buf.name, buf.dtype.name if lanes is None else f"{buf.dtype.name}x{lanes.lanes}"

    (src_name, src_dtype), (dst_name, dst_dtype) = name(value), name(dst)
    if src_dtype != dst_dtype:
        raise LoweringCheckError(f"TMA atomic add between buffer {src_name} and {dst_name} requires matching dtypes, "
                                 f"but got {src_dtype} and {dst_dtype}", b.loc(node))  # fmt: skip
    if dst_dtype not in _TMA_ADD_DTYPES:
        raise LoweringCheckError(f"TMA atomic add does not support dtype {dst_dtype}; supported scalar dtypes are "
                                 "float16, bfloat16, float32, int32, uint32, and uint64", b.loc(node))  # fmt: skip


def _element_atomic(
    b: BinderLike, node, kind: str, dst: ir.Load, value, return_prev, order: str | None
) -> ir.Expr | None:
    """One element's atomic; with ``return_prev`` its value is the element's previous value."""
    if not isinstance(return_prev, bool):
        raise b.error("return_prev must be a compile-time bool", node)
    result = ir.Var(b.fresh_name("prev"), dst.buffer.dtype, "let") if return_prev else None
    b.emit(ir.Atomic(b.loc(node), kind, dst, value, result, order))
    return ir.VarRef(result) if result is not None else None


@rule("atomic_or")
def bind_atomic_or(b: BinderLike, node, args):
    dst = args["dst"]
    if not isinstance(dst, ir.Load) or not dst.buffer.dtype.is_int:
        raise b.error("T.atomic_or takes one element of an integer buffer (dst[i])", node)
    _check_memory_order(b, node, "atomic_or", args.get("memory_order"))
    order = args.get("memory_order") or RELAXED
    return _element_atomic(b, node, "or", dst, as_expr(args["value"], b.loc(node)), True, order)


@rule("atomic_load")
def bind_atomic_load(b: BinderLike, node, args):
    if not isinstance(args["src"], ir.Load):
        raise b.error("T.atomic_load takes one element (src[i])", node)
    _check_memory_order(b, node, "atomic_load", args["memory_order"])
    return _element_atomic(b, node, "load", args["src"], None, True, args["memory_order"])


@rule("atomic_store")
def bind_atomic_store(b: BinderLike, node, args):
    if not isinstance(args["dst"], ir.Load):
        raise b.error("T.atomic_store takes one element (dst[i])", node)
    _check_memory_order(b, node, "atomic_store", args["memory_order"])
    _element_atomic(b, node, "xchg", args["dst"], as_expr(args["src"], b.loc(node)), False, args["memory_order"])


@rule("atomic_addx2", "atomic_addx4")
def bind_atomic_add_vector(b: BinderLike, node, args, name):
    """``T.atomic_addx4(dst[i, j], src[i, j])``: the atomic adds of dst[i, j + k] += src[i, j + k], k < 4."""
    lanes = 2 if name == "atomic_addx2" else 4

    def element(ref, what):
        if isinstance(ref, ir.Buffer):
            ref = whole(ref)
        if isinstance(ref, ir.Region):
            ref = ir.Load(ref.buffer, ref.starts)
        if not isinstance(ref, ir.Load) or not ref.indices:
            raise b.error(f"T.{name}: {what} must be an element (A[i, j]) or a region of a buffer", node)
        return ref

    dst, src = element(args["dst"], "dst"), args["value"]
    src = element(src, "value") if isinstance(src, (ir.Buffer, ir.Region, ir.Load)) else None
    if src is None:
        raise b.error(f"T.{name} adds {lanes} consecutive elements of a buffer (value=A[i, j])", node)

    def shifted(ref: ir.Load, k: int) -> ir.Load:
        last = ref.indices[-1]
        return ir.Load(ref.buffer, (*ref.indices[:-1], ir.BinOp("+", last, const_int(k), last.dtype)), ref.loc)

    if args["return_prev"] is False and dst.buffer.scope == ir.GLOBAL:
        # one atomic over a vectorized loop of the lanes: lowered as a trailing axis of the lanes,
        # the adds of consecutive addresses are one vector atomic (red.global.add.v4.f32); on
        # shared or register buffers the four adds stay unrolled (constant positions)
        loc = b.loc(node)
        k = ir.Var(b.fresh_name("k"), INT32, "loop")

        def lane(ref: ir.Load) -> ir.Load:
            last = ref.indices[-1]
            return ir.Load(ref.buffer, (*ref.indices[:-1], ir.BinOp("+", last, ir.VarRef(k), last.dtype)), ref.loc)

        atomic = ir.Atomic(loc, "add", lane(dst), lane(src), order=RELAXED)
        b.emit(ir.For(loc, k, const_int(0), const_int(lanes), const_int(1), "vectorized", [atomic], None))
        return None
    prev = [
        _element_atomic(b, node, "add", shifted(dst, k), shifted(src, k), args["return_prev"], RELAXED)
        for k in range(lanes)
    ]
    # return_prev: the vector of previous values, as a tuple (stored with ``Prev[i : i + lanes] = ...``)
    return tuple(prev) if args["return_prev"] else None


def _reducer(b: BinderLike, value, node, what: str) -> ir.Buffer:
    if not isinstance(value, ir.Buffer) or value not in b.reducers:
        raise b.error(f"{what} takes a buffer from T.alloc_reducer", node)
    return value


@rule("reducer_init")
def bind_reducer_init(b: BinderLike, node, args):
    acc = _reducer(b, args["reducer"], node, "T.reducer_init")
    init = args["init"]
    # an explicitly typed value must have the reducer's dtype (Python numbers convert)
    typed = isinstance(init, TypedLiteral) or (isinstance(init, ir.Expr) and not is_weak(init))
    given = getattr(init, "dtype", None)
    if typed and given != acc.dtype:
        raise b.error(f"T.reducer_init init value dtype {given.name} does not match reducer '{acc.name}' dtype "
                      f"{acc.dtype.name}", node)  # fmt: skip
    b.epochs.log(b, acc, "init", b.loc(node))
    if init is None:  # the op's identity
        op, dt = b.reducers[acc], acc.dtype
        if op in ("sum", "bitor", "bitxor"):
            init = 0
        elif op == "bitand":
            init = -1 if dt.kind == "int" else 2**dt.bits - 1  # all ones
        elif dt.is_float:
            init = float("-inf") if op == "max" else float("inf")
        else:
            init = -(2 ** (dt.bits - 1)) if op == "max" else 2 ** (dt.bits - 1) - 1
    b.epochs.quiet = True  # its fill is the epoch's start, not a user's store
    try:
        b.emit(ir.Fill(b.loc(node), whole(acc), ir.Cast(as_expr(init, b.loc(node)), acc.dtype)))
    finally:
        b.epochs.quiet = False


@rule("reducer_update")
def bind_reducer_update(b: BinderLike, node, args):
    target = args["target"]
    if not isinstance(target, ir.Load) or target.buffer not in b.reducers:
        raise b.error("T.reducer_update takes acc[indices] of a T.alloc_reducer buffer", node)
    b.check_reducer_update(target.buffer, node)
    b.epochs.unread(target.buffer, target.loc)
    b.epochs.log(b, target.buffer, "update", b.loc(node))
    kind = {"sum": "add", "bitand": "and", "bitor": "or", "bitxor": "xor"}.get(
        b.reducers[target.buffer], b.reducers[target.buffer]
    )
    b.emit(ir.Atomic(b.loc(node), kind, target, as_expr(args["value"], b.loc(node))))


@rule("finalize_reducer")
def bind_finalize_reducer(b: BinderLike, node, args):
    acc = _reducer(b, args["reducer"], node, "T.finalize_reducer")
    batch, count = args["batch"], _product(acc.shape)
    # batch only groups TileLang's cross-thread combines; a value no grouping can have is a mistake
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise InvalidArgumentError(
            f"T.finalize_reducer: batch must be >= 1 (a compile-time int), got {batch!r}", b.loc(node)
        )
    if batch > count:
        raise b.error(f"T.finalize_reducer: batch={batch} exceeds total output elements ({count})", node)
    if count % batch:
        raise b.error(f"T.finalize_reducer: batch={batch} must evenly divide the reducer's {count} elements", node)
    dst = args["dst"]
    b.epochs.log(b, acc, "legacy_finalize" if dst is None else "finalize", b.loc(node))
    if dst is None:
        return  # the legacy in-place form: the reducer already holds the result
    if dst in b.reducers:
        raise b.error(f"T.finalize_reducer destination '{dst.name}' must be an ordinary fragment, not a reducer", node)
    if not isinstance(dst, ir.Buffer) or tuple(dst.shape) != tuple(acc.shape):
        raise b.error(f"T.finalize_reducer: dst must be a buffer of the reducer's shape {list(acc.shape)}", node)
    b.emit(ir.Copy(b.loc(node), whole(acc), whole(dst)))
