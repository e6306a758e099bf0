"""Launchers: one lowering's Triton functions resolved (``Lowered``), each GPU launch bound to the
kernel Triton compiled for it (``DirectLaunch``), and the Python launcher generated for a
kernel's signature once a lowering is warm (``generate_launcher``).

The generated function takes the call's arguments, runs the generic path's checks unrolled for
this signature (cheapest first), allocates the outputs and launches; an argument that fails any
check, or a device kind without a warm lowering, sends the call to the generic path
(``JITKernel._call`` in runtime/kernel.py), which names what is wrong.
"""

from __future__ import annotations

import inspect
import itertools
import linecache
import types
from collections.abc import Callable

import torch
from triton import knobs
from triton.runtime.driver import driver
from triton.runtime.jit import JITFunction

from .. import settings
from ..codegen.emit import TritonModule
from ..ir.evaluate import NotHostEvaluable, PythonSource, host_fn
from . import static_shared
from .cache import interpreted_launch, interpreter_mode
from .diagnostics import translate as translate_error
from .host_descriptors import EncodedDescriptors, WithHostDescriptors, descriptors_for, launch_specs
from .launch_args import ExtraArguments, size_multiple
from .plan import CallPlan, TensorSpec, plan_host_fn
from .scratch import WithScratch, scratch_size, scratch_tensor
from .target import cuda_device_guard, ensure_allocator
from .workspaces import KeptWorkspace

_HOOKS = knobs.runtime  # launch_enter_hook / launch_exit_hook: chains Proton and others add to


def scalar_key(value):
    """What Triton specialises a scalar argument on, or finer: an int's class (i32, i64, u64), whether
    it is 1 (a constant) and whether it is a multiple of 16; a float or bool only by its class.
    (A size passed as a multiple too is keyed by its last 3 bits as well: ``DirectLaunch.multiples``.)"""
    if value.__class__ is int:
        return (value == 1, value % 16 == 0, -0x80000000 <= value <= 0x7FFFFFFF, value <= 0x7FFFFFFFFFFFFFFF)
    return value.__class__


# CudaLauncher.__call__'s parameters where it hands its arguments to the C launcher as
# ``launch(grid x3, stream, function, cooperative, pdl, global scratch, profile scratch, *args)``
# (Triton 3.6; Triton 3.9's takes the hooks and signatures in another order: not matched)
_C_LAUNCH_CALL = ("self", "gridX", "gridY", "gridZ", "stream", "function", "args")
_C_LAUNCH_ABI: dict = {}  # launcher class -> whether its __call__ is the form above


def launch_entry(kernel, run) -> tuple:
    """``(launch, head)`` of a compiled kernel and its launcher ``run`` (``kernel.run``, or the copy of it
    that takes encoded descriptors): ``launch(gx, gy, gz, stream, *head, *args)`` is
    ``run(gx, gy, gz, stream, kernel.function, kernel.packed_metadata, None, None, None, *args)``, the
    launch ``JITFunction.run`` ends with, without launch hooks.  Where ``run`` is Triton's CUDA launcher
    and adds only fixed values to its C function (no global or profile scratch, no Python wrapper for
    tensor-descriptor arguments), ``launch`` is that C function: ``CudaLauncher.__call__`` is a Python
    frame that builds two closures per launch, about 1-2 us of the H200 host's time for two launches
    (benchmarks/hostcost_probe.py, BENCHMARKS.md's session 26)."""
    cls = type(run)
    abi = _C_LAUNCH_ABI.get(cls)
    if abi is None:
        try:
            params = tuple(inspect.signature(cls.__call__).parameters)
        except (TypeError, ValueError):
            params = ()
        abi = _C_LAUNCH_ABI[cls] = cls.__module__ == "triton.backends.nvidia.driver" and params == _C_LAUNCH_CALL
    c = getattr(run, "launch", None)
    direct = abi and not getattr(run, "global_scratch_size", 1) and not getattr(run, "profile_scratch_size", 1)
    if direct and not isinstance(c, types.FunctionType):  # not the tensor descriptors' Python wrapper
        cooperative, pdl = run.launch_cooperative_grid, run.launch_pdl
        return c, (kernel.function, cooperative, pdl, None, None, kernel.packed_metadata, None, None, None)
    return run, (kernel.function, kernel.packed_metadata, None, None, None)


