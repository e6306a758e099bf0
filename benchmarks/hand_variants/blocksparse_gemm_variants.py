"""GPU probe (issue 23, session 34): TileLang's ``example_blocksparse_gemm`` kernel (128/128/32 tiles,
``if BlockMask[by, bx, k]`` around two copies and a gemm in a 2-stage ``T.Pipelined`` loop) as
tile2triton writes it and hand variants, at several shapes and mask densities; kernel us
(CUPTI, L2 flushed before each call, as the suite's ``kernel_ms``).

- ``gen``: as generated (speculate.py: the copies issued before the ``if`` with the mask in their
  mask; the ``tl.dot`` inside ``if guard:``, where Triton's pipeliner cannot make it asynchronous);
  ``gen, 5 stages`` the same, prefetching 4 iterations ahead instead of 2 (session 35: TileLang's
  producer counts its stages in active blocks, so at density d it runs 2 / d iterations ahead);
- ``dense``: the dot outside the ``if`` (its operands are zeros where the mask is false, so the sum is
  the same; the tensor cores do the skipped blocks' work too);
- ``compact``: the loop over the active blocks only: the mask row loaded once, each active block's
  rank by a cumulative sum, the j-th active k found by a masked sum; loads and dot unconditional.

``--tilelang`` times real TileLang's kernel at the same shapes and masks instead (its own compile of
the example, the same config).  ``--compact-source`` (session 35) times, through tile2triton, the example
and the example rewritten in TileLang to loop over the active blocks (``COMPACT_TILELANG`` below: the flags'
cumulative sum gives each active block's rank, a masked sum the j-th one's k; what a pass compacting such
loops would emit, with TMA loads on Hopper since the clamped k keeps the tiles inside the tensors).  Each row: shape, density, us per variant, max abs error against a
float32 torch reference of the masked product.

    PYTHONPATH=. python3 benchmarks/hand_variants/blocksparse_gemm_variants.py [--tilelang | --compact-source]
"""

import importlib.util
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tilelang_regression_suite"))
from child import kernel_ms  # noqa: E402

SHAPES = [(1024, 1024, 1024), (2048, 1024, 2560), (4096, 4096, 2048)]
DENSITIES = [0.2, 0.5, 0.8]
# --shapes 1024x1024x16384,... / --densities 0.05,0.5: other shapes (session 36: long K, many trips)
for _flag, _parse in (("--shapes", lambda v: [tuple(map(int, x.split("x"))) for x in v.split(",")]),
                      ("--densities", lambda v: [float(x) for x in v.split(",")])):  # fmt: skip
    if _flag in sys.argv:
        globals()["SHAPES" if _flag == "--shapes" else "DENSITIES"] = _parse(sys.argv[sys.argv.index(_flag) + 1])
BM, BN, BK = 128, 128, 32

