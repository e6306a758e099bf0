"""examples/gemm_streamk: the stream-K GEMM (C = A B^T; a first wave of programs each takes an equal share of the
K iterations of the leftover tiles, adding partial tiles with atomics, then whole tiles), at the example's size on
its 108 programs, and at a larger one on the card's SMs.  The example's kernel reads its schedule from module
globals, so ``_schedule`` sets them as the module computes them at import, for the size and program count given."""

import os
import sys

import tilelang
import tilelang.language as T
import tilelang.testing
import torch

sys.path.insert(0, os.path.join(os.environ["TILELANG_EXAMPLES"], "gemm_streamk"))
import example_tilelang_gemm_streamk as example  # noqa: E402

SMALL = {
    "run_gemm_streamk": {"M": 96, "N": 384, "K": 160, "programs": 7},
    "run_gemm_streamk_large": {"M": 112, "N": 256, "K": 224, "programs": 5},
}


def _schedule(M, N, K, programs):
    """The example's module-level schedule (its lines 33-56) for an M x N x K product on ``programs`` programs."""
    ex = example
    iters_per_tile = tilelang.cdiv(K, ex.BLOCK_SIZE_K)
    total_tiles = tilelang.cdiv(M, ex.BLOCK_SIZE_M) * tilelang.cdiv(N, ex.BLOCK_SIZE_N)
    streamk_tiles = total_tiles % programs
    if total_tiles - streamk_tiles > programs:
        streamk_tiles += programs
    streamk_iters = streamk_tiles * iters_per_tile
    ex.total_sm = ex.streamk_programs = programs
    ex.iters_per_tile, ex.streamk_tiles = iters_per_tile, streamk_tiles
    ex.streamk_full_tiles, ex.streamk_partial_tiles = divmod(streamk_iters, programs)
    ex.sm_patition_factor = max((total_tiles - streamk_tiles) // programs, 1)
    return streamk_tiles


def run_gemm_streamk(M=256, N=1024, K=512, programs=108):
    streamk_tiles = _schedule(M, N, K, programs)
    A = torch.rand(M, K, device="cuda", dtype=torch.float16) * 2 - 1
    B = torch.rand(N, K, device="cuda", dtype=torch.float16) * 2 - 1
    C = torch.zeros(M, N, device="cuda", dtype=torch.float32)
    ex = example
    args = (streamk_tiles, ex.BLOCK_SIZE_M, ex.BLOCK_SIZE_N, ex.BLOCK_SIZE_K, False, True)

    def call():
        C.zero_()  # the partial tiles add into C
        ex.tl_matmul_streamk(A, B, C, *args, T.float16, T.float32, T.float32, 2, 64)
        return C

    return tilelang.profiler.do_bench(call)


def run_gemm_streamk_large(M=2048, N=4096, K=2048, programs=None):
    return run_gemm_streamk(M, N, K, programs or torch.cuda.get_device_properties(0).multi_processor_count)


def regression_gemm_streamk():
    tilelang.testing.process_func(run_gemm_streamk)


def regression_gemm_streamk_large():
    tilelang.testing.process_func(run_gemm_streamk_large)
