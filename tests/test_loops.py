"""T.serial (incl. start/stop/step), Python range, T.unroll, T.Pipelined(n, num_stages=s)."""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


def _fold_ref(a, bm, bk, nchunks, fn=lambda x: x):
    # C[m, j] = sum_k fn(A[m, k*bk + j]) over chunks, OOB columns read as 0
    M, K = a.shape
    pad = torch.zeros(M, nchunks * bk, dtype=torch.float64)
    pad[:, :K] = a.double().cpu()
    return fn(pad.view(M, nchunks, bk)).sum(1)


@tilelang.jit(out_idx=[-1])
def serial_fold(M, K, bm, bk):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), C: T.Tensor((M, bk), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=128) as bx:
            F = T.alloc_fragment((bm, bk), "float32")
            acc = T.alloc_fragment((bm, bk), "float32")
            T.clear(acc)
            for k in T.serial(T.ceildiv(K, bk)):
                T.copy(A[bx * bm, k * bk], F)
                for i, j in T.Parallel(bm, bk):
                    acc[i, j] = acc[i, j] + F[i, j] * (k + 1)
            T.copy(acc, C[bx * bm, 0])

    return main


def test_serial_loop_carried_accumulator(dev):
    M, K, bm, bk = 70, 200, 32, 48
    a = torch.randn(M, K, device=dev)
    c = serial_fold(M, K, bm, bk)(a)
    nch = 5
    w = torch.arange(1, nch + 1, dtype=torch.float64)[None, :, None]
    pad = torch.zeros(M, nch * bk, dtype=torch.float64)
    pad[:, :K] = a.double().cpu()
    assert_close(c, (pad.view(M, nch, bk) * w).sum(1), 1e-5, 1e-5)


@tilelang.jit(out_idx=[-1])
def python_range_fold(M, K, bm, bk):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), C: T.Tensor((M, bk), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=128) as bx:
            F = T.alloc_fragment((bm, bk), "float32")
            acc = T.alloc_fragment((bm, bk), "float32")
            T.clear(acc)
            for k in range(T.ceildiv(K, bk)):  # Python range is T.serial
                T.copy(A[bx * bm, k * bk], F)
                for i, j in T.Parallel(bm, bk):
                    acc[i, j] += F[i, j]
            T.copy(acc, C[bx * bm, 0])

    return main


def test_python_range_is_serial(dev):
    M, K, bm, bk = 50, 130, 32, 64
    a = torch.randn(M, K, device=dev)
    c = python_range_fold(M, K, bm, bk)(a)
    assert_close(c, _fold_ref(a, bm, bk, 3), 1e-5, 1e-5)


@tilelang.jit(out_idx=[-1])
def serial_step(M, K, bm, bk):
    # only even chunks, starting at chunk 0, with stride 2
    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), C: T.Tensor((M, bk), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=128) as bx:
            F = T.alloc_fragment((bm, bk), "float32")
            acc = T.alloc_fragment((bm, bk), "float32")
            T.clear(acc)
            for k in T.serial(0, T.ceildiv(K, bk), 2):
                T.copy(A[bx * bm, k * bk], F)
                for i, j in T.Parallel(bm, bk):
                    acc[i, j] += F[i, j]
            T.copy(acc, C[bx * bm, 0])

    return main


def test_serial_start_stop_step(dev):
    M, K, bm, bk = 40, 150, 32, 32  # 5 chunks: 0, 2, 4 are summed
    a = torch.randn(M, K, device=dev)
    c = serial_step(M, K, bm, bk)(a)
    pad = torch.zeros(M, 5 * bk, dtype=torch.float64)
    pad[:, :K] = a.double().cpu()
    ref = pad.view(M, 5, bk)[:, 0::2].sum(1)
    assert_close(c, ref, 1e-5, 1e-5)


