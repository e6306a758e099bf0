"""T.clear / T.fill, and T.Parallel of rank 1-3: guards, T.if_then_else, reads of fragments at
the parallel indices and broadcast reads of row / 1-element fragments, local scalars, partial
writes that merge with a tile's old value."""

import pytest
import torch
from t2t_util import Guarded, assert_close, assert_equal

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty

# ---------------------------------------------------------------- clear / fill


@tilelang.jit(out_idx=[-2, -1])
def fill_and_clear(M, N, bm, bn, value):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), F_out: T.Tensor((M, N), "float32"), Z_out: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            F = T.alloc_fragment((bm, bn), "float32")
            S = T.alloc_shared((bm, bn), "float32")
            Z = T.alloc_fragment((bm, bn), "float32")
            T.copy(A[by * bm, bx * bn], Z)
            T.clear(Z)  # overwrite loaded data with 0
            T.copy(A[by * bm, bx * bn], S)
            T.fill(S, value)  # fill a shared tile
            T.copy(S, F)
            for i, j in T.Parallel(bm, bn):
                F[i, j] = F[i, j] + A[by * bm + i, bx * bn + j]
                Z[i, j] = Z[i, j] + A[by * bm + i, bx * bn + j] * 2.0
            T.copy(F, F_out[by * bm, bx * bn])
            T.copy(Z, Z_out[by * bm, bx * bn])

    return main


def test_fill_and_clear_fragment_and_shared(dev):
    M, N = 90, 150
    a = torch.randn(M, N, device=dev)
    f, z = fill_and_clear(M, N, 32, 64, 1.75)(a)
    assert_close(f, a.double() + 1.75, 1e-6, 1e-6)
    assert_close(z, a.double() * 2.0, 1e-6, 1e-6)


