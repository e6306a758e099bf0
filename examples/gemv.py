"""Seed 001, pattern 4: GEMV with a thread-private T.alloc_local inside T.Parallel and
T.serial loops over shared buffers, as written in the seed.

Real TileLang 0.1.15 refuses this kernel (its T.clear(C_reg) stands inside T.Parallel);
in tile2triton a buffer allocated inside a T.Parallel body is private to each iteration,
so clearing it is element-wise.

Run: python examples/gemv.py
"""
import torch

import tile2triton as tilelang
import tile2triton.language as T


@tilelang.jit(out_idx=[-1])
def gemv(N, K, BLOCK_N, BLOCK_K):
    @T.prim_func
    def main(A: T.Tensor[(K,), T.float16],
             B: T.Tensor[(N, K), T.float16],
             C: T.Tensor[(N,), T.float16]):

        with T.Kernel(T.ceildiv(N, BLOCK_N)) as bn:
            A_shared = T.alloc_shared((BLOCK_K,), "float16")
            B_shared = T.alloc_shared((BLOCK_N, BLOCK_K), "float16")

            for tn in T.Parallel(BLOCK_N):
                C_reg = T.alloc_local((1,), "float")
                T.clear(C_reg)

                for bk in T.serial(T.ceildiv(K, BLOCK_K)):
                    for tk in T.serial(BLOCK_K):
                        A_shared[tk] = A[bk * BLOCK_K + tk]
                        B_shared[tn, tk] = B[bn * BLOCK_N + tn, bk * BLOCK_K + tk]

                    for tk in T.serial(BLOCK_K):
                        C_reg[0] += A_shared[tk].astype("float") * B_shared[tn, tk].astype("float")

                C[bn * BLOCK_N + tn] = C_reg[0]

    return main


def check(device=None, N=150, K=200, BLOCK_N=32, BLOCK_K=64):
    """Run at sizes that are not multiples of the tiles; return the max abs error."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    kernel = gemv(N, K, BLOCK_N, BLOCK_K)
    a = torch.randn(K, device=device).half()
    b = torch.randn(N, K, device=device).half()
    c = kernel(a, b)
    ref = b.double() @ a.double()
    torch.testing.assert_close(c.double(), ref, atol=1e-2, rtol=1e-2)
    return (c.double() - ref).abs().max().item()


def main():
    torch.manual_seed(0)
    err = check()
    print("ok", f"max_err={err:.3g}")


if __name__ == "__main__":
    main()
