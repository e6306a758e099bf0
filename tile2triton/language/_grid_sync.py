"""Barriers among blocks: ``T.sync_grid`` (a cooperative launch's grid barrier) and the thread-block
cluster primitives ``T.cluster_arrive`` / ``cluster_arrive_relaxed`` / ``cluster_wait`` /
``cluster_sync`` and ``T.block_rank_in_cluster`` (``T.ClusterKernel`` runs as a plain grid).

Triton has no barrier among programs; tile2triton splits the kernel at each grid barrier into
consecutive launches (``passes/grid_split.py``), which needs every value that crosses it to be in
global memory.  A cluster barrier that no global value can cross is a block barrier.
"""

from __future__ import annotations

from ._primitive import _kernel_only


@_kernel_only("sync_grid")
def sync_grid():
    """Grid-wide barrier: every block's writes before it are seen by every block after it."""


@_kernel_only("cluster_arrive")
def cluster_arrive():
    """Arrive at the cluster barrier (the matching ``T.cluster_wait`` is where blocks wait)."""


@_kernel_only("cluster_arrive_relaxed")
def cluster_arrive_relaxed():
    """``T.cluster_arrive`` without memory ordering."""


@_kernel_only("cluster_wait")
def cluster_wait():
    """Wait until every block of the cluster has arrived."""


@_kernel_only("cluster_sync")
def cluster_sync():
    """``T.cluster_arrive()`` then ``T.cluster_wait()``."""


@_kernel_only("block_rank_in_cluster")
def block_rank_in_cluster():
    """The block's linear rank in its cluster (x fastest), as CUDA's ``%cluster_ctarank``."""


__all__ = ["block_rank_in_cluster", "cluster_arrive", "cluster_arrive_relaxed", "cluster_sync", "cluster_wait",
           "sync_grid"]  # fmt: skip
