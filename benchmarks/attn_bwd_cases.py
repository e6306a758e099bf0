"""Attention backward through tile2triton against torch SDPA's backward (issue 23).

TileLang's example kernels, run unmodified through tile2triton (``import tilelang`` resolves to it):
``example_mha_bwd_bhsd.py`` and ``example_gqa_bwd.py`` (its ``flashattn_bwd_split``), at the
sizes of their ``run_regression_perf`` and at larger ones.  Per case:

* ``main ms``: the dK/dV kernel alone (it accumulates dQ with ``T.atomic_add``), the kernel the
  regression suite times;
* ``bwd ms``: the whole backward (preprocess Delta = rowsum(dO * O), main kernel on a zeroed dQ,
  postprocess that casts dQ);
* ``sdpa ms``: ``torch.autograd.grad`` of ``scaled_dot_product_attention`` (q, k, v), the
  backward torch picks on this GPU;
* ``err``: the largest |difference| of dQ, dK, dV against SDPA's gradients (scaled by their max).

All timings: ``triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")``.
``--sweep`` also times the main kernel under other launch choices (``runtime/tuning.py``: warps
4/8/16 x stages 1/2/3) and with pointer loads instead of in-kernel TMA descriptors; use it with
``--only`` to stay within two minutes.

    PYTHONPATH=. python3 benchmarks/attn_bwd_cases.py TILELANG/examples/flash_attention [--sweep --only gqa]

It runs unchanged on a checkout before issue 23's changes, for a before/after table.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

LOG2E = 1.44269504


DEVICE = "cuda"


def _bench(fn) -> float:
    if DEVICE == "cpu":  # --cpu: one call through Triton's interpreter (a smoke test, not a timing)
        start = time.perf_counter()
        fn()
        return (time.perf_counter() - start) * 1e3
    import triton.testing

    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")


def _sdpa_grads(q, k, v, do, layout: str, groups: int):
    """SDPA's output and its backward as a callable, in the kernels' layout."""
    qt, kt, vt = (x.detach().clone().requires_grad_() for x in (q, k, v))

    def fwd():
        a, b, c = (x.transpose(1, 2) if layout == "bshd" else x for x in (qt, kt, vt))
        o = F.scaled_dot_product_attention(a, b, c, enable_gqa=groups > 1)
        return o.transpose(1, 2) if layout == "bshd" else o

    out = fwd()
    d = do

    def backward():
        return torch.autograd.grad(out, (qt, kt, vt), d, retain_graph=True)

    return out.detach().contiguous(), backward


def _lse(q, k, layout: str, groups: int):
    """The forward's log2-domain row statistic lse[b, h, s] the backward kernels read."""
    a, b = (x.transpose(1, 2) if layout == "bshd" else x for x in (q, k))
    b = b.repeat_interleave(groups, dim=1)
    scores = (a.float() @ b.float().transpose(-1, -2)) / q.shape[-1] ** 0.5
    return (torch.logsumexp(scores, dim=-1) * LOG2E).contiguous()


def _err(got, ref) -> float:
    return ((got.float() - ref.float()).abs().max() / ref.float().abs().max().clamp_min(1e-6)).item()


@dataclass
class Case:
    kernel: object  # the main kernel (a tile2triton JITKernel)
    args: tuple  # its arguments; dQ keeps accumulating over timed calls, as in the suite
    run_bwd: Callable
    sdpa_bwd: Callable
    err: float
    flops: float


