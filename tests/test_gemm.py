"""T.gemm: operand dtypes (fp16, bf16, fp32, int8 -> int32), transpose_A / transpose_B,
clear_accum, accumulation into a pre-filled fragment, fragment operands."""

import pytest
import torch
from t2t_util import Guarded, assert_close, assert_equal, gemm_tol

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


@tilelang.jit
def matmul_dt(M, N, K, bm, bn, bk, in_dtype, accum_dtype, out_dtype):
    @T.prim_func
    def main(A: T.Tensor((M, K), in_dtype), B: T.Tensor((K, N), in_dtype), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), in_dtype)
            B_s = T.alloc_shared((bk, bn), in_dtype)
            C_f = T.alloc_fragment((bm, bn), accum_dtype)
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, ko * bk], A_s)
                T.copy(B[ko * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * bm, bx * bn])

    return main


@tilelang.jit
def matmul_tA(M, N, K, bm, bn, bk, in_dtype):
    @T.prim_func
    def main(A: T.Tensor((K, M), in_dtype), B: T.Tensor((K, N), in_dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bk, bm), in_dtype)
            B_s = T.alloc_shared((bk, bn), in_dtype)
            C_f = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[ko * bk, by * bm], A_s)
                T.copy(B[ko * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_f, transpose_A=True)
            T.copy(C_f, C[by * bm, bx * bn])

    return main


@tilelang.jit
def matmul_tB(M, N, K, bm, bn, bk, in_dtype):
    @T.prim_func
    def main(A: T.Tensor((M, K), in_dtype), B: T.Tensor((N, K), in_dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), in_dtype)
            B_s = T.alloc_shared((bn, bk), in_dtype)
            C_f = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, ko * bk], A_s)
                T.copy(B[bx * bn, ko * bk], B_s)
                T.gemm(A_s, B_s, C_f, transpose_B=True)
            T.copy(C_f, C[by * bm, bx * bn])

    return main


@tilelang.jit
def matmul_tAtB(M, N, K, bm, bn, bk, in_dtype):
    @T.prim_func
    def main(A: T.Tensor((K, M), in_dtype), B: T.Tensor((N, K), in_dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bk, bm), in_dtype)
            B_s = T.alloc_shared((bn, bk), in_dtype)
            C_f = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[ko * bk, by * bm], A_s)
                T.copy(B[bx * bn, ko * bk], B_s)
                T.gemm(A_s, B_s, C_f, transpose_A=True, transpose_B=True)
            T.copy(C_f, C[by * bm, bx * bn])

    return main


TRANSPOSED = {(True, False): matmul_tA, (False, True): matmul_tB, (True, True): matmul_tAtB}


def _operands(M, N, K, tdtype, dev, tA=False, tB=False):
    if tdtype == torch.int8:
        a = torch.randint(-8, 8, (M, K), device=dev, dtype=torch.int8)
        b = torch.randint(-8, 8, (K, N), device=dev, dtype=torch.int8)
    else:
        a = torch.randn(M, K, device=dev).to(tdtype)
        b = torch.randn(K, N, device=dev).to(tdtype)
    ref = a.cpu().double() @ b.cpu().double()
    a_in = a.t().contiguous() if tA else a
    b_in = b.t().contiguous() if tB else b
    return a_in, b_in, ref


GEMM_DTYPES = [
    # (name, torch operand dtype, accum, out)
    ("float16", torch.float16, "float32", "float16"),
    ("float16_out32", torch.float16, "float", "float32"),
    ("bfloat16", torch.bfloat16, "float32", "float32"),
    ("float32", torch.float32, "float32", "float32"),
    ("int8", torch.int8, "int32", "int32"),
]


@pytest.mark.parametrize("name,tdtype,accum,out", GEMM_DTYPES, ids=[g[0] for g in GEMM_DTYPES])
def test_gemm_dtypes(dev, name, tdtype, accum, out):
    M, N, K = 200, 136, 120
    in_dtype = name.split("_")[0]
    a, b, ref = _operands(M, N, K, tdtype, dev)
    g = Guarded(
        (M, N), dtype=getattr(torch, out), device=dev, fill=-1234567 if out == "int32" else float("nan"), sentinel=7
    )
    matmul_dt(M, N, K, 64, 64, 32, in_dtype, accum, out)(a, b, g.tensor)
    if tdtype == torch.int8:
        assert_equal(g.tensor, ref.to(torch.int64))
    else:
        atol, rtol = gemm_tol(tdtype, dev)
        assert_close(g.tensor, ref, atol, rtol)
    g.check_tail()


