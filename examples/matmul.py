"""A tiled matmul with T.Pipelined and T.gemm, in TileLang's own style.

M, N, K = 200, 136, 120 with 64x64x32 tiles: no dimension is a multiple of its tile.

Run: python examples/matmul.py   (also prints the generated Triton source)
"""
import torch

import tile2triton as tilelang
import tile2triton.language as T


@tilelang.jit(out_idx=[-1])
def matmul(M, N, K, block_M, block_N, block_K):
    @T.prim_func
    def main(A: T.Tensor[(M, K), T.float16],
             B: T.Tensor[(K, N), T.float16],
             C: T.Tensor[(M, N), T.float16]):

        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            # shared-memory tiles and the fp32 accumulator
            A_shared = T.alloc_shared((block_M, block_K), "float16")
            B_shared = T.alloc_shared((block_K, block_N), "float16")
            C_local = T.alloc_fragment((block_M, block_N), "float")

            T.clear(C_local)

            # the K loop, software-pipelined
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)

            # write the result back
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def check(device=None, M=200, N=136, K=120, block_M=64, block_N=64, block_K=32):
    """Run at sizes that are not multiples of the tiles; return the max abs error."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    kernel = matmul(M, N, K, block_M, block_N, block_K)
    a = torch.randn(M, K, device=device).half()
    b = torch.randn(K, N, device=device).half()
    c = kernel(a, b)
    ref = a.double() @ b.double()
    torch.testing.assert_close(c.double(), ref, atol=1e-2, rtol=1e-2)
    return (c.double() - ref).abs().max().item()


def main():
    torch.manual_seed(0)
    err = check()
    print(matmul(200, 136, 120, 64, 64, 32).get_kernel_source())
    print("ok", f"max_err={err:.3g}")


if __name__ == "__main__":
    main()
