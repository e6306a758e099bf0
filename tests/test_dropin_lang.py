"""TileLang code as people write it (issue 12, language patterns and lowering bugs).

Each test is a small kernel in the style of a TileLang example or test file, checked against a
torch reference computed in float64, with random inputs and NaN-filled outputs.
"""

import pytest
import torch
from t2t_util import assert_close, gemm_tol, poison

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import TileLangCompileError

pytestmark = pytest.mark.poison_empty


# ------------------------------------------------------------------ a factory whose prim_func a helper builds
def _build_scale(M, N, block, factor):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block)) as bx:
            for i, j in T.Parallel(block, N):
                B[bx * block + i, j] = A[bx * block + i, j] * factor

    return main


@tilelang.jit(out_idx=[-1])
def scale_by_helper(M, N, block=16, factor=1.5):
    return _build_scale(M, N, block, factor)


@tilelang.jit
def scale_by_helper_no_out_idx(M, N, block=16, factor=1.5):
    kernel = _build_scale(M, N, block, factor)
    return kernel


def test_lazy_factory_returning_a_helpers_prim_func(dev):
    a = torch.randn(37, 21, device=dev)
    b = scale_by_helper(37, 21, factor=-2.5)(a)
    assert_close(b, a.double() * -2.5, 1e-6, 1e-6)
    out = poison((37, 21), device=dev)
    scale_by_helper_no_out_idx(37, 21, block=8)(a, out)
    assert_close(out, a.double() * 1.5, 1e-6, 1e-6)


# ------------------------------------------------------------------ plain Python helpers with kernel values
def _axpy(x, y, alpha=1.0):
    return x * alpha + y


def _store_rows(dst, src, row0, *, rows, cols, **opts):
    # a plain function (no @T.macro) that opens a T.Parallel: TileLang runs it while building
    for i, j in T.Parallel(rows, cols):
        dst[row0 + i, j] = _axpy(src[i, j], opts["shift"], alpha=opts["alpha"])


@tilelang.jit(out_idx=[-1])
def helper_calls(M, N, block=16):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block)) as bx:
            tile = T.alloc_fragment((block, N), "float32")
            for i, j in T.Parallel(block, N):
                tile[i, j] = _axpy(A[bx * block + i, j], 1.0, alpha=3.0)
            opts = {"alpha": 0.5, "shift": -2.0}
            _store_rows(B, tile, bx * block, rows=block, cols=N, **opts)

    return main


def test_plain_python_helpers_inline(dev):
    a = torch.randn(45, 19, device=dev)
    b = helper_calls(45, 19)(a)
    assert_close(b, (a.double() * 3.0 + 1.0) * 0.5 - 2.0, 1e-5, 1e-5)


# ------------------------------------------------------------------ comprehensions over compile-time values
@tilelang.jit(out_idx=[-1])
def comprehension_sum(M, N, parts=3, block=16):
    @T.prim_func
    def main(A: T.Tensor((parts, M, N), "float32"), B: T.Tensor((M, N), "float32")):
        grid = [T.ceildiv(d, block) for d in (M,)]
        with T.Kernel(*grid) as bx:
            weights = [float(p + 1) for p in range(parts)]
            for i, j in T.Parallel(block, N):
                B[bx * block + i, j] = sum(A[p, bx * block + i, j] * w for p, w in enumerate(weights))

    return main


def test_comprehensions_and_generators(dev):
    a = torch.randn(3, 29, 13, device=dev)
    b = comprehension_sum(29, 13)(a)
    ref = sum(a[p].double() * (p + 1) for p in range(3))
    assert_close(b, ref, 1e-5, 1e-5)


@tilelang.jit
def eager_comprehension(A, block: int = 16):
    M, N = T.const("M, N")
    A: T.Tensor((M, N), T.float32)
    B = T.empty((M, N), T.float32)
    with T.Kernel(*[T.ceildiv(d, block) for d in (M,)]) as bx:
        coefs = {k: k * 0.25 for k in range(1, 3)}
        for i, j in T.Parallel(block, N):
            B[bx * block + i, j] = max(A[bx * block + i, j] * c for c in coefs.values())
    return B


