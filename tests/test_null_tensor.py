"""None for a tensor parameter no kernel names (an optional bias switched off at compile time): the
kernel runs, as TileLang's nullptr argument does; None for a tensor the kernel uses is a clear error."""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T


@tilelang.jit
def scale_or_bias(M, N, with_bias):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32"), Bias: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(M, 16), threads=128) as bx:
            for i, j in T.Parallel(16, N):
                if bx * 16 + i < M:
                    if with_bias:
                        C[bx * 16 + i, j] = A[bx * 16 + i, j] + Bias[j]
                    else:
                        C[bx * 16 + i, j] = A[bx * 16 + i, j] * 2.0

    return main


def test_none_for_an_unused_tensor(dev):
    M, N = 41, 24
    a = torch.randn(M, N, device=dev)
    c = torch.full((M, N), float("nan"), device=dev)
    scale_or_bias(M, N, False)(a, c, None)
    assert_close(c, a.double() * 2.0, 1e-6, 1e-6)


def test_none_for_a_used_tensor_is_named(dev):
    M, N = 41, 24
    a = torch.randn(M, N, device=dev)
    c = torch.full((M, N), float("nan"), device=dev)
    with pytest.raises(tilelang.KernelCallError, match=r"parameter 'Bias' expects a torch.Tensor .*got None"):
        scale_or_bias(M, N, True)(a, c, None)
