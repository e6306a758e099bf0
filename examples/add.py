import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def add(M, N, block_M=32, block_N=32, dtype="float16"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                C[by * block_M + i, bx * block_N + j] = A[by * block_M + i, bx * block_N + j] + B[by * block_M + i, bx * block_N + j]

    return main


if __name__ == "__main__":
    # written for a CUDA machine, as TileLang scripts are: tile2triton run --device cpu runs it on a CPU
    import torch

    a = torch.randn(1000, 1000, dtype=torch.float16, device="cuda")
    b = torch.randn(1000, 1000, dtype=torch.float16, device="cuda")
    c = add(1000, 1000)(a, b)
    torch.cuda.synchronize()
    torch.testing.assert_close(c, a + b)
    print("ok", tuple(c.shape), c.device.type)
