"""The compiled kernel users call: validates arguments, allocates outputs, launches Triton."""

from __future__ import annotations

import math
import operator

import torch

from .. import ir
from ..codegen.emit import TritonModule, emit_module
from ..codegen.lower import LoweringOptions
from ..errors import KernelCallError
from .cache import interpreter_mode, load_module

_HOST_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod}


def host_eval(e, values: dict):
    """Evaluate a grid or shape expression on the host, given the run-time sizes."""
    if isinstance(e, int):
        return e
    if isinstance(e, ir.Const):
        return e.value
    if isinstance(e, ir.VarRef):
        return values[e.var]
    if isinstance(e, ir.BinOp) and e.op in _HOST_OPS:
        return _HOST_OPS[e.op](host_eval(e.lhs, values), host_eval(e.rhs, values))
    if isinstance(e, ir.Call) and e.fn in ("max", "min"):
        a, b = (host_eval(x, values) for x in e.args)
        return max(a, b) if e.fn == "max" else min(a, b)
    if isinstance(e, ir.Cast):
        return host_eval(e.value, values)
    raise KernelCallError(f"cannot evaluate {e!r} on the host")


def default_interpret() -> bool:
    return not torch.cuda.is_available()


class JITKernel:
    """A compiled TileLang program (TileLang's ``JITKernel``)."""

    def __init__(self, func: ir.PrimFunc):
        self.prim_func = func
        self.out_idx = list(func.out_idx)
        self._compiled: dict[bool, tuple[TritonModule, object]] = {}
        self._inputs = [i for i in range(len(func.params)) if i not in func.out_idx]

    # ---------------------------------------------------------------- compilation
    def lowered(self, interpret: bool) -> TritonModule:
        return self._compile(interpret)[0]

    def _compile(self, interpret: bool):
        if interpret not in self._compiled:
            module = emit_module(self.prim_func, LoweringOptions(interpret=interpret))
            loaded = load_module(module.source, self.prim_func.name, interpret)
            self._compiled[interpret] = (module, loaded)
        return self._compiled[interpret]

    def get_kernel_source(self, kernel_only: bool = True, interpret: bool | None = None) -> str:
        """The generated Triton source (for the GPU unless this machine has none)."""
        return self.lowered(default_interpret() if interpret is None else interpret).source

    @property
    def kernel_source(self) -> str:
        return self.get_kernel_source()

    @property
    def num_warps(self) -> int:
        return self.lowered(default_interpret()).launches[0].num_warps

    @property
    def params(self) -> list:
        return list(self.prim_func.params)

    # ---------------------------------------------------------------- calls
    def __call__(self, *args):
        func = self.prim_func
        names = [func.params[i].name for i in self._inputs]
        if len(args) != len(self._inputs):
            raise KernelCallError(
                f"{func.name} expects {len(self._inputs)} argument(s) ({', '.join(names)}), got {len(args)}"
            )
        values: dict = {}
        tensors: list[torch.Tensor | None] = [None] * len(func.params)
        device = None
        for i, arg in zip(self._inputs, args):
            param = func.params[i]
            if isinstance(param, ir.Buffer):
                self._check_tensor(param, arg, values)
                if device is None:
                    device = arg.device
                elif arg.device != device:
                    raise KernelCallError(
                        f"{func.name}: '{param.name}' is on {arg.device} but earlier tensors are on {device}"
                    )
                tensors[i] = arg
            else:
                if isinstance(arg, torch.Tensor) or not isinstance(arg, (int, float, bool)):
                    raise KernelCallError(f"{func.name}: '{param.name}' is a scalar {param.dtype.name}, got {type(arg).__name__}")
                values[param] = arg
        if device is None:
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        for size in func.sizes:
            if size not in values:
                raise KernelCallError(f"{func.name}: size '{size.name}' is not given by any input tensor's shape")
        for i in func.out_idx:
            param = func.params[i]
            shape = [host_eval(d, values) for d in param.shape]
            tensors[i] = torch.empty(shape, dtype=param.dtype.as_torch(), device=device)
        interpret = device.type != "cuda"
        if not interpret and not torch.cuda.is_available():
            raise KernelCallError(f"{func.name}: tensors are on {device} but CUDA is not available")
        module, loaded = self._compile(interpret)
        with interpreter_mode(interpret):
            for launch in module.launches:
                grid = tuple(host_eval(g, values) for g in launch.grid)
                if any(g <= 0 for g in grid):
                    continue
                launch_args = [tensors[func.params.index(a)] if isinstance(a, ir.Buffer) else values[a] for a in launch.args]
                getattr(loaded, launch.name)[grid](*launch_args, num_warps=launch.num_warps)
        outputs = [tensors[i] for i in func.out_idx]
        if not outputs:
            return None
        return outputs[0] if len(outputs) == 1 else outputs

    def _check_tensor(self, param: ir.Buffer, arg, values: dict) -> None:
        fname = self.prim_func.name
        if not isinstance(arg, torch.Tensor):
            raise KernelCallError(f"{fname}: '{param.name}' expects a torch.Tensor, got {type(arg).__name__}")
        want = param.dtype.as_torch()
        if arg.dtype != want:
            raise KernelCallError(f"{fname}: '{param.name}' expects dtype {want}, got {arg.dtype}")
        if arg.dim() != param.ndim:
            raise KernelCallError(
                f"{fname}: '{param.name}' expects a {param.ndim}-D tensor of shape {_fmt_shape(param.shape)}, "
                f"got shape {tuple(arg.shape)}"
            )
        for d, (dim, actual) in enumerate(zip(param.shape, arg.shape)):
            if isinstance(dim, int):
                if dim != actual:
                    raise KernelCallError(
                        f"{fname}: '{param.name}' expects shape {_fmt_shape(param.shape)}, got {tuple(arg.shape)}"
                    )
            elif isinstance(dim, ir.VarRef):
                bound = values.setdefault(dim.var, actual)
                if bound != actual:
                    raise KernelCallError(
                        f"{fname}: '{param.name}' dim {d} is {dim.var.name}={actual}, but an earlier tensor set "
                        f"{dim.var.name}={bound}"
                    )
        expected = [host_eval(s, values) for s in param.strides]
        if arg.numel() > 1 and any(st != e for st, e, n in zip(arg.stride(), expected, arg.shape) if n > 1):
            raise KernelCallError(
                f"{fname}: '{param.name}' must be contiguous (strides {tuple(expected)}), got strides "
                f"{tuple(arg.stride())}; call .contiguous() first"
            )


def _fmt_shape(shape) -> str:
    return "(" + ", ".join(str(d) if isinstance(d, int) else getattr(getattr(d, "var", None), "name", "?") for d in shape) + ")"


_ = math
