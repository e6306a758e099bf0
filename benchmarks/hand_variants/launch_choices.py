"""GPU probe (issue 23, session 38, not yet run: no device was lent after it was written): two TileLang
examples at the shapes where the second variant set found them slowest, through tile2triton with every
launch choice forced in turn (num_warps 4 / 8, num_stages 1-4, Triton's warp specialization at 4 warps),
against the runtime's own choice ("default"): median microseconds (do_bench, L2 flushed) and the largest
difference of the outputs from the default's.

- ``bwd_bshd``: example_mha_bwd_bshd's ``flashattn_bwd``, causal, head dim 64, 2 x 8 x 1024 (session 38's
  H100 run: kernel 0.0371 ms against TileLang's 0.0280, 0.76x; at the suite's non-causal shape 0.91x);
- ``sink_window``: example_mha_sink_fwd_bhsd's ``flashattn``, bfloat16, head dim 64, window 256,
  1 x 40 x 1024 (0.85x in session 34's H200 run; 255 registers a thread at 8 warps offline, Triton 3.6).

Whether a launch choice closes either gap says if the cost model (runtime/tuning.py) or the code is the
cause.  The backward's suspect, from arithmetic only: its grid is 8 heads x 16 row blocks x 2, block ``by``
loops 16 - by times, and tile2triton's kernel (4 warps, 228 registers a thread and 83 KB of shared memory
offline on Triton 3.6) fits two blocks an SM, so all 256 blocks are resident at once and an SM holding two
16-iteration blocks sets the time; TileLang's (a TMA producer warpgroup beside one consumer warpgroup that
takes 240 registers, 256 threads, 59 KB; ``tools/tilelang_cuda_source.py``) runs one block an SM, whose
hardware queue hands the short blocks' SMs the second batch's long ones (about 17 iterations an SM).
``w8`` (one block an SM by registers) tests that.  From the project root, with TileLang's examples (``.tl``: tools/carry_tilelang.sh):

    PYTHONPATH=. python3 benchmarks/hand_variants/launch_choices.py .tlx/examples bwd_bshd
"""

import importlib
import os
import sys

import torch
from triton.testing import do_bench

from tile2triton.cli import install_tilelang_alias
from tile2triton.runtime import tuning

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from variant_tools import fresh  # noqa: E402

CHOICES = [None] + [
    tuning.LaunchChoice(w, s, ws) for w in (4, 8) for s in (1, 2, 3, 4) for ws in (False, True) if not (ws and w == 8)
]


def bwd_bshd(root: str):
    """(the example's jit factory, a kernel maker, a call, the outputs a call leaves) for the causal backward."""
    sys.path.insert(0, os.path.join(root, "flash_attention"))
    ex = importlib.import_module("example_mha_bwd_bshd")
    from bwd_causal_variants import BLOCK, B, D, H, N, inputs  # the same shape and inputs as its text edits

    q, k, v, do, lse, delta, dq, dk, dv = inputs()
    make = lambda: ex.flashattn_bwd(B, H, N, D, True, BLOCK, BLOCK)  # noqa: E731
    call = lambda kern: kern(q, k, v, do, lse, delta, dq, dk, dv)  # noqa: E731
    return ex.flashattn_bwd, make, call, lambda result: (dk.float(), dv.float())


def sink_window(root: str):
    """The same for the attention-sink forward with a sliding window."""
    sys.path.insert(0, os.path.join(root, "attention_sink"))
    ex = importlib.import_module("example_mha_sink_fwd_bhsd")
    B, H, N, D = 1, 40, 1024, 64
    q = torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16)
    k, v = torch.randn_like(q), torch.randn_like(q)
    sinks = torch.randn(H, device="cuda", dtype=torch.bfloat16)
    kw = dict(block_M=128, block_N=128, num_stages=2, threads=256, dtype="bfloat16")
    make = lambda: ex.flashattn(B, H, N, N, D, 256, **kw)  # noqa: E731
    return ex.flashattn, make, lambda kern: kern(q, k, v, sinks), lambda result: (result.float(),)


def main(root: str, case: str) -> None:
    install_tilelang_alias()
    torch.manual_seed(0)
    jit, make, call, outputs = {"bwd_bshd": bwd_bshd, "sink_window": sink_window}[case](root)
    heuristic, ref = tuning.heuristic, None
    for choice in CHOICES:
        tuning.heuristic = lambda func, target, c=choice: heuristic(func, target) if c is None else c
        label = "default" if choice is None else choice.label()
        try:
            fresh(jit)
            kern = make()
            out = [x.clone() for x in outputs(call(kern))]
            torch.cuda.synchronize()
            ref = ref or out
            taken = kern.launch_choice.label() if kern.launch_choice is not None else "?"
            err = max((a - b).abs().max().item() for a, b in zip(out, ref))
            us = do_bench(lambda: call(kern), warmup=25, rep=200) * 1000
            print(f"{label:12s} {us:8.2f} us  err {err:.2e}  ran {taken}", flush=True)
        except Exception as e:  # a choice that does not compile or fit
            print(f"{label:12s} failed: {type(e).__name__}: {str(e)[:150]}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
