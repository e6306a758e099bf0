"""Issue 6: the examples in examples/ (attention, split-K, batched, scans, quantized GEMMs) under
the interpreter at sizes that are not multiples of the tiles, plus focused tests of the language
features they use (rank-3/4 tensors with 3-D grids, copies that drop unit dims, fragment->shared
copies, atomics, cumsum, alloc_var, macro, vectorized, print, StridedTensor, Pipelined options,
fp16 accumulation)."""

import pytest
import torch
from t2t_util import assert_close, assert_equal, load_example

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


# ------------------------------------------------------------------------------------ examples
@pytest.mark.parametrize("dim", [32, 64])
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
def test_flash_attention(dev, dim, is_causal):
    load_example("flash_attention").check(dev, batch=2, heads=2, seq_q=70, seq_kv=70, dim=dim, is_causal=is_causal)


def test_flash_attention_causal_shorter_queries(dev):
    load_example("flash_attention").check(dev, batch=1, heads=2, seq_q=40, seq_kv=90, dim=32, is_causal=True)


@pytest.mark.parametrize("atomic_tile", [False, True], ids=["element", "tile"])
def test_gemm_splitk(dev, atomic_tile):
    load_example("gemm_splitk").check(dev, atomic_tile=atomic_tile)


def test_batched_gemm(dev):
    load_example("batched_gemm").check(dev)


def test_rms_norm(dev):
    load_example("rms_norm").check(dev)


def test_softmax(dev):
    load_example("softmax").check(dev)


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
def test_cumsum_example(dev, dim, reverse):
    load_example("cumsum").check(dev, dim=dim, reverse=reverse)


def test_gemm_bias_relu(dev):
    load_example("gemm_bias_relu").check(dev)


def test_gemm_int8(dev):
    load_example("gemm_int8").check(dev)


@pytest.mark.parametrize("signed", [False, True], ids=["uint8", "int8"])
def test_dequant_gemm(dev, signed):
    load_example("dequant_gemm").check(dev, M=40, N=40, K=100, block_M=16, block_N=16, block_K=32, signed=signed)


# ------------------------------------------------------------------------------ rank 3/4, 3-D grids
@tilelang.jit(out_idx=[-1])
def scale_bshd(B, S, H, D, block_S):
    @T.prim_func
    def main(X: T.Tensor((B, S, H, D), "float32"), Y: T.Tensor((B, S, H, D), "float32")):
        with T.Kernel(T.ceildiv(S, block_S), H, B) as (bx, by, bz):
            for i, d in T.Parallel(block_S, D):
                Y[bz, bx * block_S + i, by, d] = X[bz, bx * block_S + i, by, d] * (by + 1) + bz

    return main


def test_rank4_tensor_3d_grid(dev):
    x = torch.randn(2, 37, 3, 20, device=dev)
    y = scale_bshd(2, 37, 3, 20, 16)(x)
    ref = x * torch.arange(1, 4, device=dev).view(1, 1, 3, 1) + torch.arange(2, device=dev).view(2, 1, 1, 1)
    assert_close(y, ref, 1e-6, 1e-6)


@tilelang.jit(out_idx=[-1])
def add_rank3(B, M, N, block_M, block_N):
    @T.prim_func
    def main(X: T.Tensor((B, M, N), "float16"), Z: T.Tensor((B, M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), B) as (bx, by, bz):
            tile = T.alloc_fragment((block_M, block_N), "float32")
            T.copy(X[bz, by * block_M, bx * block_N], tile)
            for i, j in T.Parallel(block_M, block_N):
                tile[i, j] = tile[i, j] * 2 + bz
            T.copy(tile, Z[bz, by * block_M, bx * block_N])

    return main


def test_rank3_start_index_copy_3d_grid(dev):
    x = torch.randn(3, 45, 50, device=dev).half()
    z = add_rank3(3, 45, 50, 16, 32)(x)
    assert_close(z, x.float() * 2 + torch.arange(3, device=dev).view(3, 1, 1), 1e-3, 1e-3)


# --------------------------------------------------------------- T.copy dropping extent-1 dims
@tilelang.jit(out_idx=[-1])
def copy_bshd_rows(B, S, H, D, bm):
    @T.prim_func
    def main(Q: T.Tensor((B, S, H, D), "float16"), O: T.Tensor((B, S, H, D), "float16")):
        with T.Kernel(T.ceildiv(S, bm), H, B) as (bx, by, bz):
            Q_shared = T.alloc_shared((bm, D), "float16")
            acc = T.alloc_fragment((bm, D), "float32")
            T.copy(Q[bz, bx * bm : (bx + 1) * bm, by, :], Q_shared)
            T.copy(Q_shared, acc)
            for i, d in T.Parallel(bm, D):
                acc[i, d] = acc[i, d] + 1
            T.copy(acc, O[bz, bx * bm : (bx + 1) * bm, by, :])

    return main


def test_copy_drops_unit_dims_bshd(dev):
    q = torch.randn(2, 45, 3, 24, device=dev).half()
    o = copy_bshd_rows(2, 45, 3, 24, 16)(q)
    assert_close(o, (q.float() + 1).half(), 0, 0)


@tilelang.jit(out_idx=[-1])
def row_to_vector(M, N):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(M) as bx:
            row = T.alloc_fragment((N,), "float32")
            T.copy(A[bx, 0:N], row)
            for j in T.Parallel(N):
                row[j] = row[j] * 3
            T.copy(row, B[bx, :])

    return main


def test_copy_row_region_into_vector(dev):
    a = torch.randn(5, 30, device=dev)
    assert_close(row_to_vector(5, 30)(a), a * 3, 1e-6, 1e-6)


# ---------------------------------------------------------------------- fragment -> shared copies
@tilelang.jit(out_idx=[-1])
def frag_to_shared(M, N, K, bm, bn):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm)) as (bx, by):
            A_shared = T.alloc_shared((bm, K), "float16")
            B_shared = T.alloc_shared((K, bn), "float16")
            C_local = T.alloc_fragment((bm, bn), "float32")
            C_shared = T.alloc_shared((bm, bn), "float16")
            T.copy(A[by * bm, 0], A_shared)
            T.copy(B[0, bx * bn], B_shared)
            T.gemm(A_shared, B_shared, C_local, clear_accum=True)
            T.copy(C_local, C_shared)  # fragment -> shared, with a cast
            T.copy(C_shared, C[by * bm, bx * bn])

    return main


