"""Binding rules of synchronisation: Hopper barriers, ``T.tma_copy``, warp specialization
(``T.ws``), ``T.sync_threads``, and the scheduling hints that have no effect here.
"""

from __future__ import annotations

import operator

from .. import ir
from ..ir.exprs import ir_key, is_python_value
from .rules_base import BinderLike, rule
from .rules_memory import bind_copy


# ------------------------------------------------------------------ Hopper barriers, warp specialization
# ``with T.ws(k):`` sections run in program order, every statement at block level (a tile op a warp
# group issues computes the same tile); barrier waits and arrives then order nothing that program
# order does not already order, so they are dropped, and T.tma_copy is the T.copy it completes.
# That holds when every wait is for an arrive earlier in program order: bind.Binder checks it
# (``check_barrier_order``) and names the wait that would need the sections to run concurrently.
class BarrierArray:
    """``T.alloc_barrier(...)``: compile-time handles; ``mbars[i]`` is one barrier."""

    def __init__(self, name: str):
        self.name = name

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
    return BarrierArray(b.fresh_name("mbarrier"))


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
        b.barrier_event("arrive", _barrier(b, args["barrier"], node), None, node, "tma_copy")
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


def check_barrier_order(b: BinderLike, events: list, loop_var) -> None:
    """Every barrier wait must be for an arrive earlier in program order: one earlier in the same
    loop body, or (a wait whose parity is 1 in the first iteration) the previous iteration's."""
    arrived = set()
    for kind, ref, parity, node, name in events:
        if kind == "arrive":
            arrived.add(ref.key())
            continue
        if ref.key() in arrived:
            continue
        first = ir_eval_at(parity, loop_var, 0)
        if first is not None and first % 2 == 1:
            continue
        raise b.error(
            f"T.{name} waits for an arrive that comes later in program order: tile2triton runs warp-specialized "
            "sections (T.ws) one after another, so the producer must come before its consumer",
            node,
        )


def ir_eval_at(e, var, value):
    """The int value of ``e`` with ``var`` = ``value`` (None where another name or operation enters)."""
    ops = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod,
           "^": operator.xor, "&": operator.and_, "|": operator.or_}  # fmt: skip
    if isinstance(e, bool):
        return int(e)
    if isinstance(e, int):
        return e
    if isinstance(e, ir.Const):
        return int(e.value)
    if isinstance(e, ir.VarRef):
        return value if var is not None and e.var is var else None
    if isinstance(e, ir.BinOp) and e.op in ops:
        x, y = ir_eval_at(e.lhs, var, value), ir_eval_at(e.rhs, var, value)
        if x is None or y is None or (e.op in ("//", "%") and y == 0):
            return None
        return ops[e.op](x, y)
    return None


@rule(
    "wait_wgmma",
    "no_set_max_nreg",
    "disable_warp_group_reg_alloc",
    "assume",
    "set_max_nreg",
    "inc_max_nreg",
    "dec_max_nreg",
    "annotate_producer_reg_dealloc",
    "annotate_consumer_reg_alloc",
    "tma_store_arrive",
    "tma_store_wait",
    "fence_proxy_async",
)
def bind_no_effect(b: BinderLike, node, args):
    return None


@rule("sync_threads")
def bind_sync(b: BinderLike, node, args):
    b.emit(ir.Barrier(b.loc(node)))
