"""Attention loops lowered to Gluon for Hopper (codegen/gluon_attention.py).

Which kernels take the Gluon route is checked on the CPU; the generated module is compiled for
sm_90 with the installed Triton (no GPU needed; the GPU machine's Triton 3.6 names some Gluon
functions differently, so run the compile tests with it too: PYTHONPATH=<triton 3.6> pytest -k compile);
it runs against torch on a GPU of compute capability 9.0.  The kernel variants also run through the
tl lowering on the interpreter, against the same torch reference.
"""

import importlib.util
import math
import os
from unittest import mock

import pytest
import torch
from t2t_util import assert_close, compile_gluon_for_hopper, gluon_descriptor_types, poison

import tile2triton
import tile2triton.language as T
from tile2triton.codegen import gluon_attention
from tile2triton.codegen.emit import emit_module
from tile2triton.codegen.lower import LoweringOptions
from tile2triton.compiler import bind_kernel_source

HAS_GLUON = importlib.util.find_spec("triton.experimental.gluon") is not None


def attention(
    batch,
    heads,
    seq,
    dim,
    causal,
    layout="bhsd",
    block_m=128,
    block_n=128,
    threads=256,
    extra=False,
    dtype="float16",
    groups=1,
    clear=None,
    start=0,
    hole=None,
    sink=False,
    window=None,
):
    """TileLang's flash-attention forward (examples/flash_attention), BHSD or BSHD; ``groups`` query
    heads share a K/V head (example_gqa_fwd_bshd.py: kv head = by // groups); ``clear``: S zeroed by
    ``T.clear(acc_s)`` or by ``clear_accum=True``, the mask applied after the gemm; ``start``: the
    first K/V tile; ``sink``: a learned sink logit per head joins each row's softmax
    (examples/attention_sink: ``sinks[i] = Sinks[by]``); ``window``: causal attention to the last
    ``window`` keys only, its loop from ``T.max(0, ...)`` (example_mha_sink_fwd_bhsd.py's sliding
    window: a loop not proven to run).  ``hole`` names a variation the Gluon route
    must refuse (or get right)."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504
    kv_heads = heads // groups
    shape = [batch, heads, seq, dim] if layout == "bhsd" else [batch, seq, heads, dim]
    kv_shape = [batch, kv_heads, seq, dim] if layout == "bhsd" else [batch, seq, kv_heads, dim]
    accum = "float"
    kv_dtype = "bfloat16" if hole == "kv_dtype" else dtype
    mask_first, clear_s, clear_accum = clear is None, clear == "clear", clear == "clear_accum"
    q_let, k_let = hole == "q_let", hole == "k_let"
    fp16_sum, wide_read, no_logsum_fill = hole == "fp16_sum", hole == "wide_read", hole == "no_logsum_fill"
    write_k, s_after, v_into_q = hole == "write_k", hole == "s_after", hole == "v_into_q"
    second_kernel, clear_first, int_div = hole == "second_kernel", hole == "clear_first", hole == "int_div"
    reduce_k, lane_global = hole == "reduce_k", hole == "lane_global"

    def box(t, b, h, start, rows):
        return t[b, h, start : start + rows, :] if layout == "bhsd" else t[b, start : start + rows, h, :]

    @T.prim_func
    def main(
        Q: T.Tensor(shape, dtype),
        K: T.Tensor(kv_shape, kv_dtype),
        V: T.Tensor(kv_shape, dtype),
        Output: T.Tensor(shape, dtype),
        Bias: T.Tensor([seq], accum),
        Sinks: T.Tensor([heads], dtype),
    ):
        with T.Kernel(T.ceildiv(seq, block_m), heads, batch, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_m, dim], dtype)
            K_shared = T.alloc_shared([block_n, dim], dtype)
            V_shared = T.alloc_shared([block_n, dim], dtype)
            O_shared = T.alloc_shared([block_m, dim], dtype)
            acc_s = T.alloc_fragment([block_m, block_n], accum)
            acc_s_cast = T.alloc_fragment([block_m, block_n], dtype)
            acc_o = T.alloc_fragment([block_m, dim], accum)
            scores_max = T.alloc_fragment([block_m], accum)
            scores_max_prev = T.alloc_fragment([block_m], accum)
            scores_scale = T.alloc_fragment([block_m], accum)
            scores_sum = T.alloc_fragment([block_m], accum)
            logsum = T.alloc_fragment([block_m], accum)
            sinks = T.alloc_fragment([block_m], dtype)
            if q_let:
                q_row = bx * block_m
                T.copy(box(Q, bz, by, q_row, block_m), Q_shared)
            else:
                T.copy(box(Q, bz, by, bx * block_m, block_m), Q_shared)
            T.fill(acc_o, 0)
            if not no_logsum_fill:
                T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum))
            if fp16_sum:
                T.fill(scores_sum, 0)
            if sink:
                for i in T.Parallel(block_m):
                    sinks[i] = Sinks[by]
            if lane_global:  # a global read that differs along the rows
                for i in T.Parallel(block_m):
                    sinks[i] = Bias[T.min(bx * block_m + i, seq - 1)]
            loop_range = (
                T.min(T.ceildiv(seq, block_n), T.ceildiv((bx + 1) * block_m, block_n))
                if causal
                else T.ceildiv(seq, block_n)
            )
            first = T.max(0, (bx * block_m - window) // block_n) if window is not None else start
            for k in T.Pipelined(first, loop_range, num_stages=2):
                if k_let:
                    kv_row = k * block_n
                    T.copy(box(K, bz, by // groups, kv_row, block_n), K_shared)
                elif int_div:  # TileLang's `/` of integers: an integer quotient
                    T.copy(box(K, bz, by / groups, k * block_n, block_n), K_shared)
                else:
                    T.copy(box(K, bz, by // groups, k * block_n, block_n), K_shared)
                if mask_first:
                    if window is not None:
                        for i, j in T.Parallel(block_m, block_n):
                            q_idx = bx * block_m + i
                            k_idx = k * block_n + j
                            acc_s[i, j] = T.if_then_else(
                                q_idx >= k_idx and q_idx < k_idx + window, 0, -T.infinity(accum)
                            )
                    elif causal:
                        for i, j in T.Parallel(block_m, block_n):
                            acc_s[i, j] = T.if_then_else(bx * block_m + i >= k * block_n + j, 0, -T.infinity(accum))
                    else:
                        for i, j in T.Parallel(block_m, block_n):
                            acc_s[i, j] = T.if_then_else(k * block_n + j >= seq, -T.infinity(accum), 0)
                if clear_s:
                    T.clear(acc_s)
                if extra:
                    for i, j in T.Parallel(block_m, block_n):
                        acc_s[i, j] += Bias[k * block_n + j]
                if clear_accum:
                    T.gemm(
                        Q_shared, K_shared, acc_s, transpose_B=True, clear_accum=True, policy=T.GemmWarpPolicy.FullRow
                    )
                elif clear_first:
                    T.gemm(
                        Q_shared, K_shared, acc_s, transpose_B=True, clear_accum=k == 0, policy=T.GemmWarpPolicy.FullRow
                    )
                else:
                    T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                if not mask_first:
                    if causal:
                        for i, j in T.Parallel(block_m, block_n):
                            acc_s[i, j] = T.if_then_else(
                                bx * block_m + i >= k * block_n + j, acc_s[i, j], -T.infinity(accum)
                            )
                    else:
                        for i, j in T.Parallel(block_m, block_n):
                            acc_s[i, j] = T.if_then_else(k * block_n + j >= seq, -T.infinity(accum), acc_s[i, j])
                if wide_read:
                    for i, j in T.Parallel(block_m, block_n):
                        acc_s[i, j] += acc_o[i, j] * 0
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                if reduce_k:
                    T.reduce_max(K_shared, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_m):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                if window is not None:  # a row's keys all outside the window so far: as the example's check_inf
                    for i in T.Parallel(block_m):
                        scores_max[i] = T.if_then_else(scores_max[i] == -T.infinity(accum), 0, scores_max[i])
                for i in T.Parallel(block_m):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_m, block_n):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.copy(acc_s, acc_s_cast)
                if fp16_sum:
                    T.reduce_sum(acc_s_cast, scores_sum, dim=1)
                else:
                    T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_m):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                for i, j in T.Parallel(block_m, dim):
                    acc_o[i, j] *= scores_scale[i]
                if v_into_q:
                    T.copy(box(V, bz, by // groups, k * block_n, block_n), Q_shared)
                    T.gemm(acc_s_cast, Q_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
                else:
                    T.copy(box(V, bz, by // groups, k * block_n, block_n), V_shared)
                    T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            if sink or lane_global:
                for i in T.Parallel(block_m):
                    logsum[i] += T.exp2(sinks[i] * 1.44269504 - scores_max[i] * scale)
            for i, j in T.Parallel(block_m, dim):
                acc_o[i, j] /= logsum[i]
            if s_after:
                for i, j in T.Parallel(block_m, dim):
                    acc_o[i, j] += acc_s[i, j] * 0
            T.copy(acc_o, O_shared)
            T.copy(O_shared, box(Output, bz, by, bx * block_m, block_m))
            if write_k:
                T.copy(O_shared, box(K, bz, by, bx * block_m, block_m))
        if second_kernel:  # a second launch, after the attention one
            with T.Kernel(T.ceildiv(seq, block_m), heads, batch, threads=threads) as (bx, by, bz):
                T.copy(box(Q, bz, by, bx * block_m, block_m), box(Output, bz, by, bx * block_m, block_m))

    return main


def plan_of(prim, cost_model=True, schedule="auto"):
    func = bind_kernel_source(prim)
    return gluon_attention.plan(func.kernels[0], func, cost_model=cost_model, schedule=schedule)


@pytest.mark.parametrize("layout", ["bhsd", "bshd"])
@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_takes_the_gluon_route(causal, layout):
    p = plan_of(attention(1, 2, 1100, 128, causal, layout))  # 9 tiles of 128 keys: the cost model's side
    assert (p.block_n, p.dim, p.dim_v, p.stages) == (128, 128, 128, 3)
    assert [type(s).__name__ for s in p.loop_head] == ["Parallel"]  # the mask; the K/V copies go to the loader


# Kernels that take the Gluon route beyond the plain fp16 128x128 one: each is planned and compiled
# for sm_90 on the CPU, and run against torch on an sm_90 GPU.
VARIANTS = {
    "block_n64": dict(block_n=64, causal=True, seq=77),  # two K/V tiles, the second partial
    "block_n64_long": dict(block_n=64, causal=False, seq=333, layout="bshd"),
    "bf16": dict(dtype="bfloat16", causal=True, seq=333),
    "gqa": dict(layout="bshd", heads=8, groups=4, causal=True, seq=200),  # example_gqa_fwd_bshd.py
    "gqa_int_div": dict(heads=6, groups=3, causal=False, seq=150, hole="int_div"),  # by / groups
    "clear": dict(clear="clear", causal=True, seq=200),  # T.clear(acc_s), the mask after the gemm
    "clear_accum": dict(clear="clear_accum", causal=False, seq=333),  # clear_accum=True, likewise
    "start1": dict(start=1, causal=False, seq=333),  # the loop starts at the second K/V tile
    "one_tile": dict(causal=True, seq=100),  # one loop iteration: the peeled one only
    "q_let": dict(causal=False, seq=200, hole="q_let"),  # Q's box row in a let before its copy
    "k_let": dict(causal=True, seq=200, hole="k_let"),  # K's box row in a let of the loop body
    "fp16_sum": dict(causal=False, seq=200, hole="fp16_sum"),  # reduce_sum of fp16 P into fp32
    "sink": dict(sink=True, causal=True, seq=333),  # Sinks[by] read before the loop, used after it
    "sink_gqa_bf16": dict(sink=True, causal=False, seq=200, heads=6, groups=3, dtype="bfloat16"),
    # one consumer warpgroup: 64 rows, 128 threads (planned past the cost model: not measured faster yet)
    "one_consumer": dict(threads=128, block_m=64, block_n=64, causal=True, seq=150),
    # a sliding window (example_mha_sink_fwd_bhsd.py's): a loop not proven to run, the serial schedule
    "window": dict(window=128, block_n=64, sink=True, causal=True, seq=333),
    "window_wide_tile": dict(window=200, causal=True, seq=450),  # a window that is no multiple of the tile
    # a loop from the second tile of one, which runs zero times: only the sink's weight, dropped (zeros)
    "empty_loop": dict(start=1, sink=True, causal=False, seq=100),
}
SERIAL_BY_DEFAULT = {"window", "window_wide_tile", "empty_loop"}  # loops not proven to run


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_variants_take_the_gluon_route(name):
    kwargs = VARIANTS[name]
    args = dict(batch=1, heads=2, dim=128) | kwargs
    p = plan_of(attention(**args), cost_model=False)  # the route serves them; the cost model is tested apart
    assert (p.block_n, p.dim, p.dim_v) == (kwargs.get("block_n", 128), 128, 128)
    assert p.schedule == ("serial" if name in SERIAL_BY_DEFAULT else "rotated")  # rotated where the loop provably runs
    assert plan_of(attention(**args), cost_model=False, schedule="serial").schedule == "serial"  # serial anywhere


def test_the_rotated_schedule_needs_a_loop_that_provably_runs():
    """It peels the first iteration; the serial schedule serves the same loop, which may run zero times."""
    window = attention(batch=1, heads=2, seq=333, dim=128, causal=True, window=128, block_n=64)
    with pytest.raises(gluon_attention.NotAttention, match="provably runs at least once"):
        plan_of(window, cost_model=False, schedule="rotated")
    # an empty loop (VARIANTS["empty_loop"]): what follows it reads only fragments filled before it
    with pytest.raises(gluon_attention.NotAttention, match="provably runs at least once"):
        plan_of(attention(1, 2, 100, 128, False, start=1), cost_model=False, schedule="rotated")
    # ... where the output reads S, which only the loop writes, neither schedule can serve it
    with pytest.raises(gluon_attention.NotAttention, match="read only fragments written before it"):
        plan_of(attention(1, 2, 333, 128, True, window=256, hole="s_after"), cost_model=False)


def test_one_consumer_warpgroup_plans_for_64_rows_of_128_threads():
    p = plan_of(attention(batch=1, heads=2, seq=150, dim=128, causal=True, threads=128, block_m=64, block_n=64), False)
    assert p.consumers == 1 and p.block_n == 64


@pytest.mark.parametrize("causal", [False, True])
def test_a_loop_over_more_than_512_keys_takes_the_gluon_route(causal):
    """The cost model counts whole tiles of keys: 600 keys are 5 tiles of 128 (10 of 64), 640 a block's
    loop (causal: the last row block's)."""
    assert plan_of(attention(1, 2, 600, 128, causal)).block_n == 128
    assert plan_of(attention(1, 2, 600, 128, causal, block_n=64)).block_n == 64


def test_a_sliding_window_over_more_than_512_keys_takes_the_serial_schedule():
    """A window of 512 keys and a row tile of 128: the longest loop is 5 tiles of 128 keys."""
    p = plan_of(attention(1, 2, 1100, 128, True, window=512))
    assert (p.schedule, p.block_n) == ("serial", 128)


def test_forced_route_skips_only_the_cost_model():
    """TILE2TRITON_GLUON=force (LoweringOptions.gluon_cost_model=False) plans a kernel the cost model
    leaves to tl, and still refuses one the route cannot serve."""
    p = plan_of(attention(batch=1, heads=2, seq=200, dim=64, causal=False), cost_model=False)
    assert (p.dim, p.dim_v) == (64, 64)
    with pytest.raises(gluon_attention.NotAttention, match="64 rows per 128 threads"):
        plan_of(attention(batch=1, heads=2, seq=200, dim=128, causal=False, threads=128, block_m=128), cost_model=False)


@pytest.mark.parametrize(
    "kwargs, reason",
    [
        (dict(dim=64, seq=600), "head dim 128"),  # not measured faster at head dim 64
        (dict(seq=500), "more than 512 keys"),  # 4 iterations of 128 keys: too few to overlap
        (dict(seq=500, block_n=64), "more than 512 keys"),  # 8 of 64, likewise
        (dict(threads=128, block_m=64, block_n=64, seq=600), "two consumer warpgroups"),
        (dict(threads=128, block_m=128), "64 rows per 128 threads"),
        (dict(threads=384, block_m=192), "128 or 256 threads"),
        (dict(extra=True), "row-major fragments"),  # a global read (an attention bias) in the loop
        (dict(hole="lane_global"), "row-major fragments"),  # a global read along the rows, before it
        # logsum never filled: TileLang reads an uninitialized fragment, Gluon an undefined name
        (dict(hole="no_logsum_fill"), "written before they are read"),
        # the loader reads K tiles ahead of the consumers: a store into K would race with it
        (dict(hole="write_k"), "no stores to the tensors"),
        # TMA copies bytes: a bf16 K cannot be converted into an fp16 K_shared on the way
        (dict(hole="kv_dtype"), "shared buffers' dtype"),
        # acc_o is 128 wide, the T.Parallel 64: TileLang reads its first 64 columns
        (dict(hole="wide_read", block_n=64), "whole fragments of its own shape"),
        # V copied into Q_shared: the later iterations' Q K^T would read V
        (dict(hole="v_into_q"), "six distinct buffers"),
        # S cleared on the first iteration only: use_acc would be a run-time value
        (dict(hole="clear_first"), "constant clear_accum"),
        (dict(hole="second_kernel"), "one T.Kernel"),
        # a reduction of K_shared (128 x 128, like S): the consumers never hold K in registers
        (dict(hole="reduce_k"), "reductions of fragments"),
        # a sliding window of 64-key tiles: its longest loop is 4 tiles, 256 keys
        (dict(window=128, block_n=64, causal=True, seq=600), "more than 512 keys"),
    ],
)
def test_other_kernels_keep_the_tl_lowering(kwargs, reason):
    args = dict(batch=1, heads=2, seq=200, dim=128, causal=False) | kwargs
    with pytest.raises(gluon_attention.NotAttention, match=reason):
        plan_of(attention(**args))


def _gluon_module(prim, func=None, schedule="auto"):
    func = func or bind_kernel_source(prim)
    options = LoweringOptions(gluon=True, tensor_descriptors=True, gluon_cost_model=False, gluon_schedule=schedule)
    module = emit_module(func, options)
    assert module.source.startswith("# Gluon generated by tile2triton")
    return module


def _compile_for_hopper(module, tmp_path, dtype="float16", overlapped=True, gemms=True):
    """Compile the generated module's kernel for sm_90 with this machine's Triton (no GPU needed);
    ``overlapped``: the rotated schedule's loop has iterations after the peeled one, whose P V stays
    in flight (the serial schedule waits for every gemm); ``gemms``: the loop is not folded away."""
    half = "*fp16" if dtype == "float16" else "*bf16"
    compiled = compile_gluon_for_hopper(module, tmp_path, half, {"Bias": "*fp32"})
    ptx = compiled.asm["ptx"]
    assert (ptx.count("wgmma.mma_async") > 0) == gemms
    assert ("wgmma.wait_group.sync.aligned 1;" in ptx) == overlapped
    assert compiled.metadata.shared <= 227 * 1024
    return compiled


@pytest.mark.skipif(not HAS_GLUON, reason="this Triton has no Gluon")
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_module_compiles_for_hopper(causal, tmp_path):
    """The generated module compiles for sm_90 with the installed Triton (no GPU needed)."""
    _compile_for_hopper(_gluon_module(attention(2, 3, 333, 128, causal, "bshd")), tmp_path)


@pytest.mark.skipif(not HAS_GLUON, reason="this Triton has no Gluon")
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_variant_modules_compile_for_hopper(name, tmp_path):
    kwargs = VARIANTS[name]
    module = _gluon_module(attention(**(dict(batch=2, heads=2, dim=128) | kwargs)))
    source = module.source
    if name in SERIAL_BY_DEFAULT:  # the serial schedule: the loop as written, no iteration peeled before it
        assert "warpgroup_mma_wait(1," not in source and "previous_phase" not in source
    if name.startswith("clear"):  # S's zeros are the gemm's: no fill, no accumulator read
        assert "use_acc=False" in source and "acc_s = gl.full([64, 128], 0" not in source
    if name == "window":  # the window's first tile, T.max(0, (bx * 128 - 128) // 64): a floor division
        assert "% 64 + 64) % 64) // 64)" in source  # of a value that may be negative (Triton's `//` truncates)
    if name == "gqa_int_div":  # TVM's integer `/` is a quotient, never Gluon's float division
        assert "(by // 3)" in source and "(by / 3)" not in source
    if name == "fp16_sum":  # reduced in fp16 (as the tl lowering), stored as the fp32 fragment it is
        assert "scores_sum = (gl.sum(acc_s_cast, axis=1)).to(gl.float32)" in source
    # one tile of keys: the loop's bound is 1, Triton folds away all but the peeled iteration
    overlapped = name != "one_tile" and name not in SERIAL_BY_DEFAULT
    gemms = name != "empty_loop"  # a loop of no iterations: Triton folds it away
    _compile_for_hopper(module, tmp_path, kwargs.get("dtype", "float16"), overlapped=overlapped, gemms=gemms)


@pytest.mark.skipif(not HAS_GLUON, reason="this Triton has no Gluon")
@pytest.mark.parametrize("name", ["sink", "clear", "start1", "gqa"])
def test_serial_schedule_modules_compile_for_hopper(name, tmp_path):
    """TILE2TRITON_GLUON_SCHEDULE=serial on loops the rotated schedule takes by default."""
    kwargs = VARIANTS[name]
    module = _gluon_module(attention(**(dict(batch=2, heads=2, dim=128) | kwargs)), schedule="serial")
    assert "warpgroup_mma_wait(1," not in module.source
    _compile_for_hopper(module, tmp_path, kwargs.get("dtype", "float16"), overlapped=False)


@pytest.mark.skipif(not HAS_GLUON, reason="this Triton has no Gluon")
def test_names_do_not_shadow_the_generated_functions(tmp_path):
    """A block index named like a generated function is renamed in the entry, which launches them."""
    func = bind_kernel_source(attention(1, 2, 200, 128, False))
    func.kernels[0].block_vars[0].name = "main_loader"
    source = _gluon_module(None, func).source
    assert "main_loader_1 = gl.program_id(0)" in source and "(main_loader, (" in source
    _compile_for_hopper(_gluon_module(None, func), tmp_path)


@pytest.mark.skipif(not HAS_GLUON, reason="this Triton has no Gluon")
@pytest.mark.parametrize("causal", [False, True])
def test_host_made_descriptors_are_entry_parameters(causal, tmp_path):
    """With host descriptors the entry takes Q's, K's and V's TMA descriptors as parameters, made per
    call on the host (as TileLang passes its CUtensorMaps), instead of every program building them."""
    func = bind_kernel_source(attention(2, 3, 333, 128, causal, "bshd"))
    options = LoweringOptions(gluon=True, tensor_descriptors=True, gluon_cost_model=False, host_descriptors=True)
    module = emit_module(func, options)
    launch = module.launches[0]
    assert "make_tensor_descriptor" not in module.source
    assert "def main_kernel(Q, K, V, Output, Bias, Sinks, q_desc, k_desc, v_desc):" in module.source
    assert launch.gluon_descriptors
    assert launch.host_descriptors == [
        ("q_desc", 0, [1, 64, 1, 128]),  # one consumer warpgroup's 64 rows of Q
        ("k_desc", 1, [1, 128, 1, 128]),
        ("v_desc", 2, [1, 128, 1, 128]),
    ]
    compiled = compile_gluon_for_hopper(module, tmp_path, "*fp16", {"Bias": "*fp32", **gluon_descriptor_types(launch)})
    assert compiled.asm["ptx"].count("cp.async.bulk.tensor") >= 3  # Q, K and V through TMA
    assert "tensormap" not in compiled.asm["ptx"]  # no tensormap written or fenced by the kernel


# 64 x 8200 x 32 x 128 = 2**31 + 2**25 elements: the output's offsets pass int32's range
LARGE = dict(batch=64, heads=32, seq=8200, dim=128, causal=True, layout="bshd")


@pytest.mark.skipif(not HAS_GLUON, reason="this Triton has no Gluon")
def test_output_offsets_of_a_large_tensor_are_64_bit(tmp_path):
    module = _gluon_module(attention(**LARGE))
    assert "bz.to(gl.int64) * 33587200 + by.to(gl.int64) * 128" in module.source
    _compile_for_hopper(module, tmp_path)


def _reference(q, k, v, causal, layout, start_key=0, sinks=None, window=None):
    """Attention in float64; ``sinks``: one logit per head, a column every row's softmax includes
    and whose weight is dropped; ``window``: each query sees the last ``window`` keys up to itself."""
    if layout == "bshd":
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    groups = q.shape[1] // k.shape[1]
    k, v = (t.repeat_interleave(groups, dim=1)[..., start_key:, :] for t in (k, v))
    scores = q.double() @ k.double().transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[-2]
        scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    if window is not None:
        n = q.shape[-2]
        too_old = torch.ones(n, n, dtype=torch.bool, device=q.device).tril(-window)
        scores = scores.masked_fill(too_old, float("-inf"))
    if sinks is not None:
        sink_column = sinks.double()[None, :, None, None].expand(*scores.shape[:-1], 1)
        weights = torch.softmax(torch.cat([scores, sink_column], dim=-1), dim=-1)[..., :-1]
        return (weights @ v.double()).transpose(1, 2) if layout == "bshd" else weights @ v.double()
    out = torch.softmax(scores, dim=-1) @ v.double()
    return out.transpose(1, 2) if layout == "bshd" else out


def _run(
    device, batch, heads, seq, dim, causal, layout="bhsd", dtype="float16", groups=1, atol=2e-3, schedule="auto", **kwargs
):
    kernel = tile2triton.compile(
        attention(batch, heads, seq, dim, causal, layout, dtype=dtype, groups=groups, **kwargs)
    )
    if device == "cuda":  # the route wherever it applies (short loops too): its results are under test
        forced = {"TILE2TRITON_GLUON": "force", "TILE2TRITON_GLUON_SCHEDULE": schedule}
        with mock.patch.dict(os.environ, forced):
            source = kernel.get_kernel_source()  # lowered once, kept for the calls below
        assert source.startswith("# Gluon generated"), "the attention loop should take the Gluon route"
    torch_dtype = getattr(torch, dtype)
    kv_heads = heads // groups
    shape = (batch, heads, seq, dim) if layout == "bhsd" else (batch, seq, heads, dim)
    kv_shape = (batch, kv_heads, seq, dim) if layout == "bhsd" else (batch, seq, kv_heads, dim)
    q = torch.randn(shape, device=device, dtype=torch_dtype)
    k, v = (torch.randn(kv_shape, device=device, dtype=torch_dtype) for _ in range(2))
    out = poison(shape, torch_dtype, device)
    bias = torch.randn(seq, device=device)
    sinks = torch.randn(heads, device=device, dtype=torch_dtype)
    kernel(q, k, v, out, bias, sinks)
    start_key = kwargs.get("start", 0) * kwargs.get("block_n", 128)
    sink = sinks if kwargs.get("sink") else None
    reference = _reference(q, k, v, causal, layout, start_key, sink, kwargs.get("window"))
    assert_close(out, reference, atol=atol, rtol=atol)


ON_HOPPER = pytest.mark.skipif(
    not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0),
    reason="the Gluon attention route is for sm_90",
)


