"""examples/gemm_int4: the int4 x int4 -> int32 GEMM (C = A B^T, both operands packed two values a byte), at the
example's own size and at a larger square one."""

import os
import sys

import tilelang
import tilelang.testing
import torch

sys.path.insert(0, os.path.join(os.environ["TILELANG_EXAMPLES"], "gemm_int4"))
import example_tilelang_gemm_int4 as example  # noqa: E402

SMALL = {
    "run_gemm_int4": {"M": 200, "N": 136, "K": 320, "block_M": 64, "block_N": 64, "block_K": 64},
    "run_gemm_int4_large": {"M": 136, "N": 200, "K": 192, "block_M": 64, "block_N": 64, "block_K": 64},
}


def run_gemm_int4(M=1024, N=1024, K=1024, block_M=128, block_N=128, block_K=64, threads=128):
    _, kernel = example.compile_int4_gemm(M, N, K, block_M, block_N, block_K, threads, print_cuda_source=False)
    A = example.pack_int4(torch.randint(-8, 8, (M, K), device="cuda", dtype=torch.int8))
    B = example.pack_int4(torch.randint(-8, 8, (N, K), device="cuda", dtype=torch.int8))
    return tilelang.profiler.do_bench(lambda: kernel(A, B))


def run_gemm_int4_large(M=4096, N=4096, K=4096, **tiles):
    return run_gemm_int4(M, N, K, **tiles)


def regression_gemm_int4():
    tilelang.testing.process_func(run_gemm_int4)


def regression_gemm_int4_large():
    tilelang.testing.process_func(run_gemm_int4_large)
