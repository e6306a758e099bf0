"""kernel.get_profiler(): TileLang-compatible do_bench / assert_allclose; tile2triton.testing helpers."""

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T
import tile2triton.testing
from tile2triton.profiler import Profiler, TensorSupplyType, supply_tensor


@tilelang.jit(out_idx=[-1])
def axpy(N, alpha, block=64, dtype="float32"):
    @T.prim_func
    def main(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype), Z: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=64) as bx:
            for i in T.Parallel(block):
                Z[bx * block + i] = X[bx * block + i] * alpha + Y[bx * block + i]

    return main


def test_get_profiler_returns_profiler():
    prof = axpy(100, 2.0).get_profiler()
    assert isinstance(prof, Profiler)
    assert prof.supply_type == TensorSupplyType.Auto


def test_profiler_call_runs_the_kernel():
    """TileLang's Profiler forwards a call to its kernel (scripts run ``profiler(a, b)``)."""
    x, y = torch.randn(100), torch.randn(100)
    z = axpy(100, 2.0).get_profiler()(x, y)
    torch.testing.assert_close(z, 2.0 * x + y)


def test_assert_allclose_passes_on_correct_reference():
    axpy(100, 2.0).get_profiler().assert_allclose(lambda x, y: 2.0 * x + y, atol=1e-5, rtol=1e-5)


def test_assert_allclose_fails_on_wrong_reference():
    prof = axpy(100, 2.0).get_profiler()
    with pytest.raises(AssertionError, match="mismatch"):
        prof.assert_allclose(lambda x, y: 3.0 * x + y, atol=1e-5, rtol=1e-5)


def test_max_mismatched_ratio_tolerates_a_few():
    prof = axpy(100, 2.0).get_profiler()

    def almost(x, y):
        out = 2.0 * x + y
        out[3] += 10.0  # 1 of 100 elements wrong
        return out

    prof.assert_allclose(almost, atol=1e-5, rtol=1e-5, max_mismatched_ratio=0.02)
    with pytest.raises(AssertionError):
        prof.assert_allclose(almost, atol=1e-5, rtol=1e-5, max_mismatched_ratio=0.0)


def test_explicit_input_tensors():
    prof = axpy(37, 0.5).get_profiler()
    x, y = torch.randn(37), torch.randn(37)
    prof.assert_allclose(lambda a, b: 0.5 * a + b, input_tensors=[x, y], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    "kind, check",
    [
        (TensorSupplyType.Zero, lambda t: bool((t == 0).all())),
        (TensorSupplyType.One, lambda t: bool((t == 1).all())),
        (TensorSupplyType.Auto, lambda t: bool((t.abs() <= 1).all()) and t.std() > 0),
        (TensorSupplyType.Integer, lambda t: bool((t == t.round()).all())),
        (TensorSupplyType.Randn, lambda t: t.std() > 0.5),
    ],
)
def test_supply_types(kind, check):
    t = supply_tensor((512,), torch.float16, kind, "cpu")
    assert t.dtype == torch.float16 and check(t.float())


def test_supply_type_int_auto():
    t = supply_tensor((256,), torch.int32, TensorSupplyType.Auto, "cpu")
    assert t.dtype == torch.int32 and int(t.min()) >= -2 and int(t.max()) <= 2


def test_profiler_zero_supply_type_used():
    prof = axpy(64, 2.0).get_profiler(TensorSupplyType.One)
    out = prof.run_once()
    torch.testing.assert_close(out.cpu(), torch.full((64,), 3.0))


def test_do_bench_returns_positive_ms():
    prof = axpy(64, 2.0).get_profiler()
    ms = prof.do_bench(warmup=1, rep=1)
    assert isinstance(ms, float) and ms > 0
    ms2 = prof.do_bench(lambda x, y: 2.0 * x + y, n_warmup=1, n_repeat=3)
    assert ms2 > 0
    q = prof.do_bench(n_warmup=0, n_repeat=3, quantiles=[0.5, 0.8])
    assert len(q) == 2


