"""T.use_swizzle and T.annotate_layout are accepted and do not change results."""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


@tilelang.jit(out_idx=[-1])
def matmul_swizzled(M, N, K, bm, bn, bk, panel):
    from tile2triton.layout import make_swizzled_layout

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_shared = T.alloc_shared((bm, bk), "float16")
            B_shared = T.alloc_shared((bk, bn), "float16")
            C_local = T.alloc_fragment((bm, bn), "float32")
            T.annotate_layout(
                {
                    A_shared: make_swizzled_layout(A_shared),
                    B_shared: make_swizzled_layout(B_shared),
                }
            )
            T.use_swizzle(panel_size=panel)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, ko * bk], A_shared)
                T.copy(B[ko * bk, bx * bn], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * bm, bx * bn])

    return main


def test_use_swizzle_and_annotate_layout(dev):
    M, N, K = 200, 136, 120
    a = torch.randn(M, K, device=dev).half()
    b = torch.randn(K, N, device=dev).half()
    c = matmul_swizzled(M, N, K, 64, 64, 32, 2)(a, b)
    assert_close(c, a.double().cpu() @ b.double().cpu(), 1e-2, 1e-2)


@tilelang.jit(out_idx=[-1])
def swizzle_column_order(M, N, bm, bn):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            T.use_swizzle(3, order="column")
            F = T.alloc_fragment((bm, bn), "float32")
            T.copy(A[by * bm, bx * bn], F)
            for i, j in T.Parallel(bm, bn):
                F[i, j] = F[i, j] + 1.0
            T.copy(F, C[by * bm, bx * bn])

    return main


def test_use_swizzle_column_order_is_a_bijection(dev):
    M, N = 150, 200
    a = torch.randn(M, N, device=dev)
    c = swizzle_column_order(M, N, 32, 32)(a)
    assert_close(c, a.double() + 1.0, 1e-6, 1e-6)
