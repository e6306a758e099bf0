"""``T.Persistent(domain, wave_size, index, group_size=8)`` (TileLang's examples/gemm/example_gemm_persistent.py):
which tiles each block visits, in which order, with the group swizzle and the bound check of a partial group
(tile2triton/frontend/persistent.py)."""

import itertools
import math

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.errors import TileLangCompileError


def schedule(domain, wave_size, group_size):
    """TileLang's PersistentFor, step by step: {tile coordinates: (block, how many tiles it visited before)}."""
    last = domain[-1]
    group = max(1, min(group_size, last))
    grouped = [math.ceil(last / group), *domain[:-1], group]
    padded = math.prod(grouped)
    visits = {}
    for index in range(wave_size):
        step = 0
        for wave in range(math.ceil(padded / wave_size)):
            rest = wave * wave_size + index
            if rest >= padded:
                break
            idx = [0] * len(grouped)
            for axis in range(len(grouped) - 1, 0, -1):
                idx[axis] = rest % grouped[axis]
                rest //= grouped[axis]
            idx[0] = rest
            coords = (*idx[1:-1], idx[0] * group + idx[-1])
            if coords[-1] < last:
                assert coords not in visits
                visits[coords] = (index, step)
                step += 1
    return visits


@tilelang.jit
def visit_order_2d(m_tiles, n_tiles, blocks, group_size):
    @T.prim_func
    def main(Block: T.Tensor((m_tiles, n_tiles), "float32"), Step: T.Tensor((m_tiles, n_tiles), "float32")):
        with T.Kernel(blocks, threads=32) as block_id:
            step = T.alloc_var("int32")
            step = 0
            for bx, by in T.Persistent([m_tiles, n_tiles], blocks, block_id, group_size):
                Block[bx, by] = block_id
                Step[bx, by] = step
                step += 1

    return main


@pytest.mark.parametrize(
    "m_tiles,n_tiles,blocks,group_size",
    [(7, 11, 5, 8), (5, 13, 9, 4), (6, 3, 4, 8), (3, 10, 7, 1), (9, 5, 13, 0)],
)
def test_visit_order_2d(dev, m_tiles, n_tiles, blocks, group_size):
    block = poison((m_tiles, n_tiles), device=dev)
    step = poison((m_tiles, n_tiles), device=dev)
    visit_order_2d(m_tiles, n_tiles, blocks, group_size)(block, step)
    ref = schedule([m_tiles, n_tiles], blocks, group_size)
    assert len(ref) == m_tiles * n_tiles  # every tile once
    expect_block = torch.tensor([[ref[i, j][0] for j in range(n_tiles)] for i in range(m_tiles)], dtype=torch.float64)
    expect_step = torch.tensor([[ref[i, j][1] for j in range(n_tiles)] for i in range(m_tiles)], dtype=torch.float64)
    assert_close(block, expect_block, atol=0, rtol=0)
    assert_close(step, expect_step, atol=0, rtol=0)


