"""Causal attention forward with its blocks in launch order and heaviest first (``TILE2TRITON_HEAVY_FIRST``,
codegen/block_order.py) over a sweep of shapes: the measurement that decides the switch's default.

TileLang's ``example_mha_fwd_bshd.flashattn`` (causal, float16, the regression's 128 x 128 tiles, 128 threads) at
sequence lengths, head counts and head dims from a fraction of a wave to many waves, and up to keys and values far
past L2 (benchmarks/lpt_model.py's model leaves L2 out: walked heaviest first, the blocks running together belong
to different heads); each shape with the switch off and on, outputs checked against the example's
``ref_program`` where it fits; ``triton.testing.do_bench`` medians (L2 flushed), microseconds.  From the repo
root on the GPU, with TileLang's examples (.tl: tools/carry_tilelang.sh):

    PYTHONPATH=. python3 benchmarks/heavy_first_sweep.py .tlx/examples
"""

from __future__ import annotations

import argparse
import os
import sys

SHAPES = (  # batch, heads, seq, dim
    (1, 8, 1024, 64),
    (2, 24, 1024, 64),
    (1, 32, 2048, 128),
    (4, 16, 4096, 128),
    (1, 64, 8192, 128),
    (2, 32, 16384, 128),
)


GROUPS = (None, "waves", "0", "8")  # launch order; heaviest first in runs of ~2 waves (the default), one run, runs of 8


def kernel_for(examples: str, shape, group):
    """A fresh kernel of the example, lowered and compiled in launch order (``group`` None) or heaviest
    first with the heads in runs of ``group`` (a TILE2TRITON_HEAVY_FIRST_GROUP value: "waves", "0" one run, "8")."""
    sys.path.insert(0, os.path.join(examples, "flash_attention"))
    from tile2triton.cli import install_tilelang_alias

    install_tilelang_alias()
    import example_mha_fwd_bshd as ex

    from tile2triton.runtime.kernel import JITKernel

    os.environ["TILE2TRITON_HEAVY_FIRST"] = "0" if group is None else "1"
    os.environ["TILE2TRITON_HEAVY_FIRST_GROUP"] = group or ""
    b, h, n, d = shape
    made = ex.flashattn(b, h, n, d, True, block_M=128, block_N=128, num_stages=1, threads=128)
    made = getattr(made, "kernel", made)
    return ex, JITKernel(made.prim_func, pass_configs=made.pass_configs)


def _column(group: str) -> str:
    return {"waves": "runs of ~2 waves us", "0": "one run us"}.get(group, f"runs of {group} us")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("examples")
    ap.add_argument("--rows", help="comma-separated indices of SHAPES to run (default: all)")
    ap.add_argument("--groups", help="comma-separated heaviest-first run sizes after launch order (default waves,0,8)")
    ns = ap.parse_args(argv)
    shapes = [SHAPES[int(i)] for i in ns.rows.split(",")] if ns.rows else SHAPES
    groups = (None, *ns.groups.split(",")) if ns.groups else GROUPS
    import torch
    import triton

    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, Triton {triton.__version__}")
    names = ["launch order us"] + [_column(g) for g in groups[1:]]
    print(f"| batch, heads, seq, dim | blocks | K+V MB | {' | '.join(names)} | best / launch order | max err |")
    print("|---|---|---|" + "---|" * len(names) + "---|---|")
    for shape in shapes:
        b, h, n, d = shape
        gen = torch.Generator(device="cpu").manual_seed(0)
        q, k, v = (torch.randn(b, n, h, d, generator=gen).to("cuda", torch.float16) for _ in range(3))
        times, errs = {}, []
        for group in groups:
            try:
                ex, kernel = kernel_for(ns.examples, shape, group)
                out = kernel(q, k, v)  # lowered and compiled here, with the switch as set
                if b * h * n * n <= 2**31:  # the reference's score matrix fits
                    errs.append(float((out.float() - ex.ref_program(q, k, v, True).float()).abs().max()))
                times[group] = triton.testing.do_bench(lambda: kernel(q, k, v), warmup=25, rep=100) * 1e3
            except Exception as exc:  # noqa: BLE001 - a cell, not the end
                times[group] = type(exc).__name__
        for name in ("TILE2TRITON_HEAVY_FIRST", "TILE2TRITON_HEAVY_FIRST_GROUP"):
            os.environ.pop(name, None)
        cells = [f"{t:.1f}" if isinstance(t, float) else t for t in times.values()]
        timed = [t for t in times.values() if isinstance(t, float)]
        ratio = times[None] / min(timed) if isinstance(times[None], float) else float("nan")
        err = f"{max(errs):.1e}" if errs else "-"
        mb = 2 * b * h * n * d * 2 / 2**20
        print(f"| {b}, {h}, {n}, {d} | {b * h * -(-n // 128)} | {mb:.0f} | {' | '.join(cells)} | {ratio:.2f}x | {err} |",
              flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
