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
