"""An attention forward's query rows over twice the blocks (passes/row_split.py, TILE2TRITON_ROW_SPLIT):
the same results as the whole tiles, the half tiles in the source, and the rule's limits."""

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.passes.row_split import split_rows
from tile2triton.runtime import tuning

pytestmark = pytest.mark.poison_empty


@pytest.fixture(params=["always", "off"], ids=["split", "whole"])
def split(monkeypatch, request):
    monkeypatch.setenv("TILE2TRITON_ROW_SPLIT", request.param)
    return request.param == "always"


def attention(B, H, Sq, Skv, D, BM, BN, causal, threads=256, column_sums=False, row_total=False):
    """softmax(Q K^T / sqrt(D)) V over BM-row query tiles (the flash-attention forward of TileLang's
    examples, causal with the sink example's mask); ``column_sums``: also the output's column sums over
    each tile's rows (a reduction across the rows: no split); ``row_total``: also the sum of the tile's
    softmax denominators, an update of one fragment element by every row in a ``T.Parallel`` (no split)."""
    scale = (1.0 / D) ** 0.5 * 1.44269504

    @T.prim_func
    def main(
        Q: T.Tensor((B, H, Sq, D), "float16"),
        K: T.Tensor((B, H, Skv, D), "float16"),
        V: T.Tensor((B, H, Skv, D), "float16"),
        O: T.Tensor((B, H, Sq, D), "float16"),
        S: T.Tensor((B, H, T.ceildiv(Sq, BM), D), "float32"),
    ):
        with T.Kernel(T.ceildiv(Sq, BM), H, B, threads=threads) as (bx, by, bz):
            Q_s = T.alloc_shared((BM, D), "float16")
            K_s = T.alloc_shared((BN, D), "float16")
            V_s = T.alloc_shared((BN, D), "float16")
            O_s = T.alloc_shared((BM, D), "float16")
            acc_s = T.alloc_fragment((BM, BN), "float32")
            acc_s_cast = T.alloc_fragment((BM, BN), "float16")
            acc_o = T.alloc_fragment((BM, D), "float32")
            m = T.alloc_fragment((BM,), "float32")
            m_prev = T.alloc_fragment((BM,), "float32")
            rescale = T.alloc_fragment((BM,), "float32")
            row_sum = T.alloc_fragment((BM,), "float32")
            l = T.alloc_fragment((BM,), "float32")  # noqa: E741
            sums = T.alloc_fragment((D,), "float32")
            total = T.alloc_fragment((1,), "float32")
            T.copy(Q[bz, by, bx * BM : (bx + 1) * BM, :], Q_s)
            T.fill(acc_o, 0)
            T.fill(l, 0)
            T.fill(m, -T.infinity("float32"))
            end = T.min(T.ceildiv(Skv, BN), T.ceildiv((bx + 1) * BM, BN)) if causal else T.ceildiv(Skv, BN)
            for k in T.Pipelined(end, num_stages=2):
                T.copy(K[bz, by, k * BN : (k + 1) * BN, :], K_s)
                for i, j in T.Parallel(BM, BN):
                    if causal:
                        acc_s[i, j] = T.if_then_else(bx * BM + i >= k * BN + j, 0, -T.infinity("float32"))
                    else:
                        acc_s[i, j] = T.if_then_else(k * BN + j < Skv, 0, -T.infinity("float32"))
                T.gemm(Q_s, K_s, acc_s, transpose_B=True)
                T.copy(m, m_prev)
                T.fill(m, -T.infinity("float32"))
                T.reduce_max(acc_s, m, dim=1, clear=False)
                for i in T.Parallel(BM):
                    m[i] = T.max(m[i], m_prev[i])
                    rescale[i] = T.exp2(m_prev[i] * scale - m[i] * scale)
                for i, j in T.Parallel(BM, BN):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - m[i] * scale)
                T.reduce_sum(acc_s, row_sum, dim=1)
                for i in T.Parallel(BM):
                    l[i] = l[i] * rescale[i] + row_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(BM, D):
                    acc_o[i, j] *= rescale[i]
                T.copy(V[bz, by, k * BN : (k + 1) * BN, :], V_s)
                T.gemm(acc_s_cast, V_s, acc_o)
            for i, j in T.Parallel(BM, D):
                acc_o[i, j] /= l[i]
            if column_sums:
                T.reduce_sum(acc_o, sums, dim=0)
                T.copy(sums, S[bz, by, bx, :])
            if row_total:
                T.clear(total)
                for i in T.Parallel(BM):
                    total[0] += l[i]
                S[bz, by, bx, 0] = total[0]
            T.copy(acc_o, O_s)
            T.copy(O_s, O[bz, by, bx * BM : (bx + 1) * BM, :])

    return main