@tilelang.jit(out_idx=[-1])
def unroll_fold(M, K, bm, bk, nchunks):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), C: T.Tensor((M, bk), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=128) as bx:
            F = T.alloc_fragment((bm, bk), "float32")
            acc = T.alloc_fragment((bm, bk), "float32")
            T.clear(acc)
            for k in T.unroll(nchunks):
                T.copy(A[bx * bm, k * bk], F)
                for i, j in T.Parallel(bm, bk):
                    acc[i, j] += T.abs(F[i, j])
            T.copy(acc, C[bx * bm, 0])

    return main


def test_unroll(dev):
    M, K, bm, bk = 45, 100, 16, 32
    a = torch.randn(M, K, device=dev)
    c = unroll_fold(M, K, bm, bk, 4)(a)
    assert_close(c, _fold_ref(a, bm, bk, 4, torch.abs), 1e-5, 1e-5)


@tilelang.jit(out_idx=[-1])
def pipelined_fold(M, K, bm, bk, stages):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), C: T.Tensor((M, bk), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=128) as bx:
            S = T.alloc_shared((bm, bk), "float16")
            acc = T.alloc_fragment((bm, bk), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[bx * bm, k * bk], S)
                for i, j in T.Parallel(bm, bk):
                    acc[i, j] += S[i, j] * S[i, j]
            T.copy(acc, C[bx * bm, 0])

    return main


@pytest.mark.parametrize("stages", [1, 2, 3])
def test_pipelined(dev, stages):
    M, K, bm, bk = 70, 200, 32, 64
    a = torch.randn(M, K, device=dev).half()
    kernel = pipelined_fold(M, K, bm, bk, stages)
    c = kernel(a)
    assert_close(c, _fold_ref(a, bm, bk, 4, lambda x: x * x), 1e-3, 1e-3)
    src = kernel.get_kernel_source()
    assert f"num_stages={stages}" in src.replace(" ", "")


@tilelang.jit(out_idx=[-1])
def pipelined_range_form(M, K, bm, bk):
    # T.Pipelined(start, stop): second positional argument is the stop, not num_stages
    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), C: T.Tensor((M, bk), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=128) as bx:
            F = T.alloc_fragment((bm, bk), "float32")
            acc = T.alloc_fragment((bm, bk), "float32")
            T.clear(acc)
            for k in T.Pipelined(1, T.ceildiv(K, bk)):
                T.copy(A[bx * bm, k * bk], F)
                for i, j in T.Parallel(bm, bk):
                    acc[i, j] += F[i, j]
            T.copy(acc, C[bx * bm, 0])

    return main


def test_pipelined_start_stop(dev):
    M, K, bm, bk = 40, 100, 32, 32  # chunks 1, 2, 3 (chunk 0 skipped)
    a = torch.randn(M, K, device=dev)
    c = pipelined_range_form(M, K, bm, bk)(a)
    pad = torch.zeros(M, 4 * bk, dtype=torch.float64)
    pad[:, :K] = a.double().cpu()
    assert_close(c, pad.view(M, 4, bk)[:, 1:].sum(1), 1e-5, 1e-5)


@tilelang.jit(out_idx=[-1])
def nested_serial_scalar(M, N, bm):
    # per-element loops writing and reading a shared buffer at loop indices
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=64) as bx:
            S = T.alloc_shared((bm, N), "float32")
            for i in T.Parallel(bm):
                acc = T.alloc_local((1,), "float32")
                acc[0] = 0.0
                for j in T.serial(N):
                    S[i, j] = A[bx * bm + i, j] * 2.0
                for j in T.serial(N):
                    acc[0] += S[i, j] * S[i, N - 1 - j]
                C[bx * bm + i] = acc[0]

    return main


def test_serial_inside_parallel_shared_at_loop_index(dev):
    M, N, bm = 50, 20, 16
    a = torch.randn(M, N, device=dev)
    c = nested_serial_scalar(M, N, bm)(a)
    s = a.double().cpu() * 2.0
    assert_close(c, (s * s.flip(1)).sum(1), 1e-5, 1e-5)
