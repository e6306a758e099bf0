"""Lowering rule of atomics (``ir.Atomic``): global ``tl.atomic_*`` with the compare-and-swap loop
for 16-bit floats Triton lacks, reductions over lanes before one atomic, and shared-memory
atomics as block-level scatter-reduces.
"""

from __future__ import annotations

import ast
import dataclasses
from math import prod

from .. import ir
from ..ir import BOOL, FLOAT32, INT32
from ..language.dtypes import DTYPES
from . import deferred, on_chip, scratch, warp_atomics
from . import pyast as P
from .local_loops import vars_in
from .reductions import _BITWISE, _reduce_identity
from .rules import lower_parallel, lower_store
from .rules_base import lowers
from .tile_ops import _elementwise, _scope_rank
from .values import Lowered, Lowerer, RegBuf, Tile, is_literal, load_other


@lowers(ir.Atomic)
def lower_atomic(lw: Lowerer, s: ir.Atomic) -> None:
    fn = "tl.atomic_" + s.kind

    def element(dst_buf, dst_idx, value: Tile | None):
        if _shared_scatter_reduce(lw, s, dst_buf, dst_idx, value):  # a register-resident shared buffer
            return
        order = {}
        if dst_buf.scope == ir.SHARED:  # shared memory atomics: on the buffer's global scratch
            dst_buf = scratch.atomic_target(lw, dst_buf, s)
            order = scratch.atomic_order(lw, s)
            if (
                _histogram_add(lw, s, dst_buf, dst_idx, value, order)
                or _claimed_add(lw, s, dst_buf, dst_idx, value, order)
                or warp_atomics.aggregated_add(lw, s, dst_buf, dst_idx, value, order)
            ):
                return
        elif dst_buf.scope != ir.GLOBAL:
            raise lw.error("atomics target global tensors")
        else:
            order = _sem(s)
        idx = [lw.ev(i) for i in dst_idx]
        # every iteration (thread) performs its own atomic, also where the address is the same
        # for all of them (``T.atomic_add(count[0], 1)``, the other threads of a 2-D block)
        every = frozenset(range(lw.scope.lanes.rank)) if lw.scope.lanes is not None else frozenset()
        offs, mask, axes = lw.global_address(dst_buf, idx, list(dst_idx), every)
        if every - frozenset().union(*(t.axes for t in idx)):
            spread = [lw.scope.lanes.padded[k] if k in axes else 1 for k in range(lw.scope.lanes.rank)]
            offs = P.binop("+", offs, P.call("tl.zeros", P.list_(spread), P.dtype(INT32)))
        if dst_buf in lw.scratch.addresses:  # a shared buffer in the on-chip scratch area
            call = on_chip.atomic(
                lw, s, dst_buf, offs, mask, lw.cast(value, dst_buf.dtype) if value is not None else None
            )
            if s.result is None:
                lw.emit(P.expr_stmt(call))
            else:
                lw.scope.env[s.result] = Tile(P.name(lw.assign(s.result.name, call)), dst_buf.dtype, axes)
            return
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
            call = P.call(fn, ptr, node, **kwargs, **order)
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

    regions = [s.dst] + ([s.value] if isinstance(s.value, ir.Region) else [])
    base = regions[-1] if len(regions) == 2 and _scope_rank(regions[1].buffer) > 0 else s.dst

    on_registers = s.dst.buffer.scope in (ir.FRAGMENT, ir.LOCAL) and s.dst.buffer not in lw.scratch.views

    def body(indices):
        value = lw.ev(ir.Load(s.value.buffer, indices[1])) if isinstance(s.value, ir.Region) else lw.ev(s.value)
        if on_registers and s.result is None:  # a register tile's elements: each updated once, no atomics
            one = dataclasses.replace(s, dst=ir.Load(s.dst.buffer, tuple(indices[0])), value=Lowered(value))
            _register_reduction(lw, one)
            return
        element(s.dst.buffer, indices[0], value)

    _elementwise(lw, regions, base, f"T.atomic_{s.kind}", body)


