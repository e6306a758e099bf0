"""Element atomics on a register-resident shared buffer, lowered as the block-level scatter-reduce
they mean (shared memory is private to the block; codegen/atomics.py ``_shared_scatter_reduce``):
values reduced over the lane axes the index does not name, or one-hot for irregular, colliding
positions, then combined with the buffer once.  Past the one-hot limit the buffer still moves to
global scratch and takes real atomics.  Outputs start NaN/sentinel-poisoned."""

import importlib.util
import sys

import pytest
import torch
from t2t_util import ROOT, assert_close, assert_equal, poison
from t2t_util import in_scratch as in_scratch_form
from test_fuzz_regressions import compile_for_hopper

import tile2triton as tilelang
import tile2triton.language as T

_spec = importlib.util.spec_from_file_location("vs_tilelang_bench", ROOT / "benchmarks" / "vs_tilelang.py")
vs_tilelang = sys.modules.setdefault("vs_tilelang_bench", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(vs_tilelang)


def code_of(kernel) -> str:
    src = kernel.get_kernel_source(interpret=False)
    return "\n".join(line for line in src.splitlines() if not line.strip().startswith("#"))


# ------------------------------------------------------------------ thread-view GEMV (benchmarks)
def gemv_threads(N, K, BLOCK_N, reduce_threads):
    factory = vs_tilelang.load_kernels("t2t").gemv_threads
    return tilelang.jit(factory)(N, K, BLOCK_N, reduce_threads)


@pytest.mark.parametrize("shape", [(30, 96, 2, 4), (42, 160, 6, 4), (70, 120, 5, 3)])
def test_thread_view_gemv(dev, shape):
    N, K = shape[:2]
    a = torch.randn(K, device=dev, dtype=torch.float16)
    b = torch.randn(N, K, device=dev, dtype=torch.float16)
    c = poison((N,), torch.float16, dev)
    gemv_threads(*shape)(a, b, c)
    assert_close(c, b.double() @ a.double(), atol=2e-2, rtol=2e-2)


def test_thread_view_gemv_source_has_no_scratch(tmp_path):
    kernel = gemv_threads(70, 120, 5, 3)
    code = code_of(kernel)
    assert "scratch" not in code and "debug_barrier" not in code and "atomic" not in code
    assert "C_shared = tl.reshape(C_shared[None, :] + tl.sum(" in code  # one reduction over the k threads
    compile_for_hopper(kernel, tmp_path)


# ------------------------------------------------------------------ per-thread conditions, max/min, int32
@tilelang.jit
def row_atomic(M, N, BR, BC, op, dtype):
    """Rows reduced into S[tr] by a (BR, BC) thread block: every thread's atomic on its row's
    slot, over the columns that pass a per-thread condition, on top of the row's first element."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), C: T.Tensor((M,), dtype)):
        with T.Kernel(T.ceildiv(M, BR), threads=(BR, BC)) as bx:
            tr = T.get_thread_binding(0)
            tc = T.get_thread_binding(1)
            S = T.alloc_shared((BR,), dtype)
            if tc == 0 and bx * BR + tr < M:
                S[tr] = A[bx * BR + tr, 0]
            T.sync_threads()
            for j in T.serial(T.ceildiv(N - 1, BC)):
                if bx * BR + tr < M and 1 + j * BC + tc < N and (j * BC + tc) % 3 != 1:
                    if op == "add":
                        T.atomic_add(S[tr], A[bx * BR + tr, 1 + j * BC + tc])
                    elif op == "max":
                        T.atomic_max(S[tr], A[bx * BR + tr, 1 + j * BC + tc])
                    else:
                        T.atomic_min(S[tr], A[bx * BR + tr, 1 + j * BC + tc])
            T.sync_threads()
            if tc == 0 and bx * BR + tr < M:
                C[bx * BR + tr] = S[tr]

    return main


def row_atomic_ref(a, op):
    cols = [0] + [c for c in range(1, a.shape[1]) if (c - 1) % 3 != 1]
    picked = a[:, cols].cpu()
    if op == "add":
        return picked.double().sum(1) if a.dtype.is_floating_point else picked.sum(1, dtype=a.dtype)
    return picked.amax(1) if op == "max" else picked.amin(1)


@pytest.mark.parametrize("op", ["add", "max", "min"])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_conditional_atomics(dev, op, dtype):
    M, N, BR, BC = 23, 50, 6, 7
    tdt = getattr(torch, dtype)
    a = torch.randn(M, N, device=dev) * 8 if dtype == "float32" else torch.randint(-999, 999, (M, N), device=dev)
    a = a.to(tdt)
    c = poison((M,), tdt, dev)
    kernel = row_atomic(M, N, BR, BC, op, dtype)
    kernel(a, c)
    ref = row_atomic_ref(a, op)
    if dtype == "float32" and op == "add":
        assert_close(c, ref, atol=1e-4, rtol=1e-5)
    else:
        assert_equal(c, ref)
    assert "scratch" not in code_of(kernel)


# ------------------------------------------------------------------ irregular, colliding positions
@tilelang.jit
def histogram(N, threads, BINS, dtype, op):
    """Per-block weighted histogram (sum, max or bitwise or per bin) of the elements not 1 mod 4: bins chosen
    by the data, so threads collide."""
    empty = -(10**6) if op == "max" else 0

    @T.prim_func
    def main(A: T.Tensor((N,), "int32"), W: T.Tensor((N,), dtype), H: T.Tensor((T.ceildiv(N, threads), BINS), dtype)):
        with T.Kernel(T.ceildiv(N, threads), threads=threads) as bx:
            hist = T.alloc_shared((BINS,), dtype)
            tx = T.get_thread_binding(0)
            for b in T.serial(T.ceildiv(BINS, threads)):
                if b * threads + tx < BINS:
                    hist[b * threads + tx] = empty
            T.sync_threads()
            if bx * threads + tx < N:
                if A[bx * threads + tx] % 4 != 1:  # a per-thread condition on the data
                    if op == "add":
                        T.atomic_add(hist[A[bx * threads + tx] % BINS], W[bx * threads + tx])
                    elif op == "or":
                        T.atomic_or(hist[A[bx * threads + tx] % BINS], W[bx * threads + tx])
                    else:
                        T.atomic_max(hist[A[bx * threads + tx] % BINS], W[bx * threads + tx])
            T.sync_threads()
            for b in T.serial(T.ceildiv(BINS, threads)):
                if b * threads + tx < BINS:
                    H[bx, b * threads + tx] = hist[b * threads + tx]

    return main


@pytest.mark.parametrize(
    "op,dtype", [("add", "int32"), ("add", "float32"), ("max", "int32"), ("max", "float32"), ("or", "int32")]
)
@pytest.mark.parametrize("bins,in_scratch", [(7, False), (200, True)])
def test_histogram_with_collisions(dev, dtype, bins, in_scratch, op):
    N, threads = 333, 96 if not in_scratch else 256
    tdt = getattr(torch, dtype)
    a = torch.randint(0, 1000, (N,), dtype=torch.int32, device=dev)
    w = torch.randint(-50, 50, (N,), device=dev).to(tdt) if dtype == "int32" else torch.randn(N, device=dev) - 1
    blocks = -(-N // threads)
    h = poison((blocks, bins), tdt, dev)
    kernel = histogram(N, threads, bins, dtype, op)
    kernel(a, w, h)
    empty = -(10**6) if op == "max" else 0
    ref = torch.full((blocks, bins), empty, dtype=torch.float64 if dtype == "float32" else torch.int64)
    for i, (v, x) in enumerate(zip(a.cpu().tolist(), w.cpu().tolist())):
        if v % 4 != 1:
            at = (i // threads, v % bins)
            combine = {"add": lambda r, x: r + x, "max": max, "or": lambda r, x: r | x}[op]
            ref[at] = combine(ref[at].item(), x)
    if dtype == "int32" or op == "max":
        assert_equal(h, ref.to(tdt))
    else:
        assert_close(h, ref, atol=1e-4, rtol=1e-5)
    # 128 lanes x 7 bins is a one-hot tile in registers; 256 lanes x 200 bins is past the limit.
    # T.atomic_or always returns the previous value (an exchange's result): real atomics on scratch
    assert in_scratch_form(code_of(kernel)) == (in_scratch or op == "or")


def test_histogram_compiles_for_hopper(tmp_path):
    compile_for_hopper(histogram(333, 96, 7, "float32", "max"), tmp_path)


# ------------------------------------------------------------------ block view: T.Parallel into shared
@tilelang.jit
def parallel_row_max(M, N, BM, BN):
    """``T.atomic_max(S[i], ...)`` in a (BM, BN) T.Parallel: reduced over j, block view."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, BM), threads=128) as bx:
            S = T.alloc_shared((BM,), "float32")
            for i in T.Parallel(BM):
                S[i] = -1e30
            for k in T.serial(T.ceildiv(N, BN)):
                for i, j in T.Parallel(BM, BN):
                    if k * BN + j < N:
                        T.atomic_max(S[i], A[bx * BM + i, k * BN + j])
            for i in T.Parallel(BM):
                if bx * BM + i < M:
                    C[bx * BM + i] = S[i]

    return main


def test_block_view_parallel_atomic_max(dev, tmp_path):
    M, N, BM, BN = 45, 70, 12, 24
    a = torch.randn(M, N, device=dev)
    c = poison((M,), torch.float32, dev)
    kernel = parallel_row_max(M, N, BM, BN)
    kernel(a, c)
    assert_equal(c, a.cpu().amax(1))
    assert "scratch" not in code_of(kernel)
    compile_for_hopper(kernel, tmp_path)


# ------------------------------------------------------------------ one-element shared counters
@tilelang.jit
def count_positive(N, threads):
    """A per-block count and sum of the positive elements, in one-element shared buffers."""

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((T.ceildiv(N, threads),), "int32"),
             S: T.Tensor((T.ceildiv(N, threads),), "float32")):  # fmt: skip
        with T.Kernel(T.ceildiv(N, threads), threads=threads) as bx:
            tx = T.get_thread_binding(0)
            count = T.alloc_shared((1,), "int32")
            total = T.alloc_shared((1,), "float32")
            count[0] = 0  # every thread stores the same zero (under `if tx == 0` the register path
            total[0] = 0  # refuses the store itself today, and both buffers move to scratch)
            T.sync_threads()
            if bx * threads + tx < N and A[bx * threads + tx] > 0:
                T.atomic_add(count[0], 1)
                T.atomic_add(total[0], A[bx * threads + tx])
            T.sync_threads()
            if tx == 0:
                C[bx] = count[0]
                S[bx] = total[0]

    return main


def test_one_element_counters(dev):
    N, threads = 301, 80
    blocks = -(-N // threads)
    a = torch.randn(N, device=dev)
    c, s = poison((blocks,), torch.int32, dev), poison((blocks,), torch.float32, dev)
    kernel = count_positive(N, threads)
    kernel(a, c, s)
    pad = torch.nn.functional.pad(a.cpu().double(), (0, blocks * threads - N)).view(blocks, threads)
    assert_equal(c, (pad > 0).sum(1).to(torch.int32))
    assert_close(s, pad.clamp(min=0).sum(1), atol=1e-4, rtol=1e-5)
    assert "scratch" not in code_of(kernel)
