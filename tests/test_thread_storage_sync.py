"""``pass_configs={TL_DISABLE_THREAD_STORAGE_SYNC: True}`` (``LoweringOptions.user_syncs``; the barrier
model of codegen/scratch.py): TileLang then places no barrier of its own, and tile2triton places none
between the accesses of one lane where one lane is one hardware thread (the thread view of a 1-D
block whose threads fill its warps, ``values.lanes_are_threads``).  It keeps them where Triton may
put an element on another thread than TileLang does: tile operations, ``T.Parallel``, a block whose
lane tile is padded, and a loop widened into a tile axis, which restarts the kernel's lowering
without the relaxation.  Each kernel runs with the config and without it and is checked exactly
(on the interpreter here; ``TILE2TRITON_TEST_DEVICE=cuda`` runs the same on the GPU, where the
barriers matter)."""

import pytest
import torch
from t2t_util import poison
from test_warp_atomics import check_sort, skewed, sort_by_bins

import tile2triton as tilelang
import tile2triton.language as T

USER_SYNCS = {tilelang.PassConfigKey.TL_DISABLE_THREAD_STORAGE_SYNC: True}


def barriers(kernel) -> tuple[int, int]:
    """(barriers at the source's T.sync_threads(), others) in the kernel's sm_90 source."""
    lines = kernel.lowered_for("sm_90").source.splitlines()
    at_sync = other = 0
    for i, line in enumerate(lines):
        if line.strip() == "tl.debug_barrier()":
            if "sync_threads(" in lines[i - 1]:
                at_sync += 1
            else:
                other += 1
    return at_sync, other


@pytest.mark.parametrize("threads, step", [(128, 3), (64, 1)])
def test_slot_claims_without_model_barriers(dev, threads, step):
    """A counting sort: a lane's slot claims in a loop (pos = atomic_add(start[v], step, return_prev))
    need no barrier between them under the config; without it the model places them."""
    rows, n, bins = 3, 301, 600  # past the one-hot limit: the shared buffers are in scratch
    a = skewed(rows, n, bins)
    kernels = {}
    for configs in (None, USER_SYNCS):
        kernel = tilelang.compile(sort_by_bins(rows, n, threads, bins, step), pass_configs=configs)
        out = torch.full((rows, n), -7, dtype=torch.int32, device=dev)
        c = torch.full((rows, bins), -7, dtype=torch.int32, device=dev)
        kernel(a.to(dev), out, c)
        check_sort(a, out, c, bins, step)
        kernels[configs is not None] = kernel
    plain, relaxed = barriers(kernels[False]), barriers(kernels[True])
    assert plain[0] == relaxed[0] == 4  # the source's own four
    assert plain[1] > 0 and relaxed[1] == 0


def test_padded_lanes_keep_model_barriers():
    """96 threads: the lane tile is 128 long over 4 warps, so lane i need not be TileLang's thread i."""
    rows, n, bins = 2, 150, 600
    plain = tilelang.compile(sort_by_bins(rows, n, 96, bins, 1))
    relaxed = tilelang.compile(sort_by_bins(rows, n, 96, bins, 1), pass_configs=USER_SYNCS)
    assert barriers(relaxed) == barriers(plain) and barriers(plain)[1] > 0


def parallel_then_lanes(n, threads):
    """A T.Parallel store into a scratch buffer, read back by each thread at its own index with no
    T.sync_threads() between: T.Parallel's element of a thread is Triton's layout, not the lane."""

    @T.prim_func
    def main(A: T.Tensor((n,), "int32"), O: T.Tensor((n,), "int32")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            buf = T.alloc_shared((n,), "int32")
            count = T.alloc_shared((1,), "int32")
            if tx == 0:
                count[0] = 0
            T.sync_threads()
            for i in T.Parallel(n):
                buf[i] = A[i] * 3
            O[tx] = buf[tx] + T.atomic_add(count[0], 1, return_prev=True) * 0

    return main


def test_parallel_access_keeps_its_barrier(dev, monkeypatch):
    monkeypatch.setenv("TILE2TRITON_SHARED_SCRATCH", "1")
    n = threads = 128
    a = torch.randint(-1000, 1000, (n,), dtype=torch.int32)
    plain = tilelang.compile(parallel_then_lanes(n, threads))
    relaxed = tilelang.compile(parallel_then_lanes(n, threads), pass_configs=USER_SYNCS)
    assert barriers(relaxed) == barriers(plain) and barriers(relaxed)[1] >= 1
    out = torch.full((n,), -7, dtype=torch.int32, device=dev)
    relaxed(a.to(dev), out)
    assert torch.equal(out.cpu(), a * 3)


def widened_loop(n, threads, k):
    """A loop whose body stores a lane's element and, in a loop over a per-thread array, reads k
    elements back (local_loops.py widens that inner loop into a tile axis: no longer the lane's own)."""

    @T.prim_func
    def main(A: T.Tensor((n * k,), "float32"), O: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            buf = T.alloc_shared((threads * k,), "float32")
            part = T.alloc_local((k,), "float32")
            acc = T.alloc_var("float32")
            acc = 0.0
            for s in T.serial(T.ceildiv(n, threads)):
                for j in T.serial(k):
                    if s * threads + tx < n:
                        buf[tx * k + j] = A[(s * threads + tx) * k + j]
                for j in T.vectorized(k):
                    part[j] = buf[tx * k + j]
                for j in T.serial(k):
                    acc += part[j]
                if s * threads + tx < n:
                    O[s * threads + tx] = acc
                acc = 0.0

    return main


def test_widened_loop_restarts_without_the_relaxation(dev, monkeypatch):
    monkeypatch.setenv("TILE2TRITON_SHARED_SCRATCH", "1")
    n, threads, k = 300, 128, 4
    a = torch.randn(n * k)
    plain = tilelang.compile(widened_loop(n, threads, k))
    relaxed = tilelang.compile(widened_loop(n, threads, k), pass_configs=USER_SYNCS)
    assert relaxed.lowered_for("sm_90").source == plain.lowered_for("sm_90").source
    out = poison((n,), device=dev)
    relaxed(a.to(dev), out)
    torch.testing.assert_close(out.cpu().double(), a.double().reshape(n, k).sum(1), rtol=1e-5, atol=1e-5)