def test_comprehensions_in_eager_body(dev):
    a = torch.randn(33, 17, device=dev)
    b = eager_comprehension(a)
    ref = torch.maximum(a.double() * 0.25, a.double() * 0.5)
    assert_close(b, ref, 1e-6, 1e-6)


# ------------------------------------------------------------------ module globals are read at compile time
SCALE_AT_COMPILE = 1.0


@tilelang.jit
def scale_by_global(A, block: int = 16):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    B = T.empty((N,), T.float32)
    with T.Kernel(T.ceildiv(N, block)) as bx:
        for i in T.Parallel(block):
            B[bx * block + i] = A[bx * block + i] * SCALE_AT_COMPILE
    return B


@T.prim_func
def scale_by_global_prim(A: T.Tensor((41,), "float32"), B: T.Tensor((41,), "float32")):
    with T.Kernel(3) as bx:
        for i in T.Parallel(16):
            B[bx * 16 + i] = A[bx * 16 + i] * SCALE_AT_COMPILE


def test_module_globals_read_at_compile_time(dev):
    global SCALE_AT_COMPILE
    SCALE_AT_COMPILE = -3.5  # set after the decorators ran
    a = torch.randn(41, device=dev)
    assert_close(scale_by_global(a), a.double() * -3.5, 1e-6, 1e-6)
    kernel = tilelang.compile(scale_by_global_prim, out_idx=[-1])
    assert_close(kernel(a), a.double() * -3.5, 1e-6, 1e-6)


# ------------------------------------------------------------------ T.Kernel(threads=...) without grid dims
@tilelang.jit(out_idx=[-1])
def threads_only(N):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(threads=64):  # one block; TileLang binds no block index
            for i in T.Parallel(N):
                B[i] = A[i] * 2.0

    return main


def test_kernel_with_threads_only(dev):
    a = torch.randn(50, device=dev)
    assert_close(threads_only(50)(a), a.double() * 2.0, 1e-6, 1e-6)


# ------------------------------------------------------------------ a primitive called through a variable
@tilelang.jit(out_idx=[-1])
def cumsum_through_variable(N, reverse=False):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=64):
            S = T.alloc_shared((N,), "float32")
            T.copy(A, S)
            op = T.cumsum
            op(S, dim=0, reverse=reverse)
            T.copy(S, B)

    return main


@pytest.mark.parametrize("reverse", [False, True])
def test_primitive_called_through_variable(dev, reverse):
    a = torch.randn(50, device=dev)
    ref = a.double().flip(0).cumsum(0).flip(0) if reverse else a.double().cumsum(0)
    assert_close(cumsum_through_variable(50, reverse)(a), ref, 1e-5, 1e-5)


# ------------------------------------------------------------------ 2-D thread block, atomics into shared[tn]
@tilelang.jit
def splitk_gemv(A, B, BLOCK_N: int, reduce_threads: int, TILE_K: int):
    N, K = T.const("N, K")
    A: T.Tensor((K,), T.float32)
    B: T.Tensor((N, K), T.float32)
    C = T.empty((N,), T.float32)
    BLOCK_K = reduce_threads * TILE_K
    with T.Kernel(T.ceildiv(N, BLOCK_N), threads=(BLOCK_N, reduce_threads)) as bn:
        tn = T.get_thread_binding(0)
        tk = T.get_thread_binding(1)
        A_local = T.alloc_local((TILE_K,), T.float32)
        B_local = T.alloc_local((TILE_K,), T.float32)
        C_shared = T.alloc_shared((BLOCK_N,), T.float32)
        C_accum = T.alloc_local((1,), T.float32)
        if tk == 0:
            C_shared[tn] = 0
        T.clear(C_accum)
        for bk in T.serial(T.ceildiv(K, BLOCK_K)):
            for k in T.serial(TILE_K):
                A_local[k] = A[bk * BLOCK_K + tk * TILE_K + k]
                B_local[k] = B[bn * BLOCK_N + tn, bk * BLOCK_K + tk * TILE_K + k]
            for k in T.serial(TILE_K):
                C_accum[0] += A_local[k] * B_local[k]
        T.atomic_add(C_shared[tn], C_accum[0])
        C[bn * BLOCK_N + tn] = C_shared[tn]
    return C


