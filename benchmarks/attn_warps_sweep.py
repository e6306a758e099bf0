"""Flash-attention forward's launch warps against the grid's size: the measurements behind
``runtime/tuning.py``'s attention warps (``_by_shape``).

Each shape (TileLang's ``example_mha_fwd_bhsd`` kernel, benchmarks/vs_tilelang_kernels.py
``mha_bhsd``) is compiled once per candidate launch: the heuristic's own choice and 4, 8 and 16
warps at its stage count. Every output is checked against torch's attention; times are
``triton.testing.do_bench`` medians (L2 flushed). ``blocks`` is the grid (query tiles x heads x
batch) against the H200's 132 SMs. From the repo root on the GPU:

    PYTHONPATH=. python benchmarks/attn_warps_sweep.py --jobs 12
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from prewarm import prewarm

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

WARPS = (4, 8, 16)


def shapes():
    """(batch, heads, seq_q, seq_kv, dim, causal, block_M, block_N, stages, threads): grids from
    half a wave to several, loops from 2 to 32 iterations, head dims 64 and 128."""
    sizes = [
        (1, 32, 256, 256),  # the suite's: 64 blocks, 2 iterations
        (2, 16, 384, 640),  # its variant: 96 blocks, 5 iterations
        (1, 12, 1000, 1000),  # 96 blocks, 8 iterations
        (2, 24, 384, 640),  # 144 blocks
        (1, 16, 2048, 2048),  # 256 blocks, 16 iterations
        (4, 32, 1024, 1024),  # 1024 blocks
        (1, 8, 4096, 4096),  # 256 blocks, 32 iterations
    ]
    out = []
    for dim in (64, 128):
        for b, h, sq, skv in sizes:
            out.append((b, h, sq, skv, dim, False, 128, 128 if dim == 64 else 64, 2, 256))
        out.append((1, 32, 640, 640, dim, True, 128, 128 if dim == 64 else 64, 2, 256))
    out.append((2, 16, 384, 640, 64, False, 64, 64, 1, 128))  # the example's own 64 x 64 tile
    out.append((4, 32, 1024, 1024, 64, False, 64, 64, 1, 128))
    return out


def compile_one(args, warps):
    """A JITKernel of the shape: the heuristic's launch (warps None) or ``warps`` at its stages."""
    import vs_tilelang

    from tile2triton.runtime import tuning
    from tile2triton.runtime.kernel import JITKernel

    module = vs_tilelang.load_kernels("t2t")
    made = module.frontend.jit(out_idx=[-1])(module.mha_bhsd)(*args)
    kernel = JITKernel(made.prim_func, pass_configs=made.pass_configs)
    if warps is None:
        return kernel
    chosen = tuning.heuristic(made.prim_func, (9, 0))
    choice = tuning.LaunchChoice(warps, chosen.num_stages, chosen.warp_specialize)
    return JITKernel(made.prim_func, pass_configs=made.pass_configs, launch=choice)


def inputs(args, dev):
    import torch

    gen = torch.Generator(device="cpu").manual_seed(0)
    b, h, sq, skv, d = args[:5]
    return [
        torch.randn(*s, generator=gen, dtype=torch.float16).to(dev)
        for s in ((b, h, sq, d), (b, h, skv, d), (b, h, skv, d))
    ]


def reference(args, ins):
    import torch

    q, k, v = (t.float() for t in ins)
    causal, sq, skv = args[5], args[2], args[3]
    if not causal:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)
    past = skv - sq
    allowed = torch.arange(skv, device=q.device)[None, :] <= torch.arange(sq, device=q.device)[:, None] + past
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=allowed)


def _warm(task):
    args, warps = task
    compile_one(args, warps)(*inputs(args, "cuda"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1)
    ns = ap.parse_args(argv)
    os.environ.setdefault("TILE2TRITON_GLUON", "off")  # the tl lowering's launch is what is measured
    import torch
    import triton

    tasks = [(a, w) for a in shapes() for w in (None, *WARPS)]
    prewarm(tasks, _warm, ns.jobs)
    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, Triton {triton.__version__}")
    print(
        "| shape (b,h,sq,skv,d,causal,bm,bn,st,thr) | blocks | heuristic | "
        + " | ".join(f"w{w} us" for w in WARPS)
        + " | heuristic us | best |"
    )
    print("|---|---|---|" + "---|" * len(WARPS) + "---|---|")
    for args in shapes():
        ins = inputs(args, "cuda")
        ref = reference(args, ins)
        cells, label = {}, "?"
        for warps in (None, *WARPS):
            try:
                kernel = compile_one(args, warps)
                out = kernel(*ins)
                err = float((out.float() - ref).abs().max())
                us = triton.testing.do_bench(lambda: kernel(*ins), warmup=25, rep=100, return_mode="median") * 1e3
                cells[warps] = f"{us:.1f}" + ("" if err < 2e-2 else f" (err {err:.1e})")
                if warps is None:
                    label = kernel.launch_choice.label() if kernel.launch_choice else "literal"
            except Exception as exc:  # noqa: BLE001 - a cell, not the end
                cells[warps] = f"{type(exc).__name__}"
        timed = {w: float(c.split()[0]) for w, c in cells.items() if w is not None and c[0].isdigit()}
        best = f"w{min(timed, key=timed.get)}" if timed else "-"
        b, h, sq, _, _, _, bm = args[:7]
        blocks = -(-sq // bm) * h * b
        shape = ",".join(str(int(a) if isinstance(a, bool) else a) for a in args)
        print(
            f"| {shape} | {blocks} | {label} | " + " | ".join(cells[w] for w in WARPS) + f" | {cells[None]} | {best} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
