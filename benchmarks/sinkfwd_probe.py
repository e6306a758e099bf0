"""GPU probe (issue 23, short attention-forward loops): attention-sink forward, GQA forward, GQA decode.

Kernels written the way TileLang's examples are (attention_sink/example_mha_sink_fwd_bhsd,
flash_attention/example_gqa_fwd_bshd, flash_decoding/example_gqa_decode's split kernel and its
combine kernel; as a control, flash_decoding/example_mha_inference, whose stage count ``gs``
changes too: 128 blocks, 8 iterations, 2 -> 3 stages) at the regression suite's sizes, through
tile2triton with each candidate (first) and reference variant (after them):

- ``base``: main's lowering;
- ``tb``: ``TILE2TRITON_TRIP_BOUNDS=1``: a loop whose bounds have value ranges counts at most
  that many iterations (the sink loop: at most 2), so ``TMA_MIN_TRIPS`` loads it through pointers
  (no tensormap written and fenced by every program) where main builds two descriptors in-kernel;
- ``tb+ns``: ``tb`` and ``TILE2TRITON_SPLIT_MIN_TRIPS=4``: such a loop is not split at its causal
  mask either (one pipeline fill, K/V of both iterations in flight at once);
- ``gs``: ``TILE2TRITON_GRID_STAGES=1``: a static loop of at most 16 iterations takes its stage
  count from the blocks an SM actually gets from the grid (64 or 256 blocks on 132 SMs: 1 or 2),
  not from the most an SM could hold (main: 1 stage, no prefetch);
- ``sN``: N stages forced (the launch choice), for reference; ``gs+ws``: 3 stages and Triton's
  warp specialization (``tl.range(warp_specialize=True)``) at the heuristic's 4 warps; ``w8s3``:
  8 warps, 3 stages; ``gs+tma``: ``gs`` with the loop's K/V through host-built tensor descriptors
  (``TMA_MIN_TRIPS=0``, ``HOST_DESCRIPTORS=1``);
- ``hostd``: ``TILE2TRITON_HOST_DESCRIPTORS=1`` (TMA through descriptors the host builds, as
  TileLang passes them), for reference;

timed with ``triton.testing.do_bench`` (warmup 25, rep 200, median; event time, host launch
included) and as CUDA-graph replays of 20 calls (about the device time of one), checked against
torch in float32 (max abs error).  TileLang's kernel times on the H200 (BENCHMARKS.md, kernel ms):
sink 9.3 us, sink window 9.2 us, GQA forward 29.5 us, GQA decode 27.2 us (both kernels),
mha_inference 29.5 us; tile2triton's (main, the suite run of 2026-12-02): 12.9, 13.8, 39.6, 37.9,
31.8 us.

    PYTHONPATH=. python3 benchmarks/sinkfwd_probe.py
"""

import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
import triton  # noqa: E402

import tile2triton as tilelang  # noqa: E402
import tile2triton.language as T  # noqa: E402
from tile2triton.runtime import tuning  # noqa: E402

DEV = "cuda" if torch.cuda.is_available() else "cpu"
ENV = (
    "TILE2TRITON_TRIP_BOUNDS",
    "TILE2TRITON_SPLIT_MIN_TRIPS",
    "TILE2TRITON_GRID_STAGES",
    "TILE2TRITON_HOST_DESCRIPTORS",
    "TILE2TRITON_TMA_MIN_TRIPS",
)
FAST = {"tl.enable_fast_math": True}
CANDIDATES = ("base", "tb", "tb+ns", "gs")


