"""examples/topk: MoE-gate top-k (values and indices of each row's k largest logits, row block in registers)."""

import os
import sys

import tilelang
import tilelang.testing
import torch

sys.path.insert(0, os.path.join(os.environ["TILELANG_EXAMPLES"], "topk"))
import example_topk  # noqa: E402

SMALL = {"run_topk": {"M": 100, "N": 96, "topk": 6, "blk_m": 32}}


def run_topk(M=16384, N=128, topk=6, blk_m=64):
    logits = torch.rand((M, N), device="cuda", dtype=torch.float32)
    # blk_m given: the autotuner skips tuning and builds this config (threads=128), as the example's main does
    return tilelang.profiler.do_bench(lambda: example_topk.tl_topk(logits, topk, blk_m=blk_m))


def regression_topk():
    tilelang.testing.process_func(run_topk)
