"""fp8 values meeting integers: Triton casts no integer to or from an fp8 type (only floats), and
casts a masked load's ``other=0`` as an int32 tile; the generated code goes through float32 and
gives fp8 loads a float zero.  Checked on the interpreter and compiled for sm_90 (Hopper), where
Triton rejected the code (TileLang's examples/deepseek_v32/fp8_lighting_indexer.py)."""

import pytest
import torch
from t2t_util import assert_close
from test_fuzz_regressions import compile_for_hopper

import tile2triton as tilelang
import tile2triton.language as T

FP8 = "float8_e4m3fn"


@tilelang.jit
def fp8_and_ints(M, N, bm, bn):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), FP8),
        Q: T.Tensor((M, N), T.int32),
        C: T.Tensor((M, N), T.float32),
        D: T.Tensor((M, N), FP8),
    ):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bn), FP8)
            T.copy(A[by * bm, bx * bn], A_s)  # a masked fp8 load: the tile crosses the tensor's edge
            for i, j in T.Parallel(bm, bn):
                C[by * bm + i, bx * bn + j] = T.Cast(T.int32, A_s[i, j]) * 1000.0 + A_s[i, j]
                D[by * bm + i, bx * bn + j] = T.Cast(FP8, Q[by * bm + i, bx * bn + j] + bx)

    return main


def _inputs(m, n, dev):
    A = (torch.randn(m, n, device=dev) * 6).to(torch.float8_e4m3fn)
    Q = torch.randint(-300, 300, (m, n), dtype=torch.int32, device=dev)
    C = torch.full((m, n), float("nan"), device=dev)
    D = torch.full((m, n), float("nan"), device=dev).to(torch.float8_e4m3fn)
    return A, Q, C, D


@pytest.mark.parametrize("m, n", [(50, 70), (33, 129)])
def test_fp8_int_casts_and_masked_fp8_load(dev, m, n):
    bm, bn = 32, 64
    A, Q, C, D = _inputs(m, n, dev)
    fp8_and_ints(m, n, bm, bn)(A, Q, C, D)
    a = A.double()
    assert_close(C, a.trunc() * 1000.0 + a, atol=1e-6, rtol=1e-6)
    bx = (torch.arange(n, device=dev) // bn).to(torch.int32)
    want = (Q + bx[None, :]).double().to(torch.float8_e4m3fn)  # round to nearest even, saturating
    assert_close(D.double(), want.double(), atol=0, rtol=0)


def test_fp8_int_casts_compile_for_hopper(tmp_path):
    compile_for_hopper(fp8_and_ints(50, 70, 32, 64), tmp_path)


@tilelang.jit
def counter_casts(n, dtype):
    @T.prim_func
    def main(X: T.Tensor((n,), T.float32), S: T.Tensor((n,), T.float32), Y: T.Tensor((n,), dtype)):
        with T.Kernel(1, threads=128):
            total = T.alloc_var(T.float32)
            total = 0.0
            for i in T.serial(n):  # a running sum keeps it a loop: `i` is a scalar counter
                total = total + X[i]
                S[i] = total
                Y[i] = T.cast(i * 3 - 40, dtype)

    return main


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2", "bfloat16"])
def test_scalar_loop_counter_cast_to_narrow_float(dev, dtype):
    # under the interpreter a loop counter is a plain Python int, on which the rounding helpers
    # (fp8, bf16) once called `.to` and failed
    n = 37
    X = torch.randn(n, device=dev)
    tdt = getattr(torch, dtype)
    S = torch.full((n,), float("nan"), device=dev)
    Y = torch.full((n,), float("nan"), device=dev).to(tdt)
    counter_casts(n, dtype)(X, S, Y)
    i = torch.arange(n, device=dev, dtype=torch.float64)
    assert_close(Y.double(), (i * 3 - 40).to(tdt).double(), atol=0, rtol=0)
    assert_close(S, X.double().cumsum(0), atol=1e-5, rtol=1e-5)


@tilelang.jit
def fp8_min_max(n, dtype, block=64):
    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((3, n), dtype)):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                k = bx * block + i
                if k < n:
                    C[0, k] = T.max(A[k], B[k])
                    C[1, k] = T.min(A[k], B[k])
                    C[2, k] = T.clamp(A[k], T.cast(-1.5, dtype), B[k])

    return main


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
def test_fp8_min_max_clamp_compare_values(dev, dtype):
    # max/min of fp8 values compare in float32: the interpreter compared raw bytes, and Triton 3.6
    # failed to compile tl.maximum on fp8 tiles for sm_90 (TileLang's test_tilelang_language_clamp.py)
    n = 203
    tdt = getattr(torch, dtype)
    A = (torch.randn(n, device=dev) * 6).to(tdt)
    B = (torch.randn(n, device=dev) * 6).abs().to(tdt)
    C = torch.full((3, n), float("nan"), device=dev).to(tdt)
    fp8_min_max(n, dtype)(A, B, C)
    a, b = A.double(), B.double()
    want = torch.stack(
        [torch.maximum(a, b), torch.minimum(a, b), torch.minimum(torch.maximum(a, a.new_tensor(-1.5)), b)]
    )
    assert_close(C.double(), want, atol=0, rtol=0)


