"""One lowering rule per TileIR statement (``LOWERINGS``); tile ops reuse the element rules
by lowering as TileLang's own SIMT lowering does: a copy is a T.Parallel over its extents."""

from __future__ import annotations

import ast
from math import prod

from .. import ir
from ..ir import BOOL, FLOAT32, INT32
from ..ir.exprs import const_int, static
from ..language.dtypes import DTYPES
from ..passes.analysis import first_access
from ..passes.split import find_split
from . import exits, scratch
from . import pyast as P
from .descriptors import descriptor_load
from .local_loops import accumulation, in_memory, lower_local_loop, trip_count, unroll_for_locals, vars_in
from .threads import block_level, in_thread_view, thread_range
from .values import LaneSpace, Lowered, Lowerer, RegBuf, Tile, is_bool_literal, is_literal, load_other, next_pow2

LOWERINGS: dict = {}


def lowers(node_type):
    def register(fn):
        LOWERINGS[node_type] = fn
        return fn

    return register


# ------------------------------------------------------------------------------ allocation
@lowers(ir.Alloc)
def lower_alloc(lw: Lowerer, s: ir.Alloc) -> None:
    buf = s.buffer
    if scratch.wanted(lw, buf):
        scratch.alloc(lw, buf)
        return
    local_shape = tuple(next_pow2(d) for d in buf.shape)
    if all(d == 1 for d in buf.shape):
        local_shape = ()
    private = lw.scope.lanes is not None and buf.scope in (ir.LOCAL, ir.VAR) and buf not in lw.uniform_vars
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
    """``T.make_tensor``: the address becomes a typed pointer, used as a parameter's would be."""
    buf = s.buffer
    address = lw.scalar(buf.address, "the address of T.make_tensor")
    node = address.node
    if address.dtype.kind == "ptr":  # a T.ptr parameter: Triton types a Python int by its value
        node = P.to(node, DTYPES["int64"])
    pointer = P.call(P.attr(node, "to"), P.call("tl.pointer_type", P.dtype(buf.dtype)))
    lw.pointers[buf] = lw.assign(buf.name, pointer)


# ------------------------------------------------------------------------------ scalars
@lowers(ir.Let)
def lower_let(lw: Lowerer, s: ir.Let) -> None:
    value = lw.ev(s.value)
    previous = lw.scope.env.get(s.var)
    if previous is not None and isinstance(previous.node, ast.Name):
        target = previous.node.id
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
        bounds = lw.scope.ranges.of(s.value)
        if bounds is not None:
            lw.scope.ranges.set(s.var, *bounds)
        return
    if _is_constant(node):
        node = P.call("tl.full", P.list_([]), node, P.dtype(lw.storage_dtype(s.var.dtype)))
    name = lw.assign(s.var.name, node)
    lw.scope.env[s.var] = Tile(P.name(name), s.var.dtype, value.axes)
    lw.scope.let_depth[s.var] = len(lw.scope.conds)
    bounds = lw.scope.ranges.of(s.value)
    if bounds is not None and lw.let_count.get(s.var, 0) == 1:  # a rebound name's range is unknown
        lw.scope.ranges.set(s.var, *bounds)


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
    leaves = bool(ir.loop_exits(s.body))  # break/continue: the iterations run one after another
    if lw.options.vectorize_loops and not leaves:
        if _is_map_loop(lw, s):
            _lower_map_loop(lw, s)
            return
        accumulation = _sum_loop(lw, s)
        if accumulation is not None:
            _lower_sum_loop(lw, s, *accumulation)
            return
        if lower_local_loop(lw, s, lower_store):  # per-lane local arrays filled or summed by element
            return
    start, stop, step = (lw.scalar(e, "a loop bound") for e in (s.start, s.stop, s.step))
    var_name = lw.names.fresh(s.var.name)
    lw.scope.env[s.var] = Tile(P.name(var_name), INT32)
    lo, hi, st = static(s.start), static(s.stop), static(s.step)
    if lo is not None and hi is not None and st == 1:
        lw.scope.ranges.set(s.var, lo, hi - 1)
    elif lw.scope.ranges.of(s.start) is not None and lw.scope.ranges.of(s.stop) is not None and st == 1:
        lw.scope.ranges.set(s.var, lw.scope.ranges.of(s.start)[0], lw.scope.ranges.of(s.stop)[1] - 1)
    split = find_split(s, lw.scope.ranges, lw.let_count) if lw.scope.lanes is None and not leaves else None
    if split is not None:
        # two loops: the iterations where the conditions hold for every lane, then the rest
        at, known = split
        middle = P.name(lw.assign(f"{var_name}_split", lw.scalar(at, "a loop split").node))
        before = lw.scope.snapshot()
        lw.scope.known_true |= known  # Compare nodes, hashed by identity (the IR's eq=False)
        try:
            _emit_loop(lw, s, var_name, start.node, middle, step.node, lo == 0)
        finally:
            # the second copy of the body starts from the scope before the loop, as the first did
            # (scratch barrier state carries on: the second loop runs after the first)
            lw.scope.restore(before)
        _emit_loop(lw, s, var_name, middle, stop.node, step.node, False)
        return
    _emit_loop(lw, s, var_name, start.node, stop.node, step.node, lo == 0)