def _reference(q, k, v, causal):
    scores = q.double() @ k.double().transpose(-1, -2) / q.shape[-1] ** 0.5
    if causal:
        rows = torch.arange(q.shape[2], device=q.device)[:, None]
        cols = torch.arange(k.shape[2], device=q.device)[None, :]
        scores = scores.masked_fill(rows < cols, float("-inf"))
    return torch.softmax(scores, -1) @ v.double()


def _inputs(dev, B, H, Sq, Skv, D):
    q = torch.randn(B, H, Sq, D, device=dev).half()
    k, v = torch.randn(B, H, Skv, D, device=dev).half(), torch.randn(B, H, Skv, D, device=dev).half()
    return q, k, v


@pytest.mark.parametrize(
    "B, H, Sq, Skv, D, BN, causal",
    [
        (1, 2, 200, 200, 64, 64, True),  # the second query tile reaches past the tensor: its second half wholly
        (2, 1, 150, 90, 32, 32, False),  # keys past the end masked in the scores
        (1, 1, 100, 170, 64, 64, False),  # one query tile, its second half wholly past the tensor
    ],
)
def test_split_rows_match_torch(dev, split, B, H, Sq, Skv, D, BN, causal):
    kernel = tilelang.compile(attention(B, H, Sq, Skv, D, 128, BN, causal), out_idx=[3, 4])
    q, k, v = _inputs(dev, B, H, Sq, Skv, D)
    o, _ = kernel(q, k, v)
    torch.testing.assert_close(o.double(), _reference(q, k, v, causal), atol=2e-2, rtol=2e-2)
    source = kernel.get_kernel_source(interpret=dev == "cpu")
    assert ("row_half" in source) == split, source
    assert (f"acc_o = tl.zeros([64, {D}]" in source) == split, source


def test_a_reduction_across_the_rows_keeps_the_tile(dev, split):
    """The output's column sums over each tile's rows: every row of the tile feeds one value."""
    B, H, Sq, Skv, D = 1, 1, 150, 80, 32
    kernel = tilelang.compile(attention(B, H, Sq, Skv, D, 128, 32, False, column_sums=True), out_idx=[3, 4])
    q, k, v = _inputs(dev, B, H, Sq, Skv, D)
    o, sums = kernel(q, k, v)
    want = _reference(q, k, v, False)
    torch.testing.assert_close(o.double(), want, atol=2e-2, rtol=2e-2)
    # a tile's rows past the tensor hold 0 / 0 in TileLang's semantics too: compare the full tile only
    torch.testing.assert_close(sums[0, 0, 0].double(), want[0, 0, :128].sum(0), atol=5e-2, rtol=2e-2)
    assert "row_half" not in kernel.get_kernel_source(interpret=dev == "cpu")


def test_a_sum_across_the_rows_keeps_the_tile(dev, split):
    """Every row of the tile adds its softmax denominator into one fragment element."""
    B, H, Sq, Skv, D = 1, 1, 150, 80, 32
    kernel = tilelang.compile(attention(B, H, Sq, Skv, D, 128, 32, False, row_total=True), out_idx=[3, 4])
    q, k, v = _inputs(dev, B, H, Sq, Skv, D)
    o, totals = kernel(q, k, v)
    torch.testing.assert_close(o.double(), _reference(q, k, v, False), atol=2e-2, rtol=2e-2)
    logits = (q.double() @ k.double().transpose(-1, -2))[0, 0, :128] * (1.0 / D) ** 0.5 * 1.44269504
    denominators = torch.exp2(logits - logits.amax(-1, keepdim=True)).sum(-1)
    torch.testing.assert_close(totals[0, 0, 0, 0].double(), denominators.sum(), atol=0.5, rtol=2e-2)
    assert "row_half" not in kernel.get_kernel_source(interpret=dev == "cpu")


