"""An ``if`` that guards the tail (``if k < n: C[k] = ...``) is the bounds check of the accesses under
it: the generated mask is the condition alone, not ``(k < n) & cond``.  Only where the condition is
part of the access's mask, and only for a variable the branch does not rebind."""

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


@tilelang.jit(out_idx=[-1])
def guarded(n, block=64):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            for i in T.Parallel(block):
                k = bx * block + i
                if k < n:
                    C[k] = A[k] * 2.0

    return main


@tilelang.jit(out_idx=[-1])
def rebound(n, block=64):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            for i in T.Parallel(block):
                k = bx * block + i
                if k < n:
                    k = k + 3  # the condition says nothing of the new k
                    C[k] = A[k] * 2.0

    return main


@tilelang.jit(out_idx=[-1])
def guarded_2d(m, n, block_m=16, block_n=32):
    @T.prim_func
    def main(A: T.Tensor((m, n), "float32"), C: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(n, block_n), T.ceildiv(m, block_m), threads=128) as (bx, by):
            for i, j in T.Parallel(block_m, block_n):
                r, c = by * block_m + i, bx * block_n + j
                if r < m and c >= 0 and n > c:
                    C[r, c] = A[r, c] + A[r, 0]

    return main


def test_the_guard_is_the_mask(dev):
    n = 301
    kernel = guarded(n)
    source = kernel.get_kernel_source()
    assert source.count("k < 301") == 1 and "& cond" not in source, source
    a = torch.randn(n, device=dev)
    assert torch.equal(kernel(a), a * 2)


def test_a_rebound_index_keeps_its_bounds_check(dev):
    n = 301
    kernel = rebound(n)
    a = torch.randn(n, device=dev)
    out = kernel(a)
    want = torch.full((n,), float("nan"), device=dev)
    want[3:] = a[3:] * 2
    torch.testing.assert_close(out[3:], want[3:])  # k + 3 >= n is not written


def test_the_guard_of_two_dims(dev):
    m, n = 37, 75
    kernel = guarded_2d(m, n)
    source = kernel.get_kernel_source()
    assert "& cond" not in source and source.count("mask=cond") == 2, source
    # A[r, 0] varies along i alone: the condition (along i and j) is not its mask, its own bound is
    a = torch.randn(m, n, device=dev)
    torch.testing.assert_close(kernel(a), a + a[:, :1])