def _emit_loop(lw: Lowerer, s: ir.For, var_name: str, start, stop, step, from_zero: bool) -> None:
    st = static(s.step)
    args = [start, stop] if not (from_zero and st == 1) else [stop]
    if st != 1:
        args = [start, stop, step]
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
    elif unrolled:
        iterator = P.call("tl.static_range", *args)
    elif lw.options.max_stages and not lw.options.interpret:  # Triton would pipeline it with its launch default
        iterator = P.call(
            "tl.range", *([P.const(0)] + args if len(args) == 1 else args), num_stages=lw.options.max_stages
        )
    else:
        iterator = P.call("range", *args)
    with lw.scoped(loop_depth=lw.scope.loop_depth + 1):
        body, _ = exits.loop_body(lw, s.body, s.var.name)
    lw.emit(ast.For(P.store_name(var_name), iterator, body, [], lineno=0))


# Sequential loops with no dependence between iterations become one more tile axis instead of a
# loop: a loop that only moves data (a thread-view copy of a row, the loads of a GEMV) is evaluated
# for every iteration at once, and a loop that only adds into one element (a GEMV's
# ``C_reg[0] += ...``) becomes a ``tl.sum`` over that axis (tests/test_loop_vectorize.py).


def _block_level_reg(lw: Lowerer, buf: ir.Buffer) -> bool:
    rb = lw.regs.get(buf)
    return buf.scope != ir.GLOBAL and rb is not None and rb.lanes is None


def _is_map_loop(lw: Lowerer, s: ir.For) -> bool:
    n = trip_count(s)
    if n is None:
        return False
    written, read, lets = set(), set(), set()
    for st in s.body:
        if isinstance(st, ir.Let):
            if st.var in lw.scope.env:
                return False  # rebinding a name from outside the loop carries a value across iterations
            lets.add(st.var)
        elif isinstance(st, ir.Store) and in_memory(lw, st.buffer):
            written.add(st.buffer)
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
        term = lw.ev(f)
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


@lowers(ir.If)
def lower_if(lw: Lowerer, s: ir.If) -> None:
    cond = lw.ev(s.cond)
    if is_bool_literal(cond):  # decided by value ranges
        lw.lower_stmts(s.then_body if cond.node.value else s.else_body)
        return
    if lw.scope.lanes is None and not cond.axes:
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
    lw.scope.conds.append(cond)
    try:
        lw.lower_stmts(s.then_body)
    finally:
        lw.scope.conds.pop()
    if s.else_body:
        negated = Tile(ast.UnaryOp(ast.Invert(), P.name(name)), BOOL, cond.axes)
        if picks_threads and isinstance(s.cond, ir.Compare) and s.cond.op != "==":
            lw.scope.range_conds.add(ast.dump(negated.node))
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


# ------------------------------------------------------------------------------ tile operations
def _scope_rank(buf: ir.Buffer) -> int:
    return {ir.GLOBAL: 0, ir.SHARED: 1, ir.FRAGMENT: 2, ir.LOCAL: 2, ir.VAR: 2}[buf.scope]


def _non_unit(region: ir.Region) -> list[int]:
    return [d for d, e in enumerate(region.extents) if static(e) != 1]


def _element_space(lw: Lowerer, regions: list[ir.Region], base: ir.Region, what: str, kind: str = "lane"):
    """Synthetic T.Parallel variables (``kind`` "loop": loop variables) spanning ``base``'s
    non-unit extents, and each region's element indices in terms of them (unit dims keep their start)."""
    dims = _non_unit(base)
    extents = []
    for d in dims:
        e = static(base.extents[d])
        if e is None:
            raise lw.error(f"{what} needs static tile extents; {base.buffer.name} has a run-time extent")
        extents.append(e)
    vars_ = [ir.Var(f"i{k}", INT32, kind) for k in range(len(dims))]
    indices = []
    for r in regions:
        own = _non_unit(r)
        if len(own) != len(dims):
            raise lw.error(
                f"{what}: the regions of {r.buffer.name} and {base.buffer.name} have different numbers of non-unit "
                f"dimensions ({_fmt(r)} vs {_fmt(base)})"
            )
        idx = list(r.starts)
        for k, d in enumerate(own):
            start = r.starts[d]
            lane = ir.VarRef(vars_[k])
            idx[d] = lane if static(start) == 0 else ir.BinOp("+", start, lane, INT32)
        indices.append(tuple(idx))
    return vars_, extents, indices


def _fmt(r: ir.Region) -> str:
    return "[" + ", ".join(str(static(e)) if static(e) is not None else "?" for e in r.extents) + "]"


def _check_collective(lw: Lowerer, buffers, what: str) -> None:
    if lw.scope.lanes is None:
        return
    for b in buffers:
        rb = lw.regs.get(b)
        if rb is None or rb.lanes is not lw.scope.lanes:
            raise lw.error(
                f"{what} is a collective tile operation and cannot stand inside T.Parallel "
                f"(only buffers allocated inside the same T.Parallel body may be filled there)"
            )


def _elementwise(lw: Lowerer, regions, base, what, body_fn) -> None:
    vars_, extents, indices = _element_space(lw, regions, base, what)
    if not vars_:  # every extent is 1: a single element
        body_fn(indices)
        return
    space = open_lanes(lw, vars_, extents, None)
    try:
        body_fn(indices)
    finally:
        close_lanes(lw, space)