def mha_case(ex, B, H, S, D):
    block_M, block_N = 64, 64 if D <= 64 else 32
    q, k, v, do = (torch.randn(B, H, S, D, device=DEVICE, dtype=torch.half) for _ in range(4))
    o, sdpa_bwd = _sdpa_grads(q, k, v, do, "bhsd", 1)
    lse = _lse(q, k, "bhsd", 1)
    prep = ex.flashattn_bwd_preprocess(B, H, S, D)
    post = ex.flashattn_bwd_postprocess(B, H, S, D)
    main = ex.flashattn_bwd(B, H, S, D, False, block_M, block_N)
    dq = torch.zeros(B, H, S, D, device=DEVICE, dtype=torch.float32)
    dk, dv = torch.empty_like(q), torch.empty_like(q)

    def run_bwd():
        delta = prep(o, do)
        dq.zero_()
        main(q, k, v, do, lse, delta, dq, dk, dv)
        return post(dq)

    grads = run_bwd()
    ref = sdpa_bwd()
    err = max(_err(grads, ref[0]), _err(dk, ref[1]), _err(dv, ref[2]))
    args = (q, k, v, do, lse, prep(o, do), dq, dk, dv)
    return Case(main, args, run_bwd, sdpa_bwd, err, 2.0 * B * H * S * S * D * 5)


def gqa_case(ex, B, H, S, Dqk, Dv, groups):
    head_kv = H // groups
    q = torch.randn(B, S, H, Dqk, device=DEVICE, dtype=torch.half)
    k = torch.randn(B, S, head_kv, Dqk, device=DEVICE, dtype=torch.half)
    v = torch.randn(B, S, head_kv, Dv, device=DEVICE, dtype=torch.half)
    do = torch.randn(B, S, H, Dv, device=DEVICE, dtype=torch.half)
    o, sdpa_bwd = _sdpa_grads(q, k, v, do, "bshd", groups)
    lse = _lse(q, k, "bshd", groups)
    prep = ex.flashattn_bwd_preprocess(B, H, S, Dv)
    post = ex.flashattn_bwd_postprocess(B, H, S, Dqk)
    main = ex.flashattn_bwd_split(B, H, S, Dqk, Dv, False, block_M=128, block_N=32, threads=256, num_stages=2,
                                  groups=groups)  # fmt: skip
    dq = torch.zeros(B, S, H, Dqk, device=DEVICE, dtype=torch.float32)
    dk = torch.empty(groups, B, S, head_kv, Dqk, device=DEVICE, dtype=torch.half)
    dv = torch.empty(groups, B, S, head_kv, Dv, device=DEVICE, dtype=torch.half)

    def run_bwd():
        delta = prep(o, do)
        dq.zero_()
        main(q, k, v, do, lse, delta, dq, dk, dv)
        return post(dq), dk.sum(0), dv.sum(0)

    got = run_bwd()
    ref = sdpa_bwd()
    err = max(_err(g, r) for g, r in zip(got, ref))
    args = (q, k, v, do, lse, prep(o, do), dq, dk, dv)
    return Case(main, args, run_bwd, sdpa_bwd, err, 2.0 * B * H * S * S * (3 * Dqk + 2 * Dv))


SMOKE = [  # --cpu
    ("mha_bwd_bhsd B1 H2 S96 D32", "mha", (1, 2, 96, 32)),
    ("gqa_bwd B1 H4 S160 Dqk48 Dv32 g2", "gqa", (1, 4, 160, 48, 32, 2)),
]
CASES = [  # (name, family, sizes); the first of each family is its run_regression_perf
    ("mha_bwd_bhsd B1 H16 S512 D64", "mha", (1, 16, 512, 64)),
    ("mha_bwd_bhsd B4 H16 S2048 D64", "mha", (4, 16, 2048, 64)),
    ("mha_bwd_bhsd B2 H16 S1024 D128", "mha", (2, 16, 1024, 128)),
    ("gqa_bwd B1 H32 S256 Dqk192 Dv128 g16", "gqa", (1, 32, 256, 192, 128, 16)),
    ("gqa_bwd B2 H32 S1024 Dqk128 Dv128 g4", "gqa", (2, 32, 1024, 128, 128, 4)),
]