def sink_fwd(batch, heads, seq_q, seq_kv, dim, window_size, block_M, block_N, num_stages, threads):
    sm_scale = (1.0 / dim) ** 0.5
    scale = sm_scale * 1.44269504
    q_shape = [batch, heads, seq_q, dim]
    kv_shape = [batch, heads, seq_kv, dim]
    dtype, accum_dtype = "float16", "float32"
    past_len = seq_kv - seq_q

    @T.prim_func
    def main(
        Q: T.Tensor(q_shape, dtype),
        K: T.Tensor(kv_shape, dtype),
        V: T.Tensor(kv_shape, dtype),
        Output: T.Tensor(q_shape, dtype),
        Sinks: T.Tensor([heads], dtype),
    ):
        with T.Kernel(T.ceildiv(seq_q, block_M), heads, batch, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_M, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            O_shared = T.alloc_shared([block_M, dim], dtype)
            acc_s = T.alloc_fragment([block_M, block_N], accum_dtype)
            acc_s_cast = T.alloc_fragment([block_M, block_N], dtype)
            acc_o = T.alloc_fragment([block_M, dim], accum_dtype)
            scores_max = T.alloc_fragment([block_M], accum_dtype)
            scores_max_prev = T.alloc_fragment([block_M], accum_dtype)
            scores_scale = T.alloc_fragment([block_M], accum_dtype)
            scores_sum = T.alloc_fragment([block_M], accum_dtype)
            logsum = T.alloc_fragment([block_M], accum_dtype)
            sinks = T.alloc_fragment([block_M], dtype)

            T.copy(Q[bz, by, bx * block_M : (bx + 1) * block_M, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))
            for i in T.Parallel(block_M):
                sinks[i] = Sinks[by]
            end = T.min(T.ceildiv(seq_kv, block_N), T.ceildiv((bx + 1) * block_M + past_len, block_N))
            start = T.max(0, (bx * block_M + past_len - window_size) // block_N) if window_size is not None else 0
            for k in T.Pipelined(start, end, num_stages=num_stages):
                T.copy(K[bz, by, k * block_N : (k + 1) * block_N, :], K_shared)
                for i, j in T.Parallel(block_M, block_N):
                    q_idx = bx * block_M + i + past_len
                    k_idx = k * block_N + j
                    if window_size is not None:
                        acc_s[i, j] = T.if_then_else(
                            q_idx >= k_idx and q_idx < k_idx + window_size, 0, -T.infinity(acc_s.dtype)
                        )
                    else:
                        acc_s[i, j] = T.if_then_else(q_idx >= k_idx, 0, -T.infinity(acc_s.dtype))
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum_dtype))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                for i in T.Parallel(block_M):
                    if window_size is not None:
                        scores_max[i] = T.if_then_else(scores_max[i] == -T.infinity(accum_dtype), 0, scores_max[i])
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_M):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(V[bz, by, k * block_N : (k + 1) * block_N, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i in T.Parallel(block_M):
                logsum[i] += T.exp2(sinks[i] * 1.44269504 - scores_max[i] * scale)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bz, by, bx * block_M : (bx + 1) * block_M, :])

    return main


def causal_sink(batch, heads, seq_q, seq_kv, dim, block_M, block_N, num_stages, threads):
    """``sink_fwd`` without a window (causal attention; queries aligned to the last keys): the kernel
    of benchmarks/gluon_route_sweep.py's and division_probe.py's sink rows. Its output is parameter 3."""
    return sink_fwd(batch, heads, seq_q, seq_kv, dim, None, block_M, block_N, num_stages, threads)


