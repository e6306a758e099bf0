"""Binding rules of the barriers among blocks (``language/_grid_sync.py``): ``T.sync_grid``,
``T.cluster_wait`` / ``T.cluster_sync`` become ``ir.GridBarrier`` (``passes/grid_split.py`` splits the
kernel there); ``T.cluster_arrive`` has no effect of its own (the wait is where blocks wait);
``T.block_rank_in_cluster`` is the block's linear rank in its cluster, from the block indices."""

from __future__ import annotations

from .. import ir
from ..ir import INT32
from ..ir.exprs import as_expr, const_int
from .rules_base import BinderLike, rule


def _in_kernel(b: BinderLike, node, name: str) -> None:
    if b.kernel is None:
        raise b.error(f"T.{name}() can only be used inside a T.Kernel block", node)


@rule("sync_grid")
def bind_sync_grid(b: BinderLike, node, args):
    _in_kernel(b, node, "sync_grid")
    b.emit(ir.GridBarrier(b.loc(node), "grid"))


@rule("cluster_wait", "cluster_sync")
def bind_cluster_barrier(b: BinderLike, node, args, name):
    _in_kernel(b, node, name)
    b.emit(ir.GridBarrier(b.loc(node), "cluster"))


@rule("cluster_arrive", "cluster_arrive_relaxed")
def bind_cluster_arrive(b: BinderLike, node, args, name):
    _in_kernel(b, node, name)  # the matching T.cluster_wait carries the barrier


@rule("block_rank_in_cluster")
def bind_block_rank_in_cluster(b: BinderLike, node, args):
    _in_kernel(b, node, "block_rank_in_cluster")
    dims = getattr(b, "cluster_dims", None) or [1]  # a plain T.Kernel is a cluster of one block
    rank, scale = None, 1
    for var, d in zip(b.kernel.block_vars, dims):
        if d == 1:
            continue
        part = ir.BinOp("%", ir.VarRef(var), const_int(d), INT32)
        if scale != 1:
            part = ir.BinOp("*", part, const_int(scale), INT32)
        rank = part if rank is None else ir.BinOp("+", rank, part, INT32)
        scale *= d
    return rank if rank is not None else as_expr(0)
