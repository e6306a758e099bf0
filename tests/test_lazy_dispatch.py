"""A lazy factory called again for every use (as TileLang scripts do): the same call gives the same
kernel through one dictionary lookup; unhashable arguments take compile's frozen key; a new value a
new kernel."""

import torch

import tile2triton as tilelang
import tile2triton.language as T


@tilelang.jit(out_idx=[-1])
def scaled(N, factors, block=64):
    total = float(sum(factors))

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] * total

    return main


def test_repeated_calls_give_the_cached_kernel():
    first = scaled(100, (1.0, 2.0), block=64)
    assert scaled(100, (1.0, 2.0), block=64) is first
    assert scaled(100, (1.0, 3.0), block=64) is not first
    a = torch.randn(100)
    torch.testing.assert_close(first(a), a * 3.0)


def test_unhashable_arguments_still_cache():
    first = scaled(77, [0.5, 0.25])  # a list: compile's argument_key freezes it
    assert scaled(77, [0.5, 0.25]) is first
    assert scaled(77, [0.5, 0.5]) is not first
    a = torch.randn(77)
    torch.testing.assert_close(first(a), a * 0.75)
