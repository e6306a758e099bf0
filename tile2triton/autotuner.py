"""``tilelang.autotune``: compile a ``@tilelang.jit`` factory for each configuration, time each with
the kernel's profiler, and keep the fastest (lazy style: returns it; eager style: runs it)."""

from __future__ import annotations

import inspect
import itertools
import threading

from .compiler import argument_key
from .jit import JITImpl


class AutoTuneImpl:
    def __init__(self, jit_impl: JITImpl, configs, warmup=25, rep=100, ref_prog=None, rtol=1e-2, atol=1e-2,
                 max_mismatched_ratio=0.01, skip_check=False, supply_type=None, **_ignored):  # fmt: skip
        if not isinstance(jit_impl, JITImpl):
            raise TypeError("@tilelang.autotune must decorate a @tilelang.jit function")
        self.jit_impl = jit_impl
        self.configs = configs
        self.warmup, self.rep = warmup, rep
        self.ref_prog, self.rtol, self.atol = ref_prog, rtol, atol
        self.max_mismatched_ratio, self.skip_check = max_mismatched_ratio, skip_check
        self.supply_type = supply_type
        self._best: dict = {}
        self._lock = threading.Lock()
        self.__wrapped__ = jit_impl.func

    def _config_list(self, args, kwargs) -> list[dict]:
        configs = self.configs(*args, **kwargs) if callable(self.configs) else self.configs
        if isinstance(configs, dict):  # {name: [values]} -> the product
            keys = list(configs)
            configs = [dict(zip(keys, values)) for values in itertools.product(*(configs[k] for k in keys))]
        params = inspect.signature(self.jit_impl.func).parameters
        for config in configs:
            unknown = [k for k in config if k not in params]
            if unknown:
                raise ValueError(f"autotune config keys {unknown} are not parameters of {self.jit_impl.func.__name__}")
        return list(configs)

    def _tune(self, args, kwargs):
        configs = self._config_list(args, kwargs)
        tunable = {k for c in configs for k in c}
        if tunable & set(kwargs) or not configs:  # a tunable argument given explicitly: no tuning
            return self.jit_impl.compile(*args, **kwargs), None
        key = (argument_key(args), argument_key(kwargs))
        with self._lock:
            if key in self._best:
                return self._best[key]
            best = None
            for config in configs:
                kernel = self.jit_impl.compile(*args, **{**kwargs, **config})
                profiler = kernel.get_profiler(self.supply_type)
                if self.ref_prog is not None and not self.skip_check:
                    profiler.assert_allclose(self.ref_prog, atol=self.atol, rtol=self.rtol,
                                             max_mismatched_ratio=self.max_mismatched_ratio)  # fmt: skip
                latency = profiler.do_bench(warmup=self.warmup, rep=self.rep)
                if best is None or latency < best[2]:
                    best = (kernel, config, latency)
            kernel, config, latency = best
            kernel.latency, kernel.config = latency, config
            kernel.ref_latency = None
            self._best[key] = (kernel, config)
            return kernel, config

    def __call__(self, *args, **kwargs):
        kernel, config = self._tune(args, kwargs)
        if self.jit_impl.lazy:
            return kernel
        return self.jit_impl(*args, **{**kwargs, **(config or {})})

    def compile(self, *args, **kwargs):
        return self._tune(args, kwargs)[0]


def autotune(func=None, *, configs=None, warmup=25, rep=100, timeout=100, supply_type=None, ref_prog=None,
             supply_prog=None, rtol=1e-2, atol=1e-2, max_mismatched_ratio=0.01, skip_check=False,
             manual_check_prog=None, cache_input_tensors=False, do_not_specialize=None, early_stop=False,
             early_stop_factor=2.0):  # fmt: skip
    """Drop-in for ``tilelang.autotune``: pick the fastest config by timing each one."""

    def wrap(jit_impl):
        return AutoTuneImpl(jit_impl, configs, warmup=warmup, rep=rep, ref_prog=ref_prog, rtol=rtol, atol=atol,
                            max_mismatched_ratio=max_mismatched_ratio, skip_check=skip_check, supply_type=supply_type)  # fmt: skip

    return wrap(func) if func is not None else wrap
