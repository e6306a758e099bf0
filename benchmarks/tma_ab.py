"""A/B of tile2triton's tensor-descriptor (TMA) loads: the same transpiled kernel compiled with
TILE2TRITON_TENSOR_DESCRIPTORS=1 and =0, timed alternately in one process (do_bench medians).

    PYTHONPATH=. python benchmarks/tma_ab.py
"""

import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import bench  # noqa: E402
from flash_attention import flashattn  # noqa: E402


def compiled(make, inputs, descriptors: bool):
    os.environ["TILE2TRITON_TENSOR_DESCRIPTORS"] = "1" if descriptors else "0"
    try:
        cached = make()  # the factory caches its kernel: lower a fresh one under this setting
        kernel = type(cached)(cached.prim_func, cached.target)
        kernel(*inputs)  # lower, compile and warm up now
    finally:
        del os.environ["TILE2TRITON_TENSOR_DESCRIPTORS"]
    return kernel


def main():
    cases = []
    for size, dtype, tdt in ((8192, "float16", torch.float16), (8192, "bfloat16", torch.bfloat16)):
        for cfg in ((128, 256, 64, 3, 256, 8), (128, 128, 32, 3, 128, 8)):
            xs = [torch.randn(size, size, device="cuda", dtype=tdt) for _ in range(2)]
            cases.append(
                (
                    f"GEMM {dtype} {size}^3 {cfg[0]}x{cfg[1]}x{cfg[2]}",
                    lambda s=size, d=dtype, c=cfg: bench.tl_gemm(s, s, s, *c, d),
                    xs,
                )
            )
    for dim, causal, tiles in (
        (128, False, (128, 64, 2, 128)),
        (128, True, (128, 64, 2, 128)),
        (64, False, (128, 64, 3, 128)),
        (64, True, (64, 64, 2, 128)),
    ):
        xs = [torch.randn(4, 32, 4096, dim, device="cuda", dtype=torch.float16) for _ in range(3)]
        cases.append(
            (
                f"flash attn D{dim}{' causal' if causal else ''}",
                lambda d=dim, c=causal, t=tiles: flashattn(4, 32, 4096, 4096, d, c, *t),
                xs,
            )
        )
    print("| kernel | TMA ms | pointer ms | TMA / pointer |\n|---|---|---|---|")
    for name, make, xs in cases:
        on, off = compiled(make, xs, True), compiled(make, xs, False)
        assert "make_tensor_descriptor" in on.get_kernel_source(interpret=False)
        times = {True: [], False: []}
        for _ in range(3):  # alternate, so clock drift hits both
            for flag, k in ((True, on), (False, off)):
                times[flag].append(triton.testing.do_bench(lambda k=k: k(*xs), return_mode="median"))
        t_on, t_off = sorted(times[True])[1], sorted(times[False])[1]
        print(f"| {name} | {t_on:.3f} | {t_off:.3f} | {t_on / t_off:.2f} |", flush=True)


if __name__ == "__main__":
    main()
