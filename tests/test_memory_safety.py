"""Issue 7 item 3 (the part that runs anywhere): a kernel with deliberately out-of-range TileLang
indices writes nothing outside its tensors.

Each output is a view in the middle of a larger allocation whose head and tail hold a sentinel;
after the run the sentinels must be unchanged, and the tensor itself must hold exactly what the
reference executor says (TileLang drops out-of-bounds stores per dimension, and out-of-bounds
loads read 0).  Runs on the interpreter and, with the ``dev`` fixture, on CUDA (where the lead
also runs it under ``compute-sanitizer --tool memcheck``).
"""

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.oracle import reference

GUARD = 4096
SENTINEL = 7.25


def guarded(shape, dev):
    n = 1
    for s in shape:
        n *= s
    storage = torch.full((n + 2 * GUARD,), SENTINEL, device=dev)
    view = storage[GUARD : GUARD + n].view(*shape)
    view.fill_(-3.5)
    return storage, view


def assert_guards_intact(storage, n):
    head, tail = storage[:GUARD], storage[GUARD + n :]
    bad = int((head != SENTINEL).sum()) + int((tail != SENTINEL).sum())
    assert bad == 0, f"{bad} element(s) written outside the tensor"


@tilelang.jit
def shifted_store_1d(N, blk, off):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, blk) + 2) as bx:
            for i in T.Parallel(blk):
                C[bx * blk + i + off] = A[bx * blk + i] + 1.0

    return main


@tilelang.jit
def shifted_store_2d(M, N, bm, bn, dy, dx):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn) + 1, T.ceildiv(M, bm) + 1) as (bx, by):
            for i, j in T.Parallel(bm, bn):
                # per-dimension bounds: x beyond a row's end must not spill into the next row
                C[by * bm + i + dy, bx * bn + j + dx] = A[by * bm + i, bx * bn + j] * 2.0

    return main


@tilelang.jit
def shifted_copy_2d(M, N, bm, bn, dy, dx):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn) + 1, T.ceildiv(M, bm) + 1) as (bx, by):
            S = T.alloc_shared((bm, bn), "float32")
            T.copy(A[by * bm - dy, bx * bn - dx], S)
            T.copy(S, C[by * bm + dy, bx * bn + dx])

    return main


def _run(kernel, a, shape, dev):
    storage, c = guarded(shape, dev)
    kernel(a, c)
    if dev != "cpu":
        torch.cuda.synchronize()
    assert_guards_intact(storage, c.numel())
    _, ref = guarded(shape, "cpu")
    reference.run(kernel, a.cpu(), ref)
    torch.testing.assert_close(c.cpu(), ref)


@pytest.mark.parametrize("off", [37, -45, 1000, -1000])
def test_out_of_range_1d_store_writes_nothing_outside(dev, off):
    N = 101
    _run(shifted_store_1d(N, 32, off), torch.randn(N, device=dev), (N,), dev)


@pytest.mark.parametrize("dy,dx", [(0, 5), (3, 0), (-2, -7), (40, 40)])
def test_out_of_range_2d_store_writes_nothing_outside(dev, dy, dx):
    M, N = 23, 19
    _run(shifted_store_2d(M, N, 8, 8, dy, dx), torch.randn(M, N, device=dev), (M, N), dev)


@pytest.mark.parametrize("dy,dx", [(0, 5), (-3, 2), (30, -30)])
def test_out_of_range_tile_copy_writes_nothing_outside(dev, dy, dx):
    M, N = 23, 19
    _run(shifted_copy_2d(M, N, 16, 8, dy, dx), torch.randn(M, N, device=dev), (M, N), dev)
