"""Lowering rules of statements (``LOWERINGS``, ``rules_base.py``): allocation, scalars, control flow
and lane spaces (``T.Parallel``), barriers, asserts and prints.

One rule per TileIR statement; the others stand by topic, each registering when ``lower.py``
imports it: ``tile_ops.py`` (copy, fill, gemm: tile ops reuse the element rules by lowering as
TileLang's own SIMT lowering does, a copy is a T.Parallel over its extents), ``reductions.py``
and ``atomics.py``."""

from __future__ import annotations

import ast

from .. import ir
from ..ir import BOOL, INT32
from ..ir.evaluate import row_major_strides, same_exprs
from ..ir.exprs import conjuncts, static, static_trips
from ..language.dtypes import DTYPES
from ..passes.analysis import first_access
from ..passes.forward_shared import written_roots
from ..passes.split import distinct_per_iteration, find_split
from . import deferred, exits, held, scratch
from . import pyast as P
from .gemm_kinds import REGISTER_A_STAGES, accumulators_past_budget, hopper, register_a_race, runs_as_mma_sync
from .local_loops import (
    accumulation,
    in_memory,
    lower_local_loop,
    trip_count,
    unroll_for_locals,
    update_term,
    vars_in,
)
from .rules_base import LOWERINGS, lowers  # noqa: F401 - LOWERINGS is read through here too
from .speculate import speculate_copies
from .threads import block_level, in_thread_view, thread_range, thread_span
from .values import LaneSpace, Lowered, Lowerer, RegBuf, Tile, is_bool_literal, next_pow2, prod


# ------------------------------------------------------------------------------ allocation
@lowers(ir.Alloc)
def lower_alloc(lw: Lowerer, s: ir.Alloc) -> None:
    buf = s.buffer
    if scratch.wanted(lw, buf):
        scratch.alloc(lw, buf)
        return
    if held.alloc(lw, buf):  # one value per element (held.py)
        return
    local_shape = tuple(next_pow2(d) for d in buf.shape)
    if all(d == 1 for d in buf.shape):
        local_shape = ()
    # thread view: locals, and fragments TileLang keeps per thread (passes/uniform.py), hold one value per thread
    per_thread = buf.scope in (ir.LOCAL, ir.VAR) or buf in lw.private_fragments
    private = lw.scope.lanes is not None and per_thread and buf not in lw.uniform_vars
    shape = tuple(lw.scope.lanes.padded) + local_shape if private else local_shape
    rb = RegBuf(buf, lw.names.fresh(buf.name), shape, lw.scope.lanes if private else None)
    if buf.alias_of is not None:  # T.reshape of a register buffer
        base = lw.regs.get(buf.alias_of)
        if buf.dtype != buf.alias_of.dtype:  # T.view reinterpreting the bits: through memory
            raise scratch.NeedsScratch(buf.root, "T.view with another dtype")
        if base is None or base.lanes is not None or any(next_pow2(d) != d for d in (*buf.shape, *buf.alias_of.shape)):
            if buf.scope in (ir.SHARED, ir.FRAGMENT) and base is not None and base.lanes is None:
                raise scratch.NeedsScratch(buf.root, "T.reshape with extents that are not powers of two")
            raise lw.error("T.reshape of a shared/fragment buffer needs power-of-two extents on both sides")
        rb.view_of = base
        lw.regs[buf] = rb
        return
    lw.regs[buf] = rb
    dt = P.dtype(lw.storage_dtype(buf.dtype))
    if s.init is not None:
        init = lw.ev(s.init)
        lw.assign_to(rb.name, P.call("tl.full", P.list_(shape), init.node, dt) if not init.axes else init.node)
        return
    lanes = {v: e for v, e in zip(lw.scope.lanes.vars, lw.scope.lanes.extents)} if lw.scope.lanes is not None else None
    # under a per-thread condition the first write may stand in a branch (threads.block_level)
    if lw.scope.conds or first_access(lw.following, buf, lanes) != "write":
        lw.assign_to(
            rb.name, P.call("tl.zeros", P.list_(shape), dt) if shape else P.call("tl.full", P.list_([]), 0, dt)
        )


@lowers(ir.MakeTensor)
def lower_make_tensor(lw: Lowerer, s: ir.MakeTensor) -> None:
    """``T.make_tensor``: the address becomes a typed pointer, used as a parameter's would be.  A contiguous
    tensor (row-major strides) over an element of a pointer table takes its base as 16-byte aligned, as
    TileLang's vectorized and asynchronous copies take every buffer's: without the hint Triton knows nothing of
    an address loaded from memory and copies element by element (TileLang's grouped GEMM over a pointer table,
    offline for sm_90: 48 two-byte loads a K step and no ``cp.async``; with it, ``cp.async`` of 16 bytes and
    140 -> 64 registers).  A strided view (a sub-block of a larger tensor, whose base need not be aligned), an
    address computed from one (``ptr + offset``) and a ``T.ptr`` parameter (Triton specialises an integer
    argument on its divisibility by 16 itself) get no hint."""
    buf = s.buffer
    address = lw.scalar(buf.address, "the address of T.make_tensor")
    node = address.node
    if address.dtype.kind == "ptr":  # a T.ptr parameter: Triton types a Python int by its value
        node = P.to(node, DTYPES["int64"])
    pointer = P.call(P.attr(node, "to"), P.call("tl.pointer_type", P.dtype(buf.dtype)))
    if _row_major(buf) and _loads_pointer(buf.address):
        pointer = P.call("tl.multiple_of", pointer, P.const(16))  # on the pointer: Triton drops an integer's hint
    lw.pointers[buf] = lw.assign(buf.name, pointer)


