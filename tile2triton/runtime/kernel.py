"""The compiled kernel users call: validates arguments, allocates outputs, launches Triton.

The launch path is built once per kernel (``_CallPlan``): per input a small tuple of what to
check (dtype object, rank, static shape, sizes to bind, contiguity), grids and output shapes
folded to constants where static, and the Triton arguments as positions in one slot list.  A
call runs only those cheap checks; when one fails, the detailed validator (``_diagnose``) runs
to name the parameter, the expectation and what was given.
"""

from __future__ import annotations

import contextlib
import itertools
import linecache
import operator
import os
import threading
from collections.abc import Callable

import torch
import triton
import triton.language as tl

try:
    from triton.runtime import _allocation
except ImportError:  # a Triton without device-side allocations has no tensor descriptors either
    _allocation = None

from .. import ir
from ..codegen.emit import TritonModule, emit_module
from ..codegen.lower import LoweringOptions
from ..errors import KernelCallError, user_facing
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


def tensor_descriptors_supported(interpret: bool) -> bool:
    """Tensor-descriptor (TMA) loads: on Hopper and newer with a Triton that has them.
    ``TILE2TRITON_TENSOR_DESCRIPTORS=0`` turns them off, ``=1`` on (the interpreter runs them too)."""
    forced = os.environ.get("TILE2TRITON_TENSOR_DESCRIPTORS")
    if forced is not None:
        return forced not in ("0", "", "false", "no")
    if interpret or not hasattr(tl, "make_tensor_descriptor") or not torch.cuda.is_available():
        return False
    return torch.cuda.get_device_capability()[0] >= 9


def _cuda_workspace(size: int, alignment: int, stream):
    return torch.empty(size, dtype=torch.int8, device="cuda")


def _ensure_allocator() -> None:
    """Device-side tensor descriptors live in a workspace Triton asks an allocator for; install
    one unless the user did (the setting is per thread: a context variable)."""
    if _allocation is not None and _allocation._allocator.get() is _allocation._NULL_ALLOCATOR:
        triton.set_allocator(_cuda_workspace)


# ``os.environ.get`` encodes the key on every call (microseconds); the mapping it reads is cheap
_ENV_DATA = getattr(os.environ, "_data", None)
_ENV_KEY = os.environ.encodekey("TRITON_INTERPRET") if _ENV_DATA is not None else None
_ENV_ONE = os.environ.encodevalue("1") if _ENV_DATA is not None else None


def _interpret_env_on() -> bool:
    """Is TRITON_INTERPRET=1 set now (a warm interpreted launch then needs no mode switch)?"""
    if _ENV_DATA is not None:
        return _ENV_DATA.get(_ENV_KEY) == _ENV_ONE
    return os.environ.get("TRITON_INTERPRET") == "1"


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
        if isinstance(running, int) and isinstance(d, int):
            running = running * d
        else:  # as the binder builds them: the innermost dynamic extent is its own stride
            running = d if isinstance(running, int) and running == 1 else ("*", running, d)
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
        # slots of tensors read through tensor descriptors: their base must be 16-byte aligned
        self.aligned = sorted({plan.slots[id(a)] for launch in module.launches for a in launch.aligned})


class _Unsupported(Exception):
    """A signature the launcher generator does not handle: calls keep the generic path."""


_MISSING = object()  # a generated launcher's default for arguments not given (then: the generic path)
_NULL_CONTEXT = contextlib.nullcontext()


