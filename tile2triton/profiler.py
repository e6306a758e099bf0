"""``kernel.get_profiler()``: TileLang's Profiler (input generation, ``do_bench``, ``assert_allclose``).

On CUDA ``do_bench`` uses ``triton.testing.do_bench``; on the CPU (Triton's interpreter) it uses
a plain wall-clock timer, since Triton's benchmark needs a GPU driver.
"""

from __future__ import annotations

import statistics
import time
from enum import Enum

import torch

from . import ir
from .errors import MissingInputsError
from .ir.evaluate import NotHostEvaluable, host_eval


class TensorSupplyType(Enum):
    """How the profiler fills generated inputs (TileLang's ``tilelang.TensorSupplyType``)."""

    Integer = 1
    Uniform = 2
    Normal = 3
    Randn = 4
    Zero = 5
    One = 6
    Auto = 7


def _default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def supply_tensor(shape, dtype: torch.dtype, supply_type: TensorSupplyType, device, name: str = "") -> torch.Tensor:
    """One input tensor, drawn as TileLang's ``get_tensor_supply`` draws it: the same torch calls in
    the same dtypes, so a seeded generator gives both implementations the same inputs.  ``name`` is
    the TileLang dtype's name where it says more than the torch dtype (fp4 is stored as bytes)."""
    kind = (name or str(dtype).removeprefix("torch.")).lower()
    shape = tuple(shape)
    if supply_type in (TensorSupplyType.Auto, TensorSupplyType.Integer):
        if kind.startswith("uint"):
            return torch.randint(0, 3, shape, device=device, dtype=dtype)
        if kind.startswith("float8"):
            return torch.randint(-128, 128, shape, device=device, dtype=torch.int8).to(dtype)
        if kind.startswith("float4"):
            return torch.randint(0, 16, shape, device=device, dtype=dtype)
        if kind.startswith("bool"):
            return torch.randint(0, 2, shape, device=device, dtype=dtype)
        if supply_type == TensorSupplyType.Auto and dtype in (torch.float16, torch.float32, torch.bfloat16):
            return torch.empty(shape, device=device, dtype=dtype).uniform_(-1.0, 1.0)
        return torch.randint(-2, 3, shape, device=device, dtype=dtype)
    if dtype == torch.int8 and supply_type in (TensorSupplyType.Uniform, TensorSupplyType.Normal):
        return torch.ones(shape, device=device, dtype=dtype)
    if supply_type == TensorSupplyType.Uniform:
        return torch.empty(shape, device=device, dtype=torch.float32).uniform_(-1.0, 1.0).to(dtype)
    if supply_type == TensorSupplyType.Normal:
        return torch.empty(shape, device=device, dtype=torch.float32).normal_(-1.0, 1.0).to(dtype)
    if supply_type == TensorSupplyType.Randn:
        return torch.randn(shape, device=device).to(dtype)
    if supply_type == TensorSupplyType.Zero:
        return torch.zeros(shape, device=device, dtype=dtype)
    if supply_type == TensorSupplyType.One:
        return torch.ones(shape, device=device, dtype=dtype)
    raise ValueError(f"unknown TensorSupplyType {supply_type!r}")


def _as_list(out) -> list:
    if out is None:
        return []
    if isinstance(out, (list, tuple)):
        return list(out)
    return [out]


def _mismatch_message(a: torch.Tensor, b: torch.Tensor, atol: float, rtol: float, ratio: float, label: str):
    """None when a and b agree up to ``ratio`` mismatched elements, else a description."""
    if tuple(a.shape) != tuple(b.shape):
        return f"{label}: shape {tuple(a.shape)} != reference shape {tuple(b.shape)}"
    x = a.detach().to(torch.float64).cpu()
    y = b.detach().to(torch.float64).cpu()
    close = torch.isclose(x, y, rtol=rtol, atol=atol, equal_nan=True)
    bad = int((~close).sum())
    total = max(1, close.numel())
    if bad <= ratio * total:
        return None
    diff = (x - y).abs()
    diff = torch.where(torch.isnan(diff), torch.full_like(diff, float("inf")), diff)
    idx = int(diff.reshape(-1).argmax()) if diff.numel() else 0
    where = tuple(int(i) for i in torch.unravel_index(torch.tensor(idx), x.shape)) if x.dim() else ()
    return (
        f"{label}: {bad} of {total} elements ({bad / total:.2%}) mismatch, more than the allowed "
        f"{ratio:.2%} (atol={atol}, rtol={rtol}); greatest difference {float(diff.reshape(-1)[idx]) if diff.numel() else 0:.6g} "
        f"at index {where}: {float(x.reshape(-1)[idx]):.6g} vs reference {float(y.reshape(-1)[idx]):.6g}"
    )


