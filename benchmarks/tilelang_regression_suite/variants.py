"""TileLang's regression cases at other shapes (``tilelang_regression.py --variants [SET]``): one shape
per case in each set, read from the example's code, so that a change that holds only at the suite's
shape shows.  Set 1 (``VARIANTS``) moves sizes; set 2 (``VARIANTS_2``) changes what set 1 kept (head
dims, causality, dtype, tile tails).

Every case calls ``tilelang.testing.process_func(example.run_regression_perf, **kwargs)``; in the
variant mode the child replaces ``process_func`` (alike for both implementations) by one that runs
``VARIANTS[case].call(func, kwargs)``:

- ``Variant(kwargs=...)``: the overrides merged over the suite's keyword arguments;
- ``Variant(argv=...)``: for a ``run_regression_perf`` that parses its sizes from ``sys.argv``;
- ``Variant(run=..., shape=...)``: for one that takes no size argument, ``run(example)`` builds the
  example's own kernels at other sizes and times them through ``tilelang.profiler.do_bench`` as its
  ``run_regression_perf`` does (``example`` is the module ``func`` was defined in);
- ``NoVariant(why)``: not run in this mode (listed under the table).

Shapes respect the divisibility the examples assert and their block sizes (sequence lengths stay
multiples of the kernel's tile where the kernel does not mask a tail); run time stays close to the
suite's.  ``check(examples)`` (also ``python3 variants.py CHECKOUT``) verifies, without importing
anything, that every case has an entry and every override names a parameter of what it reaches.
"""

from __future__ import annotations

