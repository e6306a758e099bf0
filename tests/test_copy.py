"""T.copy in every direction, its operand forms (start-index, slice, mixed), extent
inference, dtype cast, out-of-bounds reads (0) and writes (dropped); allocations of
non-power-of-two shapes."""

import pytest
import torch
from t2t_util import Guarded, assert_close, assert_equal, poison

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


@tilelang.jit
def g2s2g(M, N, bm, bn, dtype):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_shared = T.alloc_shared((bm, bn), dtype)
            T.copy(A[by * bm, bx * bn], A_shared)  # global -> shared, start-index form
            T.copy(A_shared, C[by * bm, bx * bn])  # shared -> global

    return main


def test_copy_global_shared_global(dev):
    M, N = 150, 200
    a = torch.randn(M, N, device=dev)
    g = Guarded((M, N), device=dev)
    g2s2g(M, N, 64, 64, "float32")(a, g.tensor)
    assert_equal(g.tensor, a)
    g.check_tail()


@tilelang.jit
def g2f2g(M, N, bm, bn):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            F = T.alloc_fragment((bm, bn), "float32")
            T.copy(A[by * bm, bx * bn], F)  # global -> fragment
            for i, j in T.Parallel(bm, bn):
                F[i, j] = F[i, j] * 2.0 - 1.0
            T.copy(F, C[by * bm, bx * bn])  # fragment -> global

    return main


def test_copy_global_fragment_global_non_pow2_tile(dev):
    # 48 x 40 tiles: neither power of two, and 150 x 200 is not a multiple of them
    M, N = 150, 203
    a = torch.randn(M, N, device=dev)
    g = Guarded((M, N), device=dev)
    g2f2g(M, N, 48, 40)(a, g.tensor)
    assert_close(g.tensor, a.double() * 2.0 - 1.0, 1e-6, 1e-6)
    g.check_tail()


@tilelang.jit(out_idx=[-1])
def shared_fragment_roundtrip(M, N, bm, bn):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            S1 = T.alloc_shared((bm, bn), "float32")
            S2 = T.alloc_shared((bm, bn), "float32")
            F = T.alloc_fragment((bm, bn), "float32")
            T.copy(A[by * bm, bx * bn], S1)
            T.copy(S1, F)  # shared -> fragment
            for i, j in T.Parallel(bm, bn):
                F[i, j] = F[i, j] + i * 0.5 + j
            T.copy(F, S2)  # fragment -> shared
            T.copy(S2, C[by * bm, bx * bn])

    return main


def test_copy_shared_fragment_shared(dev):
    M, N, bm, bn = 100, 90, 32, 64
    a = torch.randn(M, N, device=dev)
    c = shared_fragment_roundtrip(M, N, bm, bn)(a)
    i = (torch.arange(M, dtype=torch.float64) % bm)[:, None]
    j = (torch.arange(N, dtype=torch.float64) % bn)[None, :]
    assert_close(c, a.double().cpu() + i * 0.5 + j, 1e-5, 1e-6)


@tilelang.jit(out_idx=[-1])
def global_to_global_1d(N, BLOCK_N, dtype):
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, BLOCK_N), threads=256) as bx:
            offs = bx * BLOCK_N
            T.copy(A[offs : offs + BLOCK_N], B[offs : offs + BLOCK_N])  # global -> global, slice form

    return main


def test_copy_global_to_global_slices(dev):
    N = 300
    a = torch.randn(N, device=dev).half()
    b = global_to_global_1d(N, 128, "float16")(a)
    assert_equal(b, a)


@tilelang.jit
def global_to_global_2d(M, N, bm, bn):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            # slice source, start-index destination (extents taken from the source)
            T.copy(A[by * bm : by * bm + bm, bx * bn : bx * bn + bn], C[by * bm, bx * bn])

    return main


def test_copy_global_to_global_2d_slice_and_start(dev):
    M, N = 150, 100
    a = torch.randn(M, N, device=dev)
    g = Guarded((M, N), device=dev)
    global_to_global_2d(M, N, 64, 64)(a, g.tensor)
    assert_equal(g.tensor, a)
    g.check_tail()


@tilelang.jit(out_idx=[-1])
def slice_into_shared(M, K, bm, bk):
    # C[m, j] = sum_k A[m, k * bk + j]  (column chunks folded with T.serial)
    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), C: T.Tensor((M, bk), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=128) as bx:
            S = T.alloc_shared((bm, bk), "float32")
            acc = T.alloc_fragment((bm, bk), "float32")
            T.clear(acc)
            for k in T.serial(T.ceildiv(K, bk)):
                T.copy(A[bx * bm : bx * bm + bm, k * bk : k * bk + bk], S)
                for i, j in T.Parallel(bm, bk):
                    acc[i, j] += S[i, j]
            T.copy(acc, C[bx * bm, 0])

    return main


