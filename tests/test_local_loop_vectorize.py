"""Loops over the elements of per-thread local arrays (thread view, and locals of a T.Parallel
body) become a trailing tile axis (codegen/local_loops.py): ``for k in T.vectorized(n): L[k] = A[..k]``
is one ``[threads..., n]`` load and ``for k in T.serial(n): acc[0] += L[k] * M[k]`` one ``tl.sum``.
Every kernel runs under the interpreter against torch; loops whose iterations depend on each other
keep the loop and stay exact."""

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T


def gemv_threads(N, K, BLOCK_N, reduce_threads, TILE_K, dtype="float16"):
    """TileLang's examples/gemv ``splitk_gemv_vectorized`` shape: each thread loads TILE_K
    elements of a and of a row of b into local arrays, then sums their products."""
    BLOCK_K = reduce_threads * TILE_K

    @T.prim_func
    def main(A: T.Tensor((K,), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, BLOCK_N), threads=(BLOCK_N, reduce_threads)) as bn:
            tn = T.get_thread_binding(0)
            tk = T.get_thread_binding(1)
            A_local = T.alloc_local((TILE_K,), dtype)
            B_local = T.alloc_local((TILE_K,), dtype)
            C_shared = T.alloc_shared((BLOCK_N,), "float")
            C_accum = T.alloc_local((1,), "float")
            if tk == 0:
                C_shared[tn] = 0
            T.clear(C_accum)
            for bk in T.serial(T.ceildiv(K, BLOCK_K)):
                for k in T.vectorized(TILE_K):
                    A_local[k] = A[bk * BLOCK_K + tk * TILE_K + k]
                    B_local[k] = B[bn * BLOCK_N + tn, bk * BLOCK_K + tk * TILE_K + k]
                for k in T.serial(TILE_K):
                    C_accum[0] += A_local[k].astype("float") * B_local[k].astype("float")
            T.atomic_add(C_shared[tn], C_accum[0])
            C[bn * BLOCK_N + tn] = C_shared[tn]

    return main


def _code(kernel) -> str:
    src = kernel.get_kernel_source(interpret=False)
    return "\n".join(line for line in src.splitlines() if not line.strip().startswith("#"))


@pytest.mark.parametrize(
    "N, K, BLOCK_N, reduce_threads, TILE_K, dtype",
    [
        (150, 200, 2, 32, 8, "float16"),  # TileLang's configuration at sizes not multiples of the tile
        (37, 100, 4, 6, 6, "float32"),  # 6 elements per thread: a padded local axis, 6 threads
        (45, 90, 3, 8, 4, "bfloat16"),
    ],
)
def test_thread_view_gemv(dev, N, K, BLOCK_N, reduce_threads, TILE_K, dtype):
    kernel = tilelang.compile(gemv_threads(N, K, BLOCK_N, reduce_threads, TILE_K, dtype))
    tdt = getattr(torch, dtype)
    a = torch.randn(K, device=dev).to(tdt)
    b = torch.randn(N, K, device=dev).to(tdt)
    c = poison((N,), tdt, dev)
    kernel(a, b, c)
    assert_close(c, b.double() @ a.double(), atol=5e-2, rtol=2e-2)


def test_thread_view_gemv_source_has_no_element_loop():
    src = _code(tilelang.compile(gemv_threads(150, 200, 2, 32, 8), target="cuda"))
    # each local array is loaded whole along a trailing axis of the thread tile, and summed along it
    assert "k = tl.arange(0, 8)[None, None, :]" in src
    assert "B_local = tl.load(B + offs" in src
    assert "tl.sum(A_local.to(tl.float32) * B_local.to(tl.float32), axis=2)" in src
    # no per-element one-hot update or extraction, and no loop over the 8 elements
    assert "== k" not in src and "for k" not in src
    assert src.count("for ") == 1  # the K-step loop


@tilelang.jit
def fill_scale_store(N, V, threads):
    """Fill a local array with a loop-invariant scale, under a per-thread condition, then store it
    from a second loop (each iteration writes its own element of B)."""

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), S: T.Tensor((threads,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, threads * V), threads=threads) as bx:
            tx = T.get_thread_binding(0)
            L = T.alloc_local((V,), "float32")
            s = T.alloc_local((1,), "float32")
            s[0] = S[tx]
            base = bx * threads * V + tx * V
            for k in T.serial(V):
                L[k] = -1.0
            if tx % 3 != 1:
                for k in T.vectorized(V):
                    L[k] = A[base + k] * s[0] + k
            for k in T.unroll(V):
                B[base + k] = L[k]

    return main


