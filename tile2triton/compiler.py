"""The pipeline, one stage per module: parse -> bind -> check -> (lower -> emit -> run on call)."""

from __future__ import annotations

from .errors import user_facing
from .frontend.bind import bind_prim_func
from .frontend.source import KernelSource
from .passes.check import check
from .runtime.kernel import JITKernel


@user_facing
def compile(func: KernelSource, out_idx=None, **_options) -> JITKernel:  # noqa: A001 - TileLang's name
    """``tilelang.compile``: bind and check a ``@T.prim_func``; lowering happens per device kind."""
    if not isinstance(func, KernelSource):
        raise TypeError(f"tile2triton.compile expects a @T.prim_func, got {type(func).__name__}")
    prim = bind_prim_func(func, out_idx)
    check(prim)
    return JITKernel(prim)
