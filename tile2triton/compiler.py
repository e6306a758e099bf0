"""The pipeline, one stage per module: parse -> bind -> check -> (lower -> emit -> run on call)."""

from __future__ import annotations

from .errors import user_facing
from .frontend.bind import bind_prim_func
from .frontend.source import KernelSource
from .passes.check import check
from .runtime.kernel import JITKernel


def argument_key(value):
    """A hashable cache key for a compile-time argument (of a ``@tilelang.jit`` factory, an eager
    kernel or an autotuned function): hashable values as they are; lists, tuples and dicts frozen
    with their type's name, so ``[1, 2]``, ``(1, 2)`` and a dict's items stay apart; anything
    else by its type and repr."""
    try:
        hash(value)
        return value
    except TypeError:
        pass
    if isinstance(value, dict):
        return ("dict",) + tuple(sorted((k, argument_key(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__,) + tuple(argument_key(v) for v in value)
    return ("repr", type(value).__name__, repr(value))


@user_facing
def compile(func: KernelSource, out_idx=None, target=None, *, pass_configs=None, **_options) -> JITKernel:  # noqa: A001
    """``tilelang.compile``: bind and check a ``@T.prim_func``; lowering happens per device kind.
    ``target``: ``"auto"``/None (follow the tensors), ``"cuda"`` or ``"cpu"`` (runtime/target.py).
    ``pass_configs``: ``TL_ENABLE_FAST_MATH`` changes the generated code (runtime/tuning.py)."""
    if not isinstance(func, KernelSource):
        raise TypeError(f"tile2triton.compile expects a @T.prim_func, got {type(func).__name__}")
    prim = bind_prim_func(func, out_idx)
    check(prim)
    return JITKernel(prim, target=target, pass_configs=pass_configs)
