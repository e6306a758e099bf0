"""Seed 001, pattern 2b: layer norm (no affine) with T.reduce_sum, as written in the seed.

N = 200 is neither a power of two nor a multiple of the 128 threads.

Run: python examples/layer_norm.py
"""
import torch

import tile2triton as tilelang
import tile2triton.language as T


@tilelang.jit(out_idx=[-1])
def layer_norm(M, N, block_size):
    @T.prim_func
    def main(x: T.Tensor[(M, N), T.float32],
             y: T.Tensor[(M, N), T.float32]):

        with T.Kernel(M, threads=block_size) as bx:
            A_local = T.alloc_fragment((N,), "float32")
            A_pow_local = T.alloc_fragment((N,), "float32")
            A_sum = T.alloc_fragment((1,), "float32")
            A_powsum = T.alloc_fragment((1,), "float32")

            # 加载数据
            for tid in T.Parallel(N):
                A_local[tid] = x[bx, tid]
                A_pow_local[tid] = x[bx, tid] * x[bx, tid]

            # ✅ 使用内置归约
            T.reduce_sum(A_local, A_sum, dim=0)
            T.reduce_sum(A_pow_local, A_powsum, dim=0)

            # 计算均值和方差
            for tid in T.Parallel(N):
                mean_val = A_sum[0] / N
                var_val = A_powsum[0] / N - mean_val * mean_val
                y[bx, tid] = (A_local[tid] - mean_val) / T.sqrt(var_val + 1e-5)

    return main


def reference(x):
    x = x.double()
    mean = x.mean(dim=1, keepdim=True)
    var = (x * x).mean(dim=1, keepdim=True) - mean * mean
    return (x - mean) / torch.sqrt(var + 1e-5)


def check(device=None, M=40, N=200, block_size=128):
    """Run with N not a power of two nor a multiple of the threads; return the max abs error."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    kernel = layer_norm(M, N, block_size)
    x = torch.randn(M, N, device=device) * 2.0 + 0.5
    y = kernel(x)
    ref = reference(x)
    torch.testing.assert_close(y.double(), ref, atol=1e-4, rtol=1e-4)
    return (y.double() - ref).abs().max().item()


def main():
    torch.manual_seed(0)
    err = check()
    print("ok", f"max_err={err:.3g}")


if __name__ == "__main__":
    main()
