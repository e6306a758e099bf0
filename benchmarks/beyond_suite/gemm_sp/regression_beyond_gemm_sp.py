"""examples/gemm_sp: 2:4 structured-sparse fp16 GEMM (T.gemm_sp) with int16 or int8 (sm_90+) metadata, fp32 or fp16
accumulation; A is made and compressed by the example's own sparse_utils helpers."""

import os
import sys

import tilelang
import tilelang.language as T
import tilelang.testing
import torch

sys.path.insert(0, os.path.join(os.environ["TILELANG_EXAMPLES"], "gemm_sp"))
import example_gemm_sp  # noqa: E402
import sparse_utils  # noqa: E402

# M: a multiple of 16 (compress's row block), not of block_M; N: not a multiple of block_N; K: a multiple of
# block_K and of 32 (compress's columns)
SMALL_SP = {"M": 80, "N": 100, "K": 128, "block_M": 64, "block_N": 64, "block_K": 64}
SMALL = {
    "run_gemm_sp": SMALL_SP,
    "run_gemm_sp_main": SMALL_SP,
    "run_gemm_sp_e8": SMALL_SP,
    "run_gemm_sp_fp16_accum": SMALL_SP,
}


def run_gemm_sp(
    M=8192,
    N=8192,
    K=8192,
    accum_dtype=T.float,
    e_dtype=T.int16,
    block_M=128,
    block_N=256,
    block_K=128,
    num_stages=2,
    thread_num=256,
    enable_rasterization=True,
):
    # the example's command-line config; inputs as its main() makes them
    kernel = example_gemm_sp.matmul_sp_fp16(
        M, N, K, accum_dtype, e_dtype, block_M, block_N, block_K, num_stages, thread_num,
        T.GemmWarpPolicy.Square, enable_rasterization,
    )  # fmt: skip
    a = sparse_utils.randn_semi_sparse(M, K, device="cuda", dtype=torch.half)
    b = torch.randn(K, N, device="cuda", dtype=torch.half)
    a_sparse, e = sparse_utils.compress(a, meta_dtype=e_dtype.as_torch())
    return tilelang.profiler.do_bench(lambda: kernel(a_sparse, e, b))


def run_gemm_sp_main(**sizes):
    # main()'s tile config (128x128x64, 128 threads) at a larger size
    config = {"M": 4096, "N": 4096, "K": 4096, "block_N": 128, "block_K": 64, "thread_num": 128}
    return run_gemm_sp(**{**config, **sizes})


def run_gemm_sp_e8(**sizes):
    # int8 metadata (sm_90+ only, as the example's --e_dtype help says)
    return run_gemm_sp(**{"M": 4096, "N": 4096, "K": 4096, "e_dtype": T.int8, **sizes})


def run_gemm_sp_fp16_accum(**sizes):
    # --accum_dtype float16 (C in fp16); int32 metadata is not supported for fp16 A on sm_90 (wgmma_sp)
    return run_gemm_sp(**{"M": 4096, "N": 4096, "K": 4096, "accum_dtype": T.float16, **sizes})


def regression_gemm_sp():
    tilelang.testing.process_func(run_gemm_sp)


def regression_gemm_sp_main():
    tilelang.testing.process_func(run_gemm_sp_main)


def regression_gemm_sp_e8():
    tilelang.testing.process_func(run_gemm_sp_e8)


def regression_gemm_sp_fp16_accum():
    tilelang.testing.process_func(run_gemm_sp_fp16_accum)
