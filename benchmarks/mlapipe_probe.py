"""Probe for TileLang's ``sparse_mla_fwd_pipelined`` (issue 23): the hand warp-specialized kernel's
lowering today against block-view schedules of the same program (what the warp-section
transformation would emit: the producer's cp.async gathers become the KV loads feeding the
consumers' dots, the mbarriers program order).

    PYTHONPATH=. python3 benchmarks/mlapipe_probe.py

Rows (one H200, Triton 3.6 there):
- ``current``: the Triton tile2triton main (95178ca) emits today for the example at the regression
  shape (S=256, SKV=512, H=64, topk=256, q_start=1024, 384 threads -> 16 warps), embedded below (KV ring and Q in global scratch, the producer's per-thread copies as [512, 16, 8] tiles);
- ``copy tiles, KV ring in registers``: the producer's copy nest as block-level copies
  (passes/thread_copies.py) with the KV ring a [2, 64, 1024] register tile (embedded the same way);
- ``THREAD_COPY_TILES=1 (KV in scratch)``: what this branch emits with that switch on: the same,
  the ring kept in scratch (a copied buffer past the one-hot limit stays there);
- ``bv/...``: block view, hand-written: Q held in registers (``qreg``), reloaded from global each
  iteration (``qglob``) or from scratch as tile2triton keeps ``Q_shared`` (``qscr``); one [H, 512]
  accumulator or the example's two halves (``split``: 3 QK dots + 2 PV dots, the literal merge of
  the two consumer warpgroups); a flat loop over the topk blocks (``flat``) or the example's
  ``serial(NI/2) x unroll(2)`` nest (``nest``); num_stages ``sN``; ``wN`` warps.
Each row: median microseconds (do_bench warmup 25, rep 100), max abs error against a float32 torch
reference, and n_regs / spills / shared bytes of the compiled kernel.
"""

from __future__ import annotations

import os
import time

import torch

if not torch.cuda.is_available() and not os.environ.get("MLAPIPE_OFFLINE"):  # CPU: Triton's interpreter, a smoke run
    os.environ.setdefault("TRITON_INTERPRET", "1")  # (MLAPIPE_OFFLINE=1: compile only)

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.testing import do_bench  # noqa: E402

DQK, DV, DT = 576, 512, 64


# ---- the Triton tile2triton main (95178ca) emits for the example today (tile2triton show ... --arg heads=64
# dim=512 tail_dim=64 topk=256 kv_stride=1 CP0=False), as emitted (ruff-formatted)
@triton.jit
def _floordiv(a, b):
    # TileLang's // rounds toward -inf; Triton's integer // truncates
    q = a // b
    return q - ((a % b != 0) & ((a < 0) != (b < 0))).to(q.dtype)


@triton.jit
def _floormod(a, b):
    r = a % b
    return r + tl.where((r != 0) & ((r < 0) != (b < 0)), b, 0)


