"""The Gluon attention routes against the ``tl`` lowering over a sweep of shapes: the measurements
behind their cost models (``gluon_plan._worth_it``, ``gluon_fullcol._worth_it``).

Each shape is compiled from the same TileLang source (benchmarks/vs_tilelang_kernels.py) with
``TILE2TRITON_GLUON=off`` (the ``tl`` lowering) and with ``=force`` (the Gluon route wherever it
applies, past its cost model) under each consumer schedule ``--schedules`` names
(``TILE2TRITON_GLUON_SCHEDULE``: rotated, serial). Every output is checked against torch; times are
``triton.testing.do_bench`` medians (L2 flushed). On an H200, from the repo root:

    PYTHONPATH=. python benchmarks/gluon_route_sweep.py            # rows, sink rows, windows, then columns (MLA)
    PYTHONPATH=. python benchmarks/gluon_route_sweep.py --jobs 12  # compile in 12 processes first
    PYTHONPATH=. python benchmarks/gluon_route_sweep.py --only sink,window --max-keys 1024 --schedules rotated,serial

Rows print ``shape | tl us | <schedule> us ... | tl/<schedule> ...`` (> 1: Gluon faster) and which
route each forced compile got.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

from prewarm import prewarm

HERE = Path(__file__).resolve().parent


def _vs():
    spec = importlib.util.spec_from_file_location("vs_tilelang", HERE / "vs_tilelang.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["vs_tilelang"] = module
    spec.loader.exec_module(module)
    return module


def rows_shapes():
    """Dense flash-attention forward (``mha_bhsd``): head dim, tile (rows x keys, threads), length,
    batch x heads, causal. 128 rows of 256 threads are two consumer warpgroups, 64 rows of 128 one."""
    out = []
    for dim in (64, 128):
        for block_m, block_n, threads in ((128, 64, 256), (128, 128, 256), (64, 64, 128)):
            for batch, heads, seq in ((1, 32, 256), (1, 16, 1024), (4, 32, 4096)):
                for causal in (False, True):
                    out.append(("rows", (batch, heads, seq, seq, dim, causal, block_m, block_n, 2, threads)))
    return out


def sink_shapes():
    """Causal attention with a sink logit per head (``sinkfwd_probe.causal_sink``, TileLang's attention_sink
    example at its 128-row, 256-thread tile, compiled with its fast math): keys per tile, batch x
    heads, query and key lengths (loops of 2 to 64 iterations, 64 to 4096 blocks)."""
    lengths = ((1, 32, 256, 256), (1, 32, 512, 512), (2, 24, 384, 640), (1, 16, 1000, 1000), (2, 16, 2048, 2048))
    lengths += ((4, 32, 4096, 4096),)
    return [
        ("sink", (batch, heads, seq_q, seq_kv, 128, 128, block_n, 2, 256))
        for block_n in (64, 128)
        for batch, heads, seq_q, seq_kv in lengths
    ]


def window_shapes():
    """Causal attention with a sink and a sliding window (TileLang's attention_sink example with
    ``window_size``): loops that start at ``T.max(0, ...)``, not proven to run (the serial schedule)."""
    cases = ((1, 32, 256, 256, 128), (1, 8, 1500, 1500, 256), (2, 16, 2048, 2048, 128), (2, 16, 2048, 2048, 512))
    cases += ((2, 16, 2048, 2048, 1024), (1, 32, 4096, 4096, 256), (1, 32, 4096, 4096, 1024))
    return [
        ("window", (batch, heads, seq_q, seq_kv, 128, window, 128, block_n, 2, 256))
        for block_n in (64, 128)
        for batch, heads, seq_q, seq_kv, window in cases
    ]


def columns_shapes():
    """MLA decode (``mla_decode``): latent width, key tile, batch, KV length."""
    out = []
    for dim in (256, 512):
        for block_n in (32, 64):
            for batch, seq in ((32, 1024), (128, 8192)):
                out.append(("columns", (batch, 128, seq, dim, 64, block_n, 64, 256, (dim + 64) ** -0.5)))
    return out


def inputs(kind, args, dev):
    import torch

    gen = torch.Generator(device="cpu").manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float16).to(dev)

    if kind in ("rows", "sink", "window"):
        b, h, sq, skv, d = args[:5]
        sinks = [randn(h)] if kind in ("sink", "window") else []
        return [randn(b, h, sq, d), randn(b, h, skv, d), randn(b, h, skv, d), *sinks]
    b, h, s, d, pe = args[:5]
    return [randn(b, h, d), randn(b, h, pe), randn(b, s, 1, d), randn(b, s, 1, pe)]


def reference(kind, args, ins):
    import torch

    if kind == "rows":
        q, k, v = (t.float() for t in ins)
        causal = args[5]
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    if kind in ("sink", "window"):  # the sink: one more logit in every row's softmax, its weight dropped
        q, k, v, sinks = (t.float() for t in ins)
        seq_q, seq_kv = q.shape[2], k.shape[2]
        scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
        keys = torch.arange(seq_kv, device=q.device)[None, :]
        queries = torch.arange(seq_q, device=q.device)[:, None] + seq_kv - seq_q
        scores = scores.masked_fill(keys > queries, float("-inf"))
        if kind == "window":
            scores = scores.masked_fill(keys <= queries - args[5], float("-inf"))
        column = sinks[None, :, None, None].expand(*scores.shape[:-1], 1)
        return torch.softmax(torch.cat([scores, column], dim=-1), dim=-1)[..., :-1] @ v
    q, q_pe, kv, k_pe = (t.float() for t in ins)
    scores = torch.einsum("bhd,bsd->bhs", q, kv[:, :, 0]) + torch.einsum("bhd,bsd->bhs", q_pe, k_pe[:, :, 0])
    return torch.einsum("bhs,bsd->bhd", torch.softmax(scores * args[-1], dim=-1), kv[:, :, 0])


def compile_one(kind, args, route, schedule="auto"):
    """A fresh JITKernel of the shape under TILE2TRITON_GLUON=route ("off" or "force") and
    TILE2TRITON_GLUON_SCHEDULE=schedule."""
    os.environ["TILE2TRITON_GLUON"] = route
    os.environ["TILE2TRITON_GLUON_SCHEDULE"] = schedule
    vs = _vs() if "vs_tilelang" not in sys.modules else sys.modules["vs_tilelang"]
    module = vs.load_kernels("t2t")
    if kind in ("sink", "window"):
        import sinkfwd_probe

        # Q, K, V, Output, Sinks
        factory, out_idx = (sinkfwd_probe.causal_sink if kind == "sink" else sinkfwd_probe.sink_fwd), [3]
    else:
        factory, out_idx = (module.mha_bhsd if kind == "rows" else module.mla_decode), [-1]
    from tile2triton.runtime.kernel import JITKernel

    pass_configs = {"tl.enable_fast_math": True} if kind in ("sink", "window") else None  # as TileLang's example
    made = module.frontend.jit(out_idx=out_idx, pass_configs=pass_configs)(factory)(*args)
    return JITKernel(made.prim_func, pass_configs=made.pass_configs)


def _loop_keys(kind, args) -> int:
    """About the most keys one block's loop visits: the key length, or a window and its rows."""
    if kind == "window":
        return min(args[3], args[5] + args[6])
    return args[2] if kind == "columns" else args[3]