def test_schedule_matches_the_examples_manual_loop():
    """example_gemm_persistent.py's hand-written branch visits the same tiles in the same order when the
    groups are full (its wave count is not padded to whole groups)."""
    m_blocks, n_blocks, sms, group = 7, 24, 10, 8
    ref = schedule([m_blocks, n_blocks], sms, group)
    manual = {}
    for block_id in range(sms):
        step = 0
        for w in range(math.ceil(m_blocks * n_blocks / sms)):
            tile_id = sms * w + block_id
            bx = (tile_id // group) % m_blocks
            by = (tile_id % group) + (tile_id // group) // m_blocks * group
            if bx < m_blocks and by < n_blocks:
                manual[bx, by] = (block_id, step)
                step += 1
    assert ref == manual and len(ref) == m_blocks * n_blocks


@tilelang.jit
def visit_order_3d(d0, d1, d2, blocks):
    @T.prim_func
    def main(Block: T.Tensor((d0, d1, d2), "float32")):
        with T.Kernel(blocks, threads=32) as block_id:
            for i, j, k in T.Persistent([d0, d1, d2], blocks, block_id, group_size=3):
                Block[i, j, k] = block_id

    return main


def test_visit_order_3d(dev):
    d0, d1, d2, blocks = 3, 5, 7, 6
    out = poison((d0, d1, d2), device=dev)
    visit_order_3d(d0, d1, d2, blocks)(out)
    ref = schedule([d0, d1, d2], blocks, 3)
    expect = torch.empty(d0, d1, d2, dtype=torch.float64)
    for i, j, k in itertools.product(range(d0), range(d1), range(d2)):
        expect[i, j, k] = ref[i, j, k][0]
    assert_close(out, expect, atol=0, rtol=0)


@tilelang.jit
def persistent_gemm(M, N, K, bm, bn, bk, sms, group_size):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(sms, threads=128) as block_id:
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_f = T.alloc_fragment((bm, bn), "float32")
            for bx, by in T.Persistent([T.ceildiv(M, bm), T.ceildiv(N, bn)], sms, block_id, group_size):
                T.clear(C_f)
                for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                    T.copy(A[bx * bm, k * bk], A_s)
                    T.copy(B[k * bk, by * bn], B_s)
                    T.gemm(A_s, B_s, C_f)
                T.copy(C_f, C[bx * bm, by * bn])

    return main


@pytest.mark.parametrize("sms,group_size", [(5, 8), (3, 2)])
def test_persistent_gemm(dev, sms, group_size):
    M, N, K = 150, 230, 70
    a = torch.randn(M, K, dtype=torch.float16)
    b = torch.randn(K, N, dtype=torch.float16)
    c = poison((M, N), device=dev)
    persistent_gemm(M, N, K, 64, 32, 32, sms, group_size)(a.to(dev), b.to(dev), c)
    assert_close(c, a.double() @ b.double(), atol=2e-2, rtol=2e-3)


@tilelang.jit
def persistent_rows(block_rows, sms):
    n = T.dynamic("n")
    m = T.dynamic("m")

    @T.prim_func
    def main(X: T.Tensor((m, n), "float32"), Y: T.Tensor((m, n), "float32")):
        with T.Kernel(sms, threads=64) as block_id:
            for rb, c in T.Persistent([T.ceildiv(m, block_rows), n], sms, block_id, 4):
                for i in T.Parallel(block_rows):
                    if rb * block_rows + i < m:
                        Y[rb * block_rows + i, c] = X[rb * block_rows + i, c] * 2.0 + c

    return main


def test_symbolic_domain(dev):
    """Sizes known only at launch: the group clamp and the wave count are computed in the kernel."""
    kernel = persistent_rows(8, 7)
    for m, n in [(45, 3), (30, 13)]:
        x = torch.randn(m, n)
        y = poison((m, n), device=dev)
        kernel(x.to(dev), y)
        assert_close(y, x.double() * 2 + torch.arange(n, dtype=torch.float64), atol=1e-6, rtol=1e-6)


def test_persistent_names_must_match_the_domain():
    @T.prim_func
    def main(X: T.Tensor((8, 8), "float32")):
        with T.Kernel(4, threads=32) as block_id:
            for bx, by in T.Persistent([2, 2, 2], 4, block_id):
                X[bx, by] = 1.0

    with pytest.raises(TileLangCompileError, match="3-axis domain binds 3 names"):
        tilelang.compile(main)


def test_persistent_group_size_must_be_an_integer():
    @T.prim_func
    def main(X: T.Tensor((8, 8), "float32")):
        with T.Kernel(4, threads=32) as block_id:
            for bx, by in T.Persistent([2, 2], 4, block_id, None):
                X[bx, by] = 1.0

    with pytest.raises(TileLangCompileError, match="T.Persistent: group_size must be an integer, got None"):
        tilelang.compile(main)


@tilelang.jit
def persistent_break(m_tiles, n_tiles, blocks, stop_row):
    @T.prim_func
    def main(Block: T.Tensor((m_tiles, n_tiles), "float32")):
        with T.Kernel(blocks, threads=32) as block_id:
            for bx, by in T.Persistent([m_tiles, n_tiles], blocks, block_id, 2):
                if bx == stop_row:
                    break  # leaves the block's loop over the waves, as in TileLang
                Block[bx, by] = block_id

    return main


def test_break_leaves_the_wave_loop(dev):
    m_tiles, n_tiles, blocks, stop_row = 5, 7, 3, 3
    out = poison((m_tiles, n_tiles), device=dev)
    persistent_break(m_tiles, n_tiles, blocks, stop_row)(out)
    ref = schedule([m_tiles, n_tiles], blocks, 2)
    expect = torch.full((m_tiles, n_tiles), float("nan"), dtype=torch.float64)
    first_stop = {}  # each block's step at which it meets the stop row
    for (i, j), (block, step) in ref.items():
        if i == stop_row:
            first_stop[block] = min(first_stop.get(block, step), step)
    for (i, j), (block, step) in ref.items():
        if step < first_stop.get(block, len(ref)):
            expect[i, j] = block
    assert torch.isnan(expect).any() and not torch.isnan(expect).all()
    torch.testing.assert_close(out.cpu().double(), expect, equal_nan=True, rtol=0, atol=0)
