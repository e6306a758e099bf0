"""MLA decode written by hand in idiomatic Triton (vs_tilelang.py's MLA decode row: 128 x 128 heads x 8192,
latent 512 + rope 64), with a few variants: what Triton itself reaches on this shape, on the GPU.

    PYTHONPATH=. python benchmarks/mla_decode_hand.py

Log of the 2026-12-01 H200 run: gpu_logs/2026-12-01_s5_mla_hand.log."""

import os
import sys

import torch
import triton
import triton.language as tl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


@triton.jit
def mla(
    Q,
    QPE,
    KV,
    KPE,
    Out,
    scale,
    S: tl.constexpr,
    H: tl.constexpr,
    D: tl.constexpr,
    PE: tl.constexpr,
    BH: tl.constexpr,
    BN: tl.constexpr,
    SPLIT_PV: tl.constexpr,
    STAGES: tl.constexpr,
):
    hid = tl.program_id(0)
    bid = tl.program_id(1)
    kv_desc = tl.make_tensor_descriptor(KV, shape=[S * tl.num_programs(1), D], strides=[D, 1], block_shape=[BN, D])
    kpe_desc = tl.make_tensor_descriptor(KPE, shape=[S * tl.num_programs(1), PE], strides=[PE, 1], block_shape=[BN, PE])
    rh = hid * BH + tl.arange(0, BH)[:, None]
    q = tl.load(Q + bid * H * D + rh * D + tl.arange(0, D)[None, :])
    qpe = tl.load(QPE + bid * H * PE + rh * PE + tl.arange(0, PE)[None, :])
    m = tl.full([BH], -float("inf"), tl.float32)
    row_sum = tl.zeros([BH], tl.float32)
    if SPLIT_PV:
        acc0 = tl.zeros([BH, D // 2], tl.float32)
        acc1 = tl.zeros([BH, D // 2], tl.float32)
    else:
        acc = tl.zeros([BH, D], tl.float32)
    for k in tl.range(0, S // BN, num_stages=STAGES):
        kv = kv_desc.load([bid * S + k * BN, 0])
        kpe = kpe_desc.load([bid * S + k * BN, 0])
        s = tl.dot(q, tl.trans(kv))
        s = tl.dot(qpe, tl.trans(kpe), s)
        m_new = tl.maximum(m, tl.max(s, 1))
        alpha = tl.exp2((m - m_new) * scale)
        p = tl.exp2(s * scale - m_new[:, None] * scale)
        row_sum = row_sum * alpha + tl.sum(p, 1)
        pf = p.to(tl.float16)
        if SPLIT_PV:
            kv0, kv1 = tl.split(tl.permute(tl.reshape(kv, [BN, 2, D // 2]), [0, 2, 1]))
            acc0 = tl.dot(pf, kv0, acc0 * alpha[:, None])
            acc1 = tl.dot(pf, kv1, acc1 * alpha[:, None])
        else:
            acc = acc * alpha[:, None]
            acc = tl.dot(pf, kv, acc)
        m = m_new
    if SPLIT_PV:
        o = tl.join(acc0 / row_sum[:, None], acc1 / row_sum[:, None])
        o = tl.reshape(tl.permute(o, [0, 2, 1]), [BH, D])
    else:
        o = acc / row_sum[:, None]
    tl.store(Out + bid * H * D + rh * D + tl.arange(0, D)[None, :], o.to(tl.float16))


def main():
    import vs_tilelang as V

    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    b, h, s, d, pe = 128, 128, 8192, 512, 64
    sm = 1 / (576**0.5)
    scale = sm * 1.44269504
    torch.manual_seed(0)
    q = torch.randn(b, h, d, device="cuda", dtype=torch.float16)
    qpe = torch.randn(b, h, pe, device="cuda", dtype=torch.float16)
    kv = torch.randn(b, s, 1, d, device="cuda", dtype=torch.float16)
    kpe = torch.randn(b, s, 1, pe, device="cuda", dtype=torch.float16)
    ref = V.mla_decode_ref(q, qpe, kv, kpe, sm)
    for bh, bn, split, stages, warps in [
        (64, 64, False, 2, 8),
        (64, 64, True, 2, 8),
        (64, 32, False, 3, 8),
        (64, 32, True, 3, 8),
        (64, 64, True, 2, 4),
        (64, 32, False, 4, 8),
    ]:
        out = torch.empty(b, h, d, device="cuda", dtype=torch.float16)
        fn = lambda: mla[(h // bh, b)](q, qpe, kv, kpe, out, scale, s, h, d, pe, bh, bn, split, stages, num_warps=warps)
        try:
            fn()
            torch.cuda.synchronize()
            runs = sorted(triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="all"))
            print(
                f"hand MLA BH{bh} BN{bn} split_pv={split} s{stages} w{warps}: {runs[len(runs) // 2]:.4f} ms err {V.rel_err(out, ref):.1e}",
                flush=True,
            )
        except Exception as e:
            print(
                f"hand MLA BH{bh} BN{bn} split_pv={split} s{stages} w{warps}: failed {type(e).__name__}: {str(e)[:200]}",
                flush=True,
            )


if __name__ == "__main__":
    main()