def test_fp8_min_max_compile_for_hopper(tmp_path):
    compile_for_hopper(fp8_min_max(203, "float8_e5m2"), tmp_path)


@tilelang.jit
def fp8_compare(n, dtype, block=64):
    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((3, n), T.int32)):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            local = T.alloc_local((1,), dtype)
            for i in T.Parallel(block):
                k = bx * block + i
                if k < n:
                    C[0, k] = T.if_then_else(A[k] != 0, k + 1, -1)
                    C[1, k] = T.if_then_else(A[k] < B[k], 1, 0)
            for i in T.serial(T.min(block, n - bx * block)):
                local[0] = A[bx * block + i]
                C[2, bx * block + i] = T.if_then_else(local[0] >= 1, 7, 3)

    return main


@tilelang.jit(out_idx=[-1])
def fp8_nonzero_positions(M, K, dtype):
    """Per-thread local fp8 rows read at a loop index (a one-hot select: a masked tl.sum, which
    Triton cannot do on fp8 on the GPU) and compared with 0 (an fp8 comparison, likewise): the
    2:4 metadata step of TileLang's examples/gemm_sp/sparse_utils.py compress kernel."""

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), Pos: T.Tensor((M, K), T.int32)):
        with T.Kernel(1, threads=M):
            tm = T.get_thread_binding(0)
            row = T.alloc_local([K], dtype)
            count = T.alloc_var(T.int32)
            T.copy(A[tm, 0:K], row)
            count = 0
            for i in T.unroll(K):
                Pos[tm, i] = T.if_then_else(row[i] != 0, count, -1)
                count = T.if_then_else(row[i] > 0, count + 1, count)

    return main


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
def test_fp8_comparisons(dev, dtype):
    # comparisons of fp8 values run in float32: Triton 3.6 rejected `fp8 != 0` ("unexpected type fp8e5
    # and int32", TileLang's examples/gemm_sp/sparse_utils.py) and 3.9 cannot lower an fp8 comparison
    # for the GPU
    n = 203
    tdt = getattr(torch, dtype)
    A = (torch.randn(n, device=dev) * 3).to(tdt)
    A[::5] = 0
    B = (torch.randn(n, device=dev) * 3).to(tdt)
    C = torch.full((3, n), -99, dtype=torch.int32, device=dev)
    fp8_compare(n, dtype)(A, B, C)
    a, b = A.double(), B.double()
    k = torch.arange(n, device=dev, dtype=torch.int32)
    want = torch.stack([torch.where(a != 0, k + 1, -1), (a < b).int(), torch.where(a >= 1, 7, 3).int()])
    assert torch.equal(C, want.to(torch.int32))


def test_fp8_comparisons_compile_for_hopper(tmp_path):
    compile_for_hopper(fp8_compare(203, "float8_e5m2"), tmp_path)


def fp8_nonzero_positions_ref(a: torch.Tensor) -> torch.Tensor:
    x = a.cpu().float()
    before = torch.cumsum((x > 0).to(torch.int32), 1) - (x > 0).to(torch.int32)
    return torch.where(x != 0, before, -1).to(torch.int32)


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
def test_fp8_one_hot_select_and_compare(dev, dtype):
    M, K = 37, 12
    a = torch.randn(M, K, device=dev)
    a[a.abs() < 0.6] = 0
    a = a.to(getattr(torch, dtype))
    assert torch.equal(fp8_nonzero_positions(M, K, dtype)(a).cpu(), fp8_nonzero_positions_ref(a))


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
def test_fp8_one_hot_select_and_compare_compile_for_hopper(tmp_path, dtype):
    compile_for_hopper(fp8_nonzero_positions(37, 12, dtype), tmp_path)
