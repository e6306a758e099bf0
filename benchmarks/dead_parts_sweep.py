"""Gemms whose tile is wider than the tensor, with ``TILE2TRITON_DEAD_PARTS`` on and off
(passes/dead_parts.py): the measurements behind cutting a tile at the power of two past which every
store lands outside the tensor.

Kernel: tests/test_dead_parts.py's ``C = relu(A B + bias)`` in float16 with a float32 accumulator,
tiles of BM x BN x BK, 3 stages, the epilogue stored by ``T.copy`` (``direct``) or element by element
in its ``T.Parallel`` (``elements``).  Each shape is compiled with the switch on and off, checked
against torch in float32 and timed with ``triton.testing.do_bench`` (median, L2 flushed).  From the
repo root on the GPU:

    PYTHONPATH=. python benchmarks/dead_parts_sweep.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_dead_parts import gemm_epilogue  # noqa: E402  (the tests' kernel)

# (M, N, K, BM, BN, BK, threads): N or M under half the tile (cut), and controls that are not cut
SHAPES = [
    (8192, 128, 4096, 128, 256, 64, 256),  # F 128 under 256 columns: cut to 128
    (8192, 96, 4096, 128, 256, 64, 256),  # 96 live: cut to 128
    (4096, 64, 8192, 128, 256, 64, 256),  # cut to 64
    (16384, 128, 1152, 128, 256, 64, 256),  # the convolution's gemm dims (a 3 x 3 x 128 K)
    (100, 4096, 4096, 256, 128, 64, 256),  # one 256-row block over 100 rows: cut to 128 rows
    (8192, 192, 4096, 128, 256, 64, 256),  # control: 192 live needs all 256 columns
    (8192, 256, 4096, 128, 256, 64, 256),  # control: nothing past the tensor
]


def main() -> None:
    import torch
    import triton

    import tile2triton as tilelang

    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, Triton {triton.__version__}")
    print("| M, N, K | tile | store | blocks | off us | on us | off / on | max err (off, on) |")
    print("|---|---|---|---|---|---|---|---|")
    for M, N, K, BM, BN, BK, threads in SHAPES:
        gen = torch.Generator().manual_seed(0)
        a = torch.randn(M, K, generator=gen).half().cuda()
        b = torch.randn(K, N, generator=gen).half().cuda()
        bias = torch.randn(N, generator=gen).cuda()
        ref = torch.relu(a.float() @ b.float() + bias)
        blocks = -(-N // BN) * -(-M // BM)
        for store in ("direct", "elements"):
            times, errs = {}, {}
            for switch in ("0", "1"):
                os.environ["TILE2TRITON_DEAD_PARTS"] = switch
                kernel = tilelang.compile(gemm_epilogue(M, N, K, BM, BN, BK, store, threads, 3), out_idx=[3])
                out = kernel(a, b, bias)
                errs[switch] = float((out.float() - ref).abs().max() / ref.abs().max())
                times[switch] = triton.testing.do_bench(lambda: kernel(a, b, bias), return_mode="median") * 1e3
            print(
                f"| {M}, {N}, {K} | {BM} x {BN} x {BK}, {threads} threads | {store} | {blocks} | {times['0']:.1f} | "
                f"{times['1']:.1f} | {times['0'] / times['1']:.2f}x | {errs['0']:.1e}, {errs['1']:.1e} |"
            )


if __name__ == "__main__":
    main()