def test_fragment_to_shared_copy(dev):
    a = torch.randn(40, 32, device=dev).half()
    b = torch.randn(32, 50, device=dev).half()
    c = frag_to_shared(40, 50, 32, 32, 32)(a, b)
    assert_close(c, a.double() @ b.double(), 1e-2, 1e-2)


# --------------------------------------------------------------------------------------- atomics
@tilelang.jit
def atomic_tile(S, M, N, bm, kind):
    @T.prim_func
    def main(A: T.Tensor((S, M, N), "float32"), Out: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bm), S) as (bx, s):
            tile = T.alloc_fragment((bm, N), "float32")
            T.copy(A[s, bx * bm, 0], tile)
            if kind == "add":
                T.atomic_add(Out[bx * bm, 0], tile)
            elif kind == "max":
                T.atomic_max(Out[bx * bm, 0], tile)
            else:
                T.atomic_min(Out[bx * bm : (bx + 1) * bm, 0:N], tile)

    return main


@tilelang.jit
def atomic_element(S, M, N, bm, kind):
    @T.prim_func
    def main(A: T.Tensor((S, M, N), "float32"), Out: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bm), S) as (bx, s):
            for i, j in T.Parallel(bm, N):
                if kind == "add":
                    T.atomic_add(Out[bx * bm + i, j], A[s, bx * bm + i, j])
                elif kind == "max":
                    T.atomic_max(Out[bx * bm + i, j], A[s, bx * bm + i, j])
                else:
                    T.atomic_min(Out[bx * bm + i, j], A[s, bx * bm + i, j])

    return main


_ATOMIC_INIT = {"add": 0.0, "max": float("-inf"), "min": float("inf")}


@pytest.mark.parametrize("form", ["tile", "element"])
@pytest.mark.parametrize("kind", ["add", "max", "min"])
def test_atomics(dev, form, kind):
    S, M, N = 5, 37, 20
    a = torch.randn(S, M, N, device=dev)
    out = torch.full((M, N), _ATOMIC_INIT[kind], device=dev)
    (atomic_tile if form == "tile" else atomic_element)(S, M, N, 16, kind)(a, out)
    ref = {"add": a.sum(0), "max": a.amax(0), "min": a.amin(0)}[kind]
    assert_close(out, ref, 1e-5, 1e-5)


@tilelang.jit
def atomic_count(S, M, N, bm, product_form):
    @T.prim_func
    def main(Out: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bm), S) as (bx, s):
            if product_form:
                T.atomic_add(Out[bx * bm : (bx + 1) * bm, :], 1.0)
            else:
                T.atomic_add(Out[bx * bm : bx * bm + bm, :], 1.0)

    return main


@pytest.mark.parametrize("product_form", [False, True], ids=["start_plus_bm", "bx_plus_1_times_bm"])
def test_atomic_add_scalar_broadcast_to_region(dev, product_form):
    out = torch.zeros(37, 20, device=dev)
    atomic_count(4, 37, 20, 16, product_form)(out)
    assert_equal(out, torch.full((37, 20), 4.0))