@lowers(ir.Copy)
def lower_copy(lw: Lowerer, s: ir.Copy) -> None:
    if _per_thread_copy(lw, s):
        # TileLang copies to or from a thread's local buffer (or at thread-dependent places) in each
        # thread, as a serial loop over the region: the same loop nest here, in the thread view
        vars_, extents, (src_idx, dst_idx) = _element_space(lw, [s.src, s.dst], _copy_base(s), "T.copy", "loop")
        value = ir.Cast(ir.Load(s.src.buffer, src_idx), s.dst.buffer.dtype)
        loop = [ir.Store(s.loc, s.dst.buffer, dst_idx, value)]
        for var, extent in reversed(list(zip(vars_, extents))):
            loop = [ir.For(s.loc, var, const_int(0), const_int(extent), const_int(1), "serial", loop)]
        rb = lw.regs.get(s.dst.buffer)
        if rb is not None and s.dst.is_whole() and not lw.scope.conds and s.dst.buffer not in lw.scratch.views:
            # T.alloc_local leaves a buffer that is wholly written first undefined (under a per-thread
            # `if` it is defined); the loop below writes it an element at a time from a start value
            lw.assign_to(rb.name, P.call("tl.zeros", P.list_(rb.shape), P.dtype(lw.storage_dtype(rb.buffer.dtype))))
        lw.lower_stmts(loop)
        return
    with block_level(lw, "a tile operation"):
        _lower_copy(lw, s)


def _per_thread_copy(lw: Lowerer, s: ir.Copy) -> bool:
    if not in_thread_view(lw):
        return False
    for region in (s.src, s.dst):
        rb = lw.regs.get(region.buffer)
        if rb is not None and rb.lanes is lw.scope.lanes:  # a thread-private local
            return True
        if any(lw.ev(start).axes for start in region.starts):  # A[tx, ...]: each thread's own piece
            return True
    return False


def _copy_base(s: ir.Copy) -> ir.Region:
    return s.dst if _scope_rank(s.dst.buffer) > _scope_rank(s.src.buffer) else s.src


def _lower_copy(lw: Lowerer, s: ir.Copy) -> None:
    src, dst = s.src, s.dst
    _check_collective(lw, [src.buffer, dst.buffer], "T.copy")
    base = dst if _scope_rank(dst.buffer) > _scope_rank(src.buffer) else src
    box = descriptor_load(lw, src, dst)

    def body(indices):
        src_idx, dst_idx = indices
        value = box if box is not None else lw.ev(ir.Load(src.buffer, src_idx))
        lower_store(lw, ir.Store(s.loc, dst.buffer, dst_idx, ir.Cast(Lowered(value), dst.buffer.dtype)))

    _elementwise(lw, [src, dst], base, "T.copy", body)


@lowers(ir.Fill)
def lower_fill(lw: Lowerer, s: ir.Fill) -> None:
    rb = lw.regs.get(s.dst.buffer)
    if in_thread_view(lw) and (rb is None or rb.lanes is not lw.scope.lanes):
        with block_level(lw, "T.fill of a block-level buffer"):  # not a per-thread local: the whole block
            _lower_fill(lw, s)
        return
    _lower_fill(lw, s)


def _lower_fill(lw: Lowerer, s: ir.Fill) -> None:
    region = s.dst
    buf = region.buffer
    _check_collective(lw, [buf], "T.fill / T.clear")
    value = lw.ev(s.value)
    if buf.scope != ir.GLOBAL and region.is_whole() and not value.axes:
        rb = lw.reg(buf)
        dt = P.dtype(lw.storage_dtype(buf.dtype))
        if isinstance(value.node, ast.Constant) and value.node.value == 0:
            node = P.call("tl.zeros", P.list_(rb.shape), dt) if rb.shape else P.call("tl.full", P.list_([]), 0, dt)
        elif is_literal(value):
            node = P.call("tl.full", P.list_(rb.shape), lw.cast(value, buf.dtype).node, dt)
        else:  # a run-time value (``T.reducer_init(acc, running_max[0])``): tl.full takes constants only
            cast = lw.cast(value, buf.dtype)
            node = lw.broadcast(cast, rb.shape) if rb.shape else cast.node
        if lw.scope.conds:
            node = P.call("tl.where", lw.lane_mask(frozenset()), node, P.name(rb.name))
        lw.assign_to(rb.name, node)
        return

    def body(indices):
        lower_store(lw, ir.Store(s.loc, buf, indices[0], s.value))

    _elementwise(lw, [region], region, "T.fill", body)


def _whole_value(lw: Lowerer, region: ir.Region, what: str) -> tuple[ast.expr, list[int], RegBuf]:
    """A register buffer used whole by a tile op: its tile, with unit dims dropped."""
    buf = region.buffer
    if buf.scope == ir.GLOBAL:
        raise lw.error(f"{what} operands must be shared or fragment buffers, not the global tensor '{buf.name}'")
    if not region.is_whole():
        raise lw.error(f"{what} on a sub-region of '{buf.name}' is not supported yet; use the whole buffer")
    rb = lw.reg(buf)
    if rb.lanes is not None:
        raise lw.error(f"{what} cannot use the per-iteration local '{buf.name}'")
    dims = [d for d in range(buf.ndim) if buf.shape[d] != 1]
    node = P.name(rb.name)
    if rb.shape and len(dims) != buf.ndim:
        node = P.call("tl.reshape", node, P.tuple_([rb.shape[d] for d in dims]))
    return node, dims, rb


@lowers(ir.Gemm)
def lower_gemm(lw: Lowerer, s: ir.Gemm) -> None:
    with block_level(lw, "a tile operation"):
        _lower_gemm(lw, s)


