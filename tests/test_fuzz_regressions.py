"""Minimal programs for the open tile2triton bugs the grammar fuzzer found (tile2triton/oracle/fuzz.py).

Each is ``xfail(strict=True)`` while its bug is open, and named after its entry in
``tile2triton.oracle.fuzz.KNOWN_ISSUES`` (the generator redraws programs that would hit it).
With the fix, pytest reports XPASS as a failure: remove the marker and the KNOWN_ISSUES entry
together.  Each test checks tile2triton against the reference executor and against torch.
"""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.oracle import reference


# ------------------------------------------------------------------ block_cond_in_parallel
@tilelang.jit(out_idx=[-1])
def parity_of_block(N, block):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                if bx % 2 == 1:  # block-uniform condition inside T.Parallel
                    C[bx * block + i] = A[bx * block + i]
                else:
                    C[bx * block + i] = -A[bx * block + i]

    return main


@tilelang.jit(out_idx=[-1])
def guarded_rows(M, N, rows):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, rows), threads=128) as bx:
            for i in T.serial(rows):
                if bx * rows + i < M:  # a serial loop's row guard around T.Parallel
                    for j in T.Parallel(N):
                        C[bx * rows + i, j] = A[bx * rows + i, j] * 2.0

    return main


_BLOCK_COND = pytest.mark.xfail(
    strict=True,
    reason="block_cond_in_parallel: under Triton's interpreter a lane-independent comparison (`bx % 2 == 1`, "
    "`bx * 3 + i < M`, `k < N`) has int32 data, and a load or store mask made of it is rejected: 'mask has "
    "unsupported dtype' (codegen/lower.py scalar_mask)",
)


@tilelang.jit(out_idx=[-1])
def row_sums_dynamic(rows):
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((12, N), "float32"), C: T.Tensor((12,), "float32")):
        with T.Kernel(12 // rows, threads=128) as bx:
            R = T.alloc_fragment((rows,), "float32")
            T.fill(R, 0.5)
            for k in range(N):
                for i in T.Parallel(rows):
                    R[i] += A[bx * rows + i, k]  # rows always in bounds: the load's mask is `k < N`
            T.copy(R, C[bx * rows])

    return main


@_BLOCK_COND
def test_lane_independent_load_mask_interpreter():
    a = torch.randn(12, 37)
    kernel = row_sums_dynamic(4)
    assert_close(kernel(a), a.double().sum(1) + 0.5, 1e-5, 1e-5)


@_BLOCK_COND
def test_row_guard_of_a_serial_loop_around_parallel_interpreter():
    a = torch.randn(7, 8)  # a power-of-two row: the mask is the row guard alone
    kernel = guarded_rows(7, 8, 3)
    assert_close(kernel(a), a.double() * 2, 0, 0)
    assert reference.compare(kernel, a).ok


def test_block_condition_inside_parallel_interpreter():  # fixed: lower.global_address normalises the mask
    a = torch.randn(21)
    kernel = parity_of_block(21, 8)
    out = kernel(a)
    sign = torch.tensor([-1.0 if (k // 8) % 2 == 0 else 1.0 for k in range(21)])
    assert_close(out, a.double() * sign, 0, 0)
    assert reference.compare(kernel, a).ok


# ------------------------------------------------------------------ scan_unit_dim
@tilelang.jit(out_idx=[-1])
def scan_tile(R, C_, dim, op):
    @T.prim_func
    def main(A: T.Tensor((R, C_), "float32"), C: T.Tensor((R, C_), "float32")):
        with T.Kernel(1, threads=128) as bx:
            F = T.alloc_fragment((R, C_), "float32")
            T.copy(A[0, 0], F)
            if op == "sum":
                T.cumsum(F, dim=dim)
            else:
                T.cummax(F, dim=dim)
            T.copy(F, C[0, 0])

    return main


# scan_unit_dim, fixed: the scan axis is the dim's position in the tile with unit dims dropped
@pytest.mark.parametrize("shape, dim", [((1, 20), 0), ((20, 1), 0), ((20, 1), 1)], ids=["1x20-d0", "20x1-d0", "20x1-d1"])
@pytest.mark.parametrize("op", ["sum", "max"])
def test_scan_of_a_tile_with_a_unit_dim(dev, shape, dim, op):
    a = torch.randn(*shape, device=dev)
    kernel = scan_tile(*shape, dim, op)
    out = kernel(a)
    ref = a.double().cumsum(dim) if op == "sum" else a.double().cummax(dim).values
    assert_close(out, ref, 1e-5, 1e-5)


# ------------------------------------------------------------------ one_lane_guarded_sum
@tilelang.jit(out_idx=[-1])
def row_sums_one_row_per_block():
    M = T.dynamic("M")

    @T.prim_func
    def main(A: T.Tensor((M, 9), "float32"), C: T.Tensor((M,), "float32")):
        with T.Kernel(M, threads=128) as bx:
            R = T.alloc_fragment((1,), "float32")
            T.fill(R, 0.5)
            for i in T.Parallel(1):
                for k in range(9):
                    if bx + i < M:  # a guard that value ranges cannot decide (M is dynamic)
                        R[i] += A[bx + i, k]
            T.copy(R, C[bx])

    return main


@pytest.mark.xfail(
    strict=True,
    reason="one_lane_guarded_sum: a one-element fragment is a scalar (tl.full([], ...)), but `R[i] += f(k)` "
    "under a lane condition becomes tl.where(cond, ..., R) with a (1,)-shaped cond: the loop-carried R turns "
    "into a block and its store to a scalar pointer is rejected",
)
def test_guarded_sum_into_a_one_element_fragment(dev):
    a = torch.randn(7, 9, device=dev)
    kernel = row_sums_one_row_per_block()
    assert_close(kernel(a), a.double().sum(1) + 0.5, 1e-5, 1e-5)


# ------------------------------------------------------------------ onehot_numel
@tilelang.jit(out_idx=[-1])
def copy_into_an_offset_tile(M, N, bm, bn, pad, scope):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            if scope == "fragment":
                X = T.alloc_fragment((bm + pad, bn + pad), "float32")
            else:
                X = T.alloc_shared((bm + pad, bn + pad), "float32")
            T.clear(X)
            T.copy(A[by * bm, bx * bn], X[pad : bm + pad, pad : bn + pad])
            T.copy(X[pad : bm + pad, pad : bn + pad], C[by * bm, bx * bn])

    return main


@pytest.mark.xfail(
    strict=True,
    reason="onehot_numel: a copy into an offset sub-region of a register tile is a one-hot scatter of "
    "(destination numel x source numel) elements: 26x34 <- 24x32 needs 2048 x 1024 > Triton's 2**20 limit",
)
def test_copy_into_an_offset_region_of_a_fragment(dev):
    a = torch.randn(50, 70, device=dev)
    out = copy_into_an_offset_tile(50, 70, 24, 32, 2, "fragment")(a)
    assert_close(out, a, 0, 0)


def test_copy_into_an_offset_region_of_a_shared_tile(dev):
    """The same copy into shared memory works (it is not kept in registers)."""
    a = torch.randn(50, 70, device=dev)
    out = copy_into_an_offset_tile(50, 70, 24, 32, 2, "shared")(a)
    assert_close(out, a, 0, 0)
