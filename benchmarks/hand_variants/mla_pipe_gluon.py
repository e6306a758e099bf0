"""GPU probe (issue 23, session 20): TileLang's ``sparse_mla_fwd_pipelined`` schedule written by hand in
Gluon, to learn whether Triton (3.6, Hopper) reaches TileLang's time with it (31.6 us of kernel time in
the suite; the best block-view ``tl`` variant of mla_pipe_variants.py: 48.0 us without any gather).

The schedule is the example's own: a producer of four warps gathers each 64-row block of KV rows by
index into a two-slot shared ring (``cp.async``, an mbarrier per slot that completes when the copies
land); consumer 0 (the default partition) computes ``S = Q K^T`` over the three column parts,
the online softmax, hands P and the rescale to consumer 1 through shared memory and accumulates the
left half of O; consumer 1 accumulates the right half.  The suite's shape: S=256 queries, SKV=512,
H=64 heads, D=512 + 64, topk=256 (every index valid), bf16.

    PYTHONPATH=. python3 benchmarks/hand_variants/mla_pipe_gluon.py [--tilelang]

``ONLY=v2`` (or ``ONLY=tilelang``) runs that kernel alone, for Nsight Compute.  ``--tilelang`` also times TileLang's own kernel of the example on the same inputs (real TileLang on
PYTHONPATH, the examples in .tlx: ``source .tl/setup.sh``, then PYTHONPATH=/tmp/tlsite).

Prints the max abs error against a float32 torch reference and the median microseconds (do_bench, L2
flushed); ``--check`` compiles for sm_90 offline only (no GPU).  Variants (``V2``): 0, Q loaded through
registers before the fork and the producer's indices loaded 16 rows at a time (8 loads a stage); 1, Q
and KV by the producer's cp.async, one index load a stage, the next stage's read ahead, copies in
64-column chunks; 2, as 1 with consumer 0's mask indices read an iteration ahead.

Session 20, H200, Triton 3.6.0 (gpu_logs/2026-12-03_s20_row_once.log), two runs: v1 47.1-48.0 us, v2
43.9-44.8, v3 44.3-44.5; TileLang's own kernel of the example on the same inputs 33.4-34.0 us; the
block-view kernel tile2triton generates ~53 (mla_pipe_variants.py).  Gluon with TileLang's schedule
reaches 0.77x of TileLang here, tl 0.63x: the schedule is most of the gap, not all of it.  TileLang's
source (gpu_logs/2026-12-03_s20_tilelang_sparse_mla_fwd_pipelined.cu.txt) differs in: KV kept as nine
64-column tiles a stage (one wgmma descriptor walks them), the consumers' mask from a shared byte array
the producer writes, P handed over only after consumer 0's own P V, the output by TMA store.
"""

import os
import sys

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    warpgroup_mma,
    warpgroup_mma_wait,
)

# Triton 3.6 names the cp.async copy async_copy_global_to_shared; 3.9 async_load (the old name raises)
gather = async_copy.async_load if hasattr(async_copy, "async_load") else async_copy.async_copy_global_to_shared

S, SKV, H, D, DT, TOPK, BI = 256, 512, 64, 512, 64, 256, 64
NI = TOPK // BI
SCALE = (1.0 / (D + DT)) ** 0.5 * 1.44269504


