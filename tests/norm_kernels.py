"""TileLang's rms_norm_splitk (examples/norm), shared by the launch-choice tests (test_tuning.py) and the
unit-axis reshape tests (test_unit_reshapes.py)."""

import tile2triton.language as T


def rms_norm_splitk(rows, cols, blk_k, threads=128, reduce_in_loop=False):
    """A pass over each row summing its squares in (1, blk_k) tiles, then a second pass over it (the last
    tiles first) scaling and storing it; ``reduce_in_loop``: the first pass reduces its tile every step."""

    @T.prim_func
    def main(A: T.Tensor((rows, cols), "float32"), B: T.Tensor((rows, cols), "float32")):
        with T.Kernel(rows, threads=threads) as bx:
            A_shared = T.alloc_shared((1, blk_k), "float32")
            A_local = T.alloc_fragment((1, blk_k), "float32")
            A_powsum = T.alloc_fragment((1,), "float32")
            steps = T.ceildiv(cols, blk_k)
            T.clear(A_local)
            if reduce_in_loop:
                T.clear(A_powsum)
            for k in T.Serial(steps):
                T.copy(A[bx, k * blk_k], A_shared)
                for i, j in T.Parallel(1, blk_k):
                    if reduce_in_loop:
                        A_local[i, j] = A_shared[i, j] * A_shared[i, j]
                    else:
                        A_local[i, j] += A_shared[i, j] * A_shared[i, j]
                if reduce_in_loop:
                    T.reduce_sum(A_local, A_powsum, dim=1, clear=False)
            if not reduce_in_loop:
                T.reduce_sum(A_local, A_powsum, dim=1)
            for i in T.Parallel(1):
                A_powsum[i] = T.rsqrt(A_powsum[i] / cols + 1e-12)
            for k in T.Serial(steps):
                T.copy(A[bx, (steps - 1 - k) * blk_k], A_shared)
                for i, j in T.Parallel(1, blk_k):
                    A_shared[i, j] *= A_powsum[i]
                T.copy(A_shared, B[bx, (steps - 1 - k) * blk_k])

    return main
