"""Seed 001, pattern 1: element-wise operation (block view), as written in the seed.

Run: python examples/elementwise.py
"""
import torch

import tile2triton as tilelang
import tile2triton.language as T


@tilelang.jit(out_idx=[-1])
def elementwise_op(M, N, block_M, block_N, threads):
    @T.prim_func
    def main(A: T.Tensor[(M, N), T.float32],
             B: T.Tensor[(M, N), T.float32],
             C: T.Tensor[(M, N), T.float32]):

        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            for (local_y, local_x) in T.Parallel(block_M, block_N):
                y = by * block_M + local_y
                x = bx * block_N + local_x
                C[y, x] = A[y, x] + B[y, x]

    return main


def check(device=None, M=150, N=200, block_M=32, block_N=64, threads=128):
    """Run at sizes that are not multiples of the tile; return the max abs error."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    kernel = elementwise_op(M, N, block_M, block_N, threads)
    a = torch.randn(M, N, device=device)
    b = torch.randn(M, N, device=device)
    c = kernel(a, b)
    ref = a.double() + b.double()
    torch.testing.assert_close(c.double(), ref, atol=1e-6, rtol=1e-6)
    return (c.double() - ref).abs().max().item()


def main():
    torch.manual_seed(0)
    err = check()
    print("ok", f"max_err={err:.3g}")


if __name__ == "__main__":
    main()
