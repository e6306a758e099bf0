"""Binding rules of synchronisation: Hopper barriers, ``T.tma_copy``, warp specialization
(``T.ws``), ``T.sync_threads``, and the scheduling hints that have no effect here.
"""

from __future__ import annotations

import itertools

from .. import ir
from ..ir.exprs import as_expr, ir_key, is_python_value, static
from .rules_base import BinderLike, rule
from .rules_memory import bind_copy


# ------------------------------------------------------------------ Hopper barriers, warp specialization
# Statements run at block level, one after another (a tile op a warp group issues computes the same
# tile); barrier arrives and waits become ``warp_sections.BarrierEvent`` statements, and the binder
# puts the warp-specialized sections in an order that satisfies every wait
# (``warp_sections.schedule_kernel``) before it drops them.  T.tma_copy is the T.copy it completes.
class BarrierArray:
    """``T.alloc_barrier(...)``: compile-time handles; ``mbars[i]`` is one barrier."""

    def __init__(self, name: str, counts: list | None = None):
        self.name, self.counts = name, counts  # the arrive count of each barrier (None: not static)

    def __getitem__(self, index):
        return BarrierRef(self, index)


class BarrierRef:
    def __init__(self, array: BarrierArray, index=None):
        self.array, self.index = array, index

    def key(self):
        index = self.index
        return (id(self.array), None if index is None else index if is_python_value(index) else ir_key(index))


def _barrier(b: BinderLike, value, node) -> BarrierRef:
    if isinstance(value, BarrierArray):
        return BarrierRef(value)
    if not isinstance(value, BarrierRef):
        raise b.error("expected a barrier from T.alloc_barrier", node)
    return value


@rule("alloc_barrier")
def bind_alloc_barrier(b: BinderLike, node, args):
    counts = args["arrive_count"]
    counts = list(counts) if isinstance(counts, (list, tuple)) else [counts]
    static_counts = all(isinstance(c, int) and not isinstance(c, bool) and c > 0 for c in counts)
    return BarrierArray(b.fresh_name("mbarrier"), counts if static_counts else None)


@rule("barrier_wait", "mbarrier_wait_parity")
def bind_barrier_wait(b: BinderLike, node, args, name):
    b.barrier_event("wait", _barrier(b, args["mbarrier"], node), args["parity"], node, name)


@rule("barrier_arrive", "mbarrier_arrive")
def bind_barrier_arrive(b: BinderLike, node, args, name):
    b.barrier_event("arrive", _barrier(b, args["mbarrier"], node), None, node, name)


@rule("tma_copy")
def bind_tma_copy(b: BinderLike, node, args):
    if args["cluster_mask"] is not None:
        _check_multicast_source(b, args["src"], node)
    if args["barrier"] is not None:
        b.barrier_event("tma", _barrier(b, args["barrier"], node), None, node, "tma_copy")
    return bind_copy(b, node, {"src": args["src"], "dst": args["dst"]})


def _check_multicast_source(b: BinderLike, src, node) -> None:
    """``cluster_mask``: the lowest-ranked block of the mask loads the tile and multicasts it to the
    others' shared memory, so each block receives that block's source region.  A T.copy in every
    block gives the same only when the region is the same for every block: no block index in it."""
    if isinstance(src, ir.Region):
        exprs = [*src.starts, *[e for e in src.extents if isinstance(e, ir.Expr)]]
    elif isinstance(src, ir.Load):
        exprs = list(src.indices)
    else:
        exprs = []
    for e in exprs:
        for x in ir.iter_expr_tree(e) if isinstance(e, ir.Expr) else ():
            if (isinstance(x, ir.VarRef) and x.var.kind in ("block", "thread")) or isinstance(x, ir.Load):
                raise b.error(
                    "T.tma_copy(..., cluster_mask=...) multicasts the lowest-ranked block's source region to the "
                    "others; tile2triton supports it only when the source region does not depend on the block "
                    "(no block or thread index, and no loaded value, in its indices)",
                    node,
                )


@rule("ws")
def bind_misplaced_ws(b: BinderLike, node, args):
    raise b.error("T.ws opens a block: write 'with T.ws(...):'", node)


@rule(
    "wait_wgmma",
    "no_set_max_nreg",
    "disable_warp_group_reg_alloc",
    "set_max_nreg",
    "inc_max_nreg",
    "dec_max_nreg",
    "annotate_producer_reg_dealloc",
    "annotate_consumer_reg_alloc",
    "tma_store_arrive",
    "tma_store_wait",
    "fence_proxy_async",
    "pdl_trigger",
    "pdl_sync",
    "annotate_min_blocks_per_sm",
    "annotate_l2_hit_ratio",
)
def bind_no_effect(b: BinderLike, node, args):
    return None


