# fuzz seed 20281491: copy, scan, thread_view, split_loop, multi_kernel
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def make():
    M = 26
    N = 6

    @T.prim_func
    def main(A: T.Tensor((M, N), "bfloat16"), C: T.Tensor((M, N), "float32"), C2: T.Tensor((M, N), "float32"), C3: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, 16), T.ceildiv(M, 7), threads=128) as (bx, by):
            T.use_swizzle(panel_size=2)
            X = T.alloc_shared((10, 16), "bfloat16")
            Y = T.alloc_fragment((7, 16), "float32")
            T.fill(X, 0.75)
            T.copy(A[by * 7, bx * 16], X[3 : 10, 0 : 16])
            for i in T.unroll(7):
                for j in T.vectorized(16):
                    Y[i, j] = X[i + 3, j + 0]
            T.copy(Y, C[by * 7, bx * 16])
        with T.Kernel(T.ceildiv(M, 5), threads=128) as bx:
            F = T.alloc_fragment((5, 6), "float32")
            T.copy(C[bx * 5, 0], F)
            for i, j in T.Parallel(5, 6):
                F[i, j] = T.sqrt(T.abs(F[i, j]) + 0.25)
            G = T.alloc_fragment((5, 6), "float32")
            T.cumsum(F, G, dim=1)
            T.copy(G, C2[bx * 5, 0])
        with T.Kernel(1, M, threads=32) as (bx, by):
            tx = T.get_thread_binding(0)
            S = T.alloc_shared((32,), "float32")
            acc = T.alloc_local((1,), "float32")
            acc[0] = 0.0
            for k in T.serial(T.ceildiv(N, 32)):
                col = k * 32 + tx
                if col < N:
                    v = T.cast(C2[by, col], "float32")
                    acc[0] = acc[0] + (v - T.exp(T.min(v, 2.0)))
            S[tx] = acc[0]
            T.sync_threads()
            for k2 in T.serial(T.ceildiv(N, 32)):
                col2 = k2 * 32 + tx
                if col2 < N:
                    C3[by, col2] = S[tx ^ 16] + T.cast(k2, "float32")

    return main