class WithSizeMultiples(ExtraArguments):
    """A generated Triton function whose callers do not pass its trailing ``tl.constexpr`` size
    multiples: ``fn[grid](...)`` and ``fn.run(...)`` as for the function itself, each computed from
    the size at its index in the arguments and appended after all of them (descriptors and scratch
    included: this wraps the Triton function itself)."""

    def __init__(self, fn, indices: tuple):
        super().__init__(fn)
        self.indices = indices

    def arguments(self, args: tuple, grid) -> tuple:
        return (*args, *[size_multiple(args[i]) for i in self.indices])


class DirectLaunch:
    """One Triton function's GPU launches, through the compiled kernel Triton chose for them.

    ``JITFunction.run`` binds the arguments to the signature, specialises each one, builds a
    cache key string, checks the module's globals and builds launch metadata on every call (6 us
    of Python per launch or more on a 2-core CI host, ten times this path's: benchmarks/launch_cost.py
    --host-only; the generated launcher's own checks take under 1 us).  Here the
    caller hands a key that determines Triton's specialisation (per tensor whether its address is
    16-byte aligned, per scalar ``scalar_key``; dtypes are fixed by the call's checks) and the
    compiled kernel found under it launches directly: ``CompiledKernel.run(grid, stream,
    function, metadata, ...)`` as ``JITFunction.run`` ends, with the same arguments (Triton 3.6
    and 3.9), or the C function that call reaches (``launch_entry``).  A new key, launch hooks (``knobs.runtime.launch_enter_hook`` / ``exit``, e.g.
    Proton) or a pre-run hook take ``JITFunction.run``, which compiles or finds the kernel; its
    result is remembered under the key.  Not re-read per launch: Triton options set after the
    first launch (``TRITON_DEBUG``) and the generated module's globals (constants it never rebinds).
    """

    __slots__ = ("fn", "num_warps", "scratch_bytes", "kernels", "entries", "stream", "descriptors", "encoded", "cache_descriptors", "multiples", "tails", "kept_scratch")  # fmt: skip

    def __init__(
        self, fn: JITFunction, num_warps: int, scratch_bytes: int = 0, descriptors: tuple = (), multiples: tuple = ()
    ):
        self.fn = fn
        self.num_warps = num_warps
        self.scratch_bytes = scratch_bytes  # > 0: shared buffers in global scratch, a hidden last argument
        self.kept_scratch = KeptWorkspace(torch.uint8) if scratch_bytes and settings.current().keep_workspaces else None
        self.descriptors = descriptors  # host-made descriptors: (index in args, block shape, Gluon layout dtype)
        # sizes passed as multiples too, last (their indices in args: WithSizeMultiples); per key the
        # multiples, which the key determines (callers add each such size's last 3 bits to it)
        self.multiples = multiples
        self.tails: dict = {}
        self.kernels: dict = {}  # key (device index first) -> Triton's CompiledKernel (the record)
        self.entries: dict = {}  # key -> launch_entry of its kernel (and encoded descriptors' launcher): the launch
        # key -> the kernel's launch with its descriptors encoded once per tensor (None: Triton's
        # launcher encodes TensorDescriptor objects per call): TILE2TRITON_HOST_DESCRIPTOR_CACHE
        self.encoded: dict = {}
        self.cache_descriptors = bool(descriptors) and settings.current().host_descriptor_cache
        self.stream = None  # the driver's current-stream function, bound once the driver is up

    @classmethod
    def of(cls, fn, num_warps: int) -> DirectLaunch | None:
        """The direct launch of a GPU Triton function, None for one launched another way
        (interpreted, or a JITFunction subclass with its own ``run``)."""
        scratch, descriptors, multiples = 0, (), ()
        if isinstance(fn, WithScratch):
            fn, scratch = fn.fn, fn.bytes_per_program
        if isinstance(fn, WithHostDescriptors):
            fn, descriptors = fn.fn, fn.specs
        if isinstance(fn, WithSizeMultiples):
            fn, multiples = fn.fn, fn.indices
        if not isinstance(fn, JITFunction) or type(fn).run is not JITFunction.run:
            return None
        # constexpr parameters: only the size multiples, passed explicitly (no default for run to bind)
        if sum(p.is_constexpr for p in fn.params) != len(multiples):
            return None
        return cls(fn, num_warps, scratch, descriptors, multiples)

    def __call__(
        self, grid: tuple, key: tuple, args: tuple, checked: tuple | None = None, addresses: tuple | None = None
    ) -> None:
        """Launch on ``grid`` (three ints); ``key[0]`` is the current CUDA device's index.
        ``checked``: from a generated launcher, a key that determines the host descriptors'
        tensormaps given the launcher's checks (``_descriptor_parts``); ``addresses``: ``args``
        with each tensor as its address, passed to Triton's C launcher where the descriptors are
        encoded already (``launch_addresses`` says why), ``args`` serving the descriptors."""
        entry = self.entries.get(key)
        if entry is not None:
            try:  # empty hook chains do nothing: launch without them and their metadata
                idle = not (_HOOKS.launch_enter_hook.calls or _HOOKS.launch_exit_hook.calls or self.fn.pre_run_hooks)
            except AttributeError:  # a hook that is not a chain: JITFunction.run hands it over
                idle = False
            if idle:
                g0, g1, g2 = grid
                if self.descriptors or self.scratch_bytes:
                    encoded = self.encoded.get(key)
                    if encoded is not None:  # the descriptors' tensormaps, shapes and strides, then scratch
                        tail = (*(args if addresses is None else addresses), *encoded.arguments(args, checked))
                        if self.scratch_bytes:
                            tail = (*tail, self._scratch(grid, args, key))
                        args = (*tail, *self.tails[key]) if self.multiples else tail
                    else:
                        args = self._arguments(grid, key, args)
                elif self.multiples:
                    args = (*args, *self.tails[key])
                launch, head = entry  # through the encoded descriptors' launcher where there is one
                launch(g0, g1, g2, self.stream(key[0]), *head, *args)
                return
        kernel = self.fn.run(*self._arguments(grid, key, args), grid=grid, warmup=False, num_warps=self.num_warps)
        if not self.fn.pre_run_hooks and getattr(kernel, "packed_metadata", None) is not None:
            if self.stream is None:
                self.stream = driver.active.get_current_stream
            self.kernels[key] = kernel
            encoded = None
            if self.descriptors and self.cache_descriptors:
                encoded = self.encoded[key] = EncodedDescriptors.of(kernel, self.descriptors)
            self.entries[key] = launch_entry(kernel, encoded.launcher if encoded is not None else kernel.run)

    def launch_addresses(self, grid: tuple, key: tuple, args: tuple) -> bool:
        """``__call__``'s launch with each tensor given as its address (an int), where the kernel for
        ``key`` is known and no hook or host descriptor needs the tensors; False: nothing launched,
        the caller launches through ``__call__``.  From a generated launcher, which has checked every
        tensor to be on the launch's CUDA device: Triton's C launcher takes an int as the address,
        where for a tensor it calls ``data_ptr()`` and asks the driver to check the address
        (``cuPointerGetAttribute``), per pointer and launch (on the H200 host a kernel's launch cost
        13 us in that C function with 8 tensors, 5-6 us with their addresses)."""
        entry = self.entries.get(key)
        if entry is None or self.descriptors:
            return False
        try:
            if _HOOKS.launch_enter_hook.calls or _HOOKS.launch_exit_hook.calls or self.fn.pre_run_hooks:
                return False
        except AttributeError:  # a hook that is not a chain: JITFunction.run hands it over
            return False
        if self.scratch_bytes:
            args = (*args, self._scratch(grid, args, key))
        if self.multiples:
            args = (*args, *self.tails[key])
        g0, g1, g2 = grid
        launch, head = entry
        launch(g0, g1, g2, self.stream(key[0]), *head, *args)
        return True

    def _arguments(self, grid: tuple, key: tuple, args: tuple) -> tuple:
        """The kernel's own arguments, then its descriptors (then scratch, then size multiples)."""
        tail = self._multiples(key, args) if self.multiples else ()
        if self.descriptors:
            args = (*args, *descriptors_for(args, self.descriptors))
        if self.scratch_bytes:
            args = (*args, self._scratch(grid, args, key))
        return (*args, *tail)

    def _multiples(self, key: tuple, args: tuple) -> tuple:
        """The size multiples of a launch, kept per key (the key holds each such size's last 3 bits)."""
        tail = self.tails.get(key)
        if tail is None:
            tail = self.tails[key] = tuple(size_multiple(args[i]) for i in self.multiples)
        return tail

    def _scratch(self, grid: tuple, args: tuple, key: tuple):
        """The scratch argument, on the arguments' device, as WithScratch makes it (kept per thread and
        stream where ``TILE2TRITON_KEEP_WORKSPACES`` is on: runtime/scratch.py)."""
        device = next((a.device for a in args if isinstance(a, torch.Tensor)), key[0])
        if self.kept_scratch is None:
            return scratch_tensor(self.scratch_bytes, grid, device)
        return self.kept_scratch(device, (scratch_size(self.scratch_bytes, grid),))

    @staticmethod
    def generic_parts(slots: list) -> list:
        """Per argument what Triton specialises it on, for a call whose dtypes the caller did not fix
        (the generic path's): a tensor's dtype and alignment, a scalar's ``scalar_key``.  A key is
        the current device (as Triton's driver sees it: ``generic_device``) and the launch's parts."""
        return [(a.dtype, a.data_ptr() % 16 == 0) if isinstance(a, torch.Tensor) else scalar_key(a) for a in slots]

    @staticmethod
    def generic_device() -> int:
        return driver.active.get_current_device()  # as JITFunction.run asks


