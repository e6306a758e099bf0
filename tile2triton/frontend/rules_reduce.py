"""Binding rules of reductions and scans: ``T.reduce_*``, ``T.cumsum``/``T.cummax``,
``T.comm_reducer`` with ``T.tvm_thread_allreduce``, ``T.any_of``/``T.all_of``.
"""

from __future__ import annotations

import ast

from .. import ir
from ..ir import BOOL, INT32
from ..ir.exprs import as_expr, const_int, static
from .regions import whole
from .rules_base import RULES, BinderLike, _fill_region, _staged, rule


def _var_buffer(value):
    """The buffer of a ``T.alloc_var`` named as a value (its name reads the variable)."""
    if isinstance(value, ir.Load) and value.buffer.scope == ir.VAR:
        return value.buffer
    return value


def _bind_reduce(b: BinderLike, node, kind, args, clear):
    src, dst = args["buffer"], _var_buffer(args["out"])  # T.reduce_sum(frag, var): the var is the output
    src = src if isinstance(src, ir.Region) else whole(src) if isinstance(src, ir.Buffer) else None
    dst = dst if isinstance(dst, ir.Region) else whole(dst) if isinstance(dst, ir.Buffer) else None
    if src is None or dst is None:
        raise b.error("T.reduce_* take a source buffer and an output buffer", node)
    dim = args["dim"]
    ndim = len(src.extents)
    if not isinstance(dim, int) or not -ndim <= dim < ndim:
        raise b.error(f"reduction dim {dim!r} is out of range for a {ndim}-D buffer", node)
    if not isinstance(clear, bool):
        raise b.error("clear must be a compile-time bool", node)
    src, _ = _staged(b, src, node)
    dst, write_back = _staged(b, dst, node, read=not clear)
    nan_propagate = args.get("nan_propagate", False)
    if not isinstance(nan_propagate, bool):
        raise b.error("nan_propagate must be a compile-time bool", node)
    b.emit(ir.Reduce(b.loc(node), kind, src, dst, dim % ndim, clear, nan_propagate))
    for stmt in write_back:
        b.emit(stmt)


def _reduce_rule(kind):
    def bind(b, node, args):
        _bind_reduce(b, node, kind, args, args.get("clear", True))

    return bind


for _kind in ("sum", "max", "min", "absmax", "abssum"):
    RULES["reduce_" + _kind] = _reduce_rule(_kind)


def _bitwise_reduce_rule(kind):
    def bind(b, node, args):
        src = args["buffer"]
        dtype = getattr(src.buffer if isinstance(src, ir.Region) else src, "dtype", None)
        if dtype is not None and not dtype.is_int:
            raise b.error(f"T.reduce_{kind} takes an integer buffer, got {dtype.name}", node)
        _bind_reduce(b, node, kind, args, args.get("clear", True))

    return bind


for _kind in ("bitand", "bitor", "bitxor"):  # TileLang's bitwise reductions (tl.reduce with & | ^)
    RULES["reduce_" + _kind] = _bitwise_reduce_rule(_kind)


@rule("reduce")
def bind_reduce(b: BinderLike, node, args):
    _bind_reduce(b, node, args["reduce_type"], args, args["clear"])


@rule("cumsum", "cummax")
def bind_scan(b: BinderLike, node, args, name):
    src = _fill_region(b, args["src"], node)
    dst = src if args["dst"] is None else _fill_region(b, args["dst"], node)
    dim = args["dim"] % len(src.extents)
    op = "max" if name == "cummax" else "sum"
    in_place = dst is src
    src, write_back = _staged(b, src, node)
    if in_place:
        dst = src
    else:
        dst, write_back = _staged(b, dst, node, read=False)
    b.emit(ir.Scan(b.loc(node), src, dst, dim, bool(args["reverse"]), op))
    for stmt in write_back:
        b.emit(stmt)


class CommReducer:
    """``T.comm_reducer(combiner, identity)``, known by its operation."""

    def __init__(self, op: str):
        self.op = op


class _Probe:
    """Stands for the combiner's arguments: records which operation the combiner applies."""

    def __init__(self, log: list):
        self.log = log

    def _record(op):  # noqa: N805
        def method(self, other):
            self.log.append(op)
            return self if op not in ("max", "min") else False

        return method

    __add__ = __radd__ = _record("sum")
    __mul__ = __rmul__ = _record("prod")
    __and__ = __rand__ = _record("and")
    __or__ = __ror__ = _record("or")
    __xor__ = __rxor__ = _record("xor")
    __gt__ = _record("max")  # builtins.max(x, y) asks y > x
    __lt__ = _record("min")