@triton.jit
def current_kernel(Q, KV, Indices, q_start_index_s, Output, Lse, batch, seq_len, seq_len_kv, scratch_ptr):
    # sparse_mla_fwd_pipelined.py:81: with T.Kernel((seq_len - kv_stride + 1 if CP0 else seq_len) * REPLICATE_H, batch, kv_group, threads=threads) as (bx, by, bz):
    bx = tl.program_id(0)
    by = tl.program_id(1)
    bz = tl.program_id(2)
    tx = tl.arange(0, 512)
    program = (
        tl.program_id(0)
        + tl.program_id(1) * tl.num_programs(0)
        + tl.program_id(2) * (tl.num_programs(0) * tl.num_programs(1))
    )
    scratch = scratch_ptr + program.to(tl.int64) * 221184
    # sparse_mla_fwd_pipelined.py:82: Q_shared = T.alloc_shared([H_per_block, D + D_tail], dtype)
    Q_shared = scratch.to(tl.pointer_type(tl.bfloat16), bitcast=True)
    # sparse_mla_fwd_pipelined.py:83: KV_shared = T.alloc_shared([num_stages, BI, D + D_tail], dtype)
    KV_shared = (scratch + 73728).to(tl.pointer_type(tl.bfloat16), bitcast=True)
    # sparse_mla_fwd_pipelined.py:85: is_kv_valid = T.alloc_shared([num_stages, BI], "bool", scope="shared")
    is_kv_valid = tl.zeros([2, 64], tl.int1)
    # sparse_mla_fwd_pipelined.py:98: indices_local = T.alloc_var(indices_dtype)
    indices_local = tl.zeros([512], tl.int32)
    # sparse_mla_fwd_pipelined.py:107: s_i = (bx + (KV_stride - 1 if CP0 else 0)) if REPLICATE_H == 1 else (bx // REPLICATE_H + (KV_stride - 1 if CP0 else 0))
    s_i = bx
    # sparse_mla_fwd_pipelined.py:108: q_i = q_start_index_s[0] + s_i
    q_i = tl.load(q_start_index_s) + s_i
    # sparse_mla_fwd_pipelined.py:109: max_kv_i = (q_i + 1 - KV_stride) // KV_stride
    max_kv_i = _floordiv(tl.full([], q_i + 1 - 1, tl.int32), 1)
    # sparse_mla_fwd_pipelined.py:111: H0 = g_i * padded_H + (0 if REPLICATE_H == 1 else (bx % REPLICATE_H) * 64)
    H0 = bz * 64
    # sparse_mla_fwd_pipelined.py:116: T.tma_copy(Q[b_i, s_i, H0:H1, :], Q_shared, barrier=bar_q)
    i0 = tl.arange(0, 64)[:, None]
    i1 = tl.arange(0, 1024)[None, :]
    offs = by * (36864 * seq_len) + s_i * 36864 + (H0 + i0) * 576 + i1
    mask = (by < batch) & (s_i < seq_len) & (i1 < 576)
    offs_1 = i0 * 576 + i1
    mask_1 = i1 < 576
    tl.store(Q_shared + offs_1, tl.load(Q + offs, mask=mask, other=0), mask=mask_1)
    # sparse_mla_fwd_pipelined.py:121: T.fill(sumexp, 0)
    sumexp = tl.zeros([64], tl.float32)
    # sparse_mla_fwd_pipelined.py:122: T.fill(m_i, -(2**30))  # avoid -inf - inf to cause nan
    m_i = tl.full([64], -1073741824, tl.float32)
    # sparse_mla_fwd_pipelined.py:123: T.fill(acc_o_l, 0)
    acc_o_l = tl.zeros([64, 256], tl.float32)
    # sparse_mla_fwd_pipelined.py:175: T.fill(acc_o_r, 0)
    acc_o_r = tl.zeros([64, 256], tl.float32)
    # sparse_mla_fwd_pipelined.py:126: for i_i in T.serial(T.ceildiv(NI, num_stages)):
    for i_i in tl.range(0, 2, num_stages=1):
        # sparse_mla_fwd_pipelined.py:127: for stage in T.unroll(num_stages):
        for stage in tl.static_range(2):
            # sparse_mla_fwd_pipelined.py:193: elif tx >= 256:
            cond_2 = tx >= 256
            # sparse_mla_fwd_pipelined.py:199: for r in T.serial(4):
            for r in range(4):
                # sparse_mla_fwd_pipelined.py:200: indices_local = Indices[
                offs_2 = (
                    by * (256 * seq_len)
                    + s_i * 256
                    + bz * 256
                    + ((i_i * 2 + stage) * 64 + r * 16 + _floordiv(tx - 256, 8))
                )
                mask_2 = (
                    (by < batch)
                    & (s_i < seq_len)
                    & ((i_i * 2 + stage) * 64 + r * 16 + _floordiv(tx - 256, 8) < 256)
                    & ((i_i * 2 + stage) * 64 + r * 16 + _floordiv(tx - 256, 8) >= 0)
                    & ((tx < 384) & cond_2)
                )
                indices_local = tl.where(cond_2, tl.load(Indices + offs_2, mask=mask_2, other=0), indices_local)
                # sparse_mla_fwd_pipelined.py:206: is_kv_valid[stage, r * 16 + (tx - 256) // 8] = indices_local <= max_kv_i
                is_kv_valid_hit = (
                    tl.broadcast_to(r * 16 + _floordiv(tx - 256, 8), (512,))[:, None] == tl.arange(0, 64)[None, :]
                ) & ((tx < 384) & cond_2)[:, None]
                is_kv_valid = tl.where(
                    (tl.max(is_kv_valid_hit.to(tl.int32), axis=0) > 0)[None, :] & (tl.arange(0, 2)[:, None] == stage),
                    tl.max(
                        tl.where(is_kv_valid_hit, tl.broadcast_to(indices_local <= max_kv_i, (512,))[:, None], 0),
                        axis=0,
                    ).to(tl.int1)[None, :],
                    is_kv_valid,
                )
                # sparse_mla_fwd_pipelined.py:207: if is_kv_valid[stage, r * 16 + (tx - 256) // 8]:
                cond_3 = (
                    tl.sum(
                        tl.where(
                            tl.arange(0, 64)[None, :]
                            == tl.minimum(tl.maximum(r * 16 + _floordiv(tx - 256, 8), 0), 63)[:, None],
                            tl.sum(tl.where(tl.arange(0, 2)[:, None] == stage, is_kv_valid, 0), axis=0)[None, :],
                            0,
                        ),
                        axis=1,
                    )
                    != 0
                )
                # sparse_mla_fwd_pipelined.py:208: for u in T.serial((D + D_tail) // 64):
                tx_1 = tx[:, None]
                u = tl.arange(0, 16)[None, :]
                tx_1_1 = tx_1[:, :, None]
                u_1 = u[:, :, None]
                v = tl.arange(0, 8)[None, None, :]
                # sparse_mla_fwd_pipelined.py:209: T.ptx_cp_async(
                offs_3 = (
                    by * (576 * seq_len_kv)
                    + indices_local[:, None, None] * 576
                    + bz * 576
                    + (64 * u[:, :, None] + _floormod(tx[:, None][:, :, None] - 256, 8) * 8 + v)
                )
                mask_3 = (
                    (by < batch)
                    & (indices_local[:, None, None] < seq_len_kv)
                    & (indices_local[:, None, None] >= 0)
                    & (64 * u[:, :, None] + _floormod(tx[:, None][:, :, None] - 256, 8) * 8 + v < 576)
                    & (64 * u[:, :, None] + _floormod(tx[:, None][:, :, None] - 256, 8) * 8 + v >= 0)
                    & ((tx_1_1 < 384) & (u_1 < 9) & cond_2[:, None][:, :, None] & cond_3[:, None][:, :, None])
                )
                tl.debug_barrier()
                offs_4 = (
                    stage * 36864
                    + (r * 16 + _floordiv(tx[:, None][:, :, None] - 256, 8)) * 576
                    + (64 * u[:, :, None] + _floormod(tx[:, None][:, :, None] - 256, 8) * 8 + v)
                )
                mask_4 = (
                    (r * 16 + _floordiv(tx[:, None][:, :, None] - 256, 8) < 64)
                    & (r * 16 + _floordiv(tx[:, None][:, :, None] - 256, 8) >= 0)
                    & (64 * u[:, :, None] + _floormod(tx[:, None][:, :, None] - 256, 8) * 8 + v < 576)
                    & (64 * u[:, :, None] + _floormod(tx[:, None][:, :, None] - 256, 8) * 8 + v >= 0)
                    & ((tx_1_1 < 384) & (u_1 < 9) & cond_2[:, None][:, :, None] & cond_3[:, None][:, :, None])
                )
                tl.store(KV_shared + offs_4, tl.load(KV + offs_3, mask=mask_3, other=0), mask=mask_4)
            # sparse_mla_fwd_pipelined.py:131: acc_s[h_i, bi_i] = T.if_then_else(is_kv_valid[stage, bi_i], 0, -T.infinity(acc_s.dtype))
            acc_s = tl.broadcast_to(
                tl.broadcast_to(
                    tl.where(
                        tl.sum(tl.where(tl.arange(0, 2)[:, None] == stage, is_kv_valid, 0), axis=0)[None, :],
                        0,
                        -float("inf"),
                    ),
                    (64, 64),
                ),
                (64, 64),
            )
            # sparse_mla_fwd_pipelined.py:132: T.wgmma_gemm(Q_shared[:, : D // 2], KV_shared[stage, :, : D // 2], acc_s, transpose_B=True)
            i0_1 = tl.arange(0, 64)[:, None]
            i1_1 = tl.arange(0, 256)[None, :]
            tl.debug_barrier()
            offs_5 = i0_1 * 576 + i1_1
            Q_shared_part = tl.load(Q_shared + offs_5)
            i0_2 = tl.arange(0, 64)[:, None]
            i1_2 = tl.arange(0, 256)[None, :]
            offs_6 = stage * 36864 + i0_2 * 576 + i1_2
            KV_shared_part = tl.broadcast_to(tl.load(KV_shared + offs_6)[None, :, :], (1, 64, 256))
            acc_s = tl.dot(Q_shared_part, tl.trans(tl.reshape(KV_shared_part, (64, 256))), acc_s)
            # sparse_mla_fwd_pipelined.py:133: T.wgmma_gemm(Q_shared[:, D // 2 : D], KV_shared[stage, :, D // 2 : D], acc_s, transpose_B=True)
            i0_3 = tl.arange(0, 64)[:, None]
            i1_3 = tl.arange(0, 256)[None, :]
            offs_7 = i0_3 * 576 + (256 + i1_3)
            Q_shared_part_1 = tl.load(Q_shared + offs_7)
            i0_4 = tl.arange(0, 64)[:, None]
            i1_4 = tl.arange(0, 256)[None, :]
            offs_8 = stage * 36864 + i0_4 * 576 + (256 + i1_4)
            KV_shared_part_1 = tl.broadcast_to(tl.load(KV_shared + offs_8)[None, :, :], (1, 64, 256))
            acc_s = tl.dot(Q_shared_part_1, tl.trans(tl.reshape(KV_shared_part_1, (64, 256))), acc_s)
            # sparse_mla_fwd_pipelined.py:134: T.wgmma_gemm(Q_shared[:, D:], KV_shared[stage, :, D:], acc_s, transpose_B=True)
            i0_5 = tl.arange(0, 64)[:, None]
            i1_5 = tl.arange(0, 64)[None, :]
            offs_9 = i0_5 * 576 + (512 + i1_5)
            Q_shared_part_2 = tl.load(Q_shared + offs_9)
            i0_6 = tl.arange(0, 64)[:, None]
            i1_6 = tl.arange(0, 64)[None, :]
            offs_10 = stage * 36864 + i0_6 * 576 + (512 + i1_6)
            KV_shared_part_2 = tl.broadcast_to(tl.load(KV_shared + offs_10)[None, :, :], (1, 64, 64))
            acc_s = tl.dot(Q_shared_part_2, tl.trans(tl.reshape(KV_shared_part_2, (64, 64))), acc_s)
            # sparse_mla_fwd_pipelined.py:142: T.copy(m_i, m_i_prev)
            m_i_prev = m_i
            # sparse_mla_fwd_pipelined.py:143: T.reduce_max(acc_s, m_i, dim=1, clear=False)
            m_i = tl.maximum(m_i, tl.max(acc_s, axis=1))
            # sparse_mla_fwd_pipelined.py:145: m_i[h_i] = T.max(m_i[h_i], m_i_prev[h_i])
            m_i = tl.maximum(m_i, m_i_prev)
            # sparse_mla_fwd_pipelined.py:147: alpha_local[h_i] = T.exp2((m_i_prev[h_i] - m_i[h_i]) * sm_scale)
            alpha_local = tl.exp2((m_i_prev - m_i) * 0.06011229333333333)
            # sparse_mla_fwd_pipelined.py:149: acc_s[h_i, bi_i] = T.exp2(acc_s[h_i, bi_i] * sm_scale - m_i[h_i] * sm_scale)
            acc_s = tl.exp2(acc_s * 0.06011229333333333 - m_i[:, None] * 0.06011229333333333)
            # sparse_mla_fwd_pipelined.py:150: T.reduce_sum(acc_s, sumexp_i, dim=1)  # is this a accumulate operator?
            sumexp_i = tl.sum(acc_s, axis=1)
            # sparse_mla_fwd_pipelined.py:152: sumexp[h_i] = sumexp[h_i] * alpha_local[h_i] + sumexp_i[h_i]
            sumexp = sumexp * alpha_local + sumexp_i
            # sparse_mla_fwd_pipelined.py:154: acc_o_l[h_i, d_i] *= alpha_local[h_i]
            acc_o_l = acc_o_l * alpha_local[:, None]
            # sparse_mla_fwd_pipelined.py:155: T.copy(alpha_local, alpha_shared)
            alpha_shared = alpha_local
            # sparse_mla_fwd_pipelined.py:157: T.copy(acc_s, S_shared)
            S_shared = acc_s.to(tl.bfloat16)
            # sparse_mla_fwd_pipelined.py:158: T.gemm(S_shared, KV_shared[stage, :, : D // 2], acc_o_l)
            i0_10 = tl.arange(0, 64)[:, None]
            i1_8 = tl.arange(0, 256)[None, :]
            offs_11 = stage * 36864 + i0_10 * 576 + i1_8
            KV_shared_part_3 = tl.broadcast_to(tl.load(KV_shared + offs_11)[None, :, :], (1, 64, 256))
            acc_o_l = tl.dot(S_shared, tl.reshape(KV_shared_part_3, (64, 256)), acc_o_l)
            # sparse_mla_fwd_pipelined.py:181: acc_o_r[h_i, d_i] *= alpha_shared[h_i]
            acc_o_r = acc_o_r * alpha_shared[:, None]
            # sparse_mla_fwd_pipelined.py:182: T.gemm(S_shared, KV_shared[stage, :, D // 2 : D], acc_o_r)
            i0_11 = tl.arange(0, 64)[:, None]
            i1_9 = tl.arange(0, 256)[None, :]
            offs_12 = stage * 36864 + i0_11 * 576 + (256 + i1_9)
            KV_shared_part_4 = tl.broadcast_to(tl.load(KV_shared + offs_12)[None, :, :], (1, 64, 256))
            acc_o_r = tl.dot(S_shared, tl.reshape(KV_shared_part_4, (64, 256)), acc_o_r)
    # sparse_mla_fwd_pipelined.py:165: sum_exp_shared[h_i] = sumexp[h_i]
    sum_exp_shared = sumexp
    # sparse_mla_fwd_pipelined.py:167: acc_o_l[h_i, d_i] /= sumexp[h_i]
    acc_o_l = acc_o_l / sumexp[:, None]
    # sparse_mla_fwd_pipelined.py:170: T.copy(acc_o_l, O_shared[:, : D // 2])
    i0_12 = tl.arange(0, 64)[:, None]
    i1_10 = tl.arange(0, 256)[None, :]
    tl.debug_barrier()
    offs_13 = i0_12 * 576 + i1_10
    tl.store(Q_shared + offs_13, acc_o_l.to(tl.bfloat16))
    # sparse_mla_fwd_pipelined.py:171: T.copy(O_shared[:, : D // 2], Output[b_i, s_i, H0:H1, 0 : D // 2])
    i0_13 = tl.arange(0, 64)[:, None]
    i1_11 = tl.arange(0, 256)[None, :]
    tl.debug_barrier()
    offs_14 = i0_13 * 576 + i1_11
    offs_15 = by * (32768 * seq_len) + s_i * 32768 + (H0 + i0_13) * 512 + i1_11
    mask_5 = (by < batch) & (s_i < seq_len)
    tl.store(Output + offs_15, tl.load(Q_shared + offs_14), mask=mask_5)
    # sparse_mla_fwd_pipelined.py:189: acc_o_r[h_i, d_i] /= sum_exp_shared[h_i]
    acc_o_r = acc_o_r / sum_exp_shared[:, None]
    # sparse_mla_fwd_pipelined.py:191: T.copy(acc_o_r, O_shared[:, D // 2 : D])
    i0_14 = tl.arange(0, 64)[:, None]
    i1_12 = tl.arange(0, 256)[None, :]
    tl.debug_barrier()
    offs_16 = i0_14 * 576 + (256 + i1_12)
    tl.store(Q_shared + offs_16, acc_o_r.to(tl.bfloat16))
    # sparse_mla_fwd_pipelined.py:192: T.copy(O_shared[:, D // 2 : D], Output[b_i, s_i, H0:H1, D // 2 : D])
    i0_15 = tl.arange(0, 64)[:, None]
    i1_13 = tl.arange(0, 256)[None, :]
    tl.debug_barrier()
    offs_17 = i0_15 * 576 + (256 + i1_13)
    offs_18 = by * (32768 * seq_len) + s_i * 32768 + (H0 + i0_15) * 512 + (256 + i1_13)
    mask_6 = (by < batch) & (s_i < seq_len)
    tl.store(Output + offs_18, tl.load(Q_shared + offs_17), mask=mask_6)


