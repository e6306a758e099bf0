"""One regression file of TileLang's suite under one implementation, in this process:

    python child.py [--variants SET] IMPL FILE PHASE OUT.json [CASE...]

IMPL is ``tilelang`` (the real one, from PYTHONPATH) or ``tile2triton`` (``import tilelang``
resolves to tile2triton through its alias hook).  Both implementations' ``do_bench`` are replaced
by one timer, so the two are measured alike:

- event ms: ``triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")`` (CUDA
  events, L2 flushed);
- kernel ms: the device time of every CUDA kernel one call launches (torch.profiler, which reads
  CUPTI), the L2 flush excluded, over 20 calls.

PHASE ``warm`` calls each timed callable once (compiles, fills the caches); ``time`` times them,
and records a sample of what the first call returned (``sample``) into OUT.samples.pt, with a
fingerprint of the random generators' state at that moment: equal fingerprints on both sides mean
the inputs were drawn alike, so the outputs can be compared.  Without CUDA (the tool's tests) the
timer is a wall clock and kernel ms is not measured.

``--variants SET`` runs each case at the shape variants.py's set SET (1 or 2) gives it (its ``process_func`` call
intercepted alike for both implementations); cases variants.py gives none are not run.
"""

import hashlib
import importlib.util
import json
import os
import random
import statistics
import sys
import time
import traceback
from collections.abc import Callable

FLUSH = "regression::cache_flush"
SAMPLE = 1 << 14  # elements kept per output tensor (evenly spaced): enough to compare, cheap to store