def _row_major(buf: ir.Buffer) -> bool:
    """Are ``buf``'s strides those of its shape, row-major (none given, or the shape known when compiling)?"""
    if buf.strides is None:
        return True
    return all(static(e) is not None for e in buf.shape) and same_exprs(
        tuple(buf.strides), row_major_strides(buf.shape)
    )


def _loads_pointer(address: ir.Expr) -> bool:
    """Is ``address`` an element of a table of addresses, as loaded (``A_ptrs[i]`` of a ``T.Tensor([G], T.ptr)``,
    stored as int64)?"""
    while isinstance(address, ir.Cast):
        address = address.value
    return (
        isinstance(address, ir.Load)
        and address.buffer.scope == ir.GLOBAL
        and (address.buffer.dtype.kind == "ptr" or (address.buffer.dtype.is_int and address.buffer.dtype.bits == 64))
    )


# ------------------------------------------------------------------------------ scalars
@lowers(ir.Let)
def lower_let(lw: Lowerer, s: ir.Let) -> None:
    value = lw.ev(s.value)
    if held.binds_constant(lw, s, value):  # an index of a held array, in an unrolled iteration
        return
    previous = lw.scope.env.get(s.var)
    if previous is not None and isinstance(previous.node, ast.Name):
        target = previous.node.id
        for buf in [b for b, (_, _, uses) in lw.forwards.items() if s.var in uses]:
            del lw.forwards[buf]  # the stage index names another stage now
        if lw.scope.conds and lw.scope.let_depth.get(s.var, 0) < len(lw.scope.conds):
            mask = lw.lane_mask(frozenset())
            value = Tile(
                P.call("tl.where", mask, value.node, previous.node),
                value.dtype,
                value.axes | previous.axes | lw.cond_axes(),
            )
        lw.assign_to(target, value.node)
        lw.scope.env[s.var] = Tile(P.name(target), s.var.dtype, value.axes | previous.axes)
        return
    node = value.node
    if isinstance(s.value, ir.VarRef) and isinstance(node, ast.Name) and lw.let_count.get(s.var, 0) == 1:
        lw.scope.env[s.var] = value  # ``tx = T.get_thread_binding(0)``: another name for the same value
        lw.scope.ranges.bind(s.var, s.value)
        return
    once = lw.let_count.get(s.var, 0) == 1  # a rebound name's range and value are unknown
    if once:
        lw.scope.ranges.bind(s.var, s.value)
        constant = _one_value(lw, s.var, value)
        if constant is not None:  # the same in every block and iteration: Triton folds what reads it
            lw.scope.env[s.var] = Tile(P.const(constant), s.var.dtype)
            return
    if _is_constant(node):
        node = P.call("tl.full", P.list_([]), node, P.dtype(lw.storage_dtype(s.var.dtype)))
    name = lw.assign(s.var.name, node)
    lw.scope.env[s.var] = Tile(P.name(name), s.var.dtype, value.axes)
    lw.scope.let_depth[s.var] = len(lw.scope.conds)


def _one_value(lw: Lowerer, var: ir.Var, value: Tile) -> int | None:
    """A scalar integer let whose value ranges prove it one value everywhere (``rows = k_end - k_start``,
    128 in every block): that value (TILE2TRITON_EXACT_RANGES)."""
    if not lw.options.exact_ranges or value.axes or var.dtype.kind != "int" or lw.scope.lanes is not None:
        return None
    return lw.scope.ranges.one_value(ir.VarRef(var))


def _same_everywhere(lw: Lowerer, e: ir.Expr) -> int | None:
    """A loop bound's value where it is a constant, or where the value ranges prove it one value in
    every block (``T.ceildiv(k_end - k_start, 64)`` with ``k_end = T.min(k_start + 128, n)`` and ``n`` a
    multiple of 128), with TILE2TRITON_EXACT_RANGES: the loop then has a constant trip count."""
    value = static(e)
    if value is not None or not lw.options.exact_ranges or getattr(e, "dtype", None) is None or e.dtype.kind != "int":
        return value
    return lw.scope.ranges.one_value(e)


def _is_constant(node) -> bool:
    return isinstance(node, ast.Constant) or (isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant))


@lowers(ir.Store)
def lower_store(lw: Lowerer, s: ir.Store) -> None:
    value = lw.ev(s.value)
    if s.buffer.scope == ir.GLOBAL:
        lw.global_store(s.buffer, [lw.ev(i) for i in s.indices], list(s.indices), value)
    elif s.buffer in lw.scratch.views:
        scratch.store(lw, s.buffer, s.indices, value)
    else:
        with scratch.register_path(lw, s.buffer):
            lw.reg_write(s.buffer, s.indices, value)