def _histogram_add(lw: Lowerer, s: ir.Atomic, view: ir.Buffer, indices, value: Tile | None, order: dict) -> bool:
    """``T.atomic_add(S[bin], v)`` on a shared buffer in scratch, at lane-dependent positions, with
    an integer ``v`` the same for every lane (a histogram): ``tl.histogram`` of the lanes' positions
    counts them in the block, then one atomic per position hit adds ``count * v``.  One atomic per
    lane would serialise on the few positions most lanes hit (global atomics, not shared ones).
    False where it does not apply; a buffer of many more positions than lanes keeps the per-lane
    atomics (the histogram's tile would cost more than the lanes).  Off by default
    (``TILE2TRITON_SCRATCH_HISTOGRAM``): Triton's histogram costs each lane bins / 32 popcounts of
    log2(bins) ballots per call, and topk_selector measured slower with it (c7bdb4a)."""
    lanes = lw.scope.lanes
    if not lw.options.scratch_histogram:
        return False
    if s.kind != "add" or s.result is not None or value is None or lanes is None or value.axes:
        return False
    if view.dtype.kind not in ("int", "uint") or view.dtype.bits > 32 or value.dtype.kind not in ("int", "uint"):
        return False
    idx = [lw.ev(i) for i in indices]
    axes = frozenset().union(*(t.axes for t in idx))
    size, n_lanes = prod(view.shape), prod(lanes.padded)
    bins = 1 << max(size - 1, 1).bit_length()
    if not axes or bins > 4 * n_lanes:
        return False
    lin, inside = None, None
    for t, n, stride in zip(idx, view.shape, view.strides):
        term = t.node if stride == 1 else P.binop("*", t.node, P.const(stride))
        lin = term if lin is None else P.binop("+", lin, term)
        ok = P.binop("&", P.binop(">=", t.node, P.const(0)), P.binop("<", t.node, P.const(n)))
        inside = ok if inside is None else P.binop("&", inside, ok)
    everywhere = frozenset(range(lanes.rank))
    active = lw.lane_mask(everywhere)  # padded lanes and lanes under a false `if`
    inside_axes = axes
    if active is not None:
        inside = P.binop("&", inside, lw.full_rank_mask(active))
        inside_axes = axes | lw.cond_axes()

    def flat(node, dtype, node_axes):  # the lanes as one axis, as tl.histogram takes them
        if node_axes != everywhere:
            node = lw.broadcast(Tile(node, dtype, node_axes), lanes.padded)
        return node if lanes.rank == 1 else P.call("tl.reshape", node, P.tuple_([n_lanes]))

    valid = P.name(lw.assign(f"{view.name}_valid", flat(inside, BOOL, inside_axes)))
    if any(t.dtype != INT32 for t in idx):  # tl.histogram takes int32 positions
        lin = P.to(lin, INT32)
    position = P.call("tl.where", valid, flat(lin, INT32, axes), P.const(0))
    counts = P.name(lw.assign(f"{view.name}_counts", P.call("tl.histogram", position, bins, mask=valid)))
    added = lw.cast(value, view.dtype)
    amount = counts if is_literal(added) and added.node.value == 1 else P.binop("*", counts, added.node)
    ptr = P.binop("+", P.name(lw.pointers[view]), P.call("tl.arange", 0, bins))
    if lw.storage_dtype(view.dtype) != INT32:
        amount = P.to(amount, lw.storage_dtype(view.dtype))
    lw.emit(P.expr_stmt(P.call("tl.atomic_add", ptr, amount, mask=P.binop("!=", counts, P.const(0)), **order)))
    return True


