"""T.im2col (TileLang's convolution-as-GEMM tile loader) against torch's conv2d."""

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T


@tilelang.jit(out_idx=[2])
def convolution(N, C, H, W, F, K, S, D, P, block_M, block_N, block_K):
    KH, KW = K, K
    OH = (H + 2 * P - D * (K - 1) - 1) // S + 1
    OW = (W + 2 * P - D * (K - 1) - 1) // S + 1

    @T.prim_func
    def main(data: T.Tensor((N, H, W, C), "float16"), kernel: T.Tensor((KH, KW, C, F), "float16"),
             out: T.Tensor((N, OH, OW, F), "float16")):  # fmt: skip
        with T.Kernel(T.ceildiv(F, block_N), T.ceildiv(N * OH * OW, block_M), threads=128) as (bx, by):
            data_shared = T.alloc_shared((block_M, block_K), "float16")
            kernel_shared = T.alloc_shared((block_K, block_N), "float16")
            out_local = T.alloc_fragment((block_M, block_N), "float")
            out_shared = T.alloc_shared((block_M, block_N), "float16")
            kernel_flat = T.Tensor((KH * KW * C, F), "float16", kernel.data)
            out_flat = T.Tensor((N * OH * OW, F), "float16", out.data)
            T.clear(out_local)
            for k_iter in T.Pipelined(T.ceildiv(KH * KW * C, block_K), num_stages=3):
                T.c2d_im2col(data, data_shared, by, k_iter, KH, S, D, P)
                T.copy(kernel_flat[k_iter * block_K, bx * block_N], kernel_shared)
                T.gemm(data_shared, kernel_shared, out_local)
            T.copy(out_local, out_shared)
            T.copy(out_shared, out_flat[by * block_M, bx * block_N])

    return main


@pytest.mark.parametrize("K, S, D, P", [(3, 1, 1, 1), (3, 2, 1, 0), (2, 1, 2, 1)])
def test_im2col_convolution(dev, K, S, D, P):
    N, C, H, W, F = 2, 12, 11, 9, 20
    data = torch.randn(N, H, W, C, device=dev).half()
    weight = torch.randn(K, K, C, F, device=dev).half()
    out = convolution(N, C, H, W, F, K, S, D, P, 32, 16, 32)(data, weight)
    ref = torch.nn.functional.conv2d(
        data.double().permute(0, 3, 1, 2).cpu(),
        weight.double().permute(3, 2, 0, 1).cpu(),
        stride=S,
        padding=P,
        dilation=D,
    ).permute(0, 2, 3, 1)
    torch.testing.assert_close(out.double().cpu(), ref, rtol=1e-2, atol=2e-2)


def test_im2col_reference_executor_agrees():
    from tile2triton.oracle import reference

    data = torch.randn(1, 7, 6, 5).half()
    weight = torch.randn(3, 3, 5, 9).half()
    kernel = convolution(1, 5, 7, 6, 9, 3, 1, 1, 1, 32, 16, 32)
    torch.testing.assert_close(
        reference.run(kernel, data, weight).double(), kernel(data, weight).double(), rtol=1e-2, atol=1e-2
    )


@tilelang.jit(out_idx=[-1])
def flat_copy(M, N):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M * N,), "float32")):
        with T.Kernel(T.ceildiv(M * N, 64), threads=64) as bx:
            flat = T.reshape(A, (M * N,))
            T.copy(flat[bx * 64 : bx * 64 + 64], B[bx * 64 : bx * 64 + 64])

    return main


def test_reshape_view_of_a_global_tensor(dev):
    a = torch.randn(7, 13, device=dev)
    torch.testing.assert_close(flat_copy(7, 13)(a).cpu(), a.cpu().reshape(-1), rtol=0, atol=0)
