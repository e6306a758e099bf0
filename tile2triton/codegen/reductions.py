"""Lowering rules of reductions: ``T.reduce_*``, ``T.cumsum``/``T.cummax`` (``ir.Scan``) and
``T.tvm_thread_allreduce`` (``ir.ThreadAllReduce``), with the identities and combiners they share.
"""

from __future__ import annotations

import ast
from math import prod

from .. import ir
from . import deferred
from . import pyast as P
from .rules import lower_store
from .rules_base import lowers
from .threads import block_level, in_thread_view
from .tile_ops import _check_collective, _whole_value
from .values import Lowered, Lowerer, Tile

_IDENTITY = {"sum": 0, "abssum": 0, "max": float("-inf"), "absmax": 0, "min": float("inf")}
_COMBINE = {"sum": "+", "abssum": "+", "max": "tl.maximum", "absmax": "tl.maximum", "min": "tl.minimum"}
_REDUCER = {"sum": "tl.sum", "abssum": "tl.sum", "max": "tl.max", "absmax": "tl.max", "min": "tl.min"}
# T.reduce_bitand/bitor/bitxor: tl.reduce with the allreduce's combine helpers (operator, identity, helper)
_BITWISE_REDUCE = {"bitand": ("&", -1, "_and_combine"), "bitor": ("|", 0, "_or_combine"),
                   "bitxor": ("^", 0, "_xor_combine")}  # fmt: skip
for _kind, (_op, _identity, _helper) in _BITWISE_REDUCE.items():
    _IDENTITY[_kind], _COMBINE[_kind], _REDUCER[_kind] = _identity, _op, _helper


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
        x = lw.magnitude(x) if src_buf.dtype.is_float else P.call("tl.abs", x)
    # a sum accumulates in the output's type, as TileLang's (each element cast to it first): float16
    # or float8 elements summed into a float32 output are summed in float32, not rounded to float16
    work = src_buf.dtype
    if s.kind in ("sum", "abssum") and rank and dst_buf.dtype != src_buf.dtype:
        work = dst_buf.dtype
        x = lw.cast(Tile(x, src_buf.dtype, frozenset(range(rank))), work).node
    nan_helper = None
    if s.nan_propagate and s.kind in ("max", "absmax", "min") and src_buf.dtype.is_float:
        nan_helper = "_min_nan_combine" if s.kind == "min" else "_max_nan_combine"
        lw.helpers.add(nan_helper)

    def combine(old, new):
        if nan_helper is not None:
            return P.call(nan_helper, old, new)
        op = _COMBINE[s.kind]
        return P.binop(op, old, new) if op in ("+", "&", "|", "^") else P.call(op, old, new)

    def reduce_along(value, axis, **keep):
        if nan_helper is not None:
            return P.call("tl.reduce", value, axis, P.name(nan_helper), **keep)
        if s.kind in _BITWISE_REDUCE:
            lw.helpers.add(_REDUCER[s.kind])
            return P.call("tl.reduce", value, axis, P.name(_REDUCER[s.kind]), **keep)
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
        identity = _identity(s.kind, src_buf.dtype)
        valid = P.binop("<", P.expand(P.call("tl.arange", 0, rs.shape[dim]), dim, rank), P.const(extent))
        x = P.call("tl.where", lw.named(valid, "valid"), x, P.const(identity))
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

    def reduce_into_dst(value) -> None:
        if keep and s.clear and lw.scope.loop_depth:
            # the unit axis inserted before reducing, not kept after it: Triton 3.6's thread-locality
            # pass takes a loop-carried reduce whose one user is the keep_dims expand for an
            # accumulation and fails an assertion (GPU fuzz seed 9456912; Triton 3.9 checks first)
            unit = P.tuple_([P.const(d) for d in (*rs.shape[:dim], 1, *rs.shape[dim:])])
            r = reduce_along(P.call("tl.reshape", value, unit), dim + 1)
        elif keep:
            r = reduce_along(value, dim, keep_dims=True)
        else:
            r = reduce_along(value, dim)
        if not rd.shape and expected:
            r = reduce_along(r, 0) if len(expected) == 1 else P.call("tl.reshape", r, P.tuple_([]))
        if not s.clear:
            r = combine(P.name(rd.name), r)
        lw.assign_to(rd.name, lw.cast(Tile(r, work), dst_buf.dtype).node)

    loop = None if nan_helper else _deferring_loop(lw, s, work, rs.shape)
    if loop is not None:  # TILE2TRITON_DEFER_REDUCES: combined element-wise here, reduced once after the loop
        wide = deferred.start(lw, loop, f"{dst_buf.name}_parts", list(rs.shape), lw.storage_dtype(work),
                              fill=_identity(s.kind, work))  # fmt: skip
        lw.assign_to(wide, combine(P.name(wide), x))
        loop.finishes.append((lw.origin, lambda: reduce_into_dst(P.name(wide))))
        return
    reduce_into_dst(x)


def _identity(kind: str, dtype):
    """The value a reduction of ``kind`` in ``dtype`` starts from (an integer max from the type's least)."""
    identity = _IDENTITY[kind]
    if not dtype.is_float and identity in (float("-inf"), float("inf")):
        return -(2 ** (dtype.bits - 1)) if identity < 0 else 2 ** (dtype.bits - 1) - 1
    return identity


def _deferring_loop(lw: Lowerer, s: ir.Reduce, work, shape) -> deferred.LoopDeferrals | None:
    """TILE2TRITON_DEFER_REDUCES (codegen/deferred.py): the enclosing loop that takes ``s``'s
    reduction after it, where ``s`` combines into its accumulator (``clear=False``) as a statement
    of the loop's own body, no other statement of the loop touches the accumulator, the
    combination may be reordered (a max or min; a sum in 32 bits) and a tile of ``shape`` fits
    the accumulators' budget.  Not in a loop with gemms: there the tile held across the loop competes
    with the gemms' accumulators and operands for registers (H100, Triton 3.6, on / off: gdn's
    wy_fast_bwd_split 62.2 / 55.5 us, dsa indexer_bwd 282.9 / 274.7, wy_fast_bwd 48.0 / 49.0; fp8 block
    mean pooling, no gemm, 25.0 / 31.0).  None: reduced here."""
    if not lw.options.defer_reduces or s.clear or not shape:
        return None
    if s.kind in ("sum", "abssum") and not deferred.reassociable(work):
        return None
    if s.kind not in ("sum", "abssum", "max", "min", "absmax") or not deferred.fits(lw, prod(shape)):
        return None
    loop = deferred.enclosing(lw, s, s.dst.buffer)
    if loop is None or ir.has_gemm(loop.body):
        return None
    return loop


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
            x = P.call("tl.where", lw.named(valid, "valid"), x, P.const(identity))
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


_BITWISE = {"and": ("&", -1), "or": ("|", 0), "xor": ("^", 0)}  # operator, identity
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
