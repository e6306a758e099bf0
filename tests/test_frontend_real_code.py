"""Binding fixes found by running other repositories' TileLang kernels (session 34): a helper's local
named like its caller's, ``T.ws`` in the thread view, a bare ``return`` ending a kernel,
``T.builtin`` and TVM's ``T.And`` / ``T.Or`` / ``T.Not``; (session 35) a host-side value computed
before ``T.Kernel``."""

import contextlib

import pytest
import torch
from t2t_util import assert_close, assert_equal, poison

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import TileLangCompileError

pytestmark = pytest.mark.poison_empty


def _scaled(x):
    w = x * 2.0  # the caller's local is named `w` too
    return w + 1.0


@T.macro
def _scaled_macro(x):
    w = x * 2.0
    return w + 1.0


def _outer(x):
    w = T.cast(x, T.float32)
    return w * _scaled(w)


def _outer_macro(x):
    w = T.cast(x, T.float32)
    return w * _scaled_macro(w)


@tilelang.jit(out_idx=[-2, -1])
def helpers(N):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32), C: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, 64), threads=64) as bx:
            for i in T.Parallel(64):
                if bx * 64 + i < N:
                    B[bx * 64 + i] = _outer(A[bx * 64 + i])
                    C[bx * 64 + i] = _outer_macro(A[bx * 64 + i])

    return main


def test_helper_locals_do_not_rebind_the_callers(dev):
    """An inlined helper's assignment makes its own local, as in Python: the caller's `w` keeps x
    (it was rebound to the helper's 2x, giving 2x(2x + 1); TileLang's gelu example read gelu(x / sqrt 2))."""
    N = 150
    A = torch.randn(N, device=dev)
    B, C = helpers(N)(A)
    ref = A.double() * (2 * A.double() + 1)
    assert_close(B, ref, atol=1e-5, rtol=1e-5)
    assert_close(C, ref, atol=1e-5, rtol=1e-5)


@T.prim_func
def warp_group_sections(x: T.Tensor((384,), T.int32), y: T.Tensor((384,), T.int32)):
    with T.Kernel(1, threads=384):
        tx = T.get_thread_binding()
        for q in T.Parallel(384):
            y[q] = x[q]
        with T.ws(1):
            y[tx] = x[tx] + 1000 + tx
        with T.ws(0, 2):
            y[tx] = y[tx] - 7


def test_ws_in_the_thread_view_runs_its_warp_groups_threads(dev):
    """``with T.ws(k)``: threads 128 k .. 128 k + 127 run it, with their own thread index."""
    x = torch.randint(-50, 50, (384,), dtype=torch.int32, device=dev)
    y = poison((384,), torch.int32, dev)
    tilelang.compile(warp_group_sections)(x, y)
    tx = torch.arange(384, dtype=torch.int32)
    ref = x.cpu() - 7
    ref[128:256] = x.cpu()[128:256] + 1000 + tx[128:256]
    assert_equal(y, ref)


@T.prim_func
def ends_with_return(x: T.Tensor((200,), T.float32), y: T.Tensor((200,), T.float32)):
    with T.Kernel(T.ceildiv(200, 64), threads=64) as bx:
        for i in T.Parallel(64):
            if bx * 64 + i < 200:
                y[bx * 64 + i] = x[bx * 64 + i] * 3.0
        return


def test_bare_return_ends_the_kernel(dev):
    x = torch.randn(200, device=dev)
    y = poison((200,), torch.float32, dev)
    tilelang.compile(ends_with_return)(x, y)
    assert_close(y, x.double() * 3, atol=1e-6, rtol=1e-6)


def test_return_under_an_if_in_a_kernel_is_refused():
    @T.prim_func
    def main(x: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            if bx == 0:
                return
            for i in T.Parallel(64):
                x[i] = 1.0

    with pytest.raises(TileLangCompileError, match="ends the kernel"):
        tilelang.compile(main)


@tilelang.jit(out_idx=[-1])
def logical(M, N):
    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), B: T.Tensor((8, 64), T.float32)):
        with T.Kernel(1, threads=128) as _:
            S = T.alloc_shared((8, 64), T.float32)
            for i, j in T.Parallel(8, 64):
                S[i, j] = T.if_then_else(T.And(i < M, T.Not(j >= N)), A[i, j], 0.0)
            T.builtin.sync_threads()
            for i, j in T.Parallel(8, 64):
                B[i, j] = T.if_then_else(T.Or(i == 7, j == 63), 2.0, S[7 - i, 63 - j])

    return main


