# fuzz seed 9450384: gemm, eager
import tilelang
import tilelang.language as T


@tilelang.jit
def make(A, B):
    M, N, K = T.const("M, N, K")
    A: T.Tensor((K, M), "float16")
    B: T.Tensor((K, N), "float16")
    C = T.empty((M, N), "float32")
    with T.Kernel(T.ceildiv(N, 24), T.ceildiv(M, 64), threads=128) as (bx, by):
        As = T.alloc_shared((16, 64), "float16")
        Bs = T.alloc_shared((16, 24), "float16")
        Cf = T.alloc_fragment((64, 24), "float32")
        T.clear(Cf)
        for ko in T.serial(T.ceildiv(K, 16)):
            T.copy(A[ko * 16, by * 64], As)
            T.copy(B[ko * 16, bx * 24], Bs)
            T.gemm(As, Bs, Cf, transpose_A=True, transpose_B=False)
        for i, j in T.Parallel(64, 24):
            if i > j:
                Cf[i, j] = -Cf[i, j]
        T.copy(Cf, C[by * 64, bx * 24])
    return C

