"""Binder drop-in cases found by running TileLang's example CI: compile-time `is`/`in`,
symbolic sizes from tvm Var, and the other names the examples use."""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import TileLangCompileError
from tile2triton.transform import PassConfigKey

# ---------------------------------------------------------------- `is` / `in` on compile-time values


@tilelang.jit
def scaled_window(A, scale=None, window=None, dtype=T.float32, block=16):
    N = T.const("N")
    A: T.Tensor((N,), dtype)
    assert dtype in [T.float32, T.float16], "only float32 and float16"
    assert dtype not in (T.int8,)
    if scale is None:
        scale = 2.0
    B = T.empty((N,), dtype)
    with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
        # the window start is a compile-time choice (the attention-sink examples' idiom)
        start = T.max(0, bx * block - window) if window is not None else 0
        for i in T.Parallel(block):
            idx = bx * block + i
            if idx < N:
                B[idx] = T.if_then_else(idx >= start, A[idx] * scale, A[idx])
    return B


def test_is_and_in_evaluate_at_compile_time(dev):
    a = torch.randn(53, device=dev)
    assert_close(scaled_window(a), a.double() * 2, 1e-6, 1e-6)
    assert_close(scaled_window(a, scale=-3.0), a.double() * -3, 1e-6, 1e-6)
    out = scaled_window(a, scale=0.5, window=5)
    idx = torch.arange(53)
    start = torch.clamp((idx // 16) * 16 - 5, min=0)
    ref = torch.where(idx >= start, a.double().cpu() * 0.5, a.double().cpu())
    assert_close(out, ref, 1e-6, 1e-6)


def test_membership_assert_fails_with_its_message():
    with pytest.raises(TileLangCompileError, match="only float32 and float16"):
        scaled_window(torch.randn(20, dtype=torch.float64), dtype=T.float64)


@tilelang.jit
def membership_on_kernel_value(A):
    N = T.const("N")
    A: T.Tensor((N,), T.int32)
    B = T.empty((N,), T.int32)
    with T.Kernel(1, threads=32) as bx:
        for i in T.Parallel(N):
            B[i] = 1 if A[i] in [1, 2] else 0
    return B


def test_membership_on_kernel_value_is_an_error():
    with pytest.raises(TileLangCompileError, match="'in' comparisons are not supported on kernel values"):
        membership_on_kernel_value(torch.arange(7, dtype=torch.int32))


# ---------------------------------------------------------------- tvm.tirx.Var as a symbolic size


@tilelang.jit(out_idx=[-1])
def tirx_var_rows(block=16):
    from tile2triton.tvm import tir, tirx

    M, N = tirx.Var("M", "int32"), tir.Var("N", "int32")

    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), B: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, block), M, threads=32) as (bx, by):
            for j in T.Parallel(block):
                B[by, bx * block + j] = A[by, bx * block + j] * 2.0 + by

    return main


def test_tirx_var_is_a_symbolic_size(dev):
    kernel = tirx_var_rows()
    for m, n in ((5, 37), (11, 70)):  # one kernel serves both sizes
        a = torch.randn(m, n, device=dev)
        ref = a.double() * 2 + torch.arange(m, dtype=torch.float64, device=dev)[:, None]
        assert_close(kernel(a), ref, 1e-6, 1e-6)