# ---- the same with TILE2TRITON_THREAD_COPY_TILES=1 (this branch): the producer's copy nest as
# block-level copies, the KV ring a [2, 64, 1024] register tile (ruff-formatted)
@triton.jit
def dethread_kernel(Q, KV, Indices, q_start_index_s, Output, Lse, batch, seq_len, seq_len_kv, scratch_ptr):
    # sparse_mla_fwd_pipelined.py:81: with T.Kernel((seq_len - kv_stride + 1 if CP0 else seq_len) * REPLICATE_H, batch, kv_group, threads=threads) as (bx, by, bz):
    bx = tl.program_id(0)
    by = tl.program_id(1)
    bz = tl.program_id(2)
    program = (
        tl.program_id(0)
        + tl.program_id(1) * tl.num_programs(0)
        + tl.program_id(2) * (tl.num_programs(0) * tl.num_programs(1))
    )
    scratch = scratch_ptr + program.to(tl.int64) * 73728
    # sparse_mla_fwd_pipelined.py:82: Q_shared = T.alloc_shared([H_per_block, D + D_tail], dtype)
    Q_shared = scratch.to(tl.pointer_type(tl.bfloat16), bitcast=True)
    # sparse_mla_fwd_pipelined.py:83: KV_shared = T.alloc_shared([num_stages, BI, D + D_tail], dtype)
    KV_shared = tl.zeros([2, 64, 1024], tl.bfloat16)
    # sparse_mla_fwd_pipelined.py:85: is_kv_valid = T.alloc_shared([num_stages, BI], "bool", scope="shared")
    is_kv_valid = tl.zeros([2, 64], tl.int1)
    # sparse_mla_fwd_pipelined.py:107: s_i = (bx + (KV_stride - 1 if CP0 else 0)) if REPLICATE_H == 1 else (bx // REPLICATE_H + (KV_stride - 1 if CP0 else 0))
    s_i = bx
    # sparse_mla_fwd_pipelined.py:108: q_i = q_start_index_s[0] + s_i
    q_i = tl.load(q_start_index_s) + s_i
    # sparse_mla_fwd_pipelined.py:109: max_kv_i = (q_i + 1 - KV_stride) // KV_stride
    max_kv_i = _floordiv(tl.full([], q_i + 1 - 1, tl.int32), 1)
    # sparse_mla_fwd_pipelined.py:111: H0 = g_i * padded_H + (0 if REPLICATE_H == 1 else (bx % REPLICATE_H) * 64)
    H0 = bz * 64
    # sparse_mla_fwd_pipelined.py:116: T.tma_copy(Q[b_i, s_i, H0:H1, :], Q_shared, barrier=bar_q)
    i0 = tl.arange(0, 64)[:, None]
    i1 = tl.arange(0, 1024)[None, :]
    offs = by * (36864 * seq_len) + s_i * 36864 + (H0 + i0) * 576 + i1
    mask = (by < batch) & (s_i < seq_len) & (i1 < 576)
    offs_1 = i0 * 576 + i1
    mask_1 = i1 < 576
    tl.store(Q_shared + offs_1, tl.load(Q + offs, mask=mask, other=0), mask=mask_1)
    # sparse_mla_fwd_pipelined.py:121: T.fill(sumexp, 0)
    sumexp = tl.zeros([64], tl.float32)
    # sparse_mla_fwd_pipelined.py:122: T.fill(m_i, -(2**30))  # avoid -inf - inf to cause nan
    m_i = tl.full([64], -1073741824, tl.float32)
    # sparse_mla_fwd_pipelined.py:123: T.fill(acc_o_l, 0)
    acc_o_l = tl.zeros([64, 256], tl.float32)
    # sparse_mla_fwd_pipelined.py:175: T.fill(acc_o_r, 0)
    acc_o_r = tl.zeros([64, 256], tl.float32)
    # sparse_mla_fwd_pipelined.py:126: for i_i in T.serial(T.ceildiv(NI, num_stages)):
    for i_i in range(2):
        # sparse_mla_fwd_pipelined.py:127: for stage in T.unroll(num_stages):
        for stage in tl.static_range(2):
            # sparse_mla_fwd_pipelined.py:206: is_kv_valid[stage, r * 16 + (tx - 256) // 8] = indices_local <= max_kv_i
            is_kv_valid_i1 = tl.arange(0, 64)
            offs_2 = by * (256 * seq_len) + s_i * 256 + bz * 256 + (is_kv_valid_i1 + (i_i * 2 + stage) * 64)
            mask_2 = (by < batch) & (s_i < seq_len)
            is_kv_valid = tl.where(
                tl.arange(0, 2)[:, None] == stage,
                (tl.load(Indices + offs_2, mask=mask_2, other=0) <= max_kv_i)[None, :],
                is_kv_valid,
            )
            # sparse_mla_fwd_pipelined.py:209: T.ptx_cp_async(
            KV_shared_i1 = tl.arange(0, 64)[:, None]
            KV_shared_i2 = tl.arange(0, 1024)[None, :]
            # sparse_mla_fwd_pipelined.py:207: if is_kv_valid[stage, r * 16 + (tx - 256) // 8]:
            cond_3 = (tl.sum(tl.where(tl.arange(0, 2)[:, None] == stage, is_kv_valid, 0), axis=0) != 0)[:, None]
            # sparse_mla_fwd_pipelined.py:209: T.ptx_cp_async(
            offs_3 = by * (256 * seq_len) + s_i * 256 + bz * 256 + (KV_shared_i1 + (i_i * 2 + stage) * 64)
            mask_3 = (by < batch) & (s_i < seq_len) & cond_3
            idx = tl.load(Indices + offs_3, mask=mask_3, other=0)
            offs_4 = by * (576 * seq_len_kv) + idx * 576 + bz * 576 + KV_shared_i2
            mask_4 = (by < batch) & (idx < seq_len_kv) & (idx >= 0) & ((KV_shared_i2 < 576) & cond_3)
            KV_shared = tl.where(
                tl.broadcast_to(cond_3, (64, 1024))[None, :, :] & (tl.arange(0, 2)[:, None, None] == stage),
                tl.load(KV + offs_4, mask=mask_4, other=0)[None, :, :],
                KV_shared,
            )
            # sparse_mla_fwd_pipelined.py:131: acc_s[h_i, bi_i] = T.if_then_else(is_kv_valid[stage, bi_i], 0, -T.infinity(acc_s.dtype))
            acc_s = tl.broadcast_to(
                tl.broadcast_to(
                    tl.where(
                        (tl.sum(tl.where(tl.arange(0, 2)[:, None] == stage, is_kv_valid, 0), axis=0) != 0)[None, :],
                        0,
                        -float("inf"),
                    ),
                    (64, 64),
                ),
                (64, 64),
            )
            # sparse_mla_fwd_pipelined.py:132: T.wgmma_gemm(Q_shared[:, : D // 2], KV_shared[stage, :, : D // 2], acc_s, transpose_B=True)
            i0_1 = tl.arange(0, 64)[:, None]
            i1_1 = tl.arange(0, 256)[None, :]
            tl.debug_barrier()
            offs_5 = i0_1 * 576 + i1_1
            Q_shared_part = tl.load(Q_shared + offs_5)
            i1_2 = tl.arange(0, 256)[None, :]
            index = tl.broadcast_to(tl.minimum(tl.maximum(i1_2, 0), 1023), (64, 256))
            KV_shared_part = tl.broadcast_to(
                tl.gather(tl.sum(tl.where(tl.arange(0, 2)[:, None, None] == stage, KV_shared, 0), axis=0), index, 1)[
                    None, :, :
                ],
                (1, 64, 256),
            )
            acc_s = tl.dot(Q_shared_part, tl.trans(tl.reshape(KV_shared_part, (64, 256))), acc_s)
            # sparse_mla_fwd_pipelined.py:133: T.wgmma_gemm(Q_shared[:, D // 2 : D], KV_shared[stage, :, D // 2 : D], acc_s, transpose_B=True)
            i0_3 = tl.arange(0, 64)[:, None]
            i1_3 = tl.arange(0, 256)[None, :]
            offs_6 = i0_3 * 576 + (256 + i1_3)
            Q_shared_part_1 = tl.load(Q_shared + offs_6)
            i1_4 = tl.arange(0, 256)[None, :]
            index_1 = tl.broadcast_to(tl.minimum(tl.maximum(256 + i1_4, 0), 1023), (64, 256))
            KV_shared_part_1 = tl.broadcast_to(
                tl.gather(tl.sum(tl.where(tl.arange(0, 2)[:, None, None] == stage, KV_shared, 0), axis=0), index_1, 1)[
                    None, :, :
                ],
                (1, 64, 256),
            )
            acc_s = tl.dot(Q_shared_part_1, tl.trans(tl.reshape(KV_shared_part_1, (64, 256))), acc_s)
            # sparse_mla_fwd_pipelined.py:134: T.wgmma_gemm(Q_shared[:, D:], KV_shared[stage, :, D:], acc_s, transpose_B=True)
            i0_5 = tl.arange(0, 64)[:, None]
            i1_5 = tl.arange(0, 64)[None, :]
            offs_7 = i0_5 * 576 + (512 + i1_5)
            Q_shared_part_2 = tl.load(Q_shared + offs_7)
            i1_6 = tl.arange(0, 64)[None, :]
            index_2 = tl.broadcast_to(tl.minimum(tl.maximum(512 + i1_6, 0), 1023), (64, 64))
            KV_shared_part_2 = tl.broadcast_to(
                tl.gather(tl.sum(tl.where(tl.arange(0, 2)[:, None, None] == stage, KV_shared, 0), axis=0), index_2, 1)[
                    None, :, :
                ],
                (1, 64, 64),
            )
            acc_s = tl.dot(Q_shared_part_2, tl.trans(tl.reshape(KV_shared_part_2, (64, 64))), acc_s)
            # sparse_mla_fwd_pipelined.py:142: T.copy(m_i, m_i_prev)
            m_i_prev = m_i
            # sparse_mla_fwd_pipelined.py:143: T.reduce_max(acc_s, m_i, dim=1, clear=False)
            m_i = tl.maximum(m_i, tl.max(acc_s, axis=1))
            # sparse_mla_fwd_pipelined.py:145: m_i[h_i] = T.max(m_i[h_i], m_i_prev[h_i])
            m_i = tl.maximum(m_i, m_i_prev)
            # sparse_mla_fwd_pipelined.py:147: alpha_local[h_i] = T.exp2((m_i_prev[h_i] - m_i[h_i]) * sm_scale)
            alpha_local = tl.exp2((m_i_prev - m_i) * 0.06011229333333333)
            # sparse_mla_fwd_pipelined.py:149: acc_s[h_i, bi_i] = T.exp2(acc_s[h_i, bi_i] * sm_scale - m_i[h_i] * sm_scale)
            acc_s = tl.exp2(acc_s * 0.06011229333333333 - m_i[:, None] * 0.06011229333333333)
            # sparse_mla_fwd_pipelined.py:150: T.reduce_sum(acc_s, sumexp_i, dim=1)  # is this a accumulate operator?
            sumexp_i = tl.sum(acc_s, axis=1)
            # sparse_mla_fwd_pipelined.py:152: sumexp[h_i] = sumexp[h_i] * alpha_local[h_i] + sumexp_i[h_i]
            sumexp = sumexp * alpha_local + sumexp_i
            # sparse_mla_fwd_pipelined.py:154: acc_o_l[h_i, d_i] *= alpha_local[h_i]
            acc_o_l = acc_o_l * alpha_local[:, None]
            # sparse_mla_fwd_pipelined.py:155: T.copy(alpha_local, alpha_shared)
            alpha_shared = alpha_local
            # sparse_mla_fwd_pipelined.py:157: T.copy(acc_s, S_shared)
            S_shared = acc_s.to(tl.bfloat16)
            # sparse_mla_fwd_pipelined.py:158: T.gemm(S_shared, KV_shared[stage, :, : D // 2], acc_o_l)
            i1_8 = tl.arange(0, 256)[None, :]
            index_3 = tl.broadcast_to(tl.minimum(tl.maximum(i1_8, 0), 1023), (64, 256))
            KV_shared_part_3 = tl.broadcast_to(
                tl.gather(tl.sum(tl.where(tl.arange(0, 2)[:, None, None] == stage, KV_shared, 0), axis=0), index_3, 1)[
                    None, :, :
                ],
                (1, 64, 256),
            )
            acc_o_l = tl.dot(S_shared, tl.reshape(KV_shared_part_3, (64, 256)), acc_o_l)
            # sparse_mla_fwd_pipelined.py:181: acc_o_r[h_i, d_i] *= alpha_shared[h_i]
            acc_o_r = acc_o_r * alpha_shared[:, None]
            # sparse_mla_fwd_pipelined.py:182: T.gemm(S_shared, KV_shared[stage, :, D // 2 : D], acc_o_r)
            i1_9 = tl.arange(0, 256)[None, :]
            index_4 = tl.broadcast_to(tl.minimum(tl.maximum(256 + i1_9, 0), 1023), (64, 256))
            KV_shared_part_4 = tl.broadcast_to(
                tl.gather(tl.sum(tl.where(tl.arange(0, 2)[:, None, None] == stage, KV_shared, 0), axis=0), index_4, 1)[
                    None, :, :
                ],
                (1, 64, 256),
            )
            acc_o_r = tl.dot(S_shared, tl.reshape(KV_shared_part_4, (64, 256)), acc_o_r)
    # sparse_mla_fwd_pipelined.py:165: sum_exp_shared[h_i] = sumexp[h_i]
    sum_exp_shared = sumexp
    # sparse_mla_fwd_pipelined.py:167: acc_o_l[h_i, d_i] /= sumexp[h_i]
    acc_o_l = acc_o_l / sumexp[:, None]
    # sparse_mla_fwd_pipelined.py:170: T.copy(acc_o_l, O_shared[:, : D // 2])
    i0_12 = tl.arange(0, 64)[:, None]
    i1_10 = tl.arange(0, 256)[None, :]
    tl.debug_barrier()
    offs_8 = i0_12 * 576 + i1_10
    tl.store(Q_shared + offs_8, acc_o_l.to(tl.bfloat16))
    # sparse_mla_fwd_pipelined.py:171: T.copy(O_shared[:, : D // 2], Output[b_i, s_i, H0:H1, 0 : D // 2])
    i0_13 = tl.arange(0, 64)[:, None]
    i1_11 = tl.arange(0, 256)[None, :]
    tl.debug_barrier()
    offs_9 = i0_13 * 576 + i1_11
    offs_10 = by * (32768 * seq_len) + s_i * 32768 + (H0 + i0_13) * 512 + i1_11
    mask_5 = (by < batch) & (s_i < seq_len)
    tl.store(Output + offs_10, tl.load(Q_shared + offs_9), mask=mask_5)
    # sparse_mla_fwd_pipelined.py:189: acc_o_r[h_i, d_i] /= sum_exp_shared[h_i]
    acc_o_r = acc_o_r / sum_exp_shared[:, None]
    # sparse_mla_fwd_pipelined.py:191: T.copy(acc_o_r, O_shared[:, D // 2 : D])
    i0_14 = tl.arange(0, 64)[:, None]
    i1_12 = tl.arange(0, 256)[None, :]
    tl.debug_barrier()
    offs_11 = i0_14 * 576 + (256 + i1_12)
    tl.store(Q_shared + offs_11, acc_o_r.to(tl.bfloat16))
    # sparse_mla_fwd_pipelined.py:192: T.copy(O_shared[:, D // 2 : D], Output[b_i, s_i, H0:H1, D // 2 : D])
    i0_15 = tl.arange(0, 64)[:, None]
    i1_13 = tl.arange(0, 256)[None, :]
    tl.debug_barrier()
    offs_12 = i0_15 * 576 + (256 + i1_13)
    offs_13 = by * (32768 * seq_len) + s_i * 32768 + (H0 + i0_15) * 512 + (256 + i1_13)
    mask_6 = (by < batch) & (s_i < seq_len)
    tl.store(Output + offs_13, tl.load(Q_shared + offs_12), mask=mask_6)


