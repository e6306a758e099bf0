# fuzz seed 20281506: copy, dynamic
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def make():
    M = T.dynamic("M")
    N = 20

    @T.prim_func
    def main(A: T.Tensor((M, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, 32), T.ceildiv(M, 16), threads=128) as (bx, by):
            T.use_swizzle(panel_size=2)
            X = T.alloc_fragment((16, 32), "float16")
            Y = T.alloc_shared((16, 32), "float32")
            T.fill(X, 0.75)
            T.copy(A[by * 16 : by * 16 + 16, bx * 32 : bx * 32 + 32], X[0 : 16, 0 : 32])
            for i in range(16):
                for j in T.vectorized(32):
                    Y[i, j] = X[i + 0, j + 0]
            T.copy(Y, C[by * 16, bx * 32])

    return main
