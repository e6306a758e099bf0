"""Short attention loops (issue 23): loop iterations bounded by value ranges
(TILE2TRITON_TRIP_BOUNDS), short loops not split at their masks (TILE2TRITON_SPLIT_MIN_TRIPS), and
the short-loop stage choice that counts the blocks a static grid puts on an SM
(TILE2TRITON_GRID_STAGES)."""

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import ir
from tile2triton.ir.dtypes import INT32
from tile2triton.passes.analysis import Ranges
from tile2triton.runtime import tuning

pytestmark = pytest.mark.poison_empty

SWITCHES = ("TILE2TRITON_TRIP_BOUNDS", "TILE2TRITON_SPLIT_MIN_TRIPS", "TILE2TRITON_GRID_STAGES")


@pytest.fixture(autouse=True)
def _switches_off(monkeypatch):
    # every switch off unless a test turns it on, whatever settings' defaults are
    for name in SWITCHES:
        monkeypatch.setenv(name, "0")
    monkeypatch.setenv("TILE2TRITON_TMA_MIN_TRIPS", "17")  # explicit, whatever settings' default is
    monkeypatch.setenv("TILE2TRITON_HOST_DESCRIPTORS", "0")


def sink_attention(heads, seq_q, seq_kv, dim, window, block_M, block_N, threads=128):
    """Attention with a sink term per head, causal, optionally a sliding window: the loop runs from
    ``start`` to ``end``, both computed from the block index (TileLang's attention-sink forward)."""
    scale = dim**-0.5 * 1.44269504
    past = seq_kv - seq_q

    @T.prim_func
    def main(
        Q: T.Tensor([heads, seq_q, dim], "float16"),
        K: T.Tensor([heads, seq_kv, dim], "float16"),
        V: T.Tensor([heads, seq_kv, dim], "float16"),
        Sinks: T.Tensor([heads], "float16"),
        Output: T.Tensor([heads, seq_q, dim], "float16"),
    ):
        with T.Kernel(T.ceildiv(seq_q, block_M), heads, threads=threads) as (bx, by):
            Q_s = T.alloc_shared([block_M, dim], "float16")
            K_s = T.alloc_shared([block_N, dim], "float16")
            V_s = T.alloc_shared([block_N, dim], "float16")
            acc_s = T.alloc_fragment([block_M, block_N], "float")
            p = T.alloc_fragment([block_M, block_N], "float16")
            acc_o = T.alloc_fragment([block_M, dim], "float")
            m = T.alloc_fragment([block_M], "float")
            m_prev = T.alloc_fragment([block_M], "float")
            rescale = T.alloc_fragment([block_M], "float")
            row_sum = T.alloc_fragment([block_M], "float")
            denom = T.alloc_fragment([block_M], "float")
            T.copy(Q[by, bx * block_M : (bx + 1) * block_M, :], Q_s)
            T.fill(acc_o, 0)
            T.fill(denom, 0)
            T.fill(m, -T.infinity("float"))
            end = T.min(T.ceildiv(seq_kv, block_N), T.ceildiv((bx + 1) * block_M + past, block_N))
            start = T.max(0, (bx * block_M + past - window) // block_N) if window is not None else 0
            for k in T.Pipelined(start, end, num_stages=2):
                T.copy(K[by, k * block_N : (k + 1) * block_N, :], K_s)
                for i, j in T.Parallel(block_M, block_N):
                    q_idx = bx * block_M + i + past
                    k_idx = k * block_N + j
                    if window is not None:
                        acc_s[i, j] = T.if_then_else(q_idx >= k_idx and q_idx < k_idx + window, 0, -T.infinity("float"))
                    else:
                        acc_s[i, j] = T.if_then_else(q_idx >= k_idx, 0, -T.infinity("float"))
                T.gemm(Q_s, K_s, acc_s, transpose_B=True)
                T.copy(m, m_prev)
                T.reduce_max(acc_s, m, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    m[i] = T.if_then_else(m[i] == -T.infinity("float"), 0, m[i])
                    rescale[i] = T.exp2(m_prev[i] * scale - m[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - m[i] * scale)
                T.reduce_sum(acc_s, row_sum, dim=1)
                for i in T.Parallel(block_M):
                    denom[i] = denom[i] * rescale[i] + row_sum[i]
                T.copy(acc_s, p)
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= rescale[i]
                T.copy(V[by, k * block_N : (k + 1) * block_N, :], V_s)
                T.gemm(p, V_s, acc_o)
            for i in T.Parallel(block_M):
                denom[i] += T.exp2(Sinks[by] * 1.44269504 - m[i] * scale)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= denom[i]
            T.copy(acc_o, Output[by, bx * block_M : (bx + 1) * block_M, :])

    return main


def sink_ref(q, k, v, sinks, window):
    seq_q, seq_kv = q.shape[1], k.shape[1]
    s = torch.einsum("hqd,hkd->hqk", q.double(), k.double()) * q.shape[-1] ** -0.5
    qpos = torch.arange(seq_q, device=q.device)[:, None] + seq_kv - seq_q
    kpos = torch.arange(seq_kv, device=q.device)[None, :]
    bad = kpos > qpos
    if window is not None:
        bad = bad | (kpos <= qpos - window)
    s = s.masked_fill(bad, float("-inf"))
    sk = sinks.double().view(-1, 1, 1)
    mx = torch.maximum(s.amax(-1, keepdim=True), sk)
    e = torch.exp(s - mx)
    return torch.einsum("hqk,hkd->hqd", e / (e.sum(-1, keepdim=True) + torch.exp(sk - mx)), v.double())


def _source(monkeypatch, env, *args):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    kernel = tilelang.jit(out_idx=[-1])(sink_attention)(*args)
    return kernel.lowered_for("sm_90").source


# ----------------------------------------------------------------------------- value ranges
def test_floor_division_of_a_range_below_zero():
    """TileLang's // rounds toward -inf, so (bx * 32 - 64) // 32 over bx in [0, 3] is [-2, 1]
    (with ``floor_below_zero``, which TILE2TRITON_TRIP_BOUNDS turns on; else unknown)."""
    bx = ir.Var("bx", INT32, "let")
    ranges = Ranges(floor_below_zero=True)
    ranges.set(bx, 0, 3)
    c = lambda v: ir.Const(v, INT32)  # noqa: E731
    e = ir.BinOp("//", ir.BinOp("-", ir.BinOp("*", ir.VarRef(bx), c(32), INT32), c(64), INT32), c(32), INT32)
    assert ranges.of(e) == (-2, 1)
    assert ranges.of(ir.Call("max", [c(0), e], INT32)) == (0, 1)
    assert ranges.copy().of(e) == (-2, 1)
    assert Ranges().of(e) is None


def test_most_counts_block_by_block():
    """A sliding window's loop, start = max(0, bx - 1) and end = min(3, bx + 1) over bx in [0, 2]: the
    intervals allow 3 iterations, but no block runs more than 2 (``Ranges.most`` evaluates the span
    block by block, through the lets)."""
    bx = ir.Var("bx", INT32, "let")
    start, end = ir.Var("start", INT32, "let"), ir.Var("end", INT32, "let")
    c = lambda v: ir.Const(v, INT32)  # noqa: E731
    ranges = Ranges(floor_below_zero=True)
    ranges.set(bx, 0, 2)
    for var, value in (
        (end, ir.Call("min", [c(3), ir.BinOp("+", ir.VarRef(bx), c(1), INT32)], INT32)),
        (start, ir.Call("max", [c(0), ir.BinOp("-", ir.VarRef(bx), c(1), INT32)], INT32)),
    ):
        ranges.bind(var, value)
    span = ir.BinOp("-", ir.VarRef(end), ir.VarRef(start), INT32)
    assert ranges.of(span) == (0, 3)
    assert ranges.most(span) == 2
    assert ranges.copy().most(span) == 2
    free = ir.Var("n", INT32, "let")  # a variable with no range: nothing to enumerate
    assert ranges.most(ir.BinOp("-", ir.VarRef(free), ir.VarRef(start), INT32)) is None
    wide = ir.Var("by", INT32, "let")  # too many assignments to evaluate one by one
    ranges.set(wide, 0, 1 << 20)
    assert ranges.most(ir.BinOp("+", ir.VarRef(wide), ir.VarRef(bx), INT32)) is None


def test_ranges_of_unsigned_values_and_bit_operations():
    """An unsigned value lies within its dtype whatever else is known (and a result past it may have
    wrapped); shifts by constants and |, ^ of non-negative ranges keep a range: a radix kernel's
    ``hist[bits >> 8]`` of a uint16 needs no bounds mask."""
    from tile2triton.language import dtypes

    u16, u8 = dtypes.DTYPES["uint16"], dtypes.DTYPES["uint8"]
    bits = ir.Var("bits", u16, "let")
    i = ir.Var("i", INT32, "let")
    ranges = Ranges()
    ranges.set(i, 0, 7)
    c = lambda v: ir.Const(v, INT32)  # noqa: E731
    assert ranges.of(ir.VarRef(bits)) == (0, 65535)
    high = ir.BinOp(">>", ir.VarRef(bits), c(8), u16)
    assert ranges.of(high) == (0, 255) and ranges.below(high, 256) and not ranges.below(high, 255)
    assert ranges.of(ir.BinOp("<<", c(1), ir.VarRef(i), INT32)) == (1, 128)
    assert ranges.of(ir.BinOp("^", ir.BinOp("%", ir.VarRef(i), c(2), INT32), c(1), INT32)) == (0, 1)
    assert ranges.of(ir.BinOp("|", ir.VarRef(i), c(8), INT32)) == (0, 15)
    wrapped = ir.BinOp("-", ir.Cast(ir.VarRef(i), u8), ir.Const(1, u8), u8)  # 0 - 1 is 255 in uint8
    assert ranges.of(wrapped) == (0, 255)
    assert ranges.of(ir.BinOp(">>", ir.VarRef(i), ir.VarRef(i), INT32)) is None  # a shift by a variable
    assert ranges.of(ir.BinOp("<<", c(1), c(40), INT32)) is None  # past int32


# ----------------------------------------------------------------------------- generated code
@pytest.mark.parametrize("window", [None, 64])
def test_trip_bounds_send_a_bounded_loop_through_pointers(monkeypatch, window):
    """At most 3 iterations (end = min(ceildiv(seq_kv, 32), ...) with seq_kv = 88): fewer than
    TMA_MIN_TRIPS, so no tensor descriptor once the bound counts; without it the bound is unknown."""
    args = (2, 72, 88, 32, window, 32, 32)
    assert "make_tensor_descriptor" in _source(monkeypatch, {}, *args)
    assert "make_tensor_descriptor" not in _source(monkeypatch, {"TILE2TRITON_TRIP_BOUNDS": "1"}, *args)


def test_trip_bounds_keep_descriptors_for_a_long_loop(monkeypatch):
    """seq_kv = 700 with 32-key tiles: up to 22 iterations, enough for the descriptors."""
    source = _source(monkeypatch, {"TILE2TRITON_TRIP_BOUNDS": "1"}, 2, 690, 700, 32, None, 32, 32)
    assert "make_tensor_descriptor" in source


@pytest.mark.parametrize("window", [None, 64])
def test_split_min_trips_keeps_one_loop(monkeypatch, window):
    args = (2, 72, 88, 32, window, 32, 32)
    assert _source(monkeypatch, {"TILE2TRITON_TRIP_BOUNDS": "1"}, *args).count("tl.range(") == 2  # split at the mask
    short = {"TILE2TRITON_TRIP_BOUNDS": "1", "TILE2TRITON_SPLIT_MIN_TRIPS": "4"}
    assert _source(monkeypatch, short, *args).count("tl.range(") == 1
    # a bound the split minimum does not reach: split again
    assert _source(monkeypatch, {**short, "TILE2TRITON_SPLIT_MIN_TRIPS": "3"}, *args).count("tl.range(") == 2


def test_a_window_of_one_tile_runs_whole(monkeypatch):
    """seq_q = seq_kv = 88, 32-key tiles, a window of 32: every block's loop runs at most 2 tiles
    (start = max(0, bx - 1), end = min(3, bx + 1)), fewer than SPLIT_MIN_TRIPS = 3, so one loop; the
    bounds' intervals alone allow 3 (TRIP_BOUNDS off: the bound is unknown, and the loop splits)."""
    args = (2, 88, 88, 32, 32, 32, 32)
    bounds = {"TILE2TRITON_TRIP_BOUNDS": "1", "TILE2TRITON_SPLIT_MIN_TRIPS": "3"}
    assert _source(monkeypatch, bounds, *args).count("tl.range(") == 1
    assert _source(monkeypatch, {**bounds, "TILE2TRITON_TRIP_BOUNDS": "0"}, *args).count("tl.range(") == 2


# ----------------------------------------------------------------------------- results
@pytest.mark.parametrize(
    "env",
    [{}, {"TILE2TRITON_TRIP_BOUNDS": "1"}, {"TILE2TRITON_TRIP_BOUNDS": "1", "TILE2TRITON_SPLIT_MIN_TRIPS": "4"}],
    ids=["base", "bounds", "unsplit"],
)
@pytest.mark.parametrize("window, seq_q", [(None, 72), (32, 72), (32, 88)])
def test_sink_attention_results(monkeypatch, dev, env, window, seq_q):
    """seq_q 88 with the window of 32: a loop of at most 2 tiles a block, whole once the bounds count."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    heads, seq_q, seq_kv, dim = 2, seq_q, 88, 32
    kernel = tilelang.jit(out_idx=[-1])(sink_attention)(heads, seq_q, seq_kv, dim, window, 32, 32)
    q = torch.randn(heads, seq_q, dim, device=dev).half()
    k = torch.randn(heads, seq_kv, dim, device=dev).half()
    v = torch.randn(heads, seq_kv, dim, device=dev).half()
    sinks = torch.randn(heads, device=dev).half()
    out = kernel(q, k, v, sinks)
    torch.testing.assert_close(out.double(), sink_ref(q, k, v, sinks, window), atol=2e-2, rtol=2e-2)


# ----------------------------------------------------------------------------- stages of short loops
def bounded_attention(batch, heads, seq, dim, block_M, block_N, threads=128):
    """Attention whose loop has a static count (ceildiv(seq, block_N)), over batch x heads x row
    blocks; keys past ``seq`` masked."""
    scale = dim**-0.5 * 1.44269504
    shape = [batch, heads, seq, dim]

    @T.prim_func
    def main(Q: T.Tensor(shape, "float16"), K: T.Tensor(shape, "float16"), V: T.Tensor(shape, "float16"),
             Output: T.Tensor(shape, "float16")):  # fmt: skip
        with T.Kernel(T.ceildiv(seq, block_M), heads, batch, threads=threads) as (bx, by, bz):
            Q_s = T.alloc_shared([block_M, dim], "float16")
            K_s = T.alloc_shared([block_N, dim], "float16")
            V_s = T.alloc_shared([block_N, dim], "float16")
            acc_s = T.alloc_fragment([block_M, block_N], "float")
            p = T.alloc_fragment([block_M, block_N], "float16")
            acc_o = T.alloc_fragment([block_M, dim], "float")
            m = T.alloc_fragment([block_M], "float")
            m_prev = T.alloc_fragment([block_M], "float")
            rescale = T.alloc_fragment([block_M], "float")
            row_sum = T.alloc_fragment([block_M], "float")
            denom = T.alloc_fragment([block_M], "float")
            T.copy(Q[bz, by, bx * block_M : (bx + 1) * block_M, :], Q_s)
            T.fill(acc_o, 0)
            T.fill(denom, 0)
            T.fill(m, -T.infinity("float"))
            for k in T.Pipelined(T.ceildiv(seq, block_N), num_stages=2):
                T.copy(K[bz, by, k * block_N : (k + 1) * block_N, :], K_s)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.if_then_else(k * block_N + j < seq, 0, -T.infinity("float"))
                T.gemm(Q_s, K_s, acc_s, transpose_B=True)
                T.copy(m, m_prev)
                T.reduce_max(acc_s, m, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    rescale[i] = T.exp2(m_prev[i] * scale - m[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - m[i] * scale)
                T.reduce_sum(acc_s, row_sum, dim=1)
                for i in T.Parallel(block_M):
                    denom[i] = denom[i] * rescale[i] + row_sum[i]
                T.copy(acc_s, p)
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= rescale[i]
                T.copy(V[bz, by, k * block_N : (k + 1) * block_N, :], V_s)
                T.gemm(p, V_s, acc_o)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= denom[i]
            T.copy(acc_o, Output[bz, by, bx * block_M : (bx + 1) * block_M, :])

    return main


@pytest.mark.parametrize("batch, grid_stages", [(1, 3), (48, 1)])
def test_grid_stages_follow_the_blocks_an_sm_gets(monkeypatch, batch, grid_stages):
    """8 iterations of 128 keys, 64 x 128 tiles at 4 warps: one stage lets two blocks share an SM,
    three leave one.  A grid of 16 x 2 x batch blocks: with one batch (32 blocks, fewer than the
    SMs) no SM gets a second block, so the deepest pipeline; with 48 (1536 blocks) occupancy wins
    as before.  Without the switch, one stage either way."""
    func = tilelang.jit(out_idx=[-1])(bounded_attention)(batch, 2, 1000, 128, 64, 128).prim_func
    shape = tuning.shape_of(func)
    assert (shape.trips, shape.blocks) == (8, 16 * 2 * batch)
    assert tuning.heuristic(func, (9, 0)) == tuning.LaunchChoice(4, 1)
    monkeypatch.setenv("TILE2TRITON_GRID_STAGES", "1")
    assert tuning.heuristic(func, (9, 0)) == tuning.LaunchChoice(4, grid_stages)


@pytest.mark.parametrize("batch, grid_stages", [(1, 3), (48, 2)])
def test_grid_stages_deepen_a_pipelined_choice(monkeypatch, batch, grid_stages):
    """128 x 64 tiles at head dim 128 (mha_inference's): the occupancy rule already pipelines
    (2 stages, two blocks an SM).  A grid of 16 blocks never gives an SM a second block, so it
    takes the deepest pipeline that fits (3); 768 blocks keep 2 (two blocks an SM pay).  (16 blocks are a grid
    the row split takes: off here, tests/test_row_split.py has it.)"""
    monkeypatch.setenv("TILE2TRITON_ROW_SPLIT", "off")
    func = tilelang.jit(out_idx=[-1])(bounded_attention)(batch, 2, 1000, 128, 128, 64).prim_func
    shape = tuning.shape_of(func)
    assert (shape.trips, shape.blocks) == (16, 16 * batch)
    monkeypatch.setenv("TILE2TRITON_GRID_STAGES", "0")
    assert tuning.heuristic(func, (9, 0)).num_stages == 2
    monkeypatch.setenv("TILE2TRITON_GRID_STAGES", "1")
    assert tuning.heuristic(func, (9, 0)).num_stages == grid_stages


def test_grid_stages_results(monkeypatch, dev):
    monkeypatch.setenv("TILE2TRITON_GRID_STAGES", "1")
    batch, heads, seq, dim = 1, 2, 200, 32
    kernel = tilelang.jit(out_idx=[-1])(bounded_attention)(batch, heads, seq, dim, 32, 32)
    q, k, v = (torch.randn(batch, heads, seq, dim, device=dev).half() for _ in range(3))
    out = kernel(q, k, v)
    ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double())
    torch.testing.assert_close(out.double(), ref, atol=2e-2, rtol=2e-2)