def test_fastmath_checks_dtype_on_symbols_and_in_kernels():
    from tile2triton.tvm import tirx

    call = T.__exp(tirx.Var("v", "bfloat16"))
    assert isinstance(call, tirx.Call) and call.dtype == "bfloat16"
    for dtype in ("int32", "float8_e4m3fn", "bool"):
        with pytest.raises(TypeError, match=rf"T\.__log2 only supports floating-point inputs, but got {dtype}"):
            T.__log2(tirx.Var("v", dtype))

    @T.prim_func
    def int_exp(A: T.Tensor((8,), T.int32), B: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(8):
                B[i] = T.__exp(A[i])

    with pytest.raises(TileLangCompileError, match=r"T\.__exp only supports floating-point inputs, but got int32"):
        tilelang.compile(int_exp)


# ---------------------------------------------------------------- helpers returning values inside T.Kernel


def flip_sign_bits(x):
    """A plain helper handed kernel values (the topk_selector idiom): inlined, its return is its value."""
    bits = T.reinterpret(x, T.uint32)
    return T.if_then_else(x < 0, ~bits, bits | T.cast(0x80000000, T.uint32))


@T.macro
def clamp_twice(v, hi):
    return T.min(v, hi) * 2.0


@tilelang.jit
def ordered_keys(A, block=32):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    K = T.empty((N,), T.uint32)
    C = T.empty((N,), T.float32)
    with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
        for i in T.Parallel(block):
            idx = bx * block + i
            if idx < N:
                K[idx] = flip_sign_bits(A[idx])
                C[idx] = clamp_twice(A[idx], 0.25)
    return K, C


def test_helper_return_inside_kernel(dev):
    a = torch.randn(77, device=dev)
    keys, clamped = ordered_keys(a)
    bits = a.cpu().view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    ref = torch.where(a.cpu() < 0, bits ^ 0xFFFFFFFF, bits | 0x80000000)
    assert torch.equal(keys.cpu().view(torch.int32).to(torch.int64) & 0xFFFFFFFF, ref)
    assert torch.equal(torch.sort(ref).indices, torch.sort(a.cpu().double()).indices)  # keys order as floats
    assert_close(clamped, torch.clamp(a.double(), max=0.25) * 2, 1e-6, 1e-6)


@tilelang.jit
def return_in_kernel(A):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    B = T.empty((N,), T.float32)
    with T.Kernel(1, threads=32):
        for i in T.Parallel(N):
            B[i] = A[i]
        return B


def test_return_in_kernel_body_is_still_an_error():
    with pytest.raises(TileLangCompileError, match="'return' inside T.Kernel"):
        return_in_kernel(torch.randn(9))


def pow2_of(e):
    """2**e for an int32 exponent, by building the float's bits (the act_quant idiom)."""
    return T.reinterpret((e + 127) << 23, "float32")


@tilelang.jit
def pow2_table(E, block=32):
    N = T.const("N")
    E: T.Tensor((N,), T.int32)
    P = T.empty((N,), T.float32)
    with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
        for i in T.Parallel(block):
            if bx * block + i < N:
                P[bx * block + i] = pow2_of(E[bx * block + i])
    return P


def test_reinterpret_int_bits_as_float(dev):
    e = torch.randint(-30, 31, (45,), dtype=torch.int32, device=dev)
    # the reference on the CPU: CUDA's double pow is not exact (1 ulp off for some exponents)
    assert_close(pow2_table(e), torch.pow(2.0, e.cpu().double()), 0, 0)


# ---------------------------------------------------------------- lambdas using T.* (inlined like helpers)

LANE_OPS = {
    "max": lambda a, b, dtype: T.max(a, b),
    "clamp": lambda a, b, dtype: T.clamp(a, T.cast(-1.0, dtype), T.cast(b, dtype)),
}
# two lambdas on one line, told apart by where their code sits
mul_add, mul_sub = (lambda x, y: T.max(x, 0.0) * y + 1.0), (lambda x, y: T.max(x, 0.0) * y - 1.0)


def lane_op_kernel(N, block, op):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32), C: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            for i in T.Parallel(block):
                if op == "add":
                    C[bx * block + i] = mul_add(A[bx * block + i], B[bx * block + i])
                elif op == "sub":
                    C[bx * block + i] = mul_sub(A[bx * block + i], B[bx * block + i])
                else:
                    C[bx * block + i] = LANE_OPS[op](A[bx * block + i], B[bx * block + i], T.float32)

    return main