def gqa_fwd(batch, heads, seq_len, dim, groups, block_M, block_N, num_stages, threads):
    scale = (1.0 / dim) ** 0.5 * 1.44269504
    head_kv = heads // groups
    q_shape = [batch, seq_len, heads, dim]
    kv_shape = [batch, seq_len, head_kv, dim]
    dtype, accum_dtype = "float16", "float32"

    @T.prim_func
    def main(
        Q: T.Tensor(q_shape, dtype),
        K: T.Tensor(kv_shape, dtype),
        V: T.Tensor(kv_shape, dtype),
        Output: T.Tensor(q_shape, dtype),
    ):
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_M, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            O_shared = T.alloc_shared([block_M, dim], dtype)
            acc_s = T.alloc_fragment([block_M, block_N], accum_dtype)
            acc_s_cast = T.alloc_fragment([block_M, block_N], dtype)
            acc_o = T.alloc_fragment([block_M, dim], accum_dtype)
            scores_max = T.alloc_fragment([block_M], accum_dtype)
            scores_max_prev = T.alloc_fragment([block_M], accum_dtype)
            scores_scale = T.alloc_fragment([block_M], accum_dtype)
            scores_sum = T.alloc_fragment([block_M], accum_dtype)
            logsum = T.alloc_fragment([block_M], accum_dtype)

            T.copy(Q[bz, bx * block_M : (bx + 1) * block_M, by, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))
            loop_range = T.ceildiv(seq_len, block_N)
            for k in T.Pipelined(loop_range, num_stages=num_stages):
                T.copy(K[bz, k * block_N : (k + 1) * block_N, by // groups, :], K_shared)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.if_then_else(k * block_N + j >= seq_len, -T.infinity(acc_s.dtype), 0)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum_dtype))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                for i in T.Parallel(block_M):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_M):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(V[bz, k * block_N : (k + 1) * block_N, by // groups, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bz, bx * block_M : (bx + 1) * block_M, by, :])

    return main


def gqa_decode(batch, heads, groups, seqlen_kv, dim, block_N, block_H, num_split, num_stages, threads):
    scale = (1.0 / dim) ** 0.5 * 1.44269504
    dtype, accum_dtype = "float16", "float32"
    kv_group_num = heads // groups
    valid_block_H = min(block_H, kv_group_num)
    valid_block_N = min(block_N, seqlen_kv // num_split)
    part = seqlen_kv // num_split

    @T.prim_func
    def main(
        Q: T.Tensor([batch, heads, dim], dtype),
        K: T.Tensor([batch, seqlen_kv, groups, dim], dtype),
        V: T.Tensor([batch, seqlen_kv, groups, dim], dtype),
        mask: T.Tensor([batch, seqlen_kv, groups], "uint8"),
        Output: T.Tensor([batch, heads, dim], dtype),
    ):
        glse = T.alloc_global([batch, heads, num_split], dtype)
        Output_partial = T.alloc_global([batch, heads, num_split, dim], dtype)
        with T.Kernel(batch, heads // valid_block_H, num_split, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_H, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            O_shared = T.alloc_shared([valid_block_H, dim], dtype)
            acc_s = T.alloc_fragment([block_H, block_N], accum_dtype)
            acc_s_cast = T.alloc_fragment([block_H, block_N], dtype)
            mask_local = T.alloc_fragment([block_N], "uint8")
            acc_o = T.alloc_fragment([block_H, dim], accum_dtype)
            scores_max = T.alloc_fragment([block_H], accum_dtype)
            scores_max_prev = T.alloc_fragment([block_H], accum_dtype)
            scores_scale = T.alloc_fragment([block_H], accum_dtype)
            scores_sum = T.alloc_fragment([block_H], accum_dtype)
            logsum = T.alloc_fragment([block_H], accum_dtype)
            bid, hid, sid = bx, by, bz
            cur_kv_head = hid // (kv_group_num // valid_block_H)
            T.copy(Q[bid, hid * valid_block_H : hid * valid_block_H + block_H, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))
            loop_range = T.ceildiv(part, block_N)
            for k in T.Pipelined(loop_range, num_stages=num_stages):
                T.copy(
                    K[bid, part * sid + k * valid_block_N : part * sid + (k + 1) * valid_block_N, cur_kv_head, :],
                    K_shared,
                )
                T.copy(
                    mask[bid, part * sid + k * valid_block_N : part * sid + (k + 1) * valid_block_N, cur_kv_head],
                    mask_local,
                )
                T.clear(acc_s)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                for i, j in T.Parallel(block_H, block_N):
                    acc_s[i, j] = T.if_then_else(
                        (mask_local[j] != 0) & (j < part), acc_s[i, j], -T.infinity(accum_dtype)
                    )
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum_dtype))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_H):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                for i in T.Parallel(block_H):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_H, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_H):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_H, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(
                    V[bid, part * sid + k * valid_block_N : part * sid + (k + 1) * valid_block_N, cur_kv_head, :],
                    V_shared,
                )
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_H, dim):
                acc_o[i, j] /= logsum[i]
            for i in T.Parallel(block_H):
                logsum[i] = T.log2(logsum[i]) + scores_max[i] * scale
            for i in T.Parallel(block_H):
                if i < valid_block_H:
                    glse[bid, hid * valid_block_H + i, sid] = logsum[i]
            T.copy(acc_o[:valid_block_H, :], O_shared)
            T.copy(O_shared, Output_partial[bid, hid * valid_block_H : (hid + 1) * valid_block_H, sid, :])

        with T.Kernel(heads, batch, threads=128) as (by, bz):
            po_local = T.alloc_fragment([dim], dtype)
            o_accum_local = T.alloc_fragment([dim], accum_dtype)
            lse_local = T.alloc_fragment([num_split, 128], dtype)
            lse_logsum_local = T.alloc_fragment([128], accum_dtype)
            lse_max_local = T.alloc_fragment([128], accum_dtype)
            scale_local = T.alloc_fragment([128], accum_dtype)
            T.clear(lse_logsum_local)
            T.clear(o_accum_local)
            for k, j in T.Parallel(num_split, 128):
                lse_local[k, j] = glse[bz, by, k]
            T.reduce_max(lse_local, lse_max_local, dim=0, clear=True)
            for k in T.serial(num_split):
                for j in T.Parallel(128):
                    lse_logsum_local[j] += T.exp2(lse_local[k, j] - lse_max_local[j])
            for j in T.Parallel(128):
                lse_logsum_local[j] = T.log2(lse_logsum_local[j]) + lse_max_local[j]
            for k in T.serial(num_split):
                for i in T.Parallel(dim):
                    po_local[i] = Output_partial[bz, by, k, i]
                for j in T.Parallel(128):
                    scale_local[j] = T.exp2(lse_local[k, j] - lse_logsum_local[j])
                for i in T.Parallel(dim):
                    o_accum_local[i] += po_local[i] * scale_local[i]
            for i in T.Parallel(dim):
                Output[bz, by, i] = o_accum_local[i]

    return main