def _lower_gemm(lw: Lowerer, s: ir.Gemm) -> None:
    _check_collective(lw, [s.a.buffer, s.b.buffer, s.c.buffer], "T.gemm")
    a, a_dims, ra = _whole_value(lw, s.a, "T.gemm")
    b, b_dims, rbb = _whole_value(lw, s.b, "T.gemm")
    c_buf = s.c.buffer
    rc = lw.reg(c_buf)
    if len(a_dims) != 2 or len(b_dims) != 2 or len([d for d in c_buf.shape if d != 1]) > 2:
        raise lw.error("T.gemm operands must be 2-D tiles (leading unit dims are allowed)")
    a_shape = [s.a.buffer.shape[d] for d in a_dims]
    b_shape = [s.b.buffer.shape[d] for d in b_dims]
    m, k = a_shape[::-1] if s.trans_a else a_shape
    k2, n = b_shape[::-1] if s.trans_b else b_shape
    c_shape = list(c_buf.shape[-2:])
    if k != k2 or [m, n] != c_shape:
        raise lw.error(
            f"T.gemm shapes do not match: A is {'transposed ' if s.trans_a else ''}{a_shape}, "
            f"B is {'transposed ' if s.trans_b else ''}{b_shape}, C is {list(c_buf.shape)}"
        )
    if s.trans_a:
        a = P.call("tl.trans", a)
    if s.trans_b:
        b = P.call("tl.trans", b)
    kp = next_pow2(k)
    if kp != k:  # padded K lanes hold junk: zero them in both operands
        a = P.call("tl.where", P.binop("<", P.expand(P.call("tl.arange", 0, kp), 1, 2), P.const(k)), a, P.const(0))
        b = P.call("tl.where", P.binop("<", P.expand(P.call("tl.arange", 0, kp), 0, 2), P.const(k)), b, P.const(0))
    a_dt, b_dt = lw.storage_dtype(s.a.buffer.dtype), lw.storage_dtype(s.b.buffer.dtype)
    acc_dt = lw.storage_dtype(c_buf.dtype)
    if a_dt != b_dt:
        common = a_dt if a_dt.bits >= b_dt.bits else b_dt
        a, b = (P.to(a, common) if a_dt != common else a), (P.to(b, common) if b_dt != common else b)
        a_dt = b_dt = common
    acc = P.name(rc.name)
    if len(rc.shape) != 2:
        acc = P.call("tl.reshape", acc, P.tuple_([next_pow2(m), next_pow2(n)]))
    clear = s.clear_accum
    if isinstance(clear, ir.Const):
        acc_in = None if clear.value else acc
    else:
        cond = lw.scalar(clear, "clear_accum")
        acc_in = P.call("tl.where", cond.node, P.const(0), acc)
    small = min(next_pow2(m), next_pow2(n), kp) < 16
    least_k = 32 if max(s.a.buffer.dtype.bits, s.b.buffer.dtype.bits) == 8 else 16
    if not small and kp < least_k:  # tl.dot's K must be >= 32 for 8-bit operands on the GPU
        a, b = _zero_padded_k(a, b, next_pow2(m), next_pow2(n), kp, least_k)
        a, b = lw.named(a, "a_wide_k"), lw.named(b, "b_wide_k")
    if small:  # tl.dot needs every dim >= 16 on the GPU: multiply and reduce instead
        prod = P.binop("*", P.to(P.subscript_none(a, [True, True, False]), acc_dt),
                       P.to(P.subscript_none(b, [False, True, True]), acc_dt))  # fmt: skip
        out = P.call("tl.sum", prod, axis=1)
        result = out if acc_in is None else P.binop("+", acc_in, out)
    else:
        kwargs = {}
        native_acc = acc_dt in (FLOAT32, INT32) or (acc_dt == DTYPES["float16"] and a_dt == acc_dt)
        if (acc_dt == DTYPES["float16"] and a_dt == acc_dt) or acc_dt.is_int:
            kwargs["out_dtype"] = P.dtype(acc_dt)  # Triton wants it spelled out for these accumulators
        if native_acc:
            result = (
                P.call("tl.dot", a, b, acc_in, **kwargs) if acc_in is not None else P.call("tl.dot", a, b, **kwargs)
            )
            if acc_in is None and not kwargs and acc_dt != FLOAT32 and not a_dt.is_int:
                result = P.to(result, acc_dt)
        else:
            product = P.call("tl.dot", a, b)
            result = P.to(product if acc_in is None else P.binop("+", P.to(acc_in, FLOAT32), product), acc_dt)
    if len(rc.shape) != 2:
        result = P.call("tl.reshape", result, P.tuple_(rc.shape))
    lw.assign_to(rc.name, result)


def _zero_padded_k(a: ast.expr, b: ast.expr, mp: int, np_: int, kp: int, least_k: int) -> tuple:
    """``a`` (mp x kp) and ``b`` (kp x np_) with K widened to ``least_k`` by interleaving zeros:
    ``a'[:, 2k] = a[:, k]``, ``b'[2k, :] = b[k, :]`` and zeros at odd K, so the product is exact."""
    while kp < least_k:
        a = P.call("tl.reshape", P.call("tl.join", a, P.call("tl.zeros_like", a)), P.tuple_([mp, 2 * kp]))
        joined = P.call("tl.join", b, P.call("tl.zeros_like", b))
        b = P.call("tl.reshape", P.call("tl.permute", joined, P.tuple_([0, 2, 1])), P.tuple_([2 * kp, np_]))
        kp *= 2
    return a, b


