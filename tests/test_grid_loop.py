"""``T.grid``: nested sequential loops (TileLang's ``for i, j in T.grid(M, N)``)."""

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.errors import TileLangCompileError


@tilelang.jit
def tile_sums(M, N, bm, bn):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=32) as (bx, by):
            acc = T.alloc_local((1,), "float32")
            acc[0] = 0.0
            for i, j in T.grid(bm, bn):  # a running sum in row-major order over the block's tile
                if by * bm + i < M and bx * bn + j < N:
                    acc[0] += A[by * bm + i, bx * bn + j]
                    C[by * bm + i, bx * bn + j] = acc[0]

    return main


def test_grid_runs_nested_loops_in_order(dev):
    M, N, bm, bn = 37, 45, 8, 16
    a = torch.randn(M, N, device=dev)
    c = poison((M, N), device=dev)
    tile_sums(M, N, bm, bn)(a, c)
    ref = torch.empty(M, N, dtype=torch.float64)
    a64 = a.cpu().double()
    for by in range(-(-M // bm)):
        for bx in range(-(-N // bn)):
            tile = a64[by * bm : (by + 1) * bm, bx * bn : (bx + 1) * bn]
            ref[by * bm : (by + 1) * bm, bx * bn : (bx + 1) * bn] = tile.reshape(-1).cumsum(0).reshape(tile.shape)
    assert_close(c, ref, 1e-4, 1e-4)


def test_grid_with_the_wrong_number_of_names_is_an_error():
    @T.prim_func
    def main(A: T.Tensor((8, 8), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.grid(8, 8):
                A[i, 0] = 0.0

    with pytest.raises(TileLangCompileError, match=r"T.grid with 2 extents binds 2 names"):
        tilelang.compile(main)