# ------------------------------------------------------------------------------ control flow
@lowers(ir.For)
def lower_for(lw: Lowerer, s: ir.For) -> None:
    if held.unrolls(lw, s):  # it indexes an array held by element: one iteration at a time
        held.unroll(lw, s, lower_store)
        return
    leaves = bool(ir.loop_exits(s.body))  # break/continue: the iterations run one after another
    if lw.options.vectorize_loops and not leaves and not held.touched_in(lw, s.body):
        if _is_map_loop(lw, s):
            _lower_map_loop(lw, s)
            return
        accumulation = _sum_loop(lw, s)
        if accumulation is not None:
            _lower_sum_loop(lw, s, *accumulation)
            return
        accumulation = _parallel_sum_loop(lw, s)
        if accumulation is not None:
            _lower_parallel_sum_loop(lw, s, *accumulation)
            return
        if lower_local_loop(lw, s, lower_store):  # per-lane local arrays filled or summed by element
            return
    if _per_lane_bounds(lw, s):
        return
    start, stop, step = (lw.scalar(e, "a loop bound") for e in (s.start, s.stop, s.step))
    var_name = lw.names.fresh(s.var.name)
    lw.scope.env[s.var] = Tile(P.name(var_name), INT32)
    lo, hi, st = (_same_everywhere(lw, e) for e in (s.start, s.stop, s.step))
    if lo is not None and static(s.start) is None:
        start = Tile(P.const(lo), INT32)
    if hi is not None and static(s.stop) is None:
        stop = Tile(P.const(hi), INT32)
    if lo is not None and hi is not None and st == 1:
        lw.scope.ranges.set(s.var, lo, hi - 1)
    elif lw.scope.ranges.of(s.start) is not None and lw.scope.ranges.of(s.stop) is not None and st == 1:
        lw.scope.ranges.set(s.var, lw.scope.ranges.of(s.start)[0], lw.scope.ranges.of(s.stop)[1] - 1)
    elif lw.scope.ranges.of(s.start) is not None and st is not None and st > 0:
        # a stop nothing bounds: the variable still starts there and grows (an int32 loop variable)
        lw.scope.ranges.set(s.var, lw.scope.ranges.of(s.start)[0], INT32.int_range[1])
    trips = _trips(lw, s)
    short = trips is not None and trips < lw.options.split_min_trips  # a second pipeline fill not repaid
    split = (
        find_split(s, lw.scope.ranges, lw.let_count, lw.once_lets)
        if lw.scope.lanes is None and not leaves and not short
        else None
    )
    if split is not None:
        # two loops: the iterations where the conditions are decided for every lane, then the rest
        at, known = split
        middle = P.name(lw.assign(f"{var_name}_split", lw.scalar(at, "a loop split").node))
        before = lw.scope.snapshot()
        lw.scope.known.update(known)  # Compare nodes, hashed by identity (the IR's eq=False)
        try:
            _emit_loop(lw, s, var_name, start.node, middle, step.node, lo == 0, trips)
        finally:
            # the second copy of the body starts from the scope before the loop, as the first did
            # (scratch barrier state carries on: the second loop runs after the first)
            lw.scope.restore(before)
        _emit_loop(lw, s, var_name, middle, stop.node, step.node, False, trips)
        return
    _emit_loop(lw, s, var_name, start.node, stop.node, step.node, lo == 0, trips)


def _per_lane_bounds(lw: Lowerer, s: ir.For) -> bool:
    """A loop whose bounds differ per thread / T.Parallel iteration (``T.unroll(tid % 32)``): each
    lane runs its own iterations, so the loop runs from the least start to the greatest stop of
    the lanes and the body stands under ``start <= k < stop`` per lane (a mask on every write)."""
    step = static(s.step)
    lo, hi = lw.ev(s.start), lw.ev(s.stop)
    if not (lo.axes or hi.axes):
        return False
    if step is None or step <= 0:
        raise lw.error("a loop whose bounds differ per thread needs a constant positive step")
    bounds = []
    for tile, reduce, what in ((lo, "tl.min", "start"), (hi, "tl.max", "stop")):
        node = P.call(reduce, tile.node) if tile.axes else tile.node
        var = ir.Var(lw.names.fresh(f"{s.var.name}_{what}"), INT32, "let")
        lw.scope.env[var] = Tile(P.name(lw.assign(var.name, node)), INT32)
        bounds.append(ir.VarRef(var))
    k = ir.VarRef(s.var)
    inside = ir.BinOp("and", ir.Compare(">=", k, s.start, BOOL), ir.Compare("<", k, s.stop, BOOL), BOOL)
    if step != 1:  # the lane's own iterations: start, start + step, ...
        phase = ir.Compare("==", ir.BinOp("%", ir.BinOp("-", k, s.start, INT32), s.step, INT32), ir.Const(0, INT32),
                           BOOL)  # fmt: skip
        inside = ir.BinOp("and", inside, phase, BOOL)
    body = [ir.If(s.loc, inside, s.body, [])]
    lower_for(lw, ir.For(s.loc, s.var, bounds[0], bounds[1], ir.Const(1, INT32), s.kind, body,
                         s.num_stages))  # fmt: skip
    return True


