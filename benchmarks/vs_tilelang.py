"""The same TileLang source through real TileLang and through tile2triton, in one process (issue 14).

benchmarks/vs_tilelang_kernels.py holds the kernels as plain TileLang.  It is loaded twice: with
real TileLang, and with ``tilelang`` / ``tilelang.language`` bound to tile2triton (what ``import
tile2triton as tilelang`` gives a user).  Each row compiles one factory with the same arguments
and ``pass_configs`` on both, checks both outputs against torch in higher precision
(‖out − ref‖ / ‖ref‖, output pre-filled by the kernels' own allocation, random inputs), and times
both and torch with ``triton.testing.do_bench`` (L2 flushed between runs; the figure is the median
of all timed runs, their count printed).  The last column is ``TileLang ms / tile2triton ms``.

On the GPU machine, with real TileLang installed next to tile2triton (from carried wheels there):

    PYTHONPATH=<TileLang's site folder>:. python benchmarks/vs_tilelang.py [--sweep narrow] [--rows FA]

``--rows`` (alias ``--only``) takes row numbers and substrings of row names, e.g.
``--rows decode,grouped,thread`` for the GQA/MLA decode, grouped GEMM and thread-view GEMV rows;
``--list`` prints the numbers and names.  New rows go at the end, so the numbers ``--cold`` and
BENCHMARKS.md use stay put.

``--sweep narrow|wide`` also times tile2triton under each launch choice ``runtime/tuning.candidates`` gives
(the data behind ``tuning.heuristic``); ``--literal`` sets ``TILE2TRITON_TUNE=0`` (the before
column); ``--cpu`` runs the tile2triton side alone on tiny sizes through Triton's interpreter.
Compiles run first in ``--jobs`` worker processes (both compilers cache on disk), so the main
process only loads them.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import importlib.util
import math
import multiprocessing as mp
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
KERNELS = HERE / "vs_tilelang_kernels.py"


# ---------------------------------------------------------------------------- the two front ends
def load_kernels(which: str):
    """vs_tilelang_kernels.py with ``tilelang`` = real TileLang ("tilelang") or tile2triton ("t2t")."""
    name = f"vs_tilelang_kernels_{which}"
    if name in sys.modules:
        return sys.modules[name]
    saved = {k: sys.modules.get(k) for k in ("tilelang", "tilelang.language")}
    if which == "t2t":
        import tile2triton
        import tile2triton.language

        sys.modules["tilelang"], sys.modules["tilelang.language"] = tile2triton, tile2triton.language
    else:
        import tilelang
        import tilelang.language  # noqa: F401
    try:
        spec = importlib.util.spec_from_file_location(name, KERNELS)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    finally:
        if which == "t2t":
            for k, v in saved.items():
                if v is None:
                    sys.modules.pop(k, None)
                else:
                    sys.modules[k] = v
    module.frontend = tile2triton if which == "t2t" else tilelang
    return module


@dataclass
class Row:
    name: str
    factory: str
    args: tuple
    out_idx: list
    inputs: object  # (device) -> list of tensors
    ref: object  # (*inputs) -> reference output (float64/float32)
    torch_fn: object = None  # (*inputs) -> output (the torch row)
    fast_math: bool = False
    configs: tuple = ()  # further PassConfigKey names set True on both (what the example passes)
    work: float = 0.0  # FLOPs or bytes
    unit: str = "TFLOP/s"
    tol: float = 2e-2
    torch_name: str = "torch"
    extra: dict = field(default_factory=dict)


def compile_row(row: Row, which: str, choice=None):
    module = load_kernels(which)
    fe = module.frontend
    names = (("TL_ENABLE_FAST_MATH",) if row.fast_math else ()) + row.configs
    configs = {getattr(fe.PassConfigKey, name): True for name in names} or None
    jitted = fe.jit(out_idx=row.out_idx, pass_configs=configs)(getattr(module, row.factory))
    kernel = jitted(*row.args)
    if which == "t2t" and choice is not None:
        from tile2triton.runtime.kernel import JITKernel

        kernel = JITKernel(kernel.prim_func, pass_configs=kernel.pass_configs, launch=choice)
    return kernel


# ---------------------------------------------------------------------------- rows
def attention_ref(q, k, v, causal, layout="bhsd"):
    import torch

    if layout == "bshd":
        q, k, v = (x.transpose(1, 2) for x in (q, k, v))
    groups = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(groups, dim=1)
    v = v.repeat_interleave(groups, dim=1)
    out = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
    return out.transpose(1, 2) if layout == "bshd" else out


def sdpa_cudnn(q, k, v, causal, layout="bhsd"):
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if layout == "bshd":
        q, k, v = (x.transpose(1, 2) for x in (q, k, v))
    enable_gqa = q.shape[1] != k.shape[1]
    backends = [SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]
    with sdpa_kernel(backends):
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=enable_gqa)
    return out.transpose(1, 2) if layout == "bshd" else out


def rows(cpu: bool) -> list[Row]:
    import torch

    f16 = torch.float16
    out: list[Row] = []

    def randn(*shape):
        return lambda dev: torch.randn(*shape, device=dev, dtype=f16)

    # flash attention at TileLang's example_mha_fwd_bhsd configuration, plain and fast-math
    b, h, s = (1, 2, 200) if cpu else (4, 32, 4096)
    for dim in (128, 64):
        for causal in (False, True):
            for fast in (False, True):
                cfg = (64, 64, 2, 128) if cpu else (128, 128, 2, 256)
                flops = 4 * b * h * s * s * dim * (0.5 if causal else 1)
                out.append(
                    Row(
                        f"FA bhsd D{dim}{' causal' if causal else ''} 128x128 t256 s2{' fast-math' if fast else ''}",
                        "mha_bhsd",
                        (b, h, s, s, dim, causal, *cfg),
                        [3],
                        lambda dev, dim=dim: [randn(b, h, s, dim)(dev) for _ in range(3)],
                        lambda q, k, v, c=causal: attention_ref(q, k, v, c),
                        lambda q, k, v, c=causal: sdpa_cudnn(q, k, v, c),
                        fast_math=fast,
                        work=flops,
                        torch_name="SDPA (cuDNN)",
                    )
                )
    # TileLang's example_mha_fwd_bshd (128x128, 128 threads, 1 stage) and example_gqa_fwd_bshd
    b2, h2, s2, d2 = (1, 2, 200, 64) if cpu else (8, 32, 4096, 128)
    cfg = (64, 64, 1, 128) if cpu else (128, 128, 1, 128)
    out.append(
        Row(
            "FA bshd D128 (example_mha_fwd_bshd) 128x128 t128 s1 fast-math",
            "attn_bshd",
            (b2, h2, s2, d2, False, 1, *cfg),
            [3],
            lambda dev: [randn(b2, s2, h2, d2)(dev) for _ in range(3)],
            lambda q, k, v: attention_ref(q, k, v, False, "bshd"),
            lambda q, k, v: sdpa_cudnn(q, k, v, False, "bshd"),
            fast_math=True,
            work=4 * b2 * h2 * s2 * s2 * d2,
            torch_name="SDPA (cuDNN)",
        )
    )
    b3, h3, s3, d3, g3 = (1, 4, 200, 64, 2) if cpu else (1, 64, 4096, 128, 16)
    cfg = (64, 64, 2, 128)
    out.append(
        Row(
            "GQA bshd D128 g16 (example_gqa_fwd_bshd) 64x64 t128 s2 fast-math",
            "attn_bshd",
            (b3, h3, s3, d3, False, g3, *cfg),
            [3],
            lambda dev: [
                randn(b3, s3, h3, d3)(dev),
                randn(b3, s3, h3 // g3, d3)(dev),
                randn(b3, s3, h3 // g3, d3)(dev),
            ],
            lambda q, k, v: attention_ref(q, k, v, False, "bshd"),
            lambda q, k, v: sdpa_cudnn(q, k, v, False, "bshd"),
            fast_math=True,
            work=4 * b3 * h3 * s3 * s3 * d3,
            torch_name="SDPA (cuDNN)",
        )
    )
    # GEMM at the three configurations
    n = 200 if cpu else 8192
    for bm, bn, bk, st, th, sw in ((128, 256, 64, 3, 256, 10), (256, 128, 64, 3, 256, 10), (128, 128, 32, 3, 128, 0)):
        if cpu:
            bm, bn, bk, th = 64, 64, 32, 128
        out.append(
            Row(
                f"GEMM fp16 {n}^3 {bm}x{bn}x{bk} s{st} t{th}{' swizzle' if sw else ''}",
                "gemm",
                (n, n, n, bm, bn, bk, st, th, sw),
                [2],
                lambda dev: [randn(n, n)(dev), randn(n, n)(dev)],
                lambda a, b_: a.double() @ b_.double() if cpu else a.float() @ b_.float(),
                lambda a, b_: a @ b_,
                work=2 * n**3,
                torch_name="torch (cuBLAS)",
            )
        )
    # dequantized (int4 weights) GEMM and batched GEMM
    dm, dn, dk = (100, 136, 200) if cpu else (4096, 4096, 4096)
    dcfg = (64, 64, 64, 2, 128) if cpu else (128, 128, 64, 2, 128)

    def dequant_inputs(dev):
        packed = torch.randint(0, 256, (dn, dk // 2), device=dev, dtype=torch.uint8)
        return [randn(dm, dk)(dev), packed, (torch.rand(dn, device=dev) * 0.1 + 0.01).to(f16)]

    def dequant_ref(a, packed, scale):
        low, high = (packed & 15).double() - 8, (packed >> 4).double() - 8
        w = torch.stack([low, high], dim=-1).reshape(packed.shape[0], -1)
        return (a.double() @ w.T) * scale.double()

    def dequant_torch(a, packed, scale):
        low, high = (packed & 15).to(f16) - 8, (packed >> 4).to(f16) - 8
        return (a @ torch.stack([low, high], dim=-1).reshape(packed.shape[0], -1).T) * scale

    out.append(
        Row(
            f"dequant GEMM fp16 x int4 {dm}x{dn}x{dk} {'x'.join(map(str, dcfg[:3]))} s{dcfg[3]} t{dcfg[4]}",
            "dequant_gemm",
            (dm, dn, dk, *dcfg),
            [3],
            dequant_inputs,
            dequant_ref,
            dequant_torch,
            work=2 * dm * dn * dk,
            torch_name="torch (unpack + cuBLAS)",
        )
    )
    bb, bs = (2, 100) if cpu else (16, 2048)
    bcfg = (64, 64, 32, 2, 128) if cpu else (128, 128, 32, 3, 128)
    out.append(
        Row(
            f"batched GEMM fp16 {bb}x{bs}^3 {'x'.join(map(str, bcfg[:3]))} s{bcfg[3]} t{bcfg[4]}",
            "batched_gemm",
            (bb, bs, bs, bs, *bcfg),
            [2],
            lambda dev: [randn(bb, bs, bs)(dev), randn(bb, bs, bs)(dev)],
            lambda a, b_: torch.bmm(a.double(), b_.double()) if cpu else torch.bmm(a.float(), b_.float()),
            lambda a, b_: torch.bmm(a, b_),
            work=2 * bb * bs**3,
            torch_name="torch (cuBLAS)",
        )
    )
    # GEMV, softmax, layernorm, RMSNorm: memory-bound (GB/s)
    gn, gk = (300, 200) if cpu else (16384, 16384)
    out.append(
        Row(
            f"GEMV fp16 {gn}x{gk} (block view 64x128)",
            "gemv",
            (gn, gk, 64, 128),
            [2],
            lambda dev: [randn(gk)(dev), randn(gn, gk)(dev)],
            lambda a, b_: b_.double() @ a.double(),
            lambda a, b_: b_ @ a,
            work=2 * gn * gk,
            unit="GB/s",
        )
    )
    m, nn = (10, 1000) if cpu else (16384, 4096)
    out.append(
        Row(
            f"softmax fp16 {m}x{nn} (exp2)",
            "softmax",
            (m, nn, 256 if not cpu else 128),
            [1],
            lambda dev: [randn(m, nn)(dev)],
            lambda x: torch.softmax(x.double(), -1),
            lambda x: torch.softmax(x, -1),
            work=4 * m * nn,
            unit="GB/s",
        )
    )
    out.append(
        Row(
            f"layernorm fp16 {m}x{nn}",
            "layernorm",
            (m, nn, 256 if not cpu else 128),
            [3],
            lambda dev: [randn(m, nn)(dev), randn(nn)(dev), randn(nn)(dev)],
            lambda x, w, b_: torch.nn.functional.layer_norm(x.double(), (nn,), w.double(), b_.double(), 1e-5),
            lambda x, w, b_: torch.nn.functional.layer_norm(x, (nn,), w, b_, 1e-5),
            work=4 * m * nn,
            unit="GB/s",
        )
    )
    out.append(
        Row(
            f"RMSNorm fp16 {m}x{nn}",
            "rmsnorm",
            (m, nn, 256 if not cpu else 128),
            [1],
            lambda dev: [randn(m, nn)(dev)],
            lambda x: x.double() * torch.rsqrt(x.double().pow(2).mean(-1, keepdim=True) + 1e-6),
            lambda x: torch.nn.functional.rms_norm(x, (nn,), eps=1e-6),
            work=4 * m * nn,
            unit="GB/s",
        )
    )
    out += decode_and_grouped_rows(cpu)
    return out


def gqa_decode_ref(q, k, v, mask):
    """Softmax(q k^T / sqrt(d)) v over the unmasked keys, query head h reading K/V head h // group."""
    import torch

    wide = torch.float64 if q.device.type == "cpu" else torch.float32
    b, h, d = q.shape
    g = k.shape[2]
    qg = q.to(wide).view(b, g, h // g, d)  # [batch, K/V head, its query heads, dim]
    kg, vg = (x.to(wide).permute(0, 2, 1, 3) for x in (k, v))  # [batch, K/V head, seq, dim]
    scores = qg @ kg.transpose(-1, -2) / math.sqrt(d)
    scores = scores.masked_fill(mask.permute(0, 2, 1)[:, :, None, :] == 0, float("-inf"))
    return (torch.softmax(scores, -1) @ vg).reshape(b, h, d)


def gqa_decode_sdpa(q, k, v, mask):
    import torch

    b, h, d = q.shape
    g = k.shape[2]
    keep = (mask != 0).permute(0, 2, 1).contiguous()[:, :, None, :]  # [batch, K/V head, 1, seq]
    out = torch.nn.functional.scaled_dot_product_attention(
        q.view(b, g, h // g, d), k.transpose(1, 2), v.transpose(1, 2), attn_mask=keep
    )
    return out.reshape(b, h, d)


def mla_decode_ref(q, q_pe, kv, k_pe, softmax_scale):
    import torch

    wide = torch.float64 if q.device.type == "cpu" else torch.float32
    latent, rope = kv[:, :, 0].to(wide), k_pe[:, :, 0].to(wide)  # [batch, seq, dim], [batch, seq, pe_dim]
    scores = (q.to(wide) @ latent.transpose(1, 2) + q_pe.to(wide) @ rope.transpose(1, 2)) * softmax_scale
    return torch.softmax(scores, -1) @ latent


def mla_decode_torch(q, q_pe, kv, k_pe, softmax_scale):
    """What eager PyTorch does with the same layout: three batched matmuls and a softmax."""
    import torch

    latent = kv[:, :, 0]
    scores = torch.baddbmm(q @ latent.transpose(1, 2), q_pe, k_pe[:, :, 0].transpose(1, 2))
    return torch.softmax(scores.float() * softmax_scale, -1).half() @ latent


def grouped_inputs(group_sizes, K, N, block_M):
    """A, B and the three int32 tables of TileLang's grouped GEMM example (offsets padded to block_M)."""
    import torch

    offsets, padded = [0], [0]
    for size in group_sizes[:-1]:
        offsets.append(offsets[-1] + size)
        padded.append(padded[-1] + -(-size // block_M) * block_M)

    def make(dev):
        a = torch.randn(sum(group_sizes), K, device=dev, dtype=torch.float16)
        b = torch.randn(len(group_sizes), K, N, device=dev, dtype=torch.float16)
        tables = [torch.tensor(t, device=dev, dtype=torch.int32) for t in (list(group_sizes), offsets, padded)]
        return [a, b, *tables]

    return make


def grouped_ref(a, b, sizes, offsets, padded):
    import torch

    wide = torch.float64 if a.device.type == "cpu" else torch.float32
    parts = torch.split(a.to(wide), sizes.tolist())
    return torch.cat([part @ b[g].to(wide) for g, part in enumerate(parts)])


def grouped_torch(a, b, sizes, offsets, padded, group_sizes):
    """One cuBLAS GEMM per group into slices of one output (sizes known on the host, as in serving)."""
    import torch

    out = torch.empty(a.shape[0], b.shape[2], device=a.device, dtype=a.dtype)
    start = 0
    for g, size in enumerate(group_sizes):
        torch.mm(a[start : start + size], b[g], out=out[start : start + size])
        start += size
    return out


def decode_and_grouped_rows(cpu: bool) -> list[Row]:
    """GQA decode, MLA decode, the thread-view GEMV and grouped GEMM (issue 14's remaining rows)."""
    import torch

    f16 = torch.float16
    out: list[Row] = []

    # GQA decode: example_gqa_decode's heads, its Hopper configuration (block_N 128, block_H 64,
    # 8 splits, 2 stages, 128 threads, warp specialization off as the example asks), batch 64
    b, h, g, s, d = (2, 12, 3, 200, 64) if cpu else (64, 32, 8, 8192, 128)
    cfg = (32, 16, 3, 2, 128) if cpu else (128, 64, 8, 2, 128)

    def gqa_inputs(dev, b=b, h=h, g=g, s=s, d=d):
        mask = torch.randint(0, 2, (b, s, g), device=dev, dtype=torch.uint8)
        return [torch.randn(*shape, device=dev, dtype=f16) for shape in ((b, h, d), (b, s, g, d), (b, s, g, d))] + [
            mask
        ]

    out.append(
        Row(
            f"GQA decode {b}x{h} heads/{g} kv heads x{s} D{d} masked (example_gqa_decode) "
            f"{cfg[0]}x{cfg[1]} split{cfg[2]} s{cfg[3]} t{cfg[4]}",
            "gqa_decode",
            (b, h, g, s, d, *cfg),
            [4],
            gqa_inputs,
            gqa_decode_ref,
            gqa_decode_sdpa,
            configs=("TL_DISABLE_WARP_SPECIALIZED",),
            work=2 * 2 * b * s * g * d + b * s * g,  # K and V once, the mask
            unit="GB/s",
            torch_name="SDPA (masked)",
        )
    )

    # MLA decode: example_mla_decode's main() (heads 128, latent 512 + rope 64, block_N 64,
    # block_H 64, 256 threads, no split, fast math), at batch 128 and an 8192-token context
    b, h, s, d, pe = (2, 48, 200, 64, 32) if cpu else (128, 128, 8192, 512, 64)
    bn, bh = (32, 16) if cpu else (64, 64)
    softmax_scale = (d + pe) ** -0.5

    def mla_inputs(dev):
        shapes = ((b, h, d), (b, h, pe), (b, s, 1, d), (b, s, 1, pe))
        return [torch.randn(*shape, device=dev, dtype=f16) for shape in shapes]

    out.append(
        Row(
            f"MLA decode {b}x{h} heads x{s} latent {d} + rope {pe} (example_mla_decode) {bh}x{bn} t256 fast-math",
            "mla_decode",
            (b, h, s, d, pe, bn, bh, 256, softmax_scale),
            [4],
            mla_inputs,
            lambda *x: mla_decode_ref(*x, softmax_scale),
            lambda *x: mla_decode_torch(*x, softmax_scale),
            fast_math=True,
            work=2 * b * h * s * (d + pe) + 2 * b * h * s * d,
            torch_name="torch (bmm + softmax)",
        )
    )

    # GEMV in the thread view: example_gemv's splitk_gemv_vectorized at its own call (BLOCK_N 2,
    # 32 reduce threads: 64 threads, 128-bit loads, atomics into shared memory)
    gn, gk = (30, 96) if cpu else (16384, 16384)
    gcfg = (2, 4) if cpu else (2, 32)
    out.append(
        Row(
            f"GEMV fp16 {gn}x{gk} (thread view {gcfg[0]}x{gcfg[1]}, shared atomics)",
            "gemv_threads",
            (gn, gk, *gcfg),
            [2],
            lambda dev: [torch.randn(gk, device=dev, dtype=f16), torch.randn(gn, gk, device=dev, dtype=f16)],
            lambda a, b_: b_.double() @ a.double(),
            lambda a, b_: b_ @ a,
            work=2 * gn * gk,
            unit="GB/s",
        )
    )

    # grouped GEMM: example_grouped_gemm_fwd's configuration (64x128x64, 2 stages, 256 threads),
    # eight groups of uneven sizes (an MoE layer's experts) at K = N = 4096
    sizes = (37, 70, 5, 101) if cpu else (1000, 1536, 700, 2100, 900, 1200, 1800, 756)
    gK, gN = (100, 136) if cpu else (4096, 4096)
    gcfg = (32, 64, 32, 2, 128) if cpu else (64, 128, 64, 2, 256)
    out.append(
        Row(
            f"grouped GEMM fp16 {len(sizes)} groups, {sum(sizes)} rows x{gK}x{gN} (example_grouped_gemm_fwd) "
            f"{'x'.join(map(str, gcfg[:3]))} s{gcfg[3]} t{gcfg[4]}",
            "grouped_gemm",
            (sizes, gK, gN, *gcfg),
            [5],
            grouped_inputs(sizes, gK, gN, gcfg[0]),
            grouped_ref,
            lambda *x: grouped_torch(*x, sizes),
            work=2 * sum(sizes) * gK * gN,
            torch_name="torch (cuBLAS per group)",
        )
    )
    return out


# ---------------------------------------------------------------------------- compile workers
def _warm(task):
    """Worker: compile (and run once, so Triton compiles) one (row, front end, choice)."""
    index, which, choice, cpu = task
    import torch

    load_kernels(which)  # imports outside the clock
    t0 = time.perf_counter()
    try:
        row = rows(cpu)[index]
        kernel = compile_row(row, which, choice)
        kernel(*row.inputs("cpu" if cpu else "cuda"))
        if not cpu:
            torch.cuda.synchronize()
        return task, time.perf_counter() - t0, None
    except Exception as exc:  # reported by the main process, which tries again itself
        return task, time.perf_counter() - t0, f"{type(exc).__name__}: {str(exc)[:300]}"


def prewarm(tasks, jobs: int) -> None:
    if jobs <= 1 or not tasks:
        return
    t0 = time.perf_counter()
    firsts = {}
    with cf.ProcessPoolExecutor(jobs, mp_context=mp.get_context("spawn")) as pool:
        for task, secs, err in pool.map(_warm, tasks):
            if err:
                print(f"  prewarm {task[1]} row {task[0]} {task[2] and task[2].label()}: {err}", flush=True)
            elif task[2] is None:
                firsts[task[0], task[1]] = secs
    print(f"prewarm: {len(tasks)} compiles in {time.perf_counter() - t0:.1f} s with {jobs} processes", flush=True)
    print("first call, empty caches, concurrent processes (s): row: TileLang / tile2triton")
    for index in sorted({i for i, _ in firsts}):
        print(
            f"  row {index}: {firsts.get((index, 'tilelang'), float('nan')):.1f} / {firsts.get((index, 't2t'), float('nan')):.1f}"
        )


# ---------------------------------------------------------------------------- measuring
def rel_err(out, ref) -> float:
    out, ref = out.double(), ref.double()
    if not bool(out.isfinite().all()):
        return float("nan")
    return float((out - ref).norm() / ref.norm())


def timed(fn, cpu: bool) -> list[float]:
    """Milliseconds of each timed run of ``fn`` (do_bench: L2 flushed before each)."""
    if cpu:
        t0 = time.perf_counter()
        fn()
        return [(time.perf_counter() - t0) * 1e3]
    import triton

    return list(triton.testing.do_bench(fn, warmup=25, rep=120, return_mode="all"))


def fmt_rate(row: Row, ms: float) -> str:
    if not ms or math.isnan(ms):
        return "-"
    return f"{row.work / ms / 1e9:.0f}" if row.unit == "TFLOP/s" else f"{row.work / ms / 1e6:.0f}"


def selected(index: int, name: str, spec: str) -> bool:
    """``--rows``: empty takes every row; else a comma-separated list of row numbers and name substrings."""
    if not spec:
        return True
    words = [w.strip() for w in spec.split(",") if w.strip()]
    return any(str(index) == w if w.isdigit() else w in name for w in words)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpu", action="store_true", help="tile2triton only, tiny sizes, Triton's interpreter")
    ap.add_argument(
        "--rows",
        "--only",
        dest="only",
        default="",
        help="comma-separated row numbers or substrings of row names (e.g. decode,grouped,GEMV); --list shows them",
    )
    ap.add_argument("--list", action="store_true", help="print the rows' numbers and names, and stop")
    ap.add_argument("--sweep", choices=("narrow", "wide"), help="also time tile2triton under launch candidates")
    ap.add_argument("--before", action="store_true", help="also time tile2triton launched as written (TUNE=0)")
    ap.add_argument("--cold", default="", help="comma-separated row numbers: first call in fresh processes")
    ap.add_argument("--cold-runs", type=int, default=3, help="fresh processes per --cold row and side (median)")
    ap.add_argument("--cold-one", nargs=2, metavar=("ROW", "WHICH"), help=argparse.SUPPRESS)
    ap.add_argument("--literal", action="store_true", help="TILE2TRITON_TUNE=0: threads/32 warps, source stages")
    ap.add_argument("--no-tilelang", action="store_true")
    ap.add_argument("--rounds", type=int, default=3, help="turns each implementation takes at timing")
    ap.add_argument("--jobs", type=int, default=min(14, os.cpu_count() or 1))
    ap.add_argument("--out", default="", help="also write the Markdown table here")
    ns = ap.parse_args(argv)
    if ns.literal:
        os.environ["TILE2TRITON_TUNE"] = "0"
    if ns.cold_one:
        return cold_one(int(ns.cold_one[0]), ns.cold_one[1])
    import torch

    from tile2triton.runtime import tuning

    dev = "cpu" if ns.cpu else "cuda"
    use_tl = not (ns.cpu or ns.no_tilelang)
    all_rows = rows(ns.cpu)
    if ns.list:
        for i, r in enumerate(all_rows):
            print(f"{i:3d}  {r.name}")
        return 0
    chosen = [(i, r) for i, r in enumerate(all_rows) if selected(i, r.name, ns.only)]
    if not chosen:
        print(f"--rows {ns.only!r} matches no row; --list shows them", file=sys.stderr)
        return 2
    capability = None if ns.cpu else torch.cuda.get_device_capability()

    # one process per compile first: TileLang's nvcc builds and Triton's compiles in parallel
    sweeps = {}
    if ns.sweep and not ns.cpu:
        for i, r in chosen:
            kernel = compile_row(r, "t2t")
            if not r.fast_math or "bhsd" not in r.name:  # fast-math leaves attention's code as it is
                cands = tuning.candidates(kernel.prim_func, capability, wide=ns.sweep == "wide")
                sweeps[i] = [c for c in cands if c != kernel.launch_choice and c != tuning.LITERAL][
                    : None if ns.sweep == "wide" else 4
                ]
    tasks = [(i, "t2t", None, ns.cpu) for i, _ in chosen]
    tasks += [(i, "tilelang", None, ns.cpu) for i, _ in chosen if use_tl]
    tasks += [(i, "t2t", c, ns.cpu) for i, cands in sweeps.items() for c in cands]
    if ns.before:
        tasks += [(i, "t2t", tuning.LITERAL, ns.cpu) for i, _ in chosen]
    if not ns.cpu:
        prewarm(tasks, ns.jobs)

    versions = [f"torch {torch.__version__}"]
    import triton

    versions.append(f"triton {triton.__version__}")
    if use_tl:
        import tilelang

        versions.append(f"tilelang {tilelang.__version__}")
    card = torch.cuda.get_device_name() if not ns.cpu else "CPU (interpreter)"
    header = f"{card} | {' | '.join(versions)} | {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    print(header, flush=True)
    lines = [
        "| kernel | TileLang ms | tile2triton ms | torch ms | TileLang | tile2triton | torch | t2t launch "
        "| err TileLang | err tile2triton | TileLang ms / tile2triton ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    sweep_lines = []
    before_lines = [
        "| kernel | TileLang ms | tile2triton as written ms | tile2triton tuned ms | before | after | launch | err |",
        "|---|---|---|---|---|---|---|---|",
    ]
    torch.manual_seed(0)
    for i, r in chosen:
        try:
            inputs = r.inputs(dev)
            ref = r.ref(*inputs)
            t2t = compile_row(r, "t2t")
            out_t2t = t2t(*inputs)
            err_t2t = rel_err(out_t2t, ref)
            launch = t2t.launch_choice.label() if t2t.launch_choice is not None else "-"
            if t2t.get_kernel_source().startswith("# Gluon"):  # codegen/gluon_attention.py: its own launch
                launch = "Gluon"
            fns = {"t2t": lambda: t2t(*inputs)}
            err_tl = float("nan")
            if use_tl:
                try:
                    tl_kernel = compile_row(r, "tilelang")
                    err_tl = rel_err(tl_kernel(*inputs), ref)
                    fns["tilelang"] = lambda: tl_kernel(*inputs)
                except Exception as exc:
                    print(f"  {r.name}: TileLang failed: {type(exc).__name__}: {str(exc)[:300]}", flush=True)
            if r.torch_fn is not None and not ns.cpu:
                try:  # a torch failure leaves the row's TileLang and tile2triton figures standing
                    err_torch = rel_err(r.torch_fn(*inputs), ref)
                    fns["torch"] = lambda: r.torch_fn(*inputs)
                    if not err_torch <= r.tol:
                        print(f"  !! {r.name}: torch error {err_torch:.2e} over {r.tol}", flush=True)
                except Exception as exc:
                    print(f"  {r.name}: torch failed: {type(exc).__name__}: {str(exc)[:300]}", flush=True)
            if ns.before:
                lit = compile_row(r, "t2t", tuning.LITERAL)
                before_err = rel_err(lit(*inputs), ref)
                fns["before"] = lambda: lit(*inputs)
            # the implementations take turns, ns.rounds times; each figure is the median of all its runs
            samples: dict = {k: [] for k in fns}
            for _ in range(1 if ns.cpu else ns.rounds):
                for k, fn in fns.items():
                    samples[k] += timed(fn, ns.cpu)
            ms = {k: sorted(v)[len(v) // 2] for k, v in samples.items()}
            counts = {k: len(v) for k, v in samples.items()}
            nan = float("nan")
            ms_t2t, ms_tl, ms_torch = ms["t2t"], ms.get("tilelang", nan), ms.get("torch", nan)
            if ns.before:
                ms_before = ms["before"]
                before_lines.append(
                    f"| {r.name} | {ms_tl:.3f} | {ms_before:.3f} | {ms_t2t:.3f} | {ms_tl / ms_before:.2f}× "
                    f"| {ms_tl / ms_t2t:.2f}× | {launch} | {before_err:.1e} |"
                )
            ratio = ms_tl / ms_t2t if use_tl else float("nan")
            unit = r.unit
            lines.append(
                f"| {r.name} | {ms_tl:.3f} | {ms_t2t:.3f} | {ms_torch:.3f} | {fmt_rate(r, ms_tl)} {unit} "
                f"| {fmt_rate(r, ms_t2t)} {unit} | {fmt_rate(r, ms_torch)} {unit} ({r.torch_name}) | {launch} "
                f"| {err_tl:.1e} | {err_t2t:.1e} | {ratio:.2f}× |"
            )
            print(lines[-1] + f"  (runs: {counts})", flush=True)
            if max(err_t2t, 0) > r.tol or math.isnan(err_t2t):
                print(f"  !! {r.name}: tile2triton error {err_t2t:.2e} over {r.tol}", flush=True)
            for c in sweeps.get(i, []):
                try:
                    k = compile_row(r, "t2t", c)
                    e = rel_err(k(*inputs), ref)
                    runs = timed(lambda k=k: k(*inputs), False)
                    sweep_lines.append(f"{r.name} | {c.label()} | {sorted(runs)[len(runs) // 2]:.3f} | err {e:.1e}")
                except Exception as exc:
                    sweep_lines.append(f"{r.name} | {c.label()} | failed: {type(exc).__name__}: {str(exc)[:160]}")
                print("  sweep " + sweep_lines[-1], flush=True)
            inputs = ref = out_t2t = None
            if not ns.cpu:
                torch.cuda.empty_cache()
        except Exception as exc:
            print(f"  {r.name}: failed: {type(exc).__name__}: {str(exc)[:400]}", flush=True)
    print()
    print(header)
    print("\n".join(lines))
    if sweep_lines:
        print("\nsweep (tile2triton launch choices):")
        print("\n".join(sweep_lines))
    if ns.before:
        print("\nbefore/after (TileLang ms / tile2triton ms, as written vs launch parameters chosen):")
        print("\n".join(before_lines))
    cold_rows = [int(x) for x in ns.cold.split(",") if x]
    cold_lines = cold_table(cold_rows, all_rows, use_tl, ns.cold_runs) if ns.cold else []
    if ns.out:
        text = [header, "", *lines, "", *sweep_lines, "", *(before_lines if ns.before else []), "", *cold_lines]
        Path(ns.out).write_text("\n".join(text) + "\n")
    return 0


def cold_one(index: int, which: str) -> int:
    """Child process: the first call of one row's kernel with empty caches, printed in seconds."""
    import torch
    import triton
    import triton.language as tl

    load_kernels(which)
    row = rows(False)[index]
    inputs = row.inputs("cuda")

    @triton.jit
    def _prime(x):  # Triton's driver utilities build once per cache: outside the clock, for both
        tl.store(x, 1.0)

    _prime[(1,)](torch.empty(1, device="cuda"))
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    kernel = compile_row(row, which)
    kernel(*inputs)
    torch.cuda.synchronize()
    print(f"COLD {time.perf_counter() - t0:.3f}")
    return 0


def cold_table(indices, all_rows, use_tl: bool, runs: int = 3) -> list[str]:
    """First-call seconds of each row, TileLang's and tile2triton's: the median of ``runs`` fresh
    processes each (empty Triton, tile2triton and TileLang caches), the range in brackets."""
    import statistics
    import subprocess
    import tempfile

    out = [
        f"| kernel | TileLang first call s | tile2triton first call s | tile2triton / TileLang (median of {runs}) |",
        "|---|---|---|---|",
    ]

    def once(index: int, which: str) -> float:
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ)
            for var in ("TRITON_CACHE_DIR", "TILE2TRITON_CACHE_DIR", "TILELANG_CACHE_DIR"):
                env[var] = os.path.join(tmp, var.lower())
            proc = subprocess.run(
                [sys.executable, __file__, "--cold-one", str(index), which],
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
        found = [ln for ln in proc.stdout.splitlines() if ln.startswith("COLD ")]
        if not found:
            print(f"  cold {which} row {index} failed: {proc.stderr[-600:]}", flush=True)
            return float("nan")
        return float(found[-1].split()[1])

    def cell(secs: list) -> str:
        return f"{statistics.median(secs):.2f} [{min(secs):.2f}–{max(secs):.2f}]" if len(secs) > 1 else f"{secs[0]:.2f}"

    for index in indices:
        secs = {which: [] for which in (("tilelang", "t2t") if use_tl else ("t2t",))}
        for _ in range(runs):  # the two sides take turns
            for which in secs:
                secs[which].append(once(index, which))
        tl = secs.get("tilelang", [float("nan")])
        ratio = statistics.median(secs["t2t"]) / statistics.median(tl)
        out.append(f"| {all_rows[index].name} | {cell(tl)} | {cell(secs['t2t'])} | {ratio:.2f} |")
        print(out[-1], flush=True)
    return out


if __name__ == "__main__":
    sys.exit(main())