def _claimed_add(lw: Lowerer, s: ir.Atomic, view: ir.Buffer, indices, value: Tile | None, order: dict) -> bool:
    """``pos = T.atomic_add(S[k], v, return_prev=True)`` on a shared buffer in scratch, ``k`` and an
    integer ``v`` the same for every lane (a counter handing out slots): one atomic adds ``v`` times
    the active lanes, and each lane's previous value is that atomic's plus ``v`` times the active
    lanes before it (an exclusive cumsum), one order the lanes' own atomics could have taken.
    False where it does not apply."""
    lanes = lw.scope.lanes
    if not lw.options.scratch_block_claims:
        return False
    if s.kind != "add" or s.result is None or value is None or lanes is None or value.axes:
        return False
    if view.dtype.kind not in ("int", "uint") or value.dtype.kind not in ("int", "uint"):
        return False
    idx = [lw.ev(i) for i in indices]
    if any(t.axes for t in idx):
        return False
    everywhere = frozenset(range(lanes.rank))
    n_lanes = prod(lanes.padded)
    active = lw.lane_mask(everywhere)
    ones = lw.broadcast(Tile(P.const(1), INT32), lanes.padded)
    if active is not None:
        ones = P.call("tl.where", lw.full_rank_mask(active), ones, P.const(0))
    if lanes.rank > 1:
        ones = P.call("tl.reshape", ones, P.tuple_([n_lanes]))
    ones = P.name(lw.assign(f"{view.name}_claims", ones))
    count = P.name(lw.assign(f"{view.name}_claimed", P.call("tl.sum", ones, axis=0)))
    added = lw.cast(value, view.dtype)
    with lw.scoped(conds=[]):  # one atomic for the block: the lanes' conditions are in the count
        offs, mask, _ = lw.global_address(view, idx, list(indices), frozenset())
        ptr = lw.named_offsets(view, offs)
    storage = lw.storage_dtype(view.dtype)
    step = count if storage == INT32 else P.to(count, storage)
    if not (is_literal(added) and added.node.value == 1):
        step = P.binop("*", step, added.node)
    wanted = P.binop(">", count, P.const(0))
    first = P.call("tl.atomic_add", ptr, step, mask=wanted if mask is None else P.binop("&", mask, wanted), **order)
    first = P.name(lw.assign(f"{view.name}_first", first))
    before = P.binop("-", P.call("tl.cumsum", ones, axis=0), ones)  # the active lanes ahead of each
    if lanes.rank > 1:
        before = P.call("tl.reshape", before, P.tuple_(list(lanes.padded)))
    if storage != INT32:
        before = P.to(before, storage)
    if not (is_literal(added) and added.node.value == 1):
        before = P.binop("*", before, added.node)
    result = P.binop("+", first, before)
    lw.scope.env[s.result] = Tile(P.name(lw.assign(s.result.name, result)), view.dtype, everywhere)
    return True


_XCHG_BITS = {"float16": "int16", "float32": "int32", "float64": "int64"}

# TileLang's memory orders as Triton's ``sem``: Triton has no seq_cst (acq_rel, its default, is
# its strongest) and no consume (acquire is the next stronger)
_TRITON_SEM = {"relaxed": "relaxed", "consume": "acquire", "acquire": "acquire", "release": "release"}


def _sem(s: ir.Atomic) -> dict:
    """``sem=`` of a global atomic's Triton call: the source's memory order where it is weaker than
    Triton's default acq_rel.  A relaxed read-modify-write with no result used is a fire-and-forget
    ``red.global`` (vectorised over the tile), where acq_rel fences every access at GPU scope
    (``MEMBAR.ALL.GPU`` before it, an L1 invalidation after it)."""
    sem = _TRITON_SEM.get(s.order)
    return {"sem": P.const(sem)} if sem is not None and s.kind != "load" else {}


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
        if _defer_reduction(lw, s, node):
            return
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


def _defer_reduction(lw: Lowerer, s: ir.Atomic, node: ast.expr) -> bool:
    """TILE2TRITON_DEFER_REDUCERS (deferred.py): a reducer's ``acc[i] += v`` in ``T.Parallel(i, j)``,
    the enclosing loop touching ``acc`` nowhere else: the lanes' terms ``node`` (inactive lanes 0)
    are added element-wise into a tile of the lane space, reduced over the lanes ``i`` does not name
    and added into ``acc`` once after the loop.  Returns whether it did."""
    acc, lanes = s.dst.buffer, lw.scope.lanes
    if not (lw.options.defer_reducers and s.kind == "add" and s.result is None and deferred.reassociable(acc.dtype)):
        return False
    if not deferred.fits(lw, prod(lanes.padded)):
        return False
    loop = deferred.enclosing_parallel(lw, s, acc)  # (not the thread view's lanes: no T.Parallel there)
    if loop is None:
        return False
    par = lanes.owner
    indices = [e for i in s.dst.indices for e in ir.iter_expr_tree(i)]
    if any(isinstance(e, ir.Load) for e in indices) or not vars_in(s.dst.indices) <= set(par.vars):
        return False  # the element it adds into may change with the enclosing loop
    wide = deferred.start(lw, loop, f"{acc.name}_terms", list(lanes.padded), lw.storage_dtype(acc.dtype))
    lw.assign_to(wide, P.binop("+", P.name(wide), node))

    def finish() -> None:  # the same reduction, once, of the summed terms
        total = Tile(P.name(wide), acc.dtype, frozenset(range(lanes.rank)))
        lower_parallel(lw, ir.Parallel(par.loc, par.vars, par.extents, [dataclasses.replace(s, value=Lowered(total))]))

    loop.finishes.append((lw.origin, finish))
    return True


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