# ---- THREAD_COPY_TILES=1 with the KV ring kept in scratch (a hand-made choice of scratch buffer)
@triton.jit
def dethread_scratch_kernel(Q, KV, Indices, q_start_index_s, Output, Lse, batch, seq_len, seq_len_kv, scratch_ptr):
    # sparse_mla_fwd_pipelined.py:81: with T.Kernel((seq_len - kv_stride + 1 if CP0 else seq_len) * REPLICATE_H, batch, kv_group, threads=threads) as (bx, by, bz):
    bx = tl.program_id(0)
    by = tl.program_id(1)
    bz = tl.program_id(2)
    program = (
        tl.program_id(0)
        + tl.program_id(1) * tl.num_programs(0)
        + tl.program_id(2) * (tl.num_programs(0) * tl.num_programs(1))
    )
    scratch = scratch_ptr + program.to(tl.int64) * 221184
    # sparse_mla_fwd_pipelined.py:82: Q_shared = T.alloc_shared([H_per_block, D + D_tail], dtype)
    Q_shared = scratch.to(tl.pointer_type(tl.bfloat16), bitcast=True)
    # sparse_mla_fwd_pipelined.py:83: KV_shared = T.alloc_shared([num_stages, BI, D + D_tail], dtype)
    KV_shared = (scratch + 73728).to(tl.pointer_type(tl.bfloat16), bitcast=True)
    # sparse_mla_fwd_pipelined.py:85: is_kv_valid = T.alloc_shared([num_stages, BI], "bool", scope="shared")
    is_kv_valid = tl.zeros([2, 64], tl.int1)
    # sparse_mla_fwd_pipelined.py:107: s_i = (bx + (KV_stride - 1 if CP0 else 0)) if REPLICATE_H == 1 else (bx // REPLICATE_H + (KV_stride - 1 if CP0 else 0))
    s_i = bx
    # sparse_mla_fwd_pipelined.py:108: q_i = q_start_index_s[0] + s_i
    q_i = tl.load(q_start_index_s) + s_i
    # sparse_mla_fwd_pipelined.py:109: max_kv_i = (q_i + 1 - KV_stride) // KV_stride
    max_kv_i = _floordiv(tl.full([], q_i + 1 - 1, tl.int32), 1)
    # sparse_mla_fwd_pipelined.py:111: H0 = g_i * padded_H + (0 if REPLICATE_H == 1 else (bx % REPLICATE_H) * 64)
    H0 = bz * 64
    # sparse_mla_fwd_pipelined.py:116: T.tma_copy(Q[b_i, s_i, H0:H1, :], Q_shared, barrier=bar_q)
    i0 = tl.arange(0, 64)[:, None]
    i1 = tl.arange(0, 1024)[None, :]
    offs = by * (36864 * seq_len) + s_i * 36864 + (H0 + i0) * 576 + i1
    mask = (by < batch) & (s_i < seq_len) & (i1 < 576)
    offs_1 = i0 * 576 + i1
    mask_1 = i1 < 576
    tl.store(Q_shared + offs_1, tl.load(Q + offs, mask=mask, other=0), mask=mask_1)
    # sparse_mla_fwd_pipelined.py:121: T.fill(sumexp, 0)
    sumexp = tl.zeros([64], tl.float32)
    # sparse_mla_fwd_pipelined.py:122: T.fill(m_i, -(2**30))  # avoid -inf - inf to cause nan
    m_i = tl.full([64], -1073741824, tl.float32)
    # sparse_mla_fwd_pipelined.py:123: T.fill(acc_o_l, 0)
    acc_o_l = tl.zeros([64, 256], tl.float32)
    # sparse_mla_fwd_pipelined.py:175: T.fill(acc_o_r, 0)
    acc_o_r = tl.zeros([64, 256], tl.float32)
    # sparse_mla_fwd_pipelined.py:126: for i_i in T.serial(T.ceildiv(NI, num_stages)):
    for i_i in tl.range(0, 2, num_stages=1):
        # sparse_mla_fwd_pipelined.py:127: for stage in T.unroll(num_stages):
        for stage in tl.static_range(2):
            # sparse_mla_fwd_pipelined.py:206: is_kv_valid[stage, r * 16 + (tx - 256) // 8] = indices_local <= max_kv_i
            is_kv_valid_i1 = tl.arange(0, 64)
            offs_2 = by * (256 * seq_len) + s_i * 256 + bz * 256 + (is_kv_valid_i1 + (i_i * 2 + stage) * 64)
            mask_2 = (by < batch) & (s_i < seq_len)
            is_kv_valid = tl.where(
                tl.arange(0, 2)[:, None] == stage,
                (tl.load(Indices + offs_2, mask=mask_2, other=0) <= max_kv_i)[None, :],
                is_kv_valid,
            )
            # sparse_mla_fwd_pipelined.py:209: T.ptx_cp_async(
            KV_shared_i1 = tl.arange(0, 64)[:, None]
            KV_shared_i2 = tl.arange(0, 1024)[None, :]
            # sparse_mla_fwd_pipelined.py:207: if is_kv_valid[stage, r * 16 + (tx - 256) // 8]:
            cond_3 = (tl.sum(tl.where(tl.arange(0, 2)[:, None] == stage, is_kv_valid, 0), axis=0) != 0)[:, None]
            # sparse_mla_fwd_pipelined.py:209: T.ptx_cp_async(
            offs_3 = by * (256 * seq_len) + s_i * 256 + bz * 256 + (KV_shared_i1 + (i_i * 2 + stage) * 64)
            mask_3 = (by < batch) & (s_i < seq_len) & cond_3
            idx = tl.load(Indices + offs_3, mask=mask_3, other=0)
            offs_4 = by * (576 * seq_len_kv) + idx * 576 + bz * 576 + KV_shared_i2
            mask_4 = (by < batch) & (idx < seq_len_kv) & (idx >= 0) & ((KV_shared_i2 < 576) & cond_3)
            tl.debug_barrier()
            offs_5 = stage * 36864 + KV_shared_i1 * 576 + KV_shared_i2
            mask_5 = (KV_shared_i2 < 576) & cond_3
            tl.store(KV_shared + offs_5, tl.load(KV + offs_4, mask=mask_4, other=0), mask=mask_5)
            # sparse_mla_fwd_pipelined.py:131: acc_s[h_i, bi_i] = T.if_then_else(is_kv_valid[stage, bi_i], 0, -T.infinity(acc_s.dtype))
            acc_s = tl.broadcast_to(
                tl.broadcast_to(
                    tl.where(
                        (tl.sum(tl.where(tl.arange(0, 2)[:, None] == stage, is_kv_valid, 0), axis=0) != 0)[None, :],
                        0,
                        -float("inf"),
                    ),
                    (64, 64),
                ),
                (64, 64),
            )
            # sparse_mla_fwd_pipelined.py:132: T.wgmma_gemm(Q_shared[:, : D // 2], KV_shared[stage, :, : D // 2], acc_s, transpose_B=True)
            i0_1 = tl.arange(0, 64)[:, None]
            i1_1 = tl.arange(0, 256)[None, :]
            offs_6 = i0_1 * 576 + i1_1
            Q_shared_part = tl.load(Q_shared + offs_6)
            i0_2 = tl.arange(0, 64)[:, None]
            i1_2 = tl.arange(0, 256)[None, :]
            tl.debug_barrier()
            offs_7 = stage * 36864 + i0_2 * 576 + i1_2
            KV_shared_part = tl.broadcast_to(tl.load(KV_shared + offs_7)[None, :, :], (1, 64, 256))
            acc_s = tl.dot(Q_shared_part, tl.trans(tl.reshape(KV_shared_part, (64, 256))), acc_s)
            # sparse_mla_fwd_pipelined.py:133: T.wgmma_gemm(Q_shared[:, D // 2 : D], KV_shared[stage, :, D // 2 : D], acc_s, transpose_B=True)
            i0_3 = tl.arange(0, 64)[:, None]
            i1_3 = tl.arange(0, 256)[None, :]
            offs_8 = i0_3 * 576 + (256 + i1_3)
            Q_shared_part_1 = tl.load(Q_shared + offs_8)
            i0_4 = tl.arange(0, 64)[:, None]
            i1_4 = tl.arange(0, 256)[None, :]
            offs_9 = stage * 36864 + i0_4 * 576 + (256 + i1_4)
            KV_shared_part_1 = tl.broadcast_to(tl.load(KV_shared + offs_9)[None, :, :], (1, 64, 256))
            acc_s = tl.dot(Q_shared_part_1, tl.trans(tl.reshape(KV_shared_part_1, (64, 256))), acc_s)
            # sparse_mla_fwd_pipelined.py:134: T.wgmma_gemm(Q_shared[:, D:], KV_shared[stage, :, D:], acc_s, transpose_B=True)
            i0_5 = tl.arange(0, 64)[:, None]
            i1_5 = tl.arange(0, 64)[None, :]
            offs_10 = i0_5 * 576 + (512 + i1_5)
            Q_shared_part_2 = tl.load(Q_shared + offs_10)
            i0_6 = tl.arange(0, 64)[:, None]
            i1_6 = tl.arange(0, 64)[None, :]
            offs_11 = stage * 36864 + i0_6 * 576 + (512 + i1_6)
            KV_shared_part_2 = tl.broadcast_to(tl.load(KV_shared + offs_11)[None, :, :], (1, 64, 64))
            acc_s = tl.dot(Q_shared_part_2, tl.trans(tl.reshape(KV_shared_part_2, (64, 64))), acc_s)
            # sparse_mla_fwd_pipelined.py:142: T.copy(m_i, m_i_prev)
            m_i_prev = m_i
            # sparse_mla_fwd_pipelined.py:143: T.reduce_max(acc_s, m_i, dim=1, clear=False)
            m_i = tl.maximum(m_i, tl.max(acc_s, axis=1))
            # sparse_mla_fwd_pipelined.py:145: m_i[h_i] = T.max(m_i[h_i], m_i_prev[h_i])
            m_i = tl.maximum(m_i, m_i_prev)
            # sparse_mla_fwd_pipelined.py:147: alpha_local[h_i] = T.exp2((m_i_prev[h_i] - m_i[h_i]) * sm_scale)
            alpha_local = tl.exp2((m_i_prev - m_i) * 0.06011229333333333)
            # sparse_mla_fwd_pipelined.py:149: acc_s[h_i, bi_i] = T.exp2(acc_s[h_i, bi_i] * sm_scale - m_i[h_i] * sm_scale)
            acc_s = tl.exp2(acc_s * 0.06011229333333333 - m_i[:, None] * 0.06011229333333333)
            # sparse_mla_fwd_pipelined.py:150: T.reduce_sum(acc_s, sumexp_i, dim=1)  # is this a accumulate operator?
            sumexp_i = tl.sum(acc_s, axis=1)
            # sparse_mla_fwd_pipelined.py:152: sumexp[h_i] = sumexp[h_i] * alpha_local[h_i] + sumexp_i[h_i]
            sumexp = sumexp * alpha_local + sumexp_i
            # sparse_mla_fwd_pipelined.py:154: acc_o_l[h_i, d_i] *= alpha_local[h_i]
            acc_o_l = acc_o_l * alpha_local[:, None]
            # sparse_mla_fwd_pipelined.py:155: T.copy(alpha_local, alpha_shared)
            alpha_shared = alpha_local
            # sparse_mla_fwd_pipelined.py:157: T.copy(acc_s, S_shared)
            S_shared = acc_s.to(tl.bfloat16)
            # sparse_mla_fwd_pipelined.py:158: T.gemm(S_shared, KV_shared[stage, :, : D // 2], acc_o_l)
            i0_10 = tl.arange(0, 64)[:, None]
            i1_8 = tl.arange(0, 256)[None, :]
            offs_12 = stage * 36864 + i0_10 * 576 + i1_8
            KV_shared_part_3 = tl.broadcast_to(tl.load(KV_shared + offs_12)[None, :, :], (1, 64, 256))
            acc_o_l = tl.dot(S_shared, tl.reshape(KV_shared_part_3, (64, 256)), acc_o_l)
            # sparse_mla_fwd_pipelined.py:181: acc_o_r[h_i, d_i] *= alpha_shared[h_i]
            acc_o_r = acc_o_r * alpha_shared[:, None]
            # sparse_mla_fwd_pipelined.py:182: T.gemm(S_shared, KV_shared[stage, :, D // 2 : D], acc_o_r)
            i0_11 = tl.arange(0, 64)[:, None]
            i1_9 = tl.arange(0, 256)[None, :]
            offs_13 = stage * 36864 + i0_11 * 576 + (256 + i1_9)
            KV_shared_part_4 = tl.broadcast_to(tl.load(KV_shared + offs_13)[None, :, :], (1, 64, 256))
            acc_o_r = tl.dot(S_shared, tl.reshape(KV_shared_part_4, (64, 256)), acc_o_r)
    # sparse_mla_fwd_pipelined.py:165: sum_exp_shared[h_i] = sumexp[h_i]
    sum_exp_shared = sumexp
    # sparse_mla_fwd_pipelined.py:167: acc_o_l[h_i, d_i] /= sumexp[h_i]
    acc_o_l = acc_o_l / sumexp[:, None]
    # sparse_mla_fwd_pipelined.py:170: T.copy(acc_o_l, O_shared[:, : D // 2])
    i0_12 = tl.arange(0, 64)[:, None]
    i1_10 = tl.arange(0, 256)[None, :]
    tl.debug_barrier()
    offs_14 = i0_12 * 576 + i1_10
    tl.store(Q_shared + offs_14, acc_o_l.to(tl.bfloat16))
    # sparse_mla_fwd_pipelined.py:171: T.copy(O_shared[:, : D // 2], Output[b_i, s_i, H0:H1, 0 : D // 2])
    i0_13 = tl.arange(0, 64)[:, None]
    i1_11 = tl.arange(0, 256)[None, :]
    tl.debug_barrier()
    offs_15 = i0_13 * 576 + i1_11
    offs_16 = by * (32768 * seq_len) + s_i * 32768 + (H0 + i0_13) * 512 + i1_11
    mask_6 = (by < batch) & (s_i < seq_len)
    tl.store(Output + offs_16, tl.load(Q_shared + offs_15), mask=mask_6)
    # sparse_mla_fwd_pipelined.py:189: acc_o_r[h_i, d_i] /= sum_exp_shared[h_i]
    acc_o_r = acc_o_r / sum_exp_shared[:, None]
    # sparse_mla_fwd_pipelined.py:191: T.copy(acc_o_r, O_shared[:, D // 2 : D])
    i0_14 = tl.arange(0, 64)[:, None]
    i1_12 = tl.arange(0, 256)[None, :]
    tl.debug_barrier()
    offs_17 = i0_14 * 576 + (256 + i1_12)
    tl.store(Q_shared + offs_17, acc_o_r.to(tl.bfloat16))
    # sparse_mla_fwd_pipelined.py:192: T.copy(O_shared[:, D // 2 : D], Output[b_i, s_i, H0:H1, D // 2 : D])
    i0_15 = tl.arange(0, 64)[:, None]
    i1_13 = tl.arange(0, 256)[None, :]
    tl.debug_barrier()
    offs_18 = i0_15 * 576 + (256 + i1_13)
    offs_19 = by * (32768 * seq_len) + s_i * 32768 + (H0 + i0_15) * 512 + (256 + i1_13)
    mask_7 = (by < batch) & (s_i < seq_len)
    tl.store(Output + offs_19, tl.load(Q_shared + offs_18), mask=mask_7)


