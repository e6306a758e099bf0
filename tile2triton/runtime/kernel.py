"""The compiled kernel users call: validates arguments, allocates outputs, launches Triton.

The launch path is built once per kernel (``_CallPlan``): per input a small tuple of what to
check (dtype object, rank, static shape, sizes to bind, contiguity), grids and output shapes
folded to constants where static, and the Triton arguments as positions in one slot list.  A
call runs only those cheap checks; when one fails, the detailed validator (``_diagnose``) runs
to name the parameter, the expectation and what was given.
"""

from __future__ import annotations

import operator
import os
import threading

import torch

from .. import ir
from ..codegen.emit import TritonModule, emit_module
from ..codegen.lower import LoweringOptions
from ..errors import KernelCallError
from .cache import interpreter_mode, load_module, stats
from .diagnostics import launch as launch_mapped
from .diagnostics import translate as translate_error
from .scratch import WithScratch

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


def host_fn(e):
    """``host_eval`` specialised once: a constant, or a closure over the sizes dict."""
    if isinstance(e, int):
        return e
    if isinstance(e, ir.Const):
        return e.value
    if isinstance(e, ir.Cast):
        return host_fn(e.value)
    if isinstance(e, ir.VarRef):
        var = e.var
        return lambda v: v[var]
    if isinstance(e, ir.BinOp) and e.op in _HOST_OPS:
        op, a, b = _HOST_OPS[e.op], host_fn(e.lhs), host_fn(e.rhs)
        if not callable(a) and not callable(b):
            return op(a, b)
        fa = a if callable(a) else (lambda v, a=a: a)
        fb = b if callable(b) else (lambda v, b=b: b)
        return lambda v: op(fa(v), fb(v))
    if isinstance(e, ir.Call) and e.fn in ("max", "min") and len(e.args) == 2:
        op = max if e.fn == "max" else min
        a, b = host_fn(e.args[0]), host_fn(e.args[1])
        fa = a if callable(a) else (lambda v, a=a: a)
        fb = b if callable(b) else (lambda v, b=b: b)
        return lambda v: op(fa(v), fb(v))
    raise KernelCallError(f"cannot evaluate {e!r} on the host")


def default_interpret() -> bool:
    return not torch.cuda.is_available()


_GPU_TARGETS = ("cuda", "hip", "rocm", "gpu")
_CPU_TARGETS = ("cpu", "llvm", "c", "interpreter", "interpret")


def target_kind(target) -> str | None:
    """``None`` (follow the tensors), ``"cuda"`` or ``"cpu"`` (Triton's interpreter)."""
    if target is None:
        return None
    if isinstance(target, dict):
        target = target.get("kind")
    kind = str(getattr(target, "kind", target)).split()[0].lower() if target else "auto"
    if kind in ("auto", "none"):
        return None
    if kind in _GPU_TARGETS:
        return "cuda"
    if kind in _CPU_TARGETS:
        return "cpu"
    raise ValueError(f"unknown target {target!r}: tile2triton runs on 'cuda' (Triton) or 'cpu' (Triton's interpreter)")


_INT_RANGE = {8: (-(2**7), 2**7), 16: (-(2**15), 2**15), 32: (-(2**31), 2**31), 64: (-(2**63), 2**63)}


class _TensorSpec:
    """What an input tensor must be (built once; checked on every call)."""

    __slots__ = ("index", "name", "param", "dtype", "ndim", "static_shape", "checks", "binds", "contiguous",
                 "stride_binds", "stride_checks")  # fmt: skip

    def __init__(self, index: int, param: ir.Buffer):
        self.index = index
        self.param = param
        self.name = param.name
        self.dtype = param.dtype.as_torch()
        self.ndim = param.ndim
        shape = tuple(param.shape)
        self.static_shape = shape if all(isinstance(d, int) for d in shape) else None
        self.checks = [(d, s) for d, s in enumerate(shape) if isinstance(s, int)]
        self.binds = [(d, s.var) for d, s in enumerate(shape) if isinstance(s, ir.VarRef)]
        default = _row_major(shape)
        strides = tuple(param.strides) if param.strides is not None else default
        self.contiguous = _same_exprs(strides, default)
        self.stride_binds = (
            [] if self.contiguous else [(d, s.var) for d, s in enumerate(strides) if isinstance(s, ir.VarRef)]
        )
        self.stride_checks = (
            [] if self.contiguous else [(d, s) for d, s in enumerate(strides) if not isinstance(s, ir.VarRef)]
        )