@tilelang.jit
def atomic_histogram(N, nbins, block):
    @T.prim_func
    def main(X: T.Tensor((N,), "int32"), H: T.Tensor((nbins,), "int32")):
        with T.Kernel(T.ceildiv(N, block)) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    T.atomic_add(H[X[bx * block + i]], 1)

    return main


def test_atomic_add_colliding_addresses(dev):
    x = torch.randint(0, 7, (300,), device=dev, dtype=torch.int32)
    h = torch.zeros(7, device=dev, dtype=torch.int32)
    atomic_histogram(300, 7, 64)(x, h)
    assert_equal(h, torch.bincount(x.cpu().long(), minlength=7).int())


# ---------------------------------------------------------------------------------------- cumsum
@tilelang.jit(out_idx=[-1])
def cumsum_fragment(M, N, reverse):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(1) as bx:
            tile = T.alloc_fragment((M, N), "float32")
            T.copy(A, tile)
            T.cumsum(tile, reverse=reverse)  # TileLang's default dim is 0, in place
            T.copy(tile, B)

    return main


@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
def test_cumsum_default_dim_fragment(dev, reverse):
    a = torch.randn(13, 6, device=dev)
    b = cumsum_fragment(13, 6, reverse)(a)
    ref = a.flip(0).cumsum(0).flip(0) if reverse else a.cumsum(0)
    assert_close(b, ref, 1e-5, 1e-5)


@tilelang.jit(out_idx=[-1])
def cumsum_1d(N, reverse):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1) as bx:
            src = T.alloc_shared((N,), "float32")
            dst = T.alloc_shared((N,), "float32")
            T.copy(A, src)
            T.cumsum(src, dst, reverse=reverse)
            T.copy(dst, B)

    return main


@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
def test_cumsum_1d_into_dst(dev, reverse):
    a = torch.randn(45, device=dev)
    b = cumsum_1d(45, reverse)(a)
    ref = a.flip(0).cumsum(0).flip(0) if reverse else a.cumsum(0)
    assert_close(b, ref, 1e-5, 1e-5)


# ---------------------------------------------------------------------------- alloc_var, macro
@tilelang.jit(out_idx=[-1])
def row_sum_var(M, N):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M,), "float32")):
        with T.Kernel(M) as bx:
            acc = T.alloc_var("float32")
            count = T.alloc_var(T.int32, 5)
            acc = 0
            for k in T.serial(N):
                acc = acc + A[bx, k]
                count = count + 1
            B[bx] = acc + count

    return main


def test_alloc_var(dev):
    a = torch.randn(6, 19, device=dev)
    assert_close(row_sum_var(6, 19)(a), a.sum(1) + 19 + 5, 1e-5, 1e-5)


@T.macro
def _axpy(Y, X, alpha, i):
    Y[i] = alpha * X[i] + Y[i]


@tilelang.jit(out_idx=[-1])
def macro_kernel(N, block):
    @T.macro
    def square_plus(x, c):
        return x * x + c

    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block)) as bx:
            for i in T.Parallel(block):
                Y[bx * block + i] = square_plus(X[bx * block + i], 1.0)
            for i in T.Parallel(block):
                _axpy(Y, X, 2.0, bx * block + i)

    return main


def test_macro_inline_and_return(dev):
    x = torch.randn(100, device=dev)
    assert_close(macro_kernel(100, 32)(x), x * x + 1 + 2 * x, 1e-5, 1e-5)


# ------------------------------------------------------------------------------------ vectorized
@tilelang.jit(out_idx=[-1])
def vectorized_copy(N, vec):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, vec), threads=32) as bx:
            for v in T.vectorized(vec):
                B[bx * vec + v] = A[bx * vec + v] * 2

    return main


def test_vectorized(dev):
    a = torch.randn(50, device=dev)
    assert_close(vectorized_copy(50, 4)(a), a * 2, 0, 0)


# ----------------------------------------------------------------------------------------- print
@tilelang.jit(out_idx=[-1])
def print_kernel(N):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1) as bx:
            tile = T.alloc_fragment((N,), "float32")
            T.copy(A, tile)
            T.print(tile, msg="tile-of-A")
            T.print(bx, msg="block-index")
            T.copy(tile, B)

    return main


def test_print_in_interpreter(capfd):
    a = torch.arange(4, dtype=torch.float32) + 0.5
    b = print_kernel(4)(a)
    out = capfd.readouterr().out
    assert "tile-of-A" in out and "block-index" in out
    assert "2.5" in out
    assert_equal(b, a)


# ---------------------------------------------------------------------------------- StridedTensor
@tilelang.jit(out_idx=[-1])
def strided_scale(M, N, sM, sN, bm, bn):
    @T.prim_func
    def main(A: T.StridedTensor((M, N), (sM, sN), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm)) as (bx, by):
            tile = T.alloc_fragment((bm, bn), "float32")
            T.copy(A[by * bm, bx * bn], tile)
            for i, j in T.Parallel(bm, bn):
                tile[i, j] = tile[i, j] * 2
            T.copy(tile, B[by * bm, bx * bn])

    return main


