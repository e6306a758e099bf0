"""GEMM with a fused epilogue: C = relu(A @ B + bias), bias broadcast over rows.

Run: python examples/gemm_bias_relu.py
"""

import torch

import tile2triton as tilelang
import tile2triton.language as T


@tilelang.jit(out_idx=[-1])
def matmul_bias_relu(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float"):
    @T.prim_func
    def main(
        A: T.Tensor[(M, K), dtype],
        B: T.Tensor[(K, N), dtype],
        Bias: T.Tensor[(N,), dtype],
        C: T.Tensor[(M, N), dtype],
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            bias_local = T.alloc_fragment((block_N,), accum_dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)

            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)

            T.copy(Bias[bx * block_N], bias_local)
            for i, j in T.Parallel(block_M, block_N):
                C_local[i, j] = T.max(C_local[i, j] + bias_local[j], 0)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def check(device=None, M=100, N=72, K=90, block_M=64, block_N=32, block_K=32):
    """Run at sizes that are not multiples of the tiles; return the max abs error."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    kernel = matmul_bias_relu(M, N, K, block_M, block_N, block_K)
    a = torch.randn(M, K, device=device).half()
    b = torch.randn(K, N, device=device).half()
    bias = torch.randn(N, device=device).half()
    c = kernel(a, b, bias)
    ref = torch.relu(a.double() @ b.double() + bias.double())
    torch.testing.assert_close(c.double(), ref, atol=1e-2, rtol=1e-2)
    return (c.double() - ref).abs().max().item()


def main():
    torch.manual_seed(0)
    err = check()
    print("ok", f"max_err={err:.3g}")


if __name__ == "__main__":
    main()