@pytest.mark.skipif(not HAS_GLUON, reason="this Triton has no Gluon")
def test_runtime_descriptors_have_the_types_the_kernel_is_compiled_for():
    """The descriptors the runtime makes per call for a Gluon launch (runtime/host_descriptors) are
    typed by Triton's JIT as the offline signature types them (runtime/target.triton_signature)."""
    from triton.runtime.jit import mangle_type

    from tile2triton.runtime.host_descriptors import descriptors_for
    from tile2triton.runtime.target import triton_signature

    options = LoweringOptions(gluon=True, tensor_descriptors=True, gluon_cost_model=False, host_descriptors=True)
    launch = emit_module(bind_kernel_source(attention(2, 3, 333, 128, True, "bshd")), options).launches[0]
    args = [torch.randn([int(d) for d in a.shape]).half() if hasattr(a, "shape") else 1 for a in launch.args]
    specs = [(index, box, launch.args[index].dtype.triton) for _, index, box in launch.host_descriptors]
    made = [mangle_type(d) for d in descriptors_for(tuple(args), tuple(specs))]
    assert made == triton_signature(launch)[len(launch.args) :]
    assert all(t.startswith("tensordesc<fp16[") and "NVMMASharedLayout(" in t for t in made)


@pytest.mark.gpu
@ON_HOPPER
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_attention_with_descriptors_made_in_the_kernel(causal):
    """TILE2TRITON_HOST_DESCRIPTORS=0: every program builds the descriptors, as before host-made ones."""
    with mock.patch.dict(os.environ, {"TILE2TRITON_HOST_DESCRIPTORS": "0"}):
        _run("cuda", 2, 3, 333, 128, causal, "bshd")


