"""The thread view: ``tx = T.get_thread_binding(0)`` code runs once per thread.  Lowered by lane
vectorization: ``tx`` becomes ``tl.arange(0, threads)``, thread-private values become
``(threads,)`` tiles, per-thread ``if`` becomes a mask, and ``T.serial`` stays a loop."""

from __future__ import annotations

import contextlib

from .. import ir
from ..ir import INT32
from . import pyast as P
from .values import LaneSpace, Lowerer, Tile, next_pow2


def open_thread_view(lw: Lowerer, kernel: ir.Kernel) -> None:
    """One lane axis per thread dimension, threadIdx.x fastest (last): (tz, ty, tx)."""
    dims = list(reversed(range(len(kernel.thread_vars))))
    rank = len(dims)
    vars_, extents, padded, names = [], [], [], []
    for axis, d in enumerate(dims):
        var, extent = kernel.thread_vars[d], kernel.thread_extents[d]
        size = next_pow2(extent)
        name = lw.assign(var.name, P.expand(P.call("tl.arange", 0, size), axis, rank))
        lw.scope.env[var] = Tile(P.name(name), INT32, frozenset([axis]))
        lw.scope.ranges.set(var, 0, extent - 1)
        vars_.append(var)
        extents.append(extent)
        padded.append(size)
        names.append(name)
    lw.scope.lanes = LaneSpace(vars_, extents, padded, names, kernel)


def in_thread_view(lw: Lowerer) -> bool:
    return lw.scope.lanes is not None and isinstance(lw.scope.lanes.owner, ir.Kernel)


@contextlib.contextmanager
def block_level(lw: Lowerer, what: str):
    """Tile operations in a thread-view kernel act for the whole block (the mixed style)."""
    if not in_thread_view(lw):
        yield
        return
    if lw.scope.conds:
        raise lw.error(f"{what} cannot stand under a per-thread condition")
    with lw.scoped(lanes=None):
        yield
