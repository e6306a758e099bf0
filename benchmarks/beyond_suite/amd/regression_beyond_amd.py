"""examples/amd: the persistent flash-attention forward (each block walks query tiles in a `while` loop, grouped
heads) and its backward (dQ by atomic adds), written for MI300 but plain TileLang. Their `main`s autotune over
hundreds of configurations; here each runs one configuration that suits an H100/H200 (on Radeon cards the
examples ask for tiles of at most 32), at the example's default size. Sequence lengths stay multiples of the key
tile: the forward's non-causal loop does not mask a partial last tile."""

import os
import sys

import tilelang
import tilelang.testing
import torch

sys.path.insert(0, os.path.join(os.environ["TILELANG_EXAMPLES"], "amd"))
import example_amd_flash_attn_bwd as bwd_example  # noqa: E402
import example_amd_flash_attn_fwd as fwd_example  # noqa: E402

SMALL = {
    "run_amd_fwd": {"seq_len": 192, "heads": 4, "dim": 64},
    "run_amd_fwd_causal": {"seq_len": 200, "heads": 4, "dim": 64},
    "run_amd_bwd": {"seq_len": 192, "heads": 4, "dim": 64},
    "run_amd_bwd_causal": {"seq_len": 200, "heads": 4, "dim": 64},
}

FWD_CONFIG = {"block_M": 128, "block_N": 64, "num_split_q": 64, "threads": 256, "num_stages": 1, "enable_rasterization": True,
              "k_pack": 2, "panel_size": 7, "qk_coalesced_width": 8, "v_coalesced_width": 4}  # fmt: skip
BWD_CONFIG = {"block_M": 64, "block_N": 64, "threads": 128, "num_stages": 1, "enable_rasterization": True,
              "panel_size": 7}  # fmt: skip


def _inputs(batch, heads, seq_len, dim, groups):
    q = torch.randn(batch, seq_len, heads, dim, dtype=torch.float16, device="cuda")
    k = torch.randn(batch, seq_len, heads // groups, dim, dtype=torch.float16, device="cuda")
    v = torch.randn(batch, seq_len, heads // groups, dim, dtype=torch.float16, device="cuda")
    return q, k, v


def _forward(batch, heads, seq_len, dim, is_causal, groups, fwd_module):
    return fwd_module.fast_flashattn(batch, heads, seq_len, dim, is_causal, groups, **FWD_CONFIG)


def run_amd_fwd(batch=1, heads=8, seq_len=4096, dim=128, is_causal=False, groups=1):
    kernel = _forward(batch, heads, seq_len, dim, is_causal, groups, fwd_example)
    q, k, v = _inputs(batch, heads, seq_len, dim, groups)
    return tilelang.profiler.do_bench(lambda: kernel(q, k, v))


def run_amd_fwd_causal(batch=1, heads=8, seq_len=4096, dim=128, groups=1):
    return run_amd_fwd(batch, heads, seq_len, dim, True, groups)


def run_amd_bwd(batch=1, heads=8, seq_len=4096, dim=128, is_causal=False, groups=1):
    # the backward kernel alone (the example's timed part), on the forward's O and LSE; the accumulators zeroed
    # on each call, as the example's complete step does
    q, k, v = _inputs(batch, heads, seq_len, dim, groups)
    d_o = torch.randn_like(q)
    o, lse = _forward(batch, heads, seq_len, dim, is_causal, groups, bwd_example)(q, k, v)
    delta = bwd_example.flashattn_bwd_preprocess(batch, heads, seq_len, dim)(o, d_o)
    kernel = bwd_example.flashattn_bwd(batch, heads, seq_len, dim, is_causal, groups, **BWD_CONFIG)
    dq = torch.empty_like(q, dtype=torch.float32)
    dk = torch.empty_like(k, dtype=torch.float32)
    dv = torch.empty_like(v, dtype=torch.float32)

    def step():
        dq.zero_(), dk.zero_(), dv.zero_()
        kernel(q, k, v, d_o, lse, delta, dq, dk, dv)
        return dq, dk, dv

    return tilelang.profiler.do_bench(step)


def run_amd_bwd_causal(batch=1, heads=8, seq_len=4096, dim=128, groups=1):
    return run_amd_bwd(batch, heads, seq_len, dim, True, groups)


def regression_amd_fwd():
    tilelang.testing.process_func(run_amd_fwd)


def regression_amd_fwd_causal():
    tilelang.testing.process_func(run_amd_fwd_causal)


def regression_amd_bwd():
    tilelang.testing.process_func(run_amd_bwd)


def regression_amd_bwd_causal():
    tilelang.testing.process_func(run_amd_bwd_causal)
