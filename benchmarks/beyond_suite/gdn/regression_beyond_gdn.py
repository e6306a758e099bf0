"""examples/gdn (gated delta net, chunk 64): forward chunk_delta_h, chunk_o, chunk_scaled_dot_kkt, cumsum, wy_fast;
backward chunk_delta_bwd (dhu), chunk_o_bwd (dqkwg), wy_fast_bwd and its split second kernel."""

import os
import sys

import tilelang
import tilelang.language as T
import tilelang.testing
import torch

sys.path.insert(0, os.path.join(os.environ["TILELANG_EXAMPLES"], "gdn"))
import example_chunk_delta_bwd  # noqa: E402
import example_chunk_delta_h  # noqa: E402
import example_chunk_o  # noqa: E402
import example_chunk_o_bwd  # noqa: E402
import example_chunk_scaled_dot_kkt  # noqa: E402
import example_cumsum  # noqa: E402
import example_wy_fast  # noqa: E402
import example_wy_fast_bwd_split  # noqa: E402

BF16, F32 = T.bfloat16, T.float32
FWD_DTYPES = (torch.bfloat16, torch.bfloat16, torch.float32, torch.float32)  # input, output, accum, gate
BWD_DTYPES = (*FWD_DTYPES, torch.float32)  # and state
SIZES = {"B": 2, "S": 128, "H": 3, "DK": 64, "DV": 80}
SMALL = {
    "run_chunk_delta_h": SIZES,
    "run_chunk_o": {**SIZES, "DK": 96},
    "run_chunk_scaled_dot_kkt": {"B": 2, "S": 128, "H": 3, "DK": 96},
    "run_cumsum": {"B": 2, "S": 200, "H": 3},
    "run_wy_fast": {**SIZES, "DK": 96},
    "run_chunk_delta_bwd": SIZES,
    "run_chunk_o_bwd": {**SIZES, "DK": 96},
    "run_wy_fast_bwd": {**SIZES, "DK": 80, "DV": 48},
    "run_wy_fast_bwd_split": {**SIZES, "DK": 80, "DV": 48},
}


def run_chunk_delta_h(B=1, S=8192, H=32, DK=128, DV=128):
    # autotuned factory: passing the kernel config (main()'s) skips the tuning
    kernel = example_chunk_delta_h.tilelang_chunk_gated_delta_rule_fwd_h(
        B, S, H, DK, DV, BF16, BF16, F32, F32, F32, 64, True, False, True, True,
        block_DK=32, block_DV=32, threads=128, num_stages=2,
    )  # fmt: skip
    K, W, U, G, h0 = example_chunk_delta_h.prepare_input(B, S, H, DK, DV, 64, *FWD_DTYPES)
    return tilelang.profiler.do_bench(lambda: kernel(K, W, U, G, h0))


def run_chunk_o(B=1, S=8192, H=32, DK=128, DV=128):
    kernel = example_chunk_o.tilelang_chunk_fwd_o(
        B, S, H, DK, DV, BF16, BF16, F32, F32, 64, DK**-0.5, True, 64, 128, 128, 128, 1
    )
    Q, K, V, HIDDEN, G = example_chunk_o.prepare_input(B, S, H, DK, DV, 64, *FWD_DTYPES)
    return tilelang.profiler.do_bench(lambda: kernel(Q, K, V, HIDDEN, G))


def run_chunk_scaled_dot_kkt(B=1, S=8192, H=32, DK=128):
    kernel = example_chunk_scaled_dot_kkt.tilelang_chunk_scaled_dot_kkt_fwd(
        B, S, H, DK, 64, BF16, BF16, F32, True, 64, 64, 128, 2
    )
    K, Beta, G = example_chunk_scaled_dot_kkt.prepare_input(B, S, H, DK, *FWD_DTYPES[:3])
    return tilelang.profiler.do_bench(lambda: kernel(K, Beta, G))


def run_cumsum(B=1, S=32768, H=32):
    kernel = example_cumsum.tilelang_chunk_local_cumsum_scalar(
        B=B, S=S, H=H, chunk_size=64, reverse=True, head_first=False, input_dtype=F32, output_dtype=F32,
        block_S=64, threads=256, use_fragment=False,
    )  # fmt: skip
    G = example_cumsum.prepare_cumsum_input(B, S, H, torch.float32)
    return tilelang.profiler.do_bench(lambda: kernel(G))


