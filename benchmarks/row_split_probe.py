"""Does an attention forward on a grid under one wave gain from query tiles of half the rows (twice the blocks)?

The suite's sink forward (``example_mha_sink_fwd_bhsd``: 1 x 32 heads x 256 tokens, head dim 128, 128 x 128 tiles,
256 threads) runs 64 blocks on a 132-SM card: half the SMs idle, each busy one doing a 128-row tile.  The question
for a rule that splits a block's independent rows over more blocks (a structural rewrite, taken by the grid's
waves): at 64-row tiles on 128 threads the grid doubles.  This times the example's ``flashattn`` at both tilings
over grids of 32-512 blocks, through tile2triton (``--impl tile2triton``, the launch its heuristic picks) or real
TileLang (``--impl tilelang``, run in its own process with TileLang's site first on PYTHONPATH), outputs checked
against ``ref_program``; ``triton.testing.do_bench`` medians (L2 flushed), microseconds.  On the GPU, from the root:

    PYTHONPATH=. python3 benchmarks/row_split_probe.py .tlx/examples --impl tile2triton --jobs 12
    PYTHONPATH=/tmp/tlsite:. python3 benchmarks/row_split_probe.py .tlx/examples --impl tilelang --jobs 12

Since passes/row_split.py (``TILE2TRITON_ROW_SPLIT``) the 128-row source is split by tile2triton itself on such grids:
``--rows 128`` with the switch on and off times the pass (session 55).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from prewarm import prewarm  # noqa: E402

TILINGS = ((128, 256), (64, 128))  # (block_M, threads); block_N 128, 2 stages as the suite's call


def shapes():
    """(batch, heads, seq, dim): causal (the example's mask), seq_q = seq_kv."""
    return [
        (1, 32, 256, 128),  # the suite's: 64 blocks at 128 rows
        (1, 16, 512, 128),
        (1, 8, 1024, 128),
        (2, 16, 256, 128),
        (1, 16, 256, 128),  # 32 blocks
        (1, 32, 256, 64),
        (1, 64, 512, 64),
        (1, 64, 256, 128),  # 128 blocks: about one wave
        (1, 32, 1024, 128),  # 256 blocks: two waves (control)
        (2, 32, 1024, 64),  # 512 blocks (control)
    ]


def build(impl: str, examples: str, shape, tiling):
    sys.path.insert(0, os.path.join(examples, "attention_sink"))
    if impl == "tile2triton":
        from tile2triton.cli import install_tilelang_alias

        install_tilelang_alias()
    import example_mha_sink_fwd_bhsd as ex

    b, h, n, d = shape
    rows, threads = tiling
    return ex, ex.flashattn(b, h, n, n, d, None, block_M=rows, block_N=128, num_stages=2, threads=threads)


def inputs(shape):
    import torch

    b, h, n, d = shape
    gen = torch.Generator(device="cpu").manual_seed(0)
    q, k, v = (torch.randn(b, h, n, d, generator=gen).to("cuda", torch.float16) for _ in range(3))
    return q, k, v, torch.randn(h, generator=gen).to("cuda", torch.float16)


def _warm(task):
    impl, examples, shape, tiling = task
    _, kernel = build(impl, examples, shape, tiling)
    kernel(*inputs(shape))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("examples")
    ap.add_argument("--impl", choices=("tile2triton", "tilelang"), default="tile2triton")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--rows", type=int, nargs="*", default=[m for m, _ in TILINGS], help="only these tilings' block_M")
    ns = ap.parse_args(argv)
    tilings = [t for t in TILINGS if t[0] in ns.rows]
    import torch
    import triton

    tasks = [(ns.impl, ns.examples, s, t) for s in shapes() for t in tilings]
    prewarm(tasks, _warm, ns.jobs)  # TileLang's kernel cache is on disk too: its compiles warm alike
    print(f"{ns.impl} on {torch.cuda.get_device_name()}, torch {torch.__version__}, Triton {triton.__version__}")
    print("| batch, heads, seq, dim | blocks at 128 rows | " + " | ".join(f"{m} rows, {t} thr (us)" for m, t in tilings)
          + " | launches |")  # fmt: skip
    print("|---|---|" + "---|" * len(tilings) + "---|")
    for shape in shapes():
        ins = inputs(shape)
        cells, launches = [], []
        for tiling in tilings:
            try:
                ex, kernel = build(ns.impl, ns.examples, shape, tiling)
                out = kernel(*ins)
                ref = ex.ref_program(*ins, sliding_window=None, dtype=torch.float16)
                err = float((out.float() - ref.float()).abs().max())
                us = triton.testing.do_bench(lambda: kernel(*ins), warmup=25, rep=200, return_mode="median") * 1e3
                cells.append(f"{us:.2f}" + ("" if err < 2e-2 else f" (err {err:.1e})"))
                choice = getattr(getattr(kernel, "kernel", kernel), "launch_choice", None)
                launches.append(choice.label() if choice else "-")
            except Exception as exc:  # noqa: BLE001 - a cell, not the end
                cells.append(f"{type(exc).__name__}: {str(exc)[:80]}")
                launches.append("-")
        b, h, n, d = shape
        print(f"| {b}, {h}, {n}, {d} | {b * h * (n // 128)} | " + " | ".join(cells) + f" | {', '.join(launches)} |",
              flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