import ast
import glob
import inspect
import os
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Variant:
    why: str
    kwargs: dict = field(default_factory=dict)
    argv: tuple = ()
    run: Callable | None = None  # run(example_module) -> latency (ms)
    shape: str = ""  # for ``run``: the sizes it uses, for the report
    runs = True

    def call(self, func, suite_kwargs: dict) -> float:
        if self.run is not None:
            return self.run(sys.modules[func.__module__])
        if self.argv:
            saved, sys.argv = sys.argv, [sys.argv[0], *self.argv]
            try:
                return func(**{**suite_kwargs, **self.kwargs})
            finally:
                sys.argv = saved
        return func(**{**suite_kwargs, **self.kwargs})

    def describe(self) -> str:
        if self.run is not None:
            return self.shape
        parts = [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return ", ".join(parts + ([" ".join(self.argv)] if self.argv else []))


@dataclass(frozen=True)
class NoVariant:
    why: str
    runs = False

    def describe(self) -> str:
        return "no variant: " + self.why


def variant_of(case: str, which: int = 1) -> Variant | NoVariant:
    """The case's shape in variant set ``which`` (1: ``VARIANTS``, 2: ``VARIANTS_2``)."""
    return VARIANT_SETS[which].get(case) or NoVariant("not in variants.py")


# --- run() variants: the example's kernels at other sizes, timed as its run_regression_perf does ---


def _gemm(M, N, K):
    def run(example):
        kernel = example.matmul.compile(M=M, N=N, K=K, block_M=128, block_N=128, block_K=32)
        return kernel.get_profiler().do_bench(backend="cupti")

    return run


def _fp8_gemm(M, N, K):
    def run(example):
        import tilelang

        latencies = []
        for fmt in ("e4m3", "e5m2"):
            kernel = example.matmul.compile(
                M=M, N=N, K=K, block_M=128, block_N=128, block_K=64, dtype=example.determine_fp8_type(fmt)
            )
            latencies.append(kernel.get_profiler(tilelang.TensorSupplyType.Integer).do_bench(backend="cupti"))
        return sum(latencies) / len(latencies)

    return run


def _splitk(M, N, K, split_k):
    def run(example):
        import torch
        from tilelang.profiler import do_bench

        torch.random.manual_seed(42)
        a = torch.randn(M, K).cuda().half()
        b = torch.randn(K, N).cuda().half()
        c = torch.zeros(M, N).cuda().float()
        return do_bench(lambda: example.matmul(a, b, c, 128, 128, 32, split_k), backend="cupti")

    return run


def _blocksparse_gemm(M, N, K):
    def run(example):
        import torch
        from tilelang.profiler import do_bench

        torch.manual_seed(42)
        torch.cuda.manual_seed_all(42)
        a = torch.randn(M, K).cuda().half()
        b = torch.randn(K, N).cuda().half()
        bm, bn, bk = example.DEFAULT_BLOCK_M, example.DEFAULT_BLOCK_N, example.DEFAULT_BLOCK_K
        block_mask = torch.rand((M // bm, N // bn, K // bk)).cuda() > 0.5
        args = (example.DEFAULT_NUM_STAGES, example.DEFAULT_THREAD_NUM, example.DEFAULT_ENABLE_RASTERIZATION)
        return do_bench(lambda: example.blocksparse_matmul(a, b, block_mask, bm, bn, bk, *args), backend="cupti")

    return run


def _mha_bwd(layout: str, batch: int, heads: int, n_ctx: int, d_head: int, causal: bool):
    """example_mha_bwd_bhsd / _bshd's run_regression_perf at other sizes (its block_N rule kept)."""

    def run(example):
        import torch
        from tilelang.profiler import do_bench

        torch.manual_seed(0)
        block_M, block_N = 64, (64 if d_head <= 64 else 32)
        shape = (batch, heads, n_ctx, d_head) if layout == "bhsd" else (batch, n_ctx, heads, d_head)
        Q = torch.randn(*shape, device="cuda", dtype=torch.half)
        K, V, out, dO = (torch.randn_like(Q) for _ in range(4))
        lse = torch.zeros(batch, heads, n_ctx, device="cuda", dtype=torch.float32)
        with torch.no_grad():
            prep = example.flashattn_bwd_preprocess(batch, heads, n_ctx, d_head)
            kernel = example.flashattn_bwd(batch, heads, n_ctx, d_head, causal, block_M, block_N)
        dQ = torch.zeros(*shape, device="cuda", dtype=torch.float32)
        dK = torch.zeros(*shape, device="cuda", dtype=torch.float16)
        dV = torch.zeros(*shape, device="cuda", dtype=torch.float16)
        Delta = prep(out, dO)
        return do_bench(lambda: kernel(Q, K, V, dO, lse, Delta, dQ, dK, dV), backend="cupti")

    return run


def _gqa_bwd(batch, heads, n_ctx, d_qk, d_v, groups):
    """example_gqa_bwd's run_regression_perf (the split kernel, its tiles) at other sizes."""

    def run(example):
        import torch
        from tilelang.profiler import do_bench

        torch.manual_seed(42)
        head_kv = heads // groups
        Q = torch.randn(batch, n_ctx, heads, d_qk, device="cuda", dtype=torch.half)
        K = torch.randn(batch, n_ctx, head_kv, d_qk, device="cuda", dtype=torch.half)
        V = torch.randn(batch, n_ctx, head_kv, d_v, device="cuda", dtype=torch.half)
        out = torch.randn(batch, n_ctx, heads, d_v, device="cuda", dtype=torch.half)
        dO = torch.randn(batch, n_ctx, heads, d_v, device="cuda", dtype=torch.half)
        lse = torch.zeros(batch, heads, n_ctx, device="cuda", dtype=torch.float32)
        with torch.no_grad():
            prep = example.flashattn_bwd_preprocess(batch, heads, n_ctx, d_v)
            kernel = example.flashattn_bwd_split(
                batch, heads, n_ctx, d_qk, d_v, False, block_M=128, block_N=32, threads=256, num_stages=2, groups=groups
            )
        dQ = torch.zeros_like(Q, dtype=torch.float32)
        dK = torch.zeros(groups, batch, n_ctx, head_kv, d_qk, device="cuda", dtype=torch.float16)
        dV = torch.zeros(groups, batch, n_ctx, head_kv, d_v, device="cuda", dtype=torch.float16)
        Delta = prep(out, dO)
        return do_bench(lambda: kernel(Q, K, V, dO, lse, Delta, dQ, dK, dV), backend="cupti")

    return run


def _block_sparse_attn(batch, heads, seq_len, dim, topk, block=64):
    def run(example):
        import math

        import torch
        from tilelang.profiler import do_bench

        torch.manual_seed(0)
        q, k, v = (torch.randn(batch, heads, seq_len, dim, device="cuda", dtype=torch.float16) for _ in range(3))
        downsample_len = math.ceil(seq_len / block)
        x_ds = torch.randn([batch, heads, downsample_len, downsample_len], device="cuda", dtype=torch.bfloat16)
        x_ds[:, :, :, 0] = 100
        block_mask = example.get_sparse_attn_mask_from_topk(x_ds, topk=topk)
        kernel = example.blocksparse_flashattn(batch, heads, seq_len, dim, downsample_len, is_causal=True)
        return do_bench(lambda: kernel(q, k, v, block_mask), backend="cupti")

    return run


_ATTN_SEQ = "sequences stay multiples of the 128-row tile; batch and heads change, the head dim is the suite's"
_NO_SIZES = "run_regression_perf hard-codes its sizes in a long setup (inputs, indices); not reproduced here"

VARIANTS: dict = {
    # attention_sink: block_M = block_N = 128 (fwd); the bwd kernels tile by 64/128; seq_kv >= seq_q asserted
    "regression_example_mha_sink_fwd_bhsd": Variant(
        "seq_kv > seq_q (a past of 256 keys: the suite has none), 2x24 heads; " + _ATTN_SEQ,
        kwargs={"batch": 2, "heads": 24, "seq_q": 384, "seq_kv": 640},
    ),
    "regression_example_mha_sink_fwd_bhsd_sliding_window": Variant(
        "the suite's window 128 over seq_q 384 / seq_kv 640, 2x24 heads; " + _ATTN_SEQ,
        kwargs={"batch": 2, "heads": 24, "seq_q": 384, "seq_kv": 640},
    ),
    "regression_example_mha_sink_bwd_bhsd": Variant(
        "N_CTX 768 (6 tiles, not a power of two), 2x16 heads", kwargs={"BATCH": 2, "H": 16, "N_CTX": 768}
    ),
    "regression_example_mha_sink_bwd_bhsd_sliding_window": Variant(
        "the suite's window 128 over N_CTX 768, 2x16 heads", kwargs={"BATCH": 2, "H": 16, "N_CTX": 768}
    ),
    "regression_example_gqa_sink_bwd_bhsd": Variant(
        "3 query heads per KV head (the suite: 2), 12 heads, N_CTX 896 (7 tiles)",
        kwargs={"H": 12, "groups": 3, "N_CTX": 896},
    ),
    "regression_example_gqa_sink_bwd_bhsd_sliding_window": Variant(
        "the suite's window 128; groups 3 of 12 heads, N_CTX 896", kwargs={"H": 12, "groups": 3, "N_CTX": 896}
    ),
    # blocksparse_attention
    "regression_example_tilelang_block_sparse_attn": Variant(
        "2x12 heads, seq 640 (10 blocks of 64), top-3 blocks (the suite: 1x32, 256, top-2)",
        run=_block_sparse_attn(2, 12, 640, 64, 3),
        shape="BATCH=2, N_HEADS=12, SEQ_LEN=640, D_HEAD=64, TOPK=3",
    ),
    "regression_example_tilelang_sparse_gqa_decode_varlen_indice": Variant(
        "batch 4 (the suite: 1) of cache up to 3072 (96 blocks of 32)",
        kwargs={"batch": 4, "max_cache_seqlen": 3072},
    ),
    "regression_example_tilelang_sparse_gqa_decode_varlen_mask": Variant(
        "batch 3, 16 query / 4 KV heads, cache up to 5120 (160 blocks of 32)",
        kwargs={"batch": 3, "heads": 16, "heads_kv": 4, "max_cache_seqlen": 5120},
    ),
    "regression_example_blocksparse_gemm": Variant(
        "M, N, K 1536 x 2048 x 1280 (the suite: 1024^3), multiples of the 128/128/32 blocks the mask is cut by",
        run=_blocksparse_gemm(1536, 2048, 1280),
        shape="M=1536, N=2048, K=1280",
    ),
    # cast
    "regression_example_group_per_split_token_cast_to_fp8": Variant(
        "three groups of 384/640/512 rows (the suite: two), N 2048; the rows sum to M",
        kwargs={"M": 1536, "N": 2048, "BG": 3, "blk_m": 8, "batch_sizes": [384, 640, 512]},
    ),
    "regression_example_per_token_cast_to_fp8": Variant(
        "M 3072, N 1536 (12 groups of 128; the suite: 2048 x 512)", kwargs={"M": 3072, "N": 1536}
    ),
    # convolution: every grid axis a ceildiv, im2col masks
    "regression_example_convolution": Variant(
        "a ResNet-like 56x56 layer, C 96 -> F 192 (a partial 128-column tile), batch 64",
        argv=("--n", "64", "--c", "96", "--h", "56", "--w", "56", "--f", "192"),
    ),
    "regression_example_convolution_autotune": Variant(
        "the same 56x56 layer, C 96 -> F 192, batch 64", kwargs={"n": 64, "c": 96, "h": 56, "w": 56, "f": 192}
    ),
    # deepseek_mhc
    "regression_example_mhc_post": Variant(
        "n 3072 tokens, h 3584 (the suite: 4096 x 2560)", kwargs={"n": 3072, "h": 3584}
    ),
    "regression_example_mhc_pre": Variant(
        "n 1536 tokens, hidden 3072 (the suite: 2048 x 4096)", kwargs={"n": 1536, "hidden_size": 3072}
    ),
    # deepseek_mla: BLOCK_N 64 over the KV context, one KV head asserted
    "regression_example_mla_decode": Variant(
        "batch 4 of 64 heads, KV context 6144 (the suite: 1 x 128 heads, 8192)",
        kwargs={"batch": 4, "heads": 64, "kv_ctx": 6144},
    ),
    "regression_example_tilelang_nsa_fwd": NoVariant(_NO_SIZES),
    "regression_example_tilelang_nsa_fwd_decode": NoVariant(_NO_SIZES),
    # deepseek_v32: topk % block_I (64) == 0; the pipelined fwd wants topk / 64 even
    "regression_topk_selector": Variant(
        "batch 32, seq 24576, top-1024 (the suite: 64, 32768, top-2048)",
        kwargs={"batch": 32, "seq_len": 24576, "topk": 1024},
    ),
    "regression_fp8_lighting_indexer": Variant(
        "S 768, SKV 2304 (9 blocks of 256), 64 heads", kwargs={"S": 768, "SKV": 2304, "H": 64}
    ),
    "regression_sparse_mla_fwd": Variant(
        "128 heads (two 64-head blocks), S 384, top-512 of SKV 2048",
        kwargs={"S": 384, "SKV": 2048, "H": 128, "topk": 512},
    ),
    "regression_sparse_mla_fwd_pipelined": Variant(
        "128 heads, S 384, top-384 (6 blocks: even, as asserted) of SKV 1024",
        kwargs={"S": 384, "SKV": 1024, "H": 128, "topk": 384},
    ),
    "regression_sparse_mla_bwd": Variant(
        "S 384, top-384 of SKV 1024, 128 heads (two 64-head blocks)",
        kwargs={"S": 384, "SKV": 1024, "H": 128, "topk": 384},
    ),
    # dequantize_gemm: K % (block_K * split) == 0, block_M up to 256, block_N 128
    "regression_example_dequant_gemv_fp16xint4": NoVariant(_NO_SIZES),
    "regression_example_dequant_gemm_fp4_hopper": Variant(
        "m 3072, n 1536, k 5120 (the suite: 4096^3); multiples of the 128 blocks",
        kwargs={"m": 3072, "n": 1536, "k": 5120},
    ),
    "regression_example_dequant_gemm_bf16_fp4_hopper": Variant(
        "m 1536 (6 blocks of 256), n 3072, k 6144", kwargs={"m": 1536, "n": 3072, "k": 6144}
    ),
    "regression_example_dequant_gemm_bf16_mxfp4_hopper": Variant(
        "m 2560 (10 blocks of 256), n 1536, k 5120", kwargs={"m": 2560, "n": 1536, "k": 5120}
    ),
    "regression_example_dequant_gemm_w4a8": Variant(
        "m 2560, n 1536, k 3072 (32/32/128 blocks)", kwargs={"m": 2560, "n": 1536, "k": 3072}
    ),
    # dynamic_shape: the point of the example is sizes the kernel was not specialised to
    "regression_example_dynamic": Variant(
        "M 3000, N 2600, K 1000: no multiple of the 128/128/32 tile (rows stay 16-byte aligned)",
        kwargs={"M": 3000, "N": 2600, "K": 1000},
    ),
    "regression_example_elementwise_add": Variant(
        "2976 x 5024 (multiples of the 32 x 32 block; the suite: 4096^2), through its own --m/--n",
        argv=("--m", "2976", "--n", "5024"),
    ),
    # flash_attention
    "regression_example_gqa_bwd_tma_reduce_varlen": NoVariant(_NO_SIZES),
    "regression_example_gqa_bwd": Variant(
        "the split kernel at batch 2, head dims 128/128 (the suite's 192/128), groups 4 (16), 384 tokens (256)",
        run=_gqa_bwd(2, 16, 384, 128, 128, 4),
        shape="batch=2, heads=16, n_ctx=384, d_qk=128, d_v=128, groups=4",
    ),
    "regression_example_mha_bwd_bshd": Variant(
        "head dim 128 (the suite's 64: block_N 32), 640 tokens (a multiple of both tiles), batch 1, 16 heads",
        run=_mha_bwd("bshd", 1, 16, 640, 128, False),
        shape="batch=1, heads=16, n_ctx=640, d_head=128",
    ),
    "regression_example_mha_bwd_bhsd": Variant(
        "causal (the suite's is not), 768 tokens, batch 2, 12 heads, head dim 64",
        run=_mha_bwd("bhsd", 2, 12, 768, 64, True),
        shape="batch=2, heads=12, n_ctx=768, d_head=64, causal",
    ),
    "regression_example_gqa_fwd_bshd": Variant(
        "batch 2, 32 heads in groups of 8 (the suite: 16 in 1 group), seq 1536",
        kwargs={"batch": 2, "heads": 32, "seq_len": 1536, "groups": 8},
    ),
    "regression_example_mha_fwd_bhsd": Variant(
        "seq_kv 640 > seq_q 384, 2x16 heads; " + _ATTN_SEQ,
        kwargs={"batch": 2, "heads": 16, "seq_q": 384, "seq_kv": 640},
    ),
    "regression_example_mha_fwd_bshd": Variant(
        "batch 4 of 16 heads, seq 768 (the suite: 1 x 32, 256)", kwargs={"batch": 4, "heads": 16, "seq_len": 768}
    ),
    "regression_example_mha_fwd_varlen": Variant(
        "6 sequences of up to 1000 (varlen masks its tails), 24 heads",
        kwargs={"batch": 6, "heads": 24, "seq_len": 1000},
    ),
    # flash_decoding
    "regression_example_gqa_decode": Variant(
        "batch 4, groups 4 (the suite: 1, 8), KV 6144", kwargs={"batch": 4, "groups": 4, "kv_seqlen": 6144}
    ),
    "regression_example_mha_inference": Variant(
        "batch 2 of 16 heads, 256 queries over KV 3072 (the suite: 1 x 32, 128 over 2048)",
        kwargs={"BATCH": 2, "H": 16, "Q_CTX": 256, "KV_CTX": 3072},
    ),
    # fusedmoe: 128-wide token / hidden / expert blocks
    "regression_example_fusedmoe_tilelang": Variant(
        "16 experts, top-2, hidden 1536, expert 384, 1536 tokens (the suite: 8, top-4, 1024, 256, 1024)",
        kwargs={"d_hidden": 1536, "d_expert": 384, "n_routed_experts": 16, "n_experts_per_token": 2, "seq_len": 1536},
    ),
    # gemm
    "regression_example_gemm_intrinsics": Variant(
        "M 2048, N 1536, K 3072 (the suite: 1024^3)", kwargs={"M": 2048, "N": 1536, "K": 3072}
    ),
    "regression_example_gemm": Variant(
        "M 1536, N 2560, K 1408 (the suite: 1024^3), multiples of its 128/128/32 blocks",
        run=_gemm(1536, 2560, 1408),
        shape="M=1536, N=2560, K=1408",
    ),
    "regression_example_tilelang_gemm_fp8_2xAcc": Variant(
        "M 1536, N 2048, K 6144 (the suite: 1024 x 1024 x 8192), both fp8 formats as the suite",
        run=_fp8_gemm(1536, 2048, 6144),
        shape="M=1536, N=2048, K=6144",
    ),
    "regression_example_tilelang_gemm_fp8": Variant(
        "M 3072, N 2560, K 3584 (the suite: 4096^3), both fp8 formats",
        run=_fp8_gemm(3072, 2560, 3584),
        shape="M=3072, N=2560, K=3584",
    ),
    # gemm_splitk: K / split_k a multiple of block_K 32
    "regression_example_tilelang_gemm_splitk": Variant(
        "M 3072, N 2560, K 3840 in 5 splits (the suite: 4096^3 in 4)",
        run=_splitk(3072, 2560, 3840, 5),
        shape="M=3072, N=2560, K=3840, split_k=5",
    ),
    "regression_example_tilelang_gemm_splitk_vectorize_atomicadd": Variant(
        "M 2560, N 3072, K 6144 in 3 splits",
        run=_splitk(2560, 3072, 6144, 3),
        shape="M=2560, N=3072, K=6144, split_k=3",
    ),
    "regression_example_gemv": NoVariant("six kernels of different block constraints at one N, K; " + _NO_SIZES),
    # linear_attention: 64-token chunks
    "regression_example_linear_attn_fwd": Variant(
        "B 2, S 768, 8 heads (the suite: 1, 512, 16)", kwargs={"B": 2, "S": 768, "H": 8}
    ),
    "regression_example_linear_attn_bwd": Variant(
        "B 2, S 1536, 12 heads (the suite: 1, 1024, 16)", kwargs={"B": 2, "S": 1536, "H": 12}
    ),
    "regression_example_vertical_slash_sparse_attn": Variant(
        # one head: the example's sum_all_diagonal_matrix strides assume batch 1 and 1 head (with 2 heads
        # the slash indices come out of shape and TileLang's kernel refuses BlockOffset)
        "12288 tokens (the suite: 16384), 800 vertical / 160 slash indices",
        kwargs={"seq_len": 12288, "vertical_size": 800, "slash_size": 160},
    ),
    "regression_block_sparse_attn_tilelang": NoVariant("two hard-coded shapes timed together; " + _NO_SIZES),
    # warp_specialize: 128/128/64 blocks, no tail masking assumed
    "regression_example_warp_specialize_gemm_barrierpipe_stage2": Variant(
        "M 2048, N 1536, K 768", kwargs={"M": 2048, "N": 1536, "K": 768}
    ),
    "regression_example_warp_specialize_gemm_copy_0_gemm_1": Variant(
        "M 1536, N 2048, K 2048", kwargs={"M": 1536, "N": 2048, "K": 2048}
    ),
    "regression_example_warp_specialize_gemm_copy_1_gemm_0": Variant(
        "M 2560, N 1024, K 1536", kwargs={"M": 2560, "N": 1024, "K": 1536}
    ),
    "regression_example_warp_specialize_gemm_softpipe_stage2": Variant(
        "M 1024, N 2560, K 3072", kwargs={"M": 1024, "N": 2560, "K": 3072}
    ),
}


# A second shape per case (``--variants 2``): where the first set kept a case's head dim, dtype, masking or
# tile tails, this one changes them (head dim 64 <-> 128, causal <-> not, bfloat16, a K tail in the
# gemm), with the same care for the examples' asserts.
_NO_SECOND = "one variant shape is enough for its hard-coded sizes (the first set lists why)"

VARIANTS_2: dict = {
    "regression_example_mha_sink_fwd_bhsd": Variant(
        "bfloat16, head dim 64, 1 x 40 heads, seq 1024 (the first set: float16, 128, 2 x 24, 384/640)",
        kwargs={"batch": 1, "heads": 40, "seq_q": 1024, "seq_kv": 1024, "dim": 64, "dtype": "bfloat16"},
    ),
    "regression_example_mha_sink_fwd_bhsd_sliding_window": Variant(
        "window 256 (a multiple of block_N), bfloat16, head dim 64, 1 x 40 heads, seq 1024",
        kwargs={
            "batch": 1,
            "heads": 40,
            "seq_q": 1024,
            "seq_kv": 1024,
            "dim": 64,
            "dtype": "bfloat16",
            "window_size": 256,
        },
    ),
    "regression_example_mha_sink_bwd_bhsd": Variant(
        "head dim 64 (the suite: 128), N_CTX 1024, 2 x 12 heads",
        kwargs={"BATCH": 2, "H": 12, "D_HEAD": 64, "N_CTX": 1024},
    ),
    "regression_example_mha_sink_bwd_bhsd_sliding_window": Variant(
        "window 256, head dim 64, N_CTX 1024, 2 x 12 heads",
        kwargs={"BATCH": 2, "H": 12, "D_HEAD": 64, "N_CTX": 1024, "window_size": 256},
    ),
    "regression_example_gqa_sink_bwd_bhsd": Variant(
        "head dim 128 (the suite: 64), 16 heads in groups of 4, N_CTX 640",
        kwargs={"H": 16, "groups": 4, "D_HEAD": 128, "N_CTX": 640},
    ),
    "regression_example_gqa_sink_bwd_bhsd_sliding_window": Variant(
        "the suite's window 128; head dim 128, 16 heads in groups of 4, N_CTX 640",
        kwargs={"H": 16, "groups": 4, "D_HEAD": 128, "N_CTX": 640},
    ),
    "regression_example_tilelang_block_sparse_attn": Variant(
        "1 x 16 heads, head dim 128 (the first set: 64), seq 1152 (18 blocks), top-5",
        run=_block_sparse_attn(1, 16, 1152, 128, 5),
        shape="BATCH=1, N_HEADS=16, SEQ_LEN=1152, D_HEAD=128, TOPK=5",
    ),
    "regression_example_tilelang_sparse_gqa_decode_varlen_indice": Variant(
        "batch 2, 16 query heads over 2 KV heads (groups of 8), cache up to 4096",
        kwargs={"batch": 2, "heads": 16, "heads_kv": 2, "max_cache_seqlen": 4096},
    ),
    "regression_example_tilelang_sparse_gqa_decode_varlen_mask": Variant(
        "batch 6, 32 / 8 heads, cache up to 1536 (48 blocks of 32)",
        kwargs={"batch": 6, "heads": 32, "heads_kv": 8, "max_cache_seqlen": 1536},
    ),
    "regression_example_blocksparse_gemm": Variant(
        "M, N, K 2048 x 1024 x 2560", run=_blocksparse_gemm(2048, 1024, 2560), shape="M=2048, N=1024, K=2560"
    ),
    "regression_example_group_per_split_token_cast_to_fp8": Variant(
        "two groups of 1280 / 1024 rows, N 1536",
        kwargs={"M": 2304, "N": 1536, "BG": 2, "blk_m": 8, "batch_sizes": [1280, 1024]},
    ),
    "regression_example_per_token_cast_to_fp8": Variant("M 4000, N 1024", kwargs={"M": 4000, "N": 1024}),
    "regression_example_convolution": Variant(
        "batch 32 of 28x28, C 128 -> F 256", argv=("--n", "32", "--c", "128", "--h", "28", "--w", "28", "--f", "256")
    ),
    "regression_example_convolution_autotune": Variant(
        "batch 32 of 28x28, C 128 -> F 256", kwargs={"n": 32, "c": 128, "h": 28, "w": 28, "f": 256}
    ),
    "regression_example_mhc_post": Variant("n 2048 tokens, h 4096", kwargs={"n": 2048, "h": 4096}),
    "regression_example_mhc_pre": Variant("n 2560 tokens, hidden 2560", kwargs={"n": 2560, "hidden_size": 2560}),
    "regression_example_mla_decode": Variant(
        "batch 8 of 64 heads, KV context 2560", kwargs={"batch": 8, "heads": 64, "kv_ctx": 2560}
    ),
    "regression_example_tilelang_nsa_fwd": NoVariant(_NO_SIZES),
    "regression_example_tilelang_nsa_fwd_decode": NoVariant(_NO_SIZES),
    "regression_topk_selector": Variant(
        "batch 48, seq 16384, top-2048", kwargs={"batch": 48, "seq_len": 16384, "topk": 2048}
    ),
    "regression_fp8_lighting_indexer": Variant("S 1280, SKV 1536, 64 heads", kwargs={"S": 1280, "SKV": 1536, "H": 64}),
    "regression_sparse_mla_fwd": Variant(
        "64 heads, S 512, top-768 of SKV 1536", kwargs={"S": 512, "SKV": 1536, "H": 64, "topk": 768}
    ),
    "regression_sparse_mla_fwd_pipelined": Variant(
        "64 heads, S 512, top-1024 (16 blocks) of SKV 2048", kwargs={"S": 512, "SKV": 2048, "H": 64, "topk": 1024}
    ),
    "regression_sparse_mla_bwd": Variant(
        "64 heads, S 512, top-512 of SKV 1024", kwargs={"S": 512, "SKV": 1024, "H": 64, "topk": 512}
    ),
    "regression_example_dequant_gemv_fp16xint4": NoVariant(_NO_SIZES),
    "regression_example_dequant_gemm_fp4_hopper": Variant(
        "m 2048, n 4096, k 2048", kwargs={"m": 2048, "n": 4096, "k": 2048}
    ),
    "regression_example_dequant_gemm_bf16_fp4_hopper": NoVariant(_NO_SECOND + "; T.import_source: not on tile2triton"),
    "regression_example_dequant_gemm_bf16_mxfp4_hopper": NoVariant(
        _NO_SECOND + "; T.import_source: not on tile2triton"
    ),
    "regression_example_dequant_gemm_w4a8": Variant("m 1024, n 4096, k 4096", kwargs={"m": 1024, "n": 4096, "k": 4096}),
    "regression_example_dynamic": Variant(
        "M 1000, N 3000, K 2000: tails on every axis, K's too", kwargs={"M": 1000, "N": 3000, "K": 2000}
    ),
    "regression_example_elementwise_add": Variant("8160 x 1056", argv=("--m", "8160", "--n", "1056")),
    "regression_example_gqa_bwd_tma_reduce_varlen": NoVariant(_NO_SIZES),
    "regression_example_gqa_bwd": Variant(
        "the split kernel at batch 1, 32 heads in groups of 8, 1024 tokens, head dims 128/128",
        run=_gqa_bwd(1, 32, 1024, 128, 128, 8),
        shape="batch=1, heads=32, n_ctx=1024, d_qk=128, d_v=128, groups=8",
    ),
    "regression_example_mha_bwd_bshd": Variant(
        "causal, head dim 64, 1024 tokens, batch 2, 8 heads",
        run=_mha_bwd("bshd", 2, 8, 1024, 64, True),
        shape="batch=2, heads=8, n_ctx=1024, d_head=64, causal",
    ),
    "regression_example_mha_bwd_bhsd": Variant(
        "not causal, head dim 128 (block_N 32), 512 tokens, batch 1, 32 heads",
        run=_mha_bwd("bhsd", 1, 32, 512, 128, False),
        shape="batch=1, heads=32, n_ctx=512, d_head=128",
    ),
    "regression_example_gqa_fwd_bshd": Variant(
        "causal, 32 heads in groups of 4, seq 2048, batch 1",
        kwargs={"batch": 1, "heads": 32, "seq_len": 2048, "groups": 4, "is_causal": True},
    ),
    "regression_example_mha_fwd_bhsd": Variant(
        "causal, head dim 128, 1 x 12 heads, seq 1024",
        kwargs={"batch": 1, "heads": 12, "seq_q": 1024, "seq_kv": 1024, "dim": 128, "is_causal": True},
    ),
    "regression_example_mha_fwd_bshd": Variant(
        "causal, head dim 64, 2 x 24 heads, seq 1024",
        kwargs={"batch": 2, "heads": 24, "seq_len": 1024, "dim": 64, "is_causal": True},
    ),
    "regression_example_mha_fwd_varlen": Variant(
        "causal, head dim 128, 3 sequences of up to 1500, 8 heads",
        kwargs={"batch": 3, "heads": 8, "seq_len": 1500, "dim": 128, "causal": True},
    ),
    "regression_example_gqa_decode": Variant(
        "batch 2, 64 heads in groups of 16, KV 4096", kwargs={"batch": 2, "heads": 64, "groups": 16, "kv_seqlen": 4096}
    ),
    "regression_example_mha_inference": Variant(
        "batch 4 of 8 heads, 128 queries over KV 4096", kwargs={"BATCH": 4, "H": 8, "Q_CTX": 128, "KV_CTX": 4096}
    ),
    "regression_example_fusedmoe_tilelang": Variant(
        "4 experts, top-1, hidden 2048, expert 512, 2048 tokens",
        kwargs={"d_hidden": 2048, "d_expert": 512, "n_routed_experts": 4, "n_experts_per_token": 1, "seq_len": 2048},
    ),
    "regression_example_gemm_intrinsics": Variant("M 3072, N 3072, K 2048", kwargs={"M": 3072, "N": 3072, "K": 2048}),
    "regression_example_gemm": Variant(
        "M 2000, N 2000, K 1000: tails of the 128/128/32 blocks on every axis",
        run=_gemm(2000, 2000, 1000),
        shape="M=2000, N=2000, K=1000",
    ),
    "regression_example_tilelang_gemm_fp8_2xAcc": Variant(
        "M 2048, N 1024, K 4096", run=_fp8_gemm(2048, 1024, 4096), shape="M=2048, N=1024, K=4096"
    ),
    "regression_example_tilelang_gemm_fp8": Variant(
        "M 2048, N 4096, K 2048", run=_fp8_gemm(2048, 4096, 2048), shape="M=2048, N=4096, K=2048"
    ),
    "regression_example_tilelang_gemm_splitk": Variant(
        "M 2048, N 2048, K 4096 in 8 splits",
        run=_splitk(2048, 2048, 4096, 8),
        shape="M=2048, N=2048, K=4096, split_k=8",
    ),
    "regression_example_tilelang_gemm_splitk_vectorize_atomicadd": Variant(
        "M 1024, N 4096, K 2048 in 4 splits",
        run=_splitk(1024, 4096, 2048, 4),
        shape="M=1024, N=4096, K=2048, split_k=4",
    ),
    "regression_example_gemv": NoVariant(_NO_SIZES),
    "regression_example_linear_attn_fwd": NoVariant("needs fla, which the GPU machine lacks"),
    "regression_example_linear_attn_bwd": NoVariant("needs fla, which the GPU machine lacks"),
    "regression_example_vertical_slash_sparse_attn": Variant(
        "8192 tokens, 500 vertical / 100 slash indices",
        kwargs={"seq_len": 8192, "vertical_size": 500, "slash_size": 100},
    ),
    "regression_block_sparse_attn_tilelang": NoVariant(_NO_SIZES),
    "regression_example_warp_specialize_gemm_barrierpipe_stage2": Variant(
        "M 1024, N 3072, K 1024", kwargs={"M": 1024, "N": 3072, "K": 1024}
    ),
    "regression_example_warp_specialize_gemm_copy_0_gemm_1": Variant(
        "M 3072, N 1024, K 3072", kwargs={"M": 3072, "N": 1024, "K": 3072}
    ),
    "regression_example_warp_specialize_gemm_copy_1_gemm_0": Variant(
        "M 1536, N 1536, K 4096", kwargs={"M": 1536, "N": 1536, "K": 4096}
    ),
    "regression_example_warp_specialize_gemm_softpipe_stage2": Variant(
        "M 4096, N 2048, K 512", kwargs={"M": 4096, "N": 2048, "K": 512}
    ),
}

VARIANT_SETS = {1: VARIANTS, 2: VARIANTS_2}

# --- check: every entry against the examples' source, read with ast (nothing imported) ---


def _process_func_call(fn: ast.FunctionDef) -> ast.Call | None:
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("process_func") and node.args:
            return node
    return None


def _module_path(regression: str, tree: ast.Module, name: str) -> str:
    """Where the module the regression file imports as ``name`` lives (its own folder)."""
    module = name
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            module = next((a.name for a in node.names if (a.asname or a.name) == name), module)
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                if (a.asname or a.name) == name:
                    module = f"{node.module}.{a.name}" if node.module else a.name
    return os.path.join(os.path.dirname(regression), module.replace(".", os.sep) + ".py")


def _parameters(fn: ast.FunctionDef) -> tuple:
    """(names it accepts by keyword, whether it takes **kwargs); ``T.const("M, N")`` names count
    (an eager kernel's sizes are its ``.compile`` keywords)."""
    a = fn.args
    names = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("T.const") and node.args:
            if isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                names |= {s.strip() for s in node.args[0].value.split(",")}
    return names, a.kwarg is not None


def _check_kwargs(where: str, keys, fn: ast.FunctionDef | None, what: str) -> list:
    if fn is None:
        return [f"{where}: {what} not found"]
    names, any_kw = _parameters(fn)
    bad = sorted(k for k in keys if k not in names)
    return [] if any_kw or not bad else [f"{where}: {what} has no parameter {', '.join(bad)}"]


def _check_run(where: str, run: Callable, example: ast.Module) -> list:
    """The attributes ``run`` reads from its example module exist there; the keywords it passes to
    the example's functions (directly or through ``.compile``) are their parameters."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(run)))
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == run.__name__)
    param = fn.args.args[0].arg
    defs = {n.name: n for n in example.body if isinstance(n, ast.FunctionDef)}
    top = set(defs) | {n.name for n in example.body if isinstance(n, ast.ClassDef)}
    for n in example.body:
        if isinstance(n, (ast.Assign, ast.AnnAssign)):
            top |= {t.id for t in ast.walk(n) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            top |= {(a.asname or a.name).split(".")[0] for a in n.names}
    out = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == param:
            if node.attr not in top:
                out.append(f"{where}: the example has no {node.attr}")
        if isinstance(node, ast.Call) and node.keywords:
            target = node.func.value if ast.unparse(node.func).endswith(".compile") else node.func
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == param:
                if target.attr in defs:
                    keys = [k.arg for k in node.keywords if k.arg]
                    out += _check_kwargs(where, keys, defs[target.attr], target.attr)
    return out


def check(examples: str, table: dict | None = None) -> list:
    """Problems of ``table`` (default VARIANTS) against the examples under ``examples``: cases without
    an entry, entries of no case, overrides naming no parameter."""
    table = VARIANTS if table is None else table
    problems, seen = [], set()
    for regression in sorted(glob.glob(os.path.join(examples, "**", "regression_*.py"), recursive=True)):
        with open(regression) as f:
            tree = ast.parse(f.read())
        for fn in tree.body:
            if not (isinstance(fn, ast.FunctionDef) and fn.name.startswith("regression_")):
                continue
            where = f"{os.path.relpath(regression, examples)}::{fn.name}"
            seen.add(fn.name)
            entry = table.get(fn.name)
            if entry is None:
                problems.append(f"{where}: no entry in variants.py")
                continue
            if not entry.runs:
                continue
            call = _process_func_call(fn)
            if call is None or not isinstance(call.args[0], ast.Attribute):
                problems.append(f"{where}: no process_func(module.function, ...) call")
                continue
            path = _module_path(regression, tree, ast.unparse(call.args[0].value))
            if not os.path.exists(path):
                problems.append(f"{where}: {path} not found")
                continue
            with open(path) as f:
                example = ast.parse(f.read())
            name = call.args[0].attr
            target = next((n for n in example.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
            if entry.run is not None:
                problems += _check_run(where, entry.run, example)
            else:
                problems += _check_kwargs(where, entry.kwargs, target, name)
                if entry.argv and target is not None and "argv" not in _parameters(target)[0]:
                    uses_argv = any(
                        isinstance(n, ast.Attribute) and n.attr in ("parse_args", "parse_known_args")
                        for n in ast.walk(target)
                    )
                    if not uses_argv:
                        problems.append(f"{where}: {name} parses no command line")
    problems += [f"{case}: in variants.py but no such case" for case in sorted(set(table) - seen)]
    return problems


if __name__ == "__main__":
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    examples = os.path.join(root, "examples") if os.path.isdir(os.path.join(root, "examples")) else root
    found = [f"set {which}: {problem}" for which, table in VARIANT_SETS.items() for problem in check(examples, table)]
    print("\n".join(found) if found else f"variants.py: {len(VARIANTS)} + {len(VARIANTS_2)} entries, no problem")
    sys.exit(1 if found else 0)
