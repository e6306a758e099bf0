"""Launch parameters chosen for speed (runtime/tuning.py) and pass configs that change code
(TL_ENABLE_FAST_MATH): the choices, the generated source, and that results stay exact."""

import math

import pytest
import torch
from norm_kernels import rms_norm_splitk
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.runtime import tuning
from tile2triton.runtime.kernel import JITKernel


@pytest.fixture(autouse=True)
def _bound_kernels(monkeypatch):
    """The launch rules here are asserted on the kernels as bound: the row split of attention forwards on
    grids under half a wave (passes/row_split.py; tests/test_row_split.py) is off."""
    monkeypatch.setenv("TILE2TRITON_ROW_SPLIT", "off")


def attention(batch, heads, seq, dim, block_M, block_N, num_stages, threads, causal=False, window=None):
    scale = (1.0 / dim) ** 0.5 * 1.44269504
    shape = [batch, heads, seq, dim]

    @T.prim_func
    def main(Q: T.Tensor(shape, "float16"), K: T.Tensor(shape, "float16"), V: T.Tensor(shape, "float16"),
             Output: T.Tensor(shape, "float16")):  # fmt: skip
        with T.Kernel(T.ceildiv(seq, block_M), heads, batch, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_M, dim], "float16")
            K_shared = T.alloc_shared([block_N, dim], "float16")
            V_shared = T.alloc_shared([block_N, dim], "float16")
            acc_s = T.alloc_fragment([block_M, block_N], "float")
            acc_s_cast = T.alloc_fragment([block_M, block_N], "float16")
            acc_o = T.alloc_fragment([block_M, dim], "float")
            m = T.alloc_fragment([block_M], "float")
            m_prev = T.alloc_fragment([block_M], "float")
            rescale = T.alloc_fragment([block_M], "float")
            row_sum = T.alloc_fragment([block_M], "float")
            denom = T.alloc_fragment([block_M], "float")
            T.copy(Q[bz, by, bx * block_M : (bx + 1) * block_M, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(denom, 0)
            T.fill(m, -T.infinity("float"))
            stop = (
                T.min(T.ceildiv(seq, block_N), T.ceildiv((bx + 1) * block_M, block_N))
                if causal
                else T.ceildiv(seq, block_N)
            )
            # a sliding window (causal): the key tiles from the window's first to the query tile's last
            start = T.max(0, (bx * block_M - window) // block_N) if window is not None else 0
            for k in T.Pipelined(start, stop, num_stages=num_stages):
                T.copy(K[bz, by, k * block_N : (k + 1) * block_N, :], K_shared)
                for i, j in T.Parallel(block_M, block_N):
                    if window is not None:
                        q_idx, k_idx = bx * block_M + i, k * block_N + j
                        keep = (k_idx < seq) & (q_idx >= k_idx) & (q_idx < k_idx + window)
                    else:
                        keep = (k * block_N + j < seq) & ((bx * block_M + i >= k * block_N + j) | (not causal))
                    acc_s[i, j] = T.if_then_else(keep, 0, -T.infinity("float"))
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True)
                T.copy(m, m_prev)
                T.reduce_max(acc_s, m, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    rescale[i] = T.exp2(m_prev[i] * scale - m[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - m[i] * scale)
                T.reduce_sum(acc_s, row_sum, dim=1)
                for i in T.Parallel(block_M):
                    denom[i] = denom[i] * rescale[i] + row_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= rescale[i]
                T.copy(V[bz, by, k * block_N : (k + 1) * block_N, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= denom[i]
            T.copy(acc_o, Output[bz, by, bx * block_M : (bx + 1) * block_M, :])

    return main


def gemm(M, N, K, bm, bn, bk, stages, threads):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_f = T.alloc_fragment((bm, bn), "float")
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, ko * bk], A_s)
                T.copy(B[ko * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * bm, bx * bn])

    return main


def prim(factory, *args, pass_configs=None):
    return tilelang.jit(out_idx=[-1], pass_configs=pass_configs)(factory)(*args)


def attention_ref(q, k, v, causal):
    return torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=causal)


HOPPER = (9, 0)


# ----------------------------------------------------------------------------- the heuristic
def test_attention_shape_and_heuristic_d128():
    """TileLang's example config (128x128 tiles, 256 threads, 2 stages, D128): 8 warps hold the
    two accumulators; 3 stages of K and V tiles (3 * 64 KiB) plus Q (32 KiB) fit in shared memory
    (its 2 key tiles keep 3 on this grid of 4 blocks: TILE2TRITON_FEW_TRIP_STAGES takes larger grids)."""
    kernel = prim(attention, 1, 2, 200, 128, 128, 128, 2, 256)
    shape = tuning.shape_of(kernel.prim_func)
    assert shape == tuning.KernelShape(
        "attention",
        256,
        2 * 128 * 128,
        2,
        2 * 128 * 128 * 2,
        128 * 128 * 2,
        trips=2,
        most_trips=2,
        blocks=2 * 2 * 1,
        gemms=2,
        held_elems=2 * 128 * 128 + 128 * 128 // 2 + 5 * 128,  # acc_s, acc_o; acc_s_cast (fp16); 5 row vectors
    )
    assert tuning.heuristic(kernel.prim_func, HOPPER) == tuning.LaunchChoice(8, 3)


def test_short_loop_takes_the_stages_that_keep_two_blocks_per_sm():
    """A split-K decode's slice (8 iterations): one stage of K and V tiles lets two 4-warp blocks
    share an SM, where 2 or 3 stages leave one; 63 iterations keep the pipelined 3 stages.  The
    grid (16 x 2 x 48 blocks) gives every SM more than two blocks, with TILE2TRITON_GRID_STAGES
    or without (tests/test_short_loops.py has a grid that does not)."""
    short = prim(attention, 48, 2, 1000, 128, 64, 128, 2, 128).prim_func
    assert tuning.shape_of(short).trips == 8
    assert tuning.heuristic(short, HOPPER) == tuning.LaunchChoice(4, 1)
    long = prim(attention, 1, 2, 8000, 128, 64, 128, 2, 128).prim_func
    assert tuning.heuristic(long, HOPPER) == tuning.LaunchChoice(4, 3)


@pytest.mark.parametrize("switch", ["1", "0"])
def test_long_loop_on_a_large_grid_takes_the_stages_that_share_an_sm(monkeypatch, switch):
    """TILE2TRITON_OCCUPANCY_STAGES: 64 x 128 tiles at D64 on 4 warps, 32 iterations: three stages of K and V
    let two blocks share an SM, two stages three.  On 4 x 63 blocks (more than the SMs) the rule takes 2
    stages; on 2 x 63 (at most one block an SM) a second block would not come, and it keeps 3."""
    monkeypatch.setenv("TILE2TRITON_OCCUPANCY_STAGES", switch)
    large = prim(attention, 1, 4, 4000, 64, 64, 128, 2, 128).prim_func
    shape = tuning.shape_of(large)
    assert (shape.blocks, shape.trips) == (252, 32)
    assert [tuning._blocks_per_sm(shape, 4, n) for n in (3, 2)] == [2, 3]
    assert tuning.heuristic(large, HOPPER) == tuning.LaunchChoice(4, 2 if switch == "1" else 3)
    small = prim(attention, 1, 2, 4000, 64, 64, 128, 2, 128).prim_func
    assert tuning.heuristic(small, HOPPER) == tuning.LaunchChoice(4, 3)


@pytest.mark.parametrize("switch", ["1", "0"])
def test_few_key_tiles_take_two_stages(monkeypatch, switch):
    """TILE2TRITON_FEW_TRIP_STAGES: a 256-key sliding window over 128 x 128 tiles runs at most 3 key tiles in
    every block (its start and stop both follow bx), though their intervals allow all 8 of the sequence; on
    320 blocks (more than the SMs) the forward takes 2 stages where it would take 3.  Causal attention over
    the same sequence (8 tiles in the last block) keeps 3, and so does a grid of at most one block an SM."""
    monkeypatch.setenv("TILE2TRITON_FEW_TRIP_STAGES", switch)
    window = prim(attention, 1, 40, 1000, 64, 128, 128, 2, 256, True, 256).prim_func
    shape = tuning.shape_of(window)
    assert (shape.trips, shape.most_trips, shape.blocks) == (None, 3, 320)
    assert tuning.heuristic(window, HOPPER) == tuning.LaunchChoice(4, 2 if switch == "1" else 3)
    causal = prim(attention, 1, 40, 1000, 64, 128, 128, 2, 256, True).prim_func
    assert tuning.shape_of(causal).most_trips == 8
    assert tuning.heuristic(causal, HOPPER) == tuning.LaunchChoice(4, 3)
    # a constant 2 key tiles (200 keys) count as well, on 2 x 100 blocks; on 2 x 2 they keep 3 stages
    short = prim(attention, 1, 100, 200, 64, 128, 128, 2, 256).prim_func
    assert tuning.heuristic(short, HOPPER) == tuning.LaunchChoice(4, 2 if switch == "1" else 3)
    one_wave = prim(attention, 1, 2, 200, 128, 128, 128, 2, 256).prim_func
    assert tuning.heuristic(one_wave, HOPPER) == tuning.LaunchChoice(8, 3)


def test_heuristic_d64_takes_four_warps(monkeypatch):
    """4 warps hold the accumulators (128 x 128 + 128 x 64) of a grid that gives SMs a second
    block (2 x 100 blocks here)."""
    monkeypatch.setenv("TILE2TRITON_FEW_TRIP_STAGES", "0")  # 2 key tiles: stages by that rule otherwise
    kernel = prim(attention, 1, 100, 200, 64, 128, 128, 2, 256)
    assert tuning.shape_of(kernel.prim_func).blocks == 200
    assert tuning.heuristic(kernel.prim_func, HOPPER) == tuning.LaunchChoice(4, 3)


@pytest.mark.parametrize("switch", ["1", "0"])
def test_grid_of_one_block_an_sm_keeps_the_source_warps(monkeypatch, switch):
    """TILE2TRITON_GRID_WARPS: the same forward on 2 x 60 blocks (at most one an SM) keeps the
    source's 8 warps; off, the 4 that hold the accumulators.  A source of 4 warps keeps 4."""
    monkeypatch.setenv("TILE2TRITON_GRID_WARPS", switch)
    kernel = prim(attention, 1, 60, 200, 64, 128, 128, 2, 256)
    assert tuning.shape_of(kernel.prim_func).blocks == 120
    want = 8 if switch == "1" else 4
    assert tuning.heuristic(kernel.prim_func, HOPPER) == tuning.LaunchChoice(want, 3)
    narrow = prim(attention, 1, 60, 200, 64, 128, 128, 2, 128)
    assert tuning.heuristic(narrow.prim_func, HOPPER).num_warps == 4


def test_grid_rules_count_the_devices_sms():
    """The grid rules count a grid's blocks against the device's SMs (runtime/target.Target.sms), an
    H200's 132 where none is known: 120 blocks of the forward above are one wave on 132 SMs (the
    source's 8 warps) and more than one on an H100 PCIe's 114 (the 4 warps that hold the accumulators,
    two blocks an SM)."""
    import dataclasses

    from tile2triton.runtime.target import arch_target

    kernel = prim(attention, 1, 60, 200, 64, 128, 128, 2, 256).prim_func
    sm_90 = arch_target("sm_90")
    assert sm_90.sms == 0 and tuning.heuristic(kernel, sm_90).num_warps == 8
    assert tuning.heuristic(kernel, dataclasses.replace(sm_90, sms=132)).num_warps == 8
    assert tuning.heuristic(kernel, dataclasses.replace(sm_90, sms=114)).num_warps == 4


def test_heuristic_stages_follow_shared_memory():
    """256-row Q tiles at D128: three stages of K and V no longer fit beside Q, so two.  No block
    holds the 2 x 256 x 128 accumulators in registers; 8 warps hold the most of them (16 warps give a
    thread 128 registers, 64 of them for accumulators)."""
    kernel = prim(attention, 1, 1, 300, 128, 256, 128, 3, 256)
    choice = tuning.heuristic(kernel.prim_func, HOPPER)
    shape = tuning.shape_of(kernel.prim_func)
    assert 3 * shape.stage_bytes + shape.fixed_bytes > tuning.SMEM_LIMIT - tuning.SMEM_SLACK
    assert choice == tuning.LaunchChoice(8, 2)
    assert shape.acc_elems > tuning.REGS_PER_THREAD * 32 * 8
    assert tuning._acc_budget(16) * 32 * 16 < tuning._acc_budget(8) * 32 * 8


def test_gemm_keeps_its_warps_and_gets_at_least_three_stages():
    kernel = prim(gemm, 200, 136, 120, 64, 64, 32, 3, 128)
    assert tuning.shape_of(kernel.prim_func).kind == "gemm"
    assert tuning.heuristic(kernel.prim_func, HOPPER) == tuning.LITERAL
    assert tuning.heuristic(prim(gemm, 200, 136, 120, 64, 64, 32, 4, 128).prim_func, HOPPER) == tuning.LITERAL
    two = prim(gemm, 200, 136, 120, 64, 64, 32, 2, 128).prim_func
    assert tuning.heuristic(two, HOPPER) == tuning.LaunchChoice(None, 3)
    # 256x256x128 fp16 tiles: 3 stages (384 KiB) do not fit, the source's 2 stay
    big = prim(gemm, 600, 600, 600, 256, 256, 128, 2, 256).prim_func
    assert tuning.heuristic(big, HOPPER) == tuning.LITERAL


def two_accumulators(M, N, K, bm, bn, bk, threads):
    """gemm_fp8_2xAcc's loop: a gemm accumulator added into a second one every two k tiles."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bn, bk), "float16")
            C_f = T.alloc_fragment((bm, bn), "float")
            C_sum = T.alloc_fragment((bm, bn), "float")
            T.clear(C_f)
            T.clear(C_sum)
            trips = T.ceildiv(K, bk)
            for ko in T.Pipelined(trips, num_stages=3):
                T.copy(A[by * bm, ko * bk], A_s)
                T.copy(B[bx * bn, ko * bk], B_s)
                T.gemm(A_s, B_s, C_f, transpose_B=True)
                if (ko + 1) % 2 == 0:
                    for i, j in T.Parallel(bm, bn):
                        C_sum[i, j] += C_f[i, j]
                    T.clear(C_f)
            if trips % 2 != 0:
                for i, j in T.Parallel(bm, bn):
                    C_sum[i, j] += C_f[i, j]
            T.copy(C_sum, C[by * bm, bx * bn])

    return main


@pytest.mark.parametrize("switch", ["1", "0"])
def test_fragments_a_thread_cannot_hold_take_more_warps(monkeypatch, switch):
    """TILE2TRITON_HELD_WARPS: two 128 x 128 fp32 accumulators are 256 registers a thread of 4
    warps, 128 of 8.  The second accumulator alone too many: 8 warps on a static grid of at most
    one block an SM (8 x 8), the source's 4 on a larger one (16 x 16).  The gemm's own 128 x 256
    accumulator too large: 8 warps on any grid.  One 128 x 128 accumulator fits 4 warps."""
    monkeypatch.setenv("TILE2TRITON_HELD_WARPS", switch)
    want = 8 if switch == "1" else None
    small = prim(two_accumulators, 1000, 1000, 4000, 128, 128, 64, 128).prim_func
    assert tuning.shape_of(small).held_elems == 2 * 128 * 128
    assert tuning.shape_of(small).blocks == 64
    assert tuning.heuristic(small, HOPPER).num_warps == want
    large = prim(two_accumulators, 2000, 2000, 4000, 128, 128, 64, 128).prim_func
    assert tuning.shape_of(large).blocks == 256
    assert tuning.heuristic(large, HOPPER).num_warps is None
    wide = prim(gemm, 4000, 4000, 4000, 128, 256, 64, 3, 128).prim_func
    assert tuning.heuristic(wide, HOPPER).num_warps == want
    assert tuning.heuristic(prim(gemm, 4000, 4000, 4000, 128, 128, 64, 3, 128).prim_func, HOPPER) == tuning.LITERAL
    # a source of 8 warps holds both accumulators already
    assert (
        tuning.heuristic(prim(two_accumulators, 1000, 1000, 4000, 128, 128, 64, 256).prim_func, HOPPER).num_warps
        is None
    )
    # a gemm of 32 rows is an mma.sync loop: TILE2TRITON_REG_WARPS's (off), not this rule's
    thin = prim(two_accumulators, 1000, 1000, 4000, 32, 512, 64, 32).prim_func
    assert tuning.shape_of(thin).held_elems > tuning._acc_budget(1) * 32 and tuning.shape_of(thin).tile_elems > 0
    assert tuning.heuristic(thin, HOPPER).num_warps is None


def test_two_accumulators_are_exact_at_either_warps(dev):
    """The launch with more warps computes what the source's launch computes (odd k-tile count: the tail adds)."""
    M, N, K = 150, 131, 300
    func = prim(two_accumulators, M, N, K, 128, 128, 64, 128).prim_func
    a, b = torch.randn(M, K, device=dev, dtype=torch.float16), torch.randn(N, K, device=dev, dtype=torch.float16)
    want = a.double() @ b.double().T
    for warps in (4, 8):
        out = JITKernel(func, launch=tuning.LaunchChoice(warps, 3))(a, b)
        assert_close(out, want, atol=1e-3, rtol=1e-3)


def test_element_wise_kernels_keep_the_source_launch(monkeypatch):
    """As written, unless their tile is smaller than the block (TILE2TRITON_TILE_WARPS: a warp per 32 elements)."""

    @T.prim_func
    def wide(A: T.Tensor((300,), "float32"), B: T.Tensor((300,), "float32")):
        with T.Kernel(2, threads=128) as bx:
            for i in T.Parallel(256):
                B[bx * 256 + i] = A[bx * 256 + i] + 1.0

    assert tuning.heuristic(tilelang.compile(wide, out_idx=[1]).prim_func, HOPPER) == tuning.LITERAL

    @T.prim_func
    def add(A: T.Tensor((300,), "float32"), B: T.Tensor((300,), "float32")):
        with T.Kernel(3, threads=256) as bx:
            for i in T.Parallel(128):
                B[bx * 128 + i] = A[bx * 128 + i] + 1.0

    assert tuning.heuristic(tilelang.compile(add, out_idx=[1]).prim_func, HOPPER) == tuning.LaunchChoice(4)
    monkeypatch.setenv("TILE2TRITON_TILE_WARPS", "0")
    assert tuning.heuristic(tilelang.compile(add, out_idx=[1]).prim_func, HOPPER) == tuning.LITERAL


@pytest.mark.parametrize("capability", [None, (8, 0), (8, 9)])
def test_heuristic_only_on_hopper(capability):
    kernel = prim(attention, 1, 2, 200, 128, 128, 128, 2, 256)
    assert tuning.heuristic(kernel.prim_func, capability) == tuning.LITERAL


def test_candidates_start_with_the_literal_launch_and_are_unique():
    kernel = prim(attention, 1, 2, 200, 128, 128, 128, 2, 256)
    cands = tuning.candidates(kernel.prim_func, HOPPER)
    assert cands[0] == tuning.LaunchChoice(8, 2) and cands[1] == tuning.LaunchChoice(8, 3)
    assert len(set(cands)) == len(cands)
    assert tuning.LaunchChoice(8, 3, True) in cands
    wide = tuning.candidates(kernel.prim_func, HOPPER, wide=True)
    assert set(cands) <= set(wide) and tuning.LaunchChoice(4, 1) in wide
    # warp specialization is offered with 8 warps or more only (Triton 3.6 fails to build it with 4)
    d64 = tuning.candidates(prim(attention, 1, 2, 200, 64, 128, 128, 2, 256).prim_func, HOPPER)
    assert not any(c.warp_specialize and c.num_warps < 8 for c in d64)


@pytest.mark.parametrize(
    ("value", "mode"), [(None, "heuristic"), ("", "heuristic"), ("1", "heuristic"), ("0", "off"), ("off", "off"),
                        ("search", "search")],
)  # fmt: skip
def test_mode_from_environment(monkeypatch, value, mode):
    if value is None:
        monkeypatch.delenv(tuning.ENV, raising=False)
    else:
        monkeypatch.setenv(tuning.ENV, value)
    assert tuning.mode() == mode


# ----------------------------------------------------------------------------- generated code
def test_launch_choice_reaches_the_generated_source(monkeypatch):
    monkeypatch.setenv("TILE2TRITON_GLUON", "0")  # on sm_90 this attention loop would be lowered to Gluon
    kernel = prim(attention, 1, 2, 200, 128, 128, 128, 2, 256)
    tuned = JITKernel(kernel.prim_func, launch=tuning.LaunchChoice(8, 3, True))
    source = tuned.get_kernel_source(interpret=False)
    assert "num_stages=3, warp_specialize=True" in source
    assert tuned.lowered(False).launches[0].num_warps == 8
    literal = JITKernel(kernel.prim_func, launch=tuning.LITERAL)
    assert "num_stages=2)" in literal.get_kernel_source(interpret=False)
    assert "warp_specialize" not in literal.get_kernel_source(interpret=False)
    # under the interpreter launch parameters do not exist: no warp specialization asked for
    assert "warp_specialize" not in tuned.get_kernel_source(interpret=True)


@pytest.mark.parametrize("causal", [False, True])
def test_tuned_attention_is_exact(dev, causal):
    """A launch choice changes how Triton schedules the program, never what it computes."""
    b, h, s, d = 1, 2, 150, 64
    kernel = prim(attention, b, h, s, d, 64, 32, 2, 128, causal)
    tuned = JITKernel(kernel.prim_func, launch=tuning.LaunchChoice(4, 3))
    q, k, v = (torch.randn(b, h, s, d, device=dev, dtype=torch.float16) for _ in range(3))
    out = tuned(q, k, v)
    assert_close(out, attention_ref(q, k, v, causal), atol=2e-3, rtol=2e-3)


def test_searchable_only_when_every_write_is_a_runtime_output():
    assert tuning.searchable(prim(gemm, 200, 136, 120, 64, 64, 32, 3, 128).prim_func)

    @T.prim_func
    def in_place(A: T.Tensor((100,), "float32")):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(100):
                A[i] = A[i] * 2.0

    assert not tuning.searchable(tilelang.compile(in_place).prim_func)

    @T.prim_func
    def atomics(A: T.Tensor((100,), "float32"), S: T.Tensor((1,), "float32")):
        with T.Kernel(4, threads=128):
            for i in T.Parallel(100):
                T.atomic_add(S[0], A[i])

    assert not tuning.searchable(tilelang.compile(atomics, out_idx=[1]).prim_func)


def test_search_cache_round_trip(monkeypatch, tmp_path):
    monkeypatch.setenv("TILE2TRITON_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TILE2TRITON_DISABLE_CACHE", raising=False)
    choice = tuning.LaunchChoice(4, 3, True)
    tuning.store_cached("k1", choice, {"w4 s3 ws": 1.0})
    tuning.store_cached("k2", tuning.LITERAL, {})
    assert tuning.load_cached("k1") == choice
    assert tuning.load_cached("k2") == tuning.LITERAL
    assert tuning.load_cached("missing") is None
    (tmp_path / "tuning.json").write_text("not json")
    assert tuning.load_cached("k1") is None


def test_search_keeps_the_fastest_and_skips_what_fails(monkeypatch):
    kernel = prim(attention, 1, 2, 200, 128, 128, 128, 2, 256)
    cands = tuning.candidates(kernel.prim_func, HOPPER)
    fake_ms = {c: 5.0 - i for i, c in enumerate(cands)}  # the last candidate is fastest...
    broken = cands[-1]  # ...but does not build
    launched = []

    def compile_choice(choice):  # the "launcher" is the choice itself here
        if choice == broken:
            raise RuntimeError("out of resource: shared memory")
        return choice

    monkeypatch.setattr(tuning, "time_launch", lambda run, reps=10: run() or fake_ms[launched[-1]])
    report = tuning.search(compile_choice, launched.append, kernel.prim_func, HOPPER)
    assert report.choice == cands[-2]
    assert broken.label() not in report.timings_ms
    assert len(report.timings_ms) == len(cands) - 1
    assert set(launched) == set(cands) - {broken}


# ----------------------------------------------------------------------------- fast math
def math_kernel(N, fast):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
            for i in T.Parallel(128):
                x = A[bx * 128 + i]
                B[bx * 128 + i] = T.tanh(x) + T.sin(x) + T.cos(x) + T.log(T.abs(x) + 1.0) + T.log2(x * x + 2.0)

    configs = {tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True} if fast else None
    return tilelang.compile(main, out_idx=[1], pass_configs=configs)


def test_fast_math_changes_the_gpu_source_only_when_asked():
    fast = math_kernel(300, True).get_kernel_source(interpret=False)
    for asm in ("tanh.approx.f32", "sin.approx.ftz.f32", "cos.approx.ftz.f32", "lg2.approx.ftz.f32"):
        assert asm in fast
    plain = math_kernel(300, False).get_kernel_source(interpret=False)
    assert "inline_asm" not in plain
    # Triton's interpreter cannot run PTX: the same kernel keeps the accurate functions there
    assert "inline_asm" not in math_kernel(300, True).get_kernel_source(interpret=True)


def test_fast_math_flag_from_pass_configs():
    assert tuning.fast_math({"tl.enable_fast_math": True})
    assert tuning.fast_math({tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: 1})
    assert not tuning.fast_math({"tl.enable_fast_math": False})
    assert not tuning.fast_math(None)
    assert not tuning.fast_math({"tl.disable_tma_lower": True})


def test_fast_math_kernel_is_exact(dev):
    """Under the interpreter (and within the approximations' error on a GPU) the result is torch's."""
    n = 300
    a = torch.randn(n, device=dev) * 3
    out = math_kernel(n, True)(a)
    x = a.double()
    ref = torch.tanh(x) + torch.sin(x) + torch.cos(x) + torch.log(x.abs() + 1) + torch.log2(x * x + 2)
    assert_close(out, ref, atol=1e-3 if out.is_cuda else 1e-5, rtol=1e-3 if out.is_cuda else 1e-5)
    assert math.isfinite(float(out.sum()))


def test_search_is_off_under_the_interpreter(monkeypatch):
    """TILE2TRITON_TUNE=search times candidates on a GPU only: interpreted calls stay deterministic."""
    monkeypatch.setenv(tuning.ENV, "search")
    kernel = prim(gemm, 70, 90, 100, 32, 32, 32, 2, 128)
    a = torch.randn(70, 100, dtype=torch.float16)
    b = torch.randn(100, 90, dtype=torch.float16)
    out = kernel(a, b)
    assert kernel.tuning is None
    assert kernel.launch_choice is None  # nothing chosen: launch parameters do not exist there
    assert_close(out, a.double() @ b.double(), atol=2e-2, rtol=1e-2)


@pytest.mark.parametrize("switch", ["1", "0"])
def test_few_warps_keeps_a_one_warp_source(monkeypatch, switch):
    """TILE2TRITON_FEW_WARPS: an attention loop of a 32-thread source (NSA's 16 query rows) whose
    accumulators fit one warp keeps that warp; off, the heuristic's floor of 4 warps.  A 128-thread
    source is never lowered below its own warps."""
    monkeypatch.setenv("TILE2TRITON_FEW_WARPS", switch)
    small = prim(attention, 1, 2, 200, 32, 16, 32, 2, 32).prim_func
    assert tuning.heuristic(small, HOPPER).num_warps == (1 if switch == "1" else 4)
    big = prim(attention, 1, 2, 200, 64, 64, 64, 2, 128).prim_func
    assert tuning.heuristic(big, HOPPER).num_warps == 4


def reverse_cumsum(rows, block):
    """gdn's chunk cumsum: a 64-element tile on 256 threads."""

    @T.prim_func
    def main(G: T.Tensor((rows,), "float32"), Out: T.Tensor((rows,), "float32")):
        with T.Kernel(T.ceildiv(rows, block), threads=256) as bx:
            tile = T.alloc_shared((1, block), "float32")
            T.copy(G[bx * block : (bx + 1) * block], tile[0, :])
            T.cumsum(tile, dim=1, reverse=True)
            T.copy(tile[0, :], Out[bx * block : (bx + 1) * block])

    return main


@pytest.mark.parametrize("switch", ["0", "1"])
def test_tile_warps(monkeypatch, switch, dev):
    """TILE2TRITON_TILE_WARPS: a kernel whose largest tile (64 elements) is smaller than its 256
    threads launches with two warps, one element a thread; off, as written.  Results stay exact."""
    monkeypatch.setenv("TILE2TRITON_TILE_WARPS", switch)
    kernel = tilelang.compile(reverse_cumsum(300, 64))
    want = tuning.LaunchChoice(2) if switch == "1" else tuning.LITERAL
    assert tuning.heuristic(kernel.prim_func, HOPPER) == want
    g = torch.randn(300, device=dev)
    out = torch.full((300,), float("nan"), device=dev)
    kernel(g, out)
    ref = torch.cat([c.flip(0).cumsum(0).flip(0) for c in g.cpu().double().split(64)])
    assert_close(out, ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("switch", ["1", "0"])
@pytest.mark.parametrize("reduce_in_loop", [False, True])
def test_reuse_warps(monkeypatch, switch, reduce_in_loop, dev):
    """TILE2TRITON_REUSE_WARPS: a second pass over a row finds the first in L2 only while the blocks
    resident together have read at most L2_REUSE_BYTES (10 MB): 32 KB rows take 32 warps (132 SMs x 2
    blocks), 8 KB rows 8 (132 x 8), 16 KB rows 16 also on a grid of 1500 blocks; 600 blocks of 8 KB fit
    at the source's 4 warps; 256 KB rows fit nowhere and take 32.  A first pass that reduces across the
    block every step keeps the source's warps.  Results as written."""
    monkeypatch.setenv("TILE2TRITON_REUSE_WARPS", switch)
    on = switch == "1" and not reduce_in_loop
    cases = ((8192, 8192, 32), (8192, 2048, 8), (2000, 4096, 16), (1500, 4096, 16), (600, 2048, None), (600, 65536, 32))
    for rows, cols, want in cases:
        func = prim(rms_norm_splitk, rows, cols, 512, 128, reduce_in_loop).prim_func
        assert tuning.heuristic(func, HOPPER) == (tuning.LaunchChoice(want) if on and want else tuning.LITERAL)
    rows, cols = 7, 3 * 96
    kernel = tilelang.compile(rms_norm_splitk(rows, cols, 96, 128, reduce_in_loop), out_idx=[1])
    a = torch.randn(rows, cols, device=dev)
    ad = a.double().cpu()
    assert_close(kernel(a), ad * torch.rsqrt(ad.pow(2).mean(-1, keepdim=True) + 1e-12), atol=1e-5, rtol=1e-5)


def row_sum_then_first(rows, cols, tile):
    """A pass over the row summing it, then four elements of the row read again: 16 bytes re-read, not a row."""
    steps = cols // tile

    @T.prim_func
    def main(A: T.Tensor((rows, cols), "float32"), B: T.Tensor((rows, 4), "float32")):
        with T.Kernel(rows, threads=128) as bx:
            a_tile = T.alloc_fragment((tile,), "float32")
            acc = T.alloc_fragment((tile,), "float32")
            total = T.alloc_fragment((1,), "float32")
            T.clear(acc)
            for k in T.serial(steps):
                T.copy(A[bx, k * tile], a_tile)
                for j in T.Parallel(tile):
                    acc[j] += a_tile[j]
            T.reduce_sum(acc, total, dim=0)
            for j in T.Parallel(4):
                B[bx, j] = total[0] - A[bx, j]

    return main


def test_reuse_warps_counts_what_is_read_again(dev):
    """The bytes re-read are the smaller pass's: a 32 KB first pass followed by a four-element read keeps the
    source's warps (the rule would take 32 for a whole second pass at this shape)."""
    assert tuning.heuristic(prim(row_sum_then_first, 8192, 8192, 512).prim_func, HOPPER) == tuning.LITERAL
    rows, cols = 9, 4 * 72
    kernel = tilelang.compile(row_sum_then_first(rows, cols, 72), out_idx=[1])
    a = torch.randn(rows, cols, device=dev)
    ad = a.double().cpu()
    assert_close(kernel(a), ad.sum(1, keepdim=True) - ad[:, :4], atol=1e-4, rtol=1e-5)
