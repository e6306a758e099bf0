"""examples/deepseek_v4: block-wise FP8 and FP4 activation quantization, and the sm90 MQA sparse attention
forward (top-k gathered KV, attention sink).
Skipped: fp8_fp4_gemm_1d1d_sm100.py (needs sm_100: tcgen05)."""

import os
import sys

import tilelang
import tilelang.testing
import torch

sys.path.insert(0, os.path.join(os.environ["TILELANG_EXAMPLES"], "deepseek_v4"))
import act_quant  # noqa: E402
import sparse_attn_fwd_sm90  # noqa: E402

SMALL = {
    "run_fp8_act_quant": {"M": 70, "N": 384},
    "run_fp4_act_quant": {"M": 70, "N": 352},
    "run_sparse_attn_fwd": {"batch": 2, "heads": 16, "seq_len": 40, "seq_len_kv": 300, "dim": 64, "topk": 128},
}


def run_fp8_act_quant(M=8192, N=7168, block_size=128, round_scale=True):
    x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
    kernel = act_quant.fp8_quant_kernel.compile(x, block_size=block_size, round_scale=round_scale)
    return tilelang.profiler.do_bench(lambda: kernel(x))


def run_fp4_act_quant(M=8192, N=7168, block_size=32):
    x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
    kernel = act_quant.fp4_quant_kernel.compile(x, block_size=block_size)

    def call():  # the packed FP4 output as bytes: torch cannot convert float4_e2m1fn_x2 to compare it
        quant, scale = kernel(x)
        return quant.view(torch.uint8), scale

    return tilelang.profiler.do_bench(call)


def run_sparse_attn_fwd(batch=1, heads=128, seq_len=1024, seq_len_kv=8192, dim=512, topk=1024):
    kernel = sparse_attn_fwd_sm90.sparse_attn_fwd(batch, heads, seq_len, seq_len_kv, dim, topk)
    q = torch.randn(batch, seq_len, heads, dim, device="cuda", dtype=torch.bfloat16)
    kv = torch.randn(batch, seq_len_kv, dim, device="cuda", dtype=torch.bfloat16)
    sinks = torch.randn(heads, device="cuda", dtype=torch.bfloat16)
    idx = torch.randint(0, seq_len_kv, (batch, seq_len, topk), device="cuda", dtype=torch.int32)
    return tilelang.profiler.do_bench(lambda: kernel(q, kv, idx, sinks))


def regression_fp8_act_quant():
    tilelang.testing.process_func(run_fp8_act_quant)


def regression_fp4_act_quant():
    tilelang.testing.process_func(run_fp4_act_quant)


def regression_sparse_attn_fwd():
    tilelang.testing.process_func(run_sparse_attn_fwd)