def assert_close_ratio(a, b, atol=1e-2, rtol=1e-2, max_mismatched_ratio=0.01, label="output") -> None:
    msg = _mismatch_message(a, b, atol, rtol, max_mismatched_ratio, label)
    if msg is not None:
        raise AssertionError(msg)


class Profiler:
    """TileLang's ``Profiler`` for a compiled tile2triton kernel."""

    def __init__(self, kernel, supply_type: TensorSupplyType | None = None, device=None):
        self.kernel = kernel
        self.func = kernel
        self.supply_type = supply_type or TensorSupplyType.Auto
        self.device = torch.device(device) if device is not None else _default_device()
        func = kernel.prim_func  # T.alloc_global workspaces (the runtime's, last) are not inputs
        self.params = [p for i, p in enumerate(func.params) if i not in func.workspaces]
        self.result_idx = list(kernel.out_idx)

    # ------------------------------------------------------------------ inputs
    def _get_params(self, with_output: bool = False) -> list:
        """The parameters (``.shape``, ``.dtype``) inputs are made for: an autotuner's ``supply_prog`` gets
        these, without the outputs the runtime allocates, as TileLang's profiler gives them."""
        return [p for i, p in enumerate(self.params) if with_output or i not in self.result_idx]

    def _get_inputs(self, with_output: bool = False, dynamic_symbolic_constraints: dict | None = None) -> list:
        """Inputs made for the parameters; a T.dynamic size takes its value from
        ``dynamic_symbolic_constraints`` (its name -> its value, as TileLang's profiler does)."""
        sizes = {v: dynamic_symbolic_constraints[v.name] for v in self.kernel.prim_func.sizes
                 if v.name in (dynamic_symbolic_constraints or {})}  # fmt: skip
        inputs = []
        for param in self._get_params(with_output):
            if not isinstance(param, ir.Buffer):
                raise MissingInputsError(
                    f"{self.kernel.prim_func.name}: the profiler cannot invent a value for scalar parameter "
                    f"'{param.name}'; pass input_tensors=[...] (under autotuning: set_autotune_inputs(...))"
                )
            shape = []
            for d in param.shape:
                try:
                    d = host_eval(d, sizes) if not isinstance(d, int) else d
                except (NotHostEvaluable, KeyError):
                    missing = [v.name for v in self.kernel.prim_func.sizes if v not in sizes]
                    raise MissingInputsError(
                        f"{self.kernel.prim_func.name}: '{param.name}' has a dynamic shape; the profiler needs "
                        f"input_tensors=[...] or dynamic_symbolic_constraints with a value for {', '.join(missing)} "
                        "to know its size"
                    ) from None
                shape.append(d)
            dtype = param.dtype
            inputs.append(supply_tensor(shape, dtype.as_torch(), self.supply_type, self.device, dtype.name))
        return inputs

    def _inputs(self, input_tensors, dynamic_symbolic_constraints=None):
        if input_tensors is not None:
            return list(input_tensors)
        return self._get_inputs(dynamic_symbolic_constraints=dynamic_symbolic_constraints)

    # ------------------------------------------------------------------ checks
    def assert_allclose(
        self,
        reference_program,
        input_tensors=None,
        atol: float = 1e-2,
        rtol: float = 1e-2,
        max_mismatched_ratio: float = 0.01,
    ) -> None:
        """Run the kernel and ``reference_program`` on the same generated inputs; compare the outputs."""
        ins = self._inputs(input_tensors)
        ref_outs = _as_list(reference_program(*ins))
        lib_outs = _as_list(self.kernel(*ins))
        if len(ref_outs) != len(lib_outs):
            raise AssertionError(f"the reference returned {len(ref_outs)} output(s), the kernel {len(lib_outs)}")
        for k, (lib, ref) in enumerate(zip(lib_outs, ref_outs)):
            if not isinstance(ref, torch.Tensor):
                ref = torch.as_tensor(ref)
            label = f"output {k}" if len(lib_outs) > 1 else "output"
            assert_close_ratio(lib, ref.to(lib.device), atol, rtol, max_mismatched_ratio, label)

    def manual_assert_close(self, reference_program, input_tensors=None, manual_check_prog=None) -> None:
        ins = self._inputs(input_tensors)
        ref_outs = reference_program(*ins)
        lib_outs = self.kernel(*ins)
        if manual_check_prog is None:
            raise ValueError("manual_assert_close needs manual_check_prog(lib_outs, ref_outs)")
        manual_check_prog(lib_outs, ref_outs)

    def assert_consistent(self, repeat: int = 10) -> None:
        """Run the kernel ``repeat`` times on the same inputs; all outputs must be identical."""
        ins = self._get_inputs()
        first = _as_list(self.kernel(*ins))
        for _ in range(repeat - 1):
            again = _as_list(self.kernel(*ins))
            for a, b in zip(first, again):
                if not torch.equal(a, b):
                    raise AssertionError("kernel outputs differ between runs on the same inputs (a data race?)")

    def run_once(self, func=None):
        ins = self._get_inputs()
        return (func or self.kernel)(*ins)

    def __call__(self, *args, **kwargs):
        """Calls the kernel, as TileLang's profiler forwards a call to its adapter."""
        return self.func(*args, **kwargs)

    # ------------------------------------------------------------------ timing
    def do_bench(
        self,
        func=None,
        warmup: int = 25,
        rep: int = 100,
        n_warmup: int = 0,
        n_repeat: int = 0,
        input_tensors=None,
        backend: str = "event",
        quantiles=None,
        return_mode: str = "mean",
        dynamic_symbolic_constraints=None,
        device=None,
        early_stop_baseline=None,
    ):
        """Mean time of one call in milliseconds (``quantiles`` gives a list instead)."""
        ins = self._inputs(input_tensors, dynamic_symbolic_constraints)
        fn = func or self.kernel
        return do_bench(
            lambda: fn(*ins),
            warmup=warmup,
            rep=rep,
            _n_warmup=n_warmup,
            _n_repeat=n_repeat,
            quantiles=quantiles,
            return_mode=return_mode,
            device=self._device_of(ins),
            early_stop_baseline=early_stop_baseline,
        )

    def _device_of(self, ins):
        for t in ins:
            if isinstance(t, torch.Tensor):
                return t.device
        return self.device