class Lowered:
    """One lowering of a kernel for one device kind, with its Triton functions resolved."""

    def __init__(self, module: TritonModule, loaded, plan: CallPlan):
        self.module = module
        self.loaded = loaded
        self.warm = False  # launched once (Triton compiled it, outside any interpreter mode)
        self.launches = []
        for launch in module.launches:
            grid_fns = [plan_host_fn(g) for g in launch.grid]
            static = None if any(callable(f) for f in grid_fns) else tuple(grid_fns)
            positions = tuple(plan.slots[id(a)] for a in launch.args)
            fn = getattr(loaded, launch.name)
            if launch.multiples:  # trailing constexprs, after descriptors and scratch: wrapped first
                fn = WithSizeMultiples(fn, tuple(launch.multiples))
            if launch.host_descriptors:  # descriptors the host makes per call, after the kernel's arguments
                fn = WithHostDescriptors(fn, launch_specs(launch), len(launch.args))
            if launch.scratch_bytes:  # shared buffers in global scratch: a hidden last argument
                fn = WithScratch(fn, launch.scratch_bytes)
            if launch.static_shared:  # a static shared array beside Triton's dynamic shared memory
                static_shared.register(launch.name)
            self.launches.append((fn, static, grid_fns, positions, launch.num_warps))
        # the GPU launches through Triton's compiled kernels (None: interpreted, or launched by run)
        self.direct = [DirectLaunch.of(fn, num_warps) for fn, _, _, _, num_warps in self.launches]
        # slots of tensors read through tensor descriptors: their base must be 16-byte aligned
        self.aligned = sorted({plan.slots[id(a)] for launch in module.launches for a in launch.aligned})


