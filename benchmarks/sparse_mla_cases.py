"""TileLang's DeepSeek-V3.2 sparse MLA kernels through tile2triton, timed on the GPU (issue 23).

The three cases of TileLang's ``regression_tilelang_example_deepseek_v32.py`` (``sparse_mla_fwd``,
``sparse_mla_fwd_pipelined``, ``sparse_mla_bwd``) are loaded unmodified from a TileLang checkout's
``examples/deepseek_v32`` with ``tilelang`` resolved to tile2triton, built with the inputs each
example's ``run_regression_perf`` builds, checked against the example's torch reference
(‖out − ref‖ / ‖ref‖ in float32) and timed with ``triton.testing.do_bench`` (warmup 25, rep 200,
median, L2 flushed), next to the torch reference.  Sizes: the regression suite's, and one other.

    python3 benchmarks/sparse_mla_cases.py --examples TILELANG/examples/deepseek_v32 [--sizes regression]

The TileLang kernel times of the regression sizes are in issue 23 (kernel ratio TileLang /
tile2triton: pipelined 0.04x, bwd 0.09x, fwd 0.73x); this script does not run TileLang.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

# (case, S, SKV, H, topk): the regression suite's sizes first, then one other per case
SIZES = {
    "regression": [
        ("sparse_mla_fwd", 256, 1024, 64, 256),
        ("sparse_mla_fwd_pipelined", 256, 512, 64, 256),
        ("sparse_mla_bwd", 256, 512, 64, 256),
    ],
    "other": [
        ("sparse_mla_fwd", 512, 2048, 32, 512),
        ("sparse_mla_fwd_pipelined", 512, 2048, 32, 512),
        ("sparse_mla_bwd", 512, 2048, 32, 512),
    ],
}
DQK, DV = 576, 512


DEVICE = "cuda"
START = 1024  # the pipelined example's q_start_s_index


def _indices(B, S, SKV, topk, start, torch):
    """As the examples' run_regression_perf: a random permutation of the visible keys per query."""
    idx = torch.full((B, S, 1, topk), SKV, dtype=torch.int32)
    for t in range(S):
        perm = torch.randperm(min(max(1, t + start), SKV))[:topk]
        idx[0, t, 0, : len(perm)] = perm.to(torch.int32)
    return idx.to(DEVICE)


def _rel(out, ref) -> float:
    out, ref = out.float(), ref.float()
    return float((out - ref).norm() / ref.norm().clamp_min(1e-30))


def run_case(mods, case, S, SKV, H, topk, bench, torch):
    B = 1
    dt = torch.bfloat16
    torch.manual_seed(0)
    q = (torch.randn(B, S, H, DQK, dtype=dt, device=DEVICE) / 10).clamp_(-10, 10)
    kv = (torch.randn(B, SKV, 1, DQK, dtype=dt, device=DEVICE) / 10).clamp_(-10, 10)
    t0 = time.time()
    if case == "sparse_mla_fwd":
        m = mods["fwd"]
        idx = _indices(B, S, SKV, topk, 0, torch)

        def fn():
            return m.sparse_mla_fwd(q, kv, idx, H, DV, DQK - DV, topk, 1, None, True)

        def ref():
            return m.ref_sparse_mla_fwd_interface(q, kv, idx)

        out = fn()[0]
        err = _rel(out, ref()) if bench else float("nan")
    elif case == "sparse_mla_fwd_pipelined":
        m = mods["pipe"]
        start = START
        idx = _indices(B, S, SKV, topk, start, torch)
        start_t = torch.tensor([start], dtype=torch.int32, device=DEVICE)

        def fn():
            return m.sparse_mla_fwd(q, kv, idx, start_t, H, DV, DQK - DV, topk, 1, 1, None, True, False)

        def ref():
            return m.ref_sparse_mla_fwd_interface(q, kv, idx, start, 1)

        out = fn()[0]
        err = _rel(out, ref()) if bench else float("nan")
    else:
        m, f = mods["bwd"], mods["fwd"]
        q = torch.randn(B, S, H, DQK, dtype=dt, device=DEVICE)
        kv = torch.randn(B, SKV, 1, DQK, dtype=dt, device=DEVICE)
        do = torch.randn(B, S, H, DV, dtype=dt, device=DEVICE)
        idx = _indices(B, S, SKV, topk, 0, torch)
        o, lse = f.sparse_mla_fwd_interface(q, kv, idx)
        delta = m.preprocess(o, do)
        dkv = torch.zeros_like(kv, dtype=torch.float32)

        def fn():
            return m.bwd(q, kv, do, idx, lse, delta, dkv, H, DV, DQK - DV, topk, 1, None, True)

        def ref():
            return m.ref_sparse_mla_bwd_interface(q, kv, None, do, idx, None)

        dkv.zero_()
        dq = fn()
        if bench:
            ref_dq, ref_dkv = ref()
            err = max(_rel(dq, ref_dq), _rel(dkv, ref_dkv))
        else:
            err = float("nan") if torch.isnan(dq).any() else 0.0
    first = time.time() - t0
    if bench is None:  # --cpu: the kernels run (interpreter), nothing is timed
        return float("nan"), float("nan"), err, first
    ms = bench(fn, warmup=25, rep=200, return_mode="median")
    ref_ms = bench(ref, warmup=5, rep=50, return_mode="median")
    return ms, ref_ms, err, first


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default = os.environ.get("TILELANG_EXAMPLES", "/work/tl/examples") + "/deepseek_v32"
    ap.add_argument("--examples", default=default, help="a TileLang checkout's examples/deepseek_v32")
    ap.add_argument("--sizes", choices=["regression", "other", "both"], default="both")
    ap.add_argument("--cases", default="", help="comma-separated substrings of case names")
    ap.add_argument("--cpu", action="store_true", help="smoke run: tiny sizes through the interpreter, untimed")
    args = ap.parse_args()

    from tile2triton.cli import install_tilelang_alias

    install_tilelang_alias()
    sys.path.insert(0, args.examples)
    import sparse_mla_bwd
    import sparse_mla_fwd
    import sparse_mla_fwd_pipelined
    import torch
    from triton.testing import do_bench

    mods = {"fwd": sparse_mla_fwd, "pipe": sparse_mla_fwd_pipelined, "bwd": sparse_mla_bwd}
    rows = SIZES["regression"] + SIZES["other"] if args.sizes == "both" else SIZES[args.sizes]
    bench = do_bench
    if args.cpu:
        global DEVICE, START
        DEVICE, START, bench = "cpu", 0, None
        rows = [(case, 8, 64, 16, 128) for case, *_ in SIZES["regression"]]
    wanted = [w for w in args.cases.split(",") if w]
    print(
        f"{'case':26} {'S':>5} {'SKV':>5} {'H':>3} {'topk':>5} {'t2t ms':>9} {'torch ms':>9} {'rel err':>9} {'first s':>8}"
    )
    for case, S, SKV, H, topk in rows:
        if wanted and not any(w in case for w in wanted):
            continue
        try:
            ms, ref_ms, err, first = run_case(mods, case, S, SKV, H, topk, bench, torch)
            line = f"{ms:9.4f} {ref_ms:9.4f} {err:9.2e} {first:8.1f}"
        except Exception as exc:  # one case failing does not hide the others
            line = f"FAILED: {type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
        print(f"{case:26} {S:5} {SKV:5} {H:3} {topk:5} {line}", flush=True)


if __name__ == "__main__":
    main()
