"""TileLang's tensor-core emitter gemm (``examples/gemm/example_gemm_intrinsics.py``'s kernel: ldmatrix_a/b
and mma over a k loop, stmatrix into a 4-D shared tile) through tile2triton, against torch.matmul.

    python3 benchmarks/mma_emitter_gemm.py             # on the GPU: a table of median ms (do_bench)
    python3 benchmarks/mma_emitter_gemm.py --offline   # no GPU: compile for sm_90, print TTGIR facts

The fragment operations are lowered through their tile form (frontend/rules_fragments.py): one
``tl.dot`` of the shared tiles per k tile.  ``--offline`` shows the tensor-core dot in the TTGIR,
the registers, shared memory and whether PTX spills to local memory.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

import tile2triton as tilelang  # noqa: E402
import tile2triton.language as T  # noqa: E402
from tile2triton.cuda.intrinsics.macro.mma_macro_generator import TensorCoreIntrinEmitter  # noqa: E402


def emitter_gemm(M, N, K, in_dtype="float16", out_dtype="float16", accum_dtype="float32"):  # noqa: N803
    """The example's kernel (2 x 2 warps of 64 x 64, chunk 32, two stages), C = A @ B^T."""
    block_row_warps = block_col_warps = 2
    warp_row_tiles = warp_col_tiles = 64
    chunk, stage = 32, 2
    block_m, block_n = block_row_warps * warp_row_tiles, block_col_warps * warp_col_tiles
    emitter = TensorCoreIntrinEmitter(
        a_dtype=in_dtype, b_dtype=in_dtype, accum_dtype=accum_dtype, a_transposed=False, b_transposed=True,
        block_row_warps=block_row_warps, block_col_warps=block_col_warps, warp_row_tiles=warp_row_tiles,
        warp_col_tiles=warp_col_tiles, chunk=chunk,
    )  # fmt: skip
    mx, my, mk = emitter.micro_size_x, emitter.micro_size_y, emitter.micro_size_k
    local_a = emitter.warp_rows * emitter.local_size_a
    local_b = emitter.warp_cols * emitter.local_size_b
    local_c = emitter.warp_rows * emitter.warp_cols * emitter.local_size_out

    @T.prim_func
    def main(A: T.Tensor((M, K), in_dtype), B: T.Tensor((N, K), in_dtype), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_n), T.ceildiv(M, block_m), threads=emitter.threads) as (bx, by):
            A_shared = T.alloc_shared((block_m, chunk), in_dtype)
            B_shared = T.alloc_shared((block_n, chunk), in_dtype)
            C_shared = T.alloc_shared((block_m // mx, block_n // my, mx, my), out_dtype)
            A_local = T.alloc_local((local_a,), in_dtype)
            B_local = T.alloc_local((local_b,), in_dtype)
            C_local = T.alloc_local((local_c,), accum_dtype)
            T.use_swizzle(panel_size=10)
            T.clear(C_local)
            for ko in T.Pipelined(K // chunk, num_stages=stage):
                for i, k in T.Parallel(block_m, chunk):
                    A_shared[i, k] = A[by * block_m + i, ko * chunk + k]
                for j, k in T.Parallel(block_n, chunk):
                    B_shared[j, k] = B[bx * block_n + j, ko * chunk + k]
                for ki in T.serial(chunk // mk):
                    emitter.ldmatrix_a(A_local, A_shared, ki)
                    emitter.ldmatrix_b(B_local, B_shared, ki)
                    emitter.mma(A_local, B_local, C_local)
            emitter.stmatrix(C_local, C_shared)
            for i, j in T.Parallel(block_m, block_n):
                C[by * block_m + i, bx * block_n + j] = C_shared[i // mx, j // my, i % mx, j % my]

    return main


def offline(sizes) -> None:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    print("| M=N=K | TTGIR dot | regs | shared (B) | PTX local ld/st | spills |")
    print("|---|---|---|---|---|---|")
    for n in sizes:
        kernel = tilelang.compile(emitter_gemm(n, n, n))
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "generated_mma_emitter.py")
            with open(path, "w") as f:
                f.write(kernel.get_kernel_source())
            spec = importlib.util.spec_from_file_location("generated_mma_emitter", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            fns = [v for v in vars(mod).values() if isinstance(v, triton.runtime.jit.JITFunction)]
            fn = fns[0]
            signature = {a: "*fp16" if a in ("A", "B", "C") else "*i8" for a in fn.arg_names}
            attrs = {(i,): [["tt.divisibility", 16]] for i in range(len(fn.arg_names))}
            compiled = triton.compile(
                ASTSource(fn, signature, {}, attrs), target=GPUTarget("cuda", 90, 32),
                options={"num_warps": kernel.num_warps},
            )  # fmt: skip
        ttgir, ptx = compiled.asm["ttgir"], compiled.asm["ptx"]
        dot = "ttng.warp_group_dot" if "ttng.warp_group_dot" in ttgir else ("tt.dot" if "tt.dot" in ttgir else "none")
        local = "ld.local" in ptx or "st.local" in ptx
        regs, spills = _resource_usage(compiled.asm["cubin"])
        print(f"| {n} | {dot} | {regs} | {compiled.metadata.shared} | {'yes' if local else 'no'} | {spills} |")


def _resource_usage(cubin: bytes) -> tuple[str, str]:
    """(registers, spill stores/loads) of a cubin, from cuobjdump (shipped with Triton's wheel)."""
    import re
    import subprocess

    import triton

    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        out = subprocess.run([tool, "--dump-resource-usage", f.name], capture_output=True, text=True).stdout
    regs = re.search(r"REG:(\d+)", out)
    stack = re.search(r"STACK:(\d+)", out)
    return (regs.group(1) if regs else "?"), (f"stack {stack.group(1)} B" if stack else "?")


def on_gpu(sizes) -> None:
    from triton.testing import do_bench

    print("| M=N=K | tile2triton ms | torch.matmul ms | torch / tile2triton | max abs err |")
    print("|---|---|---|---|---|")
    for n in sizes:
        kernel = tilelang.compile(emitter_gemm(n, n, n))
        a = torch.randn(n, n, dtype=torch.float16, device="cuda")
        b = torch.randn(n, n, dtype=torch.float16, device="cuda")
        c = torch.empty(n, n, dtype=torch.float16, device="cuda")
        kernel(a, b, c)
        err = (c.float() - (a.float() @ b.float().T)).abs().max().item()
        t2t = do_bench(lambda: kernel(a, b, c), warmup=25, rep=200, return_mode="median")
        ref = do_bench(lambda: torch.matmul(a, b.T), warmup=25, rep=200, return_mode="median")
        print(f"| {n} | {t2t:.4f} | {ref:.4f} | {ref / t2t:.2f}x | {err:.3g} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--offline", action="store_true", help="compile for sm_90 only (no GPU)")
    parser.add_argument("--sizes", default="1024,4096")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    offline(sizes) if args.offline else on_gpu(sizes)