def keeps_invariants_in_loop(lw: Lowerer, body: list) -> bool:
    """Whether a loop is written ``tl.range(..., disable_licm=True)`` (TILE2TRITON_LICM_GUARD): on
    sm_90, a loop whose gemms all run as wgmma and read a shared operand the loop does not store
    (one stored before it), in a kernel whose accumulators pass the register budget.  Hoisted out
    of the loop, the wgmma shared-memory descriptor of every K step of such an operand (sparse MLA
    backward's Q and dO, and their transposes: about 100) is a 64-bit register live through the
    loop beside the accumulators, and ptxas spills and reloads them every iteration; left in the
    loop each is an add to its buffer's base.  Not where a gemm of the loop is mma.sync: offline
    (sm_90), gqa_bwd_tma_reduce_varlen's loops (a 32-row dQ gemm on mma.sync beside wgmmas) spilled
    68/48 -> 956/1152 bytes (stores/loads) with the guard on Triton 3.9, 212/200 -> 80/80 on 3.6;
    with that gemm as wgmma too the guard lowered them on both (48 -> 20, 780 -> 108)."""
    opts = lw.options
    if not (opts.licm_guard and hopper(opts)) or opts.interpret:
        return False
    gemms = [g for g in ir.walk(body) if isinstance(g, ir.Gemm)]
    if any(runs_as_mma_sync(lw, g) for g in gemms):
        return False
    operands = {r.buffer.root for g in gemms for r in (g.a, g.b)}
    invariant = {buf for buf in operands if buf.scope == ir.SHARED} - written_roots(body)
    return bool(invariant) and accumulators_past_budget(lw)


def _emit_loop(lw: Lowerer, s: ir.For, var_name: str, start, stop, step, from_zero: bool, trips: int | None) -> None:
    st = static(s.step)
    args = [start, stop] if not (from_zero and st == 1) else [stop]
    if st != 1:
        args = [start, stop, step]
    stmts = s.body
    unrolled = s.kind == "unroll" and all(static(e) is not None for e in (s.start, s.stop, s.step))
    unrolled = unrolled or unroll_for_locals(lw, s)
    if not unrolled and scratch.unsafe_to_pipeline(lw, s.body):
        # Triton's software pipeliner (num_stages, T.Pipelined's or the launch default) would issue
        # the next iteration's scratch loads ahead of this iteration's stores and barriers
        iterator = P.call("tl.range", *([P.const(0)] + args if len(args) == 1 else args), num_stages=1)
    elif s.kind == "pipelined" and s.num_stages:
        if len(args) == 1:
            args = [P.const(0)] + args
        iterator = P.call("tl.range", *args, **lw.options.pipeline_kwargs(s.num_stages))
        stmts = speculate_copies(lw, stmts)  # guarded copies where the pipeliner prefetches them
    elif unrolled:
        iterator = P.call("tl.static_range", *args)
    elif lw.options.max_stages and not lw.options.interpret:  # Triton would pipeline it with its launch default
        iterator = P.call(
            "tl.range", *([P.const(0)] + args if len(args) == 1 else args), num_stages=lw.options.max_stages
        )
    else:
        iterator = P.call("range", *args)
    if not unrolled and keeps_invariants_in_loop(lw, stmts):
        if isinstance(iterator.func, ast.Name):  # Python's range: tl.range takes the keyword
            iterator = P.call("tl.range", *([P.const(0)] + args if len(args) == 1 else args))
        iterator.keywords.append(ast.keyword("disable_licm", P.const(True)))
    outer = lw.scope.loop_trips
    # accumulations this loop only adds into, reduced once after it (deferred.py); not across exits
    deferrals = None
    deferring = lw.options.defer_sums or lw.options.gemm_parts or lw.options.defer_reducers or lw.options.defer_reduces
    if deferring and lw.scope.lanes is None and not ir.loop_exits(stmts):
        deferrals = deferred.LoopDeferrals(stmts)
    with lw.scoped(
        loop_depth=lw.scope.loop_depth + 1,
        loop_trips=None if trips is None or outer is None else outer * trips,
        loop_tma=lw.options.tma_pipelined_only and not unrolled and _tma_pays(iterator, stmts),
        deferrals=deferrals,
    ):
        body, _ = exits.loop_body(lw, stmts, s.var.name)
    if s.kind == "pipelined" and register_a_race(lw, s, body):
        for kw in iterator.keywords:
            if kw.arg == "num_stages" and isinstance(kw.value, ast.Constant) and kw.value.value > REGISTER_A_STAGES:
                kw.value = P.const(REGISTER_A_STAGES)
    if deferrals is not None:
        deferred.emit_inits(lw, deferrals)
    lw.emit(ast.For(P.store_name(var_name), iterator, body, [], lineno=0))
    if deferrals is not None:
        deferred.emit_finishes(lw, deferrals)


def _tma_pays(iterator: ast.Call, body: list) -> bool:
    """Whether TMA loads pay off in the loop ``iterator`` heads (``Scope.loop_tma``): its gemms read the
    boxes from shared memory, or Triton software-pipelines it (``num_stages`` of two or more; Triton 3.6
    pipelines a loop without a dot only where its ``num_stages`` is given).  Elsewhere a TMA load is
    synchronous: a barrier set up, waited on and invalidated per copy, the box then read back from shared
    memory into registers."""
    if ir.has_gemm(body):
        return True
    stages = next((kw.value for kw in iterator.keywords if kw.arg == "num_stages"), None)
    return isinstance(stages, ast.Constant) and stages.value >= 2


