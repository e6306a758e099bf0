"""Probe for TileLang's ``sparse_mla_fwd_pipelined`` (issue 23): the hand warp-specialized kernel
(tests/ws_mla_kernels.py, written after the example's structure) through tile2triton's lowerings,
against a hand-written block-view Triton kernel of the same computation.

    PYTHONPATH=. python3 benchmarks/mlapipe_probe.py

Rows per shape (S queries, SKV keys, H heads, topk keys a query, q_start; one H200, Triton 3.6):
- ``default``: the lowering as it is by default (producer copies as a per-thread lane space);
- ``THREAD_COPY_TILES=1``: the producer's copy nests as block copies (passes/thread_copies.py),
  the KV ring in global scratch;
- ``FORWARD_SHARED=1``: the ring forwarded into the consumers (passes/forward_shared.py): masked
  gathers feed the dots, pipelined by Triton, the producer's warps gone;
- ``hand bv``: block view by hand (Q from global, split halves, flat loop, 2 stages, 8 warps);
- ``... static``: the kernel with static shapes (as TileLang's MLA decode WS example: Q's copies
  become TMA loads on Hopper).
Each row: median microseconds (do_bench warmup 25, rep 200), max abs error against a float32
torch reference, the launch's warps, and the first call's seconds (compile included).  The last
shape has a q_start that leaves some of each query's keys past the causal limit (skipped rows).
"""

import os
import sys
import time
from pathlib import Path
from unittest import mock

import torch

if not torch.cuda.is_available() and not os.environ.get("MLAPIPE_OFFLINE"):  # CPU: Triton's interpreter, a smoke run
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.testing import do_bench  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from ws_mla_kernels import sparse_mla_ws  # noqa: E402

import tile2triton  # noqa: E402

DQK, DV, DT = 576, 512, 64


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


SM_SCALE = DQK**-0.5
SCALE = SM_SCALE * 1.44269504


def make_inputs(S, SKV, H, topk, start, dev):
    torch.manual_seed(0)
    q = (torch.randn(1, S, H, DQK, dtype=torch.bfloat16, device=dev) / 10).clamp_(-10, 10)
    kv = (torch.randn(1, SKV, 1, DQK, dtype=torch.bfloat16, device=dev) / 10).clamp_(-10, 10)
    idx = torch.empty((1, S, 1, topk), dtype=torch.int32)
    for t in range(S):  # as the example's run_regression_perf: distinct keys below min(t + start, SKV)
        n = min(max(1, t + start), SKV)
        perm = torch.randperm(max(n, topk))[:topk] % SKV  # short rows repeat keys: some past the limit
        perm[0] = 0  # one valid key a query
        idx[0, t, 0] = perm.to(torch.int32)
    return q, kv, idx.to(dev), torch.tensor([start], dtype=torch.int32, device=dev)


def reference(q, kv, idx, start):
    """float32 sparse MLA forward: query t attends to its topk keys with index <= start + t."""
    S, SKV = q.shape[1], kv.shape[1]
    qf, kf = q[0].float(), kv[0, :, 0].float()
    ids = idx[0, :, 0].long()
    valid = ids <= (start + torch.arange(S, device=q.device))[:, None]
    k = kf[ids.clamp(max=SKV - 1)]  # [S, topk, 576]
    s = torch.einsum("shd,std->sht", qf, k) * SM_SCALE
    s = s.masked_fill(~valid[:, None, :], float("-inf"))
    return torch.einsum("sht,std->shd", s.softmax(-1), k[..., :DV])


STATIC = " static"  # a row name ending so: the kernel with static shapes (Q's copies through TMA)

SWITCHES = {
    "default": {"TILE2TRITON_THREAD_COPY_TILES": "0", "TILE2TRITON_FORWARD_SHARED": "0"},
    "THREAD_COPY_TILES=1": {"TILE2TRITON_THREAD_COPY_TILES": "1", "TILE2TRITON_FORWARD_SHARED": "0"},
    "FORWARD_SHARED=1": {"TILE2TRITON_THREAD_COPY_TILES": "0", "TILE2TRITON_FORWARD_SHARED": "1"},
}


def t2t_row(name, H, topk, args, out):
    """The kernel compiled and first run under the switch's settings (lowerings are cached per
    settings), then timed under them."""
    static = name.endswith(STATIC)
    env = SWITCHES[name.removesuffix(STATIC)]
    q = args[0]
    shape = (q.shape[0], q.shape[1], args[1].shape[1]) if static else None
    with mock.patch.dict(os.environ, env):
        kernel = tile2triton.compile(sparse_mla_ws(H, DV, DT, topk, SM_SCALE, shape=shape))
        kernel(*args, out)
        warps = kernel.num_warps

        def fn():
            kernel(*args, out)

        return fn, f"w{warps}", env


def bv_row(H, topk, args, out):
    q, kv, idx, start_t = args
    S, SKV = q.shape[1], kv.shape[1]
    scratch = torch.empty(1, dtype=torch.bfloat16, device=q.device)
    bi = 64

    def fn():
        bv_kernel[(S, 1)](
            q, kv, idx, start_t, out, scratch, S, SKV, SCALE, 0,
            H=H, BI=bi, NI=topk // bi, TOPK=topk, Q_MODE=0, SPLIT=1, NEST=0, STAGES=2, KV2=0,
            CPU=q.device.type == "cpu", num_warps=8,
        )  # fmt: skip

    fn()
    return fn, "w8", {}


def main() -> None:
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    quick = dev == "cpu"  # the interpreter: a smoke run of one small shape, no timing
    if quick:
        shapes = [(3, 80, 16, 128, 40, ("FORWARD_SHARED=1", "hand bv", "FORWARD_SHARED=1 static"))]
    else:
        every = (
            "default",
            "THREAD_COPY_TILES=1",
            "FORWARD_SHARED=1",
            "hand bv",
            "default static",
            "FORWARD_SHARED=1 static",
        )
        shapes = [
            (256, 512, 64, 256, 1024, every),  # the regression case
            (512, 2048, 64, 512, 1024, ("FORWARD_SHARED=1", "hand bv")),
            (256, 2048, 32, 512, 128, ("FORWARD_SHARED=1", "hand bv")),  # rows past the causal limit
        ]
    print(
        f"{'case':22} {'S':>4} {'SKV':>5} {'H':>3} {'topk':>5} {'start':>5} {'us':>9} {'max err':>9}  launch",
        flush=True,
    )
    for S, SKV, H, topk, start, rows in shapes:
        q, kv, idx, start_t = make_inputs(S, SKV, H, topk, start, dev)
        ref = reference(q, kv, idx, start)
        for name in rows:
            out = torch.full((1, S, H, DV), float("nan"), dtype=torch.bfloat16, device=dev)
            t0 = time.time()
            try:
                if name == "hand bv":
                    fn, launch, env = bv_row(H, topk, (q, kv, idx, start_t), out)
                else:
                    fn, launch, env = t2t_row(name, H, topk, (q, kv, idx, start_t), out)
                first = time.time() - t0
                err = (out[0].float() - ref).abs().max().item()
                with mock.patch.dict(os.environ, env):
                    us = float("nan") if quick else do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e3
                line = f"{us:9.2f} {err:9.2e}  {launch} first={first:.1f}s"
            except Exception as exc:  # one row failing does not hide the others
                msg = str(exc).splitlines()[0][:110] if str(exc) else ""
                line = f"FAILED {type(exc).__name__}: {msg}"
            print(f"{name:24} {S:4} {SKV:5} {H:3} {topk:5} {start:5} {line}", flush=True)


if __name__ == "__main__":
    main()
