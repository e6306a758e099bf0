"""The compiled kernel users call (TileLang's ``JITKernel``): lowers per device kind, then
validates arguments, allocates outputs and launches Triton.

A call runs the call plan's cheap checks (runtime/plan.py); when one fails, the detailed
validator (runtime/validate.py) names the parameter, the expectation and what was given.  Once
a lowering has launched, calls go through a launcher generated for the kernel's signature
(runtime/launcher.py), which falls back to the generic path here on any failed check.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import ClassVar

import torch

from .. import ir, settings
from ..codegen.emit import TritonModule, emit_module
from ..codegen.lower import LoweringOptions
from ..errors import KernelCallError, TileLangCompileError, user_facing
from . import tuning
from .cache import interpreted_launch, interpreter_mode, load_module, stats
from .diagnostics import launch as launch_mapped
from .diagnostics import translate as translate_error
from .launcher import Lowered, exec_generated, generate_launcher
from .params import KernelParam
from .plan import CallPlan, TensorSpec, check_assumes, plan_name
from .target import (
    NULL_CONTEXT,
    Target,
    cuda_device_guard,
    default_interpret,
    device_target,
    ensure_allocator,
    gluon_attention_supported,
    parse_target,
    resolve_target,
    tensor_descriptors_supported,
)
from .validate import check_sizes, diagnose, wrong_target

__all__ = ["JITKernel", "exec_generated"]  # exec_generated: eager.py's generated entries use it too


# lowering switches read straight from the settings object, by the same name on both sides
_SWITCHES = (
    "thread_copy_tiles", "forward_shared", "forward_rings", "uniform_branches",
    "size_multiples", "shared_divisors", "arithmetic_masks",
    "tma_vectors", "tma_min_trips", "tma_stages", "tma_pipelined_only", "split_dims", "transposed_dots",
    "host_descriptors", "block_slices", "speculate_copies",
    "scratch_cta_atomics", "scratch_atomic_barriers", "scratch_block_claims", "scratch_histogram",
    "warp_aggregated_atomics", "on_chip_scratch", "shared_scratch",
    "vectorize_atomic_loops", "trip_bounds", "exact_ranges", "split_min_trips", "forward_stages", "global_mirrors",
    "column_split", "defer_sums", "defer_reducers", "defer_reduces", "gemm_parts", "staged_atomics", "licm_guard",
    "prefetch_indices", "row_once", "column_chunks", "dead_parts", "row_split", "row_split_backward", "compact_guarded_loops", "global_copy_chunks",
    "held_locals", "branch_copies", "digit_reads", "unit_reshapes", "proven_min_max", "heavy_first",
    "heavy_first_group", "snake_order",
)  # fmt: skip


def _switches(env: settings.Settings) -> dict:
    return {name: getattr(env, name) for name in _SWITCHES}


class JITKernel:
    """A compiled TileLang program (TileLang's ``JITKernel``)."""

    def __init__(
        self,
        func: ir.PrimFunc,
        target=None,
        pass_configs=None,
        launch: tuning.LaunchChoice | None = None,
        *,
        out_idx=None,
        execution_backend=None,
        target_host=None,
        verbose=False,
        compile_flags=None,
    ):
        # out_idx and the keywords after it: TileLang's JITKernel(prim_func, out_idx, ..., target=...);
        # its execution backend, host target, verbosity and nvcc flags mean nothing under Triton
        if not isinstance(func, ir.PrimFunc):
            if isinstance(target, (int, list, tuple)):  # TileLang's second positional argument
                out_idx, target = target, None
            func = type(self).bind_prim_func(func, out_idx)
        self.prim_func = func
        # T.annotate_pass_configs in the kernel, overridden by the caller's pass_configs
        self.pass_configs = {**func.attrs.get("tilelang_pass_configs", {}), **(pass_configs or {})}
        self.launch_choice = launch  # None: chosen on the first GPU compile (runtime/tuning.py)
        self.tuning: tuning.SearchReport | None = None  # what a first-call search did
        # lowering options that made the kernel fit in shared memory (tuning.FIT_STEPS); {}: as written
        self.shared_memory_fit: dict = {}
        self.out_idx = list(func.out_idx)
        self.target = resolve_target(target)
        self._compiled: dict[bool | tuple, Lowered] = {}
        self._compile_lock = threading.Lock()
        self._plan = CallPlan(func, self.target)
        self._entry: Callable = self._call  # what a call runs: the generic path until a lowering is warm

    # ``kernel(*args)`` is ``kernel._entry(*args)`` without a Python frame in between (a method
    # forwarding *args costs more than the generated launcher's checks)
    __call__ = property(operator.attrgetter("_entry"), doc="Run the kernel: ``kernel(*inputs)`` -> its outputs.")

    # ---------------------------------------------------------------- compilation
    def lowered(self, interpret: bool) -> TritonModule:
        return self._compile(interpret).module

    def _compile(self, interpret: bool, descriptors: bool | None = None) -> Lowered:
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
                options = LoweringOptions(
                    interpret=interpret, tensor_descriptors=descriptors, **self._launch_options(interpret)
                )
                module = emit_module(self.prim_func, options)
                loaded = load_module(module.source, self.prim_func.name, interpret)
                stats.compiles += 1
                launcher = Lowered(module, loaded, self._plan)
                self._compiled[key] = launcher
        return launcher

    def _launch_options(self, interpret: bool) -> dict:
        """Lowering options from the launch choice (runtime/tuning.py) and the pass configs."""
        env = settings.current()
        options = {
            "fast_math": tuning.fast_math(self.pass_configs),
            "user_syncs": tuning.user_syncs(self.pass_configs),
            "per_thread_loads": tuning.per_thread_loads(),
            "vectorize_loops": env.vectorize_loops,
            **_switches(env),
        }
        if interpret:
            return options
        options["gluon"] = gluon_attention_supported(interpret)
        options["gluon_log"] = env.gluon == "log"
        options["gluon_cost_model"] = env.gluon != "force"
        options["gluon_schedule"] = env.gluon_schedule
        target = device_target() if torch.cuda.is_available() else None
        if target is not None:
            options.update(target.lowering(), sms=tuning.sms_of(target))
        if self.launch_choice is None:
            self.launch_choice = tuning.LITERAL
            if tuning.mode() != "off" and target is not None:
                self.launch_choice = tuning.heuristic(self.prim_func, target)
        options = {**options, **self.launch_choice.lowering(), **self.shared_memory_fit}
        if target is not None:
            warps, stages = options.get("num_warps"), options.get("num_stages")
            options["blocks_per_sm"] = tuning.blocks_per_sm(self.prim_func, warps, stages, target)
        return options

    def lowered_for(self, target: str | Target, descriptors: bool | None = None) -> TritonModule:
        """The kernel as tile2triton generates it for the card ``target`` names (``"sm_100"``,
        ``"gfx942"``, ``"cpu"``, ...; runtime/target.parse_target), for compile-only work on any
        machine: launch parameters from that card's table (runtime/tuning.py), code from its
        description.  Nothing is loaded or launched."""
        spec = parse_target(target)
        if spec.backend == "cpu":
            return emit_module(self.prim_func, LoweringOptions(**self._launch_options(True), **spec.lowering()))
        choice = self.launch_choice
        if choice is None:
            choice = tuning.heuristic(self.prim_func, spec) if tuning.mode() != "off" else tuning.LITERAL
        options = LoweringOptions(
            tensor_descriptors=tensor_descriptors_supported(False, spec) if descriptors is None else descriptors,
            gluon=gluon_attention_supported(False, spec),
            gluon_cost_model=settings.current().gluon != "force",
            gluon_schedule=settings.current().gluon_schedule,
            fast_math=tuning.fast_math(self.pass_configs),
            user_syncs=tuning.user_syncs(self.pass_configs),
            per_thread_loads=tuning.per_thread_loads(),
            sms=tuning.sms_of(spec),
            **{**_switches(settings.current()), **choice.lowering()},  # the choice may force the row split
            **self.shared_memory_fit,
            **spec.lowering(),
        )
        held = tuning.blocks_per_sm(self.prim_func, options.num_warps, options.num_stages, spec)
        return emit_module(self.prim_func, replace(options, blocks_per_sm=held))

    def _search_launch(self, launcher: Lowered, slots: list, values: dict) -> Lowered:
        """``TILE2TRITON_TUNE=search``: time a few launch choices on this first call, keep the fastest."""
        key = next(k for k, v in self._compiled.items() if v is launcher)
        descriptors = None if key is False else False
        cache_key = tuning.cache_key(launcher.module.source)
        built = {self.launch_choice: launcher}

        def compile_choice(choice):
            if choice not in built:
                built[choice] = self._variant(choice, descriptors)
            return built[choice]

        def launch(variant):
            with interpreter_mode(False):
                self._launch(variant, slots, values)

        choice = tuning.load_cached(cache_key)
        if choice is not None:
            self.tuning = tuning.SearchReport(choice, {}, 0.0, True)
        else:
            self.tuning = tuning.search(compile_choice, launch, self.prim_func, device_target())
            choice = self.tuning.choice
            tuning.store_cached(cache_key, choice, self.tuning.timings_ms)
        if choice == self.launch_choice:
            return launcher
        chosen = compile_choice(choice)
        self.launch_choice = choice
        for stale in [k for k in self._compiled if k is False or k == (False, False)]:
            del self._compiled[stale]
        self._compiled[key] = chosen
        return chosen

    def _literal_launcher(self, launcher: Lowered) -> Lowered | None:
        """The GPU lowering launched as the source says, replacing ``launcher`` whose launch choice
        failed to build; None when ``launcher`` already is that."""
        if self.launch_choice in (None, tuning.LITERAL):
            return None
        key = next(k for k, v in self._compiled.items() if v is launcher)
        self.launch_choice = tuning.LITERAL
        for stale in [k for k in self._compiled if k is False or k == (False, False)]:
            del self._compiled[stale]
        return self._compile(False, None if key is False else False)

    def _first_launch(self, launcher: Lowered, slots: list, values: dict, interpret: bool) -> Lowered:
        """A lowering's first launch, where Triton compiles it; returns the lowering that ran.  On the
        GPU a launch choice Triton cannot build falls back to the launch as written, and a kernel
        that needs more shared memory than a block may use is lowered again with fewer pipeline
        stages, then with its shared buffers in global memory (tuning.FIT_STEPS), before the
        error names what does not fit.  Launches that already ran are not repeated."""
        start = 0
        with interpreter_mode(interpret):
            while True:
                try:
                    self._launch(launcher, slots, values, start)
                    return launcher
                except Exception as exc:
                    if interpret or launcher.warm:
                        raise
                    start = getattr(exc, "launch_index", start)
                    retry = self._literal_launcher(launcher)
                    if retry is None:
                        retry = self._fit_shared_memory(launcher, exc, start)
                    launcher = retry  # and launch again (the chosen launch did not build)

    def _fit_shared_memory(self, launcher: Lowered, exc: Exception, index: int) -> Lowered:
        """The GPU lowering with the next fitting step, for a launch Triton could not fit in shared
        memory; re-raises ``exc`` for any other error, a clear error when no step is left."""
        shortfall = tuning.shared_memory_shortfall(exc)
        if shortfall is None:
            raise exc
        step = tuning.next_fit(self.shared_memory_fit)
        if step is None:
            kernels = self.prim_func.kernels
            kernel = kernels[index] if index < len(kernels) else kernels[0]
            required, limit = shortfall
            raise TileLangCompileError(
                f"this kernel needs {required} bytes of shared memory as Triton compiles it, more than the "
                f"{limit} bytes a block may use on this GPU, even with {tuning.describe_fit(self.shared_memory_fit)}",
                kernel.loc,
                "use smaller tiles (block sizes) or fewer threads' worth of T.alloc_shared / T.alloc_fragment data",
            ) from exc
        key = next(k for k, v in self._compiled.items() if v is launcher)
        self.shared_memory_fit = step
        for stale in [k for k in self._compiled if k is False or k == (False, False)]:
            del self._compiled[stale]
        retry = self._compile(False, None if key is False else False)
        if retry.module.source == launcher.module.source:  # the step changes nothing here: the next one
            return self._fit_shared_memory(retry, exc, index)
        return retry

    def _variant(self, choice: tuning.LaunchChoice, descriptors: bool | None) -> Lowered:
        """The GPU lowering under another launch choice (not cached on the kernel)."""
        saved = self.launch_choice
        self.launch_choice = choice
        try:
            default = tensor_descriptors_supported(False)
            use = default if descriptors is None else descriptors
            options = LoweringOptions(interpret=False, tensor_descriptors=use, **self._launch_options(False))
            module = emit_module(self.prim_func, options)
            loaded = load_module(module.source, self.prim_func.name, False)
            stats.compiles += 1
            return Lowered(module, loaded, self._plan)
        finally:
            self.launch_choice = saved

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
    def params(self) -> list[KernelParam]:
        """The prim_func's parameters, inputs and outputs, as TileLang's ``KernelParam`` (the
        T.alloc_global workspaces the runtime adds are not parameters)."""
        func = self.prim_func
        return [KernelParam.of(p) for i, p in enumerate(func.params) if i not in func.workspaces]

    # The profiler (tile2triton/profiler.py, a later surface) registers its class here when it is
    # imported (``import tile2triton`` does), so the runtime does not import it.
    profiler_class: ClassVar[type | None] = None
    # binds a @T.prim_func handed to JITKernel(...) directly; compiler.py registers it (the runtime
    # does not import the stages above it)
    bind_prim_func: ClassVar[Callable[..., ir.PrimFunc]]

    def get_profiler(self, tensor_supply_type=None, device=None):
        """TileLang's ``kernel.get_profiler()`` (see tile2triton/profiler.py)."""
        if self.profiler_class is None:
            raise RuntimeError("kernel.get_profiler() needs tile2triton.profiler; import tile2triton first")
        return self.profiler_class(self, tensor_supply_type, device)

    def run_once(self, func=None):
        """TileLang's ``kernel.run_once()``: one call on the profiler's generated inputs."""
        return self.get_profiler().run_once(func)

    # ---------------------------------------------------------------- calls
    def _name_for_errors(self, factory: str) -> None:
        """Call errors name the factory and its prim_func (``matmul.main``): with several kernels
        from factories whose prim_funcs are all ``main``, the prim_func alone does not say which.
        Kept on the prim_func, so another JITKernel of it (the profiler's, say) names it alike."""
        self.prim_func.attrs["tile2triton.factory"] = factory
        self._plan.name = plan_name(self.prim_func)

    @user_facing
    def _call(self, *args, **kwargs):
        """The generic call path: checks, allocation and launch driven by the call plan."""
        plan = self._plan
        if kwargs:  # inputs by parameter name: put in order, then the same path
            args = plan.bind_keywords(args, kwargs)
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
            if spec.__class__ is TensorSpec:
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
            values, device = diagnose(plan, args, slots)
        if any(size not in values for size in plan.sizes):
            check_sizes(plan, values)  # fills the sizes only None tensors would give, or raises
        if plan.assumes:
            check_assumes(plan, values)
        if device is None:  # no tensor inputs: the target's device, else CUDA when there is one
            device = torch.device(
                "cpu" if self.target == "cpu" or (self.target is None and default_interpret()) else "cuda"
            )
        interpret = dev_index < 0 if dev_index is not None and ok else device.type != "cuda"
        if plan.target is not None and (plan.target == "cpu") != interpret:
            wrong_target(plan, self.target, device)
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
                ensure_allocator()
        run_slots = slots
        if plan.storage_views:  # float8_e8m0fnu tensors: Triton reads their bytes as uint8
            run_slots = list(slots)
            for k in plan.storage_views:
                run_slots[k] = run_slots[k].view(torch.uint8)
        # Triton launches on the current CUDA device: make the tensors' device current
        with NULL_CONTEXT if interpret or device.index is None else cuda_device_guard(device.index):
            if not launcher.warm and not interpret and self.tuning is None and tuning.mode() == "search":
                if tuning.searchable(self.prim_func):
                    launcher = self._search_launch(launcher, run_slots, values)
            if launcher.warm and not interpret:
                self._launch(launcher, run_slots, values)
            elif launcher.warm:
                with interpreted_launch():
                    self._launch(launcher, run_slots, values)
            else:  # the interpreter reads TRITON_INTERPRET at launch; a GPU kernel's first launch compiles
                launcher = self._first_launch(launcher, run_slots, values, interpret)
                if not launcher.warm:
                    launcher.warm = True
                    self._entry = generate_launcher(plan, self._compiled, self._call) or self._call
        if plan.output_views:  # packed fp4 outputs: allocated as bytes, returned as TileLang's storage dtype
            slots = [slots[k].view(plan.output_views[k]) if k in plan.output_views else s for k, s in enumerate(slots)]
        if plan.single:
            return slots[plan.outputs[0][0]]
        if not plan.n_returned:
            return None
        return [slots[i] for i, *_ in plan.outputs[: plan.n_returned]]

    @staticmethod
    def _launch(launcher: Lowered, slots: list, values: dict, start: int = 0) -> None:
        """Run the lowering's launches from ``start``; an error of a first launch records which
        one failed (``launch_index``), so a retry does not repeat the ones that ran."""
        parts = None  # per slot what Triton specialises it on (DirectLaunch keys), once per call
        for index, (fn, static, grid_fns, positions, num_warps) in enumerate(launcher.launches):
            if index < start:
                continue
            grid = static if static is not None else tuple([f(values) if callable(f) else f for f in grid_fns])
            if min(grid) <= 0:
                continue
            run = getattr(fn, "run", None)
            if run is None or not launcher.warm:  # first launch: Triton errors mapped to the TileLang line
                try:
                    launch_mapped(launcher, fn, grid, [slots[k] for k in positions], num_warps)
                except Exception as exc:
                    exc.launch_index = index
                    raise
                continue
            direct = launcher.direct[index]
            try:
                if direct is not None:  # a GPU launch: through the compiled kernel (launcher.DirectLaunch)
                    if parts is None:
                        parts = [direct.generic_device(), *direct.generic_parts(slots)]
                    key = (parts[0], "generic", *[parts[k + 1] for k in positions])
                    if direct.multiples:  # sizes passed as multiples: their last 3 bits (size_multiple)
                        key = (*key, *[slots[positions[i]] & 7 for i in direct.multiples])
                    direct((*grid, 1, 1)[:3], key, tuple([slots[k] for k in positions]))
                else:  # fn.run(...) is what fn[grid](...) calls, minus a lambda per call
                    run(*[slots[k] for k in positions], grid=grid, warmup=False, num_warps=num_warps)
            except Exception as exc:  # mapped to the TileLang line where possible, as launch_mapped does
                mapped = translate_error(exc, launcher.module, getattr(launcher.loaded, "__file__", None))
                if mapped is None:
                    raise
                raise mapped from exc
