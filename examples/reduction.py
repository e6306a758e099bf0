"""Seed 001, pattern 2: row reduction with T.reduce_sum, as written in the seed.

N = 300 is not a multiple of the 128 threads (real TileLang 0.1.15 refuses that
with a layout-inference error; tile2triton needs no thread layout).

Run: python examples/reduction.py
"""
import torch

import tile2triton as tilelang
import tile2triton.language as T


@tilelang.jit(out_idx=[-1])
def reduction_op(M, N, block_size):
    @T.prim_func
    def main(A: T.Tensor[(M, N), T.float32],
             C: T.Tensor[(M,), T.float32]):

        with T.Kernel(M, threads=block_size) as bx:
            # 分配寄存器片段
            A_local = T.alloc_fragment((N,), "float32")
            C_local = T.alloc_fragment((1,), "float32")

            # 加载数据
            T.copy(A[bx, 0:N], A_local)

            # ✅ 使用内置归约函数
            T.reduce_sum(A_local, C_local, dim=0)

            # 写回结果
            C[bx] = C_local[0]

    return main


def check(device=None, M=50, N=300, block_size=128):
    """Run with N not a multiple of the threads nor a power of two; return the max abs error."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    kernel = reduction_op(M, N, block_size)
    a = torch.randn(M, N, device=device)
    c = kernel(a)
    ref = a.double().sum(dim=1)
    torch.testing.assert_close(c.double(), ref, atol=1e-4, rtol=1e-5)
    return (c.double() - ref).abs().max().item()


def main():
    torch.manual_seed(0)
    err = check()
    print("ok", f"max_err={err:.3g}")


if __name__ == "__main__":
    main()