def test_copy_slice_form_into_shared(dev):
    M, K, bm, bk = 100, 150, 32, 64
    a = torch.randn(M, K, device=dev)
    c = slice_into_shared(M, K, bm, bk)(a)
    pad = torch.zeros(M, 3 * bk, dtype=torch.float64)
    pad[:, :K] = a.double().cpu()
    ref = pad.view(M, 3, bk).sum(1)
    assert_close(c, ref, 1e-5, 1e-5)


@tilelang.jit(out_idx=[-1])
def mixed_row_copy(M, N):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(M, threads=128) as bx:
            row = T.alloc_fragment((N,), "float32")
            T.copy(A[bx, 0:N], row)  # mixed index/slice form
            for j in T.Parallel(N):
                row[j] = row[j] * row[j]
            T.copy(row, C[bx, :])  # full-dimension slice

    return main


def test_copy_mixed_index_slice(dev):
    M, N = 23, 200
    a = torch.randn(M, N, device=dev)
    c = mixed_row_copy(M, N)(a)
    assert_close(c, a.double() ** 2, 1e-6, 1e-6)


@tilelang.jit(out_idx=[-1])
def row_chunk_start_index(M, K, bk):
    # T.copy(A[bx, k * bk], F) with a 1-D fragment: src extents inferred as [1, bk]
    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), C: T.Tensor((M, bk), "float32")):
        with T.Kernel(M, threads=64) as bx:
            F = T.alloc_fragment((bk,), "float32")
            acc = T.alloc_fragment((bk,), "float32")
            T.clear(acc)
            for k in T.serial(T.ceildiv(K, bk)):
                T.copy(A[bx, k * bk], F)
                for j in T.Parallel(bk):
                    acc[j] = T.max(acc[j], F[j])
            T.copy(acc, C[bx, 0])

    return main


def test_copy_start_index_extent_inference_1d(dev):
    M, K, bk = 19, 100, 48
    a = torch.randn(M, K, device=dev)
    c = row_chunk_start_index(M, K, bk)(a)
    pad = torch.zeros(M, 3 * bk, dtype=torch.float64)  # OOB columns read as 0
    pad[:, :K] = a.double().cpu()
    ref = pad.view(M, 3, bk).max(1).values.clamp(min=0.0)  # acc starts at 0
    assert_close(c, ref, 0, 0)