@pytest.mark.parametrize("tA,tB", [(True, False), (False, True), (True, True)], ids=["tA", "tB", "tAtB"])
def test_gemm_transpose(dev, tA, tB):
    M, N, K = 100, 72, 90
    a, b, ref = _operands(M, N, K, torch.float16, dev, tA, tB)
    c = torch.full((M, N), float("nan"), device=dev)
    TRANSPOSED[(tA, tB)](M, N, K, 64, 32, 32, "float16")(a, b, c)
    assert_close(c, ref, 1e-2, 1e-2)


@pytest.mark.parametrize("tA,tB", [(True, False), (False, True)], ids=["tA", "tB"])
def test_gemm_transpose_fp32(dev, tA, tB):
    M, N, K = 70, 50, 40
    a, b, ref = _operands(M, N, K, torch.float32, dev, tA, tB)
    c = torch.full((M, N), float("nan"), device=dev)
    TRANSPOSED[(tA, tB)](M, N, K, 32, 32, 16, "float32")(a, b, c)
    atol, rtol = gemm_tol(torch.float32, dev)
    assert_close(c, ref, atol, rtol)


@tilelang.jit(out_idx=[-1])
def gemm_bias_accumulate(M, N, K, bm, bn, bk):
    # the accumulator is pre-filled from global memory; T.gemm (clear_accum=False) adds to it
    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        Bias: T.Tensor((M, N), "float32"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_f = T.alloc_fragment((bm, bn), "float32")
            T.copy(Bias[by * bm, bx * bn], C_f)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, ko * bk], A_s)
                T.copy(B[ko * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * bm, bx * bn])

    return main


def test_gemm_accumulates_into_prefilled_fragment(dev):
    M, N, K = 100, 136, 72
    a, b, ref = _operands(M, N, K, torch.float16, dev)
    bias = torch.randn(M, N, device=dev) * 10.0
    c = gemm_bias_accumulate(M, N, K, 64, 64, 32)(a, b, bias)
    assert_close(c, ref + bias.double().cpu(), 1e-2, 1e-2)


@tilelang.jit(out_idx=[-1])
def gemm_fill_then_accumulate(M, N, K, bm, bn, bk):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_f = T.alloc_fragment((bm, bn), "float32")
            T.fill(C_f, 1.5)
            T.copy(A[by * bm, 0], A_s)
            T.copy(B[0, bx * bn], B_s)
            T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * bm, bx * bn])

    return main


def test_gemm_single_step_adds_to_fill(dev):
    M, N, K = 70, 100, 32  # one K-step, bk == K
    a, b, ref = _operands(M, N, K, torch.float16, dev)
    c = gemm_fill_then_accumulate(M, N, K, 32, 64, 32)(a, b)
    assert_close(c, ref + 1.5, 1e-2, 1e-2)


@tilelang.jit(out_idx=[-1])
def gemm_clear_accum(M, N, K, bm, bn, bk):
    # clear_accum=True ignores the garbage the accumulator holds
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_f = T.alloc_fragment((bm, bn), "float32")
            T.fill(C_f, 1000.0)
            T.copy(A[by * bm, 0], A_s)
            T.copy(B[0, bx * bn], B_s)
            T.gemm(A_s, B_s, C_f, clear_accum=True)
            T.copy(C_f, C[by * bm, bx * bn])

    return main


def test_gemm_clear_accum(dev):
    M, N, K = 70, 100, 32
    a, b, ref = _operands(M, N, K, torch.float16, dev)
    c = gemm_clear_accum(M, N, K, 32, 64, 32)(a, b)
    assert_close(c, ref, 1e-2, 1e-2)


