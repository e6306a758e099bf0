"""Split-K GEMM: each program computes a partial product over one slice of K and adds it into
C with T.atomic_add (TileLang's examples/gemm_splitk/example_tilelang_gemm_splitk.py).

C is an input that the caller zeroes (outputs from out_idx are uninitialised, as in TileLang).
Each split covers a whole number of K tiles, so no two splits read the same K columns; the last
one runs past K and reads zeros there. ``atomic_tile=True`` uses the tile form
``T.atomic_add(C[by * block_M, bx * block_N], C_shared)`` instead of the element form.

Run: python examples/gemm_splitk.py
"""

import torch

import tile2triton as tilelang
import tile2triton.language as T


@tilelang.jit
def matmul(
    M,
    N,
    K,
    block_M,
    block_N,
    block_K,
    split_k,
    atomic_tile=False,
    dtype="float16",
    accum_dtype="float",
    out_dtype="float32",
):
    k_tiles_per_split = T.ceildiv(T.ceildiv(K, block_K), split_k)
    splitK = k_tiles_per_split * block_K

    @T.prim_func
    def main(
        A: T.Tensor[(M, K), dtype],
        B: T.Tensor[(K, N), dtype],
        C: T.Tensor[(M, N), out_dtype],
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), split_k, threads=128) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), out_dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)

            T.clear(C_local)
            for ko in T.Pipelined(k_tiles_per_split, num_stages=0):
                T.copy(A[by * block_M, bz * splitK + ko * block_K], A_shared)
                T.copy(B[bz * splitK + ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)

            T.copy(C_local, C_shared)
            if atomic_tile:
                T.atomic_add(C[by * block_M, bx * block_N], C_shared)
            else:
                for i, j in T.Parallel(block_M, block_N):
                    T.atomic_add(C[by * block_M + i, bx * block_N + j], C_shared[i, j])

    return main


def check(device=None, M=100, N=72, K=200, block_M=32, block_N=32, block_K=32, split_k=3, atomic_tile=False):
    """Run at sizes that are not multiples of the tiles; return the max abs error."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    kernel = matmul(M, N, K, block_M, block_N, block_K, split_k, atomic_tile)
    a = torch.randn(M, K, device=device).half()
    b = torch.randn(K, N, device=device).half()
    c = torch.zeros(M, N, device=device, dtype=torch.float32)
    kernel(a, b, c)
    ref = a.double() @ b.double()
    torch.testing.assert_close(c.double(), ref, atol=1e-2, rtol=1e-2)
    return (c.double() - ref).abs().max().item()


def main():
    torch.manual_seed(0)
    for atomic_tile in (False, True):
        err = check(atomic_tile=atomic_tile)
        print(f"atomic_tile={atomic_tile}: ok max_err={err:.3g}")


if __name__ == "__main__":
    main()