@pytest.mark.parametrize("op", ["max", "clamp", "add", "sub"])
def test_lambda_using_T_is_inlined(dev, op):
    n = 83
    a, b = torch.randn(n, device=dev), torch.rand(n, device=dev) + 0.5
    c = torch.full((n,), float("nan"), device=dev)
    tilelang.compile(lane_op_kernel(n, 32, op))(a, b, c)
    ad, bd = a.double(), b.double()
    ref = {
        "max": torch.maximum(ad, bd),
        "clamp": torch.minimum(torch.clamp(ad, min=-1.0), bd),
        "add": torch.clamp(ad, min=0) * bd + 1,
        "sub": torch.clamp(ad, min=0) * bd - 1,
    }[op]
    assert_close(c, ref, 1e-6, 1e-6)


def test_clamp_takes_tilelang_keyword_names(dev):
    n = 70

    @T.prim_func
    def clamp_kw(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
        with T.Kernel(T.ceildiv(n, 32), threads=32) as bx:
            for i in T.Parallel(32):
                B[bx * 32 + i] = T.clamp(A[bx * 32 + i], min_val=-0.5, max_val=0.75)

    a = torch.randn(n, device=dev)
    b = torch.full((n,), float("nan"), device=dev)
    tilelang.compile(clamp_kw)(a, b)
    assert_close(b, torch.clamp(a.double(), -0.5, 0.75), 0, 0)


# ---------------------------------------------------------------- tilelang.math, no-effect hints


def test_tilelang_math_helpers():
    assert [tilelang.math.next_power_of_2(x) for x in (1, 2, 3, 57, 64, 65)] == [1, 2, 4, 64, 64, 128]
    assert tilelang.math.cdiv(100, 7) == 15


@tilelang.jit
def hinted_scale(A, block=32):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    B = T.empty((N,), T.float32)
    with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
        T.disable_warp_group_reg_alloc()
        T.set_max_nreg(240, 1)
        T.dec_max_nreg(24)
        T.annotate_consumer_reg_alloc()
        T.annotate_compile_flags(["--use_fast_math"])
        T.assume(bx < T.ceildiv(N, block))
        for i in T.Parallel(block):
            if bx * block + i < N:
                B[bx * block + i] = A[bx * block + i] * 3.0
    return B


def test_no_effect_hints_are_accepted(dev):
    a = torch.randn(61, device=dev)
    assert_close(hinted_scale(a), a.double() * 3, 1e-6, 1e-6)


# ---------------------------------------------------------------- autotune: a tunable argument given by position


@tilelang.autotune(configs=[{"block": 32}, {"block": 64}], warmup=1, rep=1)
@tilelang.jit(out_idx=[-1])
def tuned_offset(N, block=16):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] + block

    return main


def test_autotune_tunable_given_by_position_skips_tuning():
    kernel = tuned_offset(75, 16)  # block=16 is no config: given explicitly, it is used as is
    a = torch.randn(75)
    assert_close(kernel(a), a.double() + 16, 1e-6, 1e-6)


@tilelang.autotune(configs=[{"block": 32}, {"block": 64}], warmup=1, rep=1)
@tilelang.jit
def tuned_eager_offset(A, block=16):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    B = T.empty((N,), T.float32)
    with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
        for i in T.Parallel(block):
            if bx * block + i < N:
                B[bx * block + i] = A[bx * block + i] + block
    return B


def test_eager_autotune_with_tunables_given_runs_untuned(dev, monkeypatch):
    """An eager kernel called with its tunable given (blocksparse_gemm's regression case): each call
    runs that configuration, and the static configuration list is expanded and checked once, not on
    every call (it was 190 us of a call's host time for 216 configurations)."""
    from tile2triton import autotuner

    expanded = []
    original = autotuner._expand
    monkeypatch.setattr(autotuner, "_expand", lambda configs: expanded.append(1) or original(configs))
    tuned_eager_offset._static = None
    for n, block in ((75, 16), (75, 16), (131, 48)):
        a = torch.randn(n, device=dev)
        assert_close(tuned_eager_offset(a, block), a.double() + block, 1e-6, 1e-6)
    assert len(expanded) == 1


# ---------------------------------------------------------------- @T.prim_func with body declarations, attrs


