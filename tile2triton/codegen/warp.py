"""Warp-level collectives in the thread view (``ir.WarpOp``): ``T.warp_reduce_*``, the votes
(``T.any_sync``, ``T.ballot_sync``, ``T.syncthreads_count`` ...), the shuffles and the matches.

In the thread view the block's threads are the lanes of one Triton tile (``threads.py``).  A warp
is a run of 32 consecutive threads in TileLang's linear order (``tx + ty * X + tz * X * Y``), so a
warp collective is a block-level tile operation: the thread lanes, put in linear order, are viewed
as ``(threads / 32, 32)`` (warp, lane), reduced or gathered along the lane axis, and broadcast back.
Loops evaluated as leading lane axes (``rules._LoopAxis``) stay a leading batch axis.

Which threads take part: the block's threads (not the padding of a thread count that is not a
power of two), under the active ``if`` conditions (a thread outside the branch does not execute the
call, as an exited thread does not), and in the call's lane ``mask``.  A shuffle that reads a lane
that does not take part reads whatever that lane holds (CUDA leaves the value undefined).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from .. import ir
from ..ir import BOOL, INT32
from ..language.dtypes import DTYPES
from . import pyast as P
from .threads import in_thread_view
from .values import Lowerer, Tile, literal_value, next_pow2, prod

INT64 = DTYPES["int64"]

# op -> rule(lowering context, op) -> the result in linear order; one rule per primitive
WARP_LOWERINGS: dict[str, Callable] = {}


def warp_rule(*ops: str):
    def register(fn):
        for op in ops:
            WARP_LOWERINGS[op] = fn
        return fn

    return register


@dataclass
class _Linear:
    """The thread lanes in linear order: tiles of shape ``prefix + [size]``."""

    lw: Lowerer
    e: ir.WarpOp
    lead: int  # leading lane axes (loops evaluated as lane axes) in front of the thread axes
    extents: list  # thread dims, x first
    padded: list  # their padded sizes, x first
    count: int  # threads in the block
    size: int  # lanes of the linear view
    direct: bool  # flattening the thread axes gives the linear order (no gather needed)
    group: int  # threads per group (a warp, or the whole block)

    @property
    def prefix(self) -> list:
        return [prod(self.lw.scope.lanes.padded[: self.lead])] if self.lead else []

    @property
    def shape(self) -> list:
        return self.prefix + [self.size]

    @property
    def axis(self) -> int:
        """The linear axis of a ``shape`` tile."""
        return len(self.prefix)

    def name(self, hint: str, node: ast.expr) -> ast.expr:
        if self.lw.scope.inline_only:
            return node
        return P.name(self.lw.assign(hint, node))

    def ids(self) -> ast.expr:
        """The linear thread index of each lane of the linear view."""
        return P.expand(P.call("tl.arange", 0, self.size), self.axis, self.axis + 1)

    def lane(self) -> ast.expr:
        """The lane of each thread in its group."""
        ids = self.ids()
        return ids if self.group >= self.size else P.binop("%", ids, P.const(self.group))

    # ------------------------------------------------------------------ lane layout <-> linear order
    def linear(self, t: Tile, hint: str) -> ast.expr:
        """``t``, a value of every thread, as a ``shape`` tile in linear thread order."""
        lanes = self.lw.scope.lanes
        full = t.node if t.axes == frozenset(range(lanes.rank)) else self.lw.broadcast(t, lanes.padded)
        flat_shape = self.prefix + [prod(self.padded)]
        flat = full if list(lanes.padded) == flat_shape else P.call("tl.reshape", full, P.tuple_(flat_shape))
        if self.direct:
            return flat if isinstance(flat, ast.Name) else self.name(hint, flat)
        # the lane holding linear thread i (i past the last thread: the last thread)
        i = P.call("tl.minimum", self.ids(), P.const(self.count - 1))
        position, stride, below = None, 1, 1
        for extent, padded in zip(self.extents, self.padded):
            coord = i if below == 1 else P.binop("//", i, P.const(below))
            coord = P.binop("%", coord, P.const(extent)) if below * extent < self.count else coord
            term = coord if stride == 1 else P.binop("*", coord, P.const(stride))
            position = term if position is None else P.binop("+", position, term)
            stride, below = stride * padded, below * extent
        position = self.lw.named(position, "lane_of_thread")
        index = P.call("tl.broadcast_to", position, P.tuple_(self.shape)) if self.prefix else position
        return self.name(hint, P.call("tl.gather", flat, index, self.axis))

    def lanes_of(self, node: ast.expr) -> ast.expr:
        """A ``shape`` tile in linear order back in the thread view's lane layout."""
        lanes = self.lw.scope.lanes
        if not self.direct:
            flat_size = prod(self.padded)
            f = P.expand(P.call("tl.arange", 0, flat_size), self.axis, self.axis + 1)
            index, stride, below = None, 1, 1
            for extent, padded in zip(self.extents, self.padded):
                coord = f if below == 1 else P.binop("//", f, P.const(below))
                coord = P.binop("%", coord, P.const(padded)) if below * padded < flat_size else coord
                term = coord if stride == 1 else P.binop("*", coord, P.const(stride))
                index = term if index is None else P.binop("+", index, term)
                stride, below = stride * extent, below * padded
            index = P.call("tl.minimum", index, P.const(self.size - 1))  # padding lanes: any thread
            index = self.lw.named(index, "thread_of_lane")
            if self.prefix:
                index = P.call("tl.broadcast_to", index, P.tuple_(self.prefix + [flat_size]))
            node = P.call("tl.gather", node, index, self.axis)
            if list(lanes.padded) == self.prefix + [flat_size]:
                return node
        elif list(lanes.padded) == self.shape:
            return node
        return P.call("tl.reshape", node, P.tuple_(lanes.padded))

    # ------------------------------------------------------------------ groups
    def grouped(self, node: ast.expr) -> ast.expr:
        """``(..., groups, group)``: one row per warp (or one row, the block)."""
        g = min(self.group, self.size)
        return P.call("tl.reshape", node, P.tuple_(self.prefix + [self.size // g, g]))

    def per_thread(self, node: ast.expr) -> ast.expr:
        """A ``(..., groups, 1)`` result of each group, for every thread of the group."""
        g = min(self.group, self.size)
        spread = P.call("tl.broadcast_to", node, P.tuple_(self.prefix + [self.size // g, g]))
        return P.call("tl.reshape", spread, P.tuple_(self.shape))

    def reduce(self, node: ast.expr, op: str) -> ast.expr:
        """``op`` over each group, kept as a size-1 axis."""
        axis = self.axis + 1
        if op in ("sum", "max", "min"):
            return P.call("tl." + op, self.grouped(node), axis=axis, keep_dims=True)
        helper = {"bitand": "_and_combine", "bitor": "_or_combine"}[op]
        self.lw.helpers.add(helper)
        return P.call("tl.reduce", self.grouped(node), axis, P.name(helper), keep_dims=True)

    def taking_part(self) -> ast.expr | None:
        """Which threads take part (linear order): the block's threads, under the active
        conditions, in the lane mask; None when all do."""
        lw, lanes = self.lw, self.lw.scope.lanes
        parts = []
        everywhere = frozenset(range(lanes.rank))
        active = lw.lane_mask(everywhere)
        if active is not None:
            padded = {k for k in everywhere if lanes.padded[k] != lanes.extents[k]}
            parts.append(self.linear(Tile(active, BOOL, frozenset(padded) | lw.cond_axes()), "active"))
        if not self.direct and self.count < self.size:  # (direct: the padding lanes are past the last thread)
            parts.append(P.binop("<", self.ids(), P.const(self.count)))
        elif active is None and self.count < self.size:
            parts.append(P.binop("<", self.ids(), P.const(self.count)))
        if self.e.mask is not None:
            mask = lw.ev(self.e.mask)
            bits = mask.node if not mask.axes else self.linear(mask, "lane_mask")
            parts.append(P.binop("!=", P.binop("&", P.binop(">>", bits, self.lane()), P.const(1)), P.const(0)))
        both = P.and_all(parts)
        return both if both is None or isinstance(both, ast.Name) else self.name("taking_part", both)

    def value(self, k: int, hint: str) -> ast.expr:
        """Operand ``k`` of every thread, in linear order."""
        return self.linear(self.lw.ev(self.e.args[k]), hint)


def lower_warp_op(lw: Lowerer, e: ir.WarpOp) -> Tile:
    what = _NAMES.get(e.op, e.op)
    if not in_thread_view(lw):
        raise lw.error(
            f"T.{what} is a warp-level primitive: use it in a thread-view kernel (tx = T.get_thread_binding()), "
            "not inside T.Parallel"
        )
    lanes, kernel = lw.scope.lanes, lw.kernel
    extents = [int(x) for x in kernel.thread_extents[: len(kernel.thread_vars)]]
    k = len(extents)
    padded = list(reversed(lanes.padded[lanes.rank - k :]))
    # flattening the padded (tz, ty, tx) lanes keeps TileLang's linear order when no dim inside
    # another non-trivial one is padded
    direct = all(padded[d] == extents[d] or prod(extents[d + 1 :]) == 1 for d in range(k))
    count = prod(extents)
    size = prod(padded) if direct else next_pow2(count)
    ctx = _Linear(lw, e, lanes.rank - k, extents, padded, count, size, direct, e.group or size)
    result = WARP_LOWERINGS[e.op](ctx)
    return Tile(ctx.lanes_of(result), e.dtype, frozenset(range(lanes.rank)))


_NAMES = {"sum": "warp_reduce_sum", "max": "warp_reduce_max", "min": "warp_reduce_min",
          "bitand": "warp_reduce_bitand", "bitor": "warp_reduce_bitor", "any": "any_sync", "all": "all_sync",
          "ballot": "ballot_sync", "count": "syncthreads_count", "match_any": "match_any_sync",
          "match_all": "match_all_sync"}  # fmt: skip


def _identity(op: str, dtype):
    """The value a thread that does not take part contributes."""
    if op in ("sum", "bitor"):
        return P.const(0)
    if op == "bitand":
        return P.const(2**dtype.bits - 1 if dtype.kind == "uint" else -1)
    if dtype.is_float:
        return P.const(float("-inf") if op == "max" else float("inf"))
    if dtype.kind == "uint":
        return P.const(0 if op == "max" else 2**dtype.bits - 1)
    low = 2 ** (dtype.bits - 1)
    # -2**63 written as -(2**63 - 1) - 1: the literal 2**63 alone does not fit int64
    return P.binop("-", P.const(-(low - 1)), P.const(1)) if op == "max" else P.const(low - 1)


@warp_rule("sum", "max", "min", "bitand", "bitor")
def lower_warp_reduce(ctx: _Linear) -> ast.expr:
    """``T.warp_reduce_*``: the op over the warp's values, in every thread of the warp."""
    lw, e = ctx.lw, ctx.e
    storage = lw.storage_dtype(e.dtype)
    value = ctx.linear(lw.cast(lw.ev(e.args[0]), e.dtype), "warp_values")
    taking_part = ctx.taking_part()
    if taking_part is not None:
        value = P.call("tl.where", taking_part, value, _identity(e.op, storage))
    total = ctx.reduce(value, e.op)
    if storage.bits < 32:  # Triton's reductions widen 8- and 16-bit values
        total = P.to(total, storage)
    total = ctx.name(f"warp_{e.op}", total)
    return ctx.per_thread(total)


def _flags(ctx: _Linear) -> ast.expr:
    """The predicate of every thread as 0/1 (int32), 0 where the thread does not take part."""
    lw = ctx.lw
    pred = lw.ev(ctx.e.args[0])
    if not pred.axes:  # the same in every thread: no gather
        pred = Tile(lw.broadcast(pred, lw.scope.lanes.padded), pred.dtype, frozenset(range(lw.scope.lanes.rank)))
    node = ctx.linear(pred, "predicate")
    cond = P.binop("!=", node, P.const(0))
    taking_part = ctx.taking_part()
    if taking_part is not None:
        cond = P.binop("&", cond, taking_part)
    return ctx.name("votes", P.call("tl.where", cond, P.const(1), P.const(0)))


@warp_rule("any", "all", "count")
def lower_vote(ctx: _Linear) -> ast.expr:
    """``T.any_sync`` / ``T.all_sync`` (a warp), ``T.syncthreads_or/and/count`` (the block): 1 or 0,
    or the count.  A thread that does not take part neither passes nor fails ``all``."""
    votes = _flags(ctx)
    if ctx.e.op == "all":
        taking_part = ctx.taking_part()
        if taking_part is not None:  # only the threads taking part must pass
            votes = P.binop("|", votes, P.call("tl.where", taking_part, P.const(0), P.const(1)))
        result = ctx.reduce(votes, "min")
    else:
        result = ctx.reduce(votes, "max" if ctx.e.op == "any" else "sum")
    return ctx.per_thread(ctx.name(f"warp_{ctx.e.op}", result))


@warp_rule("ballot")
def lower_ballot(ctx: _Linear) -> ast.expr:
    """``T.ballot_sync`` / ``T.ballot`` / ``T.activemask``: bit N set when lane N's predicate holds
    (uint64; a CUDA warp fills the low 32 bits)."""
    votes = _flags(ctx)
    bits = P.binop("<<", P.to(votes, INT64), P.to(ctx.lane(), INT64))
    total = ctx.name("ballot", P.to(ctx.reduce(bits, "sum"), DTYPES["uint64"]))
    return ctx.per_thread(total)


def _low_bits(b: ast.expr, mask: int) -> ast.expr:
    """``b & mask`` (folded for a literal)."""
    value = literal_value(b)
    return P.const(value & mask) if isinstance(value, int) else P.binop("&", b, P.const(mask))


_SHUFFLE_SOURCE = {
    # op -> the source lane, from the lane, operand b and the segment's lane mask seg = width - 1
    "shfl_sync": lambda lane, b, seg: P.binop(
        "+", P.binop("-", lane, P.binop("&", lane, P.const(seg))), _low_bits(b, seg)
    ),  # fmt: skip
    "shfl_up": lambda lane, b, seg: P.binop("-", lane, _low_bits(b, 31)),
    "shfl_down": lambda lane, b, seg: P.binop("+", lane, _low_bits(b, 31)),
    "shfl_xor": lambda lane, b, seg: P.binop("^", lane, _low_bits(b, 31)),
}


@warp_rule("shfl_sync", "shfl_xor", "shfl_down", "shfl_up")
def lower_shuffle(ctx: _Linear) -> ast.expr:
    """``__shfl*_sync`` as PTX ``shfl.sync`` defines it: the warp is cut in segments of ``width``
    lanes; ``shfl_sync`` reads lane ``src % width`` of the thread's segment, ``shfl_up/down`` lane
    ``lane -/+ delta`` and ``shfl_xor`` lane ``lane ^ delta``; a source before the segment's start
    (up) or past its end (down, xor) reads the thread's own value."""
    lw, e = ctx.lw, ctx.e
    values = ctx.value(0, "shuffled")
    operand = lw.ev(e.args[1])
    b = operand.node if not operand.axes else ctx.linear(operand, "source_lane")
    seg = e.args[2].value - 1
    ids = ctx.ids()
    lane = P.binop("%", ids, P.const(32)) if ctx.size > 32 else ids
    lane = ctx.name("lane", lane)
    source = _SHUFFLE_SOURCE[e.op](lane, b, seg)
    if e.op == "shfl_up":
        start = P.binop("-", lane, P.binop("&", lane, P.const(seg)))
        source = P.call("tl.where", P.binop(">=", source, start), source, lane)
    elif e.op in ("shfl_down", "shfl_xor"):
        end = P.binop("|", lane, P.const(seg))
        source = P.call("tl.where", P.binop("<=", source, end), source, lane)
    if ctx.size > 32 and ctx.size % 32 == 0 and ctx.group == 32:
        # a gather along a warp's own 32 lanes, (..., warps, 32): Triton lowers it to one shfl.sync,
        # where a gather along all the block's lanes goes through shared memory and a barrier
        rows = P.tuple_(ctx.prefix + [ctx.size // 32, 32])
        index = ctx.name("source", P.call("tl.reshape", P.call("tl.broadcast_to", source, P.tuple_(ctx.shape)), rows))
        gathered = P.call("tl.gather", P.call("tl.reshape", values, rows), index, ctx.axis + 1)
        return P.call("tl.reshape", gathered, P.tuple_(ctx.shape))
    # the source thread's lane in the linear view (a lane past the block's threads reads the last)
    index = P.call("tl.minimum", P.binop("+", P.binop("-", ids, lane), source), P.const(ctx.size - 1))
    if ctx.prefix:
        index = P.call("tl.broadcast_to", index, P.tuple_(ctx.shape))
    index = ctx.name("source", index)
    return P.call("tl.gather", values, index, ctx.axis)


def _comparable(ctx: _Linear, k: int) -> ast.expr:
    """Operand ``k`` as integers whose equality is bit equality (floats bitcast)."""
    lw = ctx.lw
    value = lw.ev(ctx.e.args[k])
    if value.dtype.is_float:
        bits = DTYPES[{16: "int16", 32: "int32", 64: "int64"}[value.dtype.bits]]
        node = P.call(P.attr(P.to(value.node, lw.storage_dtype(value.dtype)), "to"), P.dtype(bits), bitcast=True)
        value = Tile(node if value.axes else value.node, bits if value.axes else value.dtype, value.axes)
    elif value.dtype == BOOL:
        value = lw.cast(value, INT32)
    if not value.axes:
        value = Tile(lw.broadcast(value, lw.scope.lanes.padded), value.dtype, frozenset(range(lw.scope.lanes.rank)))
    return ctx.linear(value, "matched")


@warp_rule("match_any")
def lower_match_any(ctx: _Linear) -> ast.expr:
    """``T.match_any_sync``: per thread, the uint32 mask of the lanes of its warp (taking part)
    holding the same value."""
    values = ctx.grouped(_comparable(ctx, 0))
    axis = ctx.axis + 1
    g = min(ctx.group, ctx.size)
    same = P.binop("==", P.call("tl.expand_dims", values, axis + 1), P.call("tl.expand_dims", values, axis))
    taking_part = ctx.taking_part()
    if taking_part is not None:
        same = P.binop("&", same, P.call("tl.expand_dims", ctx.grouped(taking_part), axis))
    bit = P.binop("<<", P.const(1), P.to(P.call("tl.arange", 0, g), INT64))
    bits = P.call("tl.where", same, bit, P.const(0))
    peers = ctx.name("peers", P.call("tl.sum", bits, axis=axis + 1))
    return P.to(P.call("tl.reshape", peers, P.tuple_(ctx.shape)), DTYPES["uint32"])


@warp_rule("match_all")
def lower_match_all(ctx: _Linear) -> ast.expr:
    """``T.match_all_sync``: ``mask`` where every lane of the warp taking part holds the same value,
    else 0 (uint32)."""
    lw = ctx.lw
    values = _comparable(ctx, 0)
    dtype = lw.ev(ctx.e.args[0]).dtype
    if dtype.is_float or dtype == BOOL:
        dtype = DTYPES[{16: "int16", 32: "int32", 64: "int64"}.get(dtype.bits, "int32")]
    taking_part = ctx.taking_part()
    high, low = values, values
    if taking_part is not None:
        high = P.call("tl.where", taking_part, values, _identity("max", dtype))
        low = P.call("tl.where", taking_part, values, _identity("min", dtype))
    same = P.binop("==", ctx.reduce(high, "max"), ctx.reduce(low, "min"))
    same = ctx.per_thread(ctx.name("all_same", same))
    mask = lw.ev(ctx.e.args[1])
    mask_node = mask.node if not mask.axes else ctx.linear(mask, "lane_mask")
    return P.to(P.call("tl.where", same, mask_node, P.const(0)), DTYPES["uint32"])
