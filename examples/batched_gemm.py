"""Batched GEMM: 3-D tensors (batch, M, K) x (batch, K, N) with a 3-D grid (the batch on blockIdx.z).

Run: python examples/batched_gemm.py
"""

import torch

import tile2triton as tilelang
import tile2triton.language as T


@tilelang.jit(out_idx=[-1])
def batched_matmul(batch, M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float"):
    @T.prim_func
    def main(
        A: T.Tensor[(batch, M, K), dtype],
        B: T.Tensor[(batch, K, N), dtype],
        C: T.Tensor[(batch, M, N), dtype],
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), batch, threads=128) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)

            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[bz, by * block_M, ko * block_K], A_shared)
                T.copy(B[bz, ko * block_K : (ko + 1) * block_K, bx * block_N : (bx + 1) * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)

            T.copy(C_local, C[bz, by * block_M, bx * block_N])

    return main


def check(device=None, batch=3, M=70, N=90, K=100, block_M=32, block_N=32, block_K=32):
    """Run at sizes that are not multiples of the tiles; return the max abs error."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    kernel = batched_matmul(batch, M, N, K, block_M, block_N, block_K)
    a = torch.randn(batch, M, K, device=device).half()
    b = torch.randn(batch, K, N, device=device).half()
    c = kernel(a, b)
    ref = torch.bmm(a.double(), b.double())
    torch.testing.assert_close(c.double(), ref, atol=2e-2, rtol=1e-2)
    return (c.double() - ref).abs().max().item()


def main():
    torch.manual_seed(0)
    err = check()
    print("ok", f"max_err={err:.3g}")


if __name__ == "__main__":
    main()