class _Source:
    """Lines of a generated launcher and the objects its names refer to."""

    def __init__(self):
        self.lines: list[str] = []
        self.env: dict = {
            "Tensor": torch.Tensor,
            "torch": torch,  # looked up per call, so a patched torch.empty (the tests' poison) is seen
            "MISSING": _MISSING,
            "NULL_CONTEXT": _NULL_CONTEXT,
            "interpreter_mode": interpreter_mode,
            "interpret_env_on": _interpret_env_on,
            "translate_error": translate_error,
        }

    def name(self, value, prefix: str) -> str:
        """A global name of the generated function bound to ``value``."""
        name = f"{prefix}{len(self.env)}"
        self.env[name] = value
        return name

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    def expr(self, e, names: dict) -> str:
        """A grid, shape or stride expression as Python over the local names of the sizes."""
        if isinstance(e, int):
            return repr(e)
        if isinstance(e, ir.Const):
            return repr(e.value) if type(e.value) is int else self.name(e.value, "c")
        if isinstance(e, ir.VarRef):
            if e.var not in names:
                raise _Unsupported(f"size {e.var.name} is not bound by the arguments")
            return names[e.var]
        if isinstance(e, ir.BinOp) and e.op in _HOST_OPS:
            return f"({self.expr(e.lhs, names)} {e.op} {self.expr(e.rhs, names)})"
        if isinstance(e, ir.Call) and e.fn in ("max", "min") and len(e.args) == 2:
            return f"{e.fn}({self.expr(e.args[0], names)}, {self.expr(e.args[1], names)})"
        if isinstance(e, ir.Cast):
            return self.expr(e.value, names)
        raise _Unsupported(f"cannot evaluate {e!r} on the host")


def _all(conds: list) -> str:
    return " and ".join(conds) if conds else "True"


def _generate_launcher(kernel: JITKernel) -> Callable | None:
    """A launcher specialised to ``kernel``'s signature and its warm lowerings, or None.

    The generated function takes the call's arguments, runs the checks of the generic path
    unrolled for this signature (cheapest first), and launches; an argument that fails any
    check, or a device kind without a warm lowering, sends the call to ``kernel._call``.
    """
    plan = kernel._plan
    kinds = [(interp, launcher) for interp, launcher in sorted(kernel._compiled.items(), key=lambda kv: str(kv[0]))
             if isinstance(interp, bool)  # not the variants for misaligned tensors (the generic path's)
             and launcher.warm and (plan.target is None or (plan.target == "cpu") == interp)]  # fmt: skip
    tensors = [j for j, spec in enumerate(plan.specs) if spec.__class__ is _TensorSpec]
    if not kinds or not tensors:
        return None  # no tensor: the device comes from the target (the generic path decides)
    try:
        src = _launcher_source(kernel, plan, kinds, tensors)
    except _Unsupported:
        return None
    src.env["slow"] = kernel._call
    return exec_generated("\n".join(src.lines) + "\n", f"launcher {plan.name}", src.env, "launch")


def exec_generated(source: str, what: str, env: dict, name: str) -> Callable:
    """Define function ``name`` from generated ``source``; tracebacks show its lines, and
    ``fn.source`` holds it (for debugging: ``kernel.__call__.source``)."""
    filename = f"<tile2triton {what} {next(_GENERATED)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), env)  # noqa: S102 - generated by the caller from a signature
    fn = env[name]
    fn.source = source
    return fn


_GENERATED = itertools.count()