_IDENTITY = {"sum": 0, "abssum": 0, "max": float("-inf"), "absmax": 0, "min": float("inf")}
_COMBINE = {"sum": "+", "abssum": "+", "max": "tl.maximum", "absmax": "tl.maximum", "min": "tl.minimum"}
_REDUCER = {"sum": "tl.sum", "abssum": "tl.sum", "max": "tl.max", "absmax": "tl.max", "min": "tl.min"}


@lowers(ir.Reduce)
def lower_reduce(lw: Lowerer, s: ir.Reduce) -> None:
    with block_level(lw, "a tile operation"):
        _lower_reduce(lw, s)


def _lower_reduce(lw: Lowerer, s: ir.Reduce) -> None:
    _check_collective(lw, [s.src.buffer, s.dst.buffer], f"T.reduce_{s.kind}")
    if s.kind not in _REDUCER:
        raise lw.error(f"T.reduce with reduce_type={s.kind!r} is not supported yet")
    src_buf, dst_buf = s.src.buffer, s.dst.buffer
    if not s.src.is_whole():
        raise lw.error("T.reduce_* on a sub-region is not supported yet; reduce the whole buffer")
    rs, rd = lw.reg(src_buf), lw.reg(dst_buf)
    x = P.name(rs.name)
    rank = len(rs.shape)
    dim = s.dim
    if s.kind.startswith("abs"):
        x = P.call("tl.abs", x)
    nan_helper = None
    if s.nan_propagate and s.kind in ("max", "absmax", "min") and src_buf.dtype.is_float:
        nan_helper = "_min_nan_combine" if s.kind == "min" else "_max_nan_combine"
        lw.helpers.add(nan_helper)

    def combine(old, new):
        if nan_helper is not None:
            return P.call(nan_helper, old, new)
        op = _COMBINE[s.kind]
        return P.binop("+", old, new) if op == "+" else P.call(op, old, new)

    def reduce_along(value, axis, **keep):
        if nan_helper is not None:
            return P.call("tl.reduce", value, axis, P.name(nan_helper), **keep)
        return P.call(_REDUCER[s.kind], value, axis=axis, **keep)

    if rank == 0:  # a one-element source: reducing it is the element itself
        r = x
        if not s.clear:
            r = combine(P.name(rd.name), r)
        lw.assign_to(
            rd.name,
            lw.broadcast(lw.cast(Tile(r, src_buf.dtype), dst_buf.dtype), rd.shape)
            if rd.shape
            else lw.cast(Tile(r, src_buf.dtype), dst_buf.dtype).node,
        )
        return
    extent = src_buf.shape[dim]
    if rank and rs.shape[dim] != extent:
        identity = _IDENTITY[s.kind]
        if not src_buf.dtype.is_float and identity in (float("inf"), float("-inf")):
            identity = -(2 ** (src_buf.dtype.bits - 1)) if identity < 0 else 2 ** (src_buf.dtype.bits - 1) - 1
        valid = P.binop("<", P.expand(P.call("tl.arange", 0, rs.shape[dim]), dim, rank), P.const(extent))
        x = P.call("tl.where", valid, x, P.const(identity))
    expected = tuple(d for i, d in enumerate(rs.shape) if i != dim)
    keep = False
    if tuple(rd.shape) == expected or (not rd.shape and len(expected) == 0):
        pass
    elif tuple(rd.shape) == tuple(1 if i == dim else d for i, d in enumerate(rs.shape)):
        keep = True
    elif not rd.shape and all(d == 1 for d in expected):
        pass
    else:
        raise lw.error(
            f"T.reduce_{s.kind}: output '{dst_buf.name}' has shape {list(dst_buf.shape)}, expected "
            f"{[d for i, d in enumerate(src_buf.shape) if i != dim]} (or with 1 at dim {dim})"
        )
    r = reduce_along(x, dim, keep_dims=True) if keep else reduce_along(x, dim)
    if not rd.shape and expected:
        r = reduce_along(r, 0) if len(expected) == 1 else P.call("tl.reshape", r, P.tuple_([]))
    if not s.clear:
        r = combine(P.name(rd.name), r)
    lw.assign_to(rd.name, lw.cast(Tile(r, src_buf.dtype), dst_buf.dtype).node)


@lowers(ir.Scan)
def lower_cumsum(lw: Lowerer, s: ir.Scan) -> None:
    with block_level(lw, "a tile operation"):
        _lower_cumsum(lw, s)


def _lower_cumsum(lw: Lowerer, s: ir.Scan) -> None:
    _check_collective(lw, [s.src.buffer, s.dst.buffer], "T.cumsum")
    x, dims, rs = _whole_value(lw, s.src, "T.cumsum")
    rd = lw.reg(s.dst.buffer)
    if s.dim not in dims:  # a scan along a unit dim leaves the values as they are
        r = x
    else:
        axis, rank = dims.index(s.dim), len(dims)  # unit dims were dropped from the tile
        extent = s.src.buffer.shape[s.dim]
        if rs.shape[s.dim] != extent:  # padded lanes must not leak into a reverse scan
            valid = P.binop("<", P.expand(P.call("tl.arange", 0, rs.shape[s.dim]), axis, rank), P.const(extent))
            identity = float("-inf") if s.op == "max" and s.src.buffer.dtype.is_float else 0
            x = P.call("tl.where", valid, x, P.const(identity))
        if s.op == "max":
            lw.helpers.add("_max_combine")
            r = P.call("tl.associative_scan", x, axis, P.name("_max_combine"), reverse=s.reverse)
        elif s.reverse:
            r = P.call("tl.cumsum", x, axis=axis, reverse=True)
        else:
            r = P.call("tl.cumsum", x, axis=axis)
    if rd.shape and len(dims) != s.dst.buffer.ndim:
        r = P.call("tl.reshape", r, P.tuple_(list(rd.shape)))
    lw.assign_to(rd.name, lw.cast(Tile(r, s.src.buffer.dtype), s.dst.buffer.dtype).node)


