"""``tile2triton.jit``: TileLang's ``tilelang.jit`` decorator (lazy style; eager style in eager.py)."""

from __future__ import annotations

import ast
import functools
import inspect
import operator
import threading
import warnings
from collections.abc import Callable
from typing import Any, overload

from . import ir
from .compiler import argument_key
from .compiler import compile as compile_prim_func
from .errors import FactoryReturnError, Tile2TritonError, hide_internal_frames, user_facing
from .frontend.source import FunctionSource, KernelSource, has_inner_prim_func
from .runtime.kernel import JITKernel
from .runtime.target import target_kind


def _opens_kernel(tree: ast.FunctionDef) -> bool:
    """Does the function's own body (not a nested def) open a ``with T.Kernel(...)``?"""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.With):
            for item in node.items:
                call = item.context_expr
                func = call.func if isinstance(call, ast.Call) else None
                if isinstance(func, ast.Attribute) and func.attr in ("Kernel", "ClusterKernel"):
                    return True
        stack.extend(ast.iter_child_nodes(node))
    return False


class JITImpl:
    """What ``@tilelang.jit`` returns: call it to get a kernel (lazy) or to run one (eager).

    The style is TileLang's (``tilelang/jit/__init__.py``, ``_infer_jit_mode``): a function that
    defines an inner ``@T.prim_func`` is lazy; otherwise the first call runs the function on its
    arguments, and it is lazy if that returns a prim_func (one a helper built, say), eager if it
    used an eager-only construct (``T.const``, ``T.Kernel``...) or returned anything else. A body
    that opens ``with T.Kernel`` itself is eager from the start (that call would stop there)."""

    def __init__(self, func, out_idx=None, mode="auto", **options):
        functools.update_wrapper(self, func)
        if mode not in ("auto", "lazy", "eager"):
            raise ValueError(f"@tilelang.jit mode must be 'auto', 'lazy' or 'eager', got {mode!r}")
        self.func = func
        self.out_idx = out_idx
        self.options = options
        self._kernels: dict = {}
        # the same call spelt the same way ((args, kwargs items) when hashable) -> its kernel: a lazy
        # factory is called again on every use in TileLang scripts, so this lookup is its host cost
        self._calls: dict = {}
        self._built: dict = {}  # call key -> the prim_func the mode-deciding call returned
        self._lock = threading.Lock()
        self._source = FunctionSource.from_function(func)
        self._eager = None
        self._lazy: bool | None = None
        if mode == "lazy" or (mode == "auto" and has_inner_prim_func(self._source.tree)):
            self._become_lazy()
        elif mode == "eager" or _opens_kernel(self._source.tree):
            self._become_eager()  # a body that opens T.Kernel itself is eager style
        else:
            self._entry: Callable = self._first_call  # decided by the first call, as TileLang does

    def _become_lazy(self) -> None:
        self._lazy = True
        calls, miss = self._calls, self._lazy_call

        def lazy(*args, **kwargs):  # lazy style: a call returns the kernel
            """A call spelt as one before is one lookup, without ``user_facing``'s frame; others
            compile (an error leaves with the user's frames only, as ``user_facing`` does it)."""
            try:
                kernel = calls.get((args, tuple(kwargs.items())))
            except TypeError:  # an unhashable argument
                kernel = None
            if kernel is not None:
                return kernel
            try:
                return miss(*args, **kwargs)
            except Tile2TritonError as exc:
                hide_internal_frames(exc)
                raise

        self._entry = lazy

    def _lazy_call(self, *args, **kwargs) -> JITKernel:
        try:
            key = (args, tuple(kwargs.items()))
            kernel = self._calls.get(key)
        except TypeError:  # an unhashable argument (a list, a dict): compile's argument_key freezes it
            return self.compile(*args, **kwargs)
        if kernel is None:
            kernel = self._calls[key] = self.compile(*args, **kwargs)
        return kernel

    def _become_eager(self) -> None:
        from .eager import EagerFunction

        if self.out_idx is not None:
            raise ValueError("out_idx cannot be used with an eager-style @tilelang.jit kernel; return T.empty outputs")
        self._eager = EagerFunction(self._source, self.options)
        self._lazy = False
        self._entry = self._eager._entry  # eager style: a call runs the kernel

    @property
    def lazy(self) -> bool:
        """Lazy style? (Until the first call decides it, a function without a kernel in its body is taken as lazy.)"""
        return self._lazy is not False

    def _decide(self, args, kwargs) -> None:
        """TileLang's test: call the function; a returned prim_func makes it lazy."""
        from .language import KernelOnlyError

        with self._lock:
            if self._lazy is not None:
                return
            try:
                inspect.signature(self.func).bind(*args, **kwargs)
            except TypeError:
                self._become_eager()
                return
            try:
                prim = self.func(*args, **kwargs)
            except KernelOnlyError:
                self._become_eager()  # it used T.const / T.Kernel / T.empty: eager style
                return
            if isinstance(prim, KernelSource):
                self._built[(argument_key(args), argument_key(kwargs))] = prim
                self._become_lazy()
            else:
                self._become_eager()

    def _first_call(self, *args, **kwargs):
        self._decide(args, kwargs)
        return self._entry(*args, **kwargs)

    # ``fn(*args)`` is ``fn._entry(*args)`` without a forwarding frame (it is on every eager launch)
    __call__: Callable[..., Any] = property(  # type: ignore[assignment]
        operator.attrgetter("_entry"), doc="Lazy style: the kernel for these arguments; eager: run it."
    )

    @user_facing
    def compile(self, *args, **kwargs) -> JITKernel:
        if self._lazy is None:
            self._decide(args, kwargs)
        if self._eager is not None:
            return self._eager.compile(*args, **kwargs)
        key = (argument_key(args), argument_key(kwargs))
        kernel = self._kernels.get(key)
        if kernel is not None:
            return kernel
        with self._lock:
            kernel = self._kernels.get(key)
            if kernel is None:
                prim = self._built.pop(key, None)
                if prim is None:
                    prim = self.func(*args, **kwargs)
                if not isinstance(prim, KernelSource):
                    raise self._not_a_prim_func(prim)
                kernel = compile_prim_func(
                    prim, self.out_idx, target=self.options.get("target"), pass_configs=self.options.get("pass_configs")
                )
                kernel._name_for_errors(self.func.__name__)
                self._kernels[key] = kernel
        return kernel

    def _not_a_prim_func(self, value) -> FactoryReturnError:
        """The error for a factory call that gave ``value`` instead of a ``@T.prim_func``, at the factory's line."""
        tree, name = self._source.tree, self.func.__name__
        inner = next(
            (n.name for n in tree.body if isinstance(n, ast.FunctionDef)
             and any("prim_func" in ast.unparse(d) for d in n.decorator_list)),
            None,
        )  # fmt: skip
        col = tree.col_offset
        loc = ir.Loc(self._source.file, tree.lineno, col, col + len(f"def {name}"))
        got = "None" if value is None else f"a {type(value).__name__}"
        hint = f"end {name} with `return {inner}`" if inner else f"{name} should build a @T.prim_func and return it"
        return FactoryReturnError(f"@tilelang.jit factory {name} returned {got}, not a @T.prim_func", loc, hint)

    @user_facing
    def get_kernel_source(self, *args, **kwargs) -> str:
        return self.compile(*args, **kwargs).get_kernel_source()

    def parse_cache_key(self, *args, **kwargs):
        """TileLang's ``JITImpl.parse_cache_key``: the key the kernel for these arguments is cached under
        (eager style: the tensors' shapes and the other values; lazy: the factory's arguments)."""
        if self._lazy is None:
            self._decide(args, kwargs)
        if self._eager is not None:
            return self._eager.cache_key(*args, **kwargs)
        return (argument_key(args), argument_key(kwargs))

    @property
    def signature(self) -> inspect.Signature:
        """TileLang's ``JITImpl.signature``: the decorated function's."""
        return inspect.signature(self.func)

    @user_facing
    def get_tir(self, *args, **kwargs):
        """TileLang's ``get_tir``: the prim_func for these arguments, unlowered (a lazy factory's
        ``@T.prim_func``; an eager kernel's bound TileIR), for ``tilelang.compile`` or ``par_compile``."""
        if self._lazy is None:
            self._decide(args, kwargs)
        if self._eager is not None:
            return self._eager.get_tir(*args, **kwargs)
        prim = self._built.pop((argument_key(args), argument_key(kwargs)), None)
        return prim if prim is not None else self.func(*args, **kwargs)

    @user_facing
    def par_compile(self, configs, num_workers: int | None = None, ignore_error: bool = False) -> list:
        """TileLang's ``par_compile``: ``compile`` each config (a dict of keyword arguments or a
        tuple of positional ones), in order; with ``ignore_error`` a config that fails gives None
        (and a warning).  Compiling here is cheap (Triton compiles at the first launch), so one by one."""
        kernels = []
        for cfg in configs:
            if not isinstance(cfg, (dict, tuple)):
                raise ValueError(f"par_compile: a config is a dict or a tuple, got {type(cfg).__name__}")
            try:
                kernels.append(self.compile(**cfg) if isinstance(cfg, dict) else self.compile(*cfg))
            except Exception as exc:
                if not ignore_error:
                    raise
                warnings.warn(f"par_compile: config {cfg!r} failed: {exc}", stacklevel=3)
                kernels.append(None)
        return kernels


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
        pass_configs=None, debug_root_path=None, compile_flags=None, mode="auto"):  # fmt: skip
    """Drop-in for ``tilelang.jit``.  ``target``: ``"auto"``/None (follow the tensors), ``"cuda"``
    (``"cuda -arch=sm_90"``: Triton picks the architecture) or ``"cpu"`` (Triton's interpreter); others
    are an error.  The other backend options are accepted and ignored (Triton decides)."""
    target_kind(target)  # a target tile2triton cannot run on is an error here, at the decorator
    options = {"target": target, "pass_configs": pass_configs}

    @user_facing
    def wrap(f):
        return JITImpl(f, out_idx, mode, **options)

    return wrap(func) if func is not None else wrap
