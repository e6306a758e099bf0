"""A pipelined loop whose whole body is guarded by a mask, run over the active iterations only
(``TILE2TRITON_COMPACT_GUARDED_LOOPS``).

Block-sparse kernels skip tiles by a mask read at the iteration::

    for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
        if BlockMask[by, bx, k]:
            T.copy(A[by * block_M, k * block_K], A_shared)
            T.copy(B[k * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)

TileLang's pipeline counts its stages in active iterations: the producer waits on, and loads for, only
the iterations whose mask is set, so it runs ``num_stages`` active tiles ahead of the consumer whatever
the density.  Triton's pipeliner counts every iteration, and a ``tl.dot`` under an ``if`` stays
synchronous.  So the loop runs over the active iterations instead, its body unguarded::

    active[t] = t < trips and BlockMask[by, bx, start + t * step]     (one load of the mask row)
    rank = cumsum(active)
    for j in T.Pipelined(sum(active), num_stages=2):
        k = start + clamp(sum(t where active[t] and rank[t] == j + 1), 0, trips - 1) * step
        ... the body, unguarded ...

Each iteration finds its ``k`` with a sum over the mask row (a register vector, as wide as the next
power of two above the trip count); the clamp bounds ``k`` for the codegen's range analysis, so the
tiles' loads need no masks (and take tensor descriptors on Hopper).

Taken when (checked; otherwise nothing changes) a ``T.Pipelined`` loop of constant step, in a
block-view kernel outside any ``T.Parallel``, with a trip count known when compiling (at most
``MAX_TRIPS``), has for its body names bound (``i_s = BlockIndices[..., i] * BS``) and then an ``if``
without ``else`` whose condition, with those names as their values,

- mentions the loop variable;
- names only block indices, sizes, scalar parameters, names the kernel binds once at its top level
  from those, the loop variable, and elements of global, shared or fragment buffers that nothing in
  the loop writes (so the whole mask can be read before it), indexed by such names; nothing in the loop
  orders memory between blocks (an atomic stronger than relaxed, a grid barrier);

and whose body leaves the loop by no ``break`` / ``continue``.
"""

from __future__ import annotations

import dataclasses

from .. import ir
from ..ir.dtypes import BOOL, INT32
from ..ir.exprs import mentions, static, static_trips, substitute
from .forward_shared import written_roots
from .prefetch_indices import _map_all, _names_only, _orders_memory, _uniform_names

# the mask row is a register vector of the next power of two above the trip count; a sum over it per
# iteration finds the iteration's index
MAX_TRIPS = 1024