_COMBINER_OPS = {ast.Add: "sum", ast.Mult: "prod", ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor"}


@rule("comm_reducer")
def bind_comm_reducer(b: BinderLike, node, args):
    combiner, op = node.args[0] if node.args else None, None
    if isinstance(combiner, ast.Lambda) and len(combiner.args.args) == 2:
        params = [a.arg for a in combiner.args.args]
        body = combiner.body
        names = [getattr(x, "id", None) for x in (getattr(body, "left", None), getattr(body, "right", None))]
        if isinstance(body, ast.BinOp) and sorted(names) == sorted(params):
            op = _COMBINER_OPS.get(type(body.op))
        elif isinstance(body, ast.Call) and sorted(getattr(a, "id", None) for a in body.args) == sorted(params):
            fn = b.expr(body.func)
            tag = getattr(fn, "__t2t__", None) or {max: "max", min: "min"}.get(fn)
            op = tag if tag in ("max", "min") else None
    elif callable(args["combiner"]):
        log: list = []
        try:
            args["combiner"](_Probe(log), _Probe(log))
        except Exception:  # noqa: BLE001  (a combiner the probes cannot follow: refused below)
            log = []
        op = log[0] if len(log) == 1 else None
    if op is None:
        raise b.error(
            "T.comm_reducer: tile2triton knows combiners x + y, x * y, x & y, x | y, x ^ y, T.max and T.min", node
        )
    return CommReducer(op)


@rule("tvm_thread_allreduce")
def bind_thread_allreduce(b: BinderLike, node, args):
    reducer = getattr(b, "reduce_scope", None)
    if reducer is None:
        raise b.error('T.tvm_thread_allreduce stands in a T.attr(T.comm_reducer(...), "reduce_scope", ...)', node)
    parts = list(args["freduce_args"])
    count = parts[0].value if hasattr(parts[0], "value") and not isinstance(parts[0], ir.Expr) else parts[0]
    if count != 1 or len(parts) < 5:
        raise b.error("T.tvm_thread_allreduce(1, value, True, dest, *threads): one value at a time", node)
    value, cond, dst, threads = parts[1], parts[2], parts[3], parts[4:]
    if cond is not True:
        raise b.error("T.tvm_thread_allreduce's condition must be True (every thread takes part)", node)
    if not isinstance(dst, ir.Load) or dst.buffer.scope == ir.GLOBAL:
        raise b.error("T.tvm_thread_allreduce writes an element of a local buffer (dest[0])", node)
    b.emit(ir.ThreadAllReduce(b.loc(node), reducer.op, as_expr(value, b.loc(node)), dst,
                              tuple(as_expr(t) for t in threads)))  # fmt: skip
    return None


@rule("any_of", "all_of")
def bind_any_all(b: BinderLike, node, args, name):
    """``T.any_of(buf)`` / ``T.all_of(buf[i, j, :])``: whether any (all) of the elements is true,
    as TileLang defines it (a whole buffer, or a region that spans only its last dim).  Bound as a
    flag and a loop that folds the elements into it, ahead of the expression that reads it."""
    operand = args["buffer"]
    if isinstance(operand, ir.Buffer):
        if operand.ndim != 1 and not all(d == 1 for d in operand.shape[:-1]):
            raise b.error(f"T.{name} of a whole buffer takes a 1-D buffer", node)
        operand = whole(operand)
    if not isinstance(operand, ir.Region):
        raise b.error(f"T.{name} takes a buffer or a buffer region (buf[i, :])", node)
    if any(static(e) != 1 for e in operand.extents[:-1]):
        raise b.error(f"T.{name} of a region spans only its last dim (as in TileLang)", node)
    loc = b.loc(node)
    any_of = name == "any_of"
    flag = ir.Buffer(b.fresh_name(name), ir.VAR, (1,), INT32, loc)
    b.emit(ir.Alloc(loc, flag, const_int(0 if any_of else 1)))
    var = ir.Var(b.fresh_name("i"), INT32, "loop")
    *lead, last = operand.starts
    element = ir.Load(operand.buffer, (*lead, ir.BinOp("+", as_expr(last), ir.VarRef(var), INT32)), loc)
    true = ir.Compare("!=", element, ir.Const(0, element.dtype, weak=True), BOOL)
    old = ir.Load(flag, (const_int(0),), loc)
    new = ir.Select(true, const_int(1), old, INT32) if any_of else ir.Select(true, old, const_int(0), INT32)
    body = [ir.Store(loc, flag, (const_int(0),), new)]
    b.emit(ir.For(loc, var, const_int(0), as_expr(operand.extents[-1]), const_int(1), "serial", body, None))
    return ir.Compare("!=", ir.Load(flag, (const_int(0),), loc), const_int(0), BOOL)
