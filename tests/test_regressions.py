"""Minimal regression tests for tile2triton bugs found by the differential fuzzer (tests/test_fuzz.py).

Each was marked ``xfail(strict=True)`` while its bug was open; all are fixed now, and pytest
reports XPASS as a failure, so remove the marker (and the matching entry in
``tile2triton.fuzz.KNOWN_ISSUES``) together with the fix.
"""

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import reference


# ---------------------------------------------------------------------------- bug 1
@tilelang.jit(out_idx=[-1])
def copy_row_tile():
    @T.prim_func
    def main(A: T.Tensor((1, 53), "float32"), C: T.Tensor((1, 53), "float32")):
        with T.Kernel(2) as b:
            X = T.alloc_fragment((1, 32), "float32")
            T.copy(A[0, b * 32], X)
            T.copy(X, C[0, b * 32])

    return main


@tilelang.jit(out_idx=[-1])
def copy_column_tile():
    @T.prim_func
    def main(A: T.Tensor((30, 3), "float32"), C: T.Tensor((30, 3), "float32")):
        with T.Kernel(3) as b:
            X = T.alloc_shared((32, 1), "float32")
            T.copy(A[0, b], X)
            T.copy(X, C[0, b])

    return main


@pytest.mark.parametrize(
    "factory,shape", [(copy_row_tile, (1, 53)), (copy_column_tile, (30, 3))], ids=["row", "column"]
)
def test_copy_into_tile_with_unit_dim(factory, shape):
    a = torch.randn(*shape)
    c = factory()(a)
    torch.testing.assert_close(c, a)


# ---------------------------------------------------------------------------- bug 2
@tilelang.jit(out_idx=[-1])
def parallel_1x1():
    @T.prim_func
    def main(A: T.Tensor((1, 1), "float32"), C: T.Tensor((1, 1), "float32")):
        with T.Kernel(1):
            X = T.alloc_fragment((1, 1), "float32")
            for i, j in T.Parallel(1, 1):
                X[i, j] = A[i, j] * 2.0
            T.copy(X, C)

    return main


def test_parallel_1x1_writes_1x1_fragment():
    a = torch.randn(1, 1)
    c = parallel_1x1()(a)
    torch.testing.assert_close(c, a * 2)


# ---------------------------------------------------------------------------- bug 3
@tilelang.jit(out_idx=[-1])
def constant_tile():
    @T.prim_func
    def main(A: T.Tensor((4, 8), "float32"), C: T.Tensor((4, 8), "float32")):
        with T.Kernel(1):
            X = T.alloc_fragment((4, 8), "float32")
            for i, j in T.Parallel(4, 8):
                X[i, j] = 0.5
            T.copy(X, C)

    return main


def test_constant_store_to_whole_fragment():
    c = constant_tile()(torch.randn(4, 8))
    torch.testing.assert_close(c, torch.full((4, 8), 0.5))


def test_regression_kernels_run_in_the_reference():
    """The reference executor runs every repro above (so each stays a valid program)."""
    torch.testing.assert_close(reference.run(copy_row_tile(), a := torch.randn(1, 53)), a)
    torch.testing.assert_close(reference.run(copy_column_tile(), a := torch.randn(30, 3)), a)
    torch.testing.assert_close(reference.run(parallel_1x1(), a := torch.randn(1, 1)), a * 2)
    torch.testing.assert_close(reference.run(constant_tile(), torch.randn(4, 8)), torch.full((4, 8), 0.5))


# ---------------------------------------------------------------------------- provable conditions
@tilelang.jit(out_idx=[-1])
def guarded_tail(M, N, bn):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, bn), threads=128) as b:
            R = T.alloc_fragment((bn,), "float32")
            T.clear(R)
            for i in T.serial(M):
                for j in T.Parallel(bn):
                    # a condition the value ranges decide (always true here): no select, same result
                    R[j] += T.if_then_else(b * bn + j < N + bn, A[i, b * bn + j], 0.0)
            for j in T.Parallel(bn):
                if b * bn + j < N + bn:  # always true: the branch is taken without a mask
                    if b * bn + j < N:
                        C[b * bn + j] = R[j]

    return main


@pytest.mark.poison_empty
def test_conditions_decided_by_value_ranges(dev):
    kernel = guarded_tail(7, 60, 8)  # N = 60 is no multiple of 8: the last block's tail is guarded
    a = torch.randn(7, 60, device=dev)
    torch.testing.assert_close(kernel(a).double(), a.double().sum(0), atol=1e-5, rtol=1e-5)
    source = kernel.get_kernel_source(interpret=dev == "cpu")
    code = "\n".join(line for line in source.splitlines() if not line.strip().startswith("#"))
    assert "< 68" not in code and "tl.where" not in code  # both provable conditions folded away
    assert "< 60" in code  # the real guard stays
