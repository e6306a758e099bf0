"""Does an attention backward on a grid under one wave gain from key tiles of half the rows (twice the blocks)?

The suite's ``example_gqa_bwd_tma_reduce_varlen`` (0.87x of TileLang, every run since session 16) times
``flashattn_bwd_split`` at 1 x 32 heads x 256 tokens, head dims 192 / 128, 128-row key tiles on 256 threads:
64 blocks on a 132-SM card, each holding dK and dV accumulators of 128 x 320 floats (offline, sm_90: 255
registers and 212 bytes spilled).  The forward's answer to such grids is passes/row_split.py (15-25% faster
at 32 and 64 blocks, session 55), which refuses a backward: ``dQ = dS^T K`` sums over the key rows.  That sum
only feeds an atomic add, so two blocks of half the rows, each adding its own part, give the same dQ; the
cost is twice the Q / dO loads and twice the dQ atomics.  This times the example's own source at both
tilings (block_M 128 on 256 threads, 64 on 128; block_N 32, 2 stages, as the suite's call) over grids of
32-512 blocks, through tile2triton (``--impl tile2triton``) or real TileLang (``--impl tilelang``, TileLang's
site first on PYTHONPATH); ``triton.testing.do_bench`` medians (L2 flushed), microseconds.  Each shape's
dQ / dK / dV at 64 rows are compared with those at 128 rows (``diff``: the largest |difference| over the
largest |value|).  The sequences' lengths are multiples of 128 and the longest comes first: the example's grid
covers the longest and stores dK / dV as whole tiles, so a shorter sequence's tiles past its end land on the
next sequence's first rows, a race in any tiling, unless they fall past the last token.  Since session 61 the pass
splits the 128-row source itself on grids under half a wave (``TILE2TRITON_ROW_SPLIT_BACKWARD``, on): through
tile2triton the probe turns that switch off unless it is set, so each tiling runs as written.  On the GPU, from the root:

    PYTHONPATH=. python3 benchmarks/bwd_row_split_probe.py .tlx/examples --impl tile2triton --jobs 12
    PYTHONPATH=/tmp/tlsite:. python3 benchmarks/bwd_row_split_probe.py .tlx/examples --impl tilelang --jobs 12
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from prewarm import prewarm  # noqa: E402

TILINGS = ((128, 256), (64, 128))  # (block_M, threads)
BLOCK_N = 32

# (lengths of the batch's sequences, heads, groups, dim_qk, dim_v, causal)
SHAPES = [
    ((256,), 32, 16, 192, 128, False),  # the suite's: 64 blocks at 128 rows
    ((256,), 16, 16, 192, 128, False),  # 32 blocks
    ((256,), 32, 8, 192, 128, False),  # 64 blocks, 4 key/value heads
    ((512,), 16, 16, 192, 128, False),  # 64 blocks, twice the loop
    ((256,), 32, 4, 128, 128, False),  # 64 blocks, head dim 128
    ((256, 128), 16, 16, 192, 128, False),  # varlen, 64 blocks (the shorter sequence's second tile empty)
    ((512,), 16, 16, 192, 128, True),  # causal, 64 blocks
    ((512,), 32, 16, 192, 128, False),  # 128 blocks: about one wave (control)
    ((1024,), 32, 16, 192, 128, False),  # 256 blocks (control)
    ((1024, 1024), 32, 16, 192, 128, False),  # 512 blocks (control)
]


def build(impl: str, examples: str, shape, tiling):
    sys.path.insert(0, os.path.join(examples, "flash_attention"))
    if impl == "tile2triton":
        from tile2triton.cli import install_tilelang_alias

        install_tilelang_alias()
    import example_gqa_bwd_tma_reduce_varlen as ex

    lengths, heads, groups, dqk, dv, causal = shape
    rows, threads = tiling
    total, longest = sum(lengths), max(lengths)
    return ex.flashattn_bwd_split(
        len(lengths), total, total, longest, heads, longest, dqk, dv, causal, block_M=rows, block_N=BLOCK_N,
        threads=threads, num_stages=2, groups=groups,
    )  # fmt: skip


def inputs(shape, device: str = "cuda"):
    """Q, K, V, dO, lse, Delta, cu_seqlens (q and k), and the outputs dQ, dK, dV (NaN-free zeros: dQ is added into)."""
    import torch

    lengths, heads, groups, dqk, dv, _ = shape
    total, longest, batch = sum(lengths), max(lengths), len(lengths)
    gen = torch.Generator(device="cpu").manual_seed(0)

    def rand(*size, scale=1.0):
        return (torch.randn(*size, generator=gen) * scale).to(device, torch.float16)

    q, do = rand(total, heads, dqk), rand(total, heads, dv)
    k, v = rand(total, heads // groups, dqk), rand(total, heads // groups, dv)
    lse = (torch.rand(batch, heads, longest, generator=gen) * 4).to(device)  # exp2(s - lse) stays finite
    delta = (torch.randn(batch, heads, longest, generator=gen) * 0.1).to(device)
    cu = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.int32, device=device)
    outs = (
        torch.zeros(total, heads, dqk, device=device),
        torch.zeros(groups, total, heads // groups, dqk, device=device, dtype=torch.float16),
        torch.zeros(groups, total, heads // groups, dv, device=device, dtype=torch.float16),
    )
    return (q, k, v, do, lse, delta, cu, cu), outs


def _warm(task):
    impl, examples, shape, tiling = task
    ins, outs = inputs(shape)
    build(impl, examples, shape, tiling)(*ins, *outs)


def _diff(a, b) -> float:
    return float((a.float() - b.float()).abs().max() / b.float().abs().max().clamp_min(1e-6))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("examples")
    ap.add_argument("--impl", choices=("tile2triton", "tilelang"), default="tile2triton")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--device", default="cuda", help="cpu: one small shape through the interpreter (a smoke test)")
    ns = ap.parse_args(argv)
    # the tilings as written (prewarm's workers inherit it)
    os.environ.setdefault("TILE2TRITON_ROW_SPLIT_BACKWARD", "0")
    import torch
    import triton

    shapes = SHAPES if ns.device == "cuda" else [((128, 64), 4, 2, 32, 16, True)]
    tilings = TILINGS if ns.device == "cuda" else ((64, 128), (32, 128))
    if ns.device == "cuda":
        prewarm([(ns.impl, ns.examples, s, t) for s in shapes for t in tilings], _warm, ns.jobs)
        print(f"{ns.impl} on {torch.cuda.get_device_name()}, torch {torch.__version__}, Triton {triton.__version__}")
    print("| lengths, heads, groups, dims, causal | blocks at 128 rows | "
          + " | ".join(f"{m} rows, {t} thr (us)" for m, t in tilings) + " | diff dQ / dK / dV |")  # fmt: skip
    print("|---|---|" + "---|" * len(tilings) + "---|")
    for shape in shapes:
        ins, _ = inputs(shape, ns.device)
        cells, results = [], []
        for tiling in tilings:
            try:
                kernel = build(ns.impl, ns.examples, shape, tiling)
                _, outs = inputs(shape, ns.device)
                kernel(*ins, *outs)
                results.append(outs)
                if ns.device == "cuda":
                    fresh = inputs(shape)[1]
                    us = triton.testing.do_bench(lambda: kernel(*ins, *fresh), warmup=25, rep=200, return_mode="median")
                    cells.append(f"{us * 1e3:.2f}")
                else:
                    cells.append("ran")
            except Exception as exc:  # noqa: BLE001 - a cell, not the end
                cells.append(f"{type(exc).__name__}: {str(exc)[:80]}")
        diff = "-"
        if len(results) == 2:
            diff = " / ".join(f"{_diff(a, b):.1e}" for a, b in zip(results[1], results[0]))
        lengths, heads, groups, dqk, dv, causal = shape
        blocks = heads * len(lengths) * -(-max(lengths) // 128)
        print(f"| {lengths}, {heads}, {groups}, {dqk}/{dv}, {causal} | {blocks} | " + " | ".join(cells) + f" | {diff} |",
              flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
