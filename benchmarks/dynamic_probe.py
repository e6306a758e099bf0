"""GPU probe (issue 23): TileLang's dynamic_shape/example_dynamic (128x128x32 tiles, 3 stages, 128
threads, fp16 in / fp16 out, fp32 accumulation) at the suite's shape 4096^3 and the variant's
3000 x 2600 x 1000 (no size a multiple of 16; rows 16-byte aligned), with
``TILE2TRITON_SIZE_MULTIPLES`` off and on; plus 3001 x 2601 x 1001 (no alignment: the fallback).
Checked against torch in float32; ``triton.testing.do_bench`` medians (ms, event time).
TileLang's kernel time at 3000 x 2600 x 1000 on the H200: 0.0791 ms (tile2triton 0.1152 before).

    PYTHONPATH=. python3 benchmarks/dynamic_probe.py
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
import triton  # noqa: E402

import tile2triton as tilelang  # noqa: E402
import tile2triton.language as T  # noqa: E402


def matmul_dynamic(block_M=128, block_N=128, block_K=32, num_stages=3, threads=128):
    M, N, K = T.dynamic("m"), T.dynamic("n"), T.dynamic("k")

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "float16")
            B_shared = T.alloc_shared((block_K, block_N), "float16")
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def main():
    shapes = [(4096, 4096, 4096), (3000, 2600, 1000), (3001, 2601, 1001)]
    print("| M, N, K | SIZE_MULTIPLES | ms (median) | TFLOP/s | max abs err |")
    print("|---|---|---|---|---|")
    for switch in ("0", "1"):
        os.environ["TILE2TRITON_SIZE_MULTIPLES"] = switch
        kernel = tilelang.compile(matmul_dynamic(), out_idx=[2])
        for M, N, K in shapes:
            a = torch.randn(M, K, device="cuda", dtype=torch.float16)
            b = torch.randn(K, N, device="cuda", dtype=torch.float16)
            ref = a.float() @ b.float()
            out = kernel(a, b)
            err = (out.float() - ref).abs().max().item()
            ok = torch.allclose(out.float(), ref, atol=0.5, rtol=1e-2)
            ms = triton.testing.do_bench(lambda: kernel(a, b), warmup=25, rep=200, return_mode="median")  # noqa: B023
            tflops = 2 * M * N * K / ms / 1e9
            print(f"| {M}, {N}, {K} | {switch} | {ms:.4f} | {tflops:.0f} | {err:.3g}{'' if ok else ' MISMATCH'} |")


if __name__ == "__main__":
    main()