def run_wy_fast(B=1, S=8192, H=32, DK=128, DV=128):
    kernel = example_wy_fast.tilelang_recompute_w_u_fwd(
        B, S, H, DK, DV, BF16, BF16, F32, F32, 64, block_S=64, block_DK=64, block_DV=32, threads=128, num_stages=3
    )
    K, V, Beta, G, A = example_wy_fast.prepare_input(B, S, H, DK, DV, 64, *FWD_DTYPES[:2], gate_dtype=torch.float32)
    return tilelang.profiler.do_bench(lambda: kernel(K, V, Beta, G, A))


def run_chunk_delta_bwd(B=1, S=8192, H=8, DK=128, DV=128):
    kernel = example_chunk_delta_bwd.tilelang_chunk_gated_delta_rule_bwd_dhu(
        B, S, H, DK, DV, BF16, BF16, F32, F32, F32, 64, DK**-0.5, True, True, True, 32, 128, 1
    )
    Q, K, W, G, h0, dht, dO, dv = example_chunk_delta_bwd.prepare_input(B, S, H, DK, DV, 64, *BWD_DTYPES)
    return tilelang.profiler.do_bench(lambda: kernel(Q, K, W, G, h0, dht, dO, dv))


def run_chunk_o_bwd(B=1, S=8192, H=8, DK=128, DV=128):
    kernel = example_chunk_o_bwd.tilelang_chunk_o_bwd_dqkwg(
        B, S, H, DK, DV, BF16, BF16, F32, F32, F32, 64, DK**-0.5, True, True, 64, 64, 128, 0
    )
    Q, K, V, h, G, dO, dh, dv, W = example_chunk_o_bwd.prepare_input(B, S, H, DK, DV, 64, *BWD_DTYPES)
    return tilelang.profiler.do_bench(lambda: kernel(Q, K, V, h, G, dO, dh, dv, W))


def run_wy_fast_bwd(B=1, S=8192, H=8, DK=128, DV=128):
    kernel = example_wy_fast_bwd_split.tilelang_wy_fast_bwd(
        B, S, H, DK, DV, BF16, BF16, F32, F32, F32, 64, 32, 32, 128, 0
    )
    K, V, Beta, G, A, dw, du = example_wy_fast_bwd_split.prepare_input(B, S, H, DK, DV, 64, *BWD_DTYPES)
    return tilelang.profiler.do_bench(lambda: kernel(K, V, Beta, G, A, dw, du))


def run_wy_fast_bwd_split(B=1, S=8192, H=8, DK=128, DV=128):
    """The second kernel: reads the first's dA and dk (random here) and updates dk in place."""
    kernel = example_wy_fast_bwd_split.tilelang_wy_fast_bwd_split(
        B, S, H, DK, DV, BF16, BF16, F32, F32, F32, 64, 32, 32, 128, 0
    )
    K, V, Beta, G, A, dw, du = example_wy_fast_bwd_split.prepare_input(B, S, H, DK, DV, 64, *BWD_DTYPES)
    dA, dk = (torch.randn(B, S, H, n, dtype=torch.bfloat16, device="cuda") for n in (64, DK))
    dv = torch.empty(B, S, H, DV, dtype=torch.bfloat16, device="cuda")  # written by the first kernel, unused here
    dbeta_k = torch.empty(B, S, H, dtype=torch.bfloat16, device="cuda")
    dg_pos, dg_neg = (torch.empty(B, S, H, 64, device="cuda") for _ in range(2))

    def fn():
        kernel(K, V, Beta, G, A, dw, du, dA, dk, dv, dbeta_k, dg_pos, dg_neg)
        return dk, dbeta_k, dg_pos, dg_neg

    return tilelang.profiler.do_bench(fn)


def regression_chunk_delta_h():
    tilelang.testing.process_func(run_chunk_delta_h)


def regression_chunk_o():
    tilelang.testing.process_func(run_chunk_o)


def regression_chunk_scaled_dot_kkt():
    tilelang.testing.process_func(run_chunk_scaled_dot_kkt)


def regression_cumsum():
    tilelang.testing.process_func(run_cumsum)


def regression_wy_fast():
    tilelang.testing.process_func(run_wy_fast)


def regression_chunk_delta_bwd():
    tilelang.testing.process_func(run_chunk_delta_bwd)


def regression_chunk_o_bwd():
    tilelang.testing.process_func(run_chunk_o_bwd)


def regression_wy_fast_bwd():
    tilelang.testing.process_func(run_wy_fast_bwd)


def regression_wy_fast_bwd_split():
    tilelang.testing.process_func(run_wy_fast_bwd_split)
