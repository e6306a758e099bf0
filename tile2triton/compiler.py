"""The pipeline, one stage per module: parse -> bind -> check -> (lower -> emit -> run on call)."""

from __future__ import annotations

import dataclasses
import warnings

from . import ir
from .errors import user_facing
from .frontend.bind import bind_prim_func, normalize_out_idx
from .frontend.eager_bind import bind_eager
from .frontend.source import KernelSource
from .passes.analysis import referenced_buffers
from .passes.pipeline import run_passes
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
def compile(func: KernelSource | ir.PrimFunc, out_idx=None, target=None, *, pass_configs=None, **_options) -> JITKernel:  # noqa: A001
    """``tilelang.compile``: bind and check a ``@T.prim_func``; lowering happens per device kind.
    ``func`` may also be the TileIR an eager kernel's ``get_tir`` gave (bound and checked already).
    ``target``: ``"auto"``/None (follow the tensors), ``"cuda"`` or ``"cpu"`` (runtime/target.py).
    ``pass_configs``: ``TL_ENABLE_FAST_MATH`` changes the generated code (runtime/tuning.py)."""
    if isinstance(func, ir.PrimFunc):
        if out_idx is not None:
            if func.out_idx:
                raise ValueError(
                    f"Out index conflict: {func.name} returns its T.empty outputs, and out_idx={out_idx!r} was given too"
                )
            func = dataclasses.replace(func, out_idx=normalize_out_idx(out_idx, len(func.params), func.loc))
        return JITKernel(func, target=target, pass_configs=pass_configs)
    return JITKernel(compile_prim_func(func, out_idx), target=target, pass_configs=pass_configs)


class CompiledArtifact:
    """What ``tilelang.lower`` returns: TileLang's holds the TVM host and device modules and the CUDA
    source; this one holds the kernel and the Triton source tile2triton generates for the target."""

    def __init__(self, kernel: JITKernel, target):
        self.kernel = kernel
        self.params = kernel.params
        self.kernel_source = kernel.lowered_for(target).source

    def _no_tvm_module(self, name: str):
        raise AttributeError(
            f"CompiledArtifact.{name}: tile2triton builds no TVM IRModule (it generates Triton); "
            "kernel_source holds the generated Triton source"
        )

    host_mod = property(lambda self: self._no_tvm_module("host_mod"))
    device_mod = property(lambda self: self._no_tvm_module("device_mod"))
    rt_mod = property(lambda self: self._no_tvm_module("rt_mod"))


@user_facing
def lower(func: KernelSource | ir.PrimFunc, target="auto", target_host=None, *, runtime_only=False,
          enable_host_codegen=False, enable_device_compile=False) -> CompiledArtifact:  # fmt: skip
    """``tilelang.lower``: bind, check and lower ``func`` for ``target`` (a card name or TileLang
    target; ``"auto"``/``"cuda"``: this machine's GPU, sm_90 without one) without loading or
    launching it.  The host target and codegen switches mean nothing under Triton."""
    kernel = compile(func, target=None)
    return CompiledArtifact(kernel, "cuda" if target in (None, "auto") else target)


@user_facing
def par_compile(funcs, out_idx=None, execution_backend=None, target=None, target_host=None, verbose=None,
                pass_configs=None, compile_flags=None, num_workers: int | None = None,
                ignore_error: bool = False) -> list:  # fmt: skip
    """``tilelang.par_compile``: ``compile`` each prim_func (``@T.prim_func``s, or what ``get_tir``
    gives), results in their order; with ``ignore_error`` one that fails gives None and a warning.
    Binding is cheap and Triton compiles at the first launch, so they are compiled one by one
    (``num_workers`` is accepted; the backend options mean nothing under Triton, as in ``compile``)."""
    kernels = []
    for i, func in enumerate(list(funcs)):
        try:
            kernels.append(compile(func, out_idx, target, pass_configs=pass_configs))
        except Exception as exc:
            if not ignore_error:
                raise
            warnings.warn(f"par_compile: function {i} failed: {exc}", stacklevel=3)
            kernels.append(None)
    return kernels


def compile_prim_func(func: KernelSource, out_idx=None):
    """Bind and check a ``@T.prim_func`` (``tilelang.compile`` and ``JITKernel(prim_func, ...)``)."""
    if not isinstance(func, KernelSource):
        raise TypeError(f"tile2triton.compile expects a @T.prim_func, got {type(func).__name__}")
    prim = bind_kernel_source(func, out_idx)
    return run_passes(prim)


def bind_kernel_source(func: KernelSource, out_idx=None):
    """Bind a ``@T.prim_func``.  Parameters declared in the body (``A: T.Tensor(...)`` under
    ``def main(A)``, outputs made with ``T.empty`` and returned) bind as an eager kernel does,
    with no call arguments: every shape is a literal or a ``T.dynamic`` size."""
    if getattr(func, "simplify_arguments", False):  # tilelang.transform.apply_simplify(func)
        prim = bind_kernel_source(dataclasses.replace(func), None)
        drop_unused_buffers(prim)
        if out_idx is not None:  # it counts the parameters that remain, as in TileLang
            prim.out_idx = normalize_out_idx(out_idx, len(prim.params), prim.loc)
        return prim
    if all(a.annotation is not None for a in _params(func.tree)):
        return bind_prim_func(func, out_idx)
    prim = bind_eager(func, {}, {}, {})
    if out_idx is not None:
        if prim.out_idx:
            raise ValueError(
                f"Out index conflict: {func.name} returns its T.empty outputs, and out_idx={out_idx!r} was given too"
            )
        prim.out_idx = normalize_out_idx(out_idx, len(prim.params), prim.loc)
    return prim


def drop_unused_buffers(prim) -> None:
    """TileLang's ``Simplify(simplify_arguments=True)``: tensor parameters no kernel reads or writes
    leave the signature (``kernel(A, B, C)`` for ``main(A, B, Bias, C)`` when Bias is unused).  Kept:
    outputs, tensors with a symbolic shape or stride (they may define a size), and every parameter
    of a function with T.alloc_global workspaces (their indices follow the parameters)."""
    if prim.workspaces:
        return
    used = set()
    for kernel in prim.kernels:
        used.update(b.root for b in referenced_buffers(kernel))
    keep = []
    for i, p in enumerate(prim.params):
        static = isinstance(p, ir.Buffer) and all(isinstance(d, int) for d in (*p.shape, *(p.strides or ())))
        if (
            static
            and p.root not in used
            and i not in prim.out_idx
            and not any(q is not p and isinstance(q, ir.Buffer) and q.root is p for q in prim.params)
        ):
            continue
        keep.append(i)
    prim.out_idx = [keep.index(i) for i in prim.out_idx]
    prim.params = [prim.params[i] for i in keep]


def _params(tree) -> list:
    args = tree.args
    return list(args.posonlyargs) + list(args.args) + list(args.kwonlyargs)