def test_fill_under_condition_then_store(dev):
    N, V, threads = 500, 5, 24
    a = torch.randn(N, device=dev)
    scale = torch.randn(threads, device=dev)
    b = poison((N,), device=dev)
    kernel = fill_scale_store(N, V, threads)
    kernel(a, scale, b)
    idx = torch.arange(N)
    tx = (idx // V) % threads
    ref = a.cpu().double() * scale.cpu().double()[tx] + (idx % V)
    ref = torch.where(tx % 3 != 1, ref, torch.full_like(ref, -1.0))
    assert_close(b, ref, atol=1e-5, rtol=1e-5)
    src = _code(kernel)
    assert "for k" not in src  # the three loops are tile axes
    assert "= tl.arange(0, 8)[None, :]" in src  # the 5 elements, padded, after the thread axis
    assert "tl.store(B + offs_1, L, mask=" in src


@tilelang.jit
def local_prefix(N, V, threads):
    """A loop whose iterations depend on each other (a running sum in a local array) keeps the loop."""

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, threads * V), threads=threads) as bx:
            tx = T.get_thread_binding(0)
            L = T.alloc_local((V,), "float32")
            acc = T.alloc_local((1,), "float32")
            base = bx * threads * V + tx * V
            for k in T.vectorized(V):
                L[k] = A[base + k]
            for k in T.serial(V - 1):
                L[k + 1] = L[k + 1] + L[k]
            acc[0] = 0
            for k in T.serial(V):
                acc[0] = acc[0] * 0.5 + L[k]  # not a sum: the loop stays
            for k in T.serial(V):
                B[base + k] = L[k] + acc[0]

    return main


def test_dependent_loops_keep_their_order(dev):
    N, V, threads = 300, 4, 20
    a = torch.randn(N, device=dev)
    b = poison((N,), device=dev)
    kernel = local_prefix(N, V, threads)
    kernel(a, b)
    rows = torch.nn.functional.pad(a.cpu().double(), (0, (-N) % V)).view(-1, V)
    pre = rows.cumsum(1)
    acc = torch.zeros(rows.shape[0], dtype=torch.float64)
    for k in range(V):
        acc = acc * 0.5 + pre[:, k]
    ref = (pre + acc[:, None]).reshape(-1)[:N]
    assert_close(b, ref, atol=1e-5, rtol=1e-5)
    src = _code(kernel)
    # L is held one value per element (passes/held_locals.py), the loops that index it unrolled
    assert "L_1 = L_1 + L_0" in src and "L_3 = L_3 + L_2" in src and "acc = acc * 0.5 + L_3" in src
    assert "for " not in src and "tl.sum" not in src


@tilelang.jit
def parallel_local_dot(M, V):
    """Locals allocated inside a T.Parallel body: one array per iteration, filled and summed."""

    @T.prim_func
    def main(A: T.Tensor((M, V), "float32"), W: T.Tensor((V,), "float32"), B: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, 64), threads=64) as bx:
            for i in T.Parallel(64):
                row = T.alloc_local((V,), "float32")
                acc = T.alloc_local((1,), "float32")
                for k in T.vectorized(V):
                    row[k] = A[bx * 64 + i, k]
                acc[0] = 1.0
                for k in T.serial(V):
                    acc[0] += row[k] * W[k]
                B[bx * 64 + i] = acc[0]

    return main


def test_parallel_local_arrays(dev):
    M, V = 150, 7
    a = torch.randn(M, V, device=dev)
    w = torch.randn(V, device=dev)
    b = poison((M,), device=dev)
    kernel = parallel_local_dot(M, V)
    kernel(a, w, b)
    assert_close(b, a.cpu().double() @ w.cpu().double() + 1.0, atol=1e-5, rtol=1e-5)
    src = _code(kernel)
    assert "for k" not in src and "tl.sum(" in src


@tilelang.jit
def shared_columns(N, threads, V):
    """Locals filled from a block-level buffer at ``[k, tx]`` and a local array half filled by a
    loop shorter than it."""

    @T.prim_func
    def main(A: T.Tensor((V, N), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, threads), threads=threads) as bx:
            tx = T.get_thread_binding(0)
            S = T.alloc_shared((V, threads), "float32")
            T.copy(A[0, bx * threads], S)
            T.sync_threads()
            L = T.alloc_local((V,), "float32")
            H = T.alloc_local((2 * V,), "float32")
            acc = T.alloc_local((1,), "float32")
            for k in T.vectorized(V):
                L[k] = S[k, tx]
            for k in T.serial(2 * V):
                H[k] = 0.25
            for k in T.serial(V):
                H[k] = L[k] * 3
            acc[0] = 0
            for k in T.serial(2 * V):
                acc[0] += H[k] * L[k % V]
            B[bx * threads + tx] = acc[0]

    return main


def test_block_buffer_and_partial_fill(dev):
    N, threads, V = 203, 32, 6
    a = torch.randn(V, N, device=dev)
    b = poison((N,), device=dev)
    kernel = shared_columns(N, threads, V)
    kernel(a, b)
    col = a.cpu().double()
    assert_close(b, (col * col * 3 + col * 0.25).sum(0), atol=1e-4, rtol=1e-5)
    src = _code(kernel)
    # L (read at k % V) and H (filled by a loop over half of it) are held by element, their loops unrolled
    assert "H_0 = L_0 * 3" in src and "acc = acc + H_11 * L_5" in src and "for " not in src