def _trips(lw: Lowerer, s: ir.For) -> int | None:
    """The loop's iteration count where its bounds are constants; with ``options.trip_bounds``,
    else at most the count its bounds' value ranges allow: the most iterations any program runs
    (the attention-sink loop ``T.Pipelined(start, end)`` with ``end = T.min(T.ceildiv(seq_kv,
    block_N), ...)``, a causal loop from ``by * block_M // block_N`` to a constant), counted
    block by block where the bounds come from few block indices (``Ranges.most``)."""
    trips = static_trips(s)
    if trips is not None or not lw.options.trip_bounds:
        return trips
    step = static(s.step)
    if not step or step < 0:
        return None
    # exact where the bounds come from few block indices: a sliding window's loop runs 2 tiles in
    # every block, where the intervals of its start and stop allow as many as the sequence has
    return lw.scope.ranges.most_trips(s.start, s.stop, step)


# Sequential loops with no dependence between iterations become one more tile axis instead of a
# loop: a loop that only moves data (a thread-view copy of a row, the loads of a GEMV) is evaluated
# for every iteration at once, and a loop that only adds into one element (a GEMV's
# ``C_reg[0] += ...``) becomes a ``tl.sum`` over that axis (tests/test_loop_vectorize.py).


def _block_level_reg(lw: Lowerer, buf: ir.Buffer) -> bool:
    rb = lw.regs.get(buf)
    return buf.scope != ir.GLOBAL and rb is not None and rb.lanes is None


_COMMUTING_ATOMICS = frozenset({"add", "max", "min", "and", "or", "xor"})


def _is_map_loop(lw: Lowerer, s: ir.For) -> bool:
    n = trip_count(s)
    if n is None:
        return False
    written, read, lets = set(), set(), set()
    stores: dict = {}  # in-memory buffer -> the index tuples its stores write
    let_values = {st.var: st.value for st in ir.walk(s.body) if isinstance(st, ir.Let)}
    body = list(s.body)
    branched = set()  # statements under a branch: bindings and commuting atomics only
    for st in body:
        if isinstance(st, ir.If) and lw.options.vectorize_atomic_loops:
            # a branch per iteration: a condition on the widened lanes (its loads are reads)
            inner = list(st.then_body) + list(st.else_body or [])
            body.extend(inner)
            branched.update(map(id, inner))
            for load in ir.loads_in(st):
                if not in_memory(lw, load.buffer) and not _block_level_reg(lw, load.buffer):
                    return False
                read.add(load.buffer)
            continue
        if id(st) in branched and not isinstance(st, (ir.Let, ir.If, ir.Atomic)):
            return False  # a store under a condition: which iteration writes last would matter
        if (
            isinstance(st, ir.Atomic)
            and lw.options.vectorize_atomic_loops
            and st.result is None
            and st.kind in _COMMUTING_ATOMICS
            and isinstance(st.dst, ir.Load)
            and in_memory(lw, st.dst.buffer)
        ):
            # fire-and-forget updates that commute: the iterations' order does not matter
            written.add(st.dst.buffer)
            for load in ir.loads_in(st):
                if load is not st.dst:
                    if not in_memory(lw, load.buffer) and not _block_level_reg(lw, load.buffer):
                        return False
                    read.add(load.buffer)
            continue
        if isinstance(st, ir.Let):
            if st.var in lw.scope.env:
                return False  # rebinding a name from outside the loop carries a value across iterations
            lets.add(st.var)
        elif isinstance(st, ir.Store) and in_memory(lw, st.buffer):
            written.add(st.buffer)
            stores.setdefault(st.buffer, []).append(st.indices)
        elif isinstance(st, ir.Store) and _block_level_reg(lw, st.buffer):
            # each iteration writes its own slice: the loop variable indexes a dim of the loop's extent
            dims = [d for d, i in enumerate(st.indices) if isinstance(i, ir.VarRef) and i.var is s.var]
            if len(dims) != 1 or st.buffer.shape[dims[0]] != n:
                return False
            written.add(st.buffer)
        else:
            return False
        for load in ir.loads_in(st):
            if not in_memory(lw, load.buffer) and not _block_level_reg(lw, load.buffer):
                return False
            read.add(load.buffer)
    if written & read:
        return False
    # iterations that write one element must keep their order (the last one's value stays)
    if not all(distinct_per_iteration(ixs, s.var, let_values) for ixs in stores.values()):
        return False
    return not (lets & _vars_used(lw.following))


def _vars_used(stmts) -> set:
    return {
        e.var
        for st in ir.walk(stmts)
        for x in ir.stmt_exprs(st)
        for e in ir.iter_expr_tree(x)
        if isinstance(e, ir.VarRef)
    }


def _sum_loop(lw: Lowerer, s: ir.For):
    """``for k in T.serial(n): X[i] += f(k)`` with ``f`` not reading ``X``: returns (store, f)."""
    found = accumulation(s) if trip_count(s) is not None else None
    if found is None:
        return None
    st, f = found
    if s.var in vars_in(st.indices):
        return None
    for e in ir.iter_expr_tree(f):
        if isinstance(e, ir.Load) and (
            e.buffer is st.buffer or (not in_memory(lw, e.buffer) and not _block_level_reg(lw, e.buffer))
        ):
            return None
    return st, f


