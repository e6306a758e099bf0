"""``AutoTuner.run(early_stop=..., enable_grouped_compile=...)`` and ``@autotune(early_stop=...)``
(TileLang's examples/gemm/example_gemm_autotune_early_stop.py and ..._pass_configs.py): a configuration
whose first estimate exceeds the best latency so far times ``early_stop_factor`` is not timed in full."""

import time

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import profiler as t2t_profiler
from tile2triton.autotuner import AutoTuner


def scale_kernel(n, block=None, threads=None):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=threads) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    C[bx * block + i] = A[bx * block + i] * 3.0 - 1.0

    return main


CONFIGS = [{"block": 64, "threads": 64}, {"block": 96, "threads": 128}, {"block": 160, "threads": 128}]


def test_do_bench_early_stop_returns_the_estimate():
    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.004)

    latency = t2t_profiler.do_bench(slow, warmup=50, rep=200, device="cpu", early_stop_baseline=1.0)
    assert latency >= 4.0 and len(calls) == 6  # one untimed call, five timed: no full benchmark
    calls.clear()
    t2t_profiler.do_bench(slow, warmup=50, rep=200, device="cpu", early_stop_baseline=1e6)
    assert len(calls) > 6  # under the baseline: the full benchmark runs
    quantiles = t2t_profiler.do_bench(slow, quantiles=[0.5, 0.9], device="cpu", early_stop_baseline=1.0)
    assert len(quantiles) == 2 and quantiles[0] == quantiles[1] >= 4.0


def test_run_early_stop_baselines_and_grouped_compile(monkeypatch):
    n = 333
    seen = []
    real = t2t_profiler.Profiler.do_bench

    def spy(self, *args, early_stop_baseline=None, **kwargs):
        latency = real(self, *args, early_stop_baseline=early_stop_baseline, **kwargs)
        if args == ():  # the kernel's own timing, not ref_prog's
            seen.append((early_stop_baseline, latency))
        return latency

    monkeypatch.setattr(t2t_profiler.Profiler, "do_bench", spy)
    result = (
        AutoTuner.from_kernel(kernel=lambda **cfg: scale_kernel(n, **cfg), configs=CONFIGS)
        .set_compile_args(out_idx=[-1], target="auto")
        .set_profile_args(ref_prog=lambda a: a * 3.0 - 1.0)
        .run(warmup=1, rep=2, early_stop=True, early_stop_factor=1.2, enable_grouped_compile=True,
             group_compile_size=2, use_pipeline=True, benchmark_multi_gpu=False)  # fmt: skip
    )
    assert len(seen) == len(CONFIGS)
    assert seen[0][0] is None  # nothing to compare the first configuration with
    best = seen[0][1]
    for baseline, latency in seen[1:]:
        assert baseline == pytest.approx(best * 1.2)
        best = min(best, latency)
    assert result.latency == pytest.approx(best) and result.config in CONFIGS
    a = torch.randn(n)
    assert_close(result.kernel(a), a.double() * 3 - 1, atol=1e-5, rtol=1e-5)


def test_run_without_early_stop_times_every_config_in_full(monkeypatch):
    baselines = []
    real = t2t_profiler.Profiler.do_bench

    def spy(self, *args, early_stop_baseline=None, **kwargs):
        baselines.append(early_stop_baseline)
        return real(self, *args, early_stop_baseline=early_stop_baseline, **kwargs)

    monkeypatch.setattr(t2t_profiler.Profiler, "do_bench", spy)
    n = 201
    result = AutoTuner.from_kernel(kernel=lambda **cfg: scale_kernel(n, **cfg), configs=CONFIGS[:2]).run(
        warmup=1, rep=1, enable_grouped_compile=True
    )
    assert baselines == [None, None]
    a, c = torch.randn(n), poison((n,))
    result.kernel(a, c)
    assert_close(c, a.double() * 3 - 1, atol=1e-5, rtol=1e-5)


def test_early_stop_factor_below_one_is_rejected():
    tuner = AutoTuner.from_kernel(kernel=lambda **cfg: scale_kernel(100, **cfg), configs=CONFIGS[:1])
    with pytest.raises(ValueError, match="early_stop_factor must be >= 1.0"):
        tuner.run(warmup=1, rep=1, early_stop=True, early_stop_factor=0.5)


def test_autotune_decorator_early_stop():
    n = 277

    @tilelang.autotune(configs=CONFIGS, warmup=1, rep=1, early_stop=True, early_stop_factor=2.0)
    @tilelang.jit(out_idx=[-1])
    def scale(n, block=32, threads=32):
        return scale_kernel(n, block, threads)

    kernel = scale(n)
    a = torch.randn(n)
    assert kernel.config in CONFIGS
    assert_close(kernel(a), a.double() * 3 - 1, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="early_stop_factor"):
        tilelang.autotune(configs=CONFIGS, early_stop=True, early_stop_factor=0.9)(scale.jit_impl)


PASS_CONFIGS = [
    {"block": 64, "threads": 64, "pass_configs": {"tl.enable_fast_math": True}},
    {"block": 96, "threads": 128, "pass_configs": {"tl.disable_warp_specialized": True}},
]


def test_config_pass_configs_are_compile_options_not_arguments():
    """TileLang reserves the config key ``pass_configs`` (example_gemm_autotune_pass_configs.py): it merges
    over ``set_compile_args(pass_configs=...)`` and is not handed to the kernel factory."""
    n = 219
    result = (
        AutoTuner.from_kernel(kernel=lambda **cfg: scale_kernel(n, **cfg), configs=PASS_CONFIGS)
        .set_compile_args(pass_configs={"tl.disable_tma_lower": True})
        .run(warmup=1, rep=1, enable_grouped_compile=True)
    )
    assert result.config in PASS_CONFIGS
    a, c = torch.randn(n), poison((n,))
    result.kernel(a, c)
    assert_close(c, a.double() * 3 - 1, atol=1e-5, rtol=1e-5)


def test_autotune_decorator_config_pass_configs():
    n = 181

    @tilelang.autotune(configs=PASS_CONFIGS, warmup=1, rep=1)
    @tilelang.jit(out_idx=[-1])
    def scale(n, block=32, threads=32):
        return scale_kernel(n, block, threads)

    kernel = scale(n)
    a = torch.randn(n)
    assert kernel.config in PASS_CONFIGS
    assert_close(kernel(a), a.double() * 3 - 1, atol=1e-5, rtol=1e-5)
