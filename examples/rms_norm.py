"""RMSNorm over the last dim, a block of rows per program (TileLang's examples/norm/rms_norm.py),
with a weight vector, fp16 in/out and fp32 statistics.

Run: python examples/rms_norm.py
"""

import torch

import tile2triton as tilelang
import tile2triton.language as T


@tilelang.jit(out_idx=[-1])
def rms_norm(M, N, blk_m, eps=1e-6, dtype="float16", accum_dtype="float"):
    @T.prim_func
    def main(
        A: T.Tensor[(M, N), dtype],
        W: T.Tensor[(N,), dtype],
        B: T.Tensor[(M, N), dtype],
    ):
        with T.Kernel(T.ceildiv(M, blk_m), threads=128) as bx:
            A_shared = T.alloc_shared((blk_m, N), dtype)
            W_local = T.alloc_fragment((N,), accum_dtype)
            A_pow_local = T.alloc_fragment((blk_m, N), accum_dtype)
            A_local = T.alloc_fragment((blk_m, N), accum_dtype)
            A_powsum = T.alloc_fragment((blk_m,), accum_dtype)

            T.copy(A[bx * blk_m : (bx + 1) * blk_m, :], A_shared)
            T.copy(W, W_local)
            T.copy(A_shared, A_local)
            for i, j in T.Parallel(blk_m, N):
                A_pow_local[i, j] = A_local[i, j] * A_local[i, j]
            T.reduce_sum(A_pow_local, A_powsum, dim=1)
            for i in T.Parallel(blk_m):
                A_powsum[i] = T.rsqrt(A_powsum[i] / N + eps)
            for i, j in T.Parallel(blk_m, N):
                A_local[i, j] *= A_powsum[i] * W_local[j]
            T.copy(A_local, B[bx * blk_m : (bx + 1) * blk_m, :])

    return main


def ref_program(x, w, eps=1e-6):
    x = x.double()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w.double()


def check(device=None, M=70, N=200, blk_m=4):
    """Run with M not a multiple of blk_m and N not a power of two; return the max abs error."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    kernel = rms_norm(M, N, blk_m)
    x = (torch.randn(M, N, device=device) * 2.0 + 0.3).half()
    w = (torch.rand(N, device=device) + 0.5).half()
    y = kernel(x, w)
    ref = ref_program(x, w)
    torch.testing.assert_close(y.double(), ref, atol=1e-2, rtol=1e-2)
    return (y.double() - ref).abs().max().item()


def main():
    torch.manual_seed(0)
    err = check()
    print("ok", f"max_err={err:.3g}")


if __name__ == "__main__":
    main()
