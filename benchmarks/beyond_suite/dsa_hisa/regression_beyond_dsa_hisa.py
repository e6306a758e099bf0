"""examples/dsa_hisa (HISA indexer prefill, fp8): K block mean pooling, pool MQA logits over the pooled K, the
clean-and-maintain logits mask, and the block-sparse MQA logits over the selected blocks (two block sizes).
Skipped: hisa.py (no kernel of its own: it chains the four kernels here with torch.topk and index arithmetic)."""

import os
import sys

import tilelang
import tilelang.testing
import torch

sys.path.insert(0, os.path.join(os.environ["TILELANG_EXAMPLES"], "dsa_hisa"))
import block_sparse_mqa_fp8  # noqa: E402
import clean_and_maintain_logits  # noqa: E402
import fp8_block_mean_pooling  # noqa: E402
import pool_mqa_fp8  # noqa: E402
from tilelang_utils import prepare_ks_ke_from_cu_seqlens  # noqa: E402

FP8 = torch.float8_e4m3fn
SMALL = {
    "run_block_mean_pooling": {"N": 300},
    "run_pool_mqa": {"M": 256, "H": 16, "D": 64, "k_block_size": 4, "block_N": 64, "num_seqs": 2},
    # N: a multiple of block_K (the kernel does not mask a tail)
    "run_clean_and_maintain_logits": {"M": 70, "N": 256, "num_seqs": 2, "threads": 64, "block_K": 128},
    # causal=False: every query sees all of K, so no -inf (the causal mask writes -inf by design)
    "run_block_sparse_mqa": {"M": 160, "H": 16, "D": 64, "kv_block_size": 32, "topk": 3, "causal": False},
    "run_block_sparse_mqa_kv64": {"M": 160, "H": 16, "D": 64, "kv_block_size": 16, "topk": 5, "causal": False},
}


def _ks_ke(M, num_seqs):
    # num_seqs equal causal sequences packed into M rows, as the examples' tests: each query sees its prefix
    cu_seqlens = torch.arange(num_seqs + 1, device="cuda", dtype=torch.long) * (M // num_seqs)
    ks, ke = prepare_ks_ke_from_cu_seqlens(cu_seqlens)
    return ks.to(torch.int32).contiguous(), ke.to(torch.int32).contiguous()


def _fp8(*shape):
    return torch.randn(*shape, device="cuda", dtype=torch.bfloat16).to(FP8)


def _scale(n):
    return (0.1 + 0.01 * torch.rand(n, device="cuda", dtype=torch.float32)).contiguous()


def run_block_mean_pooling(N=131072, D=128, k_block_size=128):
    k, k_scale = _fp8(N, D), _scale(N)
    kernel = fp8_block_mean_pooling.fp8_native_block_mean_pooling.compile(
        k, k_scale, dim=D, pooling_block_size=k_block_size
    )
    return tilelang.profiler.do_bench(lambda: kernel(k, k_scale))


def run_pool_mqa(M=32768, H=64, D=128, k_block_size=128, block_N=256, num_seqs=1):
    # as pool_mqa_attn_return_logits_fp8_interface, with the zeroed logits allocated once
    n_blocked = (M + k_block_size - 1) // k_block_size
    assert n_blocked % block_N == 0, "the example requires ceildiv(M, k_block_size) % block_N == 0"
    ks, ke = _ks_ke(M, num_seqs)
    blocked_ks, blocked_ke = ks // k_block_size, (ke + k_block_size - 1) // k_block_size
    q, blocked_k, blocked_k_scale = _fp8(M * H, D), _fp8(n_blocked, D), _scale(n_blocked)
    weights = torch.randn(M, H, device="cuda", dtype=torch.float32)
    logits = torch.zeros(M, n_blocked, device="cuda", dtype=torch.float32)
    args = (q, blocked_k, blocked_k_scale, logits, weights, blocked_ks, blocked_ke)
    kernel = pool_mqa_fp8.pool_mqa_attn_return_logits_fp8.compile(*args, heads=H, index_dim=D, block_N=block_N)
    return tilelang.profiler.do_bench(lambda: (kernel(*args), logits)[1])


def run_clean_and_maintain_logits(M=16384, N=16384, num_seqs=1, threads=512, block_K=4096):
    # in place, a second call writes the same values; returns the bits (it writes only +-inf: compare exactly)
    ks, ke = _ks_ke(M, num_seqs)
    ke = ke.clamp(max=N)
    logits = torch.randn(M, N, device="cuda", dtype=torch.float32)
    kernel = clean_and_maintain_logits.clean_and_maintain_logits_.compile(
        logits, ks, ke, threads=threads, block_K=block_K
    )
    return tilelang.profiler.do_bench(lambda: (kernel(logits, ks, ke), logits.view(torch.int32))[1])


def run_block_sparse_mqa(M=4096, H=64, D=128, kv_block_size=128, topk=32, num_seqs=1, causal=True):
    # causal packed prefill (N = M); per query `topk` distinct random blocks, as the example's test
    num_k_blocks = (M + kv_block_size - 1) // kv_block_size
    ks, ke = _ks_ke(M, num_seqs)
    if not causal:
        ks, ke = torch.zeros_like(ks), torch.full_like(ke, M)
    q, k, k_scale = _fp8(M * H, D), _fp8(M, D), _scale(M)
    weights = torch.randn(M, H, device="cuda", dtype=torch.float32)
    topk_block_index = torch.rand(M, num_k_blocks, device="cuda").argsort(dim=1)[:, :topk].contiguous()
    args = (q, k, k_scale, topk_block_index, weights, ks, ke)
    kernel = block_sparse_mqa_fp8.fp8_native_block_sparse_mqa_attn_return_logits.compile(
        *args, heads=H, index_dim=D, kv_block_size=kv_block_size, topk=topk
    )
    return tilelang.profiler.do_bench(lambda: kernel(*args))


def run_block_sparse_mqa_kv64(M=4096, H=64, D=128, kv_block_size=64, topk=64, num_seqs=4, causal=True):
    """The example's other block-size configuration (smaller pool blocks, more of them, several sequences)."""
    return run_block_sparse_mqa(M, H, D, kv_block_size, topk, num_seqs, causal)


def regression_block_mean_pooling():
    tilelang.testing.process_func(run_block_mean_pooling)


def regression_pool_mqa():
    tilelang.testing.process_func(run_pool_mqa)


def regression_clean_and_maintain_logits():
    tilelang.testing.process_func(run_clean_and_maintain_logits)


def regression_block_sparse_mqa():
    tilelang.testing.process_func(run_block_sparse_mqa)


def regression_block_sparse_mqa_kv64():
    tilelang.testing.process_func(run_block_sparse_mqa_kv64)