def mha_inference(batch, heads, seqlen_q, seqlen_kv, dim, block_M, block_N, num_split=4):
    """flash_decoding's split-KV MHA inference (non-causal): a split kernel and a combine kernel."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504
    shape_q = [batch, seqlen_q, heads, dim]
    shape_kv = [batch, seqlen_kv, heads, dim]
    part_shape = [batch, seqlen_q, heads, num_split, dim]
    dtype, accum_dtype = "float16", "float32"
    part = seqlen_kv // num_split

    @T.prim_func
    def main(
        Q: T.Tensor(shape_q, dtype),
        K: T.Tensor(shape_kv, dtype),
        V: T.Tensor(shape_kv, dtype),
        Output: T.Tensor(shape_q, dtype),
    ):
        glse = T.alloc_global([batch, heads, num_split, seqlen_q], dtype)
        Output_partial = T.alloc_global(part_shape, dtype)
        with T.Kernel(T.ceildiv(seqlen_q, block_M), heads * batch, num_split, threads=128) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_M, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            O_shared = T.alloc_shared([block_M, dim], dtype)
            acc_s = T.alloc_fragment([block_M, block_N], accum_dtype)
            acc_s_cast = T.alloc_fragment([block_M, block_N], dtype)
            acc_o = T.alloc_fragment([block_M, dim], accum_dtype)
            scores_max = T.alloc_fragment([block_M], accum_dtype)
            scores_max_prev = T.alloc_fragment([block_M], accum_dtype)
            scores_scale = T.alloc_fragment([block_M], accum_dtype)
            scores_sum = T.alloc_fragment([block_M], accum_dtype)
            logsum = T.alloc_fragment([block_M], accum_dtype)
            mid = bx
            hid = by % heads
            bid = by // heads
            sid = bz
            T.copy(Q[bid, mid * block_M : (mid + 1) * block_M, hid, :], Q_shared, disable_tma=True)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))
            loop_range = T.ceildiv(part, block_N)
            for k in T.Pipelined(loop_range, num_stages=2):
                T.copy(K[bid, part * sid + k * block_N : part * sid + (k + 1) * block_N, hid, :], K_shared)
                T.clear(acc_s)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum_dtype))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                for i in T.Parallel(block_M):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_M):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(V[bid, part * sid + k * block_N : part * sid + (k + 1) * block_N, hid, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            for i in T.Parallel(block_M):
                logsum[i] = T.log2(logsum[i]) + scores_max[i] * scale
            T.copy(logsum, glse[bid, hid, sid, mid * block_M : (mid + 1) * block_M])
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output_partial[bid, mid * block_M : (mid + 1) * block_M, hid, sid, :], disable_tma=True)

        with T.Kernel(T.ceildiv(seqlen_q, block_M), heads, batch, threads=128) as (bx, by, bz):
            po_local = T.alloc_fragment([block_M, dim], dtype)
            o_accum_local = T.alloc_fragment([block_M, dim], accum_dtype)
            o_shared = T.alloc_shared([block_M, dim], dtype)
            lse_local = T.alloc_fragment([num_split, block_M], dtype)
            lse_local_split = T.alloc_fragment([block_M], accum_dtype)
            lse_logsum_local = T.alloc_fragment([block_M], accum_dtype)
            lse_max_local = T.alloc_fragment([block_M], accum_dtype)
            scale_local = T.alloc_fragment([block_M], accum_dtype)
            T.clear(lse_logsum_local)
            T.clear(o_accum_local)
            T.copy(glse[bz, by, :, bx * block_M : (bx + 1) * block_M], lse_local)
            T.reduce_max(lse_local, lse_max_local, dim=0, clear=True)
            for k in T.Pipelined(num_split):
                T.copy(lse_local[k, :], lse_local_split)
                for i in T.Parallel(block_M):
                    lse_logsum_local[i] += T.exp2(lse_local_split[i] - lse_max_local[i])
            for i in T.Parallel(block_M):
                lse_logsum_local[i] = T.log2(lse_logsum_local[i]) + lse_max_local[i]
            for k in T.Pipelined(num_split, num_stages=2):
                T.copy(Output_partial[bz, bx * block_M : (bx + 1) * block_M, by, k, :], po_local)
                for i in T.Parallel(block_M):
                    lse_local_split[i] = lse_local[k, i]
                for i in T.Parallel(block_M):
                    scale_local[i] = T.exp2(lse_local_split[i] - lse_logsum_local[i])
                for i, j in T.Parallel(block_M, dim):
                    o_accum_local[i, j] += po_local[i, j] * scale_local[i]
            T.copy(o_accum_local, o_shared)
            T.copy(o_shared, Output[bz, bx * block_M : (bx + 1) * block_M, by, :], disable_tma=True)

    return main


# ------------------------------------------------------------------------------ references (float32)
def sink_ref(q, k, v, sinks, window):
    B, H, SQ, D = q.shape
    SKV = k.shape[2]
    s = torch.einsum("bhqd,bhkd->bhqk", q.float(), k.float()) * D**-0.5
    qpos = torch.arange(SQ, device=q.device)[:, None] + (SKV - SQ)
    kpos = torch.arange(SKV, device=q.device)[None, :]
    bad = kpos > qpos
    if window is not None:
        bad = bad | (kpos < qpos - window + 1)
    s = s.masked_fill(bad, float("-inf"))
    sk = sinks.float().view(1, H, 1, 1)
    m = torch.maximum(s.amax(-1, keepdim=True), sk)
    p = torch.exp(s - m)
    p = p / (p.sum(-1, keepdim=True) + torch.exp(sk - m))
    return torch.einsum("bhqk,bhkd->bhqd", p, v.float())


def gqa_ref(q, k, v, groups):
    # q: [B, S, H, D], k/v: [B, S, H // groups, D]
    k = k.repeat_interleave(groups, dim=2)
    v = v.repeat_interleave(groups, dim=2)
    s = torch.einsum("bqhd,bkhd->bhqk", q.float(), k.float()) * q.shape[-1] ** -0.5
    return torch.einsum("bhqk,bkhd->bqhd", torch.softmax(s, -1), v.float())


def decode_ref(q, k, v, mask):
    # q: [B, H, D], k/v: [B, S, G, D], mask: [B, S, G]
    H, G = q.shape[1], k.shape[2]
    k = k.repeat_interleave(H // G, dim=2)
    v = v.repeat_interleave(H // G, dim=2)
    m = mask.repeat_interleave(H // G, dim=2) != 0
    s = torch.einsum("bhd,bshd->bhs", q.float(), k.float()) * q.shape[-1] ** -0.5
    s = s.masked_fill(~m.permute(0, 2, 1), float("-inf"))
    return torch.einsum("bhs,bshd->bhd", torch.softmax(s, -1), v.float())


def graph_us(fn, calls: int = 20) -> float:
    """Microseconds a call, from CUDA-graph replays of ``calls`` calls (no host launch cost)."""
    fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    return triton.testing.do_bench(g.replay, warmup=10, rep=100, return_mode="median") * 1000 / calls


def cases():
    """(case, factory, factory args, (pass_configs, out_idx), inputs, reference, variants) at the
    suite's sizes (on a machine without a GPU, smaller ones)."""
    torch.manual_seed(0)
    out = []
    small = DEV == "cpu"  # no GPU: a smoke test through Triton's interpreter at a few heads
    B, H, S, D = 1, 2 if small else 32, 256, 128
    q, k, v = (torch.randn(B, H, S, D, dtype=torch.float16, device=DEV) for _ in range(3))
    sinks = torch.randn(H, dtype=torch.float16, device=DEV)
    sink_variants = [("base", {}), ("tb", {"TILE2TRITON_TRIP_BOUNDS": "1"}),
                     ("tb+ns", {"TILE2TRITON_TRIP_BOUNDS": "1", "TILE2TRITON_SPLIT_MIN_TRIPS": "4"}),
                     ("hostd", {"TILE2TRITON_HOST_DESCRIPTORS": "1"})]  # fmt: skip
    for window in (None, 128):
        out.append((f"sink w={window}", sink_fwd, (B, H, S, S, D, window, 128, 128, 2, 256), (FAST, [3]),
                    (q, k, v, sinks), lambda w=window: sink_ref(q, k, v, sinks, w), sink_variants))  # fmt: skip
    Bq, Hq, Sq, Dq, G = (1, 2, 256, 128, 2) if small else (1, 16, 1024, 128, 16)
    q2 = torch.randn(Bq, Sq, Hq, Dq, dtype=torch.float16, device=DEV)
    k2, v2 = (torch.randn(Bq, Sq, Hq // G, Dq, dtype=torch.float16, device=DEV) for _ in range(2))
    tma = {"TILE2TRITON_GRID_STAGES": "1", "TILE2TRITON_TMA_MIN_TRIPS": "0", "TILE2TRITON_HOST_DESCRIPTORS": "1"}
    stage_variants = [("base", {}), ("gs", {"TILE2TRITON_GRID_STAGES": "1"}), ("s2", {}, 2), ("gs+tma", tma)]
    # Triton's warp specialization at the heuristic's 4 warps (may not build), and 8 warps
    more = [("gs+ws", {}, 3, True), ("w8s3", {}, 3, False, 8)]
    out.append(("gqa_fwd", gqa_fwd, (Bq, Hq, Sq, Dq, G, 64, 64, 2, 128), (FAST, [3]), (q2, k2, v2),
                lambda: gqa_ref(q2, k2, v2, G), stage_variants + more))  # fmt: skip
    Bd, Hd, Gd, Sd, Dd = (1, 32, 8, 2048, 128) if small else (1, 32, 8, 8192, 128)
    q3 = torch.randn(Bd, Hd, Dd, dtype=torch.float16, device=DEV)
    k3, v3 = (torch.randn(Bd, Sd, Gd, Dd, dtype=torch.float16, device=DEV) for _ in range(2))
    mask = (torch.rand(Bd, Sd, Gd, device=DEV) > 0.1).to(torch.uint8)
    out.append(("gqa_decode", gqa_decode, (Bd, Hd, Gd, Sd, Dd, 128, 64, 8, 2, 128), ({}, [4]), (q3, k3, v3, mask),
                lambda: decode_ref(q3, k3, v3, mask), stage_variants))  # fmt: skip
    # a control the grid-stage rule changes too (flash_decoding's mha_inference at the suite's
    # size: 128 blocks, 8 iterations, 2 stages -> 3)
    Bi, Hi, Qi, Ki, Di = (1, 2, 128, 512, 128) if small else (1, 32, 128, 2048, 128)
    q4 = torch.randn(Bi, Qi, Hi, Di, dtype=torch.float16, device=DEV)
    k4, v4 = (torch.randn(Bi, Ki, Hi, Di, dtype=torch.float16, device=DEV) for _ in range(2))
    out.append(("mha_infer", mha_inference, (Bi, Hi, Qi, Ki, Di, 128, 64), ({}, [3]), (q4, k4, v4),
                lambda: gqa_ref(q4, k4, v4, 1), stage_variants[:2]))  # fmt: skip
    return out


def _launch(kern) -> str:
    """The launch choice and whether the loop loads through tensor descriptors (TMA)."""
    choice = kern.launch_choice.label() if kern.launch_choice is not None else "interpreter"
    try:
        source = kern.lowered_for("sm_90").source
    except Exception as e:  # noqa: BLE001
        return f"{choice} (source: {type(e).__name__})"
    return f"{choice} tma={'_desc.load(' in source} loops={source.count('tl.range(')}"


def main() -> None:
    t0 = time.time()
    print(f"triton {triton.__version__}, torch {torch.__version__}, {DEV}", flush=True)
    print(f"{'case':12} {'variant':6} {'event us':>9} {'graph us':>9} {'max err':>9}  launch", flush=True)
    # the candidates first (main's lowering and each switch), then the reference variants, so a
    # slow machine loses only those to the time guard
    todo = []
    for case, factory, args, (configs, out_idx), inputs, ref, variants in cases():
        for variant in variants:
            todo.append((variant[0] not in CANDIDATES, case, factory, args, configs, out_idx, inputs, ref, variant))
    todo.sort(key=lambda t: t[0])  # stable: case order kept within each group
    expected = {}
    for _, case, factory, args, configs, out_idx, inputs, ref, variant in todo:
        if case not in expected:
            expected[case] = ref()
        expect = expected[case]
        name, env = variant[0], variant[1]
        if time.time() - t0 > 80 and DEV == "cuda":
            print(f"{case:12} {name:6} skipped (time)", flush=True)
            continue
        for var in ENV:
            os.environ.pop(var, None)
        os.environ.update(env)
        try:
            kern = tilelang.jit(out_idx=out_idx, pass_configs=configs)(factory)(*args)
            if len(variant) > 2:  # (stages, warp specialization, warps) forced; else the heuristic's warps
                stages, ws, warps = (list(variant[2:]) + [False, None])[:3]
                warps = warps or tuning.heuristic(kern.prim_func, (9, 0)).num_warps
                kern.launch_choice = tuning.LaunchChoice(warps, stages, ws)
            out = kern(*inputs)
            err = float((out.float() - expect).abs().max())
            if math.isnan(err):
                err = float("inf")
            if DEV == "cuda":
                ev = triton.testing.do_bench(lambda: kern(*inputs), warmup=25, rep=200, return_mode="median") * 1000
                gr = graph_us(lambda: kern(*inputs))
            else:
                ev = gr = float("nan")
            print(f"{case:12} {name:6} {ev:9.2f} {gr:9.2f} {err:9.2e}  {_launch(kern)}", flush=True)
        except Exception as e:  # noqa: BLE001
            print(f"{case:12} {name:6} failed: {type(e).__name__}: {str(e)[:200]}", flush=True)
    for var in ENV:
        os.environ.pop(var, None)
    print(f"total {time.time() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