@pytest.mark.gpu
@ON_HOPPER
@pytest.mark.parametrize("layout", ["bhsd", "bshd"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seq", [200, 333])
def test_gluon_attention_matches_torch(seq, causal, layout):
    _run("cuda", 2, 3, seq, 128, causal, layout)


@pytest.mark.gpu
@ON_HOPPER
@pytest.mark.parametrize("schedule", ["auto", "serial"])
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_gluon_attention_variants_match_torch(name, schedule):
    kwargs = dict(VARIANTS[name], schedule=schedule)
    if kwargs.get("dtype") == "bfloat16":
        kwargs["atol"] = 1.6e-2  # bf16's 8-bit mantissa: P and the output round to it
    elif name == "fp16_sum":
        kwargs["atol"] = 5e-3  # logsum summed in fp16
    _run("cuda", **(dict(batch=2, heads=3, dim=128) | kwargs))


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_variant_kernels_match_torch_on_the_interpreter(name):
    """The same kernels through the tl lowering on the CPU: the TileLang source and the torch
    reference the GPU test holds the Gluon code to agree."""
    kwargs = dict(VARIANTS[name])
    if kwargs.get("dtype") == "bfloat16":
        kwargs["atol"] = 1.6e-2
    _run("cpu", **(dict(batch=1, heads=2, dim=128) | kwargs))


@pytest.mark.gpu
@ON_HOPPER
def test_gluon_attention_output_past_2_31_elements():
    """17 GB of fp16 tensors; the reference only for the first and the last (batch, head)."""
    batch, heads, seq, dim = (LARGE[k] for k in ("batch", "heads", "seq", "dim"))
    kernel = tile2triton.compile(attention(**LARGE))
    assert kernel.get_kernel_source().startswith("# Gluon generated")
    shape = (batch, seq, heads, dim)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.float16) for _ in range(3))
    out = poison(shape, torch.float16, "cuda")
    kernel(q, k, v, out, torch.randn(seq, device="cuda"), torch.randn(heads, device="cuda", dtype=torch.float16))
    assert not out.isnan().any()
    for b, h in ((0, 0), (batch - 1, heads - 1)):
        one = (slice(b, b + 1), slice(None), slice(h, h + 1))
        assert_close(out[one], _reference(q[one], k[one], v[one], True, "bshd"), atol=2e-3, rtol=2e-3)


def test_float32_division_rounds_correctly_unless_fast_math():
    """As the tl lowering: TileLang's float32 `/` (nvcc without --use_fast_math) rounds correctly,
    Triton's is approximate; ``TL_ENABLE_FAST_MATH`` lets it be."""
    func = bind_kernel_source(attention(1, 2, 333, 128, True))
    exact = emit_module(func, LoweringOptions(gluon=True, tensor_descriptors=True, gluon_cost_model=False)).source
    fast = emit_module(
        func, LoweringOptions(gluon=True, tensor_descriptors=True, gluon_cost_model=False, fast_math=True)
    ).source
    assert "acc_o = gl.div_rn(acc_o, logsum[:, None])" in exact
    assert "acc_o = (acc_o / logsum[:, None])" in fast and "div_rn" not in fast