# ------------------------------------------------------------------ block barriers and named barriers
# PTX named barriers (``bar.sync id, n`` / ``bar.arrive id, n``, ids 0-15): barrier ``id`` completes
# a phase when ``n`` threads have arrived.  Both calls are barrier events of one array (the thread
# count travels with each event), so warp_sections orders sections that hand data over through
# them as it orders mbarrier sections; a sync is also the block barrier it is where every thread
# reaches it together.
NAMED_BARRIERS = BarrierArray("named_barrier")
_NAMED_IDS = 16
_sync_pairs = itertools.count()


def _index_arg(b: BinderLike, value, what: str, node) -> ir.Expr:
    try:
        value = as_expr(value, b.loc(node))  # also T.int32(1)
    except (TypeError, ValueError):
        value = None
    if not isinstance(value, ir.Expr) or value.dtype.kind not in ("int", "uint"):
        raise b.error(f"{what} is an integer, got {value!r}", node)
    return value


def _named_event(b: BinderLike, node, barrier_id, count, name: str, sync: bool) -> None:
    barrier_id = _index_arg(b, barrier_id, f"T.{name}: a named barrier id", node)
    if static(barrier_id) is not None and not 0 <= static(barrier_id) < _NAMED_IDS:
        raise b.error(f"T.{name}: a named barrier id is from 0 to {_NAMED_IDS - 1} (PTX bar), "
                      f"got {static(barrier_id)}", node)  # fmt: skip
    # bar.sync id without a count: every thread of the block
    count = _index_arg(b, b.kernel.threads if count is None else count, f"T.{name}: a thread count", node)
    if static(count) is not None and static(count) <= 0:
        raise b.error(f"T.{name}: the thread count of a named barrier is positive, got {static(count)}", node)
    ref = BarrierRef(NAMED_BARRIERS, static(barrier_id) if static(barrier_id) is not None else barrier_id)
    count = static(count) if static(count) is not None else count
    pair = next(_sync_pairs) if sync else None
    b.barrier_event("arrive", ref, None, node, name, count, pair)
    if sync:
        b.barrier_event("sync", ref, None, node, name, count, pair)


@rule("sync_threads")
def bind_sync(b: BinderLike, node, args):
    named = [a for a in (args["barrier_id"], args["arrive_count"]) if a is not None]  # TileLang's argument list
    if named:  # bar.sync id[, n]: arrive, then wait for the other threads of the barrier's phase
        _named_event(b, node, named[0], named[1] if len(named) > 1 else None, "sync_threads", sync=True)
    b.emit(ir.Barrier(b.loc(node)))


@rule("named_barrier_arrive")
def bind_named_barrier_arrive(b: BinderLike, node, args):
    """``bar.arrive id, n``: the calling threads arrive without waiting (a producer's signal)."""
    _named_event(b, node, args["barrier_id"], args["thread_count"], "named_barrier_arrive", sync=False)


@rule("tvm_storage_sync")
def bind_tvm_storage_sync(b: BinderLike, node, args):
    """TVM's ``tvm_storage_sync(scope)``: ``"shared"`` / ``"shared.dyn"`` is ``__syncthreads()`` (as
    ``T.sync_threads()``), ``"warp"`` nothing (TileLang's CUDA codegen prints none), ``"cluster"`` the
    cluster barrier ``T.cluster_sync()``."""
    scope = args["storage_scope"]
    if scope in ("shared", "shared.dyn"):
        b.emit(ir.Barrier(b.loc(node)))
    elif scope == "cluster":
        b.emit(ir.GridBarrier(b.loc(node), "cluster"))
    elif scope != "warp":
        raise b.error(f"T.tvm_storage_sync({scope!r}): the scopes are 'shared', 'shared.dyn', 'warp' and "
                      "'cluster' (TileLang no longer supports a global storage sync)", node)  # fmt: skip


@rule("annotate_restrict_buffers")
def bind_annotate_restrict_buffers(b: BinderLike, node, args):
    """Buffers that may alias: TileLang drops their ``__restrict__``.  tile2triton's Triton kernels
    never declare their pointers non-aliasing, so there is nothing to drop (no effect on results)."""
    for buf in args["buffers"]:
        if not isinstance(buf, ir.Buffer):
            raise b.error(f"T.annotate_restrict_buffers expects buffers, got {buf!r}", node)
