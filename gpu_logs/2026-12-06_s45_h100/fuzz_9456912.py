# fuzz seed 9456912: reduction, dynamic
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def make():
    M = T.dynamic("M")
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, 1), "float32")):
        with T.Kernel(T.ceildiv(M, 8), threads=128) as bid:
            X = T.alloc_fragment((8, 32), "float32")
            R = T.alloc_shared((8, 1), "float32")
            Xf = T.alloc_shared((8, 32), "float32")
            for k in T.serial(T.ceildiv(N, 32)):
                T.copy(A[bid * 8, k * 32], X)
                for i, j in T.Parallel(8, 32):
                    v = T.cast(X[i, j], "float32")
                    Xf[i, j] = v
                T.reduce_max(Xf, R, dim=1, clear=True)
            T.copy(R, C[bid * 8, 0])

    return main
