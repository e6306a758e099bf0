"""``tile2triton.jit``: TileLang's ``tilelang.jit`` decorator (lazy style; eager style in eager.py)."""

from __future__ import annotations

import functools
import operator
import threading
from collections.abc import Callable
from typing import Any, overload

from .compiler import compile as compile_prim_func
from .errors import user_facing
from .frontend.source import FunctionSource, KernelSource, has_inner_prim_func
from .runtime.kernel import JITKernel


def _freeze(value):
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


class JITImpl:
    """What ``@tilelang.jit`` returns: call it to get a kernel (lazy) or to run one (eager)."""

    def __init__(self, func, out_idx=None, **options):
        functools.update_wrapper(self, func)
        self.func = func
        self.out_idx = out_idx
        self.options = options
        self._kernels: dict = {}
        self._lock = threading.Lock()
        source = FunctionSource.from_function(func)
        self.lazy = has_inner_prim_func(source.tree)
        self._eager = None
        self._entry: Callable = self.compile  # lazy style: a call returns the kernel
        if not self.lazy:
            from .eager import EagerFunction

            if out_idx is not None:
                raise ValueError(
                    "out_idx cannot be used with an eager-style @tilelang.jit kernel; return T.empty outputs"
                )
            self._eager = EagerFunction(source, options)
            self._entry = self._eager._entry  # eager style: a call runs the kernel

    # ``fn(*args)`` is ``fn._entry(*args)`` without a forwarding frame (it is on every eager launch)
    __call__: Callable[..., Any] = property(  # type: ignore[assignment]
        operator.attrgetter("_entry"), doc="Lazy style: the kernel for these arguments; eager: run it."
    )

    @user_facing
    def compile(self, *args, **kwargs) -> JITKernel:
        if self._eager is not None:
            return self._eager.compile(*args, **kwargs)
        key = (_freeze(args), _freeze(kwargs))
        kernel = self._kernels.get(key)
        if kernel is not None:
            return kernel
        with self._lock:
            kernel = self._kernels.get(key)
            if kernel is None:
                prim = self.func(*args, **kwargs)
                if not isinstance(prim, KernelSource):
                    raise TypeError(
                        f"@tilelang.jit factory {self.func.__name__} must return a @T.prim_func, got {type(prim).__name__}"
                    )
                kernel = compile_prim_func(prim, self.out_idx)
                self._kernels[key] = kernel
        return kernel

    @user_facing
    def get_kernel_source(self, *args, **kwargs) -> str:
        return self.compile(*args, **kwargs).get_kernel_source()


# for type checkers: ``@tilelang.jit`` and ``@tilelang.jit(...)`` both give a JITImpl
@overload
def jit(func: Callable[..., Any], *, out_idx: Any = None, target: Any = None, target_host: Any = None,
        execution_backend: Any = None, verbose: Any = None, pass_configs: Any = None, debug_root_path: Any = None,
        compile_flags: Any = None) -> JITImpl: ...  # fmt: skip
@overload
def jit(func: None = None, *, out_idx: Any = None, target: Any = None, target_host: Any = None,
        execution_backend: Any = None, verbose: Any = None, pass_configs: Any = None, debug_root_path: Any = None,
        compile_flags: Any = None) -> Callable[[Callable[..., Any]], JITImpl]: ...  # fmt: skip
@user_facing
def jit(func=None, *, out_idx=None, target=None, target_host=None, execution_backend=None, verbose=None,
        pass_configs=None, debug_root_path=None, compile_flags=None):  # fmt: skip
    """Drop-in for ``tilelang.jit``; the backend options are accepted and ignored (Triton decides)."""
    options = {"target": target, "pass_configs": pass_configs}

    @user_facing
    def wrap(f):
        return JITImpl(f, out_idx, **options)

    return wrap(func) if func is not None else wrap
