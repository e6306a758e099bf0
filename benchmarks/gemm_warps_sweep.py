"""One-gemm loops whose fragments a thread of the source's warps cannot hold: their launch warps
against the shape, the measurements behind ``runtime/tuning.py``'s ``_held_warps``
(``TILE2TRITON_HELD_WARPS``).

Kernels (written after TileLang's examples; wgmma-sized gemms, 128 threads in the source):

* ``fp8_2xacc``: ``examples/gemm_fp8/example_tilelang_gemm_fp8_2xAcc.py``'s kernel, a 128 x 128
  fp32 accumulator cleared every 128 of K and added into a second one (256 registers a thread of
  4 warps);
* ``f16_128x256``: a float16 gemm of one 128 x 256 fp32 accumulator (256 registers a thread of 4
  warps);
* ``f16_128x128``: the control, one 128 x 128 accumulator (128 registers a thread: the rule keeps
  the source's 4 warps).

Each is compiled at 4 and 8 warps (the source's stages, 3) and at the heuristic's choice, and
checked against torch in float32.  Times are ``triton.testing.do_bench`` medians (L2 flushed).
From the repo root on the GPU:

    PYTHONPATH=. python benchmarks/gemm_warps_sweep.py --jobs 12 [--kinds fp8_2xacc ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from prewarm import prewarm  # noqa: E402

WARPS = (4, 8)
KINDS = ("fp8_2xacc", "f16_128x256", "f16_128x128")
SIZES = [  # (M, N, K): the suite's, square ones, ragged ones, a grid under one wave, a short K
    (1024, 1024, 8192),
    (2048, 2048, 4096),
    (4096, 4096, 4096),
    (1000, 1500, 3000),
    (1408, 1536, 4096),  # 11 x 12 = 132 blocks of 128 x 128: one an SM
    (1536, 1664, 4096),  # 12 x 13 = 156: a second block on some SMs
    (512, 768, 16384),
    (8192, 8192, 1024),
]


def factory(kind: str, m: int, n: int, k: int):
    import tile2triton.language as T

    fp8 = kind == "fp8_2xacc"
    dtype = "float8_e4m3" if fp8 else "float16"
    block_m, block_n, block_k = (128, 256, 64) if kind == "f16_128x256" else (128, 128, 64)
    interval = 128 // block_k

    @T.prim_func
    def main(A: T.Tensor((m, k), dtype), B: T.Tensor((n, k), dtype), C: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(n, block_n), T.ceildiv(m, block_m), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_m, block_k), dtype)
            B_shared = T.alloc_shared((block_n, block_k), dtype)
            C_shared = T.alloc_shared((block_m, block_n), "float32")
            C_local = T.alloc_fragment((block_m, block_n), "float32")
            C_accum = T.alloc_fragment((block_m, block_n), "float32")
            T.clear(C_local)
            T.clear(C_accum)
            iters = T.ceildiv(k, block_k)
            for ko in T.Pipelined(iters, num_stages=3):
                T.copy(A[by * block_m, ko * block_k], A_shared)
                T.copy(B[bx * block_n, ko * block_k], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
                if fp8:
                    if (ko + 1) % interval == 0:
                        for i, j in T.Parallel(block_m, block_n):
                            C_accum[i, j] += C_local[i, j]
                        T.clear(C_local)
            if fp8:
                if iters % interval != 0:
                    for i, j in T.Parallel(block_m, block_n):
                        C_accum[i, j] += C_local[i, j]
                T.copy(C_accum, C_shared)
            else:
                T.copy(C_local, C_shared)
            T.copy(C_shared, C[by * block_m, bx * block_n])

    return main


def compile_one(kind, size, warps):
    """The kernel at the heuristic's launch (warps None) or at ``warps`` with its stages."""
    from tile2triton.runtime import tuning
    from tile2triton.runtime.kernel import JITKernel

    func = JITKernel.bind_prim_func(factory(kind, *size), [2])
    if warps is None:
        return JITKernel(func)
    chosen = tuning.resolve(tuning.heuristic(func, (9, 0)), tuning.LaunchChoice(4, 3))
    return JITKernel(func, launch=tuning.LaunchChoice(warps, chosen.num_stages))


def inputs(kind, size):
    import torch

    m, n, k = size
    gen = torch.Generator(device="cpu").manual_seed(0)
    a, b = torch.randn(m, k, generator=gen), torch.randn(n, k, generator=gen)
    dtype = torch.float8_e4m3fn if kind == "fp8_2xacc" else torch.float16
    return a.to(dtype).cuda(), b.to(dtype).cuda()


def _warm(task):
    kind, size, warps = task
    compile_one(kind, size, warps)(*inputs(kind, size))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--kinds", nargs="*", default=list(KINDS), choices=KINDS)
    ns = ap.parse_args(argv)
    import torch
    import triton

    kinds = ns.kinds
    tasks = [(kind, size, w) for kind in kinds for size in SIZES for w in (None, *WARPS)]
    prewarm(tasks, _warm, ns.jobs)
    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, Triton {triton.__version__}")
    print("| kernel | M, N, K | blocks | heuristic | " + " | ".join(f"w{w} us" for w in WARPS) + " | heuristic us |")
    print("|---|---|---|---|" + "---|" * len(WARPS) + "---|")
    for kind in kinds:
        for size in SIZES:
            a, b = inputs(kind, size)
            ref = a.float() @ b.float().T
            cells, label = {}, "?"
            for warps in (None, *WARPS):
                try:
                    kernel = compile_one(kind, size, warps)
                    out = kernel(a, b)
                    err = float((out - ref).abs().max() / ref.abs().max())
                    us = triton.testing.do_bench(lambda: kernel(a, b), warmup=25, rep=100, return_mode="median") * 1e3
                    cells[warps] = f"{us:.1f}" + ("" if err < 1e-3 else f" (err {err:.1e})")
                    if warps is None:
                        label = kernel.launch_choice.label() if kernel.launch_choice else "literal"
                except Exception as exc:  # noqa: BLE001 - a cell, not the end
                    cells[warps] = f"{type(exc).__name__}: {str(exc)[:60]}"
            m, n, _ = size
            blocks = -(-m // 128) * -(-n // (256 if kind == "f16_128x256" else 128))
            print(
                f"| {kind} | {', '.join(map(str, size))} | {blocks} | {label} | "
                + " | ".join(cells[w] for w in WARPS)
                + f" | {cells[None]} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