def test_tvm_logical_operators_and_t_builtin(dev):
    M, N = 6, 45
    A = torch.randn(M, N, device=dev)
    B = logical(M, N)(A)
    S = torch.zeros(8, 64, dtype=torch.float64)
    S[:M, :N] = A.cpu().double()
    ref = S.flip(0).flip(1)
    ref[7, :] = 2.0
    ref[:, 63] = 2.0
    assert_close(B, ref, atol=0, rtol=0)


@tilelang.jit
def host_values(BLOCK=48):
    @T.prim_func
    def main(A: T.Tensor((300,), T.float32), B: T.Tensor((300,), T.float32), n: T.int32):
        num_tiles = T.ceildiv(n, BLOCK)  # computed on the host, before T.Kernel, from a scalar parameter
        last = num_tiles - 1
        with T.Kernel(num_tiles, threads=64) as bx:
            for i in T.Parallel(BLOCK):
                if bx * BLOCK + i < n:
                    B[bx * BLOCK + i] = A[bx * BLOCK + i] * 2.0 + T.if_then_else(bx == last, 1.0, 0.0)

    return main


def test_host_values_before_the_kernel(dev):
    """A name assigned before T.Kernel stands for its expression of sizes and scalar parameters, as in
    TileLang (it was refused: "kernel values can only be computed inside T.Kernel")."""
    n = 250  # 6 tiles of 48: the last covers 240..249
    A = torch.randn(300, device=dev)
    B = poison((300,), torch.float32, dev)
    host_values()(A, B, n)
    ref = A.double() * 2
    ref[240:n] += 1
    assert_close(B[:n], ref[:n], atol=1e-6, rtol=1e-6)
    assert B[n:].isnan().all()


def test_buffer_read_before_the_kernel_is_refused():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32)):
        first = A[0]
        with T.Kernel(1, threads=64) as _:
            for i in T.Parallel(64):
                B[i] = A[i] + first

    with pytest.raises(TileLangCompileError, match="only be read inside T.Kernel") as err:
        tilelang.compile(main)
    assert "test_frontend_real_code.py" in str(err.value)


@tilelang.jit
def exponent_bits(M):
    @T.prim_func
    def main(X: T.Tensor((M,), T.float32), Y: T.Tensor((M,), T.int32)):
        with T.Kernel(1, threads=32) as _:
            for i in T.Parallel(M):
                bits = T.reinterpret("uint32", X[i])  # TVM's older order: the dtype first (DeepSeek-V3.2's kernels)
                Y[i] = T.Cast("int32", (bits >> 23) & 0xFF)

    return main


def test_reinterpret_takes_the_dtype_first_too(dev):
    X = torch.randn(37, device=dev) * 100
    Y = poison((37,), torch.int32, dev)
    exponent_bits(37)(X, Y)
    assert_equal(Y, (X.view(torch.int32) >> 23) & 0xFF)


def test_utils_device():
    from tile2triton.utils.device import IS_CUDA, get_available_cpu_count, get_current_device

    assert IS_CUDA == torch.cuda.is_available()
    assert get_current_device() == (torch.cuda.current_device() if IS_CUDA else None)
    assert get_available_cpu_count() >= 1


