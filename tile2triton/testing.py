"""``tilelang.testing``'s common helpers for tile2triton."""

from __future__ import annotations

import importlib.util
import inspect
import os
import random
import sys

import torch

from . import settings
from .profiler import _mismatch_message

__all__ = [
    "main",
    "set_random_seed",
    "torch_assert_close",
    "requires_cuda",
    "requires_rocm",
    "requires_metal",
    "requires_llvm",
    "requires_cdna",
    "requires_cuda_or_cdna",
    "requires_gfx950",
    "requires_package",
    "requires_cuda_compute_version",
    "requires_cuda_compute_version_ge",
    "requires_cuda_compute_version_gt",
    "requires_cuda_compute_version_eq",
    "requires_cuda_compute_version_lt",
    "requires_cuda_compute_version_le",
    "process_func",
    "regression",
]


def main() -> None:
    """Run pytest on the calling file (``if __name__ == "__main__": tilelang.testing.main()``)."""
    import pytest

    file = os.path.abspath(inspect.getsourcefile(sys._getframe(1)))
    sys.exit(pytest.main([file, *sys.argv[1:]]))


def set_random_seed(seed: int = 42) -> None:
    random.seed(seed)
    try:
        import numpy as np

        np.random.seed(seed)
    except ImportError:
        pass
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def torch_assert_close(
    tensor_a,
    tensor_b,
    rtol=1e-2,
    atol=1e-3,
    max_mismatched_ratio=0.001,
    verbose=False,
    equal_nan=True,
    check_device=True,
    check_dtype=True,
    check_layout=True,
    check_stride=False,
    base_name="LHS",
    ref_name="RHS",
):
    """Like ``torch.testing.assert_close``, but up to ``max_mismatched_ratio`` of elements may differ."""
    if check_device and tensor_a.device != tensor_b.device:
        raise AssertionError(f"device mismatch: {base_name} on {tensor_a.device}, {ref_name} on {tensor_b.device}")
    if check_dtype and tensor_a.dtype != tensor_b.dtype:
        raise AssertionError(f"dtype mismatch: {base_name} is {tensor_a.dtype}, {ref_name} is {tensor_b.dtype}")
    if check_layout and tensor_a.layout != tensor_b.layout:
        raise AssertionError(f"layout mismatch: {base_name} is {tensor_a.layout}, {ref_name} is {tensor_b.layout}")
    if check_stride and tensor_a.stride() != tensor_b.stride():
        raise AssertionError(f"stride mismatch: {tensor_a.stride()} vs {tensor_b.stride()}")
    if not equal_nan:
        a_nan = torch.isnan(tensor_a.float()) if tensor_a.is_floating_point() else None
        if a_nan is not None and bool(a_nan.any()):
            raise AssertionError(f"{base_name} contains NaN")
    msg = _mismatch_message(tensor_a, tensor_b, atol, rtol, max_mismatched_ratio, f"{base_name} vs {ref_name}")
    if msg is not None:
        raise AssertionError(msg)
    if verbose:
        print(f"{base_name} and {ref_name} are close (rtol={rtol}, atol={atol})")


# ----------------------------------------------------------------------------- skip decorators
def _skipif(condition: bool, reason: str):
    import pytest

    return pytest.mark.skipif(condition, reason=reason)


def _cuda() -> bool:
    return torch.cuda.is_available() and torch.version.hip is None


def _cuda_or_interpreter() -> bool:
    # tools/tilelang_suite.py --cuda-as-cpu: TileLang's "needs CUDA" tests run on Triton's interpreter
    return _cuda() or settings.current().cuda_as_cpu


def requires_cuda(func=None):
    mark = _skipif(not _cuda_or_interpreter(), "needs CUDA")
    return mark(func) if func is not None else mark


requires_cuda.marks = lambda: [_skipif(not _cuda_or_interpreter(), "needs CUDA")]


def _never(reason):
    def deco(func=None):
        mark = _skipif(True, reason)
        return mark(func) if func is not None else mark

    return deco


requires_rocm = _never("tile2triton targets CUDA GPUs and the Triton interpreter, not ROCm")
requires_metal = _never("tile2triton has no Metal backend")
requires_llvm = _never("tile2triton has no LLVM CPU backend (use the Triton interpreter)")
requires_cdna = _never("tile2triton does not target AMD CDNA")
requires_gfx950 = _never("tile2triton does not target AMD gfx950")
requires_cuda_or_cdna = requires_cuda