@triton.jit
def _mm(a, b, acc, CPU: tl.constexpr):
    if CPU:  # Triton's interpreter gets bfloat16 dots wrong: the smoke run multiplies in float32
        return tl.dot(a.to(tl.float32), b.to(tl.float32), acc)
    return tl.dot(a, b, acc)


@triton.jit
def bv_kernel(
    Q,
    KV,
    Indices,
    q_start,
    Output,
    scratch_ptr,
    seq_len,
    seq_len_kv,
    sm_scale,
    zero,
    H: tl.constexpr,
    BI: tl.constexpr,
    NI: tl.constexpr,
    TOPK: tl.constexpr,
    Q_MODE: tl.constexpr,
    SPLIT: tl.constexpr,
    NEST: tl.constexpr,
    STAGES: tl.constexpr,
    KV2: tl.constexpr,
    CPU: tl.constexpr = False,
):
    # block view of sparse_mla_fwd_pipelined: one program per query, all H heads
    s_i = tl.program_id(0)
    b_i = tl.program_id(1)
    D: tl.constexpr = 512
    HD: tl.constexpr = 256 if SPLIT else 512
    max_kv_i = tl.load(q_start) + s_i
    h = tl.arange(0, H)
    d = tl.arange(0, HD)
    dt = tl.arange(0, 64)
    q_row = Q + (b_i * seq_len + s_i).to(tl.int64) * (H * 576) + h[:, None] * 576
    if Q_MODE == 2:  # Q staged in global scratch, as tile2triton keeps Q_shared
        sc = scratch_ptr + (s_i + b_i * tl.num_programs(0)).to(tl.int64) * (H * 576) + h[:, None] * 576
        tl.store(sc + d[None, :], tl.load(q_row + d[None, :]))
        if SPLIT:
            tl.store(sc + HD + d[None, :], tl.load(q_row + HD + d[None, :]))
        tl.store(sc + D + dt[None, :], tl.load(q_row + D + dt[None, :]))
        tl.debug_barrier()
        q_row = sc
    q0 = tl.load(q_row + d[None, :])
    q1 = tl.load(q_row + (HD % D) + d[None, :])  # the right half (SPLIT only)
    qt = tl.load(q_row + D + dt[None, :])
    m_i = tl.full([H], -1073741824.0, tl.float32)
    sumexp = tl.zeros([H], tl.float32)
    acc_l = tl.zeros([H, HD], tl.float32)
    acc_r = tl.zeros([H, HD], tl.float32)
    idx_row = Indices + (b_i * seq_len + s_i).to(tl.int64) * TOPK
    kv_base = KV + b_i.to(tl.int64) * seq_len_kv * 576
    j = tl.arange(0, BI)
    OUTER: tl.constexpr = NI // 2 if NEST else NI
    INNER: tl.constexpr = 2 if NEST else 1
    for o in tl.range(0, OUTER, num_stages=STAGES):
        for stage in tl.static_range(INNER):
            it = o * INNER + stage
            idx = tl.load(idx_row + it * BI + j)
            valid = idx <= max_kv_i
            kv_row = kv_base + idx.to(tl.int64)[:, None] * 576
            k0 = tl.load(kv_row + d[None, :], mask=valid[:, None], other=0.0)
            kt = tl.load(kv_row + D + dt[None, :], mask=valid[:, None], other=0.0)
            if Q_MODE == 3:  # an offset Triton cannot hoist: Q streams through shared each iteration
                q_it = q_row + it * zero
                q0 = tl.load(q_it + d[None, :])
                qt = tl.load(q_it + D + dt[None, :])
            elif Q_MODE != 1:
                q0 = tl.load(q_row + d[None, :])
                qt = tl.load(q_row + D + dt[None, :])
            acc_s = tl.broadcast_to(tl.where(valid, 0.0, -float("inf"))[None, :], (H, BI))
            acc_s = _mm(q0, tl.trans(k0), acc_s, CPU)
            if SPLIT:
                k1 = tl.load(kv_row + HD + d[None, :], mask=valid[:, None], other=0.0)
                if Q_MODE != 1:
                    q1 = tl.load((q_it if Q_MODE == 3 else q_row) + HD + d[None, :])
                acc_s = _mm(q1, tl.trans(k1), acc_s, CPU)
            acc_s = _mm(qt, tl.trans(kt), acc_s, CPU)
            m_prev = m_i
            m_i = tl.maximum(m_i, tl.max(acc_s, axis=1))
            alpha = tl.exp2((m_prev - m_i) * sm_scale)
            p = tl.exp2(acc_s * sm_scale - m_i[:, None] * sm_scale)
            sumexp = sumexp * alpha + tl.sum(p, axis=1)
            pb = p.to(tl.bfloat16)
            if KV2:  # V loaded again for the PV dot: each tile has one user, one shared layout
                k0 = tl.load(kv_row + it * zero + d[None, :], mask=valid[:, None], other=0.0)
                if SPLIT:
                    k1 = tl.load(kv_row + it * zero + HD + d[None, :], mask=valid[:, None], other=0.0)
            acc_l = _mm(pb, k0, acc_l * alpha[:, None], CPU)
            if SPLIT:
                acc_r = _mm(pb, k1, acc_r * alpha[:, None], CPU)
    o_row = Output + (b_i * seq_len + s_i).to(tl.int64) * (H * 512) + h[:, None] * 512
    tl.store(o_row + d[None, :], (acc_l / sumexp[:, None]).to(tl.bfloat16))
    if SPLIT:
        tl.store(o_row + HD + d[None, :], (acc_r / sumexp[:, None]).to(tl.bfloat16))


