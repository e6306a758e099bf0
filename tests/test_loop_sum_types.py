"""A loop's ``acc += term`` folded into one sum (a ``tl.sum`` over the loop's axis, or ``term * n``
when it does not change) adds the terms in the accumulator's type, as the loop does: float16 terms
into a float32 accumulator are summed in float32 (``tl.sum`` of float16 rounds every partial sum to
float16: 2048 + 63 ones gave 2112; 1000 x 100.0 overflowed to inf)."""

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


@tilelang.jit(out_idx=[-1])
def thread_dot(m, k):
    @T.prim_func
    def main(A: T.Tensor((m, k), "float16"), B: T.Tensor((m, k), "float16"), C: T.Tensor((m, 2), "float32")):
        with T.Kernel(m, threads=1) as bx:
            a = T.alloc_local((k,), "float16")
            b = T.alloc_local((k,), "float16")
            acc = T.alloc_local((1,), "float32")
            same = T.alloc_local((1,), "float32")
            for v in T.vectorized(k):
                a[v] = A[bx, v]
                b[v] = B[bx, v]
            T.clear(acc)
            T.clear(same)
            for i in T.serial(k):
                acc[0] += a[i] * b[i]
            for i in T.serial(k):
                same[0] += a[0]  # the same float16 term every iteration
            C[bx, 0] = acc[0]
            C[bx, 1] = same[0]

    return main


@tilelang.jit(out_idx=[-1])
def block_sum(m, k):
    @T.prim_func
    def main(A: T.Tensor((m, k), "float16"), C: T.Tensor((m,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            a = T.alloc_fragment((m, k), "float16")
            acc = T.alloc_fragment((m,), "float32")
            T.copy(A, a)
            T.clear(acc)
            for kk in T.serial(k):
                for i in T.Parallel(m):
                    acc[i] += a[i, kk]
            T.copy(acc, C)

    return main


def test_thread_sums_add_float16_terms_in_float32(dev):
    m, k = 3, 40
    a = torch.ones(m, k, dtype=torch.float16, device=dev)
    a[:, 0] = 2048  # 2048 + 39 ones: 2087 in float32, not a float16
    b = torch.ones(m, k, dtype=torch.float16, device=dev)
    a[2, 0] = 100  # row 2: the same term 100, 40 times in float32 (float16's 4000 is exact too)
    c = thread_dot(m, k)(a, b)
    assert c[0, 0].item() == 2087.0 and c[0, 1].item() == 2048.0 * k
    torch.testing.assert_close(c[2], torch.tensor([139.0, 4000.0], device=dev))


def test_block_sums_add_float16_terms_in_float32(dev):
    m, k = 13, 37
    a = torch.ones(m, k, dtype=torch.float16, device=dev)
    a[:, 0] = 2048
    assert torch.equal(block_sum(m, k)(a), torch.full((m,), 2048.0 + k - 1, device=dev))