def _bound(B, H, Sq, BM, threads=256):
    return tilelang.compile(attention(B, H, Sq, 64, 64, BM, 64, True, threads), out_idx=[3, 4]).prim_func.kernels[0]


def test_the_grid_rule():
    """Split only where twice the blocks fit the SMs; rows of at least 2 * 64; the grid axis doubled."""
    kernel = _bound(1, 32, 256, 128)  # 2 x 32 = 64 blocks
    assert split_rows(kernel, sms=132) is not kernel
    assert split_rows(kernel, sms=127) is kernel  # 128 blocks would not fit one wave
    assert split_rows(kernel, sms=None) is kernel and split_rows(kernel, sms=None, always=True) is not kernel
    done = split_rows(kernel, sms=132)
    assert [g.value for g in done.grid] == [4, 32, 1]
    small = _bound(1, 4, 256, 64, threads=128)
    assert split_rows(small, sms=132, always=True) is small  # 64-row tiles: halves under a warpgroup's wgmma


@pytest.mark.parametrize("heads, split_expected", [(8, True), (32, False)])
def test_the_gluon_route_gives_way_under_half_a_wave(heads, split_expected):
    """sm_90, offline: 1024 keys of head dim 128 on 256 threads take the Gluon route, but not on a grid the
    row split takes (8 heads: 64 blocks; 32 heads: 256 blocks)."""
    kernel = tilelang.compile(attention(1, heads, 1024, 1024, 128, 128, 128, True), out_idx=[3, 4])
    source = kernel.lowered_for("sm_90").source
    assert source.startswith("# Triton generated" if split_expected else "# Gluon generated"), source[:200]
    assert ("row_half" in source) == split_expected


def test_the_launch_is_chosen_for_the_split_kernel(monkeypatch):
    """128-row tiles of head dim 128 need 8 warps for their accumulators; the 64-row halves take 4 (sm_90's
    heuristic, 2 x 32 = 64 blocks: the split's grid rule holds on a 132-SM card)."""
    func = tilelang.compile(attention(1, 32, 256, 256, 128, 128, 128, True), out_idx=[3, 4]).prim_func
    assert tuning.heuristic(func, (9, 0)).num_warps == 4
    monkeypatch.setenv("TILE2TRITON_ROW_SPLIT", "off")
    assert tuning.heuristic(func, (9, 0)).num_warps == 8


@pytest.mark.parametrize(
    "D, heads, seq, causal, split_expected",
    [
        (
            64,
            48,
            256,
            True,
            True,
        ),  # 96 blocks: the split's 192 four-warp blocks, three an SM, fit one wave as the whole's
        (64, 96, 256, True, True),  # 192 blocks: one wave of the split's blocks, one of the whole's (two an SM)
        (64, 128, 256, True, False),  # 256 blocks: the split's 512 need two waves, the whole's one
        (128, 48, 256, True, False),  # 96 blocks of head dim 128: the split's blocks one an SM by shared memory
        # 256 blocks of 8 key tiles: the split's launch (1 stage, a short loop) holds two an SM, as many waves as
        # the whole's 3-stage one, but without a pipeline (38-45% slower, session 56)
        (128, 32, 1024, False, False),
        # 320 blocks, two waves whole and split: split where every block walks the same key tiles, not causal
        (64, 40, 1024, False, True),
        (64, 40, 1024, True, False),
    ],
)
def test_the_wave_rule(monkeypatch, D, heads, seq, causal, split_expected):
    """Past half a wave the launch heuristic splits where the split blocks need no more waves (sm_90, a
    132-SM card); the lowering for that launch splits as the choice says, TILE2TRITON_ROW_SPLIT_WAVES=0 not."""
    kernel = tilelang.compile(attention(1, heads, seq, seq, D, 128, 128, causal), out_idx=[3, 4])
    choice = tuning.heuristic(kernel.prim_func, (9, 0))
    assert choice.split_rows == split_expected
    assert ("row_half" in kernel.lowered_for("sm_90").source) == split_expected
    monkeypatch.setenv("TILE2TRITON_ROW_SPLIT_WAVES", "0")
    assert not tuning.heuristic(kernel.prim_func, (9, 0)).split_rows
    assert "row_half" not in kernel.lowered_for("sm_90").source
