# fuzz seed 20282984: gemm
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def make():
    M = 26
    N = 22
    K = 34

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 32), threads=128) as (bx, by):
            As = T.alloc_fragment((32, 8), "float16")
            Bs = T.alloc_shared((64, 8), "float16")
            Cf = T.alloc_fragment((32, 64), "float32")
            T.fill(Cf, 0.5)
            for ko in range(T.ceildiv(K, 8)):
                T.copy(A[by * 32, ko * 8], As)
                T.copy(B[bx * 64, ko * 8], Bs)
                for i, j in T.Parallel(32, 8):
                    if (i + j) % 3 == 0:
                        As[i, j] = -As[i, j]
                T.gemm(As, Bs, Cf, transpose_A=False, transpose_B=True)
            for i, j in T.Parallel(32, 64):
                Cf[i, j] = T.max(Cf[i, j], 0.0)
            T.copy(Cf, C[by * 32, bx * 64])

    return main