SCALE = (1.0 / DQK) ** 0.5 * 1.44269504


def make_inputs(S, SKV, H, topk, start, dev):
    torch.manual_seed(0)
    q = (torch.randn(1, S, H, DQK, dtype=torch.bfloat16, device=dev) / 10).clamp_(-10, 10)
    kv = (torch.randn(1, SKV, 1, DQK, dtype=torch.bfloat16, device=dev) / 10).clamp_(-10, 10)
    idx = torch.full((1, S, 1, topk), SKV, dtype=torch.int32)
    for t in range(S):  # as the example's run_regression_perf
        perm = torch.randperm(min(max(1, t + start), SKV))[:topk]
        idx[0, t, 0, : len(perm)] = perm.to(torch.int32)
    return q, kv, idx.to(dev), torch.tensor([start], dtype=torch.int32, device=dev)


def reference(q, kv, idx, start):
    """float32 sparse MLA forward: query t attends to its topk keys with index <= start + t."""
    S, SKV = q.shape[1], kv.shape[1]
    qf, kf = q[0].float(), kv[0, :, 0].float()
    ids = idx[0, :, 0].long()
    valid = ids <= (start + torch.arange(S, device=q.device))[:, None]
    k = kf[ids.clamp(max=SKV - 1)]  # [S, topk, 576]
    s = torch.einsum("shd,std->sht", qf, k) * (DQK**-0.5)
    s = s.masked_fill(~valid[:, None, :], float("-inf"))
    p = s.softmax(-1)
    return torch.einsum("sht,std->shd", p, k[..., :DV])