@lowers(ir.Atomic)
def lower_atomic(lw: Lowerer, s: ir.Atomic) -> None:
    fn = "tl.atomic_" + s.kind

    def element(dst_buf, dst_idx, value: Tile | None):
        if _shared_scatter_reduce(lw, s, dst_buf, dst_idx, value):  # a register-resident shared buffer
            return
        if dst_buf.scope == ir.SHARED:  # shared memory atomics: on the buffer's global scratch
            dst_buf = scratch.atomic_target(lw, dst_buf)
        elif dst_buf.scope != ir.GLOBAL:
            raise lw.error("atomics target global tensors")
        idx = [lw.ev(i) for i in dst_idx]
        # every iteration (thread) performs its own atomic, also where the address is the same
        # for all of them (``T.atomic_add(count[0], 1)``, the other threads of a 2-D block)
        every = frozenset(range(lw.scope.lanes.rank)) if lw.scope.lanes is not None else frozenset()
        offs, mask, axes = lw.global_address(dst_buf, idx, list(dst_idx), every)
        if every - frozenset().union(*(t.axes for t in idx)):
            spread = [lw.scope.lanes.padded[k] if k in axes else 1 for k in range(lw.scope.lanes.rank)]
            offs = P.binop("+", offs, P.call("tl.zeros", P.list_(spread), P.dtype(INT32)))
        ptr = lw.named_offsets(dst_buf, offs)
        if value is None:  # T.atomic_load: a load that no cache can answer
            kwargs = {"mask": mask, "other": load_other(dst_buf.dtype)} if mask is not None else {}
            call = P.call("tl.load", ptr, volatile=True, **kwargs)
        else:
            value = lw.cast(value, dst_buf.dtype)
            kwargs = {"mask": mask} if mask is not None else {}
            node = value.node
            bits = _XCHG_BITS.get(dst_buf.dtype.name) if s.kind == "xchg" else None
            if bits is not None:  # exchange the float's bits (the interpreter exchanges integers only)
                ptr = P.call(P.attr(ptr, "to"), P.call("tl.pointer_type", P.dtype(DTYPES[bits])))
                node = P.call(P.attr(node, "to"), P.dtype(DTYPES[bits]), bitcast=True)
            call = P.call(fn, ptr, node, **kwargs)
            if _needs_cas(lw, s.kind, dst_buf.dtype):
                call = _atomic_rmw_16bit(lw, s.kind, dst_buf, ptr, value, mask, axes)
            if bits is not None and s.result is not None:
                call = P.call(P.attr(call, "to"), P.dtype(dst_buf.dtype), bitcast=True)
        if s.result is None:
            lw.emit(P.expr_stmt(call))
            return
        lw.scope.env[s.result] = Tile(P.name(lw.assign(s.result.name, call)), dst_buf.dtype, axes)

    if (
        isinstance(s.dst, ir.Load)
        and s.dst.buffer.scope in (ir.FRAGMENT, ir.LOCAL)
        and s.dst.buffer not in lw.scratch.views
    ):
        if s.result is not None:
            raise lw.error("the previous value of an atomic on a register buffer is not supported")
        _register_reduction(lw, s)
        return
    if isinstance(s.dst, ir.Load):
        element(s.dst.buffer, s.dst.indices, lw.ev(s.value) if s.value is not None else None)
        return

    if (
        isinstance(s.dst, ir.Load)
        and s.dst.buffer.scope in (ir.FRAGMENT, ir.LOCAL)
        and s.dst.buffer not in lw.scratch.views
    ):
        _register_reduction(lw, s)
        return
    if isinstance(s.dst, ir.Load):
        element(s.dst.buffer, s.dst.indices, lw.ev(s.value))
        return
    regions = [s.dst] + ([s.value] if isinstance(s.value, ir.Region) else [])
    base = regions[-1] if len(regions) == 2 and _scope_rank(regions[1].buffer) > 0 else s.dst

    def body(indices):
        value = lw.ev(ir.Load(s.value.buffer, indices[1])) if isinstance(s.value, ir.Region) else lw.ev(s.value)
        element(s.dst.buffer, indices[0], value)

    _elementwise(lw, regions, base, f"T.atomic_{s.kind}", body)


_XCHG_BITS = {"float16": "int16", "float32": "int32", "float64": "int64"}


def _needs_cas(lw: Lowerer, kind: str, dt) -> bool:
    """Triton's atomic max/min take no 16-bit floats, nor does the interpreter's atomic add bf16."""
    if not (dt.is_float and dt.bits == 16):
        return False
    return kind in ("max", "min") or (kind == "add" and dt.name == "bfloat16" and lw.options.interpret)


