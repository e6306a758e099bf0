"""GPU probe (issue 23, session 25, sparse MLA backward): gemms that share an operand, issued side by side.

Offline (Triton 3.6, sm_90, ptxas -v and nvdisasm of the generated backward at the suite's shape): the
loop's spills are the 64-bit wgmma descriptors of ``KV_shared``.  ``S = Q KV^T`` and ``dP = dO KV^T``
read the same shared tile in the same 32 K steps; LLVM computes each K step's descriptor once (CSE) and
keeps all 32 (64 registers) live from the first gemm to the second, beside 144 registers of dQ
accumulators, so ptxas spills them (83 LDL, 71 STL an iteration).  Moving the second gemm next to the
first does not help (63 LDL): one gemm still holds all 32.  Splitting the 512 head dims into column
chunks and issuing the two gemms chunk by chunk (``S += Q_c KV_c^T; dP += dO_c KV_c^T``) keeps one
chunk's descriptors live: 0 spills at 4 chunks (243 registers), 1377 instructions a loop iteration
against 1919.

Kernels (benchmarks/mlabwd_chunks_probe.py's hand-written chunked backward, LICM off in the loop as
the generated code has it): ``chunks N`` (S's gemms, then dP's), ``interleaved N`` (side by side), at
1-3 pipeline stages; next to the generated kernel (``t2t default``).  do_bench medians, outputs against
a float32 torch reference.

    PYTHONPATH=. python3 benchmarks/mlabwd_interleave_probe.py
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
import triton  # noqa: E402
from mlabwd_chunks_probe import chunked_case, chunked_source, load_kernel, run_plan  # noqa: E402
from mlabwd_probe import inputs, t2t_case  # noqa: E402


def variant_source(nc: int, interleaved: bool) -> str:
    src = chunked_source(nc).replace("tl.range(0, TOPK, BS)", "tl.range(0, TOPK, BS, disable_licm=True)")
    if not interleaved:
        return src
    lines = src.split("\n")
    dp = [line for line in lines if re.search(r"dp = tl\.dot\(do\d", line)]
    out = []
    for line in lines:
        if line in dp:
            continue
        out.append(line)
        m = re.search(r"p = tl\.dot\(q(\d+),", line)
        if m:
            out += [x for x in dp if f"tl.dot(do{m.group(1)}," in x]
    return "\n".join(out)


def case(S, SKV, topk, x, nc, interleaved, stages):
    source = variant_source(nc, interleaved)
    kernel = load_kernel(f"mlabwd_il_{nc}_{int(interleaved)}", source)
    return chunked_case(S, SKV, topk, x, nc, stages=stages, kernel=kernel)


def main() -> None:
    t0 = time.time()
    print(f"triton {triton.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"{'size':<22} {'variant':<24} {'ms':>8} {'max rel err':>12}  note")
    for size in [(256, 512, 256), (512, 2048, 512), (384, 1024, 384)]:
        x = inputs(*size)
        label = "S={} SKV={} k={}".format(*size)
        plan = [("t2t default", lambda: t2t_case(*size, x, {}))]
        for nc, il in [(4, False), (2, True), (4, True), (8, True)]:
            for st in (1, 2, 3):
                name = f"{'interleaved' if il else 'chunks'} {nc}, {st} st"
                plan.append((name, lambda nc=nc, il=il, st=st: case(*size, x, nc, il, st)))
        run_plan(label, plan, width=24)
    print(f"total {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
