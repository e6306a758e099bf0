"""Seed 001, pattern 1b: conditional element-wise operation, as written in the seed.

Run: python examples/conditional_elementwise.py
"""
import torch

import tile2triton as tilelang
import tile2triton.language as T


@tilelang.jit(out_idx=[-1])
def conditional_elementwise(N, threads):
    @T.prim_func
    def main(A: T.Tensor[(N,), T.float32],
             B: T.Tensor[(N,), T.float32],
             C: T.Tensor[(N,), T.float32]):

        with T.Kernel(T.ceildiv(N, threads), threads=threads) as bx:
            for i in T.Parallel(threads):
                idx = bx * threads + i
                if idx < N:
                    C[idx] = T.if_then_else(
                        A[idx] > 0,
                        A[idx] + B[idx],
                        A[idx] - B[idx]
                    )

    return main


def check(device=None, N=300, threads=128):
    """Run at a size that is not a multiple of the block; return the max abs error."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    kernel = conditional_elementwise(N, threads)
    a = torch.randn(N, device=device)
    b = torch.randn(N, device=device)
    c = kernel(a, b)
    ad, bd = a.double(), b.double()
    ref = torch.where(ad > 0, ad + bd, ad - bd)
    torch.testing.assert_close(c.double(), ref, atol=1e-6, rtol=1e-6)
    return (c.double() - ref).abs().max().item()


def main():
    torch.manual_seed(0)
    err = check()
    print("ok", f"max_err={err:.3g}")


if __name__ == "__main__":
    main()