@pytest.mark.parametrize("tile_k", [1, 3])
def test_2d_thread_block_atomic_into_shared(dev, tile_k):
    # K a multiple of the block's K (TileLang's example reads past K otherwise)
    a = torch.randn(4 * 3 * tile_k * 5, device=dev)
    b = torch.randn(37, a.numel(), device=dev)
    c = splitk_gemv(a, b, 8, 4, tile_k)
    assert_close(c, b.double() @ a.double(), 1e-4, 1e-4)


# ------------------------------------------------------------------ T.Parallel(1, D) accumulation
@tilelang.jit(out_idx=[-1])
def column_sums(N, D, blk_m=4):
    @T.prim_func
    def main(X: T.Tensor((N, D), "float32"), Y: T.Tensor((N, D), "float32"), S: T.Tensor((D,), "float32")):
        with T.Kernel(1, threads=128):
            X_smem = T.alloc_shared((1, D), "float32")
            acc = T.alloc_fragment((D,), "float32")
            T.clear(acc)
            for k in T.serial(N):
                T.copy(X[k, 0], X_smem)
                for i, j in T.Parallel(1, D):
                    acc[j] += X_smem[i, j] * Y[k, j]
            for j in T.Parallel(D):
                S[j] = acc[j]

    return main


def test_parallel_one_by_d_accumulation(dev):
    x = torch.randn(13, 200, device=dev)
    y = torch.randn(13, 200, device=dev)
    kernel = column_sums(13, 200)
    assert_close(kernel(x, y), (x.double() * y.double()).sum(0), 1e-4, 1e-4)
    # acc[j] is written at its own lane: a plain tile update, not a one-hot scatter over D * D
    # elements (Triton refuses those tiles for TileLang's layernorm D = 8192)
    assert "acc_hit" not in kernel.get_kernel_source()


# ------------------------------------------------------------------ a per-thread loop over shared memory
@tilelang.jit
def guarded_thread_gemv(A, B, BLOCK_N: int, BLOCK_K: int, threads: int):
    N, K = T.const("N, K")
    A: T.Tensor((K,), T.float32)
    B: T.Tensor((N, K), T.float32)
    C = T.empty((N,), T.float32)
    with T.Kernel(T.ceildiv(N, BLOCK_N), threads=threads) as bn:
        tn = T.get_thread_binding(0)
        A_shared = T.alloc_shared((BLOCK_K,), T.float32)
        B_shared = T.alloc_shared((BLOCK_N, BLOCK_K), T.float32)
        C_reg = T.alloc_local((1,), T.float32)
        T.clear(C_reg)
        for bk in T.serial(T.ceildiv(K, BLOCK_K)):
            if tn < BLOCK_N:  # more threads than rows: the others idle
                for tk in T.serial(BLOCK_K):
                    A_shared[tk] = A[bk * BLOCK_K + tk]
                    B_shared[tn, tk] = B[bn * BLOCK_N + tn, bk * BLOCK_K + tk]
                for tk in T.serial(BLOCK_K):
                    C_reg[0] += A_shared[tk] * B_shared[tn, tk]
        if tn < BLOCK_N:
            C[bn * BLOCK_N + tn] = C_reg[0]
    return C


def test_thread_loop_over_shared_with_idle_threads(dev):
    a = torch.randn(48, device=dev)
    b = torch.randn(43, 48, device=dev)
    assert_close(guarded_thread_gemv(a, b, 6, 16, 16), b.double() @ a.double(), 1e-4, 1e-4)


@tilelang.jit(out_idx=[-1])
def comprehension_over_kernel_value(N):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1) as bx:
            parts = [A[k] for k in range(bx)]  # bx is a kernel value: not a compile-time range
            B[0] = parts[0]

    return main


def test_comprehension_over_kernel_value_is_a_clear_error():
    with pytest.raises(TileLangCompileError) as info:
        comprehension_over_kernel_value(10)
    assert "test_dropin_lang.py" in str(info.value) and "parts = [A[k]" in str(info.value)


