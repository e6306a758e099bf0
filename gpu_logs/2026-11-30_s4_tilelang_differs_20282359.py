# fuzz seed 20282359: gemm
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def make():
    M = 18
    N = 12
    K = 45

    @T.prim_func
    def main(A: T.Tensor((K, M), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 32), threads=128) as (bx, by):
            As = T.alloc_shared((8, 32), "float16")
            Bs = T.alloc_shared((64, 8), "float16")
            Cf = T.alloc_fragment((32, 64), "float32")
            for ko in T.serial(T.ceildiv(K, 8)):
                T.copy(A[ko * 8, by * 32], As)
                T.copy(B[bx * 64, ko * 8], Bs)
                T.gemm(As, Bs, Cf, transpose_A=True, transpose_B=True, clear_accum=ko == 0)
            for i, j in T.Parallel(32, 64):
                if i > j:
                    Cf[i, j] = -Cf[i, j]
            T.copy(Cf, C[by * 32, bx * 64])

    return main
