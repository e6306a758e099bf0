"""GPU probe (issue 23, session 20): hand variants of the block-view kernel tile2triton generates for
TileLang's ``sparse_mla_fwd_pipelined`` (examples/deepseek_v32), at the suite's shape (S=256,
SKV=512, H=64, DQK=576, DV=512, topk=256, every index valid).

The generated kernel (its ``get_kernel_source()`` for sm_90 before passes/row_once.py) loads each
iteration's 64-entry index list seven times and gathers the 576 columns of each KV row in three parts (256, 256,
64), each part masked by the row's validity; Triton's pipeliner issues the next iteration's gathers
after the dots.  Variants (the loop body is written here, not text-edited):

- ``gen``: as generated (seven index loads, three per gather part);
- ``dedupe``: one index load an iteration, reused by the score mask and the three gathers;
- ``ahead``: ``dedupe`` with the next iteration's index list read an iteration ahead (registers);
- ``regs``: ``dedupe`` with the next iteration's KV parts loaded into registers before this
  iteration's dots (software pipelining by hand, ``num_stages=1``);
- ``contig``: the KV rows of iteration ``it`` are rows ``it*64 ..`` (no gather: what a non-indexed
  load of the same bytes costs under Triton's pipeliner).

Each row: median microseconds (do_bench, L2 flushed), max abs difference from ``gen``'s output (0
expected except ``contig``), compile-time registers and spills.

Session 20, H200, Triton 3.6.0 (TileLang's own kernel: 31.6 us of kernel time in the suite):

    gen 2 stages 56.5 (3: 56.0) | dedupe 53.2 (3: 54.2) | ahead 52.1 (3: out of shared memory)
    regs 85.1 (190 spilled) | contig 48.0 | dedupe at 1 stage 65.4 (108 spilled)

``contig`` (no gather at all) is the floor of this block-view schedule: 1.5x TileLang's time.  The
rest is TileLang's warp-specialized schedule (a producer warpgroup gathering while two consumer
warpgroups compute), which ``tl`` cannot express.

Session 37 (offline: Triton 3.6's TTGIR for sm_90, no GPU) found one cause of that floor.  Triton's
AccelerateMatmul gives a dot whose result reaches another dot all the warps along M (``warpsPerTileV3``:
a "chained dot" takes ``[num_warps, 1]``); S has 64 rows, one warpgroup's worth, so at 8 warps S's layout
is ``warpsPerCTA [8, 1]`` and both warpgroups compute the whole ``Q K^T`` (O's dots are ``[4, 2]``, split
by columns).  That doubles the score gemm's tensor work (64 x 64 x 576 an iteration), which TileLang's
consumer 0 does once.  The chain runs through P and through the rescale (``acc_o * alpha`` is the next
dot's accumulator): separate accumulators for S's three parts, and P passed through global memory, both
compiled offline, kept ``[8, 1]``; 4 warps cannot hold the 64 x 512 fp32 output.  In ``tl`` no spelling
of this loop computes S once per block; a Gluon kernel (explicit layouts) can.

    PYTHONPATH=. python3 benchmarks/hand_variants/mla_pipe_variants.py
"""

import sys

import torch
import triton
from triton.testing import do_bench
from variant_tools import kernel_from_source

HEADER = """
import triton
import triton.language as tl

@triton.jit
def mla_fwd(Q, KV, Indices, q_start, Output, seq_len_kv, TOPK: tl.constexpr):
    s_i = tl.program_id(0)
    max_kv_i = tl.load(q_start) + s_i
    scale = 0.06011229333333333
    h = tl.arange(0, 64)
    c256 = tl.arange(0, 256)
    c64 = tl.arange(0, 64)
    rows = tl.arange(0, 64)
    q_row = Q + s_i * 36864 + h[:, None] * 576
    Q0 = tl.load(q_row + c256[None, :])
    Q1 = tl.load(q_row + 256 + c256[None, :])
    Q2 = tl.load(q_row + 512 + c64[None, :])
    sumexp = tl.zeros([64], tl.float32)
    m_i = tl.full([64], -1073741824, tl.float32)
    acc_o_l = tl.zeros([64, 256], tl.float32)
    acc_o_r = tl.zeros([64, 256], tl.float32)
    ibase = Indices + s_i * TOPK
"""

