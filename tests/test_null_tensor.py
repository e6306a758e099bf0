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


@tilelang.jit
def count_into(with_size_read):
    m = T.dynamic("m")

    @T.prim_func
    def main(a: T.Tensor[(m,), T.int32], b: T.Tensor[(m,), T.int32], out: T.Tensor[(3,), T.int32]):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(3):
                out[i] = (m if with_size_read else 5) + i

    return main


def test_a_size_from_the_tensor_that_is_there(dev):
    out = torch.full((3,), -7, dtype=torch.int32, device=dev)
    count_into(True)(None, torch.randint(0, 9, (23,), dtype=torch.int32, device=dev), out)
    assert out.tolist() == [23, 24, 25]


def test_a_size_no_tensor_gives(dev):
    # every tensor with m is None: fine where no kernel reads m; an error (a RuntimeError too,
    # as TileLang's) where one does
    out = torch.full((3,), -7, dtype=torch.int32, device=dev)
    count_into(False)(None, None, out)
    assert out.tolist() == [5, 6, 7]
    with pytest.raises(RuntimeError, match="size 'm' .*at least one non-null buffer"):
        count_into(True)(None, None, out)