SRC = """
import triton
import triton.language as tl


@triton.jit
def swizzled(GN: tl.constexpr, GM: tl.constexpr):
    block_idx = tl.program_id(0) + tl.program_id(1) * GN
    panel_idx = block_idx // (10 * GN)
    panel_offset = block_idx % (10 * GN)
    panel_rows = tl.minimum(10, GM - panel_idx * 10)
    bx = tl.where(panel_idx % 2 == 1, GN - 1 - panel_offset // panel_rows, panel_offset // panel_rows)
    by = panel_offset % panel_rows + panel_idx * 10
    return bx, by


@triton.jit
def guarded(A, B, BlockMask, C, N: tl.constexpr, K: tl.constexpr, GN: tl.constexpr, GM: tl.constexpr,
            DOT_IN_IF: tl.constexpr, STAGES: tl.constexpr):
    bx, by = swizzled(GN, GM)
    NK: tl.constexpr = K // 32
    acc = tl.zeros([128, 128], tl.float32)
    for k in tl.range(0, NK, num_stages=STAGES):
        guard = tl.load(BlockMask + by * GN * NK + bx * NK + k) != 0
        i0 = tl.arange(0, 128)[:, None]
        i1 = tl.arange(0, 32)[None, :]
        a = tl.load(A + (by * 128 + i0) * K + (k * 32 + i1), mask=guard, other=0)
        j0 = tl.arange(0, 32)[:, None]
        j1 = tl.arange(0, 128)[None, :]
        b = tl.load(B + (k * 32 + j0) * N + (bx * 128 + j1), mask=guard, other=0)
        if DOT_IN_IF:  # gen: as tile2triton writes it
            if guard:
                acc = tl.dot(a, b, acc)
        else:  # dense: the operands are zeros where the guard is false
            acc = tl.dot(a, b, acc)
    r = tl.arange(0, 128)[:, None]
    c = tl.arange(0, 128)[None, :]
    tl.store(C + (by * 128 + r) * N + (bx * 128 + c), acc.to(tl.float16))


@triton.jit
def compact(A, B, BlockMask, C, N: tl.constexpr, K: tl.constexpr, GN: tl.constexpr, GM: tl.constexpr,
            NKP: tl.constexpr):
    bx, by = swizzled(GN, GM)
    NK: tl.constexpr = K // 32
    ks = tl.arange(0, NKP)
    active = tl.load(BlockMask + by * GN * NK + bx * NK + ks, mask=ks < NK, other=0) != 0
    flags = active.to(tl.int32)
    count = tl.sum(flags, 0)
    rank = tl.where(active, tl.cumsum(flags, 0) - 1, -1)
    acc = tl.zeros([128, 128], tl.float32)
    for j in tl.range(0, count, num_stages=3):
        k = tl.sum(tl.where(rank == j, ks, 0), 0)
        i0 = tl.arange(0, 128)[:, None]
        i1 = tl.arange(0, 32)[None, :]
        a = tl.load(A + (by * 128 + i0) * K + (k * 32 + i1))
        j0 = tl.arange(0, 32)[:, None]
        j1 = tl.arange(0, 128)[None, :]
        b = tl.load(B + (k * 32 + j0) * N + (bx * 128 + j1))
        acc = tl.dot(a, b, acc)
    r = tl.arange(0, 128)[:, None]
    c = tl.arange(0, 128)[None, :]
    tl.store(C + (by * 128 + r) * N + (bx * 128 + c), acc.to(tl.float16))
"""