def _row_major(shape) -> tuple:
    strides, running = [], 1
    for d in reversed(shape):
        strides.append(running)
        running = running * d if isinstance(running, int) and isinstance(d, int) else ("*", running, d)
    return tuple(reversed(strides))


def _same_exprs(a, b) -> bool:
    """Do declared strides equal the row-major strides of the shape (structurally)?"""

    def norm(x):
        if isinstance(x, int):
            return x
        if isinstance(x, ir.Const):
            return x.value
        if isinstance(x, ir.VarRef):
            return ("var", id(x.var))
        if isinstance(x, ir.BinOp):
            return (x.op, norm(x.lhs), norm(x.rhs))
        if isinstance(x, tuple):
            return (x[0], norm(x[1]), norm(x[2]))
        return ("node", id(x))

    return len(a) == len(b) and all(norm(x) == norm(y) for x, y in zip(a, b))


def _scalar_spec(index: int, var: ir.Var) -> tuple:
    """(index, var, accepted Python types, low, high) of a run-time scalar parameter."""
    dt = var.dtype
    if dt.is_float:
        return (index, var, (float, int, bool), float("-inf"), float("inf"))
    if dt.kind == "bool":
        return (index, var, (bool, int), 0, 2)
    lo, hi = _INT_RANGE.get(dt.bits, (-(2**63), 2**63))
    if dt.kind == "uint":
        lo, hi = 0, 2**dt.bits
    return (index, var, (int, bool), lo, hi)


class _CallPlan:
    """Everything about a call that does not depend on the argument values."""

    def __init__(self, kernel: JITKernel):
        func = kernel.prim_func
        self.name = func.name
        self.n_in = len(kernel._inputs)
        self.input_names = [func.params[i].name for i in kernel._inputs]
        self.specs = []  # _TensorSpec, or (index, Var) for a scalar
        for i in kernel._inputs:
            p = func.params[i]
            self.specs.append(_TensorSpec(i, p) if isinstance(p, ir.Buffer) else _scalar_spec(i, p))
        self.n_params = len(func.params)
        self.sizes = list(func.sizes)
        self.outputs = []  # (index, torch dtype, static shape or [host fns])
        for i in func.out_idx:
            p = func.params[i]
            fns = [host_fn(d) for d in p.shape]
            static = None if any(callable(f) for f in fns) else tuple(fns)
            self.outputs.append((i, p.dtype.as_torch(), static, fns))
        # deferred checks: dims/strides given by expressions of sizes (e.g. 2 * N)
        self.expr_dims = []
        for spec in self.specs:
            if isinstance(spec, _TensorSpec):
                for d, s in enumerate(spec.param.shape):
                    if not isinstance(s, (int, ir.VarRef)):
                        self.expr_dims.append((spec, d, host_fn(s)))
        self.simple = not self.expr_dims and not any(
            isinstance(s, _TensorSpec) and (s.stride_binds or s.stride_checks) for s in self.specs
        )
        slots = {id(p): k for k, p in enumerate(func.params)}
        slots.update({id(v): self.n_params + k for k, v in enumerate(self.sizes)})
        self.slots = slots
        self.single = len(func.out_idx) == 1
        self.target = kernel.target


class _Launcher:
    """One lowering of a kernel for one device kind, with its Triton functions resolved."""

    def __init__(self, module: TritonModule, loaded, plan: _CallPlan):
        self.module = module
        self.loaded = loaded
        self.warm = False  # launched once (Triton compiled it, outside any interpreter mode)
        self.launches = []
        for launch in module.launches:
            grid_fns = [host_fn(g) for g in launch.grid]
            static = None if any(callable(f) for f in grid_fns) else tuple(grid_fns)
            positions = tuple(plan.slots[id(a)] for a in launch.args)
            fn = getattr(loaded, launch.name)
            if launch.scratch_bytes:  # shared buffers in global scratch: a hidden last argument
                fn = WithScratch(fn, launch.scratch_bytes)
            self.launches.append((fn, static, grid_fns, positions, launch.num_warps))


