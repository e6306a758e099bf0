"""Inclusive prefix sums with T.cumsum: along rows or columns, forward or reversed.

Each program holds tiles that span the whole scanned dimension (so the scan is complete in one
tile) and ``block`` rows/columns of the other one. ``dim=0`` is TileLang's default and is
written without the keyword.

Run: python examples/cumsum.py
"""

import torch

import tile2triton as tilelang
import tile2triton.language as T


@tilelang.jit(out_idx=[-1])
def cumsum(M, N, block, dim=1, reverse=False, dtype="float32"):
    tile = (block, N) if dim == 1 else (M, block)

    @T.prim_func
    def main(
        A: T.Tensor[(M, N), dtype],
        B: T.Tensor[(M, N), dtype],
    ):
        with T.Kernel(T.ceildiv(M if dim == 1 else N, block), threads=128) as bx:
            A_shared = T.alloc_shared(tile, dtype)
            B_shared = T.alloc_shared(tile, dtype)
            if dim == 1:
                T.copy(A[bx * block, 0], A_shared)
                T.cumsum(A_shared, B_shared, dim=1, reverse=reverse)
                T.copy(B_shared, B[bx * block, 0])
            else:
                T.copy(A[0, bx * block], A_shared)
                T.cumsum(A_shared, reverse=reverse)  # in place, default dim=0
                T.copy(A_shared, B[0, bx * block])

    return main


def ref_program(a, dim, reverse):
    a = a.double()
    if reverse:
        return a.flip(dim).cumsum(dim).flip(dim)
    return a.cumsum(dim)


def check(device=None, M=45, N=100, block=8, dim=1, reverse=False):
    """Run with tiles that are not powers of two and a grid that overhangs; return the max abs error."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    kernel = cumsum(M, N, block, dim, reverse)
    a = torch.randn(M, N, device=device)
    b = kernel(a)
    ref = ref_program(a, dim, reverse)
    torch.testing.assert_close(b.double(), ref, atol=1e-4, rtol=1e-4)
    return (b.double() - ref).abs().max().item()


def main():
    torch.manual_seed(0)
    for dim in (1, 0):
        for reverse in (False, True):
            err = check(dim=dim, reverse=reverse)
            print(f"dim={dim} reverse={reverse}: ok max_err={err:.3g}")


if __name__ == "__main__":
    main()
