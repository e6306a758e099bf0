"""Sliding-window and causal attention forward's launch (warps x stages) against its loop's length: the measurements
for ``runtime/tuning.py``'s attention choice where a block runs few key tiles.

Session 39 found the sink example's sliding-window forward (bf16, head dim 64, 128 x 128 tiles, window 256: 3 key
tiles a block, 320 blocks) 5-9% faster at 8 warps / 2 stages than at the heuristic's 4 warps / 3 stages, while
attn_warps_sweep.py's full-attention rows (5 to 32 tiles a block past 132 blocks) are faster at 4 warps.  This times
TileLang's ``example_mha_sink_fwd_bhsd.flashattn`` (a window, or causal without one) at several windows, sequence
lengths and head counts, each at the heuristic's launch and at 4 / 8 warps x 2 / 3 stages, outputs checked against
the example's ``ref_program``; ``triton.testing.do_bench`` medians (L2 flushed), microseconds.  From the repo root on
the GPU, with TileLang's examples (.tl: tools/carry_tilelang.sh):

    PYTHONPATH=. python3 benchmarks/window_warps_sweep.py .tlx/examples --jobs 12
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from prewarm import prewarm  # noqa: E402

CHOICES = ((4, 2), (4, 3), (8, 2), (8, 3))


def shapes():
    """(batch, heads, seq, dim, window): 128 x 128 tiles, so a window of W runs W / 128 + 1 key tiles a block."""
    out = []
    for window in (128, 256, 512, 1024):
        for batch, heads, seq in ((1, 40, 1024), (1, 64, 4096), (2, 16, 2048), (1, 8, 1024)):
            out.append((batch, heads, seq, 64, window))
    out += [(1, 40, 1024, 64, None), (1, 16, 2048, 64, None), (1, 40, 1024, 128, 256)]
    return out


def compile_one(examples: str, shape, choice):
    sys.path.insert(0, os.path.join(examples, "attention_sink"))
    from tile2triton.cli import install_tilelang_alias

    install_tilelang_alias()
    import example_mha_sink_fwd_bhsd as ex

    from tile2triton.runtime import tuning
    from tile2triton.runtime.kernel import JITKernel

    b, h, n, d, window = shape
    made = ex.flashattn(b, h, n, n, d, window, block_M=128, block_N=128, num_stages=2, threads=256, dtype="bfloat16")
    made = getattr(made, "kernel", made)
    launch = None if choice is None else tuning.LaunchChoice(*choice)
    return ex, JITKernel(made.prim_func, pass_configs=made.pass_configs, launch=launch)


def inputs(shape):
    import torch

    b, h, n, d, _ = shape
    gen = torch.Generator(device="cpu").manual_seed(0)
    q, k, v = (torch.randn(b, h, n, d, generator=gen).to("cuda", torch.bfloat16) for _ in range(3))
    sinks = torch.randn(h, generator=gen).to("cuda", torch.bfloat16)
    return q, k, v, sinks


def _warm(task):
    examples, shape, choice = task
    _, kernel = compile_one(examples, shape, choice)
    kernel(*inputs(shape))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("examples")
    ap.add_argument("--jobs", type=int, default=1)
    ns = ap.parse_args(argv)
    import torch
    import triton

    tasks = [(ns.examples, s, c) for s in shapes() for c in (None, *CHOICES)]
    prewarm(tasks, _warm, ns.jobs)
    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, Triton {triton.__version__}")
    print("| batch, heads, seq, dim, window | blocks | tiles a block | heuristic | "
          + " | ".join(f"w{w} s{s}" for w, s in CHOICES) + " | heuristic us | best |")  # fmt: skip
    print("|---|---|---|---|" + "---|" * len(CHOICES) + "---|---|")
    for shape in shapes():
        ins = inputs(shape)
        cells, label = {}, "?"
        for choice in (None, *CHOICES):
            try:
                ex, kernel = compile_one(ns.examples, shape, choice)
                out = kernel(*ins)
                ref = ex.ref_program(*ins, sliding_window=shape[4], dtype=torch.bfloat16)
                err = float((out.float() - ref.float()).abs().max())
                us = triton.testing.do_bench(lambda: kernel(*ins), warmup=25, rep=100, return_mode="median") * 1e3
                cells[choice] = f"{us:.1f}" + ("" if err < 3e-2 else f" (err {err:.1e})")
                if choice is None:
                    label = kernel.launch_choice.label() if kernel.launch_choice else "literal"
            except Exception as exc:  # noqa: BLE001 - a cell, not the end
                cells[choice] = type(exc).__name__
        timed = {c: float(v.split()[0]) for c, v in cells.items() if c is not None and v[0].isdigit()}
        best = "w{} s{}".format(*min(timed, key=timed.get)) if timed else "-"
        b, h, n, d, window = shape
        tiles = (window // 128 + 1) if window else f"1-{n // 128}"
        row = ", ".join(str(x) for x in shape)
        print(f"| {row} | {b * h * (n // 128)} | {tiles} | {label} | " + " | ".join(cells[c] for c in CHOICES)
              + f" | {cells[None]} | {best} |", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
