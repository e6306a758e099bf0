"""Accumulations a loop only adds into, reduced once after it (codegen/deferred.py):
TILE2TRITON_DEFER_SUMS (a widened loop's sum added element-wise, summed after the enclosing loop)
and TILE2TRITON_GEMM_PARTS (an mma.sync gemm's K as parts with an accumulator each).  The kernel
is mhc_pre's gemm_sqrsum (TileLang's examples/deepseek_mhc) at small odd sizes; the interpreter
runs the code sm_90 gets."""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


def gemm_sqrsum(tokens, cols, hidden, token_block, hidden_block, read_inside=False, acc_dtype="float32",
                clear_at=None, fn_kn=False):  # fmt: skip
    """out = x @ fn^T (tf32, fn's rows padded to 32) and sqrsum = (x * x).sum(-1), a hidden block a
    step; ``read_inside``: the loop also reads both accumulators (nothing may be deferred);
    ``clear_at``: the gemm clears its accumulator at that step (a run-time clear_accum); ``fn_kn``:
    fn given as (hidden, cols), B not transposed."""
    fn_shape = (hidden, cols) if fn_kn else (cols, hidden)
    fn_tile = (hidden_block, 32) if fn_kn else (32, hidden_block)

    @T.prim_func
    def main(
        x: T.Tensor((tokens, hidden), "bfloat16"),
        fn: T.Tensor(fn_shape, "float32"),
        out: T.Tensor((tokens, cols), acc_dtype),
        sqrsum: T.Tensor((tokens,), "float32"),
        probe: T.Tensor((T.ceildiv(tokens, token_block), hidden // hidden_block), "float32"),
    ):
        with T.Kernel(T.ceildiv(tokens, token_block), threads=128) as px:
            out_frag = T.alloc_fragment((token_block, 32), acc_dtype)
            sqrsum_part = T.alloc_fragment((token_block, 4), "float32")
            T.clear(out_frag)
            T.clear(sqrsum_part)
            for pz in T.Pipelined(hidden // hidden_block, num_stages=2):
                x_smem = T.alloc_shared((token_block, hidden_block), "bfloat16")
                fn_smem = T.alloc_shared(fn_tile, "float32")
                T.copy(x[px * token_block, pz * hidden_block], x_smem)
                if fn_kn:
                    T.copy(fn[pz * hidden_block, 0], fn_smem)
                else:
                    T.copy(fn[0, pz * hidden_block], fn_smem)
                x_frag = T.alloc_fragment((token_block, hidden_block), "float32")
                T.copy(x_smem, x_frag)
                for jj in T.serial(hidden_block // 4):
                    for i, j in T.Parallel(token_block, 4):
                        sqrsum_part[i, j] += x_frag[i, jj * 4 + j] * x_frag[i, jj * 4 + j]
                if fn_kn:
                    T.gemm(x_frag, fn_smem, out_frag)
                elif clear_at is None:
                    T.gemm(x_frag, fn_smem, out_frag, transpose_B=True)
                else:
                    T.gemm(x_frag, fn_smem, out_frag, transpose_B=True, clear_accum=pz == clear_at)
                if read_inside:  # the running totals, read every iteration
                    probe[px, pz] = sqrsum_part[0, 0] + out_frag[0, 0]
            sqrsum_l = T.alloc_fragment(token_block, "float32")
            T.reduce_sum(sqrsum_part, sqrsum_l)
            for i in T.Parallel(token_block):
                sqrsum[px * token_block + i] = sqrsum_l[i]
            for i, j in T.Parallel(token_block, 32):
                if j < cols:
                    out[px * token_block + i, j] = out_frag[i, j]

    return main


def _inputs(dev, tokens, cols, hidden):
    torch.manual_seed(0)
    x = torch.randn(tokens, hidden, device=dev).bfloat16()
    fn = torch.randn(cols, hidden, device=dev) * 0.1
    return x, fn


def _check(kernel, dev, tokens, cols, hidden, blocks):
    x, fn = _inputs(dev, tokens, cols, hidden)
    out, sqrsum, probe = kernel(x, fn)
    xd = x.double().cpu()
    assert_close(sqrsum, (xd * xd).sum(-1), atol=1e-3, rtol=1e-4)
    # tf32 products: fn rounded to 10 mantissa bits
    assert_close(out, xd @ fn.double().cpu().T, atol=3e-2, rtol=1e-2)
    return probe


@pytest.mark.parametrize("sums, parts", [("1", "1"), ("1", "0"), ("0", "1"), ("0", "0")])
def test_gemm_sqrsum_deferred(dev, monkeypatch, sums, parts):
    monkeypatch.setenv("TILE2TRITON_DEFER_SUMS", sums)
    monkeypatch.setenv("TILE2TRITON_GEMM_PARTS", parts)
    tokens, cols, hidden, token_block, hidden_block = 45, 24, 384, 16, 128  # 3 ragged token blocks, 3 steps
    kernel = tilelang.compile(gemm_sqrsum(tokens, cols, hidden, token_block, hidden_block), out_idx=[2, 3, 4])
    _check(kernel, dev, tokens, cols, hidden, 3)
    if dev == "cpu":
        source = kernel.get_kernel_source(interpret=True)
        # the terms' sum over jj after the loop; the gemm as 2 parts of 64 (16 x 32 on 4 warps: 1 tile a
        # warp; a part keeps at least 8 tf32 mma steps of 8)
        assert ("sqrsum_part_terms = sqrsum_part_terms + " in source) == (sums == "1"), source
        assert ("sqrsum_part = sqrsum_part + tl.sum(sqrsum_part_terms, axis=0)" in source) == (sums == "1"), source
        assert ("out_frag_parts = tl.dot(" in source) == (parts == "1"), source
        assert ("tl.reshape(x_frag, (16, 2, 64))" in source) == (parts == "1"), source
        assert ("out_frag = out_frag + tl.sum(out_frag_parts, axis=0)" in source) == (parts == "1"), source


def test_read_inside_the_loop_is_not_deferred(dev):
    """The loop reads the running totals: they are added into every iteration, as written."""
    tokens, cols, hidden, token_block, hidden_block = 45, 24, 384, 16, 128
    kernel = tilelang.compile(
        gemm_sqrsum(tokens, cols, hidden, token_block, hidden_block, read_inside=True), out_idx=[2, 3, 4]
    )
    probe = _check(kernel, dev, tokens, cols, hidden, 3)
    x, fn = _inputs(dev, tokens, cols, hidden)
    xd, fd = x.double().cpu(), fn.double().cpu()
    want = torch.empty(3, 3, dtype=torch.float64)
    for b in range(3):
        for s in range(3):
            k = (s + 1) * hidden_block
            row = xd[b * token_block, :k]
            want[b, s] = (row[:k].view(-1, 4) ** 2).sum(0)[0] + row @ fd[0, :k]
    assert_close(probe, want, atol=3e-2, rtol=1e-2)
    if dev == "cpu":
        source = kernel.get_kernel_source(interpret=True)
        assert "_terms" not in source and "_parts" not in source, source


def test_half_accumulator_is_not_split(dev):
    """A float16 accumulator keeps its per-iteration rounding: no parts."""
    tokens, cols, hidden, token_block, hidden_block = 45, 24, 384, 16, 128
    kernel = tilelang.compile(
        gemm_sqrsum(tokens, cols, hidden, token_block, hidden_block, acc_dtype="float16"), out_idx=[2, 3, 4]
    )
    x, fn = _inputs(dev, tokens, cols, hidden)
    out, sqrsum, _ = kernel(x, fn)
    assert_close(out, x.double().cpu() @ fn.double().cpu().T, atol=0.3, rtol=3e-2)
    if dev == "cpu":
        source = kernel.get_kernel_source(interpret=True)
        assert "_parts" not in source and "sqrsum_part_terms" in source, source


def ragged_sum(n, rows, steps, width):
    """acc[i, j] += sum over a 3-iteration loop of A[..., k * width + j] (3 is padded to 4: masked)."""

    @T.prim_func
    def main(A: T.Tensor((n, steps * 3 * width), "float32"), S: T.Tensor((n, width), "float32")):
        with T.Kernel(T.ceildiv(n, rows), threads=64) as b:
            acc = T.alloc_fragment((rows, width), "float32")
            T.clear(acc)
            for s in T.serial(steps):
                tile = T.alloc_shared((rows, 3 * width), "float32")
                T.copy(A[b * rows, s * 3 * width], tile)
                for k in T.serial(3):
                    for i, j in T.Parallel(rows, width):
                        acc[i, j] += tile[i, k * width + j] * 2.0
            T.copy(acc, S[b * rows, 0])

    return main


@pytest.mark.parametrize("sums", ["1", "0"])
def test_ragged_widened_loop(dev, monkeypatch, sums):
    monkeypatch.setenv("TILE2TRITON_DEFER_SUMS", sums)
    n, rows, steps, width = 37, 16, 5, 6
    kernel = tilelang.compile(ragged_sum(n, rows, steps, width), out_idx=[-1])
    a = torch.randn(n, steps * 3 * width, device=dev)
    s = kernel(a)
    assert_close(s, 2 * a.double().cpu().view(n, steps * 3, width).sum(1), atol=1e-4, rtol=1e-5)
    if dev == "cpu":
        source = kernel.get_kernel_source(interpret=True)
        assert ("acc_terms = acc_terms + tl.where(" in source) == (sums == "1"), source


def test_run_time_clear_is_not_split(dev):
    """clear_accum=(pz == 1): the sum restarts at step 1, so the gemm accumulates as written."""
    tokens, cols, hidden, token_block, hidden_block = 45, 24, 384, 16, 128
    kernel = tilelang.compile(
        gemm_sqrsum(tokens, cols, hidden, token_block, hidden_block, clear_at=1), out_idx=[2, 3, 4]
    )
    x, fn = _inputs(dev, tokens, cols, hidden)
    out, _, _ = kernel(x, fn)
    tail = slice(hidden_block, hidden)
    assert_close(out, x.double().cpu()[:, tail] @ fn.double().cpu()[:, tail].T, atol=3e-2, rtol=1e-2)
    if dev == "cpu":
        source = kernel.get_kernel_source(interpret=True)
        assert "_parts" not in source and "sqrsum_part_terms" in source, source


def test_parts_of_an_untransposed_b(dev):
    """B given K x N (no transpose_B): its parts are row blocks."""
    tokens, cols, hidden, token_block, hidden_block = 45, 24, 384, 16, 128
    kernel = tilelang.compile(
        gemm_sqrsum(tokens, cols, hidden, token_block, hidden_block, fn_kn=True), out_idx=[2, 3, 4]
    )
    x, fn = _inputs(dev, tokens, cols, hidden)
    out, sqrsum, _ = kernel(x, fn.T.contiguous())
    xd = x.double().cpu()
    assert_close(sqrsum, (xd * xd).sum(-1), atol=1e-3, rtol=1e-4)
    assert_close(out, xd @ fn.double().cpu().T, atol=3e-2, rtol=1e-2)
    if dev == "cpu":
        source = kernel.get_kernel_source(interpret=True)
        assert "b_parts = tl.reshape(fn_smem, (2, 64, 32))" in source, source


# ------------------------------------------------------------------ a reducer's sum over T.Parallel lanes
def reducer_gemv(m, n, block_m, block_n, touch_inside=False, moving_row=False):
    """TileLang's gemv_alloc_reducer (examples/gemv): o[i] = sum_j a[i, j] x[j], a reducer's
    ``o_r[i] += a[i, j] * x[j]`` in ``T.Parallel(block_m, block_n)`` each step of a loop over n.
    ``touch_inside``: the loop also reads the reducer (nothing may be deferred); ``moving_row``: the
    row it adds into changes with the loop (``o_r[(i + k) % block_m]``: nothing may be deferred)."""

    @T.prim_func
    def main(a: T.Tensor((m, n), "float16"), x: T.Tensor((n,), "float16"), o: T.Tensor((m,), "float32"),
             probe: T.Tensor((T.ceildiv(m, block_m), T.ceildiv(n, block_n)), "float32")):  # fmt: skip
        with T.Kernel(T.ceildiv(m, block_m), threads=128) as bx:
            o_r = T.alloc_reducer(block_m, "float32", replication="all")
            T.clear(o_r)
            for k in T.Pipelined(T.ceildiv(n, block_n), num_stages=2):
                a_s = T.alloc_shared((block_m, block_n), "float16")
                T.copy(a[bx * block_m, k * block_n], a_s)
                a_f = T.alloc_fragment((block_m, block_n), "float16")
                T.copy(a_s, a_f)
                x_f = T.alloc_fragment(block_n, "float16")
                T.copy(x[k * block_n], x_f)
                for i, j in T.Parallel(block_m, block_n):
                    if moving_row:
                        o_r[(i + k) % block_m] += a_f[i, j] * x_f[j]
                    else:
                        o_r[i] += a_f[i, j] * x_f[j]
                if touch_inside:
                    probe[bx, k] = o_r[0]
            T.finalize_reducer(o_r)
            T.copy(o_r, o[bx * block_m])

    return main


@pytest.mark.parametrize("sums", ["1", "0"])
def test_reducer_sum_over_lanes_deferred(dev, monkeypatch, sums):
    """The reducer's terms added element-wise each step, summed over j once after the loop."""
    monkeypatch.setenv("TILE2TRITON_DEFER_REDUCERS", sums)
    m, n, block_m, block_n = 150, 210, 64, 32
    kernel = tilelang.compile(reducer_gemv(m, n, block_m, block_n))
    a = torch.randn(m, n).half()
    x = torch.randn(n).half()
    o = torch.full((m,), float("nan"), device=dev)
    probe = torch.full((3, 7), float("nan"), device=dev)
    kernel(a.to(dev), x.to(dev), o, probe)
    ref = (a.double() * x.double()).half().double().sum(1)  # the products in float16, as TileLang's
    assert_close(o, ref, atol=1e-2, rtol=1e-3)
    src = kernel.get_kernel_source()
    assert ("o_r_terms" in src) == (sums == "1")


@pytest.mark.parametrize("case", ["touch_inside", "moving_row"])
def test_reducer_sum_not_deferred(dev, monkeypatch, case):
    monkeypatch.setenv("TILE2TRITON_DEFER_REDUCERS", "1")
    m, n, block_m, block_n = 70, 100, 64, 32
    kernel = tilelang.compile(reducer_gemv(m, n, block_m, block_n, **{case: True}))
    a = torch.randn(m, n).half()
    x = torch.randn(n).half()
    o = torch.full((m,), float("nan"), device=dev)
    probe = torch.full((2, 4), float("nan"), device=dev)
    kernel(a.to(dev), x.to(dev), o, probe)
    prod_ = (a.double() * x.double()).half().double()
    if case == "moving_row":  # step k adds row i's terms into row (i + k) % 64 of each block
        ref = torch.zeros(m, dtype=torch.float64)
        for b in range(2):
            for k in range(4):
                for i in range(64):
                    row = b * 64 + i
                    if row < m:
                        target = b * 64 + (i + k) % 64
                        if target < m:
                            ref[target] += prod_[row, k * 32 : min(n, k * 32 + 32)].sum()
    else:
        ref = prod_.sum(1)
    assert_close(o, ref, atol=1e-2, rtol=1e-3)
    assert "o_r_terms" not in kernel.get_kernel_source()


def test_thread_view_reducer_keeps_its_atomics(dev, monkeypatch):
    """A thread view's atomics into a register buffer (TileLang's split-K gemv, 2-D thread block):
    its lanes are the block's threads, no T.Parallel to reduce after the loop; the switch leaves it."""
    from test_dropin_lang import test_2d_thread_block_atomic_into_shared

    monkeypatch.setenv("TILE2TRITON_DEFER_REDUCERS", "1")
    test_2d_thread_block_atomic_into_shared(dev, 2)