def requires_package(*names):
    missing = [n for n in names if importlib.util.find_spec(n) is None]
    return _skipif(bool(missing), f"needs package(s) {', '.join(missing)}")


def _compute_version():
    if not _cuda():
        # tools/tilelang_suite.py --cuda-as-cpu: the interpreter stands for a generic pre-Hopper GPU
        # (tests gated on sm_90+ features such as TMA or wgmma still skip)
        return (8, 0) if _cuda_or_interpreter() else None
    return torch.cuda.get_device_capability()


_OPS = {
    "ge": lambda a, b: a >= b,
    "gt": lambda a, b: a > b,
    "eq": lambda a, b: a == b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
}


def requires_cuda_compute_version(major_version, minor_version=0, mode="ge"):
    if mode not in _OPS:
        raise ValueError(f"mode must be one of {sorted(_OPS)}, got {mode!r}")
    cap = _compute_version()
    ok = cap is not None and _OPS[mode](tuple(cap), (major_version, minor_version))
    return _skipif(not ok, f"needs CUDA compute capability {mode} {major_version}.{minor_version}")


def _variant(mode):
    def deco(major_version, minor_version=0):
        return requires_cuda_compute_version(major_version, minor_version, mode)

    deco.__name__ = f"requires_cuda_compute_version_{mode}"
    return deco


requires_cuda_compute_version_ge = _variant("ge")
requires_cuda_compute_version_gt = _variant("gt")
requires_cuda_compute_version_eq = _variant("eq")
requires_cuda_compute_version_lt = _variant("lt")
requires_cuda_compute_version_le = _variant("le")


# ----------------------------------------------------------------------------- perf regression
# ``process_func`` / ``regression``: the benchmark entry points of TileLang's examples
# (``regression_*`` functions in a module, each calling ``process_func(bench, **sizes)``).
_PERF_RESULTS: list[dict] = []
_PERF_CASE: list = [None]


def process_func(func, name=None, /, **kwargs) -> None:
    """Call ``func(**kwargs)`` (it returns a latency) and record the result under ``name``."""
    result_name = getattr(func, "__module__", "<unknown>") if name is None else name
    result_name = result_name.removeprefix("regression_")
    latency = float(func(**kwargs))
    for _ in range(5):  # a timer that returned nothing measurable: measure again
        if latency > 0.0:
            break
        latency = float(func(**kwargs))
    if latency <= 0.0:
        import warnings

        warnings.warn(f"{result_name} has latency {latency} <= 0", RuntimeWarning, stacklevel=2)
        return
    record = {"name": result_name, "latency": latency}
    if _PERF_CASE[0] is not None:
        record["case"] = _PERF_CASE[0]
    _PERF_RESULTS.append(record)


def regression(prefixes=("regression_",), verbose: bool = True) -> None:
    """Run the caller module's ``regression_*`` functions in name order and print each latency
    (``TL_PERF_REGRESSION_ONLY=a,b`` keeps the cases whose name contains one of the patterns;
    ``TL_PERF_REGRESSION_FORMAT=json`` prints one JSON line instead)."""
    import fnmatch
    import json
    import time

    caller = sys._getframe(1).f_globals
    funcs = sorted((k, v) for k, v in caller.items() if callable(v) and any(k.startswith(p) for p in prefixes))
    only = list(settings.current().regression_only)

    def wanted(name):
        case = name.removeprefix("regression_").lower()
        return not only or any(fnmatch.fnmatch(c, p) or p in c for p in only for c in (name.lower(), case))

    funcs = [(k, v) for k, v in funcs if wanted(k)]
    _PERF_RESULTS.clear()
    for i, (name, fn) in enumerate(funcs, 1):
        _PERF_CASE[0] = name.removeprefix("regression_")
        start = time.perf_counter()
        if verbose:
            print(f"  [{i}/{len(funcs)}] {_PERF_CASE[0]}", end="", flush=True)
        try:
            fn()
        finally:
            _PERF_CASE[0] = None
        if verbose:
            print(f" ({time.perf_counter() - start:.2f}s)", flush=True)
    if settings.current().regression_format == "json":
        print("__TILELANG_PERF_RESULTS_JSON__=" + json.dumps(_PERF_RESULTS, separators=(",", ":")))
    else:
        for r in _PERF_RESULTS:
            print(f"{r['name']}: {r['latency']}")