# ------------------------------------------------------------------ reducers
@tilelang.jit
def gemv_reducer(a, x, block_M: int = 16, block_N: int = 32):
    M, N = T.const("M, N")
    a: T.Tensor((M, N), T.float32)
    x: T.Tensor((N,), T.float32)
    o = T.empty((M,), T.float32)
    with T.Kernel(T.ceildiv(M, block_M), threads=128) as bm:
        o_reducer = T.alloc_reducer(block_M, T.float32, replication="all")
        T.clear(o_reducer)
        for bn in T.Pipelined(T.ceildiv(N, block_N), num_stages=2):
            a_frag = T.alloc_fragment((block_M, block_N), T.float32)
            T.copy(a[bm * block_M, bn * block_N], a_frag)
            x_frag = T.alloc_fragment(block_N, T.float32)
            T.copy(x[bn * block_N], x_frag)
            for i, j in T.Parallel(block_M, block_N):
                o_reducer[i] += a_frag[i, j] * x_frag[j]
        T.finalize_reducer(o_reducer)
        T.copy(o_reducer, o[bm * block_M])
    return o


def test_reducer_legacy_form(dev):
    a = torch.randn(37, 75, device=dev)
    x = torch.randn(75, device=dev)
    assert_close(gemv_reducer(a, x), a.double() @ x.double(), 1e-4, 1e-4)


@tilelang.jit(out_idx=[-1])
def row_reducer(M, N, op, v2, block_M=16, block_N=32):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bm:
            A_frag = T.alloc_fragment((block_M, block_N), "float32")
            res = T.alloc_fragment((block_M,), "float32")
            acc = T.alloc_reducer((block_M,), "float32", op=op)
            if v2:
                T.reducer_init(acc)
            else:
                T.fill(acc, 0.0 if op == "sum" else (-1e30 if op == "max" else 1e30))
            for bn in T.serial(T.ceildiv(N, block_N)):
                T.copy(A[bm * block_M, bn * block_N], A_frag)
                for i, j in T.Parallel(block_M, block_N):
                    if bn * block_N + j < N:  # the tail of the last tile does not contribute
                        if v2:
                            T.reducer_update(acc[i], A_frag[i, j])
                        elif op == "sum":
                            acc[i] = acc[i] + A_frag[i, j]
                        elif op == "max":
                            acc[i] = T.max(acc[i], A_frag[i, j])
                        else:
                            acc[i] = T.min(A_frag[i, j], acc[i])
            if v2:
                T.finalize_reducer(acc, res)
            else:
                T.finalize_reducer(acc)
                T.copy(acc, res)
            T.copy(res, B[bm * block_M])

    return main


@pytest.mark.parametrize("v2", [False, True], ids=["v1", "v2"])
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_reducer_ops(dev, op, v2):
    a = torch.randn(45, 70, device=dev)
    ref = {"sum": a.double().sum(1), "max": a.double().amax(1), "min": a.double().amin(1)}[op]
    assert_close(row_reducer(45, 70, op, v2)(a), ref, 1e-4, 1e-4)


# ------------------------------------------------------------------ tile ops on sub-regions of shared/fragment buffers
@tilelang.jit(out_idx=[-1])
def gemm_on_k_halves(M, N, K, bm=16, bn=16, bk=16):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm)) as (bx, by):
            A_s = T.alloc_shared((bm, 2 * bk), "float32")
            B_s = T.alloc_shared((2 * bk, bn), "float32")
            C_l = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_l)
            for ko in T.serial(T.ceildiv(K, 2 * bk)):
                T.copy(A[by * bm, ko * 2 * bk], A_s)
                T.copy(B[ko * 2 * bk, bx * bn], B_s)
                T.gemm(A_s[:, 0:bk], B_s[0:bk, :], C_l)
                T.gemm(A_s[:, bk:], B_s[bk : 2 * bk, 0:bn], C_l)
            T.copy(C_l, C[by * bm, bx * bn])

    return main


