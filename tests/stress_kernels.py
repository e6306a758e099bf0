"""Kernels the stress tests (tests/test_stress_*.py) compile from many processes and threads."""

import tile2triton as tilelang
import tile2triton.language as T


@tilelang.jit(out_idx=[-1])
def scale_add(N, block=128):
    """C = 2 A + B over a dynamic length (one kernel serves every N)."""
    n = T.dynamic("n")

    @T.prim_func
    def main(A: T.Tensor[(n,), T.float32], B: T.Tensor[(n,), T.float32], C: T.Tensor[(n,), T.float32]):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = 2.0 * A[bx * block + i] + B[bx * block + i]

    return main


@tilelang.jit(out_idx=[-1])
def row_sum(M, N, block_m=16):
    """Static shapes: a new kernel per (M, N)."""

    @T.prim_func
    def main(X: T.Tensor[(M, N), T.float32], Y: T.Tensor[(M,), T.float32]):
        with T.Kernel(T.ceildiv(M, block_m), threads=64) as bx:
            tile = T.alloc_fragment((block_m, N), "float32")
            total = T.alloc_fragment((block_m,), "float32")
            T.copy(X[bx * block_m, 0], tile)
            T.reduce_sum(tile, total, dim=1)
            T.copy(total, Y[bx * block_m])

    return main


@tilelang.jit(out_idx=[-1])
def matmul(M, N, K, block=32):
    @T.prim_func
    def main(A: T.Tensor[(M, K), T.float32], B: T.Tensor[(K, N), T.float32], C: T.Tensor[(M, N), T.float32]):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=128) as (bx, by):
            a = T.alloc_shared((block, block), "float32")
            b = T.alloc_shared((block, block), "float32")
            c = T.alloc_fragment((block, block), "float32")
            T.clear(c)
            for k in T.Pipelined(T.ceildiv(K, block), num_stages=2):
                T.copy(A[by * block, k * block], a)
                T.copy(B[k * block, bx * block], b)
                T.gemm(a, b, c)
            T.copy(c, C[by * block, bx * block])

    return main
