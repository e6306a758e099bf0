"""Binding rules: one per ``T.*`` primitive, in ``RULES`` (tag -> rule).

The registry and the ``@rule`` decorator live in ``rules_base.py``; the rules themselves in one
module per topic, each registering its rules when it is imported, here and only here:

* ``rules_memory.py``: copies, fills, ``T.im2col``, views and reshapes, ``T.make_tensor``
* ``rules_gemm.py``: ``T.gemm``, ``T.gemm_sp``, ``T.dp4a``
* ``rules_fragments.py``: the tensor-core emitter's fragment operations (ldmatrix, mma, stmatrix)
* ``rules_reduce.py``: reductions, scans, ``T.comm_reducer`` / ``T.tvm_thread_allreduce``
* ``rules_atomic.py``: atomics, their memory orders, reducers
* ``rules_sync.py``: barriers, ``T.tma_copy``, warp specialization, ``T.sync_threads``
* ``rules_cp_async.py``: ``T.ptx_cp_async``, ``T.access_ptr``, ``T.cp_async_barrier_noinc``
* ``rules_threads.py``: the thread view and warp-level primitives
* ``rules_math.py``: element-wise intrinsics, casts, packed loads/stores, inline asm
* ``rules_misc.py``: RNG, annotations, prints and asserts, eager ``T.const`` / ``T.empty``
* ``rules_vectors.py``: vector values (``T.extract_lane``, ``T.Broadcast``, ``T.Ramp``, ``T.Shuffle``)
* ``rules_scopes.py``: ``T.sblock`` and its ``T.reads`` / ``T.writes``
* ``rules_grid.py``: ``T.sync_grid`` and the cluster barriers (split in ``passes/grid_split.py``)
* ``rules_tvm.py``: ``tvm.tirx`` expressions in kernels (``Not``, ``And``, ``Or``)

The binder is handed in: no rule module imports ``bind.py`` (which imports this one), and
``BinderLike`` names what a rule may use.
"""

from __future__ import annotations

from . import (  # noqa: F401 - imported for their @rule registrations
    rules_atomic,
    rules_cp_async,
    rules_fragments,
    rules_gemm,
    rules_grid,
    rules_math,
    rules_memory,
    rules_misc,
    rules_reduce,
    rules_scopes,
    rules_sync,
    rules_threads,
    rules_tvm,
    rules_vectors,
)
from .rules_base import RULES, BinderLike, rule

__all__ = ["RULES", "BinderLike", "rule"]