def test_dynamic_shape_needs_input_tensors():
    N = T.dynamic("N")

    @tilelang.jit(out_idx=[-1])
    def dyn():
        @T.prim_func
        def main(X: T.Tensor((N,), "float32"), Z: T.Tensor((N,), "float32")):
            with T.Kernel(T.ceildiv(N, 32), threads=32) as bx:
                for i in T.Parallel(32):
                    Z[bx * 32 + i] = X[bx * 32 + i] + 1.0

        return main

    prof = dyn().get_profiler()
    with pytest.raises(tilelang.KernelCallError, match="input_tensors"):
        prof.run_once()
    prof.assert_allclose(lambda x: x + 1.0, input_tensors=[torch.randn(45)], atol=1e-6, rtol=1e-6)
    # TileLang's dynamic_symbolic_constraints: the sizes of the inputs the profiler makes
    (x,) = prof._get_inputs(dynamic_symbolic_constraints={"N": 37})
    assert x.shape == (37,)
    assert prof.do_bench(n_warmup=0, n_repeat=2, dynamic_symbolic_constraints={"N": 37}) > 0
    with pytest.raises(ValueError, match="a value for N"):  # TileLang's error names the size too
        prof.do_bench(n_warmup=0, n_repeat=2, dynamic_symbolic_constraints={"M": 37})


def test_assert_consistent():
    axpy(64, 2.0).get_profiler().assert_consistent(repeat=2)


# ----------------------------------------------------------------------------- tile2triton.testing
def test_torch_assert_close_ratio():
    a = torch.zeros(1000)
    b = torch.zeros(1000)
    b[0] = 1.0
    tile2triton.testing.torch_assert_close(a, b, max_mismatched_ratio=0.001)
    b[1] = 1.0
    with pytest.raises(AssertionError, match="mismatch"):
        tile2triton.testing.torch_assert_close(a, b, max_mismatched_ratio=0.001)
    with pytest.raises(AssertionError, match="dtype"):
        tile2triton.testing.torch_assert_close(a, b.half())


def test_set_random_seed_reproducible():
    tile2triton.testing.set_random_seed(7)
    a = torch.randn(4)
    tile2triton.testing.set_random_seed(7)
    assert torch.equal(a, torch.randn(4))


def test_requires_decorators_are_pytest_marks():
    mark = tile2triton.testing.requires_cuda
    assert callable(mark)
    assert tile2triton.testing.requires_cuda_compute_version(8, 0) is not None
    assert tile2triton.testing.requires_cuda_compute_version_ge(9) is not None
    assert tile2triton.testing.requires_package("torch").mark.args[0] is False
    assert tile2triton.testing.requires_package("surely_not_a_pkg_xyz").mark.args[0] is True


@tile2triton.testing.requires_cuda
def test_requires_cuda_skips_without_cuda():
    assert torch.cuda.is_available()


# ----------------------------------------------------------------------------- @tilelang.autotune's checks
def _scaled_inputs(params):
    """A supply_prog: TileLang hands it the input parameters (not the runtime-allocated output)."""
    assert [p.name for p in params] == ["X", "Y"]
    (n,) = params[0].shape
    return [torch.randn(n) * 1e-3, torch.randn(n) * 1e-3]


def test_autotune_decorator_takes_supply_and_manual_check_progs():
    """TileLang's gemm_fp8 example tunes with supply_prog= and manual_check_prog=: both reach the tuner
    (the decorator once dropped them, and the default inputs made its fp16 reference overflow)."""
    seen = []

    def manual_check(lib_out, ref_out):
        seen.append(float(lib_out.abs().max()))
        torch.testing.assert_close(lib_out, ref_out, atol=1e-6, rtol=1e-5)

    tuned = tilelang.autotune(
        configs=[{"block": 32}, {"block": 64}],
        ref_prog=lambda x, y: 2.0 * x + y,
        supply_prog=_scaled_inputs,
        manual_check_prog=manual_check,
    )(axpy)
    kernel = tuned(77, 2.0)
    assert len(seen) == 2 and max(seen) < 0.1  # the supplied (small) inputs, each config checked
    x, y = torch.randn(77), torch.randn(77)
    torch.testing.assert_close(kernel(x, y), 2.0 * x.double() + y.double(), check_dtype=False)