@tilelang.jit(out_idx=[-1])
def tail_tiles(N, D, bc=16):
    @T.prim_func
    def main(X: T.Tensor((N, D), T.float32), Y: T.Tensor((2, D), T.float32)):
        with T.Kernel(1, threads=128) as _:
            s = T.alloc_shared((bc, D), T.float32)
            acc = T.alloc_fragment((D,), T.float32)
            T.clear(acc)
            for it in T.serial(T.ceildiv(N, bc)):
                cur = T.min(bc, N - it * bc)  # the last tile is short: a run-time extent on both sides
                T.fill(s, 1000.0)
                T.copy(X[it * bc : it * bc + cur, :], s[:cur, :])
                for j in T.Parallel(D):
                    for r in T.serial(bc):
                        acc[j] += T.if_then_else(r < cur, s[r, j], 0.0)
            T.copy(acc, Y[0, :])
            # and into global memory: the rows past N are not written
            for it in T.serial(T.ceildiv(N, bc)):
                cur = T.min(bc, N - it * bc)
                T.copy(X[it * bc : it * bc + cur, :], s[:cur, :])
                T.copy(s[:cur, 0:1], Y[1:2, it * bc : it * bc + cur])

    return main


def test_copy_with_a_run_time_extent(dev):
    """``T.copy`` of a loop's tail tile, whose extent is a run-time value on both sides, copies that many
    rows (TileOPs' NSA top-k kernel; it was refused: "T.copy needs static tile extents")."""
    N, D = 45, 37  # 45 rows: tiles of 16, 16 and 13
    X = torch.randn(N, D, device=dev)
    Y = tail_tiles(N, D)(X)
    assert_close(Y[0], X.double().sum(0), atol=1e-4, rtol=1e-4)
    assert_equal(Y[1], X[:D, 0])  # the columns from D on lie outside Y: not written


@tilelang.jit(out_idx=[-1])
def host_loop(N, passes=3, bn=64):
    @T.prim_func
    def main(X: T.Tensor((N,), T.float32), Y: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, bn), threads=64) as bx:
            for i in T.Parallel(bn):
                Y[bx * bn + i] = X[bx * bn + i]
        for s in range(passes):  # a kernel launched once per iteration, reading the loop's value
            with T.Kernel(T.ceildiv(N, bn), threads=64) as bx:
                for i in T.Parallel(bn):
                    Y[bx * bn + i] = Y[bx * bn + i] * 2.0 + T.cast(s, T.float32)

    return main


def test_a_host_loop_launches_its_kernel_per_iteration(dev):
    """A loop outside T.Kernel runs on the host, launching its kernels each iteration (TileOPs' FFT
    stages); it was refused: "'s' is used outside the region where it is defined"."""
    X = torch.randn(100, device=dev)
    ref = ((X.double() * 2 + 0) * 2 + 1) * 2 + 2
    assert_close(host_loop(100)(X), ref, atol=1e-5, rtol=1e-5)


@tilelang.jit(out_idx=[-1])
def if_frames(M, N, bm=16, bn=32):
    @T.prim_func
    def main(X: T.Tensor((M, N), T.float32), Y: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(M, bm), T.ceildiv(N, bn), threads=128) as (bx, by):
            for i, j in T.Parallel(bm, bn):
                with T.If(bx * bm + i < M), T.Then():  # the one-line form
                    with T.If(X[bx * bm + i, by * bn + j] > 0):
                        with T.Then():
                            Y[bx * bm + i, by * bn + j] = X[bx * bm + i, by * bn + j] * 2.0
                        with T.Else():
                            Y[bx * bm + i, by * bn + j] = -1.0

    return main


def test_tir_if_then_else_frames(dev):
    """TIR's ``with T.If(c):`` / ``T.Then()`` / ``T.Else()`` frames are the if statement (TileOPs' cumulative
    and Mamba kernels; they were refused)."""
    M, N = 37, 70
    X = torch.randn(M, N, device=dev)
    Y = if_frames(M, N)(X)
    assert_equal(Y, torch.where(X > 0, X * 2, torch.full_like(X, -1.0)))


def test_misplaced_if_frames_are_refused():
    def kernel(body):
        @T.prim_func
        def main(X: T.Tensor((64,), T.float32)):
            with T.Kernel(1, threads=64) as _:
                for i in T.Parallel(64):
                    body(X, i)

        return main

    @T.macro
    def else_first(X, i):
        with T.If(X[i] > 0):
            with T.Else():
                X[i] = 0.0

    @T.macro
    def bare_then(X, i):
        with T.Then():
            X[i] = 0.0

    with pytest.raises(TileLangCompileError, match="holds a 'with T.Then\\(\\):'"):
        tilelang.compile(kernel(else_first))
    with pytest.raises(TileLangCompileError, match="stand directly inside"):
        tilelang.compile(kernel(bare_then))