class _LoopAxis:
    """The loop variable as a new leading lane axis, in front of the current lane space (if any)."""

    def __init__(self, lw: Lowerer, s: ir.For):
        self.lw, self.n = lw, static(s.stop)
        self.saved = lw.scope.snapshot()
        lanes = lw.scope.lanes
        padded = next_pow2(self.n)
        rank = 1 + (lanes.rank if lanes is not None else 0)
        name = lw.assign(s.var.name, P.expand(P.call("tl.arange", 0, padded), 0, rank))
        for var, tile in self.saved.env.items():
            if tile.axes:
                lw.scope.env[var] = Tile(tile.node, tile.dtype, frozenset(a + 1 for a in tile.axes))
        lw.scope.conds = [Tile(c.node, c.dtype, frozenset(a + 1 for a in c.axes)) for c in lw.scope.conds]
        lw.scope.env[s.var] = Tile(P.name(name), INT32, frozenset([0]))
        lw.scope.ranges.set(s.var, 0, self.n - 1)
        owner = lanes.owner if lanes is not None else s
        lw.scope.lanes = LaneSpace(
            [s.var] + (lanes.vars if lanes else []),
            [self.n] + (lanes.extents if lanes else []),
            [padded] + (lanes.padded if lanes else []),
            [name] + (lanes.names if lanes else []),
            owner,
        )

        lw.scope.loop_axes += 1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.lw.scope.restore(self.saved)


def _lower_map_loop(lw: Lowerer, s: ir.For) -> None:
    with _LoopAxis(lw, s):
        lw.lower_stmts(s.body)


def _lower_sum_loop(lw: Lowerer, s: ir.For, store: ir.Store, f) -> None:
    with _LoopAxis(lw, s) as axis:
        term = update_term(lw, store, f)
        node = term.node
        if 0 in term.axes:
            if next_pow2(axis.n) != axis.n:
                valid = P.binop("<", P.name(lw.scope.lanes.names[0]), P.const(axis.n))
                node = P.call("tl.where", valid, node, P.const(0))
            node = P.call("tl.sum", node, axis=0)
        else:
            node = P.binop("*", node, P.const(axis.n))
        total = Tile(node, term.dtype, frozenset(a - 1 for a in term.axes if a != 0))
    acc = ir.Load(store.buffer, store.indices)
    lower_store(
        lw, ir.Store(store.loc, store.buffer, store.indices, ir.BinOp("+", acc, Lowered(total), store.value.dtype))
    )


# the values per thread a loop widened into a tile axis may hold (half of a thread's 255 registers)
_WIDENED_PER_THREAD = 128


def _parallel_sum_loop(lw: Lowerer, s: ir.For):
    """``for k in T.serial(n): for i, j in T.Parallel(a, b): X[i, j] += f(k, i, j)`` with ``f`` not
    reading ``X`` (names bound before the T.Parallel, ``w = W[k]``, may stand in it): returns
    (lets, parallel, store, f).  Only where the widened tile (n x the T.Parallel's lanes) fits in
    registers: it is held there at once."""
    n = trip_count(s)
    if n is None or (lw.scope.lanes is not None and not in_thread_view(lw)) or not s.body:
        return None
    *lets, par = s.body
    if not isinstance(par, ir.Parallel) or not all(isinstance(st, ir.Let) for st in lets):
        return None
    found = accumulation(par)
    if found is None:
        return None
    st, f = found
    bound = {let.var for let in lets}
    if not _block_level_reg(lw, st.buffer) or vars_in(st.indices) & (bound | {s.var}):
        return None
    if bound & (set(lw.scope.env) | _vars_used(lw.following)) or len(bound) != len(lets):
        return None  # a name from outside the loop rebound, or read after it
    if next_pow2(n) * prod(next_pow2(e) for e in par.extents) > _WIDENED_PER_THREAD * max(lw.kernel.threads, 32):
        return None  # the loop's terms at once would not fit in registers: keep the loop
    for e in [x for let in lets for x in ir.iter_expr_tree(let.value)] + list(ir.iter_expr_tree(f)):
        if isinstance(e, ir.Load) and (
            e.buffer is st.buffer or (not in_memory(lw, e.buffer) and not _block_level_reg(lw, e.buffer))
        ):
            return None
    return lets, par, st, f


def _lower_parallel_sum_loop(lw: Lowerer, s: ir.For, lets: list, par: ir.Parallel, store: ir.Store, f) -> None:
    """The loop as the leading axis of one lane space with the T.Parallel's, summed away; then
    the accumulation at the T.Parallel's lanes.  Every iteration's term is evaluated at once (a
    read ``x[i, k * 4 + j]`` becomes a reshape of ``x``, not one select per iteration).  In the
    thread view it acts for the block, as the T.Parallel does."""
    with block_level(lw, "T.Parallel"):
        _sum_over_loop_axis(lw, s, lets, par, store, f)