class JITKernel:
    """A compiled TileLang program (TileLang's ``JITKernel``)."""

    def __init__(self, func: ir.PrimFunc, target=None):
        self.prim_func = func
        self.out_idx = list(func.out_idx)
        self.target = target_kind(target)
        self._compiled: dict[bool, _Launcher] = {}
        self._compile_lock = threading.Lock()
        self._inputs = [i for i in range(len(func.params)) if i not in func.out_idx]
        self._plan = _CallPlan(self)

    # ---------------------------------------------------------------- compilation
    def lowered(self, interpret: bool) -> TritonModule:
        return self._compile(interpret).module

    def _compile(self, interpret: bool) -> _Launcher:
        launcher = self._compiled.get(interpret)
        if launcher is not None:
            return launcher
        with self._compile_lock:  # two threads' first calls lower and load the kernel once
            launcher = self._compiled.get(interpret)
            if launcher is None:
                module = emit_module(self.prim_func, LoweringOptions(interpret=interpret))
                loaded = load_module(module.source, self.prim_func.name, interpret)
                stats.compiles += 1
                launcher = _Launcher(module, loaded, self._plan)
                self._compiled[interpret] = launcher
        return launcher

    def get_kernel_source(self, kernel_only: bool = True, interpret: bool | None = None) -> str:
        """The generated Triton source (for the GPU unless this machine has none)."""
        if interpret is None:
            interpret = self.target == "cpu" if self.target is not None else default_interpret()
        return self.lowered(interpret).source

    @property
    def kernel_source(self) -> str:
        return self.get_kernel_source()

    @property
    def num_warps(self) -> int:
        return self.lowered(default_interpret()).launches[0].num_warps

    @property
    def params(self) -> list:
        return list(self.prim_func.params)

    def get_profiler(self, tensor_supply_type=None, device=None):
        """TileLang's ``kernel.get_profiler()`` (see tile2triton.profiler)."""
        from ..profiler import Profiler

        return Profiler(self, tensor_supply_type, device)

    # ---------------------------------------------------------------- calls
    def __call__(self, *args):
        plan = self._plan
        if len(args) != plan.n_in:
            raise KernelCallError(
                f"{plan.name} expects {plan.n_in} argument(s) ({', '.join(plan.input_names)}), got {len(args)}"
            )
        slots = [None] * plan.n_params
        values: dict = {}
        device = None
        dev_index = None
        ok = True
        for spec, arg in zip(plan.specs, args):
            if spec.__class__ is _TensorSpec:
                if not isinstance(arg, torch.Tensor) or arg.dtype is not spec.dtype:
                    ok = False
                    break
                if spec.static_shape is not None:
                    if arg.shape != spec.static_shape:
                        ok = False
                        break
                else:
                    if arg.ndim != spec.ndim:
                        ok = False
                        break
                    shape = arg.shape
                    for d, s in spec.checks:
                        if shape[d] != s:
                            ok = False
                    for d, var in spec.binds:
                        if values.setdefault(var, shape[d]) != shape[d]:
                            ok = False
                    if not ok:
                        break
                if spec.contiguous and not arg.is_contiguous():
                    ok = False
                    break
                index = arg.get_device()  # an int: cheaper than comparing torch.device objects
                if index < 0 and not arg.is_cpu:  # meta, mps, ...: the detailed check names it
                    ok = False
                    break
                if dev_index is None:
                    dev_index, device = index, arg.device
                elif index != dev_index:
                    ok = False
                    break
                slots[spec.index] = arg
            else:
                i, var, types, lo, hi = spec
                if type(arg) in types and lo <= arg < hi:
                    values[var] = slots[i] = arg
                else:
                    ok = False
                    break
        if not ok or not plan.simple:
            values, device = self._diagnose(args, slots)
        for size in plan.sizes:
            if size not in values:
                self._check_sizes(values)
        if device is None:  # no tensor inputs: the target's device, else CUDA when there is one
            device = torch.device(
                "cpu" if self.target == "cpu" or (self.target is None and default_interpret()) else "cuda"
            )
        interpret = dev_index < 0 if dev_index is not None and ok else device.type != "cuda"
        if plan.target is not None and (plan.target == "cpu") != interpret:
            self._wrong_target(args, device)
        for i, dtype, static, fns in plan.outputs:
            shape = static if static is not None else [f(values) if callable(f) else f for f in fns]
            slots[i] = torch.empty(shape, dtype=dtype, device=device)
        if plan.sizes:
            slots.extend(values[s] for s in plan.sizes)
        launcher = self._compiled.get(interpret) or self._compile(interpret)
        if launcher.warm and (not interpret or os.environ.get("TRITON_INTERPRET") == "1"):
            self._launch(launcher, slots, values)
        else:  # the interpreter reads TRITON_INTERPRET at launch; a GPU kernel's first launch compiles
            with interpreter_mode(interpret):
                self._launch(launcher, slots, values)
            launcher.warm = True
        if plan.single:
            return slots[plan.outputs[0][0]]
        if not plan.outputs:
            return None
        return [slots[i] for i, *_ in plan.outputs]

    @staticmethod
    def _launch(launcher: _Launcher, slots: list, values: dict) -> None:
        for fn, static, grid_fns, positions, num_warps in launcher.launches:
            grid = static if static is not None else tuple([f(values) if callable(f) else f for f in grid_fns])
            if min(grid) <= 0:
                continue
            run = getattr(fn, "run", None)
            if run is None or not launcher.warm:  # first launch: Triton errors mapped to the TileLang line
                launch_mapped(launcher, fn, grid, [slots[k] for k in positions], num_warps)
                continue
            try:  # fn.run(...) is what fn[grid](...) calls, minus a lambda per call
                run(*[slots[k] for k in positions], grid=grid, warmup=False, num_warps=num_warps)
            except Exception as exc:  # mapped to the TileLang line where possible, as launch_mapped does
                mapped = translate_error(exc, launcher.module, getattr(launcher.loaded, "__file__", None))
                if mapped is None:
                    raise
                raise mapped from exc

    # ---------------------------------------------------------------- validation (slow path)
    def _diagnose(self, args, slots) -> tuple[dict, torch.device | None]:
        """Check every argument in detail; raise a KernelCallError naming the first bad one."""
        func = self.prim_func
        fname = func.name
        values: dict = {}
        device, first = None, None
        bound_by: dict = {}
        for spec, arg in zip(self._plan.specs, args):
            if isinstance(spec, _TensorSpec):
                self._check_tensor(spec, arg, values, bound_by)
                if arg.device.type not in ("cuda", "cpu"):
                    raise KernelCallError(
                        f"{fname}: parameter '{spec.name}' is on {arg.device}; tile2triton runs on cuda tensors "
                        "(Triton) or cpu tensors (Triton's interpreter)"
                    )
                if device is None:
                    device, first = arg.device, spec.name
                elif arg.device != device:
                    raise KernelCallError(
                        f"{fname}: parameter '{spec.name}' is on {arg.device}, but '{first}' is on {device}; "
                        "all tensors must be on one device"
                    )
                slots[spec.index] = arg
            else:
                i, var = spec[:2]
                self._check_scalar(var, arg)
                values[var] = slots[i] = arg
        for spec, d, fn in self._plan.expr_dims:
            arg = args[self._inputs.index(spec.index)]
            want = fn(values) if callable(fn) else fn
            if arg.shape[d] != want:
                raise KernelCallError(
                    f"{fname}: parameter '{spec.name}' expects shape {_fmt_shape(spec.param.shape, values)}, "
                    f"got {tuple(arg.shape)} (dim {d} should be {want})"
                )
        for spec, arg in zip(self._plan.specs, args):
            if isinstance(spec, _TensorSpec) and not spec.contiguous:
                self._check_strides(spec, arg, values)
        return values, device

    def _check_tensor(self, spec: _TensorSpec, arg, values: dict, bound_by: dict) -> None:
        fname, name, param = self.prim_func.name, spec.name, spec.param
        decl = f"T.Tensor({_fmt_shape(param.shape)}, {param.dtype.name})"
        if not isinstance(arg, torch.Tensor):
            raise KernelCallError(f"{fname}: parameter '{name}' expects a torch.Tensor {decl}, got {_describe(arg)}")
        if arg.dtype != spec.dtype:
            raise KernelCallError(f"{fname}: parameter '{name}' expects dtype {spec.dtype}, got {arg.dtype}")
        if arg.dim() != spec.ndim:
            raise KernelCallError(
                f"{fname}: parameter '{name}' expects a {spec.ndim}-D tensor of shape {_fmt_shape(param.shape)}, "
                f"got a {arg.dim()}-D tensor of shape {tuple(arg.shape)}"
            )
        for d, want in spec.checks:
            if arg.shape[d] != want:
                raise KernelCallError(
                    f"{fname}: parameter '{name}' expects shape {_fmt_shape(param.shape)}, got {tuple(arg.shape)} "
                    f"(dim {d} should be {want})"
                )
        for d, var in spec.binds:
            actual = arg.shape[d]
            if var in values and values[var] != actual:
                other, od = bound_by[var]
                raise KernelCallError(
                    f"{fname}: parameter '{name}' has shape {tuple(arg.shape)}: dim {d} gives {var.name}={actual}, "
                    f"but '{other}' dim {od} gave {var.name}={values[var]}"
                )
            values[var] = actual
            bound_by.setdefault(var, (name, d))
        for d, var in spec.stride_binds:
            actual = arg.stride(d)
            if var in values and values[var] != actual:
                raise KernelCallError(
                    f"{fname}: parameter '{name}' stride {d} gives {var.name}={actual}, "
                    f"but {var.name}={values[var]} elsewhere"
                )
            values[var] = actual
        if spec.contiguous and not arg.is_contiguous():
            raise KernelCallError(
                f"{fname}: parameter '{name}' must be contiguous (row-major strides "
                f"{_fmt_shape(_row_major_values(arg.shape))}), got strides {tuple(arg.stride())}; "
                "pass .contiguous(), or declare it with T.StridedTensor(shape, strides, dtype)"
            )

    def _check_strides(self, spec: _TensorSpec, arg, values: dict) -> None:
        for d, s in spec.stride_checks:
            want = host_eval(s, values)
            if arg.shape[d] > 1 and arg.stride(d) != want:
                raise KernelCallError(
                    f"{self.prim_func.name}: parameter '{spec.name}' expects stride {want} in dim {d} "
                    f"(declared strides {_fmt_shape(spec.param.strides, values)}), got strides {tuple(arg.stride())}"
                )

    def _check_scalar(self, var: ir.Var, arg) -> None:
        fname, dt = self.prim_func.name, var.dtype
        ok = isinstance(arg, (int, float, bool)) and not isinstance(arg, torch.Tensor)
        if ok and not dt.is_float and isinstance(arg, float):
            ok = False
        if not ok:
            raise KernelCallError(f"{fname}: parameter '{var.name}' expects a {dt.name} scalar, got {_describe(arg)}")
        if dt.is_int and isinstance(arg, int) and dt.bits in _INT_RANGE:
            lo, hi = _INT_RANGE[dt.bits] if dt.kind == "int" else (0, 2**dt.bits)
            if not lo <= arg < hi:
                raise KernelCallError(
                    f"{fname}: parameter '{var.name}' expects a {dt.name} scalar, got {arg} (out of range)"
                )

    def _check_sizes(self, values: dict) -> None:
        for size in self._plan.sizes:
            if size not in values:
                raise KernelCallError(
                    f"{self.prim_func.name}: size '{size.name}' is not given by any input tensor's shape"
                )

    def _wrong_target(self, args, device) -> None:
        name = next((s.name for s in self._plan.specs if isinstance(s, _TensorSpec)), None)
        where = f"parameter '{name}' is on {device}" if name else f"the outputs would be on {device}"
        raise KernelCallError(
            f"{self.prim_func.name}: compiled for target '{self.target}', but {where}"
            + ("; move the tensors to the GPU" if self.target == "cuda" else "; pass CPU tensors")
        )


def _describe(arg) -> str:
    if isinstance(arg, torch.Tensor):
        return f"a torch.Tensor of shape {tuple(arg.shape)} and dtype {arg.dtype}"
    return f"{type(arg).__name__} {arg!r}"


def _row_major_values(shape) -> tuple:
    strides, running = [], 1
    for d in reversed(tuple(shape)):
        strides.append(running)
        running *= d
    return tuple(reversed(strides))


def _fmt_shape(shape, values: dict | None = None) -> str:
    parts = []
    for d in shape:
        if isinstance(d, int):
            parts.append(str(d))
        elif isinstance(d, ir.VarRef):
            parts.append(d.var.name if not values or d.var not in values else f"{d.var.name}={values[d.var]}")
        else:
            parts.append(_fmt_expr(d))
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _fmt_expr(e) -> str:
    if isinstance(e, int):
        return str(e)
    if isinstance(e, ir.Const):
        return str(e.value)
    if isinstance(e, ir.VarRef):
        return e.var.name
    if isinstance(e, ir.BinOp):
        return f"({_fmt_expr(e.lhs)} {e.op} {_fmt_expr(e.rhs)})"
    if isinstance(e, ir.Cast):
        return _fmt_expr(e.value)
    return "?"