@tilelang.jit(out_idx=[-1])
def bf16_constants(use_fragment):
    @T.prim_func
    def main(A: T.Tensor((50,), T.float32), B: T.Tensor((50,), T.bfloat16)):
        with T.Kernel(1, threads=64) as _:
            # the tile's scope chosen by a compile-time flag (magnitudedev's Metal tests)
            a = T.alloc_fragment((50,), T.float32) if use_fragment else T.alloc_shared((50,), T.float32)
            T.copy(A, a)
            for i in T.Parallel(50):
                B[i] = T.if_then_else(a[i] > 0, T.bfloat16(1.01171875), T.bfloat16(1e30))

    return main


@pytest.mark.parametrize("use_fragment", [True, False])
def test_bfloat16_constants_round_to_nearest_even(dev, use_fragment):
    """``T.bfloat16(c)`` is c rounded to nearest even, as TileLang's cast (the interpreter stored it
    truncated: 1.0078 for 1.01171875, a tie); an allocation chosen by a compile-time ``if`` expression
    binds (it was refused: "allocate buffers with 'name = T.alloc_...(...)'")."""
    A = torch.randn(50, device=dev)
    B = bf16_constants(use_fragment)(A)
    high, low = torch.tensor([1.01171875, 1e30], dtype=torch.bfloat16, device=dev)
    assert high.item() == 1.015625
    assert_equal(B, torch.where(A > 0, high, low))


def _row_stat(M, N, post):
    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), C: T.Tensor((M,), T.float32)):
        with T.Kernel(M, threads=128) as bx:
            row = T.alloc_fragment((1, N), T.float32)
            r = T.alloc_fragment((1,), T.float32)
            T.copy(A[bx, 0], row)
            T.reduce_sum(row, r, dim=1, clear=True)
            C[bx] = eval(post)  # the text names the kernel's buffer and the closure's N

    return tilelang.compile(main, out_idx=[1])


def test_eval_of_kernel_names(dev):
    """``eval(text)`` in a kernel sees the kernel's names, as TileLang's builder runs the body as Python
    (tilelang-bench's row reductions; it was "name 'r' is not defined")."""
    A = torch.randn(9, 70, device=dev)
    assert_close(_row_stat(9, 70, "r[0] / N")(A), A.double().mean(1), atol=1e-5, rtol=1e-5)
    with pytest.raises(TileLangCompileError, match="eval of 'r\\[0\\] /'") as err:
        _row_stat(9, 70, "r[0] /")
    assert "test_frontend_real_code.py" in str(err.value)


def test_jit_signature_and_prim_func_params():
    """``JITImpl.signature`` and a prim_func's ``params``, as TileLang has them (TileOPs reads both)."""

    @tilelang.jit(out_idx=[1])
    def scale(N, block: int = 32):
        @T.prim_func
        def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32), alpha: T.float32):
            with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
                for i in T.Parallel(block):
                    B[bx * block + i] = A[bx * block + i] * alpha

        return main

    assert list(scale.signature.parameters) == ["N", "block"]
    assert [p.name for p in scale.get_tir(64).params] == ["A", "B", "alpha"]


# ------------------------------------------------------------------ session 36: TileOPs kernels
LOG2E = 1.4426950408889634


@tilelang.jit(out_idx=[-3, -2, -1])
def _half_and_python_floats(N):
    @T.prim_func
    def main(
        M: T.Tensor((N,), T.float16),
        g: T.Tensor((N,), T.float16),
        decay: T.Tensor((N,), T.float32),
        hardsig: T.Tensor((N,), T.float16),
        below: T.Tensor((N,), T.float16),
    ):
        with T.Kernel(T.ceildiv(N, 64), threads=64) as bx:
            for i in T.Parallel(64):
                k = bx * 64 + i
                if k < N:
                    decay[k] = M[k] * T.exp2((g[k] - g[0]) * LOG2E)
                    three, six = T.cast(3.0, "float32"), T.cast(6.0, "float32")
                    hardsig[k] = T.min(T.max(M[k] + three, T.cast(0.0, "float32")), six) / six
                    below[k] = T.if_then_else(M[k] < 0.1, M[k], 0.3)

    return main


