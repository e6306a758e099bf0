"""Compile a GPU sweep's kernels in worker processes before it times them, so the timed loop finds
Triton's cache warm.  The sweeps (``attn_warps_sweep.py``, ``gluon_route_sweep.py``,
``division_probe.py``) pass their tasks and a module-level function that compiles and runs one."""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp


class _Guarded:
    """``warm(task)`` in a worker: None, or what it raised (the main process reports it when it
    compiles the kernel again)."""

    def __init__(self, warm):
        self.warm = warm

    def __call__(self, task):
        try:
            self.warm(task)
        except Exception as exc:
            return f"{type(exc).__name__}: {str(exc)[:200]}"
        return None


def prewarm(tasks: list, warm, jobs: int) -> None:
    """``warm`` over ``tasks`` in ``jobs`` spawned processes (nothing when ``jobs`` is 1 or less)."""
    if jobs <= 1:
        return
    with cf.ProcessPoolExecutor(jobs, mp_context=mp.get_context("spawn")) as pool:
        for task, err in zip(tasks, pool.map(_Guarded(warm), tasks)):
            if err:
                print(f"prewarm {task}: {err}", flush=True)