def test_strided_tensor_transposed_view(dev):
    base = torch.randn(30, 45, device=dev)
    a = base.t()  # (45, 30) with strides (1, 45)
    b = strided_scale(45, 30, 1, 45, 16, 16)(a)
    assert_close(b, a * 2, 0, 0)


@tilelang.jit(out_idx=[-1])
def strided_dynamic(M, N, bm, bn):
    sM, sN = T.dynamic("sM, sN")

    @T.prim_func
    def main(A: T.StridedTensor((M, N), (sM, sN), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm)) as (bx, by):
            tile = T.alloc_fragment((bm, bn), "float32")
            T.copy(A[by * bm, bx * bn], tile)
            T.copy(tile, B[by * bm, bx * bn])

    return main


def test_strided_tensor_symbolic_strides(dev):
    kernel = strided_dynamic(20, 30, 16, 16)
    base = torch.randn(40, 70, device=dev)
    for a in (base[::2, 5:35], base[:30, :20].t(), base[:20, :30].contiguous()):
        assert_equal(kernel(a), a)


# ----------------------------------------------------------------- Pipelined options, fp16 accum
@tilelang.jit(out_idx=[-1])
def gemm_pipelined_opts(M, N, K, bm, bn, bk, accum_dtype):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm)) as (bx, by):
            A_shared = T.alloc_shared((bm, bk), "float16")
            B_shared = T.alloc_shared((bk, bn), "float16")
            C_local = T.alloc_fragment((bm, bn), accum_dtype)
            T.clear(C_local)
            for ko in T.Pipelined(
                T.ceildiv(K, bk), num_stages=2, order=[0, 1, 2], stage=[0, 0, 1], group=[[0], [1], [2]]
            ):
                T.copy(A[by * bm, ko * bk], A_shared)
                T.copy(B[ko * bk, bx * bn], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * bm, bx * bn])

    return main


def test_pipelined_order_stage_group_accepted(dev):
    a = torch.randn(50, 70, device=dev).half()
    b = torch.randn(70, 40, device=dev).half()
    c = gemm_pipelined_opts(50, 40, 70, 32, 32, 32, "float32")(a, b)
    assert_close(c, a.double() @ b.double(), 2e-2, 1e-2)


def test_gemm_fp16_accumulation(dev):
    a = (torch.rand(50, 70, device=dev) - 0.5).half()
    b = (torch.rand(70, 40, device=dev) - 0.5).half()
    kernel = gemm_pipelined_opts(50, 40, 70, 32, 32, 32, "float16")
    src = kernel.get_kernel_source()
    # the accumulator is float16; each T.gemm adds its float32 product and rounds once (Triton 3.6's
    # out_dtype=tl.float16 dot gave wrong values on an H200)
    assert "out_dtype=tl.float16" not in src and "tl.zeros([32, 32], tl.float16)" in src
    c = kernel(a, b)
    # fp16 accumulation: errors of a few fp16 ulps of the partial sums
    assert_close(c, a.double() @ b.double(), 2e-2, 2e-2)


# ------------------------------------------------------------------ known gaps (compiler issues)
def test_shift_intrinsics(dev):
    @tilelang.jit(out_idx=[-1])
    def shifts(N):
        @T.prim_func
        def main(A: T.Tensor((N,), "int32"), B: T.Tensor((N,), "int32")):
            with T.Kernel(1) as bx:
                for i in T.Parallel(N):
                    B[i] = T.shift_right(T.shift_left(A[i], 4), 2)

        return main

    a = torch.randint(-1000, 1000, (20,), device=dev, dtype=torch.int32)
    assert_equal(shifts(20)(a), (a << 4) >> 2)


def test_gemm_warp_policy_accepted(dev):
    @tilelang.jit(out_idx=[-1])
    def gemm_policy(M, N, K):
        @T.prim_func
        def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
            with T.Kernel(1, 1) as (bx, by):
                A_s = T.alloc_shared((M, K), "float16")
                B_s = T.alloc_shared((K, N), "float16")
                C_l = T.alloc_fragment((M, N), "float32")
                T.copy(A, A_s)
                T.copy(B, B_s)
                T.gemm(A_s, B_s, C_l, clear_accum=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(C_l, C)

        return main

    a = torch.randn(32, 32, device=dev).half()
    b = torch.randn(32, 32, device=dev).half()
    assert_close(gemm_policy(32, 32, 32)(a, b), a.double() @ b.double(), 1e-2, 1e-2)


def test_dequant_gemm_typical_tiles(dev):
    load_example("dequant_gemm").check(dev, M=40, N=40, K=128, block_M=32, block_N=32, block_K=64)
