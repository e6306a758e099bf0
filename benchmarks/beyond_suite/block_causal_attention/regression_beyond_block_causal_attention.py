"""examples/block_causal_attention: dLLM block-causal attention (noisy|clean halves), forward and backward
(delta preprocess, dQ, dK/dV), fixed-length and varlen."""

import itertools
import os
import sys

import tilelang
import tilelang.testing
import torch

sys.path.insert(0, os.path.join(os.environ["TILELANG_EXAMPLES"], "block_causal_attention"))
import block_causal_attention as bca  # noqa: E402
import block_causal_attention_varlen as bcav  # noqa: E402

SMALL = {
    "run_block_causal_fwd": {"batch": 2, "seq_len": 256, "heads": 2, "dim": 64, "dllm_block": 16},
    "run_block_causal_bwd": {"batch": 2, "seq_len": 256, "heads": 2, "dim": 64, "dllm_block": 16},
    "run_block_causal_varlen_fwd": {"lengths": (128, 256, 384), "heads": 2, "dim": 64, "dllm_block": 8},
    "run_block_causal_varlen_bwd": {"lengths": (128, 256, 384), "heads": 2, "dim": 64, "dllm_block": 8},
}


def _qkv(*shape):
    return (torch.randn(*shape, device="cuda", dtype=torch.bfloat16) for _ in range(4))


def run_block_causal_fwd(batch=1, seq_len=4096, heads=32, dim=128, dllm_block=32):
    fwd = bca._fwd_template(batch, heads, seq_len, dim, dllm_block, dim**-0.5)
    q, k, v, _ = _qkv(batch, seq_len, heads, dim)
    return tilelang.profiler.do_bench(lambda: fwd(q, k, v))


def run_block_causal_bwd(batch=1, seq_len=4096, heads=32, dim=128, dllm_block=32):
    scale = dim**-0.5
    q, k, v, do = _qkv(batch, seq_len, heads, dim)
    o, lse = bca._fwd_template(batch, heads, seq_len, dim, dllm_block, scale)(q, k, v)
    prep = bca._bwd_preprocess_template(batch, heads, seq_len, dim)
    dq_kernel = bca._bwd_dq_template(batch, heads, seq_len, dim, dllm_block, scale)
    dkv_kernel = bca._bwd_dkv_template(batch, heads, seq_len, dim, dllm_block, scale)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)

    def bwd():  # as _BlockCausalAttentionTL.backward
        delta = prep(o, do)
        dq_kernel(q, k, v, do, lse, delta, dq)
        dkv_kernel(q, k, v, do, lse, delta, dk, dv)
        return delta, dq, dk, dv

    return tilelang.profiler.do_bench(bwd)


def _varlen_inputs(lengths, heads, dim):
    cu = torch.tensor([0, *itertools.accumulate(lengths)], device="cuda", dtype=torch.int32)
    return cu, max(lengths), *_qkv(sum(lengths), heads, dim)


def run_block_causal_varlen_fwd(lengths=(4096, 2048, 1024, 1024), heads=32, dim=128, dllm_block=32, block_size=64):
    cu, max_seqlen, q, k, v, _ = _varlen_inputs(lengths, heads, dim)
    threads = min(128, 2 * block_size)
    fwd = bcav._fwd_varlen_template(
        len(lengths), heads, dim, dllm_block, dim**-0.5, block_size=block_size, threads=threads
    )
    o = torch.empty_like(q)
    lse = torch.empty(heads, q.shape[0], device="cuda", dtype=torch.float32)

    def call():
        fwd(q, k, v, cu, max_seqlen, o, lse)
        return o, lse

    return tilelang.profiler.do_bench(call)


def run_block_causal_varlen_bwd(lengths=(4096, 2048, 1024, 1024), heads=32, dim=128, dllm_block=32, block_size=64):
    cu, max_seqlen, q, k, v, do = _varlen_inputs(lengths, heads, dim)
    batch, scale, threads = len(lengths), dim**-0.5, min(128, 2 * block_size)
    fwd = bcav._fwd_varlen_template(batch, heads, dim, dllm_block, scale, block_size=block_size, threads=threads)
    o = torch.empty_like(q)
    lse = torch.empty(heads, q.shape[0], device="cuda", dtype=torch.float32)
    fwd(q, k, v, cu, max_seqlen, o, lse)
    prep = bcav._bwd_preprocess_varlen_template(heads, dim, block_size=block_size, threads=threads)
    dq_kernel = bcav._bwd_dq_varlen_template(
        batch, heads, dim, dllm_block, scale, block_size=block_size, threads=threads
    )
    dkv_kernel = bcav._bwd_dkv_varlen_template(
        batch, heads, dim, dllm_block, scale, block_size=block_size, threads=threads, num_stages=1
    )
    delta = torch.empty_like(lse)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)

    def bwd():  # as _BlockCausalAttentionVarlenTL.backward
        prep(o, do, delta)
        dq_kernel(q, k, v, do, cu, max_seqlen, lse, delta, dq)
        dkv_kernel(q, k, v, do, cu, max_seqlen, lse, delta, dk, dv)
        return delta, dq, dk, dv

    return tilelang.profiler.do_bench(bwd)


def regression_block_causal_fwd():
    tilelang.testing.process_func(run_block_causal_fwd)


def regression_block_causal_bwd():
    tilelang.testing.process_func(run_block_causal_bwd)


def regression_block_causal_varlen_fwd():
    tilelang.testing.process_func(run_block_causal_varlen_fwd)


def regression_block_causal_varlen_bwd():
    tilelang.testing.process_func(run_block_causal_varlen_bwd)
