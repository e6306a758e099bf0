"""The thread view: ``tx = T.get_thread_binding(0)`` code runs once per thread.  Lowered by lane
vectorization: ``tx`` becomes ``tl.arange(0, threads)``, thread-private values become
``(threads,)`` tiles, per-thread ``if`` becomes a mask, and ``T.serial`` stays a loop."""

from __future__ import annotations

import ast
import contextlib

from .. import ir
from ..ir import INT32
from ..ir.exprs import static
from ..passes.uniform import per_thread_fragments, uniform_buffers
from . import pyast as P
from .values import LaneSpace, Lowerer, Tile, next_pow2


def open_thread_view(lw: Lowerer, kernel: ir.Kernel) -> None:
    """One lane axis per thread dimension, threadIdx.x fastest (last): (tz, ty, tx)."""
    dims = list(reversed(range(len(kernel.thread_vars))))
    rank = len(dims)
    vars_, extents, padded, names = [], [], [], []
    for axis, d in enumerate(dims):
        var, extent = kernel.thread_vars[d], kernel.thread_extents[d]
        size = next_pow2(extent)
        name = lw.assign(var.name, P.expand(P.call("tl.arange", 0, size), axis, rank))
        lw.scope.env[var] = Tile(P.name(name), INT32, frozenset([axis]))
        lw.scope.ranges.set(var, 0, extent - 1)
        vars_.append(var)
        extents.append(extent)
        padded.append(size)
        names.append(name)
    lw.scope.lanes = LaneSpace(vars_, extents, padded, names, kernel)
    lw.uniform_vars = uniform_buffers(kernel)
    lw.private_fragments = per_thread_fragments(kernel)


def in_thread_view(lw: Lowerer) -> bool:
    return lw.scope.lanes is not None and isinstance(lw.scope.lanes.owner, ir.Kernel)


def thread_range(lw: Lowerer, cond: ir.Expr) -> bool:
    """Whether ``cond`` only narrows the block to a range of threads (``tx < 128``, ``ty == 0``,
    ``lo <= tx and tx < hi``) or is the same for every thread.  TileLang's thread-bound analysis
    then hands a tile operation under it to the threads in that range, which do all of it."""
    if isinstance(cond, ir.BinOp) and cond.op == "and":
        return thread_range(lw, cond.lhs) and thread_range(lw, cond.rhs)
    if isinstance(cond, ir.Compare) and cond.op in ("<", "<=", ">", ">=", "=="):
        for var_side, bound in ((cond.lhs, cond.rhs), (cond.rhs, cond.lhs)):
            if _is_thread_index(lw, var_side) and not lw.ev(bound).axes:
                return True
    return not lw.ev(cond).axes


_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "=="}
_NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}


def thread_span(lw: Lowerer, cond: ir.Expr, negated: bool = False) -> list | None:
    """The threads a static thread range keeps (``tx < 32``: [(axis of tx, 0, 31)]; negated, its
    ``else``: [(axis, 32, extent - 1)]), as (lane axis, first, last) per thread axis it narrows; None
    when the range is not known when the kernel is lowered."""
    if isinstance(cond, ir.BinOp) and cond.op == "and" and not negated:
        a, b = thread_span(lw, cond.lhs), thread_span(lw, cond.rhs)
        return None if a is None or b is None else a + b
    if not isinstance(cond, ir.Compare) or cond.op not in _FLIPPED:
        return None
    for var_side, bound, op in ((cond.lhs, cond.rhs, cond.op), (cond.rhs, cond.lhs, _FLIPPED[cond.op])):
        c = static(bound)
        if not _is_thread_index(lw, var_side) or not isinstance(c, int) or isinstance(c, bool):
            continue
        if negated:
            if op not in _NEGATED:
                return None
            op = _NEGATED[op]
        axis = lw.scope.lanes.names.index(lw.ev(var_side).node.id)
        last = lw.scope.lanes.extents[axis] - 1
        lo, hi = {"<": (0, c - 1), "<=": (0, c), ">": (c + 1, last), ">=": (c, last), "==": (c, c)}[op]
        return [(axis, max(lo, 0), min(hi, last))]
    return None


def _some_thread_in_range(lw: Lowerer) -> bool:
    """Every active condition is a static thread range and some thread lies in all of them: the
    block-level test is true, known when the kernel is lowered."""
    spans = [lw.scope.thread_spans.get(ast.dump(c.node)) for c in lw.scope.conds]
    if any(span is None for span in spans):
        return False
    kept = {}
    for span in spans:
        for axis, lo, hi in span:
            first, last = kept.get(axis, (lo, hi))
            kept[axis] = (max(first, lo), min(last, hi))
    return all(lo <= hi for lo, hi in kept.values())


def _is_thread_index(lw: Lowerer, e: ir.Expr) -> bool:
    """``tx`` itself (the thread variable, or a name bound to it)."""
    if not isinstance(e, ir.VarRef):
        return False
    node = lw.ev(e).node
    return isinstance(node, ast.Name) and node.id in lw.scope.lanes.names


def _any_thread(lw: Lowerer) -> ast.expr:
    """A scalar: some thread of the block meets every active condition."""
    axes = lw.cond_axes()
    if not axes:
        return P.and_all([c.node for c in lw.scope.conds])
    active = lw.lane_mask(frozenset(range(lw.scope.lanes.rank)))
    return P.binop(">", P.call("tl.max", P.call("tl.where", active, P.const(1), P.const(0))), P.const(0))


@contextlib.contextmanager
def block_level(lw: Lowerer, what: str):
    """Tile operations in a thread-view kernel act for the whole block (the mixed style).  Under
    conditions that only pick a range of threads (``thread_range``) the operation runs whole, in a
    branch taken when that range is not empty."""
    if not in_thread_view(lw):
        yield
        return
    if not lw.scope.conds:
        with lw.scoped(lanes=None):
            yield
        return
    if not all(ast.dump(c.node) in lw.scope.range_conds for c in lw.scope.conds):
        exits = lw.scope.exits
        if exits is not None and exits.per_lane:
            raise lw.error(
                f"{what} cannot follow a per-thread 'break' or 'continue' in the same loop "
                "(threads leave it at different iterations); decide the exit the same way in every thread"
            )
        raise lw.error(f"{what} cannot stand under a per-thread condition (only under a range of threads: tx < n)")
    if _some_thread_in_range(lw):  # the range holds threads: the section runs, no test needed
        with lw.scoped(lanes=None, conds=[]):
            yield
        return
    # one test per condition and statement list: the statements of one section share it
    expr = _any_thread(lw)
    key = ast.dump(expr)
    tests = lw.block_tests.setdefault(id(lw.out), (lw.out, {}))[1]  # the list is kept: its id stays its own
    test = tests.get(key)
    fresh = test is None
    if fresh:
        test = tests[key] = lw.assign("any_thread", expr)
    saved, lw.out = lw.out, []
    try:
        with lw.scoped(lanes=None, conds=[]):
            yield
        body = lw.out
    finally:
        lw.out = saved
    last = saved[-1] if saved else None
    if (
        body
        and isinstance(last, ast.If)
        and not last.orelse
        and isinstance(last.test, ast.Name)
        and last.test.id == test
    ):
        last.body.extend(body)  # the section's previous statement: one branch for both
    elif body:
        lw.emit(ast.If(P.name(test), body, []))
    elif fresh and saved and isinstance(saved[-1], ast.Assign) and saved[-1].targets[0].id == test:
        saved.pop()  # nothing to run (a loop whose statements lowered to nothing): no test either
        del tests[key]