def test_autotune_skips_a_config_that_fails_and_reports_when_all_do():
    """As TileLang's tuner: a configuration that does not build (an fp8 format Triton lacks) or fails the
    check is skipped with a warning; only when every one fails is tuning an error."""
    tuned = tilelang.autotune(
        configs=[{"dtype": "float8_e4m3fnuz"}, {"dtype": "float32"}], ref_prog=lambda x, y: 2.0 * x + y
    )(axpy)
    with pytest.warns(UserWarning, match="float8_e4m3fnuz"):
        kernel = tuned(50, 2.0)
    assert kernel.config == {"dtype": "float32"}
    x, y = torch.randn(50), torch.randn(50)
    torch.testing.assert_close(kernel(x, y), 2.0 * x.double() + y.double(), check_dtype=False)

    wrong = tilelang.autotune(configs=[{"block": 32}, {"block": 64}], ref_prog=lambda x, y: 3.0 * x + y)(axpy)
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="Auto-tuning failed: No configuration"):
        wrong(50, 2.0)


def test_autotune_without_scalar_inputs_asks_for_them():
    # a scalar parameter the profiler cannot invent: no configuration could run, so the tuner says so at
    # once (a ValueError naming set_autotune_inputs, as TileLang's) instead of skipping every config
    @tilelang.autotune(configs=[{"threads": 64}, {"threads": 128}], warmup=1, rep=1)
    @tilelang.jit
    def add_scalar(N: int = 77, threads: int = 64):
        @T.prim_func
        def kernel(A: T.Tensor((N,), T.float32), s: T.float32):
            with T.Kernel(1, threads=threads):
                for i in T.Parallel(N):
                    A[i] = A[i] + s

        return kernel

    with pytest.raises(ValueError, match="set_autotune_inputs"):
        add_scalar()


def _tilelang_draw(shape, dtype, kind):
    """What TileLang 0.1.15's ``tilelang.utils.tensor.get_tensor_supply`` does for these dtypes
    (restated from its source): the draws a seeded run of TileLang's profiler makes."""
    if kind in (TensorSupplyType.Auto, TensorSupplyType.Integer):
        if dtype == torch.uint8:
            return torch.randint(low=0, high=3, size=shape, dtype=dtype)
        if dtype == torch.float8_e4m3fn:
            return torch.randint(low=-128, high=128, size=shape, dtype=torch.int8).to(dtype)
        if kind == TensorSupplyType.Auto and dtype in {torch.float16, torch.float32, torch.bfloat16}:
            return torch.empty(*shape, dtype=dtype).uniform_(-1.0, 1.0)
        return torch.randint(low=-2, high=3, size=shape, dtype=dtype)
    if dtype == torch.int8:
        return torch.ones(*shape, dtype=dtype)
    if kind == TensorSupplyType.Uniform:
        return torch.empty(*shape, dtype=torch.float32).uniform_(-1.0, 1.0).to(dtype)
    return torch.empty(*shape, dtype=torch.float32).normal_(-1.0, 1.0).to(dtype)


@pytest.mark.parametrize(
    "dtype", [torch.float16, torch.bfloat16, torch.float32, torch.int32, torch.int8, torch.uint8, torch.float8_e4m3fn]
)
@pytest.mark.parametrize(
    "kind", [TensorSupplyType.Auto, TensorSupplyType.Integer, TensorSupplyType.Uniform, TensorSupplyType.Normal]
)
def test_supply_draws_as_tilelang(dtype, kind):
    """A seeded generator gives the same inputs as TileLang's profiler (the regression suite compares
    both implementations' outputs on them): same calls, same dtypes, so the same random stream."""
    shape = (37, 5)
    torch.manual_seed(3)
    ours = supply_tensor(shape, dtype, kind, "cpu")
    torch.manual_seed(3)
    theirs = _tilelang_draw(shape, dtype, kind)
    assert ours.dtype == theirs.dtype
    assert (
        torch.equal(ours.view(torch.uint8), theirs.view(torch.uint8))
        if dtype.itemsize == 1
        else torch.equal(ours, theirs)
    )
    if dtype.is_floating_point:  # (integers under Uniform / Normal truncate to few values, as in TileLang)
        assert ours.float().std() > 0
