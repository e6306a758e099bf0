"""Explicit TMA ordering primitives and thread-block clusters (TileLang's
test_tilelang_language_tma_copy.py / tma_store.py): tile2triton's copies and stores complete when
issued, so ``T.tma_store_arrive`` / ``T.tma_store_wait`` / ``T.fence_proxy_async`` have no effect,
``T.tma_copy`` is a T.copy (either direction), and ``T.ClusterKernel`` runs as a T.Kernel with the
same blocks and block indices."""

import pytest
import torch
from t2t_util import assert_close, poison
from test_fuzz_regressions import compile_for_hopper

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import TileLangCompileError


@tilelang.jit
def gemm_tma_store(M, N, K, bm, bn, bk, stages):
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16), C: T.Tensor((M, N), T.float16)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), T.float16)
            B_s = T.alloc_shared((bk, bn), T.float16)
            C_s = T.alloc_shared((bm, bn), T.float16)
            C_l = T.alloc_fragment((bm, bn), T.float32)
            bar_a = T.alloc_barrier(128)
            bar_b = T.alloc_barrier(128)
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.tma_copy(A[by * bm, k * bk], A_s, barrier=bar_a)
                T.barrier_arrive(bar_a)
                T.tma_copy(B[k * bk, bx * bn], B_s, barrier=bar_b)
                T.barrier_arrive(bar_b)
                T.mbarrier_wait_parity(bar_a, k % 2)
                T.mbarrier_wait_parity(bar_b, k % 2)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C_s)
            T.fence_proxy_async()
            T.tma_copy(C_s, C[by * bm, bx * bn])  # shared -> global: a TMA store
            T.tma_store_arrive()
            T.tma_store_wait(read=False)

    return main


@pytest.mark.parametrize("stages", [2, 3])
def test_tma_copy_store_with_store_waits(dev, stages):
    M, N, K = 50, 70, 45
    A = torch.randn(M, K, device=dev).half()
    B = torch.randn(K, N, device=dev).half()
    C = poison((M, N), torch.float16, dev)
    gemm_tma_store(M, N, K, 32, 32, 16, stages)(A, B, C)
    assert_close(C, A.double() @ B.double(), atol=2e-2, rtol=2e-2)


@tilelang.jit
def cluster_blocks(gx, gy, cluster, tile=24):
    @T.prim_func
    def main(A: T.Tensor((5, tile), T.float32), B: T.Tensor((gy, gx, tile), T.float32)):
        with T.ClusterKernel(gx, gy, threads=64, cluster_dims=cluster) as (bx, by):
            A_s = T.alloc_shared((tile,), T.float32)
            bar = T.alloc_barrier(64)
            # the same source for every block: the multicast equals a copy in each block
            T.tma_copy(A[3, :], A_s, barrier=bar, cluster_mask=0b11)
            T.mbarrier_wait_parity(bar, 0)
            for i in T.Parallel(tile):
                B[by, bx, i] = A_s[i] * (bx + 1) + by * 1000

    return main


@pytest.mark.parametrize("gx, gy, cluster", [(6, 3, (2, 1, 1)), (4, 5, 2), (3, 4, [1, 2])])
def test_cluster_kernel_keeps_blocks_and_indices(dev, gx, gy, cluster):
    A = torch.randn(5, 24, device=dev)
    B = poison((gy, gx, 24), torch.float32, dev)
    cluster_blocks(gx, gy, cluster)(A, B)
    bx = torch.arange(gx, device=dev, dtype=torch.float64)[None, :, None]
    by = torch.arange(gy, device=dev, dtype=torch.float64)[:, None, None]
    assert_close(B, A.double()[3][None, None, :] * (bx + 1) + by * 1000, atol=1e-4, rtol=1e-6)


def test_cluster_dims_must_divide_the_grid():
    with pytest.raises(TileLangCompileError, match=r"cluster dim 0 \(2\) must divide the grid extent 5"):
        cluster_blocks(5, 3, (2, 1, 1)).compile()


@tilelang.jit
def multicast_per_block_source(tile=16):
    @T.prim_func
    def main(A: T.Tensor((4, tile), T.float32), B: T.Tensor((4, tile), T.float32)):
        with T.ClusterKernel(4, threads=32, cluster_dims=2) as bx:
            A_s = T.alloc_shared((tile,), T.float32)
            bar = T.alloc_barrier(32)
            T.tma_copy(A[bx, :], A_s, barrier=bar, cluster_mask=0b11)
            T.mbarrier_wait_parity(bar, 0)
            T.copy(A_s, B[bx, :])

    return main


def test_multicast_of_a_block_dependent_source_is_an_error():
    with pytest.raises(TileLangCompileError, match="multicasts the lowest-ranked block's source region"):
        multicast_per_block_source().compile()


def test_tma_store_and_cluster_kernels_compile_for_hopper(tmp_path):
    compile_for_hopper(gemm_tma_store(50, 70, 45, 32, 32, 16, 3), tmp_path)
    compile_for_hopper(cluster_blocks(6, 3, (2, 1, 1)), tmp_path)