def _atomic_rmw_16bit(lw: Lowerer, kind: str, dst_buf, ptr, value: Tile, mask, axes) -> ast.expr:
    """A 16-bit float atomic as the compare-and-swap loop ``_atomic_rmw_16bit``.  Its loop test
    reduces over the lanes: a scalar address is handled as a 1-element tile."""
    lw.helpers.add("_atomic_rmw_16bit")
    round_bf16 = lw.options.interpret and dst_buf.dtype.name == "bfloat16"
    if round_bf16:
        lw.helpers.add("_round_to_bf16")
    node = value.node
    if is_literal(value):
        node = P.call("tl.full", P.list_([]), node, P.dtype(FLOAT32))
    scalar = not axes and lw.scope.lanes is None
    if scalar:
        ptr = P.binop("+", ptr, P.call("tl.zeros", P.list_([P.const(1)]), P.dtype(INT32)))
        node = P.binop("+", node, P.call("tl.zeros", P.list_([P.const(1)]), P.dtype(FLOAT32)))
    base = P.name(lw.pointer(dst_buf))
    active = mask if mask is not None else P.const(True)
    call = P.call("_atomic_rmw_16bit", ptr, node, active, base, P.const(kind), P.const(round_bf16))
    return P.call("tl.reshape", call, P.tuple_([])) if scalar else call


_ATOMIC_REDUCER = {"add": "tl.sum", "max": "tl.max", "min": "tl.min", "and": "_and_combine", "or": "_or_combine",
                   "xor": "_xor_combine"}  # fmt: skip
_BITWISE = {"and": ("&", -1), "or": ("|", 0), "xor": ("^", 0)}  # operator, identity


def _atomic_reduce(lw: Lowerer, kind: str, node: ast.expr, axis: int, keep_dims: bool = False) -> ast.expr:
    """``node`` reduced along ``axis`` with the combine of ``T.atomic_<kind>``."""
    extra = {"keep_dims": True} if keep_dims else {}
    if kind in _BITWISE:
        lw.helpers.add(_ATOMIC_REDUCER[kind])
        return P.call("tl.reduce", node, axis, P.name(_ATOMIC_REDUCER[kind]), **extra)
    return P.call(_ATOMIC_REDUCER[kind], node, axis=axis, **extra)


def _register_reduction(lw: Lowerer, s: ir.Atomic) -> None:
    """An atomic update of a register tile (a reducer's ``acc[i] += v`` in ``T.Parallel(M, N)``):
    every active iteration contributes once, so the contributions are reduced over the lanes the
    index does not depend on, then combined with the element once."""
    if s.kind not in _ATOMIC_REDUCER:
        raise lw.error(f"T.atomic_{s.kind} on a register buffer is not supported")
    dst = s.dst
    value = lw.cast(lw.ev(s.value), dst.buffer.dtype)
    lanes = lw.scope.lanes
    extra = set()
    if lanes is not None:
        index_axes = frozenset().union(*(lw.ev(i).axes for i in dst.indices))
        extra = set(range(lanes.rank)) - index_axes
    if extra:
        active = lw.lane_mask(frozenset(range(lanes.rank)))
        everywhere = frozenset(range(lanes.rank))
        node = value.node if value.axes == everywhere else lw.broadcast(value, lanes.padded)
        if active is not None:
            identity = _reduce_identity({"add": "sum"}.get(s.kind, s.kind), dst.buffer.dtype)
            node = P.call("tl.where", lw.full_rank_mask(active), node, P.const(identity))
        for k in sorted(extra, reverse=True):
            node = _atomic_reduce(lw, s.kind, node, k, keep_dims=True)
        if not everywhere - extra:  # every axis reduced: a scalar, as a tile with no axes is
            node = P.call("tl.reshape", node, P.tuple_([]))
        value = Tile(node, value.dtype, everywhere - extra)
    old = ir.Load(dst.buffer, dst.indices)
    if s.kind in _BITWISE:
        combined = ir.BinOp(_BITWISE[s.kind][0], old, Lowered(value), dst.buffer.dtype)
    elif s.kind == "add":
        combined = ir.BinOp("+", old, Lowered(value), dst.buffer.dtype)
    else:
        combined = ir.Call(s.kind, (old, Lowered(value)), dst.buffer.dtype)
    # inactive lanes contributed the identity
    with lw.scoped(conds=[] if extra else lw.scope.conds):
        lower_store(lw, ir.Store(s.loc, dst.buffer, dst.indices, combined))


def _shared_scatter_reduce(lw: Lowerer, s: ir.Atomic, buf: ir.Buffer, indices, value: Tile | None) -> bool:
    """An atomic on a register-resident shared buffer, as the block-level scatter-reduce it means
    (shared memory is private to the block): the active lanes' values are reduced per buffer
    position and combined with the buffer once.  False where it does not apply (the buffer is in
    scratch, the previous value is asked for, an exchange or load), and the global atomics on the
    buffer's scratch copy do it."""
    if buf.scope != ir.SHARED or buf in lw.scratch.views or s.result is not None or value is None:
        return False
    if s.kind not in _ATOMIC_REDUCER or buf.dtype == BOOL:
        return False
    with scratch.register_path(lw, buf):  # what the register path refuses moves the buffer to scratch
        rb = lw.reg(buf)
        if not rb.shape or lw.scope.lanes is None or lw.classify(rb, indices) is not None:
            # every buffer dim indexed by a lane variable or a fixed position: reduce over the
            # other lane axes, then one read-combine-write (the writers of a position agree)
            _register_reduction(lw, ir.Atomic(s.loc, s.kind, ir.Load(buf, tuple(indices)), Lowered(value)))
        else:
            _one_hot_scatter_reduce(lw, s.kind, rb, indices, value)
    return True