def do_bench(
    fn,
    warmup: float = 25,
    rep: float = 100,
    _n_warmup: int = 0,
    _n_repeat: int = 0,
    quantiles=None,
    fast_flush: bool = True,
    backend: str = "event",
    return_mode: str = "mean",
    device=None,
    cache_size: int = 256,
    early_stop_baseline=None,
):
    """``tilelang.profiler.do_bench``: triton.testing.do_bench on CUDA, a wall-clock timer on the CPU."""
    dev = torch.device(device) if device is not None else _default_device()
    if early_stop_baseline is not None:
        # TileLang's early stop: estimate from 5 calls; slower than the baseline, that estimate is the answer
        estimate_ms = _estimate(fn, dev)
        if estimate_ms > early_stop_baseline:
            return [estimate_ms] * len(quantiles) if quantiles is not None else estimate_ms
    if dev.type == "cuda":
        import triton.testing

        if _n_warmup or _n_repeat:
            return _wall_clock(fn, _n_warmup, _n_repeat, quantiles, return_mode, sync=torch.cuda.synchronize)
        return triton.testing.do_bench(fn, warmup=warmup, rep=rep, quantiles=quantiles, return_mode=return_mode)
    fn()  # compile and warm caches
    t0 = time.perf_counter()
    fn()
    estimate_ms = max((time.perf_counter() - t0) * 1e3, 1e-6)
    n_warmup = _n_warmup or max(0, min(int(warmup / estimate_ms), 100))
    n_repeat = _n_repeat or max(1, min(int(rep / estimate_ms), 1000))
    return _wall_clock(fn, n_warmup, n_repeat, quantiles, return_mode)


def _estimate(fn, dev: torch.device, calls: int = 5) -> float:
    """Mean milliseconds of ``calls`` back-to-back calls after one untimed call."""
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - t0) * 1e3 / calls


def _wall_clock(fn, n_warmup, n_repeat, quantiles, return_mode, sync=None):
    for _ in range(n_warmup):
        fn()
    times = []
    for _ in range(max(1, n_repeat)):
        if sync:
            sync()
        t0 = time.perf_counter()
        fn()
        if sync:
            sync()
        times.append((time.perf_counter() - t0) * 1e3)
    if quantiles is not None:
        q = torch.quantile(torch.tensor(times, dtype=torch.float64), torch.tensor(quantiles, dtype=torch.float64))
        out = q.tolist()
        return out[0] if len(out) == 1 else out
    if return_mode == "min":
        return min(times)
    if return_mode == "max":
        return max(times)
    if return_mode == "median":
        return statistics.median(times)
    if return_mode == "all":
        return times
    return statistics.fmean(times)
