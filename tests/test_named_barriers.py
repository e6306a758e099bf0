"""Named barriers and the other block barriers of TileLang (issue 26): ``T.named_barrier_arrive(id, n)``
(PTX ``bar.arrive``), ``T.sync_threads(id, n)`` (``bar.sync``), ``T.tvm_storage_sync("shared")``
(``__syncthreads``), and ``T.annotate_restrict_buffers`` (accepted, no effect).

The named-barrier kernels are written with the waiting side first in program order, so running
the sections one after another in program order would read a slot not yet filled: a result that
matches the float64 reference shows warp_sections ordered them by the barriers
(frontend/warp_sections.py runs named barriers as it runs mbarriers).
"""

import pytest
import torch
from t2t_util import assert_close, assert_equal

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import TileLangCompileError

pytestmark = pytest.mark.poison_empty


# ------------------------------------------------------------------ TileLang's issue 2188, its own kernel
@tilelang.jit(out_idx=[1])
def hand_over():
    @T.prim_func
    def kernel(inp: T.Tensor((1,), T.int32), out: T.Tensor((1,), T.int32)):
        with T.Kernel(1, threads=64) as _:
            tx = T.get_thread_binding()
            slot = T.alloc_shared((1,), T.int32)
            if tx < 32:
                if tx == 0:
                    slot[0] = inp[0] + 1
                T.named_barrier_arrive(10, 64)
                T.sync_threads(11, 64)
            else:
                T.sync_threads(10, 64)
                if tx == 32:
                    out[0] = slot[0]
                T.named_barrier_arrive(11, 64)

    return kernel


def test_issue_2188_hand_over(dev):
    value = int(torch.randint(-1000, 1000, ()).item())
    out = hand_over()(torch.tensor([value], dtype=torch.int32, device=dev))
    assert_equal(out, torch.tensor([value + 1], dtype=torch.int32))


# ------------------------------------------------------------------ a ping-pong over a loop: the consumer first
@tilelang.jit(out_idx=[-1])
def ping_pong(N, trips, consumer_first=True):
    @T.prim_func
    def main(A: T.Tensor((trips, N), T.float32), Out: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=128) as _:
            tx = T.get_thread_binding()
            slot = T.alloc_shared((64,), T.float32)
            acc = T.alloc_local((1,), T.float32)
            if (tx < 64) == consumer_first:  # the consumer: warps 0-1 (or 2-3)
                c = tx % 64
                acc[0] = 0
                for i in T.serial(trips):
                    T.sync_threads(1, 128)  # "full": the producer's row is in the slot
                    if c < N:
                        acc[0] += slot[c] * (i + 1)
                    T.named_barrier_arrive(2, 128)  # "empty": the slot may be refilled
                if c < N:
                    Out[c] = acc[0]
            else:
                p = tx % 64
                for i in T.serial(trips):
                    if p < N:
                        slot[p] = A[i, p]
                    T.named_barrier_arrive(1, 128)
                    T.sync_threads(2, 128)

    return main


@pytest.mark.parametrize("consumer_first", [True, False])
def test_ping_pong(dev, consumer_first):
    N, trips = 37, 5
    a = torch.randn(trips, N, device=dev)
    ref = (a.double().cpu() * torch.arange(1, trips + 1, dtype=torch.float64)[:, None]).sum(0)
    assert_close(ping_pong(N, trips, consumer_first)(a), ref, 1e-5, 1e-5)


# ------------------------------------------------------------------ bar.sync among a range of threads
@tilelang.jit(out_idx=[-1])
def partial_scan(N, threads):
    """A Hillis-Steele prefix sum by the first N threads, synchronised by named barrier 3 among
    them alone (as TileLang's topk selector does): the other threads never reach it."""

    @T.prim_func
    def main(A: T.Tensor((N,), T.int32), Out: T.Tensor((N,), T.int32)):
        with T.Kernel(1, threads=threads) as _:
            tx = T.get_thread_binding()
            s = T.alloc_shared((N,), T.int32)
            v = T.alloc_var(T.int32)
            if tx < N:
                s[tx] = A[tx]
                for k in T.serial(6):
                    offset = 1 << k
                    T.sync_threads(3, N)
                    v = s[tx]
                    if tx >= offset:
                        v = v + s[tx - offset]
                    T.sync_threads(3, N)
                    s[tx] = v
                T.sync_threads(3, N)
                Out[tx] = s[tx]

    return main


def test_named_sync_in_a_thread_range(dev):
    N = 40  # 6 doubling steps cover it
    a = torch.randint(-50, 50, (N,), dtype=torch.int32, device=dev)
    assert_equal(partial_scan(N, 96)(a), torch.cumsum(a.cpu(), 0).to(torch.int32))


# ------------------------------------------------------------------ T.tvm_storage_sync and T.annotate_restrict_buffers
@tilelang.jit(out_idx=[-1])
def rotate(N):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32), C: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=64) as _:
            T.annotate_restrict_buffers(A, B)
            tx = T.get_thread_binding()
            a_s = T.alloc_shared((N,), T.float32)
            b_s = T.alloc_shared((N,), T.float32)
            if tx < N:
                a_s[tx] = A[tx]
                b_s[tx] = B[tx]
            T.tvm_storage_sync("shared")
            T.tvm_storage_sync("warp")  # no barrier (TileLang's CUDA codegen prints none)
            if tx < N:  # each thread reads its neighbours' elements
                C[tx] = a_s[(tx + 1) % N] + b_s[(tx + N - 1) % N]

    return main


def test_tvm_storage_sync(dev):
    N = 45
    a, b = torch.randn(N, device=dev), torch.randn(N, device=dev)
    ref = a.double().cpu().roll(-1) + b.double().cpu().roll(1)
    assert_close(rotate(N)(a, b), ref, 1e-6, 1e-6)


def test_tvm_storage_sync_global_is_refused():
    @T.prim_func
    def main(A: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=32) as _:
            T.tvm_storage_sync("global")
            A[0] = 1.0

    with pytest.raises(TileLangCompileError, match="global storage sync"):
        tilelang.compile(main)


# ------------------------------------------------------------------ what no order can satisfy, and bad arguments
def test_sync_that_never_completes_is_refused():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as _:
            tx = T.get_thread_binding()
            if tx < 32:
                T.sync_threads(5, 128)  # 128 threads, and only 64 exist
                A[tx] = 1.0

    with pytest.raises(TileLangCompileError, match="named barrier until its thread count has arrived") as info:
        tilelang.compile(main)
    assert "test_named_barriers.py" in str(info.value)


def test_named_barrier_id_out_of_range():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as _:
            T.named_barrier_arrive(16, 64)
            A[0] = 1.0

    with pytest.raises(TileLangCompileError, match="named barrier id is from 0 to 15"):
        tilelang.compile(main)


def test_annotate_restrict_buffers_takes_buffers():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as _:
            T.annotate_restrict_buffers(A, 3)
            A[0] = 1.0

    with pytest.raises(TileLangCompileError, match="expects buffers"):
        tilelang.compile(main)


def test_compile_for_hopper(tmp_path):
    from test_fuzz_regressions import compile_for_hopper

    compile_for_hopper(ping_pong(37, 5), tmp_path)
    compile_for_hopper(rotate(45), tmp_path)