@tilelang.jit(out_idx=[-1])
def fill_int(N, block):
    @T.prim_func
    def main(A: T.Tensor((N,), "int32"), C: T.Tensor((N,), "int32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            F = T.alloc_fragment((block,), "int32")
            T.fill(F, 7)
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] * F[i]

    return main


def test_fill_int_fragment(dev):
    N = 300
    a = torch.randint(-1000, 1000, (N,), device=dev, dtype=torch.int32)
    c = fill_int(N, 128)(a)
    assert_equal(c, a * 7)


@tilelang.jit
def fill_global_region(N, block):
    @T.prim_func
    def main(C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            T.fill(C[bx * block : bx * block + block], 2.5)  # last block partly out of bounds

    return main


def test_fill_global_region(dev):
    N = 300
    g = Guarded((N,), device=dev)
    fill_global_region(N, 128)(g.tensor)
    assert_equal(g.tensor, torch.full((N,), 2.5))
    g.check_tail()


# ---------------------------------------------------------------- T.Parallel


@tilelang.jit
def parallel_2d_guard(M, N, bm, bn):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            for i, j in T.Parallel(bm, bn):
                y = by * bm + i
                x = bx * bn + j
                if y < M and x < N:
                    C[y, x] = A[y, x] * 2.0 + 1.0

    return main


def test_parallel_2d_if_guard(dev):
    M, N = 150, 200
    a = torch.randn(M, N, device=dev)
    g = Guarded((M, N), device=dev)
    parallel_2d_guard(M, N, 64, 64)(a, g.tensor)
    assert_close(g.tensor, a.double() * 2.0 + 1.0, 1e-6, 1e-6)
    g.check_tail()


@tilelang.jit
def parallel_partial_guard(M, N, bm, bn):
    # only the upper triangle (x >= y) is written; the rest must keep the caller's values
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            for i, j in T.Parallel(bm, bn):
                if bx * bn + j >= by * bm + i:
                    C[by * bm + i, bx * bn + j] = A[by * bm + i, bx * bn + j]

    return main


def test_parallel_guard_leaves_other_elements(dev):
    M, N = 100, 90
    a = torch.randn(M, N, device=dev)
    c0 = torch.randn(M, N, device=dev)
    c = c0.clone()
    parallel_partial_guard(M, N, 32, 32)(a, c)
    upper = torch.ones(M, N, dtype=torch.bool).triu().to(dev)
    assert_equal(c, torch.where(upper, a, c0))


@tilelang.jit(out_idx=[-1])
def parallel_3d(Bt, M, N, bb, bm, bn):
    @T.prim_func
    def main(A: T.Tensor((Bt, M, N), "float32"), C: T.Tensor((Bt, M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), T.ceildiv(Bt, bb), threads=128) as (bx, by, bz):
            for b, i, j in T.Parallel(bb, bm, bn):
                C[bz * bb + b, by * bm + i, bx * bn + j] = A[bz * bb + b, by * bm + i, bx * bn + j] * (b + 1)

    return main


def test_parallel_3d(dev):
    Bt, M, N, bb, bm, bn = 5, 30, 50, 2, 16, 32
    a = torch.randn(Bt, M, N, device=dev)
    c = parallel_3d(Bt, M, N, bb, bm, bn)(a)
    b = (torch.arange(Bt) % bb + 1).double()[:, None, None]
    assert_close(c, a.double().cpu() * b, 1e-6, 1e-6)


@tilelang.jit(out_idx=[-1])
def parallel_if_then_else_2d(M, N, bm, bn):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_f = T.alloc_fragment((bm, bn), "float32")
            T.copy(A[by * bm, bx * bn], A_f)
            for i, j in T.Parallel(bm, bn):
                C[by * bm + i, bx * bn + j] = T.if_then_else(
                    A_f[i, j] > B[by * bm + i, bx * bn + j], A_f[i, j], -B[by * bm + i, bx * bn + j]
                )

    return main


def test_parallel_if_then_else(dev):
    M, N = 70, 100
    a = torch.randn(M, N, device=dev)
    b = torch.randn(M, N, device=dev)
    c = parallel_if_then_else_2d(M, N, 32, 64)(a, b)
    assert_equal(c, torch.where(a > b, a, -b))


@tilelang.jit(out_idx=[-1])
def parallel_fragment_reads(M, N, bm, bn):
    # softmax-style: the (bm, bn) tile is wider than the N columns (OOB columns read as 0 and
    # are masked to -inf by the guard); a row max into a (bm,) fragment is read back at [i]
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=128) as bx:
            F = T.alloc_fragment((bm, bn), "float32")
            row_max = T.alloc_fragment((bm,), "float32")
            row_sum = T.alloc_fragment((bm,), "float32")
            T.copy(A[bx * bm, 0], F)
            for i, j in T.Parallel(bm, bn):
                F[i, j] = T.if_then_else(j < N, F[i, j], -T.infinity("float32"))
            T.reduce_max(F, row_max, dim=1)
            for i, j in T.Parallel(bm, bn):
                F[i, j] = T.exp(F[i, j] - row_max[i])
            T.reduce_sum(F, row_sum, dim=1)
            for i, j in T.Parallel(bm, bn):
                F[i, j] = F[i, j] / row_sum[i]
            T.copy(F, C[bx * bm, 0])

    return main


def test_parallel_fragment_broadcast_reads_softmax(dev):
    M, N, bm, bn = 50, 100, 16, 128
    a = torch.randn(M, N, device=dev) * 3.0
    c = parallel_fragment_reads(M, N, bm, bn)(a)
    assert_close(c, torch.softmax(a.double(), dim=1), 1e-6, 1e-5)


@tilelang.jit(out_idx=[-1])
def parallel_scalar_fragment(M, N, bn):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(M, threads=128) as bx:
            row = T.alloc_fragment((bn,), "float32")
            s = T.alloc_fragment((1,), "float32")
            m = T.alloc_fragment((1,), "float32")
            T.copy(A[bx, 0:bn], row)  # columns >= N read as 0
            T.reduce_sum(row, s, dim=0)
            T.reduce_max(row, m, dim=0)
            for j in T.Parallel(bn):
                t = row[j] - s[0] / N  # local scalar from a 1-element fragment
                u = t * m[0]
                C[bx, j] = u + t

    return main


def test_parallel_one_element_fragment_and_local_scalars(dev):
    M, N, bn = 20, 150, 256
    a = torch.randn(M, N, device=dev)
    c = parallel_scalar_fragment(M, N, bn)(a)
    ad = a.double()
    t = ad - ad.sum(1, keepdim=True) / N
    m = ad.max(1, keepdim=True).values.clamp(min=0.0)  # the zero padding takes part in the max
    assert_close(c, t * m + t, 1e-5, 1e-5)


@tilelang.jit(out_idx=[-1])
def parallel_partial_fragment_write(M, N, bm, bn, cut):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            F = T.alloc_fragment((bm, bn), "float32")
            T.copy(A[by * bm, bx * bn], F)
            for i, j in T.Parallel(bm, bn):
                if j < cut:
                    F[i, j] = -1.0  # other elements keep the loaded values
            for i, j in T.Parallel(bm, bn):
                if i == bm - 1 and j >= cut:
                    F[i, j] = F[i, j] * 2.0 + 5.0  # last row of the tile, rest of the columns
            T.copy(F, C[by * bm, bx * bn])

    return main


def test_parallel_partial_writes_merge(dev):
    M, N, bm, bn, cut = 60, 100, 32, 48, 10
    a = torch.randn(M, N, device=dev)
    c = parallel_partial_fragment_write(M, N, bm, bn, cut)(a)
    ref = a.double().cpu().clone()
    col = torch.arange(N) % bn
    row = torch.arange(M) % bm
    last = (row == bm - 1)[:, None] & (col >= cut)[None, :]
    ref = torch.where(last, ref * 2.0 + 5.0, ref)
    ref[:, col < cut] = -1.0
    assert_close(c, ref, 1e-6, 1e-6)


@tilelang.jit(out_idx=[-1])
def parallel_non_pow2(M, N, bm, bn):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            for i, j in T.Parallel(bm, bn):
                v = A[by * bm + i, bx * bn + j].astype("float32")
                C[by * bm + i, bx * bn + j] = v * v + i - j

    return main


def test_parallel_non_pow2_extents(dev):
    M, N, bm, bn = 100, 110, 24, 36
    a = torch.randn(M, N, device=dev).half()
    c = parallel_non_pow2(M, N, bm, bn)(a)
    i = (torch.arange(M) % bm).double()[:, None]
    j = (torch.arange(N) % bn).double()[None, :]
    ad = a.double().cpu()
    assert_close(c, ad * ad + i - j, 1e-5, 1e-6)