def _launcher_source(kernel: JITKernel, plan: _CallPlan, kinds: list, tensors: list) -> _Source:
    src = _Source()
    args = [f"a{j}" for j in range(plan.n_in)]
    names: dict = {}  # Var -> the local name holding its value
    scalar_vars = set()
    head = ["not more"]  # cheap checks first: argument count, classes, dtypes, scalars
    for j, spec in enumerate(plan.specs):
        a = args[j]
        if spec.__class__ is _TensorSpec:  # the exact class: a subclass takes the generic path
            head += [f"{a}.__class__ is Tensor", f"{a}.dtype is {src.name(spec.dtype, 'dtype')}"]
        else:
            _, var, types, lo, hi = spec
            head += [f"{a}.__class__ in {src.name(types, 'types')}", f"{src.name(lo, 'lo')} <= {a} < {src.name(hi, 'hi')}"]  # fmt: skip
            if var in names:
                raise _Unsupported("a scalar given twice")
            names[var] = a
            scalar_vars.add(var)

    ranks, binds, checks = [], [], []

    def bind(var, value: str) -> None:
        if var in scalar_vars:  # the generic path lets the scalar win without comparing
            raise _Unsupported("a size that is also a scalar parameter")
        if var in names:
            checks.append(f"{value} == {names[var]}")
        else:
            names[var] = f"v{len(names)}"
            binds.append(f"{names[var]} = {value}")

    for j in tensors:
        spec, a = plan.specs[j], args[j]
        if spec.static_shape is not None:
            ranks.append(f"s{j} == {spec.static_shape!r}")
        else:
            ranks.append(f"len(s{j}) == {spec.ndim}")
            checks += [f"s{j}[{d}] == {want!r}" for d, want in spec.checks]
            for d, var in spec.binds:
                bind(var, f"s{j}[{d}]")
        if spec.stride_binds or spec.stride_checks:
            binds.append(f"t{j} = {a}.stride()")
            for d, var in spec.stride_binds:
                bind(var, f"t{j}[{d}]")
    # checks of expressions over the sizes, once every size is bound
    for spec, d, _ in plan.expr_dims:
        checks.append(f"s{plan.specs.index(spec)}[{d}] == {src.expr(spec.param.shape[d], names)}")
    for j in tensors:
        spec = plan.specs[j]
        for d, want in spec.stride_checks:  # as _check_strides: a dim of extent <= 1 has any stride
            checks.append(f"(s{j}[{d}] <= 1 or t{j}[{d}] == {src.expr(want, names)})")
        if spec.contiguous:
            checks.append(f"{args[j]}.is_contiguous()")
    for size in plan.sizes:
        if size not in names:
            raise _Unsupported(f"size {size.name} is not given by the arguments")

    params = kernel.prim_func.params
    slot = {i: args[j] for j, i in enumerate(kernel._inputs)}
    slot.update({i: f"o{k}" for k, (i, *_) in enumerate(plan.outputs)})
    slot.update({plan.n_params + k: names[size] for k, size in enumerate(plan.sizes)})
    first = args[tensors[0]]
    if plan.single:
        result = "o0"
    else:
        result = "[" + ", ".join(f"o{k}" for k in range(len(plan.outputs))) + "]" if plan.outputs else "None"

    src.emit(0, "def launch(" + "".join(f"{a}=MISSING, " for a in args) + "*more):")
    src.emit(1, f"if {_all(head)}:")
    for j in tensors:
        src.emit(2, f"s{j} = {args[j]}.shape")
    src.emit(2, f"if {_all(ranks)}:")
    for line in binds:
        src.emit(3, line)
    src.emit(3, f"if {_all(checks)}:")
    for interp, launcher in kinds:
        # tensors read through tensor descriptors: a misaligned base takes the generic path
        aligned = [f"{slot[k]}.data_ptr() % 16 == 0" for k in launcher.aligned if slot.get(k) in args]
        if interp:  # Triton's interpreter: CPU tensors, under TRITON_INTERPRET=1
            src.emit(4, f"if {_all([f'{args[j]}.is_cpu' for j in tensors] + aligned)}:")
        else:  # all on one CUDA device
            if len(tensors) > 1:
                src.emit(4, f"dev = {first}.get_device()")
            conds = [f"{first}.is_cuda"]
            conds += [f"{args[j]}.is_cuda and {args[j]}.get_device() == dev" for j in tensors[1:]]
            src.emit(4, f"if {_all(conds + aligned)}:")
        for k, (i, dtype, static, _) in enumerate(plan.outputs):
            shape = repr(static) if static is not None else (
                "(" + "".join(f"{src.expr(d, names)}, " for d in params[i].shape) + ")")  # fmt: skip
            src.emit(5, f"o{k} = torch.empty(size={shape}, dtype={src.name(dtype, 'dtype')}, device={first}.device)")
        depth = 5
        if launcher.aligned and not interp:
            src.env["ensure_allocator"] = _ensure_allocator
            src.emit(5, "ensure_allocator()")
        if interp:
            src.emit(5, "with NULL_CONTEXT if interpret_env_on() else interpreter_mode(True):")
            depth = 6
        _emit_launches(src, depth, launcher, names, slot)
        src.emit(5, f"return {result}")
    src.emit(1, "return slow(*[a for a in (" + "".join(f"{a}, " for a in args) + ") if a is not MISSING], *more)")
    return src