@tilelang.jit(out_idx=[-1])
def gemm_on_batch_slices(Bt, M, N, K, bm=16, bn=16, bk=16, stages=2):
    @T.prim_func
    def main(A: T.Tensor((Bt, M, K), "float32"), B: T.Tensor((Bt, K, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm)) as (bx, by):
            A_s = T.alloc_shared((stages, bm, bk), "float32")
            B_s = T.alloc_shared((stages, bk, bn), "float32")
            C_l = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_l)
            for ko in T.serial(T.ceildiv(K, bk)):
                for b in T.serial(Bt):
                    T.copy(A[b, by * bm, ko * bk], A_s[(ko + b) % stages, :, :])
                    T.copy(B[b, ko * bk, bx * bn], B_s[(ko + b) % stages, :, :])
                    T.gemm(A_s[(ko + b) % stages, :, :], B_s[(ko + b) % stages, :, :], C_l)
            T.copy(C_l, C[by * bm, bx * bn])

    return main


def test_gemm_on_sub_regions(dev):
    a = torch.randn(37, 70, device=dev)
    b = torch.randn(70, 29, device=dev)
    assert_close(gemm_on_k_halves(37, 29, 70)(a, b), a.double() @ b.double(), *gemm_tol(torch.float32, dev))
    a3 = torch.randn(3, 37, 41, device=dev)
    b3 = torch.randn(3, 41, 29, device=dev)
    ref = (a3.double() @ b3.double()).sum(0)
    assert_close(gemm_on_batch_slices(3, 37, 29, 41)(a3, b3), ref, *gemm_tol(torch.float32, dev))


@tilelang.jit(out_idx=[-1])
def reduce_and_scan_parts(M, N, h):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N + 2), "float32")):
        with T.Kernel(1):
            A_f = T.alloc_fragment((M, N), "float32")
            parts = T.alloc_fragment((M, 2), "float32")
            T.copy(A, A_f)
            T.fill(parts, 1.0)
            T.reduce_sum(A_f[:, 0:h], parts[:, 0], dim=1)
            T.reduce_max(A_f[:, h:N], parts[:, 1], dim=1, clear=False)
            T.cumsum(A_f[:, h:N], dim=1)
            T.copy(A_f, C[0:M, 0:N])
            T.copy(parts, C[0:M, N : N + 2])

    return main


def test_reduce_and_cumsum_on_sub_regions(dev):
    a = torch.randn(20, 30, device=dev)
    c = reduce_and_scan_parts(20, 30, 11)(a)
    x = a.double()
    ref = torch.cat(
        [
            x[:, :11],
            x[:, 11:].cumsum(1),
            x[:, :11].sum(1, keepdim=True),
            x[:, 11:].amax(1, keepdim=True).clamp(min=1.0),
        ],
        1,
    )
    assert_close(c, ref, 1e-5, 1e-5)


# ------------------------------------------------------------------ atomics
@tilelang.jit
def atomic_return_prev(M, N, block_M=8, block_N=16):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32"), old: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), threads=32) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                idx_i = bx * block_M + i
                idx_j = by * block_N + j
                if idx_i < M and idx_j < N:
                    old[idx_i, idx_j] = T.atomic_add(B[idx_i, idx_j], A[idx_i, idx_j], return_prev=True)

    return main


def test_atomic_return_prev(dev):
    a = torch.randn(19, 37, device=dev)
    b0 = torch.randn(19, 37, device=dev)
    b = b0.clone()
    old = poison((19, 37), device=dev)
    atomic_return_prev(19, 37)(a, b, old)
    assert_close(b, a.double() + b0.double(), 1e-6, 1e-6)
    assert_close(old, b0, 0, 0)


@tilelang.jit
def compact_positive(N, block=64):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), Out: T.Tensor((N,), "float32"), count: T.Tensor((1,), "int32")):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N and A[bx * block + i] > 0:
                    # every iteration takes its own slot: a counter shared by all of them
                    slot = T.atomic_add(count[0], 1, return_prev=True)
                    Out[slot] = A[bx * block + i]

    return main


def test_atomic_counter_gives_each_iteration_its_own_slot(dev):
    a = torch.randn(150, device=dev)
    out = poison((150,), device=dev)
    count = torch.zeros(1, dtype=torch.int32, device=dev)
    compact_positive(150)(a, out, count)
    n = int((a > 0).sum())
    assert int(count[0]) == n
    assert_close(out[:n].sort().values, a[a > 0].sort().values, 0, 0)
    assert torch.isnan(out[n:]).all()


