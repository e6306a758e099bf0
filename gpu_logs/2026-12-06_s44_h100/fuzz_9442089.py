# fuzz seed 9442089: gemm
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def make():
    M = 44
    N = 66
    K = 4

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 64), threads=128) as (bx, by):
            As = T.alloc_shared((64, 48), "float16")
            Bs = T.alloc_shared((48, 64), "float16")
            Cf = T.alloc_fragment((64, 64), "float32")
            T.fill(Cf, 0.5)
            for ko in range(T.ceildiv(K, 48)):
                T.copy(A[by * 64, ko * 48], As)
                T.copy(B[ko * 48, bx * 64], Bs)
                T.gemm(As, Bs, Cf, transpose_A=False, transpose_B=False)
            for i, j in T.Parallel(64, 64):
                if i > j:
                    Cf[i, j] = -Cf[i, j]
            T.copy(Cf, C[by * 64, bx * 64])

    return main