def _sum_over_loop_axis(lw: Lowerer, s: ir.For, lets: list, par: ir.Parallel, store: ir.Store, f) -> None:
    n = static(s.stop)
    saved = lw.scope.snapshot()
    space = open_lanes(lw, [s.var, *par.vars], [n, *par.extents], par)
    try:
        lw.lower_stmts(lets)
        term = update_term(lw, store, f)
    finally:
        close_lanes(lw, space)
        lw.scope.restore(saved)
    node = term.node
    if not term.axes:  # the same term every iteration
        total = Tile(P.binop("*", node, P.const(n)), term.dtype)
    else:
        if 0 in term.axes and next_pow2(n) != n:
            node = P.call("tl.where", P.binop("<", P.name(space.names[0]), P.const(n)), node, P.const(0))
        if _defer_sum(lw, s, par, store, term, node, space.padded):
            return
        node = P.call("tl.sum", node, axis=0)
        if 0 not in term.axes:
            node = P.binop("*", node, P.const(n))
        total = Tile(node, term.dtype, frozenset(a - 1 for a in term.axes if a != 0))
    acc = ir.Load(store.buffer, store.indices)
    update = ir.Store(store.loc, store.buffer, store.indices, ir.BinOp("+", acc, Lowered(total), store.value.dtype))
    lower_parallel(lw, ir.Parallel(par.loc, par.vars, par.extents, [update]))


def _defer_sum(lw: Lowerer, s: ir.For, par: ir.Parallel, store: ir.Store, term: Tile, node, shape: list) -> bool:
    """TILE2TRITON_DEFER_SUMS (deferred.py): where the enclosing loop only adds into ``store``'s
    accumulator here, the widened terms ``node`` (of the lane space ``shape``: the loop's axis, then
    the T.Parallel's) are added element-wise into a tile of that shape, summed and added into the
    accumulator once after the enclosing loop.  Returns whether it did."""
    acc = store.buffer
    if not (lw.options.defer_sums and 0 in term.axes and deferred.fits(lw, prod(shape))):
        return False
    if not (deferred.reassociable(acc.dtype) and deferred.reassociable(term.dtype) and acc.dtype == term.dtype):
        return False
    if not vars_in(store.indices) <= set(par.vars):
        return False  # the element it adds into changes with the enclosing loop
    loop = deferred.enclosing(lw, s, acc)
    if loop is None:
        return False
    wide = deferred.start(lw, loop, f"{acc.name}_terms", shape, lw.storage_dtype(term.dtype))
    lw.assign_to(wide, P.binop("+", P.name(wide), node))

    def finish() -> None:
        total = Tile(deferred.summed(wide), term.dtype, frozenset(range(len(par.vars))))
        update = ir.Store(store.loc, acc, store.indices, ir.BinOp("+", ir.Load(acc, store.indices), Lowered(total),
                                                                   store.value.dtype))  # fmt: skip
        lower_parallel(lw, ir.Parallel(par.loc, par.vars, par.extents, [update]))

    loop.finishes.append((lw.origin, finish))
    return True


@lowers(ir.While)
def lower_while(lw: Lowerer, s: ir.While) -> None:
    with lw.scoped(inline_only=True):  # the condition is evaluated again before every iteration
        cond = lw.ev(s.cond)
    if not cond.axes or lw.scope.lanes is None:
        body, flags = exits.loop_body(lw, s.body, "loop")
    else:  # a per-thread condition: each lane leaves the loop where its own condition fails
        leave = ir.If(s.loc, ir.UnaryOp("~", s.cond, BOOL), [ir.Break(s.loc)], [])
        body, flags = exits.loop_body(lw, [leave, *s.body], "loop", per_lane=True)
    lw.emit(ast.While(exits.still_running(lw, flags, cond), body, []))


@lowers(ir.Break)
@lowers(ir.Continue)
def lower_break_continue(lw: Lowerer, s: ir.Stmt) -> None:
    exits.lower_exit(lw, s)


def _uniform_branch(lw: Lowerer, s: ir.If) -> bool:
    """``TILE2TRITON_UNIFORM_BRANCHES``: in the thread view, an ``if`` whose condition every thread
    holds alike (its value has no lane axis), outside any loop, around a loop, is a Triton ``if``
    around its statements, not a mask on each of them: the loop (minference's ``if column_count !=
    0:`` column loop) then has no branch in its body, so Triton's pipeliner prefetches its loads, and
    its tile operations need no block-level test of their own.  Inside a loop the masks stay (they
    keep that loop's body straight-line code for the pipeliner), and so they do where the branch
    holds a ``break`` / ``continue`` (their flags follow the masks)."""
    return (
        lw.options.uniform_branches
        and in_thread_view(lw)
        and lw.scope.loop_depth == 0
        and lw.scope.loop_axes == 0
        and any(isinstance(x, (ir.For, ir.While)) for x in ir.walk(s.then_body + s.else_body))
        and not ir.loop_exits(s.then_body)
        and not ir.loop_exits(s.else_body)
        and not _bound_inside_used_outside(lw.kernel, s)
    )


def _bound_inside_used_outside(kernel: ir.Kernel, s: ir.If) -> bool:
    """Does a name bound or a buffer allocated in the branch appear outside it?  (TileLang's scoping
    is Python's: they stay visible after the ``if``; a Triton name bound in one branch is not.)"""
    inside = list(ir.walk(s.then_body + s.else_body))
    names = {x.var for x in inside if isinstance(x, ir.Let)}
    buffers = {x.buffer for x in inside if isinstance(x, ir.Alloc)}
    if not names and not buffers:
        return False
    own = {id(x) for x in inside}
    for x in ir.walk(kernel.body):
        if id(x) in own or x is s:
            continue
        if isinstance(x, ir.Let) and x.var in names:
            return True
        named = set(ir.operand_buffers(x)) | {ld.buffer for ld in ir.loads_in(x)}
        if isinstance(x, ir.Store):
            named.add(x.buffer)
        if buffers & named:  # the statement's own operands (those of statements in it are walked too)
            return True
        if any(isinstance(n, ir.VarRef) and n.var in names for e in ir.stmt_exprs(x) for n in ir.iter_expr_tree(e)):
            return True
    return False