class _Unsupported(Exception):
    """A signature the launcher generator does not handle: calls keep the generic path."""


_MISSING = object()  # a generated launcher's default for arguments not given (then: the generic path)


class _Source:
    """Lines of a generated launcher and the objects its names refer to."""

    def __init__(self):
        self.lines: list[str] = []
        self.names: dict = {}  # (id of an object, prefix) -> its name
        self.env: dict = {
            "Tensor": torch.Tensor,
            "torch": torch,  # looked up per call, so a patched torch.empty (the tests' poison) is seen
            "MISSING": _MISSING,
            "interpreter_mode": interpreter_mode,
            "interpreted_launch": interpreted_launch,
            "translate_error": translate_error,
        }

    def name(self, value, prefix: str) -> str:
        """A global name of the generated function bound to ``value`` (one per object)."""
        name = self.names.get((id(value), prefix))
        if name is None:
            name = self.names[(id(value), prefix)] = f"{prefix}{len(self.env)}"
            self.env[name] = value  # held here, so its id stays its own
        return name

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    def expr(self, e, names: dict) -> str:
        """A grid, shape or stride expression as Python over the local names of the sizes."""
        try:
            return _LauncherExpr(self, names).visit(e)
        except NotHostEvaluable as exc:
            raise _Unsupported(str(exc)) from None