@gluon.jit
def producer(KV, Indices, s_i, kvl, kvr, kvt, kv_ready, kv_free):
    wide: gl.constexpr = gl.BlockedLayout([1, 8], [1, 32], [4, 1], [1, 0])  # a 512-byte row a warp
    tail: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    for it in range(4):
        stage = it % 2
        mbarrier.wait(kv_free.index(stage), ((it // 2) & 1) ^ 1)  # both consumers done with the slot
        for r in gl.static_range(4):  # 16 rows at a time: 32 addresses a thread
            rows = gl.arange(0, 16, layout=gl.SliceLayout(1, wide))
            idx = gl.load(Indices + s_i * 256 + it * 64 + r * 16 + rows)
            base = KV + idx.to(gl.int64)[:, None] * 576
            cols = gl.arange(0, 256, layout=gl.SliceLayout(0, wide))[None, :]
            gather(kvl.index(stage).slice(r * 16, 16, dim=0), base + cols)
            gather(kvr.index(stage).slice(r * 16, 16, dim=0), base + 256 + cols)
            rows_t = gl.arange(0, 16, layout=gl.SliceLayout(1, tail))
            idx_t = gl.load(Indices + s_i * 256 + it * 64 + r * 16 + rows_t)
            cols_t = gl.arange(0, 64, layout=gl.SliceLayout(0, tail))[None, :]
            gather(kvt.index(stage).slice(r * 16, 16, dim=0), KV + idx_t.to(gl.int64)[:, None] * 576 + 512 + cols_t)
        async_copy.mbarrier_arrive(kv_ready.index(stage), increment_count=False)  # each thread, its copies


@gluon.jit
def producer_v2(Q, KV, Indices, s_i, ql, qr, qt, q_ready, kvl, kvr, kvt, kv_ready, kv_free):
    chunk: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])  # 64 x 64: 32 addresses a thread
    rows = gl.arange(0, 64, layout=gl.SliceLayout(1, chunk))
    cols = gl.arange(0, 64, layout=gl.SliceLayout(0, chunk))[None, :]
    q_row = Q + s_i * 36864 + rows[:, None] * 576
    for c in gl.static_range(4):
        gather(ql.slice(c * 64, 64, dim=1), q_row + c * 64 + cols)
        gather(qr.slice(c * 64, 64, dim=1), q_row + 256 + c * 64 + cols)
    gather(qt, q_row + 512 + cols)
    async_copy.mbarrier_arrive(q_ready, increment_count=False)
    idx = gl.load(Indices + s_i * 256 + rows)
    for it in range(4):
        stage = it % 2
        base = KV + idx.to(gl.int64)[:, None] * 576
        if it < 3:
            idx = gl.load(Indices + s_i * 256 + (it + 1) * 64 + rows)  # the next block's, ahead
        mbarrier.wait(kv_free.index(stage), ((it // 2) & 1) ^ 1)
        for c in gl.static_range(4):
            gather(kvl.index(stage).slice(c * 64, 64, dim=1), base + c * 64 + cols)
            gather(kvr.index(stage).slice(c * 64, 64, dim=1), base + 256 + c * 64 + cols)
        gather(kvt.index(stage), base + 512 + cols)
        async_copy.mbarrier_arrive(kv_ready.index(stage), increment_count=False)


@gluon.jit
def consumer_left(
    Indices, Output, Lse, s_i, limit, ql, qr, qt, kvl, kvr, kvt, kv_ready, kv_free, p_smem, alpha_smem, sum_smem,
    p_ready, p_free, done, q_ready, AHEAD: gl.constexpr,
):  # fmt: skip
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 64, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 256, 16])
    s_rows: gl.constexpr = gl.SliceLayout(1, s_layout)
    o_rows: gl.constexpr = gl.SliceLayout(1, o_layout)
    scale: gl.constexpr = 0.06011229333333333
    m_i = gl.full([64], -1073741824.0, gl.float32, s_rows)
    sumexp = gl.full([64], 0.0, gl.float32, s_rows)
    acc_o = gl.full([64, 256], 0.0, gl.float32, o_layout)
    mbarrier.wait(q_ready, 0)
    mask_cols = gl.arange(0, 64, layout=gl.SliceLayout(0, s_layout))
    next_idx = gl.load(Indices + s_i * 256 + mask_cols)
    for it in range(4):
        stage = it % 2
        idx = next_idx
        if AHEAD:
            next_idx = gl.load(Indices + s_i * 256 + gl.minimum(it + 1, 3) * 64 + mask_cols)
        else:
            idx = gl.load(Indices + s_i * 256 + it * 64 + mask_cols)
        acc_s = gl.full([64, 64], 0.0, gl.float32, s_layout) + gl.where(idx <= limit, 0.0, -float("inf"))[None, :]
        mbarrier.wait(kv_ready.index(stage), (it // 2) & 1)
        acc_s = warpgroup_mma(ql, kvl.index(stage).permute((1, 0)), acc_s, is_async=True)
        acc_s = warpgroup_mma(qr, kvr.index(stage).permute((1, 0)), acc_s, is_async=True)
        acc_s = warpgroup_mma(qt, kvt.index(stage).permute((1, 0)), acc_s, is_async=True)
        acc_s = warpgroup_mma_wait(0, deps=(acc_s,))
        m_prev = m_i
        m_i = gl.maximum(m_i, gl.max(acc_s, axis=1))
        alpha = gl.exp2((m_prev - m_i) * scale)
        acc_s = gl.exp2(acc_s * scale - (m_i * scale)[:, None])
        sumexp = sumexp * alpha + gl.sum(acc_s, axis=1)
        mbarrier.wait(p_free, (it & 1) ^ 1)  # consumer 1 has read the previous P and rescale
        p_smem.store(acc_s.to(gl.bfloat16))
        alpha_smem.store(alpha)
        fence_async_shared()
        mbarrier.arrive(p_ready, count=1)
        acc_o = acc_o * gl.convert_layout(alpha, o_rows)[:, None]
        acc_o = warpgroup_mma(p_smem, kvl.index(stage), acc_o, is_async=True)
        acc_o = warpgroup_mma_wait(0, deps=(acc_o,))
        mbarrier.arrive(kv_free.index(stage), count=1)
    sum_smem.store(sumexp)
    mbarrier.arrive(done, count=1)
    out = acc_o / gl.convert_layout(sumexp, o_rows)[:, None]
    rows = gl.arange(0, 64, layout=o_rows)[:, None]
    cols = gl.arange(0, 256, layout=gl.SliceLayout(0, o_layout))[None, :]
    gl.store(Output + s_i * 32768 + rows * 512 + cols, out.to(gl.bfloat16))
    gl.store(Lse + s_i * 64 + gl.arange(0, 64, layout=s_rows), gl.log2(sumexp) + m_i * scale)


@gluon.jit
def consumer_right(Output, s_i, kvr, kv_ready, kv_free, p_smem, alpha_smem, sum_smem, p_ready, p_free, done):
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 256, 16])
    o_rows: gl.constexpr = gl.SliceLayout(1, o_layout)
    acc_o = gl.full([64, 256], 0.0, gl.float32, o_layout)
    for it in range(4):
        stage = it % 2
        mbarrier.wait(p_ready, it & 1)
        acc_o = acc_o * alpha_smem.load(o_rows)[:, None]
        mbarrier.wait(kv_ready.index(stage), (it // 2) & 1)
        acc_o = warpgroup_mma(p_smem, kvr.index(stage), acc_o, is_async=True)
        acc_o = warpgroup_mma_wait(0, deps=(acc_o,))
        mbarrier.arrive(p_free, count=1)
        mbarrier.arrive(kv_free.index(stage), count=1)
    mbarrier.wait(done, 0)
    out = acc_o / sum_smem.load(o_rows)[:, None]
    rows = gl.arange(0, 64, layout=o_rows)[:, None]
    cols = gl.arange(0, 256, layout=gl.SliceLayout(0, o_layout))[None, :]
    gl.store(Output + s_i * 32768 + rows * 512 + 256 + cols, out.to(gl.bfloat16))


@gluon.jit
def mla_fwd_ws(Q, KV, Indices, q_start, Output, Lse, V2: gl.constexpr):
    s_i = gl.program_id(0)
    limit = gl.load(q_start) + s_i
    wide: gl.constexpr = gl.NVMMASharedLayout.get_default_for([64, 256], gl.bfloat16)
    narrow: gl.constexpr = gl.NVMMASharedLayout.get_default_for([64, 64], gl.bfloat16)
    flat: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, order=[0])
    ql = gl.allocate_shared_memory(gl.bfloat16, [64, 256], wide)
    qr = gl.allocate_shared_memory(gl.bfloat16, [64, 256], wide)
    qt = gl.allocate_shared_memory(gl.bfloat16, [64, 64], narrow)
    kvl = gl.allocate_shared_memory(gl.bfloat16, [2, 64, 256], wide)
    kvr = gl.allocate_shared_memory(gl.bfloat16, [2, 64, 256], wide)
    kvt = gl.allocate_shared_memory(gl.bfloat16, [2, 64, 64], narrow)
    p_smem = gl.allocate_shared_memory(gl.bfloat16, [64, 64], narrow)
    alpha_smem = gl.allocate_shared_memory(gl.float32, [64], flat)
    sum_smem = gl.allocate_shared_memory(gl.float32, [64], flat)
    kv_ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    kv_free = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    p_ready = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    p_free = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    done = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    q_ready = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    for stage in gl.static_range(2):
        mbarrier.init(kv_ready.index(stage), count=128)  # the producer's threads, each on its own copies
        mbarrier.init(kv_free.index(stage), count=2)
    mbarrier.init(p_ready, count=1)
    mbarrier.init(p_free, count=1)
    mbarrier.init(done, count=1)
    mbarrier.init(q_ready, count=128 if V2 > 0 else 1)
    if V2 > 0:
        gl.warp_specialize(
            [
                (consumer_left, (Indices, Output, Lse, s_i, limit, ql, qr, qt, kvl, kvr, kvt, kv_ready, kv_free, p_smem,
                                 alpha_smem, sum_smem, p_ready, p_free, done, q_ready, V2 > 1)),
                (consumer_right, (Output, s_i, kvr, kv_ready, kv_free, p_smem, alpha_smem, sum_smem, p_ready, p_free,
                                  done)),
                (producer_v2, (Q, KV, Indices, s_i, ql, qr, qt, q_ready, kvl, kvr, kvt, kv_ready, kv_free)),
            ],
            [4, 4],
            [168, 80],
        )  # fmt: skip
        return
    # v1: Q's 64 x 576 block, through registers a part at a time
    q_layout: gl.constexpr = gl.BlockedLayout([1, 8], [1, 32], [4, 1], [1, 0])
    q_rows = gl.arange(0, 64, layout=gl.SliceLayout(1, q_layout))[:, None]
    q_row = Q + s_i * 36864 + q_rows * 576
    q_cols = gl.arange(0, 256, layout=gl.SliceLayout(0, q_layout))[None, :]
    ql.store(gl.load(q_row + q_cols))
    qr.store(gl.load(q_row + 256 + q_cols))
    t_layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    t_rows = gl.arange(0, 64, layout=gl.SliceLayout(1, t_layout))[:, None]
    qt.store(
        gl.load(Q + s_i * 36864 + t_rows * 576 + 512 + gl.arange(0, 64, layout=gl.SliceLayout(0, t_layout))[None, :])
    )
    fence_async_shared()
    mbarrier.arrive(q_ready, count=1)
    gl.warp_specialize(
        [
            (consumer_left, (Indices, Output, Lse, s_i, limit, ql, qr, qt, kvl, kvr, kvt, kv_ready, kv_free, p_smem,
                             alpha_smem, sum_smem, p_ready, p_free, done, q_ready, False)),
            (consumer_right, (Output, s_i, kvr, kv_ready, kv_free, p_smem, alpha_smem, sum_smem, p_ready, p_free, done)),
            (producer, (KV, Indices, s_i, kvl, kvr, kvt, kv_ready, kv_free)),
        ],
        [4, 4],
        [168, 80],
    )  # fmt: skip


def reference(q, kv, idx):
    qf, kvf = q.float()[0], kv.float()[0, :, 0]  # [S, H, 576], [SKV, 576]
    k = kvf[idx[0, :, 0].long()]  # [S, topk, 576]
    scores = torch.einsum("shd,std->sht", qf, k) * (1.0 / (D + DT)) ** 0.5
    p = torch.softmax(scores, dim=-1)
    return torch.einsum("sht,std->shd", p, k[..., :D])


def check_offline() -> None:
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    sig = {"Q": "*bf16", "KV": "*bf16", "Indices": "*i32", "q_start": "*i32", "Output": "*bf16", "Lse": "*fp32",
           "V2": "constexpr"}  # fmt: skip
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(6)}
    for v2 in (0, 1, 2):
        source = GluonASTSource(mla_fwd_ws, sig, {(6,): v2}, attrs)
        compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
        print("compiled: v2", v2, "shared", compiled.metadata.shared)


def main() -> None:
    if "--check" in sys.argv:
        check_offline()
        return
    torch.manual_seed(0)
    q = (torch.randn(1, S, H, D + DT, device="cuda", dtype=torch.bfloat16) / 10).contiguous()
    kv = (torch.randn(1, SKV, 1, D + DT, device="cuda", dtype=torch.bfloat16) / 10).contiguous()
    idx = torch.stack([torch.randperm(SKV, device="cuda")[:TOPK] for _ in range(S)]).to(torch.int32)
    idx = idx.view(1, S, 1, TOPK).contiguous()
    qs = torch.tensor([1024], dtype=torch.int32, device="cuda")
    out = torch.full((1, S, H, D), float("nan"), device="cuda", dtype=torch.bfloat16)
    lse = torch.full((1, S, H), float("nan"), device="cuda")
    print(f"triton {triton.__version__} {torch.cuda.get_device_name()}")

    ref = reference(q, kv, idx)
    only = os.environ.get("ONLY")  # "v2" or "tilelang": that kernel alone (for Nsight Compute)
    for v2 in (0, 1, 2):
        if only and only != f"v{v2 + 1}":
            continue
        out.fill_(float("nan"))

        def run():
            mla_fwd_ws[(S,)](q, kv, idx, qs, out, lse, v2, num_warps=4)

        run()
        torch.cuda.synchronize()
        err = (out.float()[0] - ref).abs().max().item()
        us = triton.testing.do_bench(run, rep=200) * 1000
        print(f"| gluon ws v{v2 + 1} | max abs err {err:.3g} | {us:.1f} us |")
    if "--tilelang" in sys.argv and only in (
        None,
        "tilelang",
    ):  # TileLang's own kernel of the example, the same inputs (real TileLang on the path)
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../.tlx/examples/deepseek_v32"))
        import sparse_mla_fwd_pipelined as example

        kernel = example.sparse_mla_fwd_interface(q, kv, idx, 1024, 1, return_kernel=True)
        got = kernel(q, kv, idx, qs)[0]
        err = (got.float()[0] - ref).abs().max().item()
        us = triton.testing.do_bench(lambda: kernel(q, kv, idx, qs), rep=200) * 1000
        print(f"| TileLang {example.tilelang.__version__} | max abs err {err:.3g} | {us:.1f} us |")
        if os.environ.get("OUT"):  # TileLang's CUDA source of the kernel, for comparing schedules
            with open(os.path.join(os.environ["OUT"], "tilelang_sparse_mla_fwd_pipelined.cu.txt"), "w") as f:
                f.write(kernel.get_kernel_source())


if __name__ == "__main__":
    main()
