# fuzz seed 20281192: atomic, eager
import tilelang
import tilelang.language as T


@tilelang.jit
def make(A, Acc):
    M, N = T.const("M, N")
    NT = 32
    A: T.Tensor((M, N), "int32")
    Acc: T.Tensor((16, NT), "int32")
    with T.Kernel(T.ceildiv(N, 16), T.ceildiv(M, 8), threads=128) as (bx, by):
        T.atomic_add(Acc[(by % 2) * 8, bx * 16], 1)