@lowers(ir.If)
def lower_if(lw: Lowerer, s: ir.If) -> None:
    cond = lw.ev(s.cond)
    if is_bool_literal(cond):  # decided by value ranges
        lw.lower_stmts(s.then_body if cond.node.value else s.else_body)
        return
    if (lw.scope.lanes is None or _uniform_branch(lw, s)) and not cond.axes:
        then_body = lw.block(s.then_body)
        else_body = lw.block(s.else_body) if s.else_body else []
        lw.emit(ast.If(cond.node, then_body, else_body))
        return
    # inside a lane space the branch becomes a mask on every write
    node = lw.scalar_mask(cond.node) if not cond.axes else cond.node
    name = lw.assign("cond", node) if not isinstance(node, ast.Name) else node.id
    cond = Tile(P.name(name), BOOL, cond.axes)
    picks_threads = in_thread_view(lw) and thread_range(lw, s.cond)
    if picks_threads:
        lw.scope.range_conds.add(ast.dump(cond.node))
        span = thread_span(lw, s.cond)
        if span is not None:
            lw.scope.thread_spans[ast.dump(cond.node)] = span
    # its comparisons bound the accesses it masks (lower.global_address), unless the branch rebinds a
    # variable they read
    rebound = {x.var for x in ir.walk(s.then_body) if isinstance(x, ir.Let)}
    lw.scope.cond_facts[ast.dump(cond.node)] = [
        c
        for c in conjuncts(s.cond)
        if isinstance(c, ir.Compare)
        and not any(isinstance(v, ir.VarRef) and v.var in rebound for v in ir.iter_expr_tree(c))
    ]
    lw.scope.conds.append(cond)
    try:
        lw.lower_stmts(s.then_body)
    finally:
        lw.scope.conds.pop()
    if s.else_body:
        negated = Tile(ast.UnaryOp(ast.Invert(), P.name(name)), BOOL, cond.axes)
        if picks_threads and isinstance(s.cond, ir.Compare) and s.cond.op != "==":
            lw.scope.range_conds.add(ast.dump(negated.node))
            span = thread_span(lw, s.cond, negated=True)
            if span is not None:
                lw.scope.thread_spans[ast.dump(negated.node)] = span
        lw.scope.conds.append(negated)
        try:
            lw.lower_stmts(s.else_body)
        finally:
            lw.scope.conds.pop()


@lowers(ir.Parallel)
def lower_parallel(lw: Lowerer, s: ir.Parallel) -> None:
    with block_level(lw, "T.Parallel"):
        if lw.scope.lanes is not None:
            raise lw.error("T.Parallel inside another T.Parallel body must be directly nested (one region)")
        space = open_lanes(lw, s.vars, s.extents, s)
        try:
            lw.lower_stmts(s.body)
        finally:
            close_lanes(lw, space)


def open_lanes(lw: Lowerer, vars_, extents, owner, named=True) -> LaneSpace:
    padded = [next_pow2(e) for e in extents]
    names = []
    rank = len(vars_)
    for k, (v, p) in enumerate(zip(vars_, padded)):
        node = P.expand(P.call("tl.arange", 0, p), k, rank)
        n = lw.assign(v.name, node)
        names.append(n)
        lw.scope.env[v] = Tile(P.name(n), INT32, frozenset([k]))
        lw.scope.ranges.set(v, 0, extents[k] - 1)
    space = LaneSpace(list(vars_), list(extents), padded, names, owner)
    lw.scope.lanes = space
    return space


def close_lanes(lw: Lowerer, space: LaneSpace) -> None:
    lw.scope.lanes = None
    for v in space.vars:
        lw.scope.env.pop(v, None)


@lowers(ir.Barrier)
def lower_barrier(lw: Lowerer, s: ir.Barrier) -> None:
    scratch.barrier(lw, s.why)


@lowers(ir.DeviceAssert)
def lower_device_assert(lw: Lowerer, s: ir.DeviceAssert) -> None:
    # Triton checks it when the kernel is compiled in debug mode (TRITON_DEBUG=1); padded lanes
    # and lanes outside an enclosing `if` pass.
    cond = lw.ev(s.cond)
    if isinstance(cond.node, ast.Constant) and cond.node.value is True:
        return  # proven when the kernel was lowered
    active = lw.lane_mask(cond.axes | lw.cond_axes())
    node = cond.node if active is None else P.call("tl.where", active, cond.node, True)
    lw.emit(P.expr_stmt(P.call("tl.device_assert", node, P.const(s.msg))))


@lowers(ir.Print)
def lower_print(lw: Lowerer, s: ir.Print) -> None:
    if s.value is None:
        lw.emit(P.expr_stmt(P.call("tl.device_print", P.const(s.msg or ""))))
        return
    if isinstance(s.value, ir.Buffer):
        rb = lw.reg(s.value)
        value = P.name(rb.name)
    else:
        value = lw.ev(s.value).node
    lw.emit(P.expr_stmt(P.call("tl.device_print", P.const((s.msg or "") + " "), value)))
