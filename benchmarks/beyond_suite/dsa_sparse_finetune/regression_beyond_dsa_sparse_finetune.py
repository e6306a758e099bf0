"""examples/dsa_sparse_finetune: DeepSeek sparse attention training kernels (varlen): sparse MLA forward and
backward, its top-k score reduce-sum, the lightning indexer's top-k + reduce-sum (bitonic sort) and its backward."""

import os
import sys

import tilelang
import tilelang.testing
import torch

sys.path.insert(0, os.path.join(os.environ["TILELANG_EXAMPLES"], "dsa_sparse_finetune"))
import index  # noqa: E402
import indexer_bwd  # noqa: E402
import indexer_topk_reducesum  # noqa: E402
import sparse_mla_bwd  # noqa: E402
import sparse_mla_fwd  # noqa: E402
import sparse_mla_topk_reducesum  # noqa: E402

_MLA = {"S": 150, "H": 16, "topk": 64, "dim": 64, "tail_dim": 32}
SMALL = {
    "run_sparse_mla_fwd": {**_MLA, "S": 270, "topk": 128},
    "run_sparse_mla_bwd": _MLA,
    "run_sparse_mla_topk_reducesum": _MLA,
    "run_indexer_topk_reducesum": {"S": 280, "H": 8, "D": 64, "topk": 64},
    "run_indexer_bwd": {"S": 280, "H": 8, "D": 64, "topk": 64},
}


