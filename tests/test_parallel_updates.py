"""A fragment element that several ``T.Parallel`` iterations update is an accumulation: TileLang lays
the loop out by the fragment's layout, so the iterations that update one element run one after
another in the thread that holds it (``C_local[i, j] += A_s[i, k] * B_s[k, j]`` over
``T.Parallel(bm, bn, bk)`` is a matmul; MACE's tensor-product kernels are written so).  tile2triton
kept one iteration's value (a silent wrong answer)."""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


@tilelang.jit(out_idx=[-1])
def row_updates(m, k, block=16):
    @T.prim_func
    def main(A: T.Tensor((m, k), "float32"), C: T.Tensor((m, 5), "float32")):
        with T.Kernel(T.ceildiv(m, block), threads=128) as bx:
            total = T.alloc_fragment((block,), "float32")
            most = T.alloc_fragment((block,), "float32")
            least = T.alloc_fragment((block,), "float32")
            some = T.alloc_fragment((block,), "float32")
            count = T.alloc_fragment((block,), "float32")
            T.clear(total)
            T.fill(most, -T.infinity("float32"))
            T.fill(least, T.infinity("float32"))
            T.clear(some)
            T.clear(count)
            for i, j in T.Parallel(block, k):
                r = bx * block + i
                total[i] += A[r, j]
                most[i] = T.max(most[i], A[r, j])
                least[i] = T.min(A[r, j], least[i])
                if j % 3 == 1:
                    some[i] = some[i] + A[r, j] * 2.0
                count[i] += 1.0  # the same contribution from every j
            for i in T.Parallel(block):
                C[bx * block + i, 0] = total[i]
                C[bx * block + i, 1] = most[i]
                C[bx * block + i, 2] = least[i]
                C[bx * block + i, 3] = some[i]
                C[bx * block + i, 4] = count[i]

    return main


@tilelang.jit(out_idx=[-1])
def parallel_matmul(M, N, K, block_m=16, block_n=16, block_k=8):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_n), T.ceildiv(M, block_m), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_m, block_k), "float32")
            B_s = T.alloc_shared((block_k, block_n), "float32")
            C_local = T.alloc_fragment((block_m, block_n), "float32")
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_k), num_stages=2):
                T.copy(A[by * block_m, ko * block_k], A_s)
                T.copy(B[ko * block_k, bx * block_n], B_s)
                for i, j, k in T.Parallel(block_m, block_n, block_k):
                    C_local[i, j] += A_s[i, k] * B_s[k, j]
            T.copy(C_local, C[by * block_m, bx * block_n])

    return main


def test_updates_of_a_row_element(dev):
    m, k = 37, 11
    a = torch.randn(m, k, device=dev)
    c = row_updates(m, k)(a)
    a64 = a.double()
    assert_close(c[:, 0], a64.sum(1), 1e-5, 1e-5)
    assert torch.equal(c[:, 1], a.amax(1)) and torch.equal(c[:, 2], a.amin(1))
    assert_close(c[:, 3], 2 * a64[:, 1::3].sum(1), 1e-5, 1e-5)
    assert torch.equal(c[:, 4], torch.full((m,), float(k), device=dev))


def test_a_matmul_written_as_a_parallel_update(dev):
    M, N, K = 37, 21, 27
    a, b = torch.randn(M, K, device=dev), torch.randn(K, N, device=dev)
    assert_close(parallel_matmul(M, N, K)(a, b), a.double() @ b.double(), 1e-4, 1e-4)


def test_an_order_dependent_update_is_an_error_at_the_line():
    @tilelang.jit(out_idx=[-1])
    def decay(m, k):
        @T.prim_func
        def main(A: T.Tensor((m, k), "float32"), C: T.Tensor((m,), "float32")):
            with T.Kernel(1, threads=128) as bx:
                acc = T.alloc_fragment((m,), "float32")
                T.clear(acc)
                for i, j in T.Parallel(m, k):
                    acc[i] = acc[i] * 0.5 + A[i, j]
                T.copy(acc, C)

        return main

    with pytest.raises(tilelang.TileLangCompileError, match=r"test_parallel_updates.py:\d+.*every iteration of j"):
        decay(37, 11).get_kernel_source()