def _emit_launches(src: _Source, depth: int, launcher: _Launcher, names: dict, slot: dict) -> None:
    """The Triton launches of one lowering, errors mapped to the TileLang line as in ``_launch``."""
    module = src.name(launcher.module, "module")
    path = src.name(getattr(launcher.loaded, "__file__", None), "path")
    launched = False
    for (fn, _, _, positions, num_warps), spec in zip(launcher.launches, launcher.module.launches):
        run = getattr(fn, "run", None)
        if run is None or any(k not in slot for k in positions):
            raise _Unsupported("a launch the generic path makes")
        grid, computed, positive = [], [], []
        for g in spec.grid:
            f = host_fn(g)
            if callable(f):
                grid.append(f"g{len(src.lines)}_{len(grid)}")
                computed.append(f"{grid[-1]} = {src.expr(g, names)}")
                positive.append(f"{grid[-1]} > 0")
            elif f <= 0:
                break
            else:
                grid.append(repr(f))
        else:  # as _launch: a grid with an empty dimension launches nothing
            for line in computed:
                src.emit(depth, line)
            d = depth
            if positive:
                src.emit(d, f"if {_all(positive)}:")
                d += 1
            call_args = "".join(f"{slot[k]}, " for k in positions)
            grid_src = "(" + "".join(f"{g}, " for g in grid) + ")"
            src.emit(d, "try:")
            src.emit(d + 1, f"{src.name(run, 'run')}({call_args}grid={grid_src}, warmup=False, num_warps={num_warps})")
            src.emit(d, "except Exception as exc:")
            src.emit(d + 1, f"mapped = translate_error(exc, {module}, {path})")
            src.emit(d + 1, "if mapped is None:")
            src.emit(d + 2, "raise")
            src.emit(d + 1, "raise mapped from exc")
            launched = True
    if not launched:
        src.emit(depth, "pass")


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
        self._entry: Callable = self._call  # what a call runs: the generic path until a lowering is warm

    # ``kernel(*args)`` is ``kernel._entry(*args)`` without a Python frame in between (a method
    # forwarding *args costs more than the generated launcher's checks)
    __call__ = property(operator.attrgetter("_entry"), doc="Run the kernel: ``kernel(*inputs)`` -> its outputs.")

    # ---------------------------------------------------------------- compilation
    def lowered(self, interpret: bool) -> TritonModule:
        return self._compile(interpret).module

    def _compile(self, interpret: bool, descriptors: bool | None = None) -> _Launcher:
        """The kernel lowered for the interpreter or the GPU; ``descriptors=False``: the variant
        without tensor descriptors (for tensors whose base is not 16-byte aligned)."""
        default = tensor_descriptors_supported(interpret)
        if descriptors is None:
            descriptors = default
        key = interpret if descriptors == default else (interpret, descriptors)
        launcher = self._compiled.get(key)
        if launcher is not None:
            return launcher
        with self._compile_lock:  # two threads' first calls lower and load the kernel once
            launcher = self._compiled.get(key)
            if launcher is None:
                options = LoweringOptions(interpret=interpret, tensor_descriptors=descriptors)
                module = emit_module(self.prim_func, options)
                loaded = load_module(module.source, self.prim_func.name, interpret)
                stats.compiles += 1
                launcher = _Launcher(module, loaded, self._plan)
                self._compiled[key] = launcher
        return launcher

    @user_facing
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
    @user_facing
    def _call(self, *args):
        """The generic call path: checks, allocation and launch driven by the call plan."""
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
        if launcher.aligned:
            if any(slots[k].data_ptr() % 16 for k in launcher.aligned):
                launcher = self._compile(interpret, descriptors=False)
            elif not interpret:
                _ensure_allocator()
        if launcher.warm and (not interpret or _interpret_env_on()):
            self._launch(launcher, slots, values)
        else:  # the interpreter reads TRITON_INTERPRET at launch; a GPU kernel's first launch compiles
            with interpreter_mode(interpret):
                self._launch(launcher, slots, values)
            if not launcher.warm:
                launcher.warm = True
                self._entry = _generate_launcher(self) or self._call
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