def _warm(task):
    kind, args, route, schedule = task
    compile_one(kind, args, route, schedule)(*inputs(kind, args, "cuda"))


def _time(kind, args, ins, ref, route, schedule):
    """(us, max error, the route taken) of one compile, or NaNs and the error's name."""
    import triton

    try:
        kernel = compile_one(kind, args, route, schedule)
        out = kernel(*ins)
        err = float((out.float() - ref).abs().max())
        us = triton.testing.do_bench(lambda: kernel(*ins), warmup=25, rep=100, return_mode="median") * 1e3
        return us, err, "Gluon" if "# Gluon generated" in kernel.get_kernel_source() else "tl"
    except Exception as exc:
        return float("nan"), float("nan"), f"{type(exc).__name__}: {str(exc)[:80]}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1, help="processes compiling before the timed runs")
    ap.add_argument("--only", default=None, help="kinds, comma-separated: rows, sink, window, columns")
    ap.add_argument("--max-keys", type=int, default=None, help="only loops over at most this many keys")
    ap.add_argument("--schedules", default="auto", help="the Gluon schedules to time, comma-separated")
    ns = ap.parse_args(argv)
    import torch
    import triton

    kinds = ns.only.split(",") if ns.only else None
    schedules = ns.schedules.split(",")
    shapes = rows_shapes() + sink_shapes() + window_shapes() + columns_shapes()
    shapes = [(k, a) for k, a in shapes if kinds is None or k in kinds]
    if ns.max_keys is not None:
        shapes = [(k, a) for k, a in shapes if _loop_keys(k, a) <= ns.max_keys]
    variants = [("off", "auto")] + [("force", s) for s in schedules]
    tasks = [(k, a, r, s) for k, a in shapes for r, s in variants]
    prewarm(tasks, _warm, ns.jobs)
    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, Triton {triton.__version__}")
    names = " | ".join(f"{s} us" for s in schedules) + " | " + " | ".join(f"tl / {s}" for s in schedules)
    print(f"| route | shape | tl us | {names} | forced took | max err tl / {' / '.join(schedules)} |")
    print("|---" * (5 + 2 * len(schedules)) + "|")
    for kind, args in shapes:
        ins = inputs(kind, args, "cuda")
        ref = reference(kind, args, ins)
        cells = [_time(kind, args, ins, ref, route, schedule) for route, schedule in variants]
        tl_us = cells[0][0]
        shape = ",".join(str(a if not isinstance(a, float) else round(a, 4)) for a in args)
        times = " | ".join(f"{c[0]:.1f}" for c in cells[1:])
        ratios = " | ".join(f"{tl_us / c[0]:.2f}" for c in cells[1:])
        took = " / ".join(c[2] for c in cells[1:])
        errs = " / ".join(f"{c[1]:.1e}" for c in cells)
        print(f"| {kind} | {shape} | {tl_us:.1f} | {times} | {ratios} | {took} | {errs} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