class _LauncherExpr(PythonSource):
    def __init__(self, src: _Source, names: dict):
        self.src = src
        self.names = names

    def const(self, value):
        return repr(value) if type(value) is int else self.src.name(value, "c")

    def var(self, var):
        if var not in self.names:
            raise _Unsupported(f"size {var.name} is not bound by the arguments")
        return self.names[var]


def _all(conds: list) -> str:
    return " and ".join(conds) if conds else "True"


def generate_launcher(plan: CallPlan, compiled: dict, slow: Callable) -> Callable | None:
    """A launcher specialised to the plan's signature and the warm lowerings in ``compiled``
    (device kind -> ``Lowered``), or None; ``slow`` is the generic path it falls back to."""
    kinds = [(interp, lowered) for interp, lowered in sorted(compiled.items(), key=lambda kv: str(kv[0]))
             if isinstance(interp, bool)  # not the variants for misaligned tensors (the generic path's)
             and lowered.warm and (plan.target is None or (plan.target == "cpu") == interp)]  # fmt: skip
    tensors = [j for j, spec in enumerate(plan.specs) if spec.__class__ is TensorSpec]
    if not kinds or not tensors or plan.output_views:  # packed fp4 outputs take the generic path
        return None  # no tensor: the device comes from the target (the generic path decides)
    if plan.storage_views:
        return None  # tensors Triton reads through a uint8 view: the generic path makes the views
    if plan.assumes:
        return None  # T.assume checks: the generic path runs them
    try:
        src = _launcher_source(plan, kinds, tensors)
    except _Unsupported:
        return None
    src.env["slow"] = slow
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