@tilelang.jit(out_idx=[-1])
def batched_tile_copy(Bt, M, N, bm, bn):
    @T.prim_func
    def main(A: T.Tensor((Bt, M, N), "float32"), C: T.Tensor((Bt, M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), Bt, threads=128) as (bx, by, bz):
            S = T.alloc_shared((bm, bn), "float32")
            T.copy(A[bz, by * bm, bx * bn], S)  # 3-D start index -> 2-D tile
            T.copy(S, C[bz, by * bm, bx * bn])

    return main


def test_copy_3d_start_index_into_2d_tile(dev):
    Bt, M, N = 3, 40, 70
    a = torch.randn(Bt, M, N, device=dev)
    c = batched_tile_copy(Bt, M, N, 32, 32)(a)
    assert_equal(c, a)


@tilelang.jit(out_idx=[-1])
def cast_chain(M, N, bm, bn):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            S = T.alloc_shared((bm, bn), "float16")
            F = T.alloc_fragment((bm, bn), "float32")
            T.copy(A[by * bm, bx * bn], S)  # fp32 -> fp16 on copy
            T.copy(S, F)  # fp16 -> fp32 on copy
            T.copy(F, C[by * bm, bx * bn])

    return main


def test_copy_casts_to_destination_dtype(dev):
    M, N = 100, 72
    a = torch.randn(M, N, device=dev) * 3.0
    c = cast_chain(M, N, 32, 32)(a)
    assert_equal(c, a.half().float())


@tilelang.jit(out_idx=[-2, -1])
def cast_fragment_out(M, N, bm, bn):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float16"), H: T.Tensor((M, N), "bfloat16"), I: T.Tensor((M, N), "int32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            F = T.alloc_fragment((bm, bn), "float32")
            T.copy(A[by * bm, bx * bn], F)
            for i, j in T.Parallel(bm, bn):
                F[i, j] = F[i, j] * 10.0
            T.copy(F, H[by * bm, bx * bn])  # fp32 fragment -> bf16 global
            T.copy(F, I[by * bm, bx * bn])  # fp32 fragment -> int32 global (truncation)

    return main


def test_copy_cast_fragment_to_bf16_and_int(dev):
    M, N = 70, 90
    a = torch.randn(M, N, device=dev).half()
    h, i = cast_fragment_out(M, N, 32, 32)(a)
    f = a.float() * 10.0
    assert h.dtype == torch.bfloat16 and i.dtype == torch.int32
    assert_equal(h, f.bfloat16())
    assert_equal(i, f.to(torch.int32))


@tilelang.jit
def oob_read_zero_2d(M, N, bm, bn):
    # C is sized to whole tiles, so every store is in bounds; A is not, so part of each
    # edge tile is read out of bounds and must arrive as 0 -- also over an earlier T.fill.
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((T.ceildiv(M, bm) * bm, T.ceildiv(N, bn) * bn), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            F = T.alloc_fragment((bm, bn), "float32")
            T.fill(F, 3.0)
            T.copy(A[by * bm, bx * bn], F)
            T.copy(F, C[by * bm, bx * bn])

    return main


def test_copy_oob_reads_are_zero(dev):
    M, N, bm, bn = 100, 70, 64, 64
    a = torch.randn(M, N, device=dev)
    c = poison((128, 128), device=dev)
    oob_read_zero_2d(M, N, bm, bn)(a, c)
    ref = torch.zeros(128, 128, dtype=torch.float64)
    ref[:M, :N] = a.double().cpu()
    assert_close(c, ref, 0, 0)


@tilelang.jit(out_idx=[-1])
def oob_read_zero_sum(N, block):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), S: T.Tensor((T.ceildiv(N, block),), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            F = T.alloc_fragment((block,), "float32")
            s = T.alloc_fragment((1,), "float32")
            T.fill(F, 100.0)
            T.copy(A[bx * block], F)  # tail of the last block is out of bounds
            T.reduce_sum(F, s, dim=0)
            S[bx] = s[0]

    return main


def test_copy_oob_reads_are_zero_in_reduction(dev):
    N, block = 300, 128
    a = torch.randn(N, device=dev)
    s = oob_read_zero_sum(N, block)(a)
    pad = torch.zeros(3 * block, dtype=torch.float64)
    pad[:N] = a.double().cpu()
    assert_close(s, pad.view(3, block).sum(1), 1e-4, 1e-5)


@tilelang.jit
def oob_write_dropped(M, N, bm, bn):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            F = T.alloc_fragment((bm, bn), "float32")
            T.copy(A[by * bm, bx * bn], F)
            for i, j in T.Parallel(bm, bn):
                F[i, j] = F[i, j] + 100.0  # padding lanes hold 100, not 0
            T.copy(F, C[by * bm, bx * bn])  # edge tiles: OOB elements must not be written

    return main


def test_copy_oob_writes_do_not_land(dev):
    M, N = 100, 70
    a = torch.randn(M, N, device=dev)
    g = Guarded((M, N), device=dev)
    oob_write_dropped(M, N, 64, 64)(a, g.tensor)
    assert_close(g.tensor, a.double() + 100.0, 1e-5, 1e-6)
    g.check_tail()


@tilelang.jit(out_idx=[-1])
def odd_allocs(N, block):
    # allocations with non-power-of-two extents of every scope
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=96) as bx:
            S = T.alloc_shared((block,), "float32")
            F = T.alloc_fragment((block,), "float32")
            T.copy(A[bx * block], S)
            T.copy(S, F)
            for i in T.Parallel(block):
                tmp = T.alloc_local((3,), "float32")
                tmp[0] = F[i]
                tmp[1] = F[i] * 2.0
                tmp[2] = tmp[0] + tmp[1]
                C[bx * block + i] = tmp[2]

    return main


def test_alloc_non_pow2_all_scopes(dev):
    N, block = 250, 96
    a = torch.randn(N, device=dev)
    c = odd_allocs(N, block)(a)
    assert_close(c, a.double() * 3.0, 1e-6, 1e-6)


@tilelang.jit(out_idx=[-1])
def local_at_block_level(M, K):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), C: T.Tensor((M,), "float32")):
        with T.Kernel(M, threads=32) as bx:
            acc = T.alloc_local((1,), "float32")
            acc[0] = 0.0
            for k in T.serial(K):
                acc[0] = acc[0] + A[bx, k] * (k % 3)
            C[bx] = acc[0]

    return main


def test_alloc_local_scalar_serial_accumulation(dev):
    M, K = 13, 37
    a = torch.randn(M, K, device=dev)
    c = local_at_block_level(M, K)(a)
    w = (torch.arange(K) % 3).double()
    assert_close(c, a.double().cpu() @ w, 1e-5, 1e-5)