@tilelang.jit(out_idx=[-1])
def gemm_clear_accum_expr(M, N, K, bm, bn, bk):
    # clear_accum as an expression of the loop variable replaces T.clear
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_f = T.alloc_fragment((bm, bn), "float32")
            T.fill(C_f, 1000.0)
            for ko in T.serial(T.ceildiv(K, bk)):
                T.copy(A[by * bm, ko * bk], A_s)
                T.copy(B[ko * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_f, clear_accum=(ko == 0))
            T.copy(C_f, C[by * bm, bx * bn])

    return main


def test_gemm_clear_accum_expression(dev):
    M, N, K = 70, 100, 80
    a, b, ref = _operands(M, N, K, torch.float16, dev)
    c = gemm_clear_accum_expr(M, N, K, 32, 64, 32)(a, b)
    assert_close(c, ref, 1e-2, 1e-2)


@tilelang.jit(out_idx=[-1])
def gemm_fragment_operand(M, N, K, bm, bn, bk):
    # A staged in a fragment (scaled element-wise), B in shared memory
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_f = T.alloc_fragment((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_f = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, ko * bk], A_f)
                for i, j in T.Parallel(bm, bk):
                    A_f[i, j] = A_f[i, j] * 0.5
                T.copy(B[ko * bk, bx * bn], B_s)
                T.gemm(A_f, B_s, C_f)
            T.copy(C_f, C[by * bm, bx * bn])

    return main


def test_gemm_fragment_operand(dev):
    M, N, K = 100, 72, 90
    a, b, ref = _operands(M, N, K, torch.float16, dev)
    c = gemm_fragment_operand(M, N, K, 64, 32, 32)(a, b)
    assert_close(c, ref * 0.5, 1e-2, 1e-2)


@tilelang.jit(out_idx=[-1])
def gemm_attention_scores(M, N, D, bm, bn):
    # flash-attention style: acc_s pre-filled with a causal mask (0 / -inf), then
    # T.gemm(Q, K, acc_s, transpose_B=True) gives mask + Q K^T
    @T.prim_func
    def main(Q: T.Tensor((M, D), "float16"), K: T.Tensor((N, D), "float16"), S: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            Q_s = T.alloc_shared((bm, D), "float16")
            K_s = T.alloc_shared((bn, D), "float16")
            acc_s = T.alloc_fragment((bm, bn), "float32")
            T.copy(Q[by * bm, 0], Q_s)
            T.copy(K[bx * bn, 0], K_s)
            for i, j in T.Parallel(bm, bn):
                acc_s[i, j] = T.if_then_else(by * bm + i >= bx * bn + j, 0, -T.infinity(acc_s.dtype))
            T.gemm(Q_s, K_s, acc_s, transpose_B=True)
            T.copy(acc_s, S[by * bm, bx * bn])

    return main


def test_gemm_masked_scores_transpose_b(dev):
    M, N, D = 100, 90, 64
    q = torch.randn(M, D, device=dev).half()
    k = torch.randn(N, D, device=dev).half()
    s = gemm_attention_scores(M, N, D, 64, 32)(q, k)
    ref = q.double().cpu() @ k.double().cpu().t()
    causal = torch.arange(M)[:, None] >= torch.arange(N)[None, :]
    ref = torch.where(causal, ref, torch.tensor(float("-inf"), dtype=torch.float64))
    out = s.cpu().double()
    assert torch.equal(torch.isneginf(out), ~causal)
    assert_close(out[causal], ref[causal], 1e-2, 1e-2)


@tilelang.jit(out_idx=[-1])
def gemm_into_stages(M, N, K, bm, bn, bk):
    """Two accumulators as the stages of one fragment, the K steps alternating between them, each
    operand read as one stage of a 3-D shared buffer (``A_s[ko % 2, :, :]``): gemm regions with a
    leading unit extent, staged as 2-D tiles; the sum of both stages is A @ B."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((2, bm, bk), "float16")
            B_s = T.alloc_shared((2, bk, bn), "float16")
            acc = T.alloc_fragment((2, bm, bn), "float32")
            T.clear(acc)
            for ko in T.serial(T.ceildiv(K, bk)):
                T.copy(A[by * bm, ko * bk], A_s[ko % 2, :, :])
                T.copy(B[ko * bk, bx * bn], B_s[ko % 2, :, :])
                T.gemm(A_s[ko % 2, :, :], B_s[ko % 2, :, :], acc[ko % 2, :, :])
            for i, j in T.Parallel(bm, bn):
                acc[0, i, j] += acc[1, i, j]
            T.copy(acc[0, :, :], C[by * bm, bx * bn])

    return main


def test_gemm_operands_and_accumulator_as_stages(dev):
    M, N, K = 70, 52, 150  # 5 K steps of 32: both stages accumulate, the last step ragged
    a, b, ref = _operands(M, N, K, torch.float16, dev)
    c = gemm_into_stages(M, N, K, 32, 32, 32)(a, b)
    assert_close(c, ref, 1e-2, 1e-2)
