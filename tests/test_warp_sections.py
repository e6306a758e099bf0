"""Warp-specialized sections handing data to each other through mbarriers
(frontend/warp_sections.py): ``if tx < 128: ... else: ...`` sections whose loops have the same
iteration space run fused, iteration by iteration, in an order that satisfies every wait.

Each kernel is written with a consumer before its producer in program order, so running the
sections one after another would read buffers not yet filled: a result that matches the
float64 reference shows the sections were interleaved correctly.
"""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import TileLangCompileError

pytestmark = pytest.mark.poison_empty


# ------------------------------------------------------------------ two sections, a ring of `stages` buffers
@tilelang.jit(out_idx=[-1])
def ring_sum(M, N, stages, producer_trips_extra=0):
    BN = 128
    trips = T.ceildiv(N, BN)

    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), Out: T.Tensor((M, BN), T.float32)):
        with T.Kernel(M, threads=256) as bm:
            buf = T.alloc_shared((stages, BN), T.float32)
            acc = T.alloc_fragment((BN,), T.float32)
            full = T.alloc_barrier([128] * stages)
            empty = T.alloc_barrier([128] * stages)
            tx = T.get_thread_binding()
            if tx < 128:  # the consumer comes first in program order
                T.clear(acc)
                for i in T.serial(trips):
                    T.barrier_wait(full[i % stages], (i // stages) % 2)
                    for j in T.Parallel(BN):
                        acc[j] += buf[i % stages, j] * (i + 1)
                    T.barrier_arrive(empty[i % stages])
                T.copy(acc, Out[bm, 0])
            else:  # the producer: one element per thread
                for i in T.serial(trips + producer_trips_extra):
                    T.barrier_wait(empty[i % stages], ((i // stages) % 2) ^ 1)
                    col = i * BN + (tx - 128)
                    buf[i % stages, tx - 128] = T.if_then_else(col < N, A[bm, T.min(col, N - 1)], 0)
                    T.barrier_arrive(full[i % stages])

    return main


def ring_sum_ref(a):
    m, n = a.shape
    trips = -(-n // 128)
    padded = torch.zeros(m, trips * 128, dtype=torch.float64)
    padded[:, :n] = a.double().cpu()
    weights = torch.arange(1, trips + 1, dtype=torch.float64)
    return (padded.view(m, trips, 128) * weights[None, :, None]).sum(1)


@pytest.mark.parametrize("stages", [1, 2, 3])
def test_two_sections_ring(dev, stages):
    a = torch.randn(3, 700, device=dev)
    assert_close(ring_sum(3, 700, stages)(a), ring_sum_ref(a), 1e-4, 1e-5)


def test_two_sections_fused_source():
    kernel = ring_sum(3, 700, 2)
    src = kernel.get_kernel_source()
    # one loop: the producer's iteration, then the consumer's, each under its range of threads
    assert sum(line.strip().startswith("for i in") for line in src.splitlines()) == 1, src
    assert src.index("col = i * 128 + (tx - 128)") < src.index("acc = acc + "), src


# ------------------------------------------------------------------ three sections, a two-level loop nest
@tilelang.jit(out_idx=[-2, -1])
def three_sections(M, N, stages=2):
    BN = 128
    rounds = T.ceildiv(T.ceildiv(N, BN), stages)

    @T.prim_func
    def main(
        A: T.Tensor((M, N), T.float32),
        W: T.Tensor((BN,), T.float32),
        OutA: T.Tensor((M, BN), T.float32),
        OutB: T.Tensor((M, BN), T.float32),
    ):
        with T.Kernel(M, threads=384) as bm:
            buf = T.alloc_shared((stages, BN), T.float32)
            scaled = T.alloc_shared((BN,), T.float32)
            acc_a = T.alloc_fragment((BN,), T.float32)
            acc_b = T.alloc_fragment((BN,), T.float32)
            ready = T.alloc_barrier([128] * stages)
            free = T.alloc_barrier([256] * stages)  # both consumers release a buffer
            scaled_ready = T.alloc_barrier(128)
            scaled_free = T.alloc_barrier(128)
            tx = T.get_thread_binding()
            if tx < 128:
                T.clear(acc_a)
                for i in T.serial(rounds):
                    for s in T.unroll(stages):
                        T.barrier_wait(ready[s], i & 1)
                        if i != 0 or s != 0:
                            T.barrier_wait(scaled_free, ((i * stages + s) & 1) ^ 1)
                        for j in T.Parallel(BN):
                            acc_a[j] += buf[s, j]
                            scaled[j] = buf[s, j] * W[j]
                        T.barrier_arrive(scaled_ready)
                        T.barrier_arrive(free[s])
                T.copy(acc_a, OutA[bm, 0])
            elif tx >= 128 and tx < 256:
                T.clear(acc_b)
                for i in T.serial(rounds):
                    for s in T.unroll(stages):
                        T.barrier_wait(scaled_ready, (i * stages + s) & 1)
                        for j in T.Parallel(BN):
                            acc_b[j] += scaled[j] * buf[s, j]
                        T.barrier_arrive(free[s])
                        T.barrier_arrive(scaled_free)
                T.copy(acc_b, OutB[bm, 0])
            elif tx >= 256:
                for i in T.serial(rounds):
                    for s in T.unroll(stages):
                        T.barrier_wait(free[s], (i & 1) ^ 1)
                        col = (i * stages + s) * BN + (tx - 256)
                        buf[s, tx - 256] = T.if_then_else(col < N, A[bm, T.min(col, N - 1)], 0)
                        T.barrier_arrive(ready[s])

    return main


def test_three_sections(dev):
    m, n, stages = 2, 1100, 2
    a, w = torch.randn(m, n, device=dev), torch.randn(128, device=dev)
    out_a, out_b = three_sections(m, n, stages)(a, w)
    trips = -(-n // 128)
    chunks = -(-trips // stages) * stages  # whole rounds of `stages` chunks; the padding adds zeros
    padded = torch.zeros(m, chunks * 128, dtype=torch.float64)
    padded[:, :n] = a.double().cpu()
    blocks = padded.view(m, chunks, 128)
    assert_close(out_a, blocks.sum(1), 1e-4, 1e-5)
    assert_close(out_b, (blocks * blocks * w.double().cpu()).sum(1), 1e-4, 1e-5)


# ------------------------------------------------------------------ refused: no order exists
def test_mismatched_loops_are_refused():
    a = torch.randn(3, 700)
    with pytest.raises(TileLangCompileError) as info:
        ring_sum(3, 700, 2, producer_trips_extra=1)(a)
    message = str(info.value)
    assert "T.barrier_wait waits for an arrive that comes later in program order" in message
    assert "T.barrier_wait(full[i % stages], (i // stages) % 2)" in message


@tilelang.jit(out_idx=[-1])
def deadlock(N):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), Out: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=256):
            buf = T.alloc_shared((N,), T.float32)
            a_done = T.alloc_barrier(128)
            b_done = T.alloc_barrier(128)
            tx = T.get_thread_binding()
            if tx < 128:
                for i in T.serial(3):
                    T.barrier_wait(b_done, i % 2)  # each section waits for the other first: a cycle
                    T.copy(A, buf)
                    T.barrier_arrive(a_done)
            else:
                for i in T.serial(3):
                    T.barrier_wait(a_done, i % 2)
                    T.copy(buf, Out)
                    T.barrier_arrive(b_done)

    return main


def test_cycle_is_refused():
    with pytest.raises(TileLangCompileError) as info:
        deadlock(50)(torch.randn(50))
    assert "waits for an arrive that comes later in program order" in str(info.value)
    assert "T.barrier_wait(b_done, i % 2)" in str(info.value)


# ------------------------------------------------------------------ a cp.async producer (T.ptx_cp_async)
@tilelang.jit(out_idx=[-1])
def cp_async_ring(M, N, stages=2):
    VEC, BN = 4, 512  # each of the 128 producer threads copies 4 consecutive elements
    trips = T.ceildiv(N, BN)

    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), Out: T.Tensor((M, BN), T.float32)):
        with T.Kernel(M, threads=256) as bm:
            buf = T.alloc_shared((stages, BN), T.float32)
            acc = T.alloc_fragment((BN,), T.float32)
            full = T.alloc_barrier([128] * stages)
            empty = T.alloc_barrier([128] * stages)
            tx = T.get_thread_binding()
            if tx < 128:
                T.clear(acc)
                for i in T.serial(trips):
                    T.barrier_wait(full[i % stages], (i // stages) % 2)
                    for j in T.Parallel(BN):
                        acc[j] += buf[i % stages, j] * (i + 1)
                    T.barrier_arrive(empty[i % stages])
                T.copy(acc, Out[bm, 0])
            elif tx >= 128:
                for i in T.serial(trips):
                    T.barrier_wait(empty[i % stages], ((i // stages) % 2) ^ 1)
                    col = i * BN + (tx - 128) * VEC
                    T.ptx_cp_async(
                        T.access_ptr(buf[i % stages, (tx - 128) * VEC], "w", VEC),
                        T.access_ptr(A[bm, col], "r", VEC),
                        VEC,
                        predicate=col < N,  # past the end: zeros, as cp.async fills them
                    )
                    T.cp_async_barrier_noinc(full[i % stages])

    return main


def test_cp_async_producer(dev):
    m, n = 3, 4 * 333
    a = torch.randn(m, n, device=dev)
    trips = -(-n // 512)
    padded = torch.zeros(m, trips * 512, dtype=torch.float64)
    padded[:, :n] = a.double().cpu()
    weights = torch.arange(1, trips + 1, dtype=torch.float64)
    ref = (padded.view(m, trips, 512) * weights[None, :, None]).sum(1)
    assert_close(cp_async_ring(m, n)(a), ref, 1e-4, 1e-5)


def test_ptx_cp_async_dtypes_must_match():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float16), B: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((64,), T.float32)
            tx = T.get_thread_binding()
            T.ptx_cp_async(T.access_ptr(s[tx * 2], "w", 2), T.access_ptr(A[tx * 2], "r", 2), 2)
            T.copy(s, B)

    with pytest.raises(TileLangCompileError) as info:
        tilelang.compile(main)
    assert "T.ptx_cp_async copies bytes: source dtype float16 and destination dtype float32" in str(info.value)


# ------------------------------------------------------------------ one barrier per warp (mbars[tx // 32])
@tilelang.jit(out_idx=[-1])
def per_warp_swap(M):
    @T.prim_func
    def main(A: T.Tensor((M, 96), T.float32), B: T.Tensor((M, 96), T.float32)):
        with T.Kernel(M, threads=96) as bm:
            tx = T.get_thread_binding()
            s = T.alloc_shared((96,), T.float32)
            mbars = T.alloc_barrier([32] * 3)
            s[tx] = A[bm, tx]
            T.mbarrier_arrive(mbars[tx // 32])  # each warp its own barrier: 32 arrivals complete it
            T.mbarrier_wait_parity(mbars[tx // 32], 0)
            B[bm, tx] = s[tx ^ 1]  # a neighbour in the same warp

    return main


def test_barrier_per_warp(dev):
    a = torch.randn(5, 96, device=dev)
    ref = a.double().cpu()[:, torch.arange(96) ^ 1]
    assert_close(per_warp_swap(5)(a), ref, 0, 0)


# ------------------------------------------------------------------ sections that meet inside an iteration
@tilelang.jit(out_idx=[-2, -1])
def exchange(M, N, stages=2):
    BN = 128
    trips = T.ceildiv(N, BN)

    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), Out0: T.Tensor((M, BN), T.float32), Out1: T.Tensor((M, BN), T.float32)):
        with T.Kernel(M, threads=384) as bm:
            buf = T.alloc_shared((stages, BN), T.float32)
            X0 = T.alloc_shared((BN,), T.float32)
            X1 = T.alloc_shared((BN,), T.float32)
            S1 = T.alloc_shared((BN,), T.float32)
            acc0 = T.alloc_fragment((BN,), T.float32)
            acc1 = T.alloc_fragment((BN,), T.float32)
            ready = T.alloc_barrier([128] * stages)
            free = T.alloc_barrier([256] * stages)
            x0_ready, x1_ready = T.alloc_barrier(128), T.alloc_barrier(128)
            x0_free, x1_free = T.alloc_barrier(128), T.alloc_barrier(128)
            done0, done1 = T.alloc_barrier(128), T.alloc_barrier(128)
            tx = T.get_thread_binding()
            if tx < 128:
                T.clear(acc0)
                for i in T.serial(trips):
                    T.barrier_wait(ready[i % stages], (i // stages) & 1)
                    T.barrier_wait(x0_free, (i & 1) ^ 1)
                    for j in T.Parallel(BN):
                        X0[j] = buf[i % stages, j] * 2
                    T.barrier_arrive(x0_ready)
                    T.barrier_wait(x1_ready, i & 1)  # needs the other consumer's half of this iteration
                    for j in T.Parallel(BN):
                        acc0[j] += X1[j] * buf[i % stages, j]
                    T.barrier_arrive(x1_free)
                    T.barrier_arrive(free[i % stages])
                T.barrier_arrive(done0)
                T.barrier_wait(done1, 0)  # and meet once more after the loop
                for j in T.Parallel(BN):
                    acc0[j] += S1[j]
                T.copy(acc0, Out0[bm, 0])
            elif tx < 256:
                T.clear(acc1)
                for i in T.serial(trips):
                    T.barrier_wait(ready[i % stages], (i // stages) & 1)
                    T.barrier_wait(x1_free, (i & 1) ^ 1)
                    for j in T.Parallel(BN):
                        X1[j] = buf[i % stages, j] + 1
                    T.barrier_arrive(x1_ready)
                    T.barrier_wait(x0_ready, i & 1)
                    for j in T.Parallel(BN):
                        acc1[j] += X0[j]
                    T.barrier_arrive(x0_free)
                    T.barrier_arrive(free[i % stages])
                T.copy(acc1, S1)
                T.barrier_arrive(done1)
                T.barrier_wait(done0, 0)
                T.copy(acc1, Out1[bm, 0])
            else:
                for i in T.serial(trips):
                    T.barrier_wait(free[i % stages], ((i // stages) & 1) ^ 1)
                    col = i * BN + (tx - 256)
                    buf[i % stages, tx - 256] = T.if_then_else(col < N, A[bm, T.min(col, N - 1)], 0)
                    T.barrier_arrive(ready[i % stages])

    return main


def test_sections_meeting_inside_an_iteration(dev):
    m, n = 2, 900
    a = torch.randn(m, n, device=dev)
    trips = -(-n // 128)
    padded = torch.zeros(m, trips * 128, dtype=torch.float64)
    padded[:, :n] = a.double().cpu()
    chunks = padded.view(m, trips, 128)
    acc1 = (2 * chunks).sum(1)
    out0, out1 = exchange(m, n)(a)
    assert_close(out1, acc1, 1e-4, 1e-5)
    assert_close(out0, ((chunks + 1) * chunks).sum(1) + acc1, 1e-4, 1e-5)


# ------------------------------------------------------------------ long loops: the barriers' state after them
def test_long_loop_keeps_the_phase_after_it():
    """A loop longer than warp_sections runs in full leaves its barriers in the state of its
    whole trip count: the wait after the loop below (parity 1 after 3001 + 1 phases) passes."""
    trips = 3001

    @T.prim_func
    def main(A: T.Tensor((trips, 128), T.float32), B: T.Tensor((128,), T.float32)):
        with T.Kernel(1, threads=256):
            buf = T.alloc_shared((128,), T.float32)
            acc = T.alloc_fragment((128,), T.float32)
            full = T.alloc_barrier(128)
            empty = T.alloc_barrier(128)
            tx = T.get_thread_binding()
            if tx < 128:
                T.clear(acc)
                for i in T.serial(trips):
                    T.barrier_wait(full, i % 2)
                    for j in T.Parallel(128):
                        acc[j] += buf[j]
                    T.barrier_arrive(empty)
                T.barrier_wait(full, trips % 2)  # the producer's last arrive, after its loop
                for j in T.Parallel(128):
                    acc[j] += buf[j] * 2  # the producer's last buffer
                T.copy(acc, B)
            else:
                for i in T.serial(trips):
                    T.barrier_wait(empty, (i % 2) ^ 1)
                    buf[tx - 128] = A[i, tx - 128]
                    T.barrier_arrive(full)
                T.barrier_wait(empty, (trips % 2) ^ 1)
                buf[tx - 128] = A[0, tx - 128] + 1
                T.barrier_arrive(full)

    source = tilelang.compile(main).get_kernel_source()
    assert sum(line.strip().startswith("for i in") for line in source.splitlines()) == 1, source
    # the producer's statements after its loop come before the consumer's that wait for them
    assert source.index("buf[tx - 128] = A[0, tx - 128] + 1") < source.index("acc[j] += buf[j] * 2"), source


# ------------------------------------------------------------------ barriers known only at run time
@tilelang.jit(out_idx=[-1])
def run_time_start(N, consumer_first=False):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), Start: T.Tensor((1,), T.int32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((N,), T.float32)
            acc = T.alloc_fragment((N,), T.float32)
            bar = T.alloc_barrier(128)
            T.clear(acc)
            for k in T.serial(Start[0], 5):  # a bound known only at run time
                if consumer_first:
                    T.barrier_wait(bar, (k - Start[0]) % 2)
                for i in T.Parallel(N):
                    s[i] = A[i] * k
                T.barrier_arrive(bar)
                if not consumer_first:
                    T.barrier_wait(bar, (k - Start[0]) % 2)
                for i in T.Parallel(N):
                    acc[i] += s[i]
            T.copy(acc, B)

    return main


def test_run_time_loop_bound_keeps_program_order(dev):
    """The barriers cannot be run (the loop's start is a tensor value): program order stands
    because every wait follows its arrive in the same loop body."""
    a = torch.randn(70, device=dev)
    start = torch.tensor([2], dtype=torch.int32, device=dev)
    assert_close(run_time_start(70)(a, start), a.double().cpu() * (2 + 3 + 4), 1e-5, 1e-6)


def test_run_time_loop_bound_with_wait_first_is_refused():
    with pytest.raises(TileLangCompileError) as info:
        run_time_start(70, True)(torch.randn(70), torch.tensor([2], dtype=torch.int32))
    message = str(info.value)
    assert "cannot order the warp-specialized sections around the barriers in this loop" in message
    assert "its bounds are not known at compile time" in message
    assert "for k in T.serial(Start[0], 5):" in message  # the loop's line


# ------------------------------------------------------------------ T.ws sections written two more ways (TileOPs)
@tilelang.jit(out_idx=[-1])
def ws_ring(N, BN, stages, siblings):
    """A TMA producer (warp group 1) and a consumer (warp group 0) over a ring, the producer first in
    program order and waiting on `free` first: either ``if tx >= 128: with T.ws(1): ... else: with
    T.ws(0): ...`` or the two ``with T.ws(k):`` blocks one after the other."""

    @T.prim_func
    def main(A: T.Tensor((N, 32), T.float32), n_tiles: T.int32, O: T.Tensor((32,), T.float32)):
        with T.Kernel(1, threads=256):
            S = T.alloc_shared((stages, BN, 32), T.float32)
            acc = T.alloc_local((1,), T.float32)
            full = T.alloc_barrier([128] * stages)
            free = T.alloc_barrier([128] * stages)
            tx = T.get_thread_binding()

            @T.macro
            def producer():
                for t in T.serial(n_tiles):
                    st = t % stages
                    T.mbarrier_wait_parity(free[st], ((t // stages) % 2) ^ 1)
                    T.tma_copy(A[t * BN : (t + 1) * BN, :], S[st, :, :], barrier=full[st])
                    T.mbarrier_arrive(full[st])

            @T.macro
            def consumer():
                acc[0] = 0
                for t in T.serial(n_tiles):
                    st = t % stages
                    T.mbarrier_wait_parity(full[st], (t // stages) % 2)
                    for j in T.serial(BN):
                        acc[0] += S[st, j, tx % 32]
                    T.mbarrier_arrive(free[st])
                if tx < 32:
                    O[tx] = acc[0]

            if siblings:
                with T.ws(1):
                    producer()
                with T.ws(0):
                    consumer()
            else:
                if tx >= 128:
                    with T.ws(1):
                        producer()
                else:
                    with T.ws(0):
                        consumer()

    return main


@pytest.mark.parametrize("siblings", [False, True])
def test_ws_sections_written_as_blocks(dev, siblings):
    """Both forms were refused ("waits for an arrive that comes later in program order"): the
    sections are now read as one if/elif chain and their loops fused."""
    N, BN = 56, 8
    A = torch.randn(N, 32, device=dev)
    O = ws_ring(N, BN, 2, siblings)(A, N // BN)
    assert_close(O, A.double().sum(0), atol=1e-4, rtol=1e-4)