def _sweep(case: Case) -> list[str]:
    from tile2triton.runtime import tuning
    from tile2triton.runtime.kernel import JITKernel

    out = []
    for warps in (4, 8, 16):
        for stages in (1, 2, 3):
            choice = tuning.LaunchChoice(warps, stages)
            if choice == case.kernel.launch_choice:
                continue
            variant = JITKernel(case.kernel.prim_func, pass_configs=case.kernel.pass_configs, launch=choice)
            try:
                variant(*case.args)
                out.append(f"{choice.label()} {_bench(lambda v=variant: v(*case.args)):.4f}")
            except Exception as exc:  # a choice Triton cannot build (shared memory)
                out.append(f"{choice.label()} failed ({type(exc).__name__})")
    # the chosen launch with pointer loads instead of in-kernel TMA descriptors (each program
    # builds its descriptors at its start: a cost a short kernel may see)
    saved = os.environ.get("TILE2TRITON_TENSOR_DESCRIPTORS")
    os.environ["TILE2TRITON_TENSOR_DESCRIPTORS"] = "0"
    try:
        variant = JITKernel(
            case.kernel.prim_func, pass_configs=case.kernel.pass_configs, launch=case.kernel.launch_choice
        )
        variant(*case.args)  # compiled here, under the setting
        out.append(f"{case.kernel.launch_choice.label()} pointer loads {_bench(lambda: variant(*case.args)):.4f}")
    finally:
        if saved is None:
            del os.environ["TILE2TRITON_TENSOR_DESCRIPTORS"]
        else:
            os.environ["TILE2TRITON_TENSOR_DESCRIPTORS"] = saved
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("examples", help="TileLang's examples/flash_attention folder")
    ap.add_argument("--sweep", action="store_true", help="also time the main kernel under other launch choices")
    ap.add_argument("--only", default="", help="comma-separated substrings of case names")
    ap.add_argument("--cpu", action="store_true", help="tiny sizes through Triton's interpreter (a smoke test)")
    ns = ap.parse_args(argv)
    global DEVICE
    DEVICE = "cpu" if ns.cpu else "cuda"
    if not ns.cpu and not torch.cuda.is_available():
        print("needs a CUDA GPU (or --cpu)")
        return 1
    from tile2triton.cli import install_tilelang_alias

    install_tilelang_alias()
    sys.path.insert(0, ns.examples)
    examples = {
        "mha": importlib.import_module("example_mha_bwd_bhsd"),
        "gqa": importlib.import_module("example_gqa_bwd"),
    }
    torch.manual_seed(0)
    print(f"{torch.cuda.get_device_name() if not ns.cpu else 'cpu (interpreter)'}, torch {torch.__version__}")
    print("| case | launch | main ms | main TFLOP/s | bwd ms | sdpa ms | sdpa / bwd | err |")
    print("|---|---|---|---|---|---|---|---|")
    sweeps = []
    for name, family, sizes in SMOKE if ns.cpu else CASES:
        if ns.only and not any(s in name for s in ns.only.split(",")):
            continue
        build = mha_case if family == "mha" else gqa_case
        try:
            case = build(examples[family], *sizes)
        except Exception as exc:
            print(f"| {name} | failed: {type(exc).__name__}: {str(exc)[:150]} |")
            continue
        t_main = _bench(lambda: case.kernel(*case.args))
        t_bwd, t_sdpa = _bench(case.run_bwd), _bench(case.sdpa_bwd)
        launch = case.kernel.launch_choice.label() if case.kernel.launch_choice is not None else "-"
        print(f"| {name} | {launch} | {t_main:.4f} | {case.flops / t_main * 1e-9:.0f} | {t_bwd:.4f} | "
              f"{t_sdpa:.4f} | {t_sdpa / t_bwd:.2f}x | {case.err:.1e} |", flush=True)  # fmt: skip
        if ns.sweep and not ns.cpu:
            sweeps.append((name, _sweep(case)))
    for name, cells in sweeps:
        print(f"sweep {name} (main ms): " + "; ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
