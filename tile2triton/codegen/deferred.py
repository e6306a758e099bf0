"""Accumulations reduced once after their loop, not every iteration (issue 23, mhc_pre's gemm_sqrsum).

A register accumulator that a loop only adds into needs its total only when the loop ends.  Two
such additions cost the loop more than their adds:

- ``TILE2TRITON_DEFER_SUMS``: a serial loop widened into a lane axis and summed away
  (``for jj: for i, j in T.Parallel: acc[i, j] += f``, codegen/rules._sum_over_loop_axis) is a
  ``tl.sum`` across threads, shuffles, every iteration of the enclosing loop.  Deferred, the loop
  adds the unreduced terms element-wise into a tile of the widened shape, and the one ``tl.sum``
  runs after it (gemm_sqrsum on sm_90: 160 shuffles a warp an iteration gone).  So does a
  reducer's ``acc[i] += v`` summed over the lanes of its ``T.Parallel(i, j)`` that ``i`` does not
  name (codegen/atomics._defer_reduction, ``TILE2TRITON_DEFER_REDUCERS``; TileLang's
  ``T.alloc_reducer`` keeps such partial sums per thread until ``T.finalize_reducer``:
  gemv_alloc_reducer).
- ``TILE2TRITON_GEMM_PARTS``: an mma.sync gemm (fewer rows than a warpgroup's wgmma) with few
  accumulator tiles a warp runs as a few chains of dependent mma instructions along K: 32 x 32 x 256
  tf32 on 4 warps is 2 chains of 32, each instruction waiting for the last.  Deferred, K is split
  into parts, each with its own accumulator (one batched ``tl.dot`` over a leading parts axis), so
  the chains are shorter and more of them run at once; the parts are summed after the loop.
- ``TILE2TRITON_DEFER_REDUCES``: ``T.reduce_sum(x, acc, dim, clear=False)`` (or ``_max``, ``_min``,
  ``_abssum``, ``_absmax``) in a loop is a cross-thread reduction every iteration; where the tile's axis
  ``dim`` spans warps (fp8 block mean pooling's 64 x 128 tile summed over its rows on 8 warps), each
  goes through shared memory and barriers.  Deferred, the loop combines ``x`` element-wise into a tile
  of its shape and the one reduction into ``acc`` runs after it (codegen/reductions._deferring_loop).
  A max or min is exact in any order, so any dtype takes it; a sum only as below.

Sums reassociate (as ``tl.sum`` and split-K do), so only 32-bit float and integer
accumulators take them, and only where the enclosing loop touches the accumulator nowhere else:
no other read or write of it, no exit from the loop, and the addition a statement of the loop's
own body (not under an ``if``).  The wider tile is held in registers across the loop, within
``WIDE_PER_THREAD`` values a thread.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .. import ir
from . import pyast as P
from .values import Lowerer

# values a thread holds for one deferred accumulator (gemm_sqrsum's 64 x 32 x 4 sqrsum terms on 4 warps: 64)
WIDE_PER_THREAD = 64


@dataclass
class LoopDeferrals:
    """The accumulations deferred in one emitted loop: the loop's body (TileIR), the statements
    that start the wide accumulators before the loop, the reductions lowered after it."""

    body: list
    inits: list = field(default_factory=list)  # (origin Loc, ast statement)
    finishes: list = field(default_factory=list)  # (origin Loc, callable lowering the reduction)


def enclosing(lw: Lowerer, stmt: ir.Stmt, acc: ir.Buffer) -> LoopDeferrals | None:
    """The innermost emitted loop's deferrals, where ``stmt`` (adding into ``acc``) is a statement of
    that loop's own body and no other statement of the body touches ``acc``; else None."""
    loop = lw.scope.deferrals
    if loop is None or lw.scope.lanes is not None or lw.scope.conds or acc in lw.scratch.views:
        return None
    return _only_there(loop, stmt, acc)


def enclosing_parallel(lw: Lowerer, stmt: ir.Stmt, acc: ir.Buffer) -> LoopDeferrals | None:
    """As ``enclosing``, for ``stmt`` the one statement of a ``T.Parallel`` (being lowered) that is
    itself a statement of the loop's own body (a reducer's ``acc[i] += v`` in ``T.Parallel(i, j)``)."""
    loop, lanes = lw.scope.deferrals, lw.scope.lanes
    if loop is None or lanes is None or lw.scope.conds or acc in lw.scratch.views:
        return None
    par = lanes.owner
    if not (isinstance(par, ir.Parallel) and len(par.body) == 1 and par.body[0] is stmt):
        return None
    return _only_there(loop, par, acc)


def _only_there(loop: LoopDeferrals, stmt: ir.Stmt, acc: ir.Buffer) -> LoopDeferrals | None:
    """``loop`` if ``stmt`` is a statement of its own body and no other statement touches ``acc``."""
    if not any(st is stmt for st in loop.body):
        return None
    return None if any(_touches(st, acc.root) for st in loop.body if st is not stmt) else loop


def _touches(stmt: ir.Stmt, root: ir.Buffer) -> bool:
    for st in ir.walk([stmt]):
        if any(b.root is root for b in ir.operand_buffers(st)):
            return True
        if any(load.buffer.root is root for load in ir.loads_in(st)):
            return True
    return False


def fits(lw: Lowerer, elements: int) -> bool:
    """Whether a wide accumulator of ``elements`` values fits the per-thread budget at launch."""
    warps = lw.options.num_warps or max(1, lw.kernel.threads // lw.options.warp_size)
    return elements <= WIDE_PER_THREAD * warps * lw.options.warp_size


def reassociable(dtype) -> bool:
    """32-bit float or integer accumulators: reassociated sums stay in the accumulator's precision."""
    return dtype.bits == 32 and (dtype.is_float or dtype.is_int)


def start(lw: Lowerer, loop: LoopDeferrals, hint: str, shape: list, dtype, fill=0) -> str:
    """A fresh wide accumulator of ``shape``, ``fill`` (zero) before the loop; returns its name."""
    name = lw.names.fresh(hint)
    if fill == 0:
        init = P.call("tl.zeros", P.list_(shape), P.dtype(dtype))
    else:
        init = P.call("tl.full", P.list_(shape), P.const(fill), P.dtype(dtype))
    loop.inits.append((lw.origin, P.assign(name, init)))
    return name


def emit_inits(lw: Lowerer, loop: LoopDeferrals) -> None:
    for origin, stmt in loop.inits:
        stmt.t2t_origin = origin
        lw.out.append(stmt)


def emit_finishes(lw: Lowerer, loop: LoopDeferrals) -> None:
    saved = lw.origin
    try:
        for origin, finish in loop.finishes:
            lw.origin = origin
            lw.statement_names = {}
            finish()
    finally:
        lw.origin = saved


def summed(name: str) -> ast.expr:
    """The wide accumulator ``name`` reduced over its leading axis."""
    return P.call("tl.sum", P.name(name), axis=0)