def _one_hot_scatter_reduce(lw: Lowerer, kind: str, rb: RegBuf, indices, value: Tile) -> None:
    """``S[idx[tx]] += v`` with lane-dependent positions that may collide (a histogram): every lane's
    value on a one-hot row of the flattened buffer, reduced over the lanes: O(lanes x buffer size)."""
    lanes = lw.scope.lanes
    size = prod(rb.shape)
    scratch.check_one_hot(lw, rb, size)
    dtype = rb.buffer.dtype
    everywhere = frozenset(range(lanes.rank))
    value = lw.cast(value, dtype)
    node = value.node if value.axes == everywhere else lw.broadcast(value, lanes.padded)
    lin = lw.flat_index(rb, indices)
    positions = P.subscript_none(P.call("tl.arange", 0, size), [False] * lanes.rank + [True])
    hit = P.binop("==", positions, P.subscript_none(lin.node, [True] * lanes.rank + [False]))
    active = lw.lane_mask(everywhere)  # padded lanes and lanes under a false condition add nothing
    if active is not None:
        hit = P.binop("&", hit, P.subscript_none(lw.full_rank_mask(active), [True] * lanes.rank + [False]))
    hit = P.name(lw.assign(f"{rb.name}_hit", hit))
    identity = _reduce_identity({"add": "sum"}.get(kind, kind), dtype)
    rows = prod(lanes.padded)
    spread = P.call("tl.where", hit, P.subscript_none(node, [True] * lanes.rank + [False]), P.const(identity))
    spread = P.call("tl.reshape", spread, P.tuple_([rows, size]))
    contribution = P.name(lw.assign(f"{rb.name}_update", _atomic_reduce(lw, kind, spread, 0)))
    storage = P.name(rb.name)
    flat = P.call("tl.reshape", storage, P.tuple_([size])) if len(rb.shape) > 1 else storage
    if kind == "add":
        new = P.binop("+", flat, contribution)
    elif kind in _BITWISE:
        new = P.binop(_BITWISE[kind][0], flat, contribution)
    else:  # positions no lane hit keep their value (also a NaN, which max/min with the identity would drop)
        touched = P.call("tl.max", P.call("tl.reshape", P.to(hit, INT32), P.tuple_([rows, size])), axis=0)
        combined = P.call("tl.maximum" if kind == "max" else "tl.minimum", flat, contribution)
        new = P.call("tl.where", P.binop(">", touched, P.const(0)), combined, flat)
    if lw.storage_dtype(dtype).bits < 32:  # Triton sums small integers as int32
        new = P.to(new, lw.storage_dtype(dtype))
    lw.assign_to(rb.name, P.call("tl.reshape", new, P.tuple_(rb.shape)) if len(rb.shape) > 1 else new)


_ALLREDUCE = {"sum": "tl.sum", "max": "tl.max", "min": "tl.min", "prod": "_mul_combine", "and": "_and_combine",
              "or": "_or_combine", "xor": "_xor_combine"}  # fmt: skip


def _reduce_identity(op: str, dtype):
    if op in _BITWISE:
        return _BITWISE[op][1]
    if op == "prod":
        return 1
    identity = _IDENTITY[op]
    if not dtype.is_float and identity in (float("inf"), float("-inf")):
        bits = dtype.bits - 1
        identity = -(2**bits) if identity < 0 else 2**bits - 1
    return identity


@lowers(ir.ThreadAllReduce)
def lower_thread_allreduce(lw: Lowerer, s: ir.ThreadAllReduce) -> None:
    """The value of every thread, reduced along the lane axes of the named thread variables (the
    padded lanes contribute the identity), kept as a size-1 axis so every thread reads its group's
    result."""
    if not in_thread_view(lw):
        raise lw.error("T.tvm_thread_allreduce needs a thread-view kernel (T.get_thread_binding), outside T.Parallel")
    lanes = lw.scope.lanes
    axes = set()
    for t in s.threads:
        node = lw.ev(t).node
        if not isinstance(node, ast.Name) or node.id not in lanes.names:
            raise lw.error("T.tvm_thread_allreduce reduces over thread indices (T.get_thread_binding(d))")
        axes.add(lanes.names.index(node.id))
    dtype = s.dst.buffer.dtype
    value = lw.cast(lw.ev(s.value), dtype)
    everywhere = frozenset(range(lanes.rank))
    node = value.node if value.axes == everywhere else lw.broadcast(value, lanes.padded)
    with lw.scoped(conds=[]):  # every thread takes part, whatever branch it is in
        padding = lw.lane_mask(frozenset(axes))
    if padding is not None:
        node = P.call("tl.where", lw.full_rank_mask(padding), node, P.const(_reduce_identity(s.op, dtype)))
    for k in sorted(axes, reverse=True):
        if s.op in ("sum", "max", "min"):
            node = P.call(_ALLREDUCE[s.op], node, axis=k, keep_dims=True)
        else:
            lw.helpers.add(_ALLREDUCE[s.op])
            node = P.call("tl.reduce", node, k, P.name(_ALLREDUCE[s.op]), keep_dims=True)
    total = Tile(node, dtype, everywhere - axes)
    lower_store(lw, ir.Store(s.loc, s.dst.buffer, s.dst.indices, Lowered(total)))


@lowers(ir.Barrier)
def lower_barrier(lw: Lowerer, s: ir.Barrier) -> None:
    scratch.barrier(lw)


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