def stats(compiled) -> str:
    if compiled is None:
        return ""
    spills = getattr(compiled, "n_spills", None)
    shared = getattr(getattr(compiled, "metadata", None), "shared", None)
    return f"regs={compiled.n_regs} spills={spills} smem={shared}"


def run_current(q, kv, idx, start_t, out, lse):
    S, SKV = q.shape[1], kv.shape[1]
    scratch = torch.empty(S * 221184, dtype=torch.uint8, device=q.device)
    return current_kernel[(S, 1, 1)](q, kv, idx, start_t, out, lse, 1, S, SKV, scratch, num_warps=16)


def run_dethread(q, kv, idx, start_t, out, lse):
    S, SKV = q.shape[1], kv.shape[1]
    scratch = torch.empty(S * 73728, dtype=torch.uint8, device=q.device)
    return dethread_kernel[(S, 1, 1)](q, kv, idx, start_t, out, lse, 1, S, SKV, scratch, num_warps=16)


def run_dethread_scratch(q, kv, idx, start_t, out, lse):
    S, SKV = q.shape[1], kv.shape[1]
    scratch = torch.empty(S * 221184, dtype=torch.uint8, device=q.device)
    return dethread_scratch_kernel[(S, 1, 1)](q, kv, idx, start_t, out, lse, 1, S, SKV, scratch, num_warps=16)