def compact_guarded_loops(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with each such loop over its active iterations (a new kernel), or ``kernel`` itself."""
    if kernel.thread_vars:
        return kernel
    uniform = _uniform_names(kernel)
    changed = [False]
    body = _stmts(kernel.body, uniform, changed)
    return dataclasses.replace(kernel, body=body) if changed[0] else kernel


def _stmts(stmts: list, uniform: set, changed: list) -> list:
    out = []
    for s in stmts:
        if isinstance(s, ir.For):
            s = dataclasses.replace(s, body=_stmts(s.body, uniform, changed))
            compacted = _compact(s, uniform)
            if compacted is not None:
                out.extend(compacted)
                changed[0] = True
                continue
        elif isinstance(s, ir.If):
            s = dataclasses.replace(
                s,
                then_body=_stmts(s.then_body, uniform, changed),
                else_body=_stmts(s.else_body, uniform, changed),
            )
        out.append(s)
    return out


def _compact(loop: ir.For, uniform: set) -> list | None:
    """The statements that run ``loop`` over its active iterations, or None where it does not qualify."""
    step, trips = static(loop.step), static_trips(loop)
    if loop.kind != "pipelined" or not isinstance(step, int) or step <= 0 or trips is None:
        return None
    lets, guard = loop.body[:-1], loop.body[-1] if loop.body else None
    if not 2 <= trips <= MAX_TRIPS or not isinstance(guard, ir.If) or not all(isinstance(s, ir.Let) for s in lets):
        return None
    cond = guard.cond
    for let in reversed(lets):  # the names bound before the ``if``, as their values
        cond = substitute(cond, let.var, let.value)
    if guard.else_body or ir.loop_exits(guard.then_body) or not mentions(cond, loop.var):
        return None
    written = written_roots(loop.body)
    if None in written or any(_orders_memory(s) for s in ir.walk(loop.body)):
        return None  # inline asm may write anything; an ordering atomic may make other blocks' writes seen
    if not _block_uniform(cond, loop.var, uniform, written):
        return None
    loc, width = guard.loc, 1 << (trips - 1).bit_length()
    name = loop.var.name

    def buffer(base, shape):
        return ir.Buffer(f"{name}_{base}", ir.FRAGMENT, shape, INT32, loc)

    def whole(buf):
        return ir.Region(buf, tuple(ir.Const(0, INT32) for _ in buf.shape), tuple(buf.shape))

    def at(index):  # the loop variable's value at iteration ``index``
        return _plus(loop.start, _times(index, step))

    active, rank, count = buffer("active", (width,)), buffer("rank", (width,)), buffer("count", (1,))
    lane = ir.Var("t", INT32, "lane")
    last = ir.Const(trips - 1, INT32)
    in_loop = ir.Compare("<", ir.VarRef(lane), ir.Const(trips, INT32), BOOL)
    # lanes past the loop are masked off by ``in_loop``; their global reads by the buffers' bounds
    cond_at_lane = substitute(cond, loop.var, at(ir.VarRef(lane)))
    flag = ir.Select(ir.BinOp("and", in_loop, _as_bool(cond_at_lane), BOOL), _one(), _zero(), INT32)
    before = [
        ir.Alloc(loc, active),
        ir.Alloc(loc, rank),
        ir.Alloc(loc, count),
        ir.Parallel(loc, [lane], [width], [ir.Store(loc, active, (ir.VarRef(lane),), flag)]),
        ir.Scan(loc, whole(active), whole(rank), 0, False, "sum"),
        ir.Reduce(loc, "sum", whole(active), whole(count), 0, True),
    ]
    # iteration j: the index of the active iteration of rank j + 1
    j = ir.Var(f"{name}_nth", INT32, "loop")
    pick, picked = buffer("pick", (width,)), buffer("picked", (1,))
    pick_lane = ir.Var("t", INT32, "lane")
    is_next = ir.BinOp(
        "and",
        ir.Compare("!=", ir.Load(active, (ir.VarRef(pick_lane),)), _zero(), BOOL),
        ir.Compare("==", ir.Load(rank, (ir.VarRef(pick_lane),)), _plus(ir.VarRef(j), _one()), BOOL),
        BOOL,
    )
    index = ir.Var(name, INT32, "let")
    head = [
        ir.Alloc(loc, pick),
        ir.Alloc(loc, picked),
        ir.Parallel(
            loc,
            [pick_lane],
            [width],
            [ir.Store(loc, pick, (ir.VarRef(pick_lane),), ir.Select(is_next, ir.VarRef(pick_lane), _zero(), INT32))],
        ),
        ir.Reduce(loc, "sum", whole(pick), whole(picked), 0, True),
        ir.Let(loc, index, at(_min(_max(ir.Load(picked, (_zero(),)), _zero()), last))),
    ]
    body = _map_all(lets + guard.then_body, lambda e: substitute(e, loop.var, ir.VarRef(index)))
    compacted = ir.For(
        loop.loc, j, _zero(), ir.Load(count, (_zero(),)), _one(), "pipelined", head + body, loop.num_stages
    )
    return [*before, compacted]


def _block_uniform(cond, var: ir.Var, uniform: set, written: set) -> bool:
    """``cond`` is the same in every thread, reading only buffers the loop does not write (so its values
    over the loop can all be read before it), at indices the same in every thread."""
    for sub in ir.iter_expr_tree(cond):
        if isinstance(sub, ir.Load):
            if sub.buffer.scope not in (ir.GLOBAL, ir.SHARED, ir.FRAGMENT) or sub.buffer.root in written:
                return False
            if not all(_names_only(i, uniform, var) for i in sub.indices):
                return False
        elif isinstance(sub, ir.VarRef):
            if not (sub.var in uniform or sub.var is var or sub.var.kind in ("size", "param")):
                return False
        elif not isinstance(sub, (ir.Const, ir.BinOp, ir.UnaryOp, ir.Cast, ir.Compare, ir.Select)):
            return False
    return True


def _as_bool(e):
    return e if e.dtype == BOOL else ir.Compare("!=", e, ir.Cast(_zero(), e.dtype), BOOL)


def _zero():
    return ir.Const(0, INT32)


def _one():
    return ir.Const(1, INT32)


def _plus(a, b):
    if static(a) == 0:
        return b
    if static(b) == 0:
        return a
    return ir.BinOp("+", a, b, INT32)


def _times(a, step: int):
    return a if step == 1 else ir.BinOp("*", a, ir.Const(step, INT32), INT32)


def _min(a, b):
    return ir.Call("min", (a, b), INT32)


def _max(a, b):
    return ir.Call("max", (a, b), INT32)
