"""GPU probe (issue 23, session 18): hand edits of the generated sparse MLA backward kernel.

``sparse_mla_bwd_s17.py`` is what main generated for TileLang's deepseek_v32 ``bwd`` before session 18
(the runtime's first shared-memory fit step: dKV gemms transposed, the LICM guard), launched as
the runtime does at the suite's shape (S=256, SKV=512, H=64, topk=256; 8 warps, 1 stage);
``sparse_mla_bwd_fused_axis.py`` is the same kernel with its dKV atomics as 2-D tiles
(codegen/local_loops._fused_lane_axis).  Variants (text edits of those sources):

- ``noatomic``: the atomics behind a run-time flag that is 0 (what the rest of the kernel costs);
- ``_sN``: N pipeline stages (the fused form's shared memory fits 2 and 3 stages; the s17 form's does not).

Each variant's dKV and dQ are compared with the first one's (max difference relative to its max).
``ONLY=name`` runs that variant twice and exits (for Nsight Compute: ncu_sources.sh).

    PYTHONPATH=. python3 benchmarks/hand_variants/bwd_variants.py
"""

import os
import re

import torch
import triton
from variant_tools import first_calls, kernel_from_source

S, SKV, H, D, DT, TOPK = 256, 512, 64, 512, 64, 256
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = {
    "base": open(os.path.join(HERE, "sparse_mla_bwd_s17.py")).read(),
    "fused": open(os.path.join(HERE, "sparse_mla_bwd_fused_axis.py")).read(),
}


def inputs():
    """The suite's inputs: row t attends to a permutation of its first t keys, SKV pads the rest."""
    torch.manual_seed(1)
    bf = torch.bfloat16
    q = torch.randn(1, S, H, D + DT, dtype=bf, device="cuda")
    kv = torch.randn(1, SKV, 1, D + DT, dtype=bf, device="cuda")
    do = torch.randn(1, S, H, D, dtype=bf, device="cuda")
    idx = torch.full((1, S, 1, TOPK), SKV, dtype=torch.int32, device="cuda")
    for t in range(S):
        p = torch.randperm(max(1, t))[:TOPK]
        idx[0, t, 0, : len(p)] = p
    lse = torch.randn(1, S, H, device="cuda").abs() + 5
    delta = torch.randn(1, S, H, device="cuda")
    return q, kv, do, idx, lse, delta


def variant(name: str):
    """(the kernel of variant ``name``, whether it takes the atomics flag)."""
    src = SOURCES["fused" if name.startswith("fused") else "base"]
    flag = "noatomic" in name
    if flag:
        src = src.replace("Delta, dKV, dQ):", "Delta, dKV, dQ, flag):")
        src = re.sub(r"(\n(\s+)tl\.atomic_add\()", r"\n\2if flag != 0:\n\2    tl.atomic_add(", src)
    return kernel_from_source(src, f"bwd_variant_{name}", "bwd_kernel"), flag


def main() -> None:
    print(f"triton {triton.__version__} {torch.cuda.get_device_name()}")
    q, kv, do, idx, lse, delta = inputs()
    only = os.environ.get("ONLY")
    ref = None
    for name in [only] if only else ["base", "noatomic", "fused", "fused_s2", "fused_s3", "fused_noatomic"]:
        fn, flag = variant(name)
        stages = int(name[-1]) if name[-3:-1] == "_s" else 1
        dkv = torch.zeros(1, SKV, 1, D + DT, device="cuda")
        dq = torch.full((1, S, H, D + DT), float("nan"), dtype=torch.bfloat16, device="cuda")
        extra = (0,) if flag else ()

        def run(fn=fn, dkv=dkv, dq=dq, extra=extra, stages=stages):
            fn[(S, 1, 1)](q, kv, do, idx, lse, delta, dkv, dq, *extra, num_warps=8, num_stages=stages)

        if first_calls(run, only, name):
            return
        err = float("nan")
        if not flag:
            got = (dkv.clone(), dq.float().clone())
            ref = ref or got
            err = max(((a - b).abs().max() / b.abs().max()).item() for a, b in zip(got, ref))
        ms = triton.testing.do_bench(run, warmup=25, rep=200)
        print(f"{name:<16} stages={stages} {ms * 1000:8.1f} us  rel diff vs base {err:.1e}", flush=True)


if __name__ == "__main__":
    main()
