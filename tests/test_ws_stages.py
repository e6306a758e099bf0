"""Issue 23 (minference's vertical-slash attention, mhc_pre): the switches of runtime/tuning.py and
codegen that follow a kernel's structure.

- ``TILE2TRITON_WS_WARPS`` (on): a warp-specialized source whose producer section only copies into
  shared memory launches with its consumers' warps (``Kernel.compute_threads``).
- ``TILE2TRITON_FORWARD_STAGES`` (on): a copy out of one stage of a staged buffer (``buf[i % 2]``)
  reads the tile a copy into that whole stage wrote earlier in the same statement list.
- ``TILE2TRITON_GLOBAL_MIRRORS`` (on): a shared index list that only holds a copy of global elements
  is read from the global tensor after the copy.
- ``TILE2TRITON_REG_WARPS`` (off: slower on the H200): an mma.sync gemm loop (fewer than 64
  rows) whose register tiles a thread of the source's warps cannot hold takes more warps.
"""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.runtime import tuning

pytestmark = pytest.mark.poison_empty
HOPPER = (9, 0)


# ------------------------------------------------------------------ a TMA producer and a consumer
@tilelang.jit(out_idx=[-1])
def tma_ring(M, N, stages=2, store_producer=False):
    BN = 64
    trips = T.ceildiv(N, BN)

    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), Out: T.Tensor((M, BN), T.float32)):
        with T.Kernel(M, threads=256) as bm:
            buf = T.alloc_shared((stages, BN), T.float32)
            acc = T.alloc_fragment((BN,), T.float32)
            full = T.alloc_barrier([128] * stages)
            empty = T.alloc_barrier([128] * stages)
            tx = T.get_thread_binding()
            if tx >= 128:
                for i in T.serial(trips):
                    T.mbarrier_wait_parity(empty[i % stages], ((i // stages) % 2) ^ 1)
                    if store_producer:  # an element a thread: the producer computes its values
                        if tx - 128 < BN:
                            col = i * BN + (tx - 128)
                            buf[i % stages, tx - 128] = T.if_then_else(col < N, A[bm, T.min(col, N - 1)] * 2, 0)
                    else:
                        T.copy(A[bm, i * BN : (i + 1) * BN], buf[i % stages, :])
                    T.mbarrier_arrive(full[i % stages])
            else:
                T.clear(acc)
                for i in T.serial(trips):
                    T.mbarrier_wait_parity(full[i % stages], (i // stages) % 2)
                    for j in T.Parallel(BN):
                        acc[j] += buf[i % stages, j] * (i + 1)
                    T.mbarrier_arrive(empty[i % stages])
                T.copy(acc, Out[bm, 0])

    return main


def ring_ref(a, scale=1.0):
    m, n = a.shape
    trips = -(-n // 64)
    padded = torch.zeros(m, trips * 64, dtype=torch.float64)
    padded[:, :n] = a.double().cpu() * scale
    return (padded.view(m, trips, 64) * torch.arange(1, trips + 1, dtype=torch.float64)[None, :, None]).sum(1)


def test_copy_producer_leaves_the_consumers_threads():
    assert tma_ring(3, 200).prim_func.kernels[0].compute_threads == 128
    # a producer that computes the values it stores is a section of its own: all threads count
    assert tma_ring(3, 200, store_producer=True).prim_func.kernels[0].compute_threads is None


def test_ws_warps_launches_the_consumers(monkeypatch):
    func = tma_ring(3, 200).prim_func
    monkeypatch.setenv("TILE2TRITON_WS_WARPS", "0")
    assert tuning.heuristic(func, HOPPER).num_warps in (None, 8)  # the source's 256 threads
    monkeypatch.setenv("TILE2TRITON_WS_WARPS", "1")
    assert tuning.heuristic(func, HOPPER).num_warps == 4
    assert tuning.heuristic(tma_ring(3, 200, store_producer=True).prim_func, HOPPER).num_warps in (None, 8)
    assert tuning.heuristic(func, (8, 0)) == tuning.LITERAL  # measured on sm_90 only


@pytest.mark.parametrize("store_producer", [False, True])
def test_ws_ring_results(dev, store_producer):
    a = torch.randn(3, 200, device=dev)
    assert_close(tma_ring(3, 200, store_producer=store_producer)(a), ring_ref(a, 2.0 if store_producer else 1.0), 1e-4, 1e-5)


# ------------------------------------------------------------------ staged rows gathered by an index list
@tilelang.jit(out_idx=[-1])
def staged_rows(M, N, D, L, prefetch):
    BN, LP = 16, 8  # LP: the index list padded to a power of two

    @T.prim_func
    def main(
        A: T.Tensor((N, D), T.float32),
        Idx: T.Tensor((M, L), T.int32),
        Count: T.Tensor((M,), T.int32),
        Out: T.Tensor((M, BN, D), T.float32),
    ):
        with T.Kernel(M, threads=128) as bm:
            idx_s = T.alloc_shared((LP,), T.int32)
            buf = T.alloc_shared((2, BN, D), T.float32)
            frag = T.alloc_fragment((BN, D), T.float32)
            acc = T.alloc_fragment((BN, D), T.float32)
            count = T.alloc_var(T.int32)
            count = Count[bm]
            for v in T.Parallel(LP):
                if v < L:
                    idx_s[v] = Idx[bm, v]
            T.clear(acc)
            if prefetch:  # the next stage written before this one is read (MInference's column loop)
                T.copy(A[idx_s[0] : idx_s[0] + BN, :], buf[0, :, :])
                for i in T.serial(count):
                    if i + 1 < count:
                        T.copy(A[idx_s[i + 1] : idx_s[i + 1] + BN, :], buf[(i + 1) % 2, :, :])
                    T.copy(buf[i % 2, :, :], frag)
                    for r, c in T.Parallel(BN, D):
                        acc[r, c] += frag[r, c] * (i + 1)
            else:  # each stage written, then read, in one iteration (the slash loop)
                for i in T.serial(count):
                    T.copy(A[idx_s[i] : idx_s[i] + BN, :], buf[i % 2, :, :])
                    T.copy(buf[i % 2, :, :], frag)
                    for r, c in T.Parallel(BN, D):
                        acc[r, c] += frag[r, c] * (i + 1)
            T.copy(acc, Out[bm, :, :])

    return main


def staged_ref(a, idx, count):
    out = torch.zeros(idx.shape[0], 16, a.shape[1], dtype=torch.float64)
    for m in range(idx.shape[0]):
        for i in range(int(count[m])):
            r = int(idx[m, i])
            out[m] += a[r : r + 16].double().cpu() * (i + 1)
    return out


@pytest.mark.parametrize("prefetch", [False, True])
@pytest.mark.parametrize("switches", ["", "TILE2TRITON_FORWARD_STAGES", "TILE2TRITON_GLOBAL_MIRRORS", "both"])
def test_staged_rows(dev, monkeypatch, prefetch, switches):
    for name in ("TILE2TRITON_FORWARD_STAGES", "TILE2TRITON_GLOBAL_MIRRORS"):
        monkeypatch.setenv(name, "1" if switches in (name, "both") else "0")
    m, n, d, length = 5, 100, 24, 7
    torch.manual_seed(1)
    a = torch.randn(n, d, device=dev)
    idx = torch.randint(0, n - 16, (m, length), dtype=torch.int32, device=dev)
    count = torch.tensor([7, 3, 1, 0, 5], dtype=torch.int32, device=dev)
    kernel = staged_rows(m, n, d, length, prefetch)
    assert_close(kernel(a, idx, count), staged_ref(a, idx, count), 1e-4, 1e-5)


def test_staged_rows_source(monkeypatch):
    # FORWARD_STAGES alone: with TILE2TRITON_FORWARD_RINGS (tests/test_forward_rings.py) the prefetching
    # loop's ring is read at its source before lowering (its guard holds wherever a slot is read)
    monkeypatch.setenv("TILE2TRITON_FORWARD_RINGS", "0")
    monkeypatch.setenv("TILE2TRITON_FORWARD_STAGES", "0")
    monkeypatch.setenv("TILE2TRITON_GLOBAL_MIRRORS", "0")
    plain = staged_rows(5, 100, 24, 7, False).lowered_for("sm_90").source
    monkeypatch.setenv("TILE2TRITON_FORWARD_STAGES", "1")
    monkeypatch.setenv("TILE2TRITON_GLOBAL_MIRRORS", "1")
    both = staged_rows(5, 100, 24, 7, False).lowered_for("sm_90").source
    prefetch = staged_rows(5, 100, 24, 7, True).lowered_for("sm_90").source
    assert "buf_stage" not in plain and "buf_stage" in both
    # the read of the stage just written is that tile, not a select out of the two stages
    assert both.count("tl.sum(tl.where(tl.arange(0, 2)") == 0 < plain.count("tl.sum(tl.where(tl.arange(0, 2)")
    # the prefetching loop reads the stage written in the iteration before: a select still
    assert "tl.sum(tl.where(tl.arange(0, 2)" in prefetch
    # the index list is read from Idx in the loop, not selected out of its staged tile
    assert "tl.arange(0, 8) ==" in plain and "tl.arange(0, 8) ==" not in both


# ------------------------------------------------------------------ mhc_pre's gemm + sqrsum shape
@tilelang.jit(out_idx=[-1])
def thin_tf32_gemm(M, K, block_k):
    @T.prim_func
    def main(X: T.Tensor((M, K), T.bfloat16), W: T.Tensor((32, K), T.float32), Out: T.Tensor((M, 32), T.float32)):
        with T.Kernel(T.ceildiv(M, 32)) as px:
            acc = T.alloc_fragment((32, 32), T.float32)
            T.clear(acc)
            for k in T.Pipelined(K // block_k, num_stages=2):
                xs = T.alloc_shared((32, block_k), T.bfloat16)
                ws = T.alloc_shared((32, block_k), T.float32)
                T.copy(X[px * 32, k * block_k], xs)
                T.copy(W[0, k * block_k], ws)
                xf = T.alloc_fragment((32, block_k), T.float32)
                T.copy(xs, xf)
                T.gemm(xf, ws, acc, transpose_B=True)
            T.copy(acc, Out[px * 32, 0])

    return main


def test_reg_warps(monkeypatch):
    monkeypatch.setenv("TILE2TRITON_REG_WARPS", "0")
    wide, narrow = thin_tf32_gemm(64, 1024, 256).prim_func, thin_tf32_gemm(64, 1024, 32).prim_func
    assert tuning.heuristic(wide, HOPPER).num_warps is None
    monkeypatch.setenv("TILE2TRITON_REG_WARPS", "1")
    # 32 x 256 fp32 fragment and operand, 32 x 256 bf16 tile, 32 x 32 accumulator: 168 a thread at 4 warps
    assert tuning.heuristic(wide, HOPPER).num_warps == 8
    assert tuning.heuristic(narrow, HOPPER).num_warps is None  # 32-wide steps fit 4 warps


def test_thin_gemm_result(dev, monkeypatch):
    monkeypatch.setenv("TILE2TRITON_REG_WARPS", "1")
    x = torch.randn(70, 512, device=dev).bfloat16()
    w = torch.randn(32, 512, device=dev)
    out = thin_tf32_gemm(70, 512, 256)(x, w)
    assert_close(out, x.double().cpu() @ w.double().cpu().T, 2e-2, 2e-2)


# ------------------------------------------------------------------ thread-range sections without barriers
@tilelang.jit(out_idx=[-1])
def split_sections(M, N, wide_outside=False):
    @T.prim_func
    def main(A: T.Tensor((M, 4, N), T.float32), W: T.Tensor((M, 4), T.float32), Out: T.Tensor((M, N), T.float32)):
        with T.Kernel(M, threads=96) as bm:
            w = T.alloc_shared((4,), T.float32)
            total = T.alloc_fragment((128,) if wide_outside else (4,), T.float32)
            T.clear(total)
            if T.get_thread_binding() < 32:  # one warp: the weights
                for j in T.Parallel(4):
                    w[j] = T.sigmoid(W[bm, j])
            else:  # two warps: the weighted sum of the rows
                acc = T.alloc_fragment((N,), T.float32)
                T.clear(acc)
                for r in T.serial(4):
                    for j in T.Parallel(N):
                        acc[j] += T.sigmoid(W[bm, r]) * A[bm, r, j]
                T.copy(acc, Out[bm, 0])

    return main


def test_section_warps(monkeypatch):
    func = split_sections(3, 200).prim_func
    assert func.kernels[0].section_threads == 64
    assert split_sections(3, 200, wide_outside=True).prim_func.kernels[0].section_threads is None
    monkeypatch.setenv("TILE2TRITON_SECTION_WARPS", "0")
    assert tuning.heuristic(func, HOPPER).num_warps is None  # 96 threads: 4 warps
    monkeypatch.setenv("TILE2TRITON_SECTION_WARPS", "1")
    assert tuning.heuristic(func, HOPPER).num_warps == 2
    # kernels of other structures keep their warps: barrier-ordered sections, no sections at all
    assert tuning.heuristic(tma_ring(3, 200, store_producer=True).prim_func, HOPPER).num_warps in (None, 8)
    assert tuning.heuristic(thin_tf32_gemm(64, 1024, 32).prim_func, HOPPER).num_warps is None


def test_split_sections_result(dev, monkeypatch):
    monkeypatch.setenv("TILE2TRITON_SECTION_WARPS", "1")
    a, w = torch.randn(3, 4, 200, device=dev), torch.randn(3, 4, device=dev)
    ref = (torch.sigmoid(w.double().cpu())[:, :, None] * a.double().cpu()).sum(1)
    assert_close(split_sections(3, 200)(a, w), ref, 1e-4, 1e-5)
