"""The passes a bound PrimFunc goes through before lowering, named in order; every path that binds a
kernel (``tilelang.compile``, the lazy ``@tilelang.jit`` factory, eager-style kernels) runs them here."""

from __future__ import annotations

from .. import ir
from .check import check
from .grid_split import split_grid_barriers

# (name, pass): each pass takes the function, may rewrite it in place, and raises TileLangCompileError
# at the user's line for what TileLang rejects
PASSES = (
    ("split-grid-barriers", split_grid_barriers),  # T.sync_grid / cluster barriers: consecutive launches
    ("check", check),  # what TileLang rejects or warns about
)


def run_passes(func: ir.PrimFunc) -> ir.PrimFunc:
    for _name, run in PASSES:
        run(func)
    return func
