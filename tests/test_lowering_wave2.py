"""Lowering of TileLang code as TileLang's own examples write it (issue 12, lowering side):
tile operations under a condition that picks a range of threads, ..."""

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.errors import TileLangCompileError


@tilelang.jit
def copy_by_some_threads(M, N, block_M, block_N, threads, tile_op, lo):
    """TileLang's mask_op test: only threads lo..threads/2 load the tile; they load all of it."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_N), "float32")
            tx = T.get_thread_binding(0)
            if tx < threads // 2 and tx >= lo:
                if tile_op:
                    T.copy(A[by * block_M, bx * block_N], A_shared)
                else:
                    for i, k in T.Parallel(block_M, block_N):
                        A_shared[i, k] = A[by * block_M + i, bx * block_N + k] * 2.0
            T.copy(A_shared, B[by * block_M, bx * block_N])

    return main


@pytest.mark.parametrize("tile_op", [True, False])
def test_tile_op_under_thread_range(dev, tile_op):
    M, N = 45, 70
    a = torch.randn(M, N, device=dev)
    b = poison((M, N), device=dev)
    copy_by_some_threads(M, N, 16, 24, 48, tile_op, 3)(a, b)
    assert_close(b, a if tile_op else 2 * a, 0, 0)


@tilelang.jit(out_idx=[-1])
def copy_by_odd_threads(N, threads):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, threads), threads=threads) as bx:
            A_shared = T.alloc_shared((threads,), "float32")
            tx = T.get_thread_binding(0)
            if tx % 2 == 1:
                T.copy(A[bx * threads], A_shared)
            T.copy(A_shared, B[bx * threads])

    return main


def test_tile_op_under_other_thread_condition_is_refused():
    with pytest.raises(TileLangCompileError, match="per-thread condition"):
        copy_by_odd_threads(100, 32)(torch.randn(100))