def _launcher_source(plan: CallPlan, kinds: list, tensors: list) -> _Source:
    src = _Source()
    args = [f"a{j}" for j in range(plan.n_in)]
    names: dict = {}  # Var -> the local name holding its value
    scalar_vars = set()
    head = ["not more", "not kw"]  # cheap checks first: argument count, keywords, classes, dtypes, scalars
    for j, spec in enumerate(plan.specs):
        a = args[j]
        if spec.__class__ is TensorSpec:  # the exact class: a subclass takes the generic path
            head += [f"{a}.__class__ is Tensor", f"{a}.dtype is {src.name(spec.dtype, 'dtype')}"]
        else:
            _, var, types, lo, hi = spec
            head += [f"{a}.__class__ in {src.name(types, 'types')}", f"{src.name(lo, 'lo')} <= {a} < {src.name(hi, 'hi')}"]  # fmt: skip
            if var in names:
                raise _Unsupported("a scalar given twice")
            names[var] = a
            scalar_vars.add(var)

    ranks, binds, checks = [], [], []
    binds_of = set()  # the local names of sizes read from shapes and strides

    def bind(var, value: str) -> None:
        if var in scalar_vars:  # the generic path lets the scalar win without comparing
            raise _Unsupported("a size that is also a scalar parameter")
        if var in names:
            checks.append(f"{value} == {names[var]}")
        else:
            names[var] = f"v{len(names)}"
            binds_of.add(names[var])
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

    params = plan.params
    keep_workspaces = settings.current().keep_workspaces
    slot = {i: args[j] for j, i in enumerate(plan.inputs)}
    slot.update({i: f"o{k}" for k, (i, *_) in enumerate(plan.outputs)})
    slot.update({plan.n_params + k: names[size] for k, size in enumerate(plan.sizes)})
    # what Triton specialises a GPU launch on: input tensors' alignment, scalars' values (outputs
    # are fresh from torch.empty, so aligned)
    keyed = {i: "scalar" for i in slot}
    keyed.update({plan.inputs[j]: "tensor" for j in tensors})
    # sizes read from shapes or strides (v<n>): ints from 0 to 2**63 - 1
    keyed.update({plan.n_params + k: "size" for k, size in enumerate(plan.sizes) if names[size] in binds_of})
    for i, *_ in plan.outputs:
        del keyed[i]
    first = args[tensors[0]]
    if plan.single:
        result = "o0"
    else:
        result = "[" + ", ".join(f"o{k}" for k in range(plan.n_returned)) + "]" if plan.n_returned else "None"

    src.emit(0, "def launch(" + "".join(f"{a}=MISSING, " for a in args) + "*more, **kw):")
    src.emit(1, f"if {_all(head)}:")
    for j in tensors:
        src.emit(2, f"s{j} = {args[j]}.shape")
    src.emit(2, f"if {_all(ranks)}:")
    for line in binds:
        src.emit(3, line)
    src.emit(3, f"if {_all(checks)}:")
    for interp, launcher in kinds:
        # tensors read through tensor descriptors: a misaligned base takes the generic path (on the
        # GPU the address is kept, p<k>, for the descriptors' key: _descriptor_parts)
        aligned = [k for k in launcher.aligned if slot.get(k) in args]
        aligned_conds = [f"{slot[k]}.data_ptr() % 16 == 0" if interp else f"(p{k} := {slot[k]}.data_ptr()) % 16 == 0"
                         for k in aligned]  # fmt: skip
        if interp:  # Triton's interpreter: CPU tensors, under TRITON_INTERPRET=1
            src.emit(4, f"if {_all([f'{args[j]}.is_cpu' for j in tensors] + aligned_conds)}:")
        else:  # all on one CUDA device
            src.emit(4, f"dev = {first}.get_device()")
            conds = [f"{first}.is_cuda"]
            conds += [f"{args[j]}.is_cuda and {args[j]}.get_device() == dev" for j in tensors[1:]]
            src.emit(4, f"if {_all(conds + aligned_conds)}:")
        for k, (i, dtype, static, _) in enumerate(plan.outputs):
            shape = repr(static) if static is not None else (
                "(" + "".join(f"{src.expr(d, names)}, " for d in params[i].shape) + ")")  # fmt: skip
            if k >= plan.n_returned and not interp and keep_workspaces:  # a T.alloc_global workspace
                src.emit(5, f"o{k} = {src.name(KeptWorkspace(dtype), 'workspace')}({first}.device, {shape})")
                continue
            src.emit(5, f"o{k} = torch.empty(size={shape}, dtype={src.name(dtype, 'dtype')}, device={first}.device)")
        if launcher.aligned and not interp:
            src.env["ensure_allocator"] = ensure_allocator
            src.emit(5, "ensure_allocator()")
        if interp:
            src.emit(5, "with interpreted_launch():")
            _emit_launches(src, 6, launcher, names, slot, None)
        else:  # Triton launches on the current device: the tensors' device made current if it is not
            src.env["current_device"] = _current_device()
            src.env["device_guard"] = cuda_device_guard
            known = {k: "True" for k in aligned}  # checked above: their key parts are constants
            parts = _descriptor_parts(plan, slot)
            tensor_slots = {plan.inputs[j] for j in tensors} | {i for i, *_ in plan.outputs}
            src.emit(5, "if dev == current_device():")
            _emit_launches(src, 6, launcher, names, slot, keyed, known, parts, tensor_slots)
            src.emit(5, "else:")
            src.emit(6, "with device_guard(dev):")
            _emit_launches(src, 7, launcher, names, slot, keyed, known, parts, tensor_slots)
        src.emit(5, f"return {result}")
    src.emit(1, "return slow(*[a for a in (" + "".join(f"{a}, " for a in args) + ") if a is not MISSING], *more, **kw)")
    return src


