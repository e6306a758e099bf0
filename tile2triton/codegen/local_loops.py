"""Small loops over the elements of per-lane local arrays, lowered as one more tile axis.

In the thread view (and inside ``T.Parallel``) a ``T.alloc_local((n,), dt)`` array is a register
tile of shape ``[lanes..., n]``: the lanes first, the array's own dim last.  TileLang fills such
arrays element by element, ``for k in T.vectorized(n): A_local[k] = A[base + k]``, and sums them
the same way, ``for k in T.serial(n): acc[0] += A_local[k] * B_local[k]``.  Lowered as written,
each iteration would update one element of the tile with a one-hot ``tl.where`` and read one with
a ``tl.where`` + ``tl.sum``.  When the iterations are independent the loop variable becomes a
trailing lane axis instead: the array is assigned whole (the load of ``A + base + k`` is already
a ``[lanes..., n]`` tile, contiguous along ``k``) and an accumulation becomes a ``tl.sum`` over
that axis.  The independence test is the block view's (``rules._is_map_loop`` / ``rules._sum_loop``);
anything else keeps the loop.  tests/test_local_loop_vectorize.py covers both forms.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import math

from .. import ir
from ..ir import INT32
from ..ir.exprs import int_const, ir_key, map_children, static
from . import pyast as P
from .values import LaneSpace, Lowered, Lowerer, RegBuf, Tile, launch_warps, next_pow2


def lower_local_loop(lw: Lowerer, s: ir.For, store_rule) -> bool:
    """Lower ``s`` as a trailing lane axis when it fills or sums per-lane local arrays element by
    element; False (nothing emitted) when it does not.  ``store_rule`` lowers an ``ir.Store``."""
    plan = _plan(lw, s)
    if plan is None:
        return _lower_memory_nest(lw, s)
    outer = {}  # the loop-invariant reads of local arrays, evaluated once before the axis opens
    for load in plan.invariant_reads:
        outer[id(load)] = lw.ev(load)
    with TrailingAxis(lw, s) as axis:

        def substituted(e):
            return _replace_loads(e, lambda load: _local_value(lw, axis, plan, outer, load))

        if plan.accumulation is None:
            _lower_fill(lw, s, axis, plan, substituted)
            return True
        store, f = plan.accumulation
        total = _sum_over(lw, axis, update_term(lw, store, substituted(f)))
    acc = ir.Load(store.buffer, store.indices)
    value = ir.BinOp("+", acc, Lowered(total), store.value.dtype)
    store_rule(lw, ir.Store(store.loc, store.buffer, store.indices, value))
    return True


@dataclasses.dataclass
class _Plan:
    n: int
    axis_reads: set  # ids of the Loads ``local[k]``: the local array itself along the new axis
    invariant_reads: list  # Loads of local arrays at indices that do not change with the loop
    accumulation: tuple | None  # (store, f) for ``X[i] += f(k)``; None for a loop that fills arrays
    block_reads: dict = dataclasses.field(default_factory=dict)  # id -> axes: ``S[tx, k]``, S whole


def trip_count(s: ir.For) -> int | None:
    """The constant iteration count of a loop from 0 by 1 that may become a tile axis (2..1024)."""
    if s.kind not in ("serial", "unroll", "vectorized") or static(s.start) != 0 or static(s.step) != 1:
        return None
    n = static(s.stop)
    return n if n is not None and 2 <= n <= 1024 else None


def _private(lw: Lowerer, buf: ir.Buffer, lanes: LaneSpace | None = None) -> RegBuf | None:
    """``buf``'s register tile when it is a local array of ``lanes`` (the current lanes unless
    given): one copy of the array per lane."""
    if buf.scope == ir.GLOBAL or buf in lw.scratch.views:
        return None
    rb = lw.regs.get(buf)
    if rb is None or rb.lanes is None or rb.lanes is not (lanes or lw.scope.lanes) or rb.view_of is not None:
        return None
    return rb


def in_memory(lw: Lowerer, buf: ir.Buffer) -> bool:
    """A global tensor, or a shared buffer kept in global scratch (the same rules apply)."""
    return buf.scope == ir.GLOBAL or buf in lw.scratch.views


def _indexed_by(indices, var: ir.Var) -> bool:
    return len(indices) == 1 and isinstance(indices[0], ir.VarRef) and indices[0].var is var


def vars_in(exprs) -> set:
    return {e.var for x in exprs for e in ir.iter_expr_tree(x) if isinstance(e, ir.VarRef)}


def _plan(lw: Lowerer, s: ir.For) -> _Plan | None:
    lanes = lw.scope.lanes
    if lanes is None or lw.scope.loop_axes or lw.scope.inline_only:
        return None
    n = trip_count(s)
    if n is None or not s.body:
        return None
    lets = {st.var for st in s.body if isinstance(st, ir.Let)}
    varying = lets | {s.var}  # what may change from one iteration to the next
    plan = _Plan(n, set(), [], None)
    read = set()

    def reads_ok(exprs, exclude=None) -> bool:
        for x in exprs:
            for e in ir.iter_expr_tree(x):
                if not isinstance(e, ir.Load):
                    continue
                if e.buffer is exclude:
                    return False
                read.add(e.buffer)
                if in_memory(lw, e.buffer):
                    continue
                rb = _private(lw, e.buffer)
                if rb is None:
                    axes = _block_axes(lw, s, n, e)
                    if axes is None:
                        return False  # a block-level buffer at other positions: the loop stays
                    plan.block_reads[id(e)] = axes
                    continue
                if _indexed_by(e.indices, s.var) and next_pow2(e.buffer.shape[0]) == next_pow2(n):
                    plan.axis_reads.add(id(e))
                elif vars_in(e.indices) & varying:
                    return False
                else:
                    plan.invariant_reads.append(e)
        return True

    found = accumulation(s)
    if found is not None:
        store, f = found
        if vars_in(store.indices) & varying or not reads_ok([f], exclude=store.buffer):
            return None
        if not (plan.axis_reads or plan.block_reads):
            return None
        plan.accumulation = found
        return plan
    written = set()
    fills_local = False  # a loop that neither fills nor reads local arrays by element is the block view's
    for st in s.body:
        if isinstance(st, ir.Let):
            if st.var in lw.scope.env:
                return None  # rebinding a name from outside the loop carries a value across iterations
            exprs = [st.value]
        elif isinstance(st, ir.Store) and in_memory(lw, st.buffer):
            if not vars_in(st.indices) & varying:
                return None  # every iteration writes the same element: the last one wins
            written.add(st.buffer)
            exprs = [*st.indices, st.value]
        elif isinstance(st, ir.Store) and _private(lw, st.buffer) is not None:
            # each iteration writes its own element: the loop variable indexes the whole array
            if not _indexed_by(st.indices, s.var) or st.buffer.shape[0] != n:
                return None
            written.add(st.buffer)
            fills_local = True
            exprs = [st.value]
        else:
            return None
        if not reads_ok(exprs):
            return None
    if not (fills_local or plan.axis_reads or plan.block_reads) or written & read:
        return None
    if lets & vars_in(x for st in ir.walk(lw.following) for x in ir.stmt_exprs(st)):
        return None
    return plan


def _block_axes(lw: Lowerer, s: ir.For, n: int, load: ir.Load) -> list | None:
    """For a block-level register buffer read at ``[lane variables and k]``, each spanning its dim
    (``S[tx, k]``), the lane axis of each dim (k's is the new last one); else None."""
    rb = lw.regs.get(load.buffer)
    lanes = lw.scope.lanes
    if rb is None or rb.lanes is not None or rb.view_of is not None or len(rb.shape) != len(load.indices):
        return None
    axes = []
    for d, index in enumerate(load.indices):
        if not isinstance(index, ir.VarRef):
            return None
        if index.var is s.var:
            axis, fits = lanes.rank, next_pow2(n) == rb.shape[d]
        else:
            node = lw.scope.env[index.var].node if index.var in lw.scope.env else None
            axis = lanes.names.index(node.id) if isinstance(node, ast.Name) and node.id in lanes.names else None
            fits = axis is not None and lanes.extents[axis] == load.buffer.shape[d]
        if not fits or axis in axes:
            return None
        axes.append(axis)
    return axes if lanes.rank in axes else None


def accumulation(s: ir.For):
    """``X[i] += f(k)`` (one statement, ``X[i]`` one operand of the ``+``): (store, f)."""
    if len(s.body) != 1 or not isinstance(s.body[0], ir.Store):
        return None
    st = s.body[0]
    if not (isinstance(st.value, ir.BinOp) and st.value.op == "+"):
        return None
    target = (id(st.buffer), tuple(ir_key(i) for i in st.indices))
    for acc, f in ((st.value.lhs, st.value.rhs), (st.value.rhs, st.value.lhs)):
        if isinstance(acc, ir.Load) and (id(acc.buffer), tuple(ir_key(i) for i in acc.indices)) == target:
            return st, f
    return None


def _replace_loads(e, fn):
    """``e`` with every Load for which ``fn`` returns an expression replaced by it."""
    if isinstance(e, ir.Load):
        new = fn(e)
        if new is not None:
            return new
    if not dataclasses.is_dataclass(e) or isinstance(e, Lowered):
        return e
    changes = {}
    for f in dataclasses.fields(e):
        value = getattr(e, f.name)
        if isinstance(value, ir.Expr):
            new = _replace_loads(value, fn)
        elif isinstance(value, (tuple, list)) and any(isinstance(v, ir.Expr) for v in value):
            new = type(value)(_replace_loads(v, fn) if isinstance(v, ir.Expr) else v for v in value)
        else:
            continue
        if new is not value:
            changes[f.name] = new
    return dataclasses.replace(e, **changes) if changes else e


class TrailingAxis:
    """The loop variable as a new last lane axis, behind the lanes of the local arrays.  Values
    bound before the loop get a trailing unit axis (Triton broadcasts from the right)."""

    def __init__(self, lw: Lowerer, s: ir.For):
        self.lw, self.n = lw, static(s.stop)
        self.saved = lw.scope.snapshot()
        lanes = lw.scope.lanes
        self.rank = rank = lanes.rank
        self.padded = next_pow2(self.n)
        for var, tile in self.saved.env.items():
            if tile.axes:
                lw.scope.env[var] = Tile(self.lift(tile.node), tile.dtype, tile.axes)
        lw.scope.conds = [Tile(self.lift(c.node), c.dtype, c.axes) if c.axes else c for c in lw.scope.conds]
        # lane names serve the padding masks (``tx < 48``): those of padded axes get a lifted copy
        names = [
            lw.assign(name, self.lift(P.name(name))) if lanes.padded[a] != lanes.extents[a] else name
            for a, name in enumerate(lanes.names)
        ]
        self.name = lw.assign(s.var.name, P.expand(P.call("tl.arange", 0, self.padded), rank, rank + 1))
        lw.scope.env[s.var] = Tile(P.name(self.name), INT32, frozenset([rank]))
        lw.scope.ranges.set(s.var, 0, self.n - 1)
        lw.scope.lanes = LaneSpace(
            lanes.vars + [s.var],
            lanes.extents + [self.n],
            lanes.padded + [self.padded],
            names + [self.name],
            lanes.owner,
        )

    def lift(self, node):
        return P.subscript_none(node, [True] * self.rank + [False])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.lw.scope.restore(self.saved)


def _local_value(lw: Lowerer, axis: TrailingAxis, plan: _Plan, outer: dict, load: ir.Load):
    if id(load) in plan.axis_reads:  # ``local[k]`` for every k: the array itself
        rb = lw.regs[load.buffer]
        return Lowered(Tile(P.name(rb.name), load.buffer.dtype, frozenset(range(axis.rank + 1))))
    if id(load) in plan.block_reads:  # ``S[tx, k]``: the buffer itself, its dims in lane order
        axes = plan.block_reads[id(load)]
        node = P.permute(P.name(lw.regs[load.buffer].name), sorted(range(len(axes)), key=lambda d: axes[d]))
        node = P.subscript_none(node, [a in axes for a in range(axis.rank + 1)])
        return Lowered(Tile(node, load.buffer.dtype, frozenset(axes)))
    if id(load) in outer:
        t = outer[id(load)]
        return Lowered(Tile(axis.lift(t.node), t.dtype, t.axes) if t.axes else t)
    return None


def _lower_fill(lw: Lowerer, s: ir.For, axis: TrailingAxis, plan: _Plan, substituted) -> None:
    saved_origin = lw.origin
    try:
        for position, st in enumerate(s.body):
            rb = _private(lw, st.buffer, axis.saved.lanes) if isinstance(st, ir.Store) else None
            if rb is None:
                if isinstance(st, ir.Let):
                    st = ir.Let(st.loc, st.var, substituted(st.value))
                else:
                    st = ir.Store(st.loc, st.buffer, tuple(substituted(i) for i in st.indices), substituted(st.value))
                lw.lower_stmts([st])
                continue
            lw.following, lw.statement_names, lw.origin = s.body[position + 1 :], {}, st.loc
            lw.statement_serial += 1
            value = lw.cast(lw.ev(substituted(st.value)), st.buffer.dtype)
            node = value.node
            if value.axes != frozenset(range(axis.rank + 1)):  # one value per lane and element
                node = lw.broadcast(value, rb.shape)
            mask = lw.lane_mask(frozenset()) if lw.scope.conds else None
            if mask is not None:
                node = P.call("tl.where", mask, node, P.name(rb.name))
            lw.assign_to(rb.name, node)
    finally:
        lw.origin = saved_origin


def update_term(lw: Lowerer, store: ir.Store, f) -> Tile:
    """The term ``f`` of a loop's ``acc += f`` in the type of the update (``acc + f``): a float16
    product added into a float32 accumulator is summed over the loop in float32, as the loop adds
    it (``tl.sum`` of float16 would round every partial sum to float16)."""
    return lw.cast(lw.ev(f), store.value.dtype)


def _sum_over(lw: Lowerer, axis: TrailingAxis, term: Tile) -> Tile:
    """The sum of ``term`` over the loop's iterations, back in the lanes outside the loop."""
    if not term.axes:
        return Tile(P.binop("*", term.node, P.const(axis.n)), term.dtype)
    node = term.node
    if axis.rank in term.axes and axis.padded != axis.n:
        valid = P.binop("<", P.name(axis.name), P.const(axis.n))
        node = P.call("tl.where", valid, node, P.const(0))
    node = P.call("tl.sum", node, axis=axis.rank)  # a unit axis when the term does not vary with k
    if axis.rank not in term.axes:
        node = P.binop("*", node, P.const(axis.n))
    return Tile(node, term.dtype, term.axes - {axis.rank})


# Loops that copy between memories in the thread view: ``for u in T.serial(9): T.ptx_cp_async(
# T.access_ptr(S[row, 64 * u + c8], "w", 8), T.access_ptr(G[idx, 64 * u + c8], "r", 8), 8)`` binds to
# ``for u: for v in T.vectorized(8): S[row, 64*u + c8 + v] = G[idx, 64*u + c8 + v]`` with ``row``,
# ``idx`` values of the thread (a per-thread register).  Kept as loops, each of the 72 iterations
# would move one element per thread, behind a barrier for the scratch store; as trailing axes the
# nest is one ``[threads, 16, 8]`` load and store.  The block view's map loops (rules._is_map_loop)
# refuse them because they read per-lane registers; here those reads are loop-invariant and are
# evaluated once before the axes open.  Element atomics that commute take the same path (the four
# adds of a ``T.atomic_addx4`` are one ``tl.atomic_add`` over consecutive addresses: a v4 atomic).
MOVE_LIMIT = 1 << 14  # elements of the widened tile (lanes x padded trips): past it the loops stay
# in the thread view, also up to this many elements a launched thread: the pipelined sparse MLA
# producer's [512 lanes, 16, 8] nest at 16 warps spilled 2056 B a thread where its [512, 8] inner
# loop alone spilled 1864 B (offline sm_90 compile, Triton 3.9), and runs 4 iterations a stage, not 36
MOVE_PER_THREAD = 128


def _move_limit(lw: Lowerer) -> int:
    owner = lw.scope.lanes.owner
    if not isinstance(owner, ir.Kernel):
        return MOVE_LIMIT
    warps = launch_warps(lw.options, owner.threads)
    return max(MOVE_LIMIT, MOVE_PER_THREAD * 32 * warps)


def _memory_nest(lw: Lowerer, s: ir.For):
    """``s`` and the loops perfectly nested in it when the innermost body only stores into memory
    (global or scratch), every store naming every loop variable, or adds into global memory with
    atomics, and reads memory not written in the nest, block-level registers, or per-lane registers
    at positions the nest does not move: (loops, the per-lane reads, evaluated before the loops)."""
    lanes = lw.scope.lanes
    if lanes is None or lw.scope.loop_axes or lw.scope.inline_only:
        return None
    loops = [s]
    while len(loops[-1].body) == 1 and isinstance(loops[-1].body[0], ir.For):
        loops.append(loops[-1].body[0])
    trips = [trip_count(loop) for loop in loops]
    if None in trips or ir.loop_exits(s.body):
        return None
    if math.prod(lanes.padded) * math.prod(next_pow2(n) for n in trips) > _move_limit(lw):
        return None
    body = loops[-1].body
    nest_vars = {loop.var for loop in loops}
    lets = {st.var for st in body if isinstance(st, ir.Let)}
    varying = nest_vars | lets
    written, read, invariant = set(), set(), []
    for st in body:
        if isinstance(st, ir.Let):
            if st.var in lw.scope.env:
                return None
            exprs = [st.value]
        elif isinstance(st, ir.Store) and in_memory(lw, st.buffer):
            if not nest_vars <= vars_in(st.indices):
                return None  # iterations along a variable the position ignores write one element
            written.add(st.buffer)
            exprs = [*st.indices, st.value]
        elif _commuting_atomic(st) and st.dst.buffer.scope == ir.GLOBAL:
            # T.atomic_addx4's four adds: any order of the iterations gives the same sums
            written.add(st.dst.buffer)
            exprs = [*st.dst.indices, st.value]
        else:
            return None
        for x in exprs:
            for e in ir.iter_expr_tree(x):
                if not isinstance(e, ir.Load):
                    continue
                read.add(e.buffer)
                if in_memory(lw, e.buffer):
                    continue
                rb = lw.regs.get(e.buffer)
                if rb is not None and rb.lanes is None and rb.view_of is None:
                    continue  # a block-level register buffer: read at any position of the lanes
                if vars_in(e.indices) & varying:
                    return None
                invariant.append(e)
    if not written or written & read:
        return None
    if lets & vars_in(x for st in ir.walk(lw.following) for x in ir.stmt_exprs(st)):
        return None
    return loops, invariant


def _commuting_atomic(st) -> bool:
    """An element atomic whose updates commute and whose previous value nobody reads."""
    return (
        isinstance(st, ir.Atomic)
        and st.kind in ("add", "max", "min", "or")
        and st.result is None
        and isinstance(st.dst, ir.Load)
        and isinstance(st.value, ir.Expr)
    )


def _lower_memory_nest(lw: Lowerer, s: ir.For) -> bool:
    found = _memory_nest(lw, s)
    if found is None:
        return False
    loops, invariant = found
    fused = None if invariant else _fused_lane_axis(lw, loops)
    if fused is not None:
        with _FusedAxis(lw, *fused[:2]):
            lw.lower_stmts(fused[2])
        return True
    rank = lw.scope.lanes.rank
    outer = {id(load): lw.ev(load) for load in invariant}
    with contextlib.ExitStack() as axes:
        for loop in loops:
            axes.enter_context(TrailingAxis(lw, loop))

        def value(load):
            t = outer.get(id(load))
            if t is None:
                return None
            if t.axes:  # behind the lanes, one unit axis per loop
                t = Tile(P.subscript_none(t.node, [True] * rank + [False] * len(loops)), t.dtype, t.axes)
            return Lowered(t)

        for st in loops[-1].body:
            lw.lower_stmts([_map_stmt_exprs(st, lambda e: _replace_loads(e, value))])
    return True


# A T.atomic_addx4 (or any nest of one vectorized loop) inside a 2-D T.Parallel addresses
# ``A[i, 4 * j + k]``: as a trailing axis it is a [rows, n, 4] tile whose middle axis has stride 4,
# where Triton 3.6's coalescing breaks the tie between the two outer axes (both of contiguity 1)
# toward the rows: 32 lanes on 32 rows, each 16-byte red.v4 in its own 32-byte sector (twice the
# L2 sectors; sparse_mla_bwd's dKV atomics on the H200).  Where the last lane axis ``j`` and the
# loop variable ``k`` appear only as ``V * j + k``, the two are one lane axis ``m`` of n * V
# elements, ``A[i, m]``: contiguous along m, a [rows, n * V] tile both Triton versions coalesce.


def _fused_lane_axis(lw: Lowerer, loops: list):
    """(the last lane axis's new Var, its extent, the nest's body rewritten over it) where the nest
    is one loop of V iterations (a power of two) and its body uses the last lane variable ``j`` and
    the loop variable ``k`` only as ``V * j + k``; None otherwise."""
    lanes = lw.scope.lanes
    if len(loops) != 1 or lanes.rank < 2:
        return None
    loop, axis = loops[0], lanes.rank - 1
    v, n = trip_count(loop), lanes.extents[axis]
    if v is None or v & (v - 1) or lanes.padded[axis] != n or any(axis in c.axes for c in lw.scope.conds):
        return None
    lane, k = lanes.vars[axis], loop.var
    fused = ir.Var(f"{lane.name}_{k.name}", INT32, "lane")
    body = [_map_stmt_exprs(st, lambda e: _fuse_terms(e, lane, k, v, fused)) for st in loop.body]
    used = vars_in(x for st in body for x in ir.stmt_exprs(st))
    if {lane, k} & used:
        return None
    # values bound before the nest that vary along the lane axis would keep its old extent
    if any(axis in lw.scope.env[var].axes for var in used if var in lw.scope.env and var is not fused):
        return None
    return fused, n * v, body


def _map_stmt_exprs(st, fn):
    """A statement of a memory nest (a Let, a Store or an element Atomic) with ``fn`` applied to
    each of its expressions."""
    if isinstance(st, ir.Let):
        return ir.Let(st.loc, st.var, fn(st.value))
    if isinstance(st, ir.Atomic):
        dst = ir.Load(st.dst.buffer, tuple(fn(i) for i in st.dst.indices), st.dst.loc)
        return dataclasses.replace(st, dst=dst, value=fn(st.value))
    return ir.Store(st.loc, st.buffer, tuple(fn(i) for i in st.indices), fn(st.value))


def _fuse_terms(e, lane: ir.Var, k: ir.Var, v: int, fused: ir.Var):
    """``e`` with each sum holding the terms ``v * lane`` and ``k`` holding ``fused`` instead."""
    if isinstance(e, ir.BinOp) and e.op in ("+", "-"):
        terms = _sum_terms(e, 1)
        scaled = next((t for t in terms if t[1] == 1 and _scaled_var(t[0], lane) == v), None)
        alone = next((t for t in terms if t[1] == 1 and isinstance(t[0], ir.VarRef) and t[0].var is k), None)
        if scaled is not None and alone is not None:
            out = None  # the terms in their order, the fused variable where ``v * lane`` stood
            for t, sign in terms:
                if t is alone[0]:
                    continue
                t = ir.VarRef(fused) if t is scaled[0] else _fuse_terms(t, lane, k, v, fused)
                out = t if out is None else ir.BinOp("+" if sign == 1 else "-", out, t, e.dtype)
            return out
    return map_children(e, lambda x: _fuse_terms(x, lane, k, v, fused))


def _sum_terms(e, sign: int) -> list:
    """The terms of a chain of ``+`` and ``-`` as (expression, +1 or -1)."""
    if isinstance(e, ir.BinOp) and e.op in ("+", "-") and e.dtype == e.lhs.dtype == e.rhs.dtype:
        return _sum_terms(e.lhs, sign) + _sum_terms(e.rhs, sign if e.op == "+" else -sign)
    return [(e, sign)]


def _scaled_var(e, var: ir.Var) -> int | None:
    """c where ``e`` is ``var * c`` or ``c * var`` with an integer constant c."""
    if not (isinstance(e, ir.BinOp) and e.op == "*"):
        return None
    for a, b in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
        if isinstance(a, ir.VarRef) and a.var is var and int_const(b) is not None:
            return int_const(b)
    return None


class _FusedAxis:
    """The last lane axis replaced by ``fused``, ``extent`` elements long, for one nest's body."""

    def __init__(self, lw: Lowerer, fused: ir.Var, extent: int):
        self.lw = lw
        self.saved = lw.scope.snapshot()
        lanes = lw.scope.lanes
        axis = lanes.rank - 1
        name = lw.assign(fused.name, P.expand(P.call("tl.arange", 0, extent), axis, lanes.rank))
        lw.scope.env[fused] = Tile(P.name(name), INT32, frozenset([axis]))
        lw.scope.ranges.set(fused, 0, extent - 1)
        lw.scope.lanes = LaneSpace(
            lanes.vars[:axis] + [fused],
            lanes.extents[:axis] + [extent],
            lanes.padded[:axis] + [extent],
            lanes.names[:axis] + [name],
            lanes.owner,
        )

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.lw.scope.restore(self.saved)


# Loops that stay loops (their iterations depend on each other) but pick elements of local arrays
# with the loop variable: unrolled with ``tl.static_range``, the variable is a constant in each copy
# of the body, and the one-hot selects (``tl.arange(0, n) == k``) fold to plain register moves.
UNROLL_LIMIT = 16


def unroll_for_locals(lw: Lowerer, s: ir.For) -> bool:
    """Whether ``s`` (static bounds, at most ``UNROLL_LIMIT`` iterations, no loop inside) indexes
    a per-lane local array with its loop variable."""
    if lw.scope.lanes is None or s.kind not in ("serial", "unroll", "vectorized"):
        return False
    bounds = [static(e) for e in (s.start, s.stop, s.step)]
    if None in bounds or bounds[2] <= 0 or len(range(*bounds)) > UNROLL_LIMIT:
        return False
    body = list(ir.walk(s.body))
    if any(isinstance(st, (ir.For, ir.While, ir.Parallel)) for st in body):
        return False
    for st in body:
        accesses = list(ir.loads_in(st))
        if isinstance(st, ir.Store):
            accesses.append(st)
        for access in accesses:
            rb = lw.regs.get(access.buffer)
            if rb is not None and rb.lanes is not None and s.var in vars_in(access.indices):
                return True
    return False