SOFTMAX = """
        m_i_prev = m_i
        m_i = tl.maximum(m_i, tl.max(acc_s, axis=1))
        alpha = tl.exp2((m_i_prev - m_i) * scale)
        acc_s = tl.exp2(acc_s * scale - m_i[:, None] * scale)
        sumexp = sumexp * alpha + tl.sum(acc_s, axis=1)
        acc_o_l = acc_o_l * alpha[:, None]
        P = acc_s.to(tl.bfloat16)
        acc_o_l = tl.dot(P, K0, acc_o_l)
        acc_o_r = acc_o_r * alpha[:, None]
        acc_o_r = tl.dot(P, K1, acc_o_r)
"""

TAIL = """
    o_row = Output + s_i * 32768 + h[:, None] * 512
    tl.store(o_row + c256[None, :], (acc_o_l / sumexp[:, None]).to(tl.bfloat16))
    tl.store(o_row + 256 + c256[None, :], (acc_o_r / sumexp[:, None]).to(tl.bfloat16))
"""

DOTS_S = """
        acc_s = tl.dot(Q0, tl.trans(K0), acc_s)
        acc_s = tl.dot(Q1, tl.trans(K1), acc_s)
        acc_s = tl.dot(Q2, tl.trans(K2), acc_s)
"""

GEN_BODY = (
    """
    for it in tl.range(0, TOPK // 64, num_stages=STAGES):
        ib = ibase + it * 64
        acc_s = tl.broadcast_to(tl.where(tl.load(ib + rows[None, :]) <= max_kv_i, 0, -float('inf')), (64, 64))
        keep0 = tl.load(ib + rows[:, None]) <= max_kv_i
        i0 = tl.load(ib + rows[:, None], mask=keep0, other=0)
        K0 = tl.load(KV + i0 * 576 + c256[None, :], mask=(i0 < seq_len_kv) & (i0 >= 0) & keep0, other=0)
        keep1 = tl.load(ib + rows[:, None]) <= max_kv_i
        i1 = tl.load(ib + rows[:, None], mask=keep1, other=0)
        K1 = tl.load(KV + i1 * 576 + 256 + c256[None, :], mask=(i1 < seq_len_kv) & (i1 >= 0) & keep1, other=0)
        keep2 = tl.load(ib + rows[:, None]) <= max_kv_i
        i2 = tl.load(ib + rows[:, None], mask=keep2, other=0)
        K2 = tl.load(KV + i2 * 576 + 512 + c64[None, :], mask=(i2 < seq_len_kv) & (i2 >= 0) & keep2, other=0)
"""
    + DOTS_S
    + SOFTMAX
)

GATHER = """
        keep = (idx <= max_kv_i) & (idx < seq_len_kv) & (idx >= 0)
        acc_s = tl.broadcast_to(tl.where(idx <= max_kv_i, 0, -float('inf'))[None, :], (64, 64))
        kv_row = KV + idx[:, None] * 576
        K0 = tl.load(kv_row + c256[None, :], mask=keep[:, None], other=0)
        K1 = tl.load(kv_row + 256 + c256[None, :], mask=keep[:, None], other=0)
        K2 = tl.load(kv_row + 512 + c64[None, :], mask=keep[:, None], other=0)
"""

DEDUPE_BODY = (
    """
    for it in tl.range(0, TOPK // 64, num_stages=STAGES):
        idx = tl.load(ibase + it * 64 + rows)
"""
    + GATHER
    + DOTS_S
    + SOFTMAX
)

AHEAD_BODY = (
    """
    idx_next = tl.load(ibase + rows)
    for it in tl.range(0, TOPK // 64, num_stages=STAGES):
        idx = idx_next
        idx_next = tl.load(ibase + tl.minimum(it + 1, TOPK // 64 - 1) * 64 + rows)
"""
    + GATHER
    + DOTS_S
    + SOFTMAX
)

CONTIG_BODY = (
    """
    for it in tl.range(0, TOPK // 64, num_stages=STAGES):
        idx = it * 64 + rows
"""
    + GATHER
    + DOTS_S
    + SOFTMAX
)