def inputs(M, N, K, density):
    torch.manual_seed(42)
    a = torch.randn(M, K, device="cuda").half()
    b = torch.randn(K, N, device="cuda").half()
    mask = torch.rand((M // BM, N // BN, K // BK), device="cuda") < density
    expand = mask.repeat_interleave(BM, 0).repeat_interleave(BN, 1).repeat_interleave(BK, 2)  # [M, N, K]
    ref = None
    if M * N * K <= 2048 * 1024 * 2560:  # the reference's [M, N, K] mask fits
        ref = torch.einsum("mk,kn,mnk->mn", a.float(), b.float(), expand.float())
    return a, b, mask, ref


def ours():
    from variant_tools import kernel_from_source

    guarded = kernel_from_source(SRC, "bsgemm_variants", "guarded")
    compact = kernel_from_source(SRC, "bsgemm_variants", "compact")
    # name -> the kernel and its own constexpr arguments (compact's NKP per shape, below)
    kernels = {
        "gen": (guarded, {"DOT_IN_IF": True, "STAGES": 3}),
        "gen, 5 stages": (guarded, {"DOT_IN_IF": True, "STAGES": 5}),
        "dense": (guarded, {"DOT_IN_IF": False, "STAGES": 3}),
        "compact": (compact, {}),
    }
    print("| M, N, K | density | " + " | ".join(f"{name} us" for name in kernels) + " | max err (same order) |")
    print("|---|---|" + "---|" * len(kernels) + "---|")
    for M, N, K in SHAPES:
        for density in DENSITIES:
            a, b, mask, ref = inputs(M, N, K, density)
            grid = (N // BN, M // BM)
            mask_u8 = mask.to(torch.uint8)  # the bool mask as bytes
            times, errs = [], []
            for name, (fn, extra) in kernels.items():
                c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
                if name == "compact":
                    extra = {"NKP": triton_next_pow2(K // BK)}

                def call(fn=fn, c=c, extra=extra, mask_u8=mask_u8):
                    fn[grid](a, b, mask_u8, c, N, K, N // BN, M // BM, num_warps=4, **extra)

                call()
                torch.cuda.synchronize()
                errs.append("-" if ref is None else f"{(c.float() - ref).abs().max().item():.3g}")
                times.append(kernel_ms(call) * 1e3)
            print(
                f"| {M}, {N}, {K} | {density} | " + " | ".join(f"{t:.1f}" for t in times) + f" | {' / '.join(errs)} |"
            )


def triton_next_pow2(n):
    p = 1
    while p < n:
        p *= 2
    return p


COMPACT_TILELANG = """
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def compact(M, N, K, bm=128, bn=128, bk=32, stages=2, threads=128):
    NK = K // bk
    NKP = 1 << (NK - 1).bit_length()

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             BlockMask: T.Tensor((M // bm, N // bn, NK), "bool"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((bm, bk), "float16")
            B_shared = T.alloc_shared((bk, bn), "float16")
            C_local = T.alloc_fragment((bm, bn), "float")
            flags = T.alloc_fragment((NKP,), "int32")
            ranks = T.alloc_fragment((NKP,), "int32")
            count = T.alloc_fragment((1,), "int32")
            T.use_swizzle(panel_size=10)
            T.clear(C_local)
            for t in T.Parallel(NKP):
                flags[t] = T.if_then_else(t < NK, T.Cast("int32", BlockMask[by, bx, T.min(t, NK - 1)]), 0)
            T.cumsum(flags, ranks)
            T.reduce_sum(flags, count, dim=0)
            for j in T.Pipelined(count[0], num_stages=stages):
                pick = T.alloc_fragment((NKP,), "int32")
                kk = T.alloc_fragment((1,), "int32")
                for t in T.Parallel(NKP):
                    pick[t] = T.if_then_else((flags[t] != 0) & (ranks[t] == j + 1), t, 0)
                T.reduce_sum(pick, kk, dim=0)
                k = T.min(T.max(kk[0], 0), NK - 1)
                T.copy(A[by * bm, k * bk], A_shared)
                T.copy(B[k * bk, bx * bn], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * bm, bx * bn])

    return main
"""


def compact_source():
    """The example and its compacted rewrite, both through tile2triton (kernel us)."""
    from tile2triton.cli import install_tilelang_alias

    install_tilelang_alias()
    sys.path.insert(0, os.path.join(os.getcwd(), ".tlx", "examples", "blocksparse_gemm"))
    import example_blocksparse_gemm as example

    path = "/tmp/bsgemm_compact_tilelang.py"  # tile2triton reads a kernel's source from its file
    with open(path, "w") as f:
        f.write(COMPACT_TILELANG)
    spec = importlib.util.spec_from_file_location("bsgemm_compact_tilelang", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    print("| M, N, K | density | example us | compacted us | max err example / compacted |")
    print("|---|---|---|---|---|")
    for M, N, K in SHAPES:
        kernel = module.compact(M, N, K)
        for density in DENSITIES:
            a, b, mask, ref = inputs(M, N, K, density)
            args = (BM, BN, BK, 2, 128, True)
            runs = [lambda: example.blocksparse_matmul(a, b, mask, *args), lambda: kernel(a, b, mask)]
            errs = ["-" if ref is None else f"{(run().float() - ref).abs().max().item():.3g}" for run in runs]
            us = [kernel_ms(run) * 1e3 for run in runs]
            print(f"| {M}, {N}, {K} | {density} | {us[0]:.1f} | {us[1]:.1f} | {' / '.join(errs)} |")


def tilelang():
    sys.path.insert(0, os.path.join(os.getcwd(), ".tlx", "examples", "blocksparse_gemm"))
    import example_blocksparse_gemm as example

    print("| M, N, K | density | TileLang us | max err |")
    print("|---|---|---|---|")
    for M, N, K in SHAPES:
        for density in DENSITIES:
            a, b, mask, ref = inputs(M, N, K, density)
            args = (BM, BN, BK, 2, 128, True)
            c = example.blocksparse_matmul(a, b, mask, *args)
            torch.cuda.synchronize()
            err = "-" if ref is None else f"{(c.float() - ref).abs().max().item():.3g}"
            us = kernel_ms(lambda: example.blocksparse_matmul(a, b, mask, *args)) * 1e3
            print(f"| {M}, {N}, {K} | {density} | {us:.1f} | {err} |")


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    if "--tilelang" in sys.argv:
        tilelang()
    elif "--compact-source" in sys.argv:
        compact_source()
    else:
        ours()
