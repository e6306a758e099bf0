# fuzz seed 20282518: gemm, dynamic
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def make():
    M = 3
    N = T.dynamic("N")
    K = 72

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 64), threads=128) as (bx, by):
            As = T.alloc_shared((64, 8), "float16")
            Bs = T.alloc_shared((8, 64), "float16")
            Cf = T.alloc_fragment((64, 64), "float32")
            for ko in T.serial(T.ceildiv(K, 8)):
                T.copy(A[by * 64, ko * 8], As)
                T.copy(B[ko * 8, bx * 64], Bs)
                T.gemm(As, Bs, Cf, transpose_A=False, transpose_B=False, clear_accum=ko == 0)
            for i, j in T.Parallel(64, 64):
                Cf[i, j] = Cf[i, j] * 0.5 + 1.0
            T.copy(Cf, C[by * 64, bx * 64])

    return main
