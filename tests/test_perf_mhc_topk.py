"""Loops over a T.Parallel accumulation summed as one more tile axis, and register reads at a
mixed-radix index (``x[i, k * 4 + j]``) as a reshape of the tile (the sqrsum loop of TileLang's
mHC pre kernel: 64 x 64 one-hot selects of a 32 x 256 tile per program before)."""

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T


def _code(kernel) -> str:
    src = kernel.get_kernel_source(interpret=False)
    return "\n".join(line for line in src.splitlines() if not line.strip().startswith("#"))


@tilelang.jit
def sqrsum_rows(M, n, block_M, w, threads=128):
    """Per row, the sums of squares of the columns of each residue mod ``w`` (TileLang's
    ``sqrsum_part[i, j] += x[i, jj * 4 + j] ** 2``), then the row total."""

    @T.prim_func
    def main(X: T.Tensor((M, n * w), "float16"), S: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            xs = T.alloc_shared((block_M, n * w), "float16")
            xf = T.alloc_fragment((block_M, n * w), "float32")
            part = T.alloc_fragment((block_M, w), "float32")
            total = T.alloc_fragment((block_M,), "float32")
            T.copy(X[bx * block_M, 0], xs)
            T.copy(xs, xf)
            T.clear(part)
            for jj in T.serial(n):
                for i, j in T.Parallel(block_M, w):
                    part[i, j] += xf[i, jj * w + j] * xf[i, jj * w + j]
            T.reduce_sum(part, total, dim=1)
            for i in T.Parallel(block_M):
                S[bx * block_M + i] = total[i]

    return main


@pytest.mark.parametrize("M,n,block_M,w", [(70, 5, 32, 4), (45, 8, 16, 2), (33, 3, 32, 8)])
def test_parallel_sum_loop_split_read(dev, M, n, block_M, w):
    kernel = sqrsum_rows(M, n, block_M, w)
    x = torch.randn(M, n * w, device=dev).half()
    out = poison((M,), device=dev)
    kernel(x, out)
    assert_close(out, x.double().square().sum(1), atol=1e-3, rtol=1e-3)
    code = _code(kernel)
    # the loop is a tile axis summed away, and the read a reshape: no loop, no one-hot select
    assert "for jj" not in code and "tl.reshape(xf" in code and "==" not in code


def test_parallel_sum_loop_register_budget(dev):
    """64 iterations x 32 x 4 lanes are 256 values per thread of a 32-thread block: past the budget,
    the loop stays a loop (each iteration's read a select along the reshaped dim)."""
    M, n, block_M, w = 40, 64, 32, 4
    kernel = sqrsum_rows(M, n, block_M, w, threads=32)
    x = torch.randn(M, n * w, device=dev).half()
    out = poison((M,), device=dev)
    kernel(x, out)
    assert_close(out, x.double().square().sum(1), atol=1e-3, rtol=1e-3)
    assert "for jj" in _code(kernel)


@tilelang.jit
def decayed_rows(M, n, block_M, w):
    """``acc = acc * 0.5 + x[i, jj * w + j]``: a carried dependence, so the loop stays a loop; the
    read at ``jj * w + j`` selects along the reshaped dim of n (not the whole row of n * w)."""

    @T.prim_func
    def main(X: T.Tensor((M, n * w), "float32"), Y: T.Tensor((M, w), "float32"), O: T.Tensor((M, w), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            xf = T.alloc_fragment((block_M, n * w), "float32")
            acc = T.alloc_fragment((block_M, w), "float32")
            T.copy(X[bx * block_M, 0], xf)
            T.copy(Y[bx * block_M, 0], acc)
            for jj in T.serial(n):
                for i, j in T.Parallel(block_M, w):
                    acc[i, j] = acc[i, j] * 0.5 + xf[i, jj * w + j]
            T.copy(acc, O[bx * block_M, 0])

    return main


@pytest.mark.parametrize("M,n,block_M,w", [(50, 6, 32, 4), (19, 3, 16, 8)])
def test_split_read_lane_independent_digit(dev, M, n, block_M, w):
    kernel = decayed_rows(M, n, block_M, w)
    x, y = torch.randn(M, n * w, device=dev), torch.randn(M, w, device=dev)
    out = poison((M, w), device=dev)
    kernel(x, y, out)
    ref = y.double()
    for jj in range(n):
        ref = ref * 0.5 + x.double()[:, jj * w : (jj + 1) * w]
    assert_close(out, ref, atol=1e-5, rtol=1e-5)
    code = _code(kernel)
    # a select along the n digit of the reshaped row, not along the whole row of n * w
    assert "for jj" in code and f"tl.arange(0, {next_pow2(n)})[None, :, None] == jj" in code


def next_pow2(v: int) -> int:
    return 1 << (v - 1).bit_length()


@tilelang.jit
def three_digits(M, a, block_M):
    """``out[i, p, q, r] = x[i, p * 8 + q * 2 + r]`` of a fragment: three digits, one of them
    (``p``) of an extent that is not a power of two."""

    @T.prim_func
    def main(X: T.Tensor((M, a * 8), "float32"), O: T.Tensor((M, a, 4, 2), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            xf = T.alloc_fragment((block_M, a * 8), "float32")
            T.copy(X[bx * block_M, 0], xf)
            for i, p, q, r in T.Parallel(block_M, a, 4, 2):
                O[bx * block_M + i, p, q, r] = xf[i, p * 8 + q * 2 + r] * 2.0 + 1.0

    return main


@pytest.mark.parametrize("M,a,block_M", [(21, 3, 16), (40, 5, 32)])
def test_split_read_three_digits(dev, M, a, block_M):
    kernel = three_digits(M, a, block_M)
    x = torch.randn(M, a * 8, device=dev)
    out = poison((M, a, 4, 2), device=dev)
    kernel(x, out)
    assert_close(out, (x.double() * 2 + 1).view(M, a, 4, 2), atol=1e-6, rtol=1e-6)
    assert "tl.reshape(xf" in _code(kernel)


@tilelang.jit
def loop_terms(M, K, n, block_M):
    """A loop over a T.Parallel accumulation whose terms read a global tensor at the loop index,
    plus one term the same in every iteration and a loop of a trip count that is not a power of two."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((M,), "float32"), C: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            acc = T.alloc_fragment((block_M,), "float32")
            b = T.alloc_fragment((block_M,), "float32")
            T.copy(B[bx * block_M], b)
            T.fill(acc, 1.0)
            for k in T.serial(n):
                for i in T.Parallel(block_M):
                    acc[i] += A[bx * block_M + i, k * 2] * b[i]
            for k in T.serial(n):
                for i in T.Parallel(block_M):
                    acc[i] += b[i]
            T.copy(acc, C[bx * block_M])

    return main


@pytest.mark.parametrize("M,K,n,block_M", [(75, 14, 7, 32), (20, 6, 3, 16)])
def test_parallel_sum_loop_terms(dev, M, K, n, block_M):
    kernel = loop_terms(M, K, n, block_M)
    a, b = torch.randn(M, K, device=dev), torch.randn(M, device=dev)
    out = poison((M,), device=dev)
    kernel(a, b, out)
    ref = 1 + (a.double()[:, 0 : 2 * n : 2] * b.double()[:, None]).sum(1) + n * b.double()
    assert_close(out, ref, atol=1e-5, rtol=1e-5)
    assert "for k" not in _code(kernel)


@pytest.mark.parametrize("vectorize", ["1", "0"])
def test_scalar_loop_fallback_agrees(dev, monkeypatch, vectorize):
    """With loops kept as loops (TILE2TRITON_VECTORIZE_LOOPS=0) the split read serves each
    iteration's select; both lowerings agree with torch."""
    monkeypatch.setenv("TILE2TRITON_VECTORIZE_LOOPS", vectorize)
    M, n, block_M, w = 37 + int(vectorize), 6, 32, 4  # sizes of their own: the factory caches kernels
    kernel = sqrsum_rows(M, n, block_M, w)
    x = torch.randn(M, n * w, device=dev).half()
    out = poison((M,), device=dev)
    kernel(x, out)
    assert_close(out, x.double().square().sum(1), atol=1e-3, rtol=1e-3)
    assert ("for jj" in _code(kernel)) == (vectorize == "0")


# ------------------------------------------------------------------ shared-memory histograms
@tilelang.jit
def row_histogram(B, N, bins, threads, step):
    """TileLang's radix-select histogram: every thread adds ``step`` to the bin of its element
    (negative elements skipped), the block's bins copied out; one bin count from a per-thread
    atomic with the previous value (that keeps ``first`` in scratch)."""

    @T.prim_func
    def main(X: T.Tensor((B, N), "int32"), H: T.Tensor((B, bins), "int32"), F: T.Tensor((B,), "int32")):
        with T.Kernel(B, threads=threads) as bx:
            tx = T.get_thread_binding()
            hist = T.alloc_shared([bins], "int32")
            first = T.alloc_shared([1], "int32")
            T.fill(hist, 0)
            T.fill(first, 0)
            T.sync_threads()
            for s in T.serial(T.ceildiv(N, threads)):
                if s * threads + tx < N:
                    v = X[bx, s * threads + tx]
                    if v >= 0:
                        T.atomic_add(hist[v], step)
                    if v == 0:
                        T.atomic_add(first[0], 1, return_prev=True)
            T.sync_threads()
            T.copy(hist, H[bx, 0])
            F[bx] = first[0]

    return main


@pytest.mark.parametrize("B,N,bins,threads,step", [(3, 500, 300, 128, 1), (2, 333, 37, 64, 3)])
def test_shared_histogram(dev, monkeypatch, B, N, bins, threads, step):
    # 300 bins x 128 threads is past the one-hot limit: the buffer moves to scratch by itself;
    # the small one is put there (where the register path would have served it)
    if bins < 100:
        monkeypatch.setenv("TILE2TRITON_SHARED_SCRATCH", "1")
    kernel = row_histogram(B, N, bins, threads, step)
    x = torch.randint(-5, bins, (B, N), dtype=torch.int32, device=dev)
    x[:, 7] = 0  # a zero in every row
    hist, first = poison((B, bins), torch.int32, dev), poison((B,), torch.int32, dev)
    kernel(x, hist, first)
    ref = torch.stack([torch.bincount(r[r >= 0].long(), minlength=bins) for r in x.cpu()]) * step
    assert torch.equal(hist.cpu().long(), ref)
    assert torch.equal(first.cpu().long(), (x.cpu() == 0).sum(1))
    code = _code(kernel)
    # per-lane atomics: the tl.histogram form made the suite's topk_selector slower on the H200 (0.20x -> 0.09x)
    assert "tl.histogram(" not in code


@tilelang.jit
def tile_histogram(M, N, bins, block):
    """A T.Parallel(block, N) tile adding 1 at ``X[i, j] % bins``, rows past M skipped."""

    @T.prim_func
    def main(X: T.Tensor((M, N), "int32"), H: T.Tensor((T.ceildiv(M, block), bins), "int32")):
        with T.Kernel(T.ceildiv(M, block), threads=128) as bx:
            hist = T.alloc_shared([bins], "int32")
            T.fill(hist, 0)
            for i, j in T.Parallel(block, N):
                if bx * block + i < M:
                    T.atomic_add(hist[X[bx * block + i, j] % bins], 1)
            T.copy(hist, H[bx, 0])

    return main


def test_shared_histogram_2d_lanes(dev, monkeypatch):
    monkeypatch.setenv("TILE2TRITON_SHARED_SCRATCH", "1")
    M, N, bins, block = 45, 6, 23, 16
    kernel = tile_histogram(M, N, bins, block)
    x = torch.randint(0, 1000, (M, N), dtype=torch.int32, device=dev)
    out = poison((3, bins), torch.int32, dev)
    kernel(x, out)
    rows = (x.cpu().long() % bins).split(block)
    ref = torch.stack([torch.bincount(r.flatten(), minlength=bins) for r in rows])
    assert torch.equal(out.cpu().long(), ref)
    assert "tl.histogram(" not in _code(kernel)


@tilelang.jit
def compact_rows(B, N, threads, width):
    """Stream compaction: the threads whose element is positive claim ``width`` slots each from one
    shared counter (``return_prev=True``) and write the element's index there."""

    @T.prim_func
    def main(X: T.Tensor((B, N), "float32"), O: T.Tensor((B, N * width), "int32"), C: T.Tensor((B,), "int32")):
        with T.Kernel(B, threads=threads) as bx:
            tx = T.get_thread_binding()
            count = T.alloc_shared([2], "int32")
            pos = T.alloc_var(T.int32)
            T.fill(count, 0)
            T.sync_threads()
            for s in T.serial(T.ceildiv(N, threads)):
                if s * threads + tx < N:
                    if X[bx, s * threads + tx] > 0:
                        pos = T.atomic_add(count[1], width, return_prev=True)
                        for w in T.serial(width):
                            O[bx, pos + w] = s * threads + tx
            T.sync_threads()
            C[bx] = count[1]

    return main


@pytest.mark.parametrize("B,N,threads,width", [(3, 300, 128, 1), (2, 150, 64, 2)])
@pytest.mark.parametrize("block_claims", ["1", "0"])
def test_shared_counter_claims(dev, B, N, threads, width, block_claims, monkeypatch):
    monkeypatch.setenv("TILE2TRITON_SCRATCH_BLOCK_CLAIMS", block_claims)  # per block + cumsum, or per lane
    kernel = tilelang.compile(compact_rows(B, N, threads, width).prim_func)  # its own lowering per switch
    x = torch.randn(B, N, device=dev)
    out, count = poison((B, N * width), torch.int32, dev), poison((B,), torch.int32, dev)
    kernel(x, out, count)
    out, x = out.cpu(), x.cpu()
    for b in range(B):
        picked = (x[b] > 0).nonzero().flatten()
        n = len(picked)
        assert count[b].item() == n * width
        slots = out[b, : n * width].view(n, width)  # each claim is width consecutive slots of one index
        assert (slots == slots[:, :1]).all()
        assert sorted(slots[:, 0].tolist()) == picked.tolist()
        assert (out[b, n * width :] == poison((1,), torch.int32)[0]).all()  # nothing written past the claims
    assert ("tl.cumsum(count_claims" in _code(kernel)) == (block_claims == "1")


# ------------------------------------------------------------------ thread-range sections
@tilelang.jit
def split_roles(N, threads, split):
    """A thread-view kernel whose tile operations stand under static thread ranges: each range
    holds threads (the block-level test is known true), and a nested pair holds none."""

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, 64), threads=threads) as bx:
            tx = T.get_thread_binding()
            if tx < split:
                for i in T.Parallel(64):
                    B[bx * 64 + i] = A[bx * 64 + i] * 2.0
            else:
                for i in T.Parallel(64):
                    C[bx * 64 + i] = A[bx * 64 + i] + 1.0
            if tx < split:
                if tx >= split + 3:  # no thread is in both ranges: this never runs
                    for i in T.Parallel(64):
                        B[bx * 64 + i] = -1.0

    return main


@pytest.mark.parametrize("N,threads,split", [(150, 96, 32), (70, 128, 100)])
def test_static_thread_ranges(dev, N, threads, split):
    kernel = split_roles(N, threads, split)
    a = torch.randn(N, device=dev)
    b, c = poison((N,), device=dev), poison((N,), device=dev)
    kernel(a, b, c)
    assert_close(b, a.double() * 2, atol=1e-6, rtol=1e-6)
    assert_close(c, a.double() + 1, atol=1e-6, rtol=1e-6)
    code = _code(kernel)
    # the two sections with threads run without a test; the empty intersection keeps one
    assert code.count("any_thread = ") == 1 and code.count("if any_thread") == 1


@tilelang.jit
def weighted_rows(M, R, H, block, threads):
    """TileLang's mHC apply-mix step: in the second range of threads, ``out = sum_k w[k] * x[k, :]``
    as ``for k: w = w_shared[k]; for i in T.Parallel(block): acc[i] += w * x[k, i]``."""

    @T.prim_func
    def main(X: T.Tensor((M, R, H), "float32"), W: T.Tensor((M, R), "float32"), O: T.Tensor((M, H), "float32")):
        with T.Kernel(M, threads=threads) as m:
            w_shared = T.alloc_shared((R,), "float32")
            if T.get_thread_binding() < 32:
                for k in T.Parallel(R):
                    w_shared[k] = W[m, k] * 0.5
            T.sync_threads()
            if T.get_thread_binding() >= 32:
                for h0 in T.serial(T.ceildiv(H, block)):
                    xl = T.alloc_fragment((R, block), "float32")
                    acc = T.alloc_fragment((block,), "float32")
                    T.copy(X[m, 0, h0 * block], xl)
                    T.clear(acc)
                    for k in T.serial(R):
                        w = w_shared[k]
                        for i in T.Parallel(block):
                            acc[i] += w * xl[k, i]
                    T.copy(acc, O[m, h0 * block])

    return main


@pytest.mark.parametrize("M,R,H,block,threads", [(3, 4, 200, 64, 96), (2, 3, 90, 32, 64)])
def test_parallel_sum_loop_with_lets_thread_view(dev, M, R, H, block, threads):
    kernel = weighted_rows(M, R, H, block, threads)
    x, w = torch.randn(M, R, H, device=dev), torch.randn(M, R, device=dev)
    out = poison((M, H), device=dev)
    kernel(x, w, out)
    assert_close(out, torch.einsum("mr,mrh->mh", w.double() * 0.5, x.double()), atol=1e-5, rtol=1e-5)
    code = _code(kernel)
    assert "for k" not in code and "for h0" in code and "any_thread" not in code