def sample(value):
    """What a timed call returned, made small: per tensor its shape, dtype and evenly spaced
    elements as float64 (NaN count kept); None when it returned no tensor."""
    import torch

    if isinstance(value, torch.Tensor):
        flat = value.detach().reshape(-1)
        step = max(1, flat.numel() // SAMPLE)
        picked = flat[::step][:SAMPLE]
        if picked.dtype.is_complex:
            picked = torch.view_as_real(picked)
        return {"shape": list(value.shape), "dtype": str(value.dtype), "values": picked.to(torch.float64).cpu()}
    if isinstance(value, (list, tuple)):
        parts = [sample(v) for v in value]
        return parts if any(p is not None for p in parts) else None
    if isinstance(value, dict):
        return sample(list(value.values()))
    return None


def rng_fingerprint() -> str:
    import torch

    h = hashlib.sha1(torch.get_rng_state().numpy().tobytes())
    if torch.cuda.is_available():
        h.update(torch.cuda.get_rng_state().numpy().tobytes())
    return h.hexdigest()[:16]


def kernel_ms(fn, calls: int = 20) -> float:
    """Device time of fn's CUDA kernels per call (torch.profiler / CUPTI), the L2 flush excluded."""
    return kernel_times(fn, calls)[0]


def kernel_times(fn, calls: int = 20) -> tuple[float, dict]:
    """``kernel_ms`` and the same per kernel name (ms a call): which kernel of a multi-kernel case
    the time goes to."""
    import torch

    cache = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(calls):
            with torch.profiler.record_function(FLUSH):
                cache.zero_()
            fn()
        torch.cuda.synchronize()
    total = flush = 0.0
    per_kernel: dict = {}
    for e in prof.events():
        if getattr(getattr(e, "device_type", None), "name", "") != "CUDA":
            continue
        if not e.is_user_annotation:
            total += e.self_device_time_total
            per_kernel[e.key] = per_kernel.get(e.key, 0.0) + e.self_device_time_total
        elif e.key == FLUSH:
            flush += e.self_device_time_total
    flush_kernels = [k for k, v in per_kernel.items() if abs(v - flush) <= 1e-3 * flush]
    for k in flush_kernels[:1]:  # the flush's own memset (the same total as its annotation)
        del per_kernel[k]
    return (total - flush) / calls * 1e-3, {k[:120]: round(v / calls * 1e-3, 5) for k, v in per_kernel.items()}


def wall_ms(fn, calls: int = 5) -> float:
    """The CPU stand-in for do_bench: median wall time of a few calls."""
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


class Timer:
    """The one ``do_bench`` both implementations get; records each call's figures."""

    def __init__(self, phase: str):
        self.phase = phase
        self.calls: list = []  # per bench call: {"ms", "kernel_ms", "rng"}
        self.samples: list = []

    def __call__(self, fn, *args, **kwargs):
        import torch

        cuda = torch.cuda.is_available()
        record = {}
        if self.phase == "warm":
            fn()
            ms = 1.0
        else:
            record["rng"] = rng_fingerprint()
            self.samples.append(sample(fn()))  # the first call: before any repeat could change state
            if cuda:
                import triton.testing

                ms = triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")
                try:
                    record["kernel_ms"], record["kernels"] = kernel_times(fn)
                except Exception as e:  # noqa: BLE001 - recorded, the event time stands
                    record["kernel_ms"] = f"{type(e).__name__}: {e}"[:200]
            else:
                ms = wall_ms(fn)
        if cuda:
            torch.cuda.synchronize()
        record["ms"] = ms
        self.calls.append(record)
        quantiles = kwargs.get("quantiles")
        return [ms] * len(quantiles) if quantiles else ms


def install(impl: str, timer: Timer) -> dict:
    """Import ``tilelang`` (tile2triton's alias for IMPL tile2triton) with ``timer`` as its do_bench;
    returns where ``tilelang.testing.process_func`` records a case's latency."""
    if impl == "tile2triton":
        from tile2triton.cli import install_tilelang_alias

        install_tilelang_alias()
    import tilelang
    import tilelang.profiler
    import tilelang.testing

    tilelang.profiler.do_bench = timer
    try:
        import tilelang.profiler.bench as bench

        bench.do_bench = timer
    except ImportError:
        pass
    recorded: dict = {}

    def process_func(func, name=None, /, **kwargs):
        recorded["latency"] = float(func(**kwargs))

    tilelang.testing.process_func = process_func
    recorded["version"] = getattr(tilelang, "__version__", "?")
    return recorded


def seed() -> None:
    """The same random inputs on both sides (examples draw them with torch.randn & co.)."""
    import torch

    random.seed(0)
    torch.manual_seed(0)
    try:
        import numpy

        numpy.random.seed(0)
    except ImportError:
        pass


def install_variants(recorded: dict, which: int) -> Callable:
    """Replaces ``tilelang.testing.process_func`` (after ``install``) by one that runs the case
    ``recorded["case"]`` names at its shape in variants.py's set ``which``; returns its lookup."""
    import tilelang.testing
    import variants  # this script's folder is sys.path[0]

    def process_func(func, name=None, /, **kwargs):
        recorded["latency"] = float(variants.variant_of(recorded["case"], which).call(func, kwargs))

    tilelang.testing.process_func = process_func
    return lambda case: variants.variant_of(case, which)


def main(argv: list) -> int:
    which = int(argv[1]) if argv[:1] == ["--variants"] else 0  # the variant set, 0: the suite's shapes
    skip = 2 if which else 0
    impl, path, phase, out = argv[skip : skip + 4]
    only = argv[skip + 4 :]
    timer = Timer(phase)
    recorded = install(impl, timer)
    variant_of = install_variants(recorded, which) if which else None
    import torch

    res = {"impl": impl, "file": path, "phase": phase, "version": recorded.pop("version"), "cases": {}}
    samples = {}
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)
    os.chdir(folder)
    t0 = time.time()
    names = []
    try:
        seed()
        spec = importlib.util.spec_from_file_location("_regression_" + os.path.basename(path)[:-3], path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        names = sorted(n for n in dir(mod) if n.startswith("regression_") and callable(getattr(mod, n)))
    except BaseException as e:  # noqa: BLE001 - recorded: the file's cases all fail alike
        res["import_error"] = f"{type(e).__name__}: {e}"[:600]
        res["traceback"] = traceback.format_exc()[-3000:]
    res["import_s"] = round(time.time() - t0, 2)
    for name in names:
        if only and name not in only:
            continue
        if variant_of is not None and not variant_of(name).runs:
            continue  # no variant: run.py lists it
        recorded.clear()
        if variant_of is not None:
            recorded["case"] = name
        timer.calls, timer.samples = [], []
        sys.argv = [path]  # examples that parse their own arguments see none
        seed()
        t1 = time.time()
        try:
            getattr(mod, name)()
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            res["cases"][name] = {"status": "ok", "latency": recorded.get("latency"), "bench": timer.calls}
            samples[name] = timer.samples
        except BaseException as e:  # noqa: BLE001 - record and go on
            res["cases"][name] = {"status": "error", "error": f"{type(e).__name__}: {e}"[:600],
                                  "tb": traceback.format_exc()[-1500:]}  # fmt: skip
            try:
                if torch.cuda.is_available():
                    torch.cuda.synchronize()
            except Exception:  # noqa: BLE001 - a broken context: the rest of the file cannot run
                res["cases"][name]["cuda_broken"] = True
                for rest in names[names.index(name) + 1 :]:
                    res["cases"][rest] = {"status": "error", "error": f"not run: {name} broke the CUDA context"}
                break
        res["cases"][name]["s"] = round(time.time() - t1, 2)
        with open(out, "w") as f:
            json.dump(res, f, indent=1)
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    if phase == "time":
        torch.save(samples, out[: -len(".json")] + ".samples.pt")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
