"""``tilelang.autotune``: compile a ``@tilelang.jit`` factory for each configuration, time each with
the kernel's profiler, and keep the fastest (lazy style: returns it; eager style: runs it)."""

from __future__ import annotations

import contextlib
import inspect
import itertools
import threading
import warnings
from dataclasses import dataclass

from .compiler import argument_key
from .errors import MissingInputsError
from .jit import JITImpl
from .language._primitive import KernelOnlyError


def _expand(configs) -> list:
    """Configurations as a list of dicts: ``{name: [values]}`` is the product of the values."""
    if isinstance(configs, dict):
        keys = list(configs)
        return [dict(zip(keys, values)) for values in itertools.product(*(configs[k] for k in keys))]
    return list(configs)


class AutoTuneImpl:
    def __init__(self, jit_impl: JITImpl, configs, warmup=25, rep=100, ref_prog=None, rtol=1e-2, atol=1e-2,
                 max_mismatched_ratio=0.01, skip_check=False, supply_type=None, supply_prog=None,
                 manual_check_prog=None, early_stop=False, early_stop_factor=2.0, **_ignored):  # fmt: skip
        if not isinstance(jit_impl, JITImpl):
            raise TypeError("@tilelang.autotune must decorate a @tilelang.jit function")
        self.jit_impl = jit_impl
        self.configs = configs
        self.warmup, self.rep = warmup, rep
        self.ref_prog, self.rtol, self.atol = ref_prog, rtol, atol
        self.max_mismatched_ratio, self.skip_check = max_mismatched_ratio, skip_check
        self.supply_type, self.supply_prog, self.manual_check_prog = supply_type, supply_prog, manual_check_prog
        self.early_stop_factor = _early_stop_factor(early_stop, early_stop_factor)
        self._best: dict = {}
        self._lock = threading.Lock()
        self._params = list(inspect.signature(jit_impl.func).parameters)
        self._static = None  # a static configuration list, once checked: (configs, tunable names)
        self.__wrapped__ = jit_impl.func

    def _configs_for(self, args, kwargs) -> tuple[list[dict], frozenset]:
        """The configurations, checked against the factory's parameters, and the names they tune (a
        static list is expanded and checked once: an eager kernel's every call asks)."""
        if self._static is not None:
            return self._static
        configs = _expand(self.configs(*args, **kwargs) if callable(self.configs) else self.configs)
        for config in configs:
            unknown = [k for k in config if k not in self._params and k != _PASS_CONFIGS]
            if unknown:
                raise ValueError(f"autotune config keys {unknown} are not parameters of {self.jit_impl.func.__name__}")
        found = (list(configs), frozenset(k for c in configs for k in c) - {_PASS_CONFIGS})
        if not callable(self.configs):
            self._static = found
        return found

    def _untuned(self, args, kwargs) -> bool:
        """No tuning, as in TileLang: no configurations, or a tunable argument given explicitly (by
        keyword or position)."""
        configs, tunable = self._configs_for(args, kwargs)
        return not configs or bool(tunable & (set(kwargs) | set(self._params[: len(args)])))

    def _tune(self, args, kwargs):
        if self._untuned(args, kwargs):
            return self.jit_impl.compile(*args, **kwargs), None
        configs, _ = self._configs_for(args, kwargs)
        key = (argument_key(args), argument_key(kwargs))
        with self._lock:
            if key in self._best:
                return self._best[key]
            best, failures = None, []
            for config in configs:
                try:  # as TileLang's tuner: a configuration that fails to build or to check is skipped
                    kernel = self._compile_config(args, kwargs, config)
                    baseline = _baseline(best[2] if best else None, self.early_stop_factor)
                    latency = _measure(kernel, self.supply_type, self.ref_prog, self.skip_check, self.atol, self.rtol,
                                       self.max_mismatched_ratio, self.warmup, self.rep, self.supply_prog,
                                       self.manual_check_prog, early_stop_baseline=baseline)  # fmt: skip
                except MissingInputsError:  # every configuration would need the inputs: not this one's failure
                    raise
                except Exception as exc:  # noqa: BLE001 - reported below, and raised when every config fails
                    failures.append((config, exc))
                    warnings.warn(f"autotune: config {config} skipped: {type(exc).__name__}: {exc}", stacklevel=2)
                    continue
                if best is None or latency < best[2]:
                    best = (kernel, config, latency)
            if best is None:
                config, exc = failures[0]
                raise RuntimeError(
                    "Auto-tuning failed: No configuration successfully compiled and passed benchmarking/validation "
                    f"(the first, {config}: {type(exc).__name__}: {exc})"
                ) from exc
            kernel, config, latency = best
            kernel.latency, kernel.config = latency, config
            kernel.ref_latency = None
            self._best[key] = (kernel, config)
            return kernel, config

    def _compile_config(self, args, kwargs, config: dict):
        """One configuration's kernel; its ``pass_configs`` entry (TileLang reserves the key) goes over the
        ``@tilelang.jit`` pass configs instead of into the factory's arguments."""
        factory_args, pass_configs = _split_pass_configs(config)
        if pass_configs is None:
            return self.jit_impl.compile(*args, **{**kwargs, **factory_args})
        from .compiler import compile as compile_prim_func
        from .frontend.source import KernelSource

        options = self.jit_impl.options
        try:
            prim = self.jit_impl.func(*args, **{**kwargs, **factory_args})
        except KernelOnlyError:
            prim = None
        if not isinstance(prim, KernelSource):
            raise TypeError(
                f"autotune configs with 'pass_configs' need a @tilelang.jit factory that returns a @T.prim_func; "
                f"{self.jit_impl.func.__name__} is an eager-style kernel"
            )
        merged = {**(options.get("pass_configs") or {}), **pass_configs}
        return compile_prim_func(prim, self.jit_impl.out_idx, target=options.get("target"), pass_configs=merged)

    def __call__(self, *args, **kwargs):
        if not self.jit_impl.lazy and self._untuned(args, kwargs):
            return self.jit_impl(*args, **kwargs)  # the eager call compiles (or finds) its kernel itself
        kernel, config = self._tune(args, kwargs)
        if self.jit_impl.lazy:
            return kernel
        return self.jit_impl(*args, **{**kwargs, **_split_pass_configs(config or {})[0]})

    def compile(self, *args, **kwargs):
        return self._tune(args, kwargs)[0]