@tilelang.jit
def atomic_vector_adds(M, N, block_M=4, block_N=8):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), threads=32) as (bx, by):
            for i, j in T.Parallel(block_M, block_N // 2):
                T.atomic_addx2(B[bx * block_M + i, by * block_N + j * 2], A[bx * block_M + i, by * block_N + j * 2])
            for i, j in T.Parallel(block_M, block_N // 4):
                T.atomic_addx4(
                    C[bx * block_M + i, by * block_N + j * 4 : by * block_N + j * 4 + 4],
                    A[bx * block_M + i, by * block_N + j * 4],
                )

    return main


def test_atomic_addx2_addx4(dev):
    a = torch.randn(13, 40, device=dev)
    b0, c0 = torch.randn(13, 40, device=dev), torch.randn(13, 40, device=dev)
    b, c = b0.clone(), c0.clone()
    atomic_vector_adds(13, 40)(a, b, c)
    assert_close(b, b0.double() + a.double(), 1e-6, 1e-6)
    assert_close(c, c0.double() + a.double(), 1e-6, 1e-6)


@tilelang.jit
def atomic_bits_and_flags(N, block=32):
    @T.prim_func
    def main(
        A: T.Tensor((N,), "int32"),
        Bits: T.Tensor((5,), "int32"),
        Flag: T.Tensor((N,), "float32"),
        Seen: T.Tensor((N,), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                k = bx * block + i
                if k < N:
                    T.atomic_or(Bits[A[k] % 5], 1 << (A[k] % 7))
                    T.atomic_store(Flag[k], T.Cast("float32", A[k]) * 0.5)
                    Seen[k] = T.atomic_load(Flag[k]) + 1.0

    return main


def test_atomic_or_load_store(dev):
    a = torch.randint(0, 1000, (77,), dtype=torch.int32, device=dev)
    bits = torch.zeros(5, dtype=torch.int32, device=dev)
    flag, seen = poison((77,), device=dev), poison((77,), device=dev)
    atomic_bits_and_flags(77)(a, bits, flag, seen)
    ref = [0] * 5
    for v in a.tolist():
        ref[v % 5] |= 1 << (v % 7)
    assert bits.tolist() == ref
    assert_close(flag, a.double() * 0.5, 0, 0)
    assert_close(seen, a.double() * 0.5 + 1.0, 0, 0)


# ------------------------------------------------------------------ run-time extents in T.Parallel
@tilelang.jit
def scale_prefix(block_M=8):
    M, N = T.dynamic("M"), T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), L: T.Tensor((1,), "int32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bm:
            n = L[0]  # how many leading columns to scale: known when the kernel runs
            for i, j in T.Parallel(block_M, n):
                B[bm * block_M + i, j] = A[bm * block_M + i, j] * 3.0
            for j in T.Parallel(N - n):
                B[bm * block_M, n + j] = -1.0

    return main


@pytest.mark.parametrize("n", [0, 37, 131, 150])
def test_parallel_with_run_time_extent(dev, n):
    a = torch.randn(21, 150, device=dev)
    b = poison((21, 150), device=dev)
    scale_prefix()(a, torch.tensor([n], dtype=torch.int32, device=dev), b)
    ref = torch.full((21, 150), float("nan"), dtype=torch.float64)
    ref[:, :n] = a[:, :n].double().cpu() * 3.0
    ref[::8, n:] = -1.0
    written = ~torch.isnan(ref)
    assert torch.equal(~torch.isnan(b.cpu()), written)
    assert_close(b.cpu()[written], ref[written], 1e-6, 1e-6)


# ------------------------------------------------------------------ warp specialization with barriers
@tilelang.jit
def ws_gemm(A, B, block_M: int, block_N: int, block_K: int, stages: int, consumer_first: bool = False):
    M, N, K = T.const("M, N, K")
    A: T.Tensor((M, K), T.float32)
    B: T.Tensor((K, N), T.float32)
    C = T.empty((M, N), T.float32)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
        A_s = T.alloc_shared((stages, block_M, block_K), T.float32)
        B_s = T.alloc_shared((stages, block_K, block_N), T.float32)
        C_l = T.alloc_fragment((block_M, block_N), T.float32)
        bars = T.alloc_barrier([128, 128] * stages)  # full[s], then empty[s]
        with T.ws(0):
            T.clear(C_l)
        for ko in T.serial(T.ceildiv(K, block_K)):
            if consumer_first:
                with T.ws(0):
                    T.mbarrier_wait_parity(bars[ko % stages], (ko // stages) % 2)
                    T.gemm(A_s[ko % stages, :, :], B_s[ko % stages, :, :], C_l)
                    T.mbarrier_arrive(bars[ko % stages + stages])
            with T.ws(1):
                T.mbarrier_wait_parity(bars[ko % stages + stages], ((ko // stages) % 2) ^ 1)
                T.tma_copy(A[by * block_M, ko * block_K], A_s[ko % stages, :, :], barrier=bars[ko % stages])
                T.tma_copy(B[ko * block_K, bx * block_N], B_s[ko % stages, :, :], barrier=bars[ko % stages])
                T.mbarrier_arrive(bars[ko % stages])
            if not consumer_first:
                with T.ws(0):
                    T.barrier_wait(bars[ko % stages], (ko // stages) % 2)
                    T.gemm(A_s[ko % stages, :, :], B_s[ko % stages, :, :], C_l)
                    T.barrier_arrive(bars[ko % stages + stages])
        with T.ws(0):
            T.copy(C_l, C[by * block_M, bx * block_N])
    return C


def test_warp_specialized_producer_consumer(dev):
    a = torch.randn(37, 70, device=dev)
    b = torch.randn(70, 29, device=dev)
    assert_close(ws_gemm(a, b, 16, 16, 16, 2), a.double() @ b.double(), *gemm_tol(torch.float32, dev))


def test_warp_specialized_consumer_before_producer_is_an_error():
    a, b = torch.randn(37, 70), torch.randn(70, 29)
    with pytest.raises(TileLangCompileError) as info:
        ws_gemm(a, b, 16, 16, 16, 2, True)
    assert "T.mbarrier_wait_parity waits for an arrive that comes later" in str(info.value)
    assert "T.mbarrier_wait_parity(bars[ko % stages], (ko // stages) % 2)" in str(info.value)


@tilelang.jit(out_idx=[-1])
def bitwise_row_reducer(M, N, op, block_N=16):
    @T.prim_func
    def main(A: T.Tensor((M, N), "int32"), Seed: T.Tensor((M,), "int32"), B: T.Tensor((M,), "int32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()  # a thread-view kernel: the reducer is block-level
            A_frag = T.alloc_fragment((M, block_N), "int32")
            seed = T.alloc_fragment((M,), "int32")
            res = T.alloc_fragment((M,), "int32")
            T.copy(Seed, seed)
            acc = T.alloc_reducer((M,), "int32", op=op)
            T.reducer_init(acc, seed[0])  # a run-time starting value
            for bn in T.serial(T.ceildiv(N, block_N)):
                T.copy(A[0, bn * block_N], A_frag)
                for i, j in T.Parallel(M, block_N):
                    if bn * block_N + j < N:
                        T.reducer_update(acc[i], A_frag[i, j])
            T.finalize_reducer(acc, res)
            if tx == 0:
                for i in T.serial(M):
                    B[i] = res[i]

    return main


@pytest.mark.parametrize("op", ["bitand", "bitor", "bitxor"])
def test_bitwise_reducer_with_run_time_seed(dev, op):
    a = torch.randint(0, 2**20, (6, 45), dtype=torch.int32, device=dev)
    seed = torch.randint(0, 2**20, (6,), dtype=torch.int32, device=dev)
    fn = {"bitand": torch.bitwise_and, "bitor": torch.bitwise_or, "bitxor": torch.bitwise_xor}[op]
    ref = torch.full((6,), int(seed[0]), dtype=torch.int32)
    for j in range(45):
        ref = fn(ref, a[:, j].cpu())
    out = bitwise_row_reducer(6, 45, op)(a, seed)
    assert out.cpu().tolist() == ref.tolist()