def test_half_with_python_float_is_float32_arithmetic(dev):
    """A Python float is a float32 constant in TVM, so ``half * 1.44`` is float32 arithmetic (TileLang's
    CUDA: ``(float)g * 1.442695f``): exp2 of 16 does not overflow to inf and 0 * it stays 0 (gated
    deltanet; it was NaN), ``half + T.cast(3.0, "float32")`` divides in float32 (hardsigmoid; Triton
    refused div_rn on fp16), ``half < 0.1`` compares in float32."""
    N = 150
    M = torch.randn(N, device=dev).half()
    M[::3] = 0
    M[1] = 0.0999755859375  # 0.1 rounded to fp16: below 0.1 in float32, not in fp16
    g = torch.linspace(0, 16, N, device=dev).half()
    decay, hardsig, below = _half_and_python_floats(N)(M, g)
    m, gd = M.double(), g.double()
    assert_close(decay, m * torch.exp2((gd - gd[0]) * LOG2E), atol=1e-3, rtol=1e-3)
    assert_close(hardsig, torch.nn.functional.hardsigmoid(m), atol=1e-3, rtol=1e-3)
    assert_close(below, torch.where(m < 0.1, m, torch.tensor(0.3, dtype=torch.float64)).half(), atol=0, rtol=0)


def _group(depth):
    return contextlib.nullcontext(depth)


def _offset(flat, divisors, strides):
    """A plain helper (TileOPs' broadcast offsets): its `for d in range(...)` runs as Python."""
    off, rem = 0, flat
    for d in range(len(divisors)):
        off = off + rem // divisors[d] * strides[d]
        rem = rem % divisors[d]
    return off + rem * strides[-1]


@tilelang.jit(out_idx=[1])
def _python_constructs(R, C, top_k):
    @T.prim_func
    def main(A: T.Tensor((R * C * top_k,), T.float32), B: T.Tensor((R * C,), T.float32)):
        with T.Kernel(R * C, threads=32) as bx:
            acc = T.alloc_var(T.float32)
            with _group(2) as depth:  # a plain context manager, as `with trace.group(...)` in TileOPs
                acc = 0.0
                for j in T.Pipelined(top_k, num_stages=2) if top_k >= 2 else T.serial(top_k):
                    acc += A[_offset(bx, (C,), (1, R)) * top_k + j] * depth
            B[bx] = acc

    return main


@pytest.mark.parametrize("top_k", [1, 3])
def test_python_constructs_in_a_kernel(dev, top_k):
    """A Python context manager around kernel statements, a loop whose iterable is chosen by a
    compile-time condition, a plain helper's `range` loop over a tuple (each was refused)."""
    R, C = 5, 7
    A = torch.randn(R * C * top_k, device=dev)
    B = _python_constructs(R, C, top_k)(A)
    ref = 2 * A.double().view(C, R, top_k).sum(2).t().reshape(-1)
    assert_close(B, ref, atol=1e-5, rtol=1e-5)


@tilelang.jit(out_idx=[0])
def _rng_default_seq(N, thread_view):
    @T.prim_func
    def main(y: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, 64), threads=64) as bx:
            T.rng_init(1234)  # seq: tx + bx * 64, TileLang's default
            if thread_view:
                tx = T.get_thread_binding()
                r = T.rng_rand_float()
                if bx * 64 + tx < N:
                    y[bx * 64 + tx] = r
            else:
                for i in T.Parallel(64):
                    r = T.rng_rand_float()
                    if bx * 64 + i < N:
                        y[bx * 64 + i] = r

    return main


@pytest.mark.parametrize("thread_view", [False, True])
def test_rng_init_default_sequence(dev, thread_view):
    """``T.rng_init(seed)`` without ``seq`` draws one stream per thread (TileOPs' dropout): every element
    its own uniform draw."""
    N = 300
    y = _rng_default_seq(N, thread_view)()
    assert ((y >= 0) & (y <= 1)).all() and y.unique().numel() == N
    assert abs(y.mean().item() - 0.5) < 0.1
