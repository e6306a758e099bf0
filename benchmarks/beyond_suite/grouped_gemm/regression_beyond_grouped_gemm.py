"""examples/grouped_gemm: grouped (MoE) GEMM forward over concatenated groups, the backward example's forward
(TMA and warp specialization off) and its dB kernel, and the forward over per-group pointer tables."""

import os
import sys

import tilelang
import tilelang.testing
import torch

sys.path.insert(0, os.path.join(os.environ["TILELANG_EXAMPLES"], "grouped_gemm"))
import example_grouped_gemm_bwd  # noqa: E402
import example_grouped_gemm_fwd  # noqa: E402
import example_grouped_gemm_fwd_ptr  # noqa: E402

# per-expert row counts of an 8-expert MoE layer (not multiples of the tile: the kernels mask the tails)
GROUPS = (1100, 900, 1500, 700, 1300, 1000, 1700, 800)
# the dB kernel masks a group's rows by `i < batch_sizes[bz]` (right for a group < block_K, as in the example's
# test), not its last partial block: groups are multiples of block_K here
GROUPS_BWD = (1024, 896, 1536, 640, 1280, 960, 1728, 832)
SMALL_FWD = {"batch_sizes": (37, 70, 100), "K": 64, "N": 96, "block_M": 64, "block_N": 64, "block_K": 32}
SMALL = {
    "run_grouped_gemm": SMALL_FWD,
    "run_grouped_gemm_nt": SMALL_FWD,
    "run_grouped_gemm_fwd_no_tma": SMALL_FWD,
    "run_grouped_gemm_bwd": {**SMALL_FWD, "batch_sizes": (20, 64, 96)},
    "run_grouped_gemm_ptr": SMALL_FWD,
}


def run_grouped_gemm(
    batch_sizes=GROUPS, K=4096, N=4096, block_M=64, block_N=128, block_K=64, trans_b=False, num_stages=2, threads=256
):
    A, B, batch_sizes_t, offsets, padded_offsets = example_grouped_gemm_fwd.construct_inputs(
        list(batch_sizes), K, N, trans_b, block_M, torch.device("cuda"), torch.float16
    )
    args = (A, B, batch_sizes_t, offsets, padded_offsets, tuple(batch_sizes), block_M, block_N, block_K, trans_b)
    return tilelang.profiler.do_bench(lambda: example_grouped_gemm_fwd.grouped_gemm(*args, num_stages, threads))


def run_grouped_gemm_nt(**sizes):
    return run_grouped_gemm(**{"trans_b": True, **sizes})


def run_grouped_gemm_fwd_no_tma(
    batch_sizes=GROUPS, K=4096, N=4096, block_M=64, block_N=128, block_K=64, num_stages=2, threads=256
):
    A, B, _, batch_sizes_t, offsets, padded_offsets = example_grouped_gemm_bwd.construct_inputs(
        list(batch_sizes), K, N, False, block_M, torch.device("cuda"), torch.float16
    )
    args = (A, B, batch_sizes_t, offsets, padded_offsets, block_M, block_N, block_K, num_stages, threads)
    return tilelang.profiler.do_bench(lambda: example_grouped_gemm_bwd.grouped_gemm_fwd(*args))


def run_grouped_gemm_bwd(
    batch_sizes=GROUPS_BWD, K=4096, N=4096, block_M=64, block_N=128, block_K=64, num_stages=2, threads=256
):
    # dB[g] = A[group g].T @ dO[group g], as _GroupedGEMM.backward calls it
    A, _, _, batch_sizes_t, offsets, _ = example_grouped_gemm_bwd.construct_inputs(
        list(batch_sizes), K, N, False, block_M, torch.device("cuda"), torch.float16
    )
    dO = torch.randn(sum(batch_sizes), N, device="cuda", dtype=torch.float16)
    args = (A, dO, batch_sizes_t, offsets, block_M, block_N, block_K, num_stages, threads)
    return tilelang.profiler.do_bench(lambda: example_grouped_gemm_bwd.grouped_gemm_bwd(*args))


def run_grouped_gemm_ptr(batch_sizes=GROUPS, K=4096, N=4096, block_M=64, block_N=128, block_K=64, threads=256):
    example = example_grouped_gemm_fwd_ptr
    program = example.grouped_gemm_ptr(list(batch_sizes), K, N, block_M, block_N, block_K, 1, threads)
    kernel = tilelang.compile(
        program, target="cuda", execution_backend="auto", pass_configs={"tl.disable_warp_specialized": True}
    )
    # a_list and b_list stay named (alive) while timed: the kernel reads them through the pointer tables only
    a_list, b_list, c_list, a_ptrs, b_ptrs, c_ptrs, tile_offsets = example.construct_inputs(
        list(batch_sizes), K, N, block_M, torch.device("cuda"), torch.float16
    )

    def call():
        kernel(a_ptrs, b_ptrs, c_ptrs, tile_offsets)
        return [c[:size] for c, size in zip(c_list, batch_sizes)]  # the rows past a group's size are not written

    return tilelang.profiler.do_bench(call)


def regression_grouped_gemm():
    tilelang.testing.process_func(run_grouped_gemm)


def regression_grouped_gemm_nt():
    tilelang.testing.process_func(run_grouped_gemm_nt)


def regression_grouped_gemm_fwd_no_tma():
    tilelang.testing.process_func(run_grouped_gemm_fwd_no_tma)


def regression_grouped_gemm_bwd():
    tilelang.testing.process_func(run_grouped_gemm_bwd)


def regression_grouped_gemm_ptr():
    tilelang.testing.process_func(run_grouped_gemm_ptr)
