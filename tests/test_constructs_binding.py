"""TileLang constructs the suite's exclusions hid (issue 26): T.let, T.align_up, T.ceildiv of a run-time
scalar, T.unroll with a per-thread extent, and the launch hints that have no effect (T.pdl_trigger,
T.pdl_sync, T.annotate_min_blocks_per_sm, T.annotate_l2_hit_ratio).  Each kernel was checked to be valid TileLang 0.1.15."""

import math

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import TileLangCompileError

pytestmark = pytest.mark.poison_empty  # outputs the runtime allocates start as NaN / a sentinel


def _let_kernel(n, block):
    @T.prim_func
    def main(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32), C: T.Tensor((T.ceildiv(n, block),), T.int32)):
        with T.Kernel(T.ceildiv(n, block), threads=32) as bx:
            base = T.int32()
            T.let(base, bx * block)
            extra = T.int32()
            T.let(extra, bx % 3)
            for i in T.Parallel(block):
                if base + i < n:
                    B[base + i] = A[base + i] * 2 + extra
            w = T.int32()
            C[bx] = T.let(w, bx + 1, w * 2)  # a Let expression

    return main


def test_let_binds_for_the_rest_of_the_block(dev):
    n, block = 77, 24
    kernel = tilelang.compile(_let_kernel(n, block), out_idx=[1, 2])
    a = torch.randn(n, device=dev)
    b, c = kernel(a)
    assert_close(b, a * 2 + (torch.arange(n, device=dev) // block) % 3, atol=1e-6, rtol=1e-6)
    assert c.tolist() == [2 * (k + 1) for k in range(-(-n // block))]


def _let_rebound_body_kernel():
    @T.prim_func
    def main(A: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=32):
            v = T.int32()
            T.let(v, 1)
            A[0] = T.let(v, 2, v + 1)

    return main


def test_let_body_with_a_bound_variable_is_an_error():
    with pytest.raises(TileLangCompileError, match="earlier T.let"):
        tilelang.compile(_let_rebound_body_kernel())


def _align_up_kernel(n, b):
    @T.prim_func
    def main(A: T.Tensor((n,), T.int32), s: T.int32):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(n):
                A[i] = T.align_up(i - 40, b) + T.align_up(s, b) * 1000 + T.ceildiv(s, b) * 100000

    return main


@pytest.mark.parametrize("s", [1, 37, -1, -33])  # 1: Triton specializes it as a constexpr
def test_align_up_and_ceildiv_of_a_scalar_parameter(dev, s):
    n, b = 77, 6
    kernel = tilelang.compile(_align_up_kernel(n, b), out_idx=[0])
    i = torch.arange(n, device=dev) - 40

    def align(x):
        return -(-x // b) * b

    ref = align(i) + align(torch.tensor(s)) * 1000 + (-(-s // b)) * 100000
    assert torch.equal(kernel(s).cpu(), ref.to(torch.int32).cpu())
    assert T.align_up(37, 8) == 40


def _unroll_kernel(n):
    @T.prim_func
    def main(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
        with T.Kernel(1, threads=96):
            tid = T.get_thread_binding()
            acc = T.alloc_var(T.float32, init=0)
            for k in T.unroll(tid % 13):  # each thread its own trip count
                acc += A[k]
            for k in T.unroll(tid % 5, 20, step=3):
                acc += A[k] * 10
            if tid < n:
                B[tid] = acc

    return main


def test_unroll_with_a_per_thread_extent(dev):
    n = 90
    kernel = tilelang.compile(_unroll_kernel(n), out_idx=[1])
    a = torch.randn(n, device=dev)
    ref = torch.stack([a[: t % 13].sum() + a[t % 5 : 20 : 3].sum() * 10 for t in range(n)])
    assert_close(kernel(a), ref, atol=1e-4, rtol=1e-5)


def _hints_kernel(n, block):
    @T.prim_func
    def main(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            T.annotate_min_blocks_per_sm(2)
            T.annotate_l2_hit_ratio({A: 0.9})
            T.pdl_sync()
            for i in T.Parallel(block):
                if bx * block + i < n:
                    B[bx * block + i] = A[bx * block + i] * 2.0 + 1.0
            T.pdl_trigger()

    return main


def test_launch_hints_have_no_effect(dev):
    n = 300
    kernel = tilelang.compile(_hints_kernel(n, 128), out_idx=[1])
    a = torch.randn(n, device=dev)
    assert_close(kernel(a), a * 2 + 1, atol=1e-6, rtol=1e-6)


def _exp10_kernel(n):
    @T.prim_func
    def main(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(n):
                B[i] = T.exp10(A[i])

    return main


def test_exp10(dev):
    # TileLang's testing/python/fastmath and math folders import T.exp10
    n = 45
    a = torch.randn(n, device=dev)
    assert_close(
        tilelang.compile(_exp10_kernel(n), out_idx=[1])(a), torch.pow(10.0, a.double()).float(), atol=1e-5, rtol=1e-5
    )
    assert T.exp10(2) == 100.0


@tilelang.jit
def fill_run_time_slice():
    n = T.symbolic("n")

    @T.prim_func
    def main(x: T.Tensor[(n,), T.float32], lo: T.int32, hi: T.int32):
        with T.Kernel(1, threads=128):
            a, b = T.alloc_var(T.int32), T.alloc_var(T.int32)  # one allocation per name
            a = lo
            b = hi
            T.fill(x[a:b], 7.0)  # a run-time extent: filled in chunks

    return main


@pytest.mark.parametrize("lo,hi", [(13, 611), (5, 5), (0, 300)])
def test_fill_of_a_run_time_slice(dev, lo, hi):
    x = torch.randn(613, device=dev)
    want = x.double().clone()
    want[lo:hi] = 7.0
    fill_run_time_slice()(x, lo, hi)
    assert_close(x, want, 0, 0)


@tilelang.jit(out_idx=[-1])
def typed_sizes(rows, cols):
    """Sizes given as typed constants (``T.int32(n)``, as TileLang's config_index_bitwidth test writes
    its attention shapes): tensor shapes, allocations and T.Parallel extents take their ints."""
    rows, cols = T.int32(rows), T.int32(cols)

    @T.prim_func
    def main(A: T.Tensor([rows, cols], T.float32), B: T.Tensor([rows, cols], T.float32)):
        with T.Kernel(T.ceildiv(rows, 8), threads=64) as bx:
            tile = T.alloc_fragment([8, cols], T.float32)
            T.copy(A[bx * 8, 0], tile)
            for i, j in T.Parallel(8, cols):
                tile[i, j] = tile[i, j] * 2 + j
            T.copy(tile, B[bx * 8, 0])

    return main


def test_typed_constant_sizes(dev):
    a = torch.randn(21, 13, device=dev)
    ref = a.double().cpu() * 2 + torch.arange(13, dtype=torch.float64)
    assert_close(typed_sizes(21, 13)(a), ref, 1e-6, 1e-6)


@tilelang.jit(out_idx=[-1])
def register_tile_atomics(M, N):
    """Tile-form T.atomic_max / T.atomic_add on a local (register) destination: each element updated
    once (TileLang's CPU atomic test); no atomics are needed on registers."""

    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), Init: T.Tensor((M, N), T.float32), B: T.Tensor((2, M, N), T.float32)):
        with T.Kernel(1, threads=32):
            hi = T.alloc_local((M, N), T.float32)
            acc = T.alloc_fragment((M, N), T.float32)
            for i, j in T.grid(M, N):
                hi[i, j] = Init[i, j]
            T.copy(Init, acc)
            T.atomic_max(hi, A)
            T.atomic_add(acc, A)
            for i, j in T.grid(M, N):
                B[0, i, j] = hi[i, j]
            T.copy(acc, B[1, :, :])

    return main


def test_tile_atomics_on_register_buffers(dev):
    a, init = torch.randn(5, 7, device=dev), torch.randn(5, 7, device=dev)
    x, y = a.double().cpu(), init.double().cpu()
    assert_close(register_tile_atomics(5, 7)(a, init), torch.stack([torch.maximum(x, y), x + y]), 1e-6, 1e-6)


def test_tile_op_inside_parallel_is_a_value_error():
    """TileLang's NestedLoopChecker raises a ValueError for a tile operation inside T.Parallel."""

    @T.prim_func
    def main(A: T.Tensor((16, 16), T.float16), C: T.Tensor((16, 16), T.float32)):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((16, 16), T.float16)
            C_f = T.alloc_fragment((16, 16), T.float32)
            T.clear(C_f)
            T.copy(A, A_s)
            for _ in T.Parallel(1):
                T.gemm(A_s, A_s, C_f)
            T.copy(C_f, C)

    with pytest.raises(ValueError, match="collective tile operation and cannot stand inside T.Parallel"):
        tilelang.compile(main)


@tilelang.jit(out_idx=[-1])
def transposes(B, M, N):
    """T.transpose as TileLang lowers it: the last two axes swapped over any rank, regions included
    (a source element outside its tensor reads 0, a destination one outside is not written)."""

    @T.prim_func
    def main(A: T.Tensor((B, M, N), T.float32), Out: T.Tensor((B, N + 1, M), T.float32)):
        with T.Kernel(1, threads=64):
            S = T.alloc_shared((M, N), T.float32)
            St = T.alloc_shared((N, M), T.float32)
            T.fill(Out, -1.0)
            T.copy(A[0, :, :], S)
            T.transpose(S, St)  # whole 2-D buffers
            T.copy(St, Out[0, 0:N, :])
            # a 3-D region shifted down one row, reading one column past A's end (zeros)
            T.transpose(A[1:B, 0:M, 1 : N + 1], Out[1:B, 1 : N + 1, 0:M])

    return main


def test_transpose_ranks_and_regions(dev):
    B, M, N = 3, 5, 7
    a = torch.randn(B, M, N, device=dev)
    x = a.double().cpu()
    ref = torch.full((B, N + 1, M), -1.0, dtype=torch.float64)
    ref[0, :N] = x[0].T
    shifted = torch.zeros(B - 1, M, N, dtype=torch.float64)
    shifted[:, :, : N - 1] = x[1:, :, 1:]
    ref[1:, 1:] = shifted.transpose(-2, -1)
    assert_close(transposes(B, M, N)(a), ref, 0, 0)


def test_transpose_compiles_for_hopper(tmp_path):
    from test_fuzz_regressions import compile_for_hopper

    compile_for_hopper(transposes(3, 5, 7), tmp_path)


@tilelang.jit(out_idx=[-1])
def while_frame(n):
    """TIR's ``with T.While(cond):`` frame (TileLang's CPU while test): a while loop, its condition read
    before every iteration; here halving each element until it is below 1, counting the steps."""

    @T.prim_func
    def main(A: T.Tensor((n,), T.float32), Steps: T.Tensor((n,), T.int32)):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            x = T.alloc_var(T.float32)
            count = T.alloc_var(T.int32)
            if tx < n:
                x = A[tx]
                count = 0
                with T.While(x >= 1.0):
                    x = x * 0.5
                    count = count + 1
                Steps[tx] = count

    return main


def test_while_frame(dev):
    a = torch.rand(45, device=dev) * 300
    steps = torch.tensor([int(math.floor(math.log2(v))) + 1 if v >= 1 else 0 for v in a.cpu().tolist()])
    assert torch.equal(while_frame(45)(a).cpu().long(), steps)


def _host_loops(n):
    @T.prim_func
    def main(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32), C: T.Tensor((n,), T.float32)):
        # no T.Kernel: TileLang's CPU target runs the loops as they stand; here one block
        for i in T.Parallel(n):
            B[i] = A[i] * 2.0
        for i in T.serial(n - 1):
            C[i] = B[i] + B[i + 1]
        C[n - 1] = 0.0

    return main


def test_prim_func_without_a_kernel_block(dev):
    n = 77
    a = torch.randn(n, device=dev)
    b, c = torch.full((n,), float("nan"), device=dev), torch.full((n,), float("nan"), device=dev)
    tilelang.compile(_host_loops(n))(a, b, c)
    x = 2 * a.double().cpu()
    assert_close(b, x, 1e-6, 1e-6)
    assert_close(c, torch.cat([x[:-1] + x[1:], torch.zeros(1, dtype=torch.float64)]), 1e-6, 1e-6)
