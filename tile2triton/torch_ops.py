"""Expose a compiled kernel as a PyTorch custom op: ``tile2triton.register_op("ns::name", kernel)``.

* The schema follows the kernel: its inputs (tensor and scalar parameters that are not outputs,
  in declaration order) and its outputs (``out_idx``).
* A fake (meta) implementation is built from the declared output shapes and dtypes, so the op
  works under ``torch.compile(fullgraph=True)`` and with dynamic shapes.
* On CUDA the op is a ``torch.library.triton_op`` whose body launches the generated Triton
  kernel through ``wrap_triton`` (Inductor sees into it); tensors off CUDA go to a companion
  ``<name>_interpreter`` custom op that runs Triton's interpreter.
* Without CUDA it is a ``torch.library.custom_op`` with ``register_fake`` (the only form
  ``torch.compile`` and ``opcheck`` accept for interpreter kernels).
* ``backward=`` (and ``setup_context=``) register autograd with ``torch.library.register_autograd``.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

import torch

from . import ir
from .errors import Tile2TritonError, user_facing
from .ir.evaluate import host_eval
from .runtime.launch_args import size_multiple
from .runtime.scratch import scratch_tensor
from .runtime.target import NULL_CONTEXT, cuda_device_guard
from .runtime.validate import one_device

__all__ = ["register_op"]

_SCALAR_SCHEMA = {"float": "float", "int": "int", "uint": "int", "bool": "bool"}


class RegisterOpError(Tile2TritonError, ValueError):
    """``register_op`` was given something it cannot turn into a PyTorch op."""


@user_facing
def register_op(
    name: str,
    kernel=None,
    *,
    backward=None,
    setup_context=None,
    mutates_args=None,
    use_triton_op: bool | None = None,
    factory_args=(),
    factory_kwargs=None,
    out_idx=None,
) -> Callable[..., Any]:
    """Register ``kernel`` as ``torch.ops.<ns>.<name>``; returns the ``CustomOpDef`` (callable).

    ``kernel`` is a compiled kernel (what a ``@tilelang.jit`` factory returns), a ``@tilelang.jit``
    factory together with ``factory_args``/``factory_kwargs``, or a ``@T.prim_func`` (with
    ``out_idx``).  Without ``kernel``, returns a decorator taking the same kinds::

        @tile2triton.register_op("mylib::add", factory_args=(1024, 1024))
        @tilelang.jit(out_idx=[-1])
        def add(M, N): ...

        torch.ops.mylib.add(a, b)
    """
    if kernel is None:

        def decorate(k):
            # the decorated name stays the factory (or kernel) it was; the op is torch.ops.<ns>.<name>
            # and ``k.torch_op``
            k.torch_op = register_op(
                name,
                k,
                backward=backward,
                setup_context=setup_context,
                mutates_args=mutates_args,
                use_triton_op=use_triton_op,
                factory_args=factory_args,
                factory_kwargs=factory_kwargs,
                out_idx=out_idx,
            )
            return k

        return decorate
    kernel = _as_kernel(kernel, factory_args, factory_kwargs or {}, out_idx)
    if "::" not in name:
        raise RegisterOpError(f"register_op: op name must be 'namespace::name', got {name!r}")
    spec = _OpSpec(kernel)
    if mutates_args is None:
        mutates_args = spec.default_mutates()
    mutates_args = tuple(mutates_args)
    for m in mutates_args:
        if m not in spec.input_names:
            raise RegisterOpError(f"register_op: mutates_args names '{m}', which is not an input of {spec.fname}")
    schema = spec.schema(mutates_args)
    previous = _REGISTERED.get(name)
    if previous is not None:
        if previous != schema:
            raise RegisterOpError(
                f"register_op: {name} is already registered with schema {name}{previous}; this kernel's is "
                f"{name}{schema} (an op keeps its schema: register the new one under another name)"
            )
        warnings.warn(
            f"register_op: {name} is already registered; replacing its implementation with {spec.fname}'s",
            stacklevel=_user_stacklevel(),
        )
    _REGISTERED[name] = schema
    if use_triton_op is None:
        use_triton_op = torch.cuda.is_available()
    if use_triton_op:
        # Tensors off CUDA go to a companion custom_op running the interpreter: torch.compile traces
        # a triton_op's body, and that op keeps the interpreter call opaque to it.
        interp = torch.library.custom_op(
            name + "_interpreter", spec.signed(spec.interpreter_impl), mutates_args=mutates_args, schema=schema
        )
        interp.register_fake(spec.signed(spec.fake_impl))
        spec.off_cuda = interp
        # some torch versions infer the schema from the signature even when one is given
        op = torch.library.triton_op(name, spec.signed(spec.triton_impl), mutates_args=mutates_args, schema=schema)
    else:
        op = torch.library.custom_op(name, spec.signed(spec.interpreter_impl), mutates_args=mutates_args, schema=schema)
        op.register_fake(spec.signed(spec.fake_impl))
    if backward is not None:
        op.register_autograd(backward, setup_context=setup_context)
    op.tile2triton_kernel = kernel
    return op


_REGISTERED: dict[str, str] = {}  # op name -> schema, of the ops register_op made in this process


def _user_stacklevel() -> int:
    """The stacklevel of a warning issued here that points at the first frame outside tile2triton."""
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def _as_kernel(obj, factory_args, factory_kwargs, out_idx):
    from .compiler import compile as compile_prim
    from .frontend.source import KernelSource
    from .jit import JITImpl
    from .runtime.kernel import JITKernel

    if isinstance(obj, JITKernel):
        return obj
    if isinstance(obj, JITImpl):
        try:
            return obj.compile(*factory_args, **factory_kwargs)
        except TypeError as exc:
            raise RegisterOpError(
                f"register_op: cannot call the factory {obj.func.__name__} with factory_args={tuple(factory_args)!r}, "
                f"factory_kwargs={factory_kwargs!r}: {exc}"
            ) from None
    if isinstance(obj, KernelSource):
        return compile_prim(obj, out_idx)
    raise RegisterOpError(
        f"register_op expects a compiled kernel, a @tilelang.jit factory or a @T.prim_func, got {type(obj).__name__}"
    )


class _OpSpec:
    """What the op needs to know about the kernel: inputs, outputs, how to size and launch them."""

    def __init__(self, kernel):
        self.kernel = kernel
        func = kernel.prim_func
        self.func = func
        self.fname = func.name
        self.out_idx = list(kernel.out_idx)
        if func.workspaces:
            raise RegisterOpError(f"register_op: {self.fname} allocates a T.alloc_global workspace; call the kernel")
        self.inputs = [i for i in range(len(func.params)) if i not in self.out_idx]
        self.input_names = [func.params[i].name for i in self.inputs]
        if len(set(self.input_names)) != len(self.input_names):
            raise RegisterOpError(f"register_op: {self.fname} has repeated parameter names {self.input_names}")

    def default_mutates(self) -> tuple:
        if self.out_idx:
            return ()
        # no runtime-allocated outputs: the kernel writes into (some of) its tensor arguments
        return tuple(self.func.params[i].name for i in self.inputs if isinstance(self.func.params[i], ir.Buffer))

    def schema(self, mutates: tuple) -> str:
        args = []
        for i in self.inputs:
            p = self.func.params[i]
            if isinstance(p, ir.Buffer):
                args.append(f"Tensor(a{len(args)}!) {p.name}" if p.name in mutates else f"Tensor {p.name}")
            else:
                args.append(f"{_SCALAR_SCHEMA[p.dtype.kind]} {p.name}")
        n_out = len(self.out_idx)
        ret = "()" if n_out == 0 else "Tensor" if n_out == 1 else "(" + ", ".join(["Tensor"] * n_out) + ")"
        return f"({', '.join(args)}) -> {ret}"

    def signed(self, impl):
        """``impl(*args)`` with the op's signature (names and annotations), as torch.library reads it."""
        import functools
        import inspect

        params = []
        for i in self.inputs:
            p = self.func.params[i]
            ann = (
                torch.Tensor
                if isinstance(p, ir.Buffer)
                else {"float": float, "int": int, "uint": int, "bool": bool}[p.dtype.kind]
            )
            params.append(inspect.Parameter(p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=ann))
        n_out = len(self.out_idx)
        ret = None if n_out == 0 else torch.Tensor if n_out == 1 else tuple[(torch.Tensor,) * n_out]
        sig = inspect.Signature(params, return_annotation=ret)

        @functools.wraps(impl)
        def call(*args, **kwargs):
            if kwargs:
                args = tuple(sig.bind(*args, **kwargs).arguments.values())
            return impl(*args)

        call.__signature__ = sig
        call.__annotations__ = {p.name: p.annotation for p in params} | {"return": ret}
        return call

    # ------------------------------------------------------------------ shapes
    def bind_values(self, args) -> tuple[dict, torch.device | None]:
        values, devices = {}, []
        for i, arg in zip(self.inputs, args):
            p = self.func.params[i]
            if isinstance(p, ir.Buffer):
                devices.append((p.name, arg.device))
                for dim, actual in zip(p.shape, arg.shape):
                    if isinstance(dim, ir.VarRef):
                        values.setdefault(dim.var, actual)
            else:
                values[p] = arg
        return values, one_device(self.fname, devices, runnable=False)  # several devices: an error naming them

    def new_outputs(self, args) -> list:
        values, device = self.bind_values(args)
        device = device or torch.device("cpu")
        outs = []
        for i in self.out_idx:
            p = self.func.params[i]
            shape = [host_eval(d, values) for d in p.shape]
            outs.append(torch.empty(shape, dtype=p.dtype.as_torch(), device=device))
        return outs

    @staticmethod
    def _result(outs):
        if not outs:
            return None
        return outs[0] if len(outs) == 1 else tuple(outs)

    # ------------------------------------------------------------------ implementations
    def fake_impl(self, *args):
        return self._result(self.new_outputs(args))

    def interpreter_impl(self, *args):
        """The kernel's own call path (validation included); inputs made contiguous first."""
        args = [
            a.contiguous() if isinstance(a, torch.Tensor) and not self._mutated(k) else a for k, a in enumerate(args)
        ]
        out = self.kernel(*args)
        if out is None:
            return None
        if isinstance(out, (list, tuple)):
            return tuple(out) if len(out) > 1 else out[0]
        return out

    def _mutated(self, k: int) -> bool:
        return not self.out_idx and isinstance(self.func.params[self.inputs[k]], ir.Buffer)

    def triton_impl(self, *args):
        """Launch the generated Triton kernel(s) through ``wrap_triton`` (traceable by Inductor)."""
        tensors = [
            a.contiguous() if isinstance(a, torch.Tensor) and not self._mutated(k) else a for k, a in enumerate(args)
        ]
        values, device = self.bind_values(tensors)
        if device is not None and device.type != "cuda":
            return self.off_cuda(*args)
        outs = self.new_outputs(tensors)
        slots = {}
        for i, a in zip(self.inputs, tensors):
            slots[id(self.func.params[i])] = a
        for i, o in zip(self.out_idx, outs):
            slots[id(self.func.params[i])] = o
        # the variant without tensor descriptors: Inductor traces wrap_triton's kernels with fake
        # tensors and cannot hand a kernel the TensorDescriptor arguments the host makes (torch 2.11:
        # KeyError on the descriptor's parameter under torch.compile)
        module, loaded = _module_and_loaded(self.kernel, interpret=False, descriptors=False)
        # Triton launches on the current CUDA device: make the tensors' device current
        with NULL_CONTEXT if device is None or device.index is None else cuda_device_guard(device.index):
            self._launch_all(module, loaded, slots, values, device)
        return self._result(outs)

    @staticmethod
    def _launch_all(module, loaded, slots: dict, values: dict, device) -> None:
        from torch.library import wrap_triton

        for launch in module.launches:
            grid = tuple(host_eval(g, values) for g in launch.grid)
            if all(isinstance(g, int) for g in grid) and min(grid) <= 0:
                continue
            launch_args = [slots[id(a)] if isinstance(a, ir.Buffer) else values[a] for a in launch.args]
            if launch.scratch_bytes:  # shared buffers in global scratch: the hidden last argument
                launch_args.append(scratch_tensor(launch.scratch_bytes, grid, device or torch.device("cuda")))
            launch_args += [size_multiple(launch_args[i]) for i in launch.multiples]  # trailing constexprs
            wrap_triton(getattr(loaded, launch.name))[grid](*launch_args, num_warps=launch.num_warps)


def _module_and_loaded(kernel, interpret: bool, descriptors: bool | None = None):
    compiled = kernel._compile(interpret, descriptors)  # noqa: SLF001 - the runtime's compiled-kernel cache
    if isinstance(compiled, tuple):
        return compiled
    return compiled.module, compiled.loaded
