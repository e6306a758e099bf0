"""Heaviest blocks first (``TILE2TRITON_HEAVY_FIRST``): the grid axis whose block index lengthens the
kernel's loops is walked last-index-first and slowest, so the longest blocks start first.

The GPU hands out blocks in launch order (x fastest) as SMs free up.  In causal attention the block
at query tile ``bx`` walks ``bx + 1`` key tiles, and ``bx`` is the grid's x: every head's longest
block comes at the end of its run of x, so in launch order long and short blocks are mixed
throughout and the grid ends on a tail of long ones.  Started all together at the head of the
launch (longest-processing-time-first list scheduling, what FlashAttention-3's scheduler does for
causal masks), they leave the short blocks to fill in behind.  A model of that scheduling
(each block's time its key tiles plus a constant, 132 SMs; ``BENCHMARKS.md``, session 50) puts
the gain at 1.26-1.55x for the causal forwards of the variant sets, 0-6% for reversing x alone.
What the model leaves out is L2: in launch order the blocks running together share one head's keys and
values, walked slowest over the whole grid they belong to all heads, which is free while all heads' keys
and values fit in L2 and costs DRAM traffic past it: timed on an H100 (session 52), the whole grid walked
this way lost past about three waves.  So the heads are walked in runs of about two waves of blocks
(``run_width``), one run after another, each heaviest first: fastest or within 1% of the best run size
at every shape timed.
Blocks of a TileLang kernel have no defined order, so any bijection of the grid is allowed;
kernels whose blocks could wait on one another (a ``while`` loop, an atomic read back, a grid
barrier) or that pick their own order (``T.use_swizzle``) are left alone.

Snake order (``TILE2TRITON_SNAKE_ORDER``), for a grid that starts whole: more blocks than SMs, no
more than the SMs hold (``LoweringOptions.blocks_per_sm``, the launch's estimated occupancy).  The
GPU hands those blocks out round-robin: launch slots ``j``, ``j + SMs``, ... run on one SM
(recorded on an H100 with ``%smid``, session 59).  Heaviest first, an SM then gets the heaviest
block of each round: the causal attention backward (256 blocks, two an SM on 132 SMs, block ``by``
walking ``16 - by`` query tiles) put two 16-tile blocks on each of four SMs while the average SM
had 8.2 tiles.  With every other round of slots walked back, each SM gets a heavy and a light block:
that kernel 39.99 -> 33.35 us (TileLang 31.66; ``benchmarks/hand_variants/bwd_pairing_probe.py``).
This order takes an axis that shortens the loops too (the backward's: walked from its first
index), where heaviest first alone changes nothing for a grid that starts whole.  Where blocks
start as others finish (a grid past what the SMs hold) the next block should be the heaviest left,
so past that point nothing is walked back.

The trend of a loop's trip count in a block index is read from the loop's bounds through the
kernel's single-assignment lets: +1 where it can only grow with the index (and does depend on
it), -1 where it can only shrink, 0 where it does not depend on it, None where neither is known.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass

from .. import ir
from ..ir.exprs import static
from . import pyast as P
from .values import Lowerer


@dataclass(frozen=True)
class BlockOrder:
    """How ``block_ids`` walks the grid: ``axis`` slowest, from its last index (``last_first``: it
    lengthens the loops) or its first (it shortens them); ``snake_sms``: the SMs whose rounds of
    launch slots are walked back every other round (0: none)."""

    axis: int
    last_first: bool = True
    snake_sms: int = 0


def heavy_axis(kernel: ir.Kernel, lets: dict, sms: int = 0) -> int | None:
    """The one grid axis whose index lengthens the kernel's top-level loops of tile work and
    shortens none (while the other axes' indices lengthen none), or None; ``lets``: the kernel's
    single-assignment lets (``KernelLowerer.once_lets``).  None too for a grid known to start whole,
    a block an SM, on ``sms`` SMs: every block starts at once in any order."""
    order = grid_order(kernel, lets, sms, snake=False)
    return None if order is None else order.axis


def grid_order(
    kernel: ir.Kernel, lets: dict, sms: int = 0, blocks_per_sm: int = 0, snake: bool = True
) -> BlockOrder | None:
    """The ``BlockOrder`` of the kernel's grid, or None for launch order: ``heavy_axis``'s axis walked
    heaviest first, and where the grid starts whole on ``sms`` SMs holding ``blocks_per_sm`` blocks
    each (``snake``), every other round of slots walked back; a grid that starts whole and has one
    axis that shortens the loops (none lengthening) walks that axis from its first index, snaked."""
    if kernel.swizzle or not _independent_blocks(kernel.body):
        return None
    blocks = _static_blocks(kernel)
    if sms and blocks is not None and blocks <= sms:
        return None
    starts_whole = snake and sms and blocks is not None and blocks <= sms * blocks_per_sm
    snake_sms = sms if starts_whole else 0
    lengthening = _axes_by_trend(kernel, lets, 1)
    if len(lengthening) == 1:
        return BlockOrder(lengthening[0], True, snake_sms)
    if not starts_whole or lengthening:
        return None
    shortening = _axes_by_trend(kernel, lets, -1)
    return BlockOrder(shortening[0], False, snake_sms) if len(shortening) == 1 else None


def _static_blocks(kernel: ir.Kernel) -> int | None:
    extents = [static(g) for g in kernel.grid]
    return math.prod(extents) if all(isinstance(e, int) for e in extents) else None


def _axes_by_trend(kernel: ir.Kernel, lets: dict, direction: int) -> list[int]:
    """The grid axes (of more than one block) whose index moves the top-level loops' trip counts in
    ``direction`` (+1 lengthens, -1 shortens) for one loop at least and the other way for none."""
    loops = list(_top_level_loops(kernel.body))
    found = []
    for axis, var in enumerate(kernel.block_vars):
        trends = [_combine(_trend(loop.stop, var, lets), _negate(_trend(loop.start, var, lets))) for loop in loops]
        if direction in trends and all(t in (0, direction) for t in trends) and static(kernel.grid[axis]) != 1:
            found.append(axis)
    return found


def let_bindings(kernel: ir.Kernel) -> tuple[dict, dict]:
    """The kernel's lets bound once (var -> value: what ``heavy_axis`` reads loop bounds through) and
    how many times each let is bound (the lowering's ``once_lets`` and ``let_count``)."""
    values, counts = {}, {}
    for s in ir.walk(kernel.body):
        if isinstance(s, ir.Let):
            values[s.var], counts[s.var] = s.value, counts.get(s.var, 0) + 1
    return {var: value for var, value in values.items() if counts[var] == 1}, counts


def block_ids(lw: Lowerer, kernel: ir.Kernel, order: BlockOrder) -> dict:
    """Each axis's block index (an expression) for a launch whose order walks ``order.axis`` slowest
    and from its last index down (from its first up where not ``last_first``), the other axes in
    their order under it: a bijection of the grid.  With ``options.heavy_first_group`` N (None:
    ``run_width``'s), the same within each run of N indices of the other axes (the last run may be
    shorter), the runs one after another; 0: the whole grid one run.  With ``order.snake_sms``, the
    launch slots of every odd round of that many are taken in reverse first (``_snake``)."""
    axis = order.axis
    extents = []
    for g, var in zip(kernel.grid, kernel.block_vars):
        value = static(g)
        # an extent known only at launch is named once: the index arithmetic below uses it several times
        extents.append(value if isinstance(value, int) else P.name(lw.assign(f"{var.name}_blocks", lw.ev(g).node)))
    pids = [P.call("tl.program_id", a) for a in range(len(extents))]
    if len(extents) == 1:
        step = pids[0]
        if order.snake_sms:
            step = P.name(lw.assign("launch_idx", _snake(lw, step, order.snake_sms, extents[0])))
        return {0: _sub(_sub(extents[0], 1), step) if order.last_first else step}
    linear = pids[0]  # the program's place in launch order
    stride = 1
    for a in range(1, len(extents)):
        stride = _mul(stride, extents[a - 1])
        linear = P.binop("+", linear, P.binop("*", pids[a], _expr(stride)))
    if order.snake_sms:
        linear = _snake(lw, linear, order.snake_sms, math.prod(extents))
    linear = P.name(lw.assign("launch_idx", linear))
    others = [a for a in range(len(extents)) if a != axis]
    inner = 1  # the blocks of one index of ``axis``
    for a in others:
        inner = _mul(inner, extents[a])
    run = lw.options.heavy_first_group
    if run is None:
        run = run_width(lw, extents[axis], inner, lw.options.sms)
    whole_grid = isinstance(run, int) and (run == 0 or (isinstance(inner, int) and run >= inner))
    if not whole_grid:
        # the other axes in runs of ``run`` indices, one after another, each walked heaviest first:
        # the blocks running together then share the keys and values of a few heads, not of all
        per_run = _mul(run, extents[axis])
        first = P.binop("*", P.binop("//", linear, _expr(per_run)), _expr(run))
        first = P.name(lw.assign("run_first", first))
        width = P.name(lw.assign("this_run", P.call("tl.minimum", _expr(run), _sub(inner, first))))
        within_run = P.name(lw.assign("in_run", P.binop("%", linear, _expr(per_run))))
        step = P.binop("//", within_run, width)
        rest = P.binop("+", first, P.binop("%", within_run, width))
    else:
        step = P.binop("//", linear, _expr(inner))
        rest = P.binop("%", linear, _expr(inner))
    ids = {axis: _sub(_sub(extents[axis], 1), step) if order.last_first else step}
    if len(others) == 1:
        ids[others[0]] = rest
    else:
        rest = P.name(lw.assign("within", rest))
        ids[others[0]] = P.binop("%", rest, _expr(extents[others[0]]))
        ids[others[1]] = P.binop("//", rest, _expr(extents[others[0]]))
    return ids


def _snake(lw: Lowerer, slot: ast.expr, sms: int, blocks: int) -> ast.expr:
    """The launch slot's place in the walk: slot ``j`` of round ``r`` (``sms`` slots a round, the last
    round the ``blocks`` left) as is in even rounds, from the round's end in odd ones, so the SM that
    runs slots ``j``, ``j + sms``, ... gets the heaviest block of one round and a light one of the next."""
    slot = P.name(lw.assign("launch_slot", slot))
    if blocks <= 2 * sms:  # two rounds: the second walked back from the grid's end
        back = P.binop("-", P.const(blocks + sms - 1), slot)
        return P.call("tl.where", P.binop("<", slot, P.const(sms)), slot, back)
    round_ = P.name(lw.assign("launch_round", P.binop("//", slot, P.const(sms))))
    first = P.binop("*", round_, P.const(sms))
    size = P.call("tl.minimum", P.const(sms), P.binop("-", P.const(blocks), first))
    back = P.binop("-", P.binop("+", P.binop("*", P.const(2), first), _sub(size, 1)), slot)
    return P.call("tl.where", P.binop("==", P.binop("%", round_, P.const(2)), P.const(1)), back, slot)


WAVES_PER_RUN = 2


def run_width(lw: Lowerer, heavy_extent, others, sms: int):
    """The blocks of the other axes (heads) in one run of ``block_ids``' order: as many as fill about
    ``WAVES_PER_RUN`` waves of ``sms`` SMs with all their heavy-axis blocks (at least one), then
    evened out: as many runs as that width needs, each the heads over that many runs rounded up (11
    heads at 5: runs of 5, 5, 1 become 4, 4, 3; 9 heads at 4: 3, 3, 3).  0 (the whole grid one run) where
    the SMs are unknown (the interpreter).  An int where the extents are known when compiling, else an
    expression.

    Timed on causal attention forwards (H100, BENCHMARKS.md sessions 52 and 53): one run over the whole
    grid wins up to about three waves and loses past them (the blocks running together belong to all
    the heads, their keys and values past L2); runs of about two waves were 1.00-1.31x of launch order
    from 64 to 8192 blocks, slower at none."""
    if not sms:
        return 0
    slots = WAVES_PER_RUN * sms
    if isinstance(heavy_extent, int) and isinstance(others, int):
        width = max(1, slots // heavy_extent)
        runs = -(-others // width)
        return -(-others // runs)
    fill = P.call("tl.maximum", P.const(1), P.binop("//", P.const(slots), _expr(heavy_extent)))
    runs = P.name(lw.assign("runs", _cdiv(others, P.name(lw.assign("wave_width", fill)))))
    return P.name(lw.assign("run_width", _cdiv(others, runs)))


def _cdiv(a, b) -> ast.expr:
    return P.call("tl.cdiv", _expr(a), _expr(b))


def _expr(v) -> ast.expr:
    return P.const(v) if isinstance(v, int) else v


def _mul(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if a == 1:
        return b
    if b == 1:
        return a
    return P.binop("*", _expr(a), _expr(b))


def _sub(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a - b
    return P.binop("-", _expr(a), _expr(b))


def _independent_blocks(body: list) -> bool:
    """No statement through which one block could wait for another."""
    for s in ir.walk(body):
        if isinstance(s, (ir.While, ir.GridBarrier)):
            return False
        if isinstance(s, ir.Atomic) and (s.result is not None or s.kind == "load"):
            return False
    return True


TILE_WORK = (ir.Gemm, ir.Copy, ir.GuardedCopy, ir.Parallel, ir.Reduce, ir.Scan, ir.Atomic)


def _top_level_loops(body: list):
    """The sequential loops not inside another loop (through ``if`` branches) that do tile work: a
    loop of scalars (a prefix sum of a few sizes) costs too little for the order to matter."""
    for s in body:
        if isinstance(s, ir.For):
            if s.kind in ("serial", "pipelined") and static(s.step) == 1 and _does_tile_work(s.body):
                yield s
        elif isinstance(s, ir.If):
            yield from _top_level_loops(s.then_body)
            yield from _top_level_loops(s.else_body)


def _does_tile_work(body: list) -> bool:
    return any(isinstance(s, TILE_WORK) for s in ir.walk(body))


def _negate(t: int | None) -> int | None:
    return None if t is None else -t


def _combine(a: int | None, b: int | None) -> int | None:
    if a is None or b is None:
        return None
    if a == 0 or a == b:
        return b
    return a if b == 0 else None


def _trend(e: ir.Expr, var: ir.Var, lets: dict, depth: int = 0) -> int | None:
    if depth > 64:
        return None
    if isinstance(e, ir.Const):
        return 0
    if isinstance(e, ir.VarRef):
        if e.var is var:
            return 1
        if e.var in lets:
            return _trend(lets[e.var], var, lets, depth + 1)
        return 0 if e.var.kind in ("block", "size", "param") else None
    if isinstance(e, ir.Cast):
        return _trend(e.value, var, lets, depth + 1)
    if isinstance(e, ir.Load):  # a value read at indices that do not depend on the block is the same for all
        return 0 if all(_trend(i, var, lets, depth + 1) == 0 for i in e.indices) else None
    if isinstance(e, ir.Call) and e.fn in ("min", "max"):
        out = 0
        for arg in e.args:
            out = _combine(out, _trend(arg, var, lets, depth + 1))
        return out
    if isinstance(e, ir.BinOp):
        lhs, rhs = _trend(e.lhs, var, lets, depth + 1), _trend(e.rhs, var, lets, depth + 1)
        if e.op == "+":
            return _combine(lhs, rhs)
        if e.op == "-":
            return _combine(lhs, _negate(rhs))
        if e.op in ("*", "//"):
            if lhs == 0 and rhs == 0:
                return 0
            sign = _sign(e.rhs)
            if e.op == "*" and sign is None:  # a constant factor on the left
                lhs, sign = rhs, _sign(e.lhs)
            if sign is None or lhs is None:
                return None
            return lhs * sign if e.op == "*" or sign > 0 else None
    return 0 if _constant_in(e, var, lets, depth) else None


def _sign(e: ir.Expr) -> int | None:
    value = static(e)
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    return (value > 0) - (value < 0)


def _constant_in(e: ir.Expr, var: ir.Var, lets: dict, depth: int) -> bool:
    """Whether an expression of another form does not depend on ``var`` at all."""
    children = [getattr(e, name) for name in ("lhs", "rhs", "operand", "value") if hasattr(e, name)]
    children += [a for a in getattr(e, "args", ()) if isinstance(a, ir.Expr)]
    for name in ("cond", "true_value", "false_value"):
        if isinstance(getattr(e, name, None), ir.Expr):
            children.append(getattr(e, name))
    if not children:
        return False
    return all(isinstance(c, ir.Expr) and _trend(c, var, lets, depth + 1) == 0 for c in children)
