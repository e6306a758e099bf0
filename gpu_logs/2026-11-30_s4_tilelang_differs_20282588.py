# fuzz seed 20282588: serial_loop, elementwise, copy, multi_kernel
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def make():
    M = 8
    N = 16

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M,), "float32"), A2: T.Tensor((M, N), "float16"), B: T.Tensor((M, N), "float16"), C2: T.Tensor((M, N), "float32"), A3: T.Tensor((M, N), "bfloat16"), C3: T.Tensor((M, N), "bfloat16")):
        with T.Kernel(T.ceildiv(M, 12), threads=128) as bx:
            R = T.alloc_fragment((12,), "float32")
            T.fill(R, 0.0)
            for k in range(N):
                for i in T.Parallel(12):
                    if bx * 12 + i < M:
                        v = A[bx * 12 + i, k]
                        R[i] += T.sigmoid(3.0)
            T.copy(R, C[bx * 12])
        with T.Kernel(T.ceildiv(N, 32), T.ceildiv(M, 4), threads=128) as (bx, by):
            As = T.alloc_shared((4, 32), "float16")
            T.copy(A2[by * 4, bx * 32], As)
            for i, j in T.Parallel(4, 32):
                y = by * 4 + i
                x = bx * 32 + j
                if y < M and x < N:
                    a = As[i, j]
                    b = B[y, x]
                    if j % 2 == 0:
                        C2[y, x] = T.cast((T.pow(T.abs(T.sin(b)) + 0.5, 0.5) + T.cast(y - x, "float16") * 0.125), "float32")
                    else:
                        C2[y, x] = T.cast(T.min(T.min(a, a), T.sqrt(T.abs(b) + 0.25)), "float32")
        with T.Kernel(T.ceildiv(N, 12), T.ceildiv(M, 7), threads=128) as (bx, by):
            X = T.alloc_shared((7, 12), "bfloat16")
            Y = T.alloc_fragment((7, 12), "bfloat16")
            T.fill(X, 0.75)
            T.copy(A3[by * 7 : by * 7 + 7, bx * 12 : bx * 12 + 12], X[0 : 7, 0 : 12])
            for i in T.unroll(7):
                for j in T.vectorized(12):
                    Y[i, j] = X[i + 0, j + 0]
            T.copy(Y, C3[by * 7, bx * 12])

    return main
