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
``--rows 128`` with the switch on and off times the pass (session 55).  ``--sweep grids`` times head dims 64 and 128
over grids of 32-1024 blocks (with ``TILE2TRITON_ROW_SPLIT=always`` and ``=off``: where the split pays past half a
wave), ``--sweep waves`` over 160-768 blocks (the wave rule, TILE2TRITON_ROW_SPLIT_WAVES, on and off);
``--source mha`` the flash_attention folder's ``example_mha_fwd_bhsd`` (not causal) instead of the sink forward;
``--threads N`` the 128-row tiles on N threads (128: a source whose split keeps its threads).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from prewarm import prewarm  # noqa: E402

TILINGS = ((128, 256), (64, 128))  # (block_M, threads); block_N 128, 2 stages as the suite's call


def shapes(sweep: str | None = None):
    """(batch, heads, seq, dim): seq_q = seq_kv."""
    if sweep == "grids":  # blocks at 128 rows: 32, 64 (long loops), 64, 96, 128, 192, 256, 512, 1024; dims 128 and 64
        grids = [(1, 16, 256), (1, 4, 2048), (1, 32, 256), (1, 48, 256), (1, 64, 256), (1, 96, 256), (1, 32, 1024),
                 (2, 32, 1024), (4, 32, 1024)]  # fmt: skip
        return [(b, h, n, d) for d in (128, 64) for b, h, n in grids]
    if sweep == "waves":  # 160-768 blocks (as many waves split as whole, at the heuristic's launches, or one more)
        grids = [(1, 40, 512), (1, 40, 1024), (2, 24, 1024), (1, 96, 512), (4, 16, 768), (2, 48, 1024)]
        return [(b, h, n, d) for d in (64, 128) for b, h, n in grids]
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


def build(impl: str, examples: str, shape, tiling, source: str = "sink"):
    sys.path.insert(0, os.path.join(examples, "attention_sink" if source == "sink" else "flash_attention"))
    if impl == "tile2triton":
        from tile2triton.cli import install_tilelang_alias

        install_tilelang_alias()
    b, h, n, d = shape
    rows, threads = tiling
    if source == "mha":
        import example_mha_fwd_bhsd as ex

        return ex, ex.flashattn(b, h, n, n, d, False, block_M=rows, block_N=128, num_stages=2, threads=threads)
    import example_mha_sink_fwd_bhsd as ex

    return ex, ex.flashattn(b, h, n, n, d, None, block_M=rows, block_N=128, num_stages=2, threads=threads)


def reference(ex, source: str, ins):
    import torch

    if source == "mha":
        return ex.ref_program(*ins[:3], False)
    return ex.ref_program(*ins, sliding_window=None, dtype=torch.float16)


def inputs(shape, source: str = "sink"):
    import torch

    b, h, n, d = shape
    gen = torch.Generator(device="cpu").manual_seed(0)
    q, k, v = (torch.randn(b, h, n, d, generator=gen).to("cuda", torch.float16) for _ in range(3))
    if source == "mha":
        return q, k, v
    return q, k, v, torch.randn(h, generator=gen).to("cuda", torch.float16)


def _warm(task):
    impl, examples, shape, tiling, source = task
    _, kernel = build(impl, examples, shape, tiling, source)
    kernel(*inputs(shape, source))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("examples")
    ap.add_argument("--impl", choices=("tile2triton", "tilelang"), default="tile2triton")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--rows", type=int, nargs="*", default=[m for m, _ in TILINGS], help="only these tilings' block_M")
    ap.add_argument("--sweep", choices=("grids", "waves"), help="head dims 64 and 128 over more grids")
    ap.add_argument("--threads", type=int, default=256, help="the 128-row tiling's threads")
    ap.add_argument("--source", choices=("sink", "mha"), default="sink")
    ns = ap.parse_args(argv)
    tilings = [(m, ns.threads if m == 128 else t) for m, t in TILINGS if m in ns.rows]
    import torch
    import triton

    tasks = [(ns.impl, ns.examples, s, t, ns.source) for s in shapes(ns.sweep) for t in tilings]
    prewarm(tasks, _warm, ns.jobs)  # TileLang's kernel cache is on disk too: its compiles warm alike
    print(f"{ns.impl} on {torch.cuda.get_device_name()}, torch {torch.__version__}, Triton {triton.__version__}")
    print("| batch, heads, seq, dim | blocks at 128 rows | " + " | ".join(f"{m} rows, {t} thr (us)" for m, t in tilings)
          + " | launches |")  # fmt: skip
    print("|---|---|" + "---|" * len(tilings) + "---|")
    for shape in shapes(ns.sweep):
        ins = inputs(shape, ns.source)
        cells, launches = [], []
        for tiling in tilings:
            try:
                ex, kernel = build(ns.impl, ns.examples, shape, tiling, ns.source)
                out = kernel(*ins)
                ref = reference(ex, ns.source, ins)
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
