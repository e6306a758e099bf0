"""GPU probe (issue 23, session 46): the score gemm of TileLang's ``sparse_mla_fwd_pipelined`` split across
the two warpgroups, as TileLang's own kernel computes it, by passing P and the rescale through memory.

Triton (3.6, Hopper) gives a dot whose result reaches another dot ``warpsPerCTA [num_warps, 1]``: with 64
rows and 8 warps both warpgroups compute the whole ``S = Q K^T`` (session 37).  The chain runs through P
(the PV dot's operand), the rescale (``acc_o * alpha``, the PV dot's accumulator) and the three K-parts of S
(each dot the next one's accumulator).  ``MODE=1`` cuts all three: S as a sum of three dots (the second and
third with an accumulator Triton cannot fold to zero, so its combiner does not chain them again), P (bf16)
and alpha stored to a per-program global area of two slots, a CTA barrier as inline PTX (``bar.sync 0``:
the pipeliner skips loops with ``gpu.barrier``, and schedules an inline-asm op in the loop's last stage), and
both read back through inline-PTX loads (a ``tl.load`` feeding a dot would be prefetched an iteration
early by the pipeliner, before its store).  Offline (Triton 3.6, sm_90): all three S dots ``[4, 2]``, the
gathers still ``cp.async`` (8), 229,632 bytes of shared memory (221,440 as generated).

    PYTHONPATH=. python3 benchmarks/hand_variants/mla_round_trip.py

Prints each mode's median microseconds (do_bench, L2 flushed) and the max abs difference from MODE 0.
"""

import os
import sys

import torch
from triton.testing import do_bench

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mla_round_trip_kernel import mla_rt  # noqa: E402


def main() -> None:
    torch.manual_seed(0)
    S, SKV, H, topk, q_start = 256, 512, 64, 256, 1024
    q = (torch.randn(1, S, H, 576, device="cuda", dtype=torch.bfloat16) / 10).contiguous()
    kv = (torch.randn(1, SKV, 1, 576, device="cuda", dtype=torch.bfloat16) / 10).contiguous()
    idx = torch.stack([torch.randperm(SKV, device="cuda")[:topk] for _ in range(S)]).to(torch.int32).contiguous()
    qs = torch.tensor([q_start], dtype=torch.int32, device="cuda")
    area = torch.empty(S * 2 * 16640, dtype=torch.uint8, device="cuda")
    ref = None
    for mode in (0, 1):
        out = torch.full((1, S, H, 512), float("nan"), device="cuda", dtype=torch.bfloat16)

        def run(out=out, mode=mode):
            return mla_rt[(S,)](q, kv, idx, qs, out, area, S, SKV, topk, mode, num_warps=8)

        compiled = run()
        torch.cuda.synchronize()
        us = do_bench(run, rep=200) * 1000
        ref = out.float() if ref is None else ref
        diff = (out.float() - ref).abs().max().item()
        print(f"MODE {mode}: {us:.1f} us, max diff {diff:.3g}, regs {compiled.n_regs}, spills {compiled.n_spills}")


if __name__ == "__main__":
    main()