@T.prim_func
def body_declared_add(A, S):
    m = T.dynamic("m")
    A: T.Tensor[[m, 19], T.float32]
    S: T.Tensor[[19], T.float32]
    T.annotate_pass_configs({PassConfigKey.TL_ENABLE_FAST_MATH: True})
    T.annotate_compile_flags(["--use_fast_math"])
    B = T.empty([m, 19], T.float32)
    with T.Kernel(T.ceildiv(m, 8), threads=32) as bx:
        for i, j in T.Parallel(8, 19):
            if bx * 8 + i < m:
                B[bx * 8 + i, j] = A[bx * 8 + i, j] + S[j]
    return B


@T.prim_func
def body_declared_inout(A, B):
    A: T.Tensor[[37], T.float32]
    B: T.Tensor[[37], T.float32]
    with T.Kernel(1, threads=32):
        for i in T.Parallel(37):
            B[i] = A[i] * -2.0


def test_prim_func_with_body_declarations_and_attrs(dev):
    attrs = body_declared_add.attrs
    assert attrs["global_symbol"] == "body_declared_add" and attrs["tilelang_out_idx"] == [-1]
    assert attrs["tilelang_pass_configs"] == {PassConfigKey.TL_ENABLE_FAST_MATH: True}
    assert attrs["tilelang_compile_flags"] == ["--use_fast_math"]
    kernel = tilelang.compile(body_declared_add)
    assert kernel.pass_configs == {PassConfigKey.TL_ENABLE_FAST_MATH: True}
    for m in (5, 21):
        a, s = torch.randn(m, 19, device=dev), torch.randn(19, device=dev)
        assert_close(kernel(a, s), a.double() + s.double(), 1e-6, 1e-6)
    assert "tilelang_out_idx" not in body_declared_inout.attrs
    a = torch.randn(37, device=dev)
    assert_close(tilelang.compile(body_declared_inout, out_idx=[-1])(a), a.double() * -2, 0, 0)


def test_prim_func_with_attr_global_symbol(dev):
    """TVM's PrimFunc.with_attr("global_symbol", ...), as TileLang's tests write before compiling:
    a copy under that name that compiles and runs as the original; other attributes are refused."""
    renamed = body_declared_inout.with_attr("global_symbol", "main")
    assert renamed.attrs["global_symbol"] == "main" and body_declared_inout.name == "body_declared_inout"
    kernel = tilelang.compile(renamed, out_idx=[-1])
    a = torch.randn(37, device=dev)
    assert_close(kernel(a), a.double() * -2, 0, 0)
    with pytest.raises(TypeError, match="only 'global_symbol'"):
        body_declared_inout.with_attr("tl.some_pass_attr", True)


def test_prim_func_out_idx_conflict():
    with pytest.raises(ValueError, match="Out index conflict"):
        tilelang.compile(body_declared_add, out_idx=[-1])


# ---------------------------------------------------------------- an eager body returning a macro's T.empty


@T.macro
def doubled_copy(A):
    M, N = A.shape
    B = T.empty(M, N, dtype=A.dtype)
    with T.Kernel(T.ceildiv(M, 16), threads=32) as bx:
        for i, j in T.Parallel(16, N):
            if bx * 16 + i < M:
                B[bx * 16 + i, j] = A[bx * 16 + i, j] * 2.0
    return B


@tilelang.jit
def static_doubled(A):
    A: T.Tensor[[27, 13], T.float32]  # no T.const: only the macro call tells this body is eager
    return doubled_copy(A)


def test_eager_body_returning_a_macro_result(dev):
    a = torch.randn(27, 13, device=dev)
    assert_close(static_doubled(a), a.double() * 2, 0, 0)
    with pytest.raises(T.KernelOnlyError, match="T.macro doubled_copy can only be called inside"):
        doubled_copy(a)


def test_unsupported_dtype_parameter_is_a_clear_error():
    # (T.ptr parameters are supported now: tests/test_ptr.py)
    @T.prim_func
    def by_nibble(a: T.int4, m: T.int32):
        with T.Kernel(1, threads=32):
            for i in T.serial(m):
                pass

    with pytest.raises(
        TileLangCompileError, match=r"parameter 'a': T\.int4 is a TileLang dtype that tile2triton does not"
    ):
        tilelang.compile(by_nibble)