def _descriptor_parts(plan: CallPlan, slot: dict) -> dict:
    """Per tensor slot, what a host-made descriptor of it depends on that the generated launcher's
    checks leave open: the address (``p<slot>``, read once per call for the launch that passes it,
    ``_emit_launches``), and the shape and strides where they may vary.

    A tensormap encodes the tensor's address, shape, strides and dtype (``EncodedDescriptors``).
    The launcher has checked each input's dtype and, for a ``T.Tensor`` parameter, that it is
    contiguous: then its strides follow from its shape, except a dim of extent <= 1, whose stride
    ``is_contiguous`` leaves free.  So per input: the address; the shape unless static; the strides
    unless contiguous and static with every extent above 1.  Outputs and workspaces come from
    ``torch.empty``: their dtype and strides follow from their shape."""
    parts = {}
    for j, i in enumerate(plan.inputs):
        spec = plan.specs[j]
        if spec.__class__ is not TensorSpec:
            continue
        a = slot[i]
        items = [f"p{i}"]
        if spec.static_shape is None:
            items.append(f"s{j}")
        if not spec.contiguous:
            items.append(f"t{j}")  # read for the stride checks already
        elif spec.static_shape is None or min(spec.static_shape, default=2) <= 1:
            items.append(f"{a}.stride()")
        parts[i] = items
    for k, (i, _, static, _) in enumerate(plan.outputs):
        parts[i] = [f"p{i}"] + ([] if static is not None else [f"o{k}.shape"])
    return parts


def _current_device() -> Callable[[], int]:
    """The current CUDA device's index, for a generated launcher's GPU branch: once CUDA is
    initialised (a warm GPU lowering launched), torch's C query without ``torch.cuda.current_device``'s
    two Python calls around it."""
    if torch.cuda.is_initialized():
        return getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)
    return torch.cuda.current_device


