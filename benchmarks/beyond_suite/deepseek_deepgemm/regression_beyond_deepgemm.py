"""examples/deepseek_deepgemm: DeepGEMM's fp8 GEMM with per-token (A) and per-128-block (B) scales promoted into a
second float32 accumulator every K step ("2xAcc"), at the example's size and at a DeepSeek-V3 projection's
(K = 7168), with the example's column tiles of 128 and 64."""

import os
import sys

import tilelang
import tilelang.language as T
import tilelang.testing
import torch

sys.path.insert(0, os.path.join(os.environ["TILELANG_EXAMPLES"], "deepseek_deepgemm"))
import example_deepgemm_fp8_2xAcc as example  # noqa: E402

SMALL = {
    "run_deepgemm": {"M": 200, "N": 136, "K": 384},
    "run_deepgemm_n64": {"M": 136, "N": 200, "K": 256},
    "run_deepgemm_fp32_out": {"M": 72, "N": 136, "K": 256},
}


def _inputs(M, N, K):
    A_fp8, A_scale = example.per_token_cast_to_fp8(torch.randn(M, K, device="cuda").to(torch.bfloat16))
    B_fp8, B_scale = example.per_block_cast_to_fp8(torch.randn(N, K, device="cuda").to(torch.bfloat16))
    return A_fp8, B_fp8, A_scale, B_scale


def run_deepgemm(M=1024, N=1024, K=8192, block_N=128, out_dtype="bfloat16"):
    args = (*_inputs(M, N, K), block_N, T.float8_e4m3fn, getattr(T, out_dtype), T.float32)
    return tilelang.profiler.do_bench(lambda: example.tl_gemm(*args))


def run_deepgemm_n64(M=4096, N=4096, K=7168):
    return run_deepgemm(M, N, K, block_N=64)


def run_deepgemm_fp32_out(M=4096, N=7168, K=7168):
    return run_deepgemm(M, N, K, out_dtype="float32")


def regression_deepgemm():
    tilelang.testing.process_func(run_deepgemm)


def regression_deepgemm_n64():
    tilelang.testing.process_func(run_deepgemm_n64)


def regression_deepgemm_fp32_out():
    tilelang.testing.process_func(run_deepgemm_fp32_out)
