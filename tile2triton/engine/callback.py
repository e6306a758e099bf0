"""``tilelang.engine.callback``: hooks that rewrite TileLang's generated CUDA/HIP/C/Metal source.

tile2triton generates Triton, not CUDA source, so a registered hook is kept but never called;
registering one warns so a script that relies on its rewrite does not pass silently."""

from __future__ import annotations

import warnings

_REGISTERED: dict[str, object] = {}


def _register(kind: str, func, override: bool):
    if kind in _REGISTERED and not override:
        raise ValueError(f"a {kind} source post-processor is already registered")
    warnings.warn(
        f"tile2triton generates Triton, not {kind} source: the registered {kind} post-processor "
        f"{getattr(func, '__name__', func)!r} is never called",
        RuntimeWarning,
        stacklevel=3,
    )
    _REGISTERED[kind] = func
    return func


def _decorator(kind: str):
    def register(func=None, override: bool = True):
        if func is None or isinstance(func, bool):
            over = override if func is None else func
            return lambda f: _register(kind, f, over)
        return _register(kind, func, override)

    register.__name__ = f"register_{kind.lower()}_postproc_callback"
    return register


register_cuda_postproc_callback = _decorator("CUDA")
register_hip_postproc_callback = _decorator("HIP")
register_c_postproc_callback = _decorator("C")
register_metal_postproc_callback = _decorator("Metal")


def register_cuda_postproc(func, override: bool = True):
    return _register("CUDA", func, override)


def register_hip_postproc(func, override: bool = True):
    return _register("HIP", func, override)


__all__ = [
    "register_c_postproc_callback",
    "register_cuda_postproc",
    "register_cuda_postproc_callback",
    "register_hip_postproc",
    "register_hip_postproc_callback",
    "register_metal_postproc_callback",
]