def autotune(func=None, *, configs=None, warmup=25, rep=100, timeout=100, supply_type=None, ref_prog=None,
             supply_prog=None, rtol=1e-2, atol=1e-2, max_mismatched_ratio=0.01, skip_check=False,
             manual_check_prog=None, cache_input_tensors=False, do_not_specialize=None, early_stop=False,
             early_stop_factor=2.0):  # fmt: skip
    """Drop-in for ``tilelang.autotune``: pick the fastest config by timing each one."""

    def wrap(jit_impl):
        return AutoTuneImpl(jit_impl, configs, warmup=warmup, rep=rep, ref_prog=ref_prog, rtol=rtol, atol=atol,
                            max_mismatched_ratio=max_mismatched_ratio, skip_check=skip_check, supply_type=supply_type,
                            supply_prog=supply_prog, manual_check_prog=manual_check_prog, early_stop=early_stop,
                            early_stop_factor=early_stop_factor)  # fmt: skip

    return wrap(func) if func is not None else wrap


# ----------------------------------------------------------------------------- set_autotune_inputs
_captured = threading.local()


@contextlib.contextmanager
def set_autotune_inputs(*tensors):
    """``with set_autotune_inputs(a, b, ...)``: tune on these inputs instead of generated ones
    (``set_autotune_inputs([a, b])`` works too)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    stack = _captured.__dict__.setdefault("stack", [])
    stack.append(list(tensors))
    try:
        yield
    finally:
        stack.pop()


def get_autotune_inputs() -> list | None:
    stack = _captured.__dict__.get("stack")
    return stack[-1] if stack else None


_PASS_CONFIGS = "pass_configs"  # a config key TileLang reserves: compiler pass configs, not a factory argument


def _split_pass_configs(config: dict) -> tuple[dict, dict | None]:
    """A configuration's factory arguments, and its ``pass_configs`` (None when it has none)."""
    return {k: v for k, v in config.items() if k != _PASS_CONFIGS}, config.get(_PASS_CONFIGS)


def _early_stop_factor(early_stop: bool, factor: float) -> float | None:
    """``early_stop``: a configuration whose first estimate exceeds the best latency so far times ``factor``
    is not timed in full (TileLang's meaning); None when off."""
    if not early_stop:
        return None
    if factor < 1.0:
        raise ValueError(f"early_stop_factor must be >= 1.0, got {factor}")
    return factor


def _baseline(best_latency: float | None, factor: float | None) -> float | None:
    return None if factor is None or best_latency is None else best_latency * factor


def _measure(kernel, supply_type, ref_prog, skip_check, atol, rtol, max_mismatched_ratio, warmup, rep,
             supply_prog=None, manual_check_prog=None, early_stop_baseline=None):  # fmt: skip
    """Check one compiled configuration against ``ref_prog`` (unless skipped) and time it (ms); with an
    ``early_stop_baseline`` a configuration estimated slower than it returns that estimate untimed."""
    profiler = kernel.get_profiler(supply_type)
    inputs = get_autotune_inputs()
    if inputs is None and supply_prog is not None:
        inputs = supply_prog(profiler._get_params())
    if ref_prog is not None and not skip_check:
        if manual_check_prog is not None:
            profiler.manual_assert_close(ref_prog, input_tensors=inputs, manual_check_prog=manual_check_prog)
        else:
            profiler.assert_allclose(ref_prog, input_tensors=inputs, atol=atol, rtol=rtol,
                                     max_mismatched_ratio=max_mismatched_ratio)  # fmt: skip
    return profiler.do_bench(warmup=warmup, rep=rep, input_tensors=inputs, early_stop_baseline=early_stop_baseline)