def _varlen(S, topk):
    """Two packed sequences, the token map, and per token `topk` distinct in-sequence key positions: a random
    choice of its causal ones (itself and before), then later ones (the kernels mask those) when it has too few."""
    offsets = torch.tensor([0, S // 2, S], device="cuda", dtype=torch.int32)
    rows = []
    for n in (S // 2, S - S // 2):
        assert n >= topk, "each sequence must hold topk keys"
        pos = torch.arange(n, device="cuda")
        key = torch.rand(n, n, device="cuda") + (pos[None, :] > pos[:, None])
        rows.append(key.argsort(dim=-1)[:, :topk].to(torch.int32))
    return offsets, index.prepare_token_indices(offsets), torch.cat(rows).contiguous()


def _bf16(*shape):
    return torch.randn(*shape, device="cuda", dtype=torch.bfloat16)


def _mla_fwd(q, kv, indices, offsets, token_indices, dim, tail_dim):
    # sparse_mla_fwd_interface's call (which fixes dims at 512 + 64), with the config of the example's __main__
    heads, topk = q.shape[1], indices.shape[-1]
    config = {"block_I": 64, "num_stages": 2, "threads": 256}
    return sparse_mla_fwd.sparse_mla_fwd.compile(
        q, kv, indices, offsets, token_indices, heads, dim, tail_dim, topk, **config
    )


def run_sparse_mla_fwd(S=2048, H=128, topk=1024, dim=512, tail_dim=64):
    offsets, token_indices, indices = _varlen(S, topk)
    q, kv, indices = _bf16(S, H, dim + tail_dim), _bf16(S, 1, dim + tail_dim), indices[:, None, :]
    kernel = _mla_fwd(q, kv, indices, offsets, token_indices, dim, tail_dim)
    return tilelang.profiler.do_bench(lambda: kernel(q, kv, indices, offsets, token_indices))


def run_sparse_mla_bwd(S=2048, H=64, topk=512, dim=512, tail_dim=64):
    offsets, token_indices, indices = _varlen(S, topk)
    q, kv, do, indices = _bf16(S, H, dim + tail_dim), _bf16(S, 1, dim + tail_dim), _bf16(S, H, dim), indices[:, None, :]
    o, lse = _mla_fwd(q, kv, indices, offsets, token_indices, dim, tail_dim)(q, kv, indices, offsets, token_indices)
    # sparse_mla_bwd.sparse_mla_bwd's three kernels
    prep = sparse_mla_bwd.preprocess.compile(o, do)
    delta = prep(o, do)
    bwd = sparse_mla_bwd.bwd.compile(q, kv, do, indices, lse, delta, offsets, token_indices, H, dim, tail_dim, topk)
    dkv_acc = torch.empty(S, 1, dim + tail_dim, device="cuda", dtype=torch.float32)
    post = sparse_mla_bwd.postprocess.compile(dkv_acc, dim, tail_dim)

    def call():  # dKV is atomic_add'ed into the kernel's T.empty (uninitialized) memory: not an output to compare
        dq, dkv = bwd(q, kv, do, indices, lse, prep(o, do), offsets, token_indices)
        post(dkv)
        return dq

    return tilelang.profiler.do_bench(call)


def run_sparse_mla_topk_reducesum(S=2048, H=128, topk=1024, dim=512, tail_dim=64):
    offsets, token_indices, indices = _varlen(S, topk)
    q, kv, indices = _bf16(S, H, dim + tail_dim), _bf16(S, 1, dim + tail_dim), indices[:, None, :]
    _, lse = _mla_fwd(q, kv, indices, offsets, token_indices, dim, tail_dim)(q, kv, indices, offsets, token_indices)
    # as sparse_mla_topk_reducesum_interface (which then sums the result in torch)
    kernel = sparse_mla_topk_reducesum.tl_sparse_mla_topk_reducesum_impl.compile(
        q, kv, indices, lse, offsets, token_indices, heads=H, dim=dim, tail_dim=tail_dim, topk=topk
    )
    return tilelang.profiler.do_bench(lambda: kernel(q, kv, indices, lse, offsets, token_indices))


def run_indexer_topk_reducesum(S=4096, H=64, D=128, topk=2048):
    offsets, token_indices, _ = _varlen(S, topk)
    q, weights, k = _bf16(S, H, D), _bf16(S, H), _bf16(S, D)
    # as indexer_topk_reducesum_interface
    kernel = indexer_topk_reducesum.tl_indexer_topk_reducesum_impl(
        heads=H, dim=D, topk=topk, dtype=indexer_topk_reducesum.BF16
    )
    topk_indices = torch.zeros(S, topk, device="cuda", dtype=torch.int32)
    topk_score = torch.zeros(S, topk, device="cuda", dtype=torch.float32)

    def call():
        kernel(q, weights, k, topk_indices, topk_score, offsets, token_indices)
        return topk_indices, topk_score

    return tilelang.profiler.do_bench(call)


def _causal_scores(future):
    """A distribution over each token's top-k keys, zero on those after it (as the forward kernels give)."""
    return torch.randn(future.shape, device="cuda").masked_fill(future, -torch.inf).softmax(dim=-1)


def run_indexer_bwd(S=2048, H=64, D=128, topk=512):
    offsets, token_indices, topk_indices = _varlen(S, topk)
    q, weights, k = _bf16(S, H, D), _bf16(S, H), _bf16(S, D)
    future = topk_indices > token_indices[:, 1:]
    attn_score, index_score = _causal_scores(future), _causal_scores(future)
    args = (q, weights, k, attn_score, index_score, topk_indices, offsets, token_indices)
    kernel = indexer_bwd.tl_indexer_bwd_impl.compile(*args, H, D, topk)  # as indexer_bwd_interface
    # dIndexK (the third output) is atomic_add'ed into T.empty (uninitialized) memory: not an output to compare
    return tilelang.profiler.do_bench(lambda: kernel(*args)[:2])


def regression_sparse_mla_fwd():
    tilelang.testing.process_func(run_sparse_mla_fwd)


def regression_sparse_mla_bwd():
    tilelang.testing.process_func(run_sparse_mla_bwd)


def regression_sparse_mla_topk_reducesum():
    tilelang.testing.process_func(run_sparse_mla_topk_reducesum)


def regression_indexer_topk_reducesum():
    tilelang.testing.process_func(run_indexer_topk_reducesum)


def regression_indexer_bwd():
    tilelang.testing.process_func(run_indexer_bwd)