def run_bv(q, kv, idx, start_t, out, scratch, bi, q_mode, split, nest, stages, warps, kv2=0):
    S, SKV, H, topk = q.shape[1], kv.shape[1], q.shape[2], idx.shape[-1]
    return bv_kernel[(S, 1)](
        q,
        kv,
        idx,
        start_t,
        out,
        scratch,
        S,
        SKV,
        SCALE,
        0,
        H=H,
        BI=bi,
        NI=topk // bi,
        TOPK=topk,
        Q_MODE=q_mode,
        SPLIT=split,
        NEST=nest,
        STAGES=stages,
        KV2=kv2,
        CPU=q.device.type == "cpu",
        num_warps=warps,
    )


# (name, BI, Q_MODE, SPLIT, NEST, STAGES, warps, KV2); Q_MODE 0: global (hoisted into registers by
# Triton), 2: scratch, 3: streamed (reloaded each iteration through shared)
VARIANTS = [
    ("bv/qscr/full/flat/s2/w8", 64, 2, 0, 0, 2, 8, 0),  # what sparse_mla_fwd gets today (256 threads)
    ("bv/qglob/split/flat/s2/w8", 64, 0, 1, 0, 2, 8, 0),  # the literal merge of the example's consumers
    ("bv/qscr/full/flat/s2/w16", 64, 2, 0, 0, 2, 16, 0),
    ("bv/qstream/full/flat/s2/w8", 64, 3, 0, 0, 2, 8, 0),
    ("bv/qstream/full/flat/s2/w16", 64, 3, 0, 0, 2, 16, 0),
    ("bv/qstream/split/flat/s2/w8/kv2", 64, 3, 1, 0, 2, 8, 1),
]

SECOND_SHAPE = (VARIANTS[0][0], VARIANTS[3][0])  # < 12 kernels in all


def main() -> None:
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    quick = dev == "cpu"  # the interpreter: a smoke run of one small shape
    shapes = [(8, 64, 16, 128, 0)] if quick else [(256, 512, 64, 256, 1024), (512, 2048, 64, 512, 1024)]
    print(f"{'case':34} {'S':>4} {'SKV':>5} {'topk':>5} {'us':>9} {'max err':>9}  compiled")
    for S, SKV, H, topk, start in shapes:
        q, kv, idx, start_t = make_inputs(S, SKV, H, topk, start, dev)
        ref = reference(q, kv, idx, start)
        rows = []
        if (S, SKV, H, topk, start) == (256, 512, 64, 256, 1024):
            out = torch.full((1, S, H, DV), float("nan"), dtype=torch.bfloat16, device=dev)
            lse = torch.empty(1, S, H, dtype=torch.float32, device=dev)
            rows.append(("current (t2t 95178ca)", out, lambda: run_current(q, kv, idx, start_t, out, lse)))
            out2 = torch.full((1, S, H, DV), float("nan"), dtype=torch.bfloat16, device=dev)
            rows.append(
                ("copy tiles, KV ring in registers", out2, lambda: run_dethread(q, kv, idx, start_t, out2, lse))
            )
            out3 = torch.full((1, S, H, DV), float("nan"), dtype=torch.bfloat16, device=dev)
            rows.append(
                (
                    "THREAD_COPY_TILES=1, KV in scratch",
                    out3,
                    lambda: run_dethread_scratch(q, kv, idx, start_t, out3, lse),
                )
            )
        scratch = torch.empty(S * H * DQK, dtype=torch.bfloat16, device=dev)
        for name, bi, qm, split, nest, stages, warps, kv2 in VARIANTS if not quick else VARIANTS[:3] + VARIANTS[-2:]:
            if dev == "cuda" and S != 256 and name not in SECOND_SHAPE:
                continue
            o = torch.full((1, S, H, DV), float("nan"), dtype=torch.bfloat16, device=dev)
            rows.append(
                (
                    name,
                    o,
                    lambda o=o, a=(bi, qm, split, nest, stages, warps, kv2): run_bv(
                        q, kv, idx, start_t, o, scratch, *a
                    ),
                )
            )
        for name, o, fn in rows:
            t0 = time.time()
            try:
                compiled = fn()
                err = (o[0].float() - ref).abs().max().item()
                us = float("nan") if quick else do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e3
                line = f"{us:9.2f} {err:9.2e}  {stats(compiled)} first={time.time() - t0:.1f}s"
            except Exception as exc:  # one row failing does not hide the others
                line = f"FAILED {type(exc).__name__}: {str(exc).splitlines()[0][:100] if str(exc) else ''}"
            print(f"{name:34} {S:4} {SKV:5} {topk:5} {line}", flush=True)
        if not quick:
            us = do_bench(lambda: reference(q, kv, idx, start), warmup=5, rep=20, return_mode="median") * 1e3
            print(f"{'torch reference (fp32)':34} {S:4} {SKV:5} {topk:5} {us:9.2f}", flush=True)


if __name__ == "__main__":
    main()
