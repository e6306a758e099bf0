"""Row softmax in the T.exp2 form, online over column tiles (TileLang's examples/online_softmax).

Pass 1 keeps a running max and a running sum of exp2((x - max) * log2(e)) across column tiles
(rescaling the sum when the max grows); pass 2 writes exp2(x * log2(e) - max * log2(e)) / sum.
Columns past N are filled with -inf so they contribute 0.

Run: python examples/softmax.py
"""

import torch

import tile2triton as tilelang
import tile2triton.language as T


@tilelang.jit(out_idx=[-1])
def softmax(M, N, block_M, block_N, dtype="float16", accum_dtype="float"):
    scale = 1.44269504  # log2(e)

    @T.prim_func
    def main(
        X: T.Tensor[(M, N), dtype],
        Y: T.Tensor[(M, N), dtype],
    ):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            x = T.alloc_fragment((block_M, block_N), accum_dtype)
            y = T.alloc_fragment((block_M, block_N), dtype)
            lse = T.alloc_fragment((block_M, block_N), accum_dtype)
            max_x = T.alloc_fragment((block_M,), accum_dtype)
            max_prev = T.alloc_fragment((block_M,), accum_dtype)
            sum_exp = T.alloc_fragment((block_M,), accum_dtype)
            tile_sum = T.alloc_fragment((block_M,), accum_dtype)

            T.fill(max_x, -T.infinity(accum_dtype))
            T.fill(sum_exp, 0)
            for k in T.serial(T.ceildiv(N, block_N)):
                T.copy(X[bx * block_M, k * block_N], x)
                for i, j in T.Parallel(block_M, block_N):
                    x[i, j] = T.if_then_else(k * block_N + j < N, x[i, j], -T.infinity(accum_dtype))
                T.copy(max_x, max_prev)
                T.reduce_max(x, max_x, dim=1, clear=False)
                for i, j in T.Parallel(block_M, block_N):
                    lse[i, j] = T.exp2(x[i, j] * scale - max_x[i] * scale)
                T.reduce_sum(lse, tile_sum, dim=1)
                for i in T.Parallel(block_M):
                    sum_exp[i] = sum_exp[i] * T.exp2(max_prev[i] * scale - max_x[i] * scale) + tile_sum[i]

            for k in T.serial(T.ceildiv(N, block_N)):
                T.copy(X[bx * block_M, k * block_N], x)
                for i, j in T.Parallel(block_M, block_N):
                    y[i, j] = T.exp2(x[i, j] * scale - max_x[i] * scale) / sum_exp[i]
                T.copy(y, Y[bx * block_M, k * block_N])

    return main


def check(device=None, M=50, N=300, block_M=8, block_N=64):
    """Run at sizes that are not multiples of the tiles; return the max abs error."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    kernel = softmax(M, N, block_M, block_N)
    x = (torch.randn(M, N, device=device) * 3).half()
    y = kernel(x)
    ref = torch.softmax(x.double(), dim=-1)
    torch.testing.assert_close(y.double(), ref, atol=1e-3, rtol=1e-2)
    return (y.double() - ref).abs().max().item()


def main():
    torch.manual_seed(0)
    err = check()
    print("ok", f"max_err={err:.3g}")


if __name__ == "__main__":
    main()