def _emit_launches(
    src: _Source,
    depth: int,
    launcher: Lowered,
    names: dict,
    slot: dict,
    keyed: dict | None,
    known: dict | None = None,
    descriptor_parts: dict | None = None,
    tensor_slots: set | frozenset = frozenset(),
) -> None:
    """The Triton launches of one lowering, errors mapped to the TileLang line as in ``_launch``.
    ``keyed``: for a GPU lowering, "tensor", "size" or "scalar" per slot that Triton's specialisation
    depends on (outputs, fresh from torch.empty, are aligned): its launches go through
    ``DirectLaunch`` keyed by the tensors' alignment and the scalars' ``scalar_key``, each
    computed once per call (``known``: slot -> the part's value where the caller has checked it),
    and a launch with cached host descriptors is handed their key (``descriptor_parts``, per slot:
    ``_descriptor_parts``).  A launch passes the tensors (``tensor_slots``) as their addresses too,
    read once per call into ``p<slot>``: without host descriptors through
    ``DirectLaunch.launch_addresses`` (the tensors where that declines), with cached ones beside the
    tensors, which serve a descriptor not cached yet.  None: interpreted, through ``run``."""
    head: list = []  # lines before the launches: the key parts and keys
    parts: dict = dict(known or {})  # slot -> the local name of its part of a key (or its value)
    keys: dict = {}  # the key's expression -> its local name (launches passed the same slots share it)
    aligned: dict = {}  # a launch's tensor slots (outside ``known``) -> the local holding their alignment part
    addresses = {k: f"p{k}" for k in known or {}}  # tensor slot -> the local holding its address
    body: list = []  # (depth, line) of the launches
    # slots passed as multiples as well (WithSizeMultiples): their key parts hold their last 3 bits
    multiple_slots = {
        positions[i] for (_, _, _, positions, _), direct in zip(launcher.launches, launcher.direct)
        if direct is not None for i in direct.multiples
    }  # fmt: skip
    for (fn, _, _, positions, num_warps), direct, spec in zip(launcher.launches, launcher.direct, launcher.module.launches):  # fmt: skip
        run = getattr(fn, "run", None)
        if run is None or any(k not in slot for k in positions):
            raise _Unsupported("a launch the generic path makes")
        grid, computed, positive = [], [], []
        for g in spec.grid:
            f = host_fn(g)
            if callable(f):
                grid.append(f"g{len(src.lines) + len(body)}_{len(grid)}")
                computed.append(f"{grid[-1]} = {src.expr(g, names)}")
                positive.append(f"{grid[-1]} > 0")
            elif f <= 0:
                break
            else:
                grid.append(repr(f))
        else:  # as _launch: a grid with an empty dimension launches nothing
            body += [(0, line) for line in computed]
            d = 0
            if positive:
                body.append((d, f"if {_all(positive)}:"))
                d += 1
            call_args = "".join(f"{slot[k]}, " for k in positions)
            if keyed is not None and direct is not None:
                # encoded descriptors (the ``checked`` key) take the other tensors by address too; descriptors
                # made per call need the tensors: there only a keyed tensor's alignment needs its address
                encoded = bool(direct.descriptors) and direct.cache_descriptors and descriptor_parts is not None
                pass_addresses = not direct.descriptors or encoded
                for k in positions:
                    wanted = pass_addresses or (keyed.get(k) == "tensor" and k not in parts)
                    if k in tensor_slots and wanted and k not in addresses:
                        addresses[k] = f"p{k}"
                        head.append(f"{addresses[k]} = {slot[k]}.data_ptr()")
                    if k in keyed and keyed[k] != "tensor" and k not in parts:
                        parts[k] = f"key_{slot[k]}"
                        v = slot[k]
                        if keyed[k] == "size" and k in multiple_slots:  # its last 3 bits too: v & 15 holds them
                            part = f"{v} & 15 | ({v} == 1) << 4 | ({v} > 0x7FFFFFFF) << 5"
                        elif keyed[k] == "size":  # scalar_key's parts that can differ for an extent or a stride
                            part = f"({v} % 16 == 0) | ({v} == 1) << 1 | ({v} > 0x7FFFFFFF) << 2"
                        elif k in multiple_slots:
                            part = f"(scalar_key({v}), {v} & 7)"
                        else:
                            part = f"scalar_key({v})"
                        head.append(f"{parts[k]} = {part}")
                # the tensors' alignment as one part: True where every address is 16-byte aligned, else
                # the tuple of each one's (never equal to True)
                unknown = tuple(k for k in positions if keyed.get(k) == "tensor" and k not in parts)
                if unknown and unknown not in aligned:
                    aligned[unknown] = f"aligned{len(aligned)}"
                    each = ", ".join(f"{addresses[k]} % 16 == 0" for k in unknown)
                    if len(unknown) > 1:
                        each = f"({' | '.join(addresses[k] for k in unknown)}) & 15 == 0 or ({each})"
                    head.append(f"{aligned[unknown]} = {each}")
                key_parts = [aligned[unknown]] if unknown else []
                key_parts += [parts[k] for k in positions if k in keyed and keyed[k] != "tensor"]
                key = "(dev, " + "".join(f"{part}, " for part in key_parts) + ")"
                if key not in keys:
                    keys[key] = f"key{len(keys)}"
                    head.append(f"{keys[key]} = {key}")
                grid3 = "(" + ", ".join((grid + ["1", "1"])[:3]) + ")"
                by_address = "".join(f"{addresses.get(k, slot[k])}, " for k in positions)
                checked = ""
                if encoded:  # the descriptors' key (their addresses read above), then the launch's addresses
                    items = [item for index, *_ in direct.descriptors for item in descriptor_parts[positions[index]]]
                    checked = ", (" + "".join(f"{item}, " for item in items) + f"), ({by_address})"
                launch = f"{src.name(direct, 'direct')}({grid3}, {keys[key]}, ({call_args}){checked})"
                if not direct.descriptors:
                    body.append((d, f"if not {src.name(direct, 'direct')}.launch_addresses({grid3}, {keys[key]}, ({by_address})):"))  # fmt: skip
                    d += 1
                body.append((d, launch))
            else:
                grid_src = "(" + "".join(f"{g}, " for g in grid) + ")"
                body.append((d, f"{src.name(run, 'run')}({call_args}grid={grid_src}, warmup=False, num_warps={num_warps})"))  # fmt: skip
    if not body:
        src.emit(depth, "pass")
        return
    if head:
        src.env["scalar_key"] = scalar_key
    for line in head:
        src.emit(depth, line)
    src.emit(depth, "try:")
    for d, line in body:
        src.emit(depth + 1 + d, line)
    src.emit(depth, "except Exception as exc:")
    src.emit(depth + 1, f"mapped = translate_error(exc, {src.name(launcher.module, 'module')}, "
                        f"{src.name(getattr(launcher.loaded, '__file__', None), 'path')})")  # fmt: skip
    src.emit(depth + 1, "if mapped is None:")
    src.emit(depth + 2, "raise")
    src.emit(depth + 1, "raise mapped from exc")