REGS_BODY = (
    """
    idx = tl.load(ibase + rows)
    keep = (idx <= max_kv_i) & (idx < seq_len_kv) & (idx >= 0)
    kv_row = KV + idx[:, None] * 576
    N0 = tl.load(kv_row + c256[None, :], mask=keep[:, None], other=0)
    N1 = tl.load(kv_row + 256 + c256[None, :], mask=keep[:, None], other=0)
    N2 = tl.load(kv_row + 512 + c64[None, :], mask=keep[:, None], other=0)
    for it in tl.range(0, TOPK // 64, num_stages=1):
        K0 = N0
        K1 = N1
        K2 = N2
        acc_s = tl.broadcast_to(tl.where(idx <= max_kv_i, 0, -float('inf'))[None, :], (64, 64))
        more = it + 1 < TOPK // 64
        idx = tl.load(ibase + (it + 1) * 64 + rows, mask=more, other=0)
        keep = (idx <= max_kv_i) & (idx < seq_len_kv) & (idx >= 0) & more
        kv_row = KV + idx[:, None] * 576
        N0 = tl.load(kv_row + c256[None, :], mask=keep[:, None], other=0)
        N1 = tl.load(kv_row + 256 + c256[None, :], mask=keep[:, None], other=0)
        N2 = tl.load(kv_row + 512 + c64[None, :], mask=keep[:, None], other=0)
"""
    + DOTS_S
    + SOFTMAX
)

BODIES = {"gen": GEN_BODY, "dedupe": DEDUPE_BODY, "ahead": AHEAD_BODY, "regs": REGS_BODY, "contig": CONTIG_BODY}


def build(name: str, stages: int):
    src = HEADER + BODIES[name].replace("STAGES", str(stages)) + TAIL
    return kernel_from_source(src, f"mla_pipe_{name}_{stages}", "mla_fwd")


def main() -> None:
    torch.manual_seed(0)
    S, SKV, H, topk, q_start = 256, 512, 64, 256, 1024
    q = (torch.randn(1, S, H, 576, device="cuda", dtype=torch.bfloat16) / 10).contiguous()
    kv = (torch.randn(1, SKV, 1, 576, device="cuda", dtype=torch.bfloat16) / 10).contiguous()
    idx = torch.stack([torch.randperm(SKV, device="cuda")[:topk] for _ in range(S)]).to(torch.int32)
    idx = idx.view(1, S, 1, topk).contiguous()
    qs = torch.tensor([q_start], dtype=torch.int32, device="cuda")
    print(f"triton {triton.__version__} {torch.cuda.get_device_name()}")
    print("| variant | stages | warps | us | max diff | regs | spills |")
    print("|---|---|---|---|---|---|---|")
    ref = None
    only = sys.argv[1:] or None
    runs = [
        ("gen", 2, 8), ("gen", 3, 8), ("dedupe", 2, 8), ("dedupe", 3, 8), ("ahead", 2, 8), ("ahead", 3, 8),
        ("regs", 1, 8), ("contig", 2, 8), ("contig", 3, 8), ("dedupe", 1, 8),
    ]  # fmt: skip
    for name, stages, warps in runs:
        if only and name not in only:
            continue
        out = torch.full((1, S, H, 512), float("nan"), device="cuda", dtype=torch.bfloat16)
        try:
            fn = build(name, stages)
            compiled = fn[(S,)](q, kv, idx, qs, out, SKV, topk, num_warps=warps)
            torch.cuda.synchronize()
            us = do_bench(lambda: fn[(S,)](q, kv, idx, qs, out, SKV, topk, num_warps=warps), rep=200) * 1000
        except Exception as exc:  # a variant Triton rejects: say so, go on
            print(f"| {name} | {stages} | {warps} | failed: {type(exc).__name__}: {str(exc)[:120]} | | | |")
            continue
        if ref is None:
            ref = out.float()
        diff = (out.float() - ref).abs().max().item()
        print(f"| {name} | {stages} | {warps} | {us:.1f} | {diff:.3g} | {compiled.n_regs} | {compiled.n_spills} |")


if __name__ == "__main__":
    main()