# ----------------------------------------------------------------------------- AutoTuner
@dataclass
class AutotuneResult:
    """The best configuration ``AutoTuner.run`` found."""

    latency: float
    config: dict
    ref_latency: float | None
    libcode: str
    func: object
    kernel: object


class AutoTuner:
    """TileLang's explicit tuner: ``AutoTuner.from_kernel(kernel=f, configs=[...])`` where ``f(**config)``
    returns a ``@T.prim_func``; ``.set_compile_args(...)``, ``.set_profile_args(...)``, then ``.run()``."""

    def __init__(self, fn, configs):
        self.fn = fn
        self.configs = configs
        self.compile_args: dict = {"out_idx": None}
        self.profile_args: dict = {"warmup": 25, "rep": 100, "supply_type": None, "ref_prog": None,
                                   "supply_prog": None, "rtol": 1e-2, "atol": 1e-2, "max_mismatched_ratio": 0.01,
                                   "skip_check": False, "manual_check_prog": None}  # fmt: skip

    @classmethod
    def from_kernel(cls, kernel, configs) -> AutoTuner:
        return cls(kernel, configs)

    def set_compile_args(self, out_idx=None, target=None, execution_backend=None, target_host=None, verbose=None,
                         pass_configs=None) -> AutoTuner:  # fmt: skip
        """``out_idx`` and the ``pass_configs`` that change Triton code (``TL_ENABLE_FAST_MATH``) matter here; the
        device follows the tensors."""
        self.compile_args = {"out_idx": out_idx, "target": target, "pass_configs": pass_configs}
        return self

    def set_profile_args(self, warmup=25, rep=100, timeout=30, supply_type=None, ref_prog=None, supply_prog=None,
                         rtol=1e-2, atol=1e-2, max_mismatched_ratio=0.01, skip_check=False, manual_check_prog=None,
                         cache_input_tensors=False, backend="event") -> AutoTuner:  # fmt: skip
        self.profile_args = {"warmup": warmup, "rep": rep, "supply_type": supply_type, "ref_prog": ref_prog,
                             "supply_prog": supply_prog, "rtol": rtol, "atol": atol,
                             "max_mismatched_ratio": max_mismatched_ratio, "skip_check": skip_check,
                             "manual_check_prog": manual_check_prog}  # fmt: skip
        return self

    def set_kernel_parameters(self, *args, **kwargs) -> AutoTuner:
        return self

    def run(self, warmup=None, rep=None, timeout=None, use_pipeline: bool = False, enable_grouped_compile: bool = False,
            group_compile_size: int = 2, benchmark_devices=None, benchmark_multi_gpu: bool = False,
            early_stop: bool = False, early_stop_factor: float = 2.0) -> AutotuneResult:  # fmt: skip
        """Compile and time each configuration, one after another, and return the fastest.

        ``early_stop``: as TileLang, a configuration whose first estimate (5 calls) exceeds the best latency
        so far times ``early_stop_factor`` (>= 1) is not timed in full; its estimate stands as its latency.
        ``use_pipeline``, ``enable_grouped_compile`` / ``group_compile_size`` (TileLang compiles several
        configurations into one CUDA module) and ``benchmark_devices`` / ``benchmark_multi_gpu`` only change
        how TileLang schedules the work, not the result: they are accepted and configurations are compiled
        and timed one by one on the device of the inputs."""
        from .compiler import compile as compile_prim_func

        factor = _early_stop_factor(early_stop, early_stop_factor)

        prof = dict(self.profile_args)
        prof["warmup"] = prof["warmup"] if warmup is None else warmup
        prof["rep"] = prof["rep"] if rep is None else rep
        configs = _expand(self.configs() if callable(self.configs) else self.configs)
        best = None
        for config in configs:
            factory_args, pass_configs = _split_pass_configs(config)
            func = self.fn(**factory_args)
            pass_configs = {**(self.compile_args.get("pass_configs") or {}), **(pass_configs or {})}
            kernel = compile_prim_func(
                func, out_idx=self.compile_args.get("out_idx"), pass_configs=pass_configs or None
            )
            latency = _measure(kernel, prof["supply_type"], prof["ref_prog"], prof["skip_check"], prof["atol"],
                               prof["rtol"], prof["max_mismatched_ratio"], prof["warmup"], prof["rep"],
                               prof["supply_prog"], prof["manual_check_prog"],
                               _baseline(best.latency if best else None, factor))  # fmt: skip
            if best is None or latency < best.latency:
                best = AutotuneResult(latency, dict(config), None, kernel.get_kernel_source(), func, kernel)
        if best is None:
            raise ValueError("AutoTuner.run: no configurations to try")
        if prof["ref_prog"] is not None:
            ins = get_autotune_inputs() or best.kernel.get_profiler(prof["supply_type"])._get_inputs()
            best.ref_latency = best.kernel.get_profiler(prof["supply_type"]).do_bench(
                prof["ref_prog"], warmup=prof["warmup"], rep=prof["rep"], input_tensors=ins
            )
        return best


__all__ = ["AutoTuner", "AutotuneResult", "autotune", "get_autotune_inputs", "set_autotune_inputs"]
