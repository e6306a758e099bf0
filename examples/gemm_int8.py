"""int8 x int8 GEMM with int32 accumulation; B is stored (N, K) and used transposed.

Run: python examples/gemm_int8.py
"""

import torch

import tile2triton as tilelang
import tile2triton.language as T


@tilelang.jit(out_idx=[-1])
def matmul_int8(M, N, K, block_M, block_N, block_K, in_dtype="int8", accum_dtype="int32"):
    @T.prim_func
    def main(
        A: T.Tensor[(M, K), in_dtype],
        B: T.Tensor[(N, K), in_dtype],
        C: T.Tensor[(M, N), accum_dtype],
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), in_dtype)
            B_shared = T.alloc_shared((block_N, block_K), in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)

            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[bx * block_N, ko * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)

            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def check(device=None, M=100, N=72, K=150, block_M=32, block_N=32, block_K=64):
    """Run at sizes that are not multiples of the tiles; exact comparison (returns 0)."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    kernel = matmul_int8(M, N, K, block_M, block_N, block_K)
    a = torch.randint(-128, 128, (M, K), device=device, dtype=torch.int8)
    b = torch.randint(-128, 128, (N, K), device=device, dtype=torch.int8)
    c = kernel(a, b)
    ref = (a.long().cpu() @ b.long().cpu().T).to(torch.int32)
    assert c.dtype == torch.int32
    assert torch.equal(c.cpu(), ref), f"{(c.cpu() != ref).sum().item()} mismatching elements"
    return 0


def main():
    torch.manual_seed(0)
    check()
    print("ok (exact)")


if __name__ == "__main__":
    main()
