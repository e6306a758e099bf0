"""GPU probe (issue 23, DeepSeek-V3.2 sparse MLA backward and forward).

Kernels written the way TileLang's deepseek_v32 examples write them (one program per query, 64
heads, 256 threads, gathered key blocks, head dims 512 + 64 in one ``Q_shared[64, 576]``; bwd:
dQ in registers, dKV by vectorized atomics staged through shared memory in two halves), through
tile2triton, next to hand-written Triton kernels of the bwd (``hand-T``: dKV as the transposed
product, one atomic of the whole accumulator; ``hand-split128``: dKV by 128-column chunks).

Session 11 (first rows, bwd at both sizes): ``TILE2TRITON_STAGED_ATOMICS`` (passes/staged_atomics.py)
makes the dKV atomics read the accumulator, as hand-T does, instead of a stage in global scratch
read back after a gather and a one-hot scatter (offline, sm_90: the generated kernel's shared
memory, wgmma count, atomics and spills now match hand-T's at either stage count):

- ``t2t default``: every switch at its default (the runtime fits shared memory itself: Triton
  pipelines the ``num_stages=0`` loop with its launch default, as hand-T pipelined does);
- ``t2t staged atomics off``: the switch off (session 10's default);
- ``hand-T`` (num_stages=1, session 10's row) and ``hand-T pipelined`` (num_stages=3);
- ``t2t default 1 stage``: the default started at the fit step with one pipeline stage (as hand-T).

Session 10's rows follow: ``TILE2TRITON_TRANSPOSED_DOTS`` (the 32-row dKV gemms as ``C^T = B^T
A^T``, wgmma) and ``TILE2TRITON_COLUMN_SPLIT`` (``Q_shared`` as its 512- and 64-column blocks), ``t2t
column split`` / ``t2t transposed`` with both on, ``t2t main`` with both off; ``mha_bwd``: a
flash-attention backward (fp16, head dim 128, 32-query blocks) whose dQ gemm takes the transposed
form.  Timed with ``triton.testing.do_bench`` (warmup 25, rep 200, median), outputs checked
against a float32 torch reference (max abs error relative to the reference's max; bwd: dQ and dKV,
fwd: O and lse).  Sizes: the regression suite's (bwd S=256 SKV=512 topk=256, fwd S=256 SKV=1024
topk=256) and one other (S=512, SKV=2048, topk=512).  ``fit=`` is the runtime's shared-memory fit
step.  Rows past the time budget say "skipped (time)".

    PYTHONPATH=. python3 benchmarks/mlabwd_probe.py
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import tile2triton as tilelang  # noqa: E402
import tile2triton.language as T  # noqa: E402

DEV = "cuda" if torch.cuda.is_available() else "cpu"
H, D, DT = 64, 512, 64
BS = 32


def bwd_factory(S, SKV, topk, threads=256):
    """dQ, dKV of sparse MLA attention for one kv group (modelled on deepseek_v32's bwd)."""
    sm_scale = (D + DT) ** -0.5
    scale_log2 = sm_scale * 1.44269504
    NS = topk // BS
    half = BS // 2
    bf, f32 = "bfloat16", "float32"

    @T.prim_func
    def bwd(
        Q: T.Tensor([1, S, H, D + DT], bf),
        KV: T.Tensor([1, SKV, 1, D + DT], bf),
        dO: T.Tensor([1, S, H, D], bf),
        Indices: T.Tensor([1, S, 1, topk], "int32"),
        Lse: T.Tensor([1, S, H], f32),
        Delta: T.Tensor([1, S, H], f32),
        dKV: T.Tensor([1, SKV, 1, D + DT], f32),
        dQ: T.Tensor([1, S, H, D + DT], bf),
    ):
        assert SKV > 0 and topk > 0  # names only the annotations use must be named in the body too
        with T.Kernel(S, 1, 1, threads=threads) as (s_i, by, bz):
            Q_shared = T.alloc_shared([H, D + DT], bf)
            KV_shared = T.alloc_shared([BS, D], bf)
            KV_tail_shared = T.alloc_shared([BS, DT], bf)
            dO_shared = T.alloc_shared([H, D], bf)
            mask = T.alloc_fragment([BS], "bool")
            P_shared = T.alloc_shared([H, BS], bf)
            dP_shared = T.alloc_shared([H, BS], bf)
            dQ_shared = T.alloc_shared([H, D], bf)
            dQ_tail_shared = T.alloc_shared([H, DT], bf)
            acc_p = T.alloc_fragment([H, BS], f32)
            acc_dp = T.alloc_fragment([H, BS], f32)
            acc_dq = T.alloc_fragment([H, D], f32)
            acc_dq_tail = T.alloc_fragment([H, DT], f32)
            acc_dkv = T.alloc_fragment([BS, D], f32)
            acc_dkv_tail = T.alloc_fragment([BS, DT], f32)
            dkv_stage = T.alloc_shared([half, D], f32)
            dkv_tail_stage = T.alloc_shared([half, DT], f32)

            T.copy(Q[by, s_i, 0:H, :D], Q_shared[:, :D])
            T.copy(Q[by, s_i, 0:H, D:], Q_shared[:, D:])
            T.copy(dO[by, s_i, 0:H, :D], dO_shared)
            T.clear(acc_dq)
            T.clear(acc_dq_tail)
            for i_i in T.Pipelined(NS, num_stages=0):
                for j in T.Parallel(BS):
                    mask[j] = Indices[by, s_i, bz, i_i * BS + j] <= s_i
                for h, j in T.Parallel(H, BS):
                    acc_p[h, j] = T.if_then_else(mask[j], 0, -T.infinity(f32))
                for j, d in T.Parallel(BS, D):
                    KV_shared[j, d] = KV[by, Indices[by, s_i, bz, i_i * BS + j], bz, d]
                T.gemm(Q_shared[:, :D], KV_shared, acc_p, transpose_B=True)
                for j, d in T.Parallel(BS, DT):
                    KV_tail_shared[j, d] = KV[by, Indices[by, s_i, bz, i_i * BS + j], bz, D + d]
                T.gemm(Q_shared[:, D:], KV_tail_shared, acc_p, transpose_B=True)
                for h, j in T.Parallel(H, BS):
                    acc_p[h, j] = T.exp2(acc_p[h, j] * scale_log2 - Lse[by, s_i, h])
                T.copy(acc_p, P_shared)
                T.gemm(dO_shared, KV_shared, acc_dp, transpose_B=True, clear_accum=True)
                for h, j in T.Parallel(H, BS):
                    acc_dp[h, j] = acc_p[h, j] * (acc_dp[h, j] - Delta[by, s_i, h]) * sm_scale
                T.copy(acc_dp, dP_shared)
                T.gemm(dP_shared, KV_shared, acc_dq)
                T.gemm(dP_shared, KV_tail_shared, acc_dq_tail)
                T.gemm(dP_shared, Q_shared[:, :D], acc_dkv, transpose_A=True, clear_accum=True)
                T.gemm(P_shared, dO_shared, acc_dkv, transpose_A=True)
                T.clear(acc_dkv_tail)
                T.gemm(dP_shared, Q_shared[:, D:], acc_dkv_tail, transpose_A=True)
                for s in range(2):
                    for j, d in T.Parallel(BS, D):
                        if j < half:
                            dkv_stage[j, d] = acc_dkv[j + s * half, d]
                    for j, d in T.Parallel(BS, DT):
                        if j < half:
                            dkv_tail_stage[j, d] = acc_dkv_tail[j + s * half, d]
                    for j, d in T.Parallel(half, D // 4):
                        T.atomic_addx4(
                            dKV[by, Indices[by, s_i, bz, i_i * BS + j + s * half], bz, d * 4], dkv_stage[j, d * 4]
                        )
                    for j, d in T.Parallel(half, DT // 4):
                        T.atomic_addx4(
                            dKV[by, Indices[by, s_i, bz, i_i * BS + j + s * half], bz, D + d * 4],
                            dkv_tail_stage[j, d * 4],
                        )
            T.copy(acc_dq, dQ_shared)
            T.copy(acc_dq_tail, dQ_tail_shared)
            T.copy(dQ_shared, dQ[by, s_i, 0:H, :D])
            T.copy(dQ_tail_shared, dQ[by, s_i, 0:H, D:])

    return bwd


def fwd_factory(S, SKV, topk, BI=64, threads=256, stages=2):
    """Sparse MLA forward for one kv group (modelled on deepseek_v32's sparse_mla_fwd)."""
    scale = (D + DT) ** -0.5 * 1.44269504
    bf, f32 = "bfloat16", "float32"

    @T.prim_func
    def fwd(
        Q: T.Tensor([1, S, H, D + DT], bf),
        KV: T.Tensor([1, SKV, 1, D + DT], bf),
        Indices: T.Tensor([1, S, 1, topk], "int32"),
        Output: T.Tensor([1, S, H, D], bf),
        Lse: T.Tensor([1, S, H], f32),
    ):
        assert SKV > 0  # names only the annotations use must be named in the body too
        with T.Kernel(S, 1, 1, threads=threads) as (s_i, b_i, g_i):
            Q_shared = T.alloc_shared([H, D + DT], bf)
            KV_shared = T.alloc_shared([BI, D], bf)
            K_tail_shared = T.alloc_shared([BI, DT], bf)
            mask = T.alloc_fragment([BI], "bool")
            acc_o = T.alloc_fragment([H, D], f32)
            acc_s = T.alloc_fragment([H, BI], f32)
            S_shared = T.alloc_shared([H, BI], bf)
            sumexp = T.alloc_fragment([H], f32)
            sumexp_i = T.alloc_fragment([H], f32)
            alpha = T.alloc_fragment([H], f32)
            m_i = T.alloc_fragment([H], f32)
            m_i_prev = T.alloc_fragment([H], f32)
            T.fill(acc_o, 0)
            T.fill(sumexp, 0)
            T.fill(m_i, -(2**30))
            T.copy(Q[b_i, s_i, 0:H, :D], Q_shared[:, :D])
            T.copy(Q[b_i, s_i, 0:H, D:], Q_shared[:, D:])
            for i_i in T.Pipelined(topk // BI, num_stages=stages):
                for j in T.Parallel(BI):
                    mask[j] = Indices[b_i, s_i, g_i, i_i * BI + j] <= s_i
                for j, d in T.Parallel(BI, D):
                    KV_shared[j, d] = KV[b_i, Indices[b_i, s_i, g_i, i_i * BI + j], g_i, d]
                for j, d in T.Parallel(BI, DT):
                    K_tail_shared[j, d] = KV[b_i, Indices[b_i, s_i, g_i, i_i * BI + j], g_i, D + d]
                for h, j in T.Parallel(H, BI):
                    acc_s[h, j] = T.if_then_else(mask[j], 0, -T.infinity(f32))
                T.gemm(Q_shared[:, :D], KV_shared, acc_s, transpose_B=True)
                T.gemm(Q_shared[:, D:], K_tail_shared, acc_s, transpose_B=True)
                T.copy(m_i, m_i_prev)
                T.reduce_max(acc_s, m_i, dim=1, clear=False)
                for h in T.Parallel(H):
                    m_i[h] = T.max(m_i[h], m_i_prev[h])
                for h in T.Parallel(H):
                    alpha[h] = T.exp2((m_i_prev[h] - m_i[h]) * scale)
                for h, j in T.Parallel(H, BI):
                    acc_s[h, j] = T.exp2(acc_s[h, j] * scale - m_i[h] * scale)
                T.reduce_sum(acc_s, sumexp_i, dim=1)
                for h in T.Parallel(H):
                    sumexp[h] = sumexp[h] * alpha[h] + sumexp_i[h]
                for h, d in T.Parallel(H, D):
                    acc_o[h, d] = acc_o[h, d] * alpha[h]
                T.copy(acc_s, S_shared)
                T.gemm(S_shared, KV_shared, acc_o)
            for h, d in T.Parallel(H, D):
                acc_o[h, d] /= sumexp[h]
            for h in T.Parallel(H):
                sumexp[h] = T.log2(sumexp[h]) + m_i[h] * scale
            T.copy(acc_o, Output[b_i, s_i, 0:H, :])
            T.copy(sumexp, Lse[b_i, s_i, 0:H])

    return fwd


def mha_bwd_factory(heads, seq, dim, block_M=64, block_N=32):
    """Flash-attention backward over key blocks (modelled on flash_attention's mha bwd, bshd):
    dQ by atomics of a [block_N, dim] gemm of a shared A, the transposed-gemm case at block_N 32."""
    sm_scale = dim**-0.5
    scale = sm_scale * 1.44269504
    shape = [1, seq, heads, dim]
    f16, f32 = "float16", "float32"

    @T.prim_func
    def mha_bwd(
        Q: T.Tensor(shape, f16),
        K: T.Tensor(shape, f16),
        V: T.Tensor(shape, f16),
        dO: T.Tensor(shape, f16),
        lse: T.Tensor([1, heads, seq], f32),
        Delta: T.Tensor([1, heads, seq], f32),
        dQ: T.Tensor(shape, f32),
        dK: T.Tensor(shape, f16),
        dV: T.Tensor(shape, f16),
    ):
        assert len(shape) == 4  # names only the annotations use must be named in the body too
        with T.Kernel(heads, T.ceildiv(seq, block_M), 1, threads=128) as (bx, by, bz):
            K_shared = T.alloc_shared([block_M, dim], f16)
            dsT_shared = T.alloc_shared([block_M, block_N], f16)
            q = T.alloc_shared([block_N, dim], f16)
            V_shared = T.alloc_shared([block_M, dim], f16)
            qkT = T.alloc_fragment([block_M, block_N], f32)
            dsT = T.alloc_fragment([block_M, block_N], f32)
            qkT_cast = T.alloc_fragment([block_M, block_N], f16)
            dsT_cast = T.alloc_fragment([block_M, block_N], f16)
            lse_shared = T.alloc_shared([block_N], f32)
            delta = T.alloc_shared([block_N], f32)
            do = T.alloc_shared([block_N, dim], f16)
            dv = T.alloc_fragment([block_M, dim], f32)
            dk = T.alloc_fragment([block_M, dim], f32)
            dq = T.alloc_fragment([block_N, dim], f32)
            T.copy(K[bz, by * block_M : (by + 1) * block_M, bx, :], K_shared)
            T.copy(V[bz, by * block_M : (by + 1) * block_M, bx, :], V_shared)
            T.clear(dv)
            T.clear(dk)
            for k in T.Pipelined(0, T.ceildiv(seq, block_N), num_stages=2):
                T.copy(Q[bz, k * block_N : (k + 1) * block_N, bx, :], q)
                T.clear(qkT)
                T.gemm(K_shared, q, qkT, transpose_B=True)
                T.copy(lse[bz, bx, k * block_N : (k + 1) * block_N], lse_shared)
                for i, j in T.Parallel(block_M, block_N):
                    qkT[i, j] = T.exp2(qkT[i, j] * scale - lse_shared[j])
                T.copy(dO[bz, k * block_N : (k + 1) * block_N, bx, :], do)
                T.clear(dsT)
                T.gemm(V_shared, do, dsT, transpose_B=True)
                T.copy(qkT, qkT_cast)
                T.gemm(qkT_cast, do, dv)
                T.copy(Delta[bz, bx, k * block_N : (k + 1) * block_N], delta)
                for i, j in T.Parallel(block_M, block_N):
                    dsT_cast[i, j] = qkT[i, j] * (dsT[i, j] - delta[j]) * sm_scale
                T.gemm(dsT_cast, q, dk)
                T.copy(dsT_cast, dsT_shared)
                T.clear(dq)
                T.gemm(dsT_shared, K_shared, dq, transpose_A=True)
                for i, j in T.Parallel(block_N, dim):
                    T.atomic_add(dQ[bz, k * block_N + i, bx, j], dq[i, j])
            T.copy(dv, dV[bz, by * block_M : (by + 1) * block_M, bx, :])
            T.copy(dk, dK[bz, by * block_M : (by + 1) * block_M, bx, :])

    return mha_bwd


def mha_case(heads, seq, dim, env):
    torch.manual_seed(0)
    q, k, v, do = (torch.randn(1, seq, heads, dim, dtype=torch.float16, device=DEV) for _ in range(4))
    qf, kf, vf = (t.float().transpose(1, 2).requires_grad_(True) for t in (q, k, v))
    s = qf @ kf.transpose(-1, -2) * dim**-0.5
    lse = torch.logsumexp(s, -1)
    o = torch.softmax(s, -1) @ vf
    o.backward(do.float().transpose(1, 2))
    delta = (o.detach() * do.float().transpose(1, 2)).sum(-1).contiguous()
    lse2 = (lse * 1.44269504).detach().contiguous()
    with mock.patch.dict(os.environ, env):
        kernel = tilelang.compile(mha_bwd_factory(heads, seq, dim))
        dq = torch.zeros(1, seq, heads, dim, device=DEV)
        dk = torch.empty(1, seq, heads, dim, dtype=torch.float16, device=DEV)
        dv = torch.empty_like(dk)
        kernel(q, k, v, do, lse2, delta, dq, dk, dv)
        e = 0.0
        for got, ref in ((dq, qf.grad), (dk, kf.grad), (dv, vf.grad)):
            ref = ref.transpose(1, 2)
            e = max(e, float((got.float() - ref).abs().max() / ref.abs().max()))
        ms = triton.testing.do_bench(
            lambda: kernel(q, k, v, do, lse2, delta, dq, dk, dv), warmup=25, rep=200, return_mode="median"
        )
    return ms, e, ""


@triton.jit
def hand_bwd(Q, KV, dO, Idx, Lse, Delta, dKV, dQ, SKV, scale_log2, scale,
             H: tl.constexpr, D: tl.constexpr, DT: tl.constexpr, TOPK: tl.constexpr, BS: tl.constexpr,
             MODE: tl.constexpr, CHUNK: tl.constexpr):  # fmt: skip
    """MODE 0: dKV = dS^T Q (mma.sync); 1: dKV = (Q^T dS)^T (wgmma); 2: dKV by CHUNK-column pieces."""
    s = tl.program_id(0)
    h = tl.arange(0, H)[:, None]
    d = tl.arange(0, D)[None, :]
    dt = tl.arange(0, DT)[None, :]
    qrow = Q + s * H * (D + DT) + h * (D + DT)
    q = tl.load(qrow + d)
    qt = tl.load(qrow + D + dt)
    do = tl.load(dO + s * H * D + h * D + d)
    lse = tl.load(Lse + s * H + h)
    delta = tl.load(Delta + s * H + h)
    acc_dq = tl.zeros([H, D], tl.float32)
    acc_dqt = tl.zeros([H, DT], tl.float32)
    for i in tl.range(0, TOPK, BS):
        ind = tl.load(Idx + s * TOPK + i + tl.arange(0, BS))
        inb = (ind >= 0) & (ind < SKV)
        kvrow = KV + ind[:, None] * (D + DT)
        kv = tl.load(kvrow + d, mask=inb[:, None], other=0)
        kvt = tl.load(kvrow + D + dt, mask=inb[:, None], other=0)
        p = tl.broadcast_to(tl.where((ind <= s)[None, :], 0.0, -float("inf")), (H, BS))
        p = tl.dot(q, tl.trans(kv), p)
        p = tl.dot(qt, tl.trans(kvt), p)
        p = tl.exp2(p * scale_log2 - lse)
        dp = tl.dot(do, tl.trans(kv))
        ds = (p * (dp - delta) * scale).to(tl.bfloat16)
        p16 = p.to(tl.bfloat16)
        acc_dq = tl.dot(ds, kv, acc_dq)
        acc_dqt = tl.dot(ds, kvt, acc_dqt)
        dst = dKV + ind[:, None] * (D + DT)
        if MODE == 0:
            dkv = tl.dot(tl.trans(p16), do, tl.dot(tl.trans(ds), q))
            dkvt = tl.dot(tl.trans(ds), qt)
        else:
            dkv = tl.trans(tl.dot(tl.trans(do), p16, tl.dot(tl.trans(q), ds)))
            dkvt = tl.trans(tl.dot(tl.trans(qt), ds))
        tl.atomic_add(dst + D + dt, dkvt, mask=inb[:, None], sem="relaxed")
        if MODE == 2:
            for c in tl.static_range(0, D, CHUNK):
                dc = c + tl.arange(0, CHUNK)[None, :]
                qc = tl.load(qrow + dc)
                doc = tl.load(dO + s * H * D + h * D + dc)
                part = tl.trans(tl.dot(tl.trans(doc), p16, tl.dot(tl.trans(qc), ds)))
                tl.atomic_add(dst + dc, part, mask=inb[:, None], sem="relaxed")
        else:
            tl.atomic_add(dst + d, dkv, mask=inb[:, None], sem="relaxed")
    out = dQ + s * H * (D + DT) + h * (D + DT)
    tl.store(out + d, acc_dq.to(tl.bfloat16))
    tl.store(out + D + dt, acc_dqt.to(tl.bfloat16))


def inputs(S, SKV, topk):
    torch.manual_seed(0)
    bf = torch.bfloat16
    q = torch.randn(1, S, H, D + DT, dtype=bf, device=DEV)
    kv = torch.randn(1, SKV, 1, D + DT, dtype=bf, device=DEV)
    do = torch.randn(1, S, H, D, dtype=bf, device=DEV)
    idx = torch.full((1, S, 1, topk), SKV, dtype=torch.int32)
    for t in range(S):  # as the example's run_regression_perf: visible keys, padded with SKV
        perm = torch.randperm(max(1, t))[:topk]
        idx[0, t, 0, : len(perm)] = perm.to(torch.int32)
    idx = idx.to(DEV)
    # forward statistics and the reference gradients, in float32
    sm_scale = (D + DT) ** -0.5
    qf = q.float().requires_grad_(True)
    kvf = kv.float().requires_grad_(True)
    ids = idx[0, :, 0].long()  # S x topk
    valid = ids <= torch.arange(S, device=DEV)[:, None]
    sel = kvf[0, ids.clamp(max=SKV - 1), 0]  # S x topk x (D + DT)
    scores = torch.einsum("shd,skd->shk", qf[0], sel) * sm_scale
    scores = scores.masked_fill(~valid[:, None, :], float("-inf"))
    lse = torch.logsumexp(scores, -1)  # S x H
    o = torch.einsum("shk,skd->shd", torch.softmax(scores, -1), sel[..., :D])
    ref_o = o.detach().clone()
    o.backward(do[0].float())
    delta = (o.detach().to(bf).float() * do[0].float()).sum(-1)
    lse2 = (lse * 1.44269504).detach()
    return dict(q=q, kv=kv, do=do, idx=idx, lse=lse2[None].contiguous(), delta=delta[None].contiguous(),
                ref_dq=qf.grad, ref_dkv=kvf.grad, ref_o=ref_o, ref_lse=lse2)  # fmt: skip


def err(dq, dkv, x) -> float:
    e1 = (dq.float() - x["ref_dq"]).abs().max() / x["ref_dq"].abs().max()
    e2 = (dkv.float() - x["ref_dkv"]).abs().max() / x["ref_dkv"].abs().max()
    return float(max(e1, e2))


def t2t_case(S, SKV, topk, x, env, fit=None):
    """``fit``: the runtime's shared-memory fit step to start from (runtime/tuning.FIT_STEPS), to
    time a variant the fitting would not reach (one pipeline stage) on its own."""
    with mock.patch.dict(os.environ, env):
        kernel = tilelang.compile(bwd_factory(S, SKV, topk), out_idx=[-1])
        if fit is not None:
            kernel.shared_memory_fit = dict(fit)
        dkv = torch.zeros(1, SKV, 1, D + DT, dtype=torch.float32, device=DEV)
        args = (x["q"], x["kv"], x["do"], x["idx"], x["lse"], x["delta"], dkv)
        dq = kernel(*args)
        e = err(dq, dkv, x)
        ms = triton.testing.do_bench(lambda: kernel(*args), warmup=25, rep=200, return_mode="median")
    fit = getattr(kernel, "shared_memory_fit", None) or "fits"
    return ms, e, f"fit={fit}"


def fwd_case(S, SKV, topk, x, env):
    with mock.patch.dict(os.environ, env):
        kernel = tilelang.compile(fwd_factory(S, SKV, topk), out_idx=[-2, -1])
        args = (x["q"], x["kv"], x["idx"])
        out, lse = kernel(*args)
        e = float((out.float()[0] - x["ref_o"]).abs().max() / x["ref_o"].abs().max())
        e = max(e, float((lse[0] - x["ref_lse"]).abs().max() / x["ref_lse"].abs().max()))
        ms = triton.testing.do_bench(lambda: kernel(*args), warmup=25, rep=200, return_mode="median")
    fit = getattr(kernel, "shared_memory_fit", None) or "fits"
    return ms, e, f"fit={fit}"


def hand_case(S, SKV, topk, x, mode, chunk=128, warps=8, stages=1):
    dkv = torch.zeros(1, SKV, 1, D + DT, dtype=torch.float32, device=DEV)
    dq = torch.empty_like(x["q"])
    sm_scale = (D + DT) ** -0.5

    def run():
        hand_bwd[(S,)](x["q"], x["kv"], x["do"], x["idx"], x["lse"], x["delta"], dkv, dq, SKV,
                       sm_scale * 1.44269504, sm_scale, H=H, D=D, DT=DT, TOPK=topk, BS=BS, MODE=mode,
                       CHUNK=chunk, num_warps=warps, num_stages=stages)  # fmt: skip

    run()
    e = err(dq, dkv, x)
    ms = triton.testing.do_bench(run, warmup=25, rep=200, return_mode="median")
    return ms, e, f"w{warps} s{stages}"


ON = {"TILE2TRITON_TRANSPOSED_DOTS": "1", "TILE2TRITON_COLUMN_SPLIT": "1"}
MAIN = {"TILE2TRITON_TRANSPOSED_DOTS": "0", "TILE2TRITON_COLUMN_SPLIT": "0"}
DEFAULT: dict = {}  # every switch at its default
UNSTAGED = {"TILE2TRITON_STAGED_ATOMICS": "0"}  # session 11's switch off: the dKV stage as before
ONE_STAGE = {"transposed_dots_past_budget": True, "max_stages": 1}  # the fit steps' third


def main() -> None:
    t_start = time.time()
    print(f"triton {triton.__version__}, torch {torch.__version__}, {DEV}")
    print(f"{'case':<8} {'size':<22} {'variant':<22} {'ms':>8} {'max rel err':>12}  note")
    regression, other = (256, 512, 256), (512, 2048, 512)
    fwd_size = (256, 1024, 256)  # the regression suite's sparse_mla_fwd
    mha = (16, 1024, 128)
    plan = [  # most wanted first: the probe stops adding cases past its time budget
        # session 11: TILE2TRITON_STAGED_ATOMICS, next to the hand kernel with and without pipelining
        ("bwd", regression, "t2t default", lambda x, sz: t2t_case(*sz, x, DEFAULT)),
        ("bwd", regression, "t2t staged atomics off", lambda x, sz: t2t_case(*sz, x, UNSTAGED)),
        ("bwd", regression, "hand-T", lambda x, sz: hand_case(*sz, x, 1)),
        ("bwd", regression, "hand-T pipelined", lambda x, sz: hand_case(*sz, x, 1, stages=3)),
        ("bwd", regression, "t2t default 1 stage", lambda x, sz: t2t_case(*sz, x, DEFAULT, ONE_STAGE)),
        ("bwd", other, "t2t default", lambda x, sz: t2t_case(*sz, x, DEFAULT)),
        ("bwd", other, "t2t staged atomics off", lambda x, sz: t2t_case(*sz, x, UNSTAGED)),
        ("bwd", other, "hand-T", lambda x, sz: hand_case(*sz, x, 1)),
        ("bwd", other, "hand-T pipelined", lambda x, sz: hand_case(*sz, x, 1, stages=3)),
        ("bwd", other, "t2t default 1 stage", lambda x, sz: t2t_case(*sz, x, DEFAULT, ONE_STAGE)),
        # session 10's rows (its switches, now TRANSPOSED_DOTS and COLUMN_SPLIT, both on by default)
        ("fwd", fwd_size, "t2t column split", lambda x, sz: fwd_case(*sz, x, ON)),
        ("fwd", fwd_size, "t2t main", lambda x, sz: fwd_case(*sz, x, MAIN)),
        ("mha_bwd", mha, "t2t transposed", lambda x, sz: mha_case(*sz, ON)),
        ("mha_bwd", mha, "t2t main", lambda x, sz: mha_case(*sz, MAIN)),
        ("bwd", regression, "hand-split128", lambda x, sz: hand_case(*sz, x, 2, 128)),
    ]
    data = {}
    for case, size, name, fn in plan:
        label = ("S={} SKV={} k={}" if case != "mha_bwd" else "H={} N={} d={}").format(*size)
        if time.time() - t_start > 50:  # a case may take 30 s (main's bwd: four compiles to fit)
            print(f"{case:<8} {label:<22} {name:<22} skipped (time)", flush=True)
            continue
        try:
            if size not in data and case != "mha_bwd":
                data[size] = inputs(*size)
            ms, e, note = fn(data.get(size), size)
            print(f"{case:<8} {label:<22} {name:<22} {ms:8.4f} {e:12.2e}  {note}", flush=True)
        except Exception as exc:  # a variant Triton cannot build (shared memory): say so, go on
            print(f"{case:<8} {label:<22} {name:<22} failed: {type(exc).__name__}: {str(exc)[:120]}", flush=True)
    print(f"total {time.time() - t_start:.1f} s")


if __name__ == "__main__":
    main()
