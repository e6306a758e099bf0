"""GPU benchmark: each kernel written in TileLang and transpiled by tile2triton, the same kernel
hand-written in idiomatic Triton, and PyTorch -- timed in one process with
``triton.testing.do_bench`` (median), every output checked against torch.

    PYTHONPATH=. python benchmarks/bench.py [--quick] [--only NAME[,NAME]] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
import triton
import triton.language as tl

import tile2triton as tilelang
import tile2triton.language as T

# ---------------------------------------------------------------------------- TileLang kernels


@tilelang.jit(out_idx=[-1])
def tl_copy(N, BLOCK_N, threads):
    @T.prim_func
    def main(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16")):
        with T.Kernel(T.ceildiv(N, BLOCK_N), threads=threads) as bx:
            offs = bx * BLOCK_N
            T.copy(A[offs : offs + BLOCK_N], B[offs : offs + BLOCK_N])

    return main


@tilelang.jit(out_idx=[-1])
def tl_copy_thread_view(N, BLOCK_N, threads):
    @T.prim_func
    def main(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16")):
        with T.Kernel(T.ceildiv(N, BLOCK_N), threads=threads) as bx:
            tx = T.get_thread_binding(0)
            for i in T.serial(T.ceildiv(BLOCK_N, threads)):
                idx = bx * BLOCK_N + i * threads + tx
                B[idx] = A[idx]

    return main


@tilelang.jit(out_idx=[-1])
def tl_add(M, N, block_M, block_N):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            for local_y, local_x in T.Parallel(block_M, block_N):
                y = by * block_M + local_y
                x = bx * block_N + local_x
                C[y, x] = A[y, x] + B[y, x]

    return main


@tilelang.jit(out_idx=[-1])
def tl_rowsum(M, N, block_size):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M,), "float32")):
        with T.Kernel(M, threads=block_size) as bx:
            A_local = T.alloc_fragment((N,), "float32")
            C_local = T.alloc_fragment((1,), "float32")
            T.copy(A[bx, 0:N], A_local)
            T.reduce_sum(A_local, C_local, dim=0)
            C[bx] = C_local[0]

    return main


@tilelang.jit(out_idx=[-1])
def tl_softmax(M, N, use_exp2):
    @T.prim_func
    def main(X: T.Tensor((M, N), "float16"), Y: T.Tensor((M, N), "float16")):
        with T.Kernel(M, threads=256) as bx:
            x = T.alloc_fragment((N,), "float32")
            mx = T.alloc_fragment((1,), "float32")
            total = T.alloc_fragment((1,), "float32")
            T.copy(X[bx, 0:N], x)
            T.reduce_max(x, mx, dim=0)
            for j in T.Parallel(N):
                if use_exp2:
                    x[j] = T.exp2((x[j] - mx[0]) * 1.4426950408889634)
                else:
                    x[j] = T.exp(x[j] - mx[0])
            T.reduce_sum(x, total, dim=0)
            for j in T.Parallel(N):
                x[j] = x[j] / total[0]
            T.copy(x, Y[bx, 0:N])

    return main


@tilelang.jit(out_idx=[-1])
def tl_layernorm(M, N, block_size):  # seed 001's layer norm
    @T.prim_func
    def main(x: T.Tensor((M, N), "float32"), y: T.Tensor((M, N), "float32")):
        with T.Kernel(M, threads=block_size) as bx:
            A_local = T.alloc_fragment((N,), "float32")
            A_pow_local = T.alloc_fragment((N,), "float32")
            A_sum = T.alloc_fragment((1,), "float32")
            A_powsum = T.alloc_fragment((1,), "float32")
            for tid in T.Parallel(N):
                A_local[tid] = x[bx, tid]
                A_pow_local[tid] = x[bx, tid] * x[bx, tid]
            T.reduce_sum(A_local, A_sum, dim=0)
            T.reduce_sum(A_pow_local, A_powsum, dim=0)
            for tid in T.Parallel(N):
                mean_val = A_sum[0] / N
                var_val = A_powsum[0] / N - mean_val * mean_val
                y[bx, tid] = (A_local[tid] - mean_val) / T.sqrt(var_val + 1e-5)

    return main


@tilelang.jit(out_idx=[-1])
def tl_gemv(N, K, BLOCK_N, BLOCK_K):
    @T.prim_func
    def main(A: T.Tensor((K,), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((N,), "float16")):
        with T.Kernel(T.ceildiv(N, BLOCK_N), threads=128) as bn:
            acc = T.alloc_fragment((BLOCK_N, BLOCK_K), "float32")
            row = T.alloc_fragment((BLOCK_N,), "float32")
            T.clear(acc)
            for ko in T.serial(T.ceildiv(K, BLOCK_K)):
                for i, j in T.Parallel(BLOCK_N, BLOCK_K):
                    k = ko * BLOCK_K + j
                    acc[i, j] += A[k].astype("float32") * B[bn * BLOCK_N + i, k].astype("float32")
            T.reduce_sum(acc, row, dim=1)
            for i in T.Parallel(BLOCK_N):
                C[bn * BLOCK_N + i] = row[i]

    return main


@tilelang.jit(out_idx=[-1])
def tl_gemm(M, N, K, block_M, block_N, block_K, num_stages, threads, swizzle, dtype):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), "float")
            if swizzle:
                T.use_swizzle(swizzle)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


# ---------------------------------------------------------------------------- hand-written Triton


@triton.jit
def hw_copy(A, B, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    tl.store(B + offs, tl.load(A + offs, mask=mask), mask=mask)


@triton.jit
def hw_rowsum(A, C, N: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(A + row * N + cols, mask=cols < N, other=0.0)
    tl.store(C + row, tl.sum(x, axis=0))


@triton.jit
def hw_softmax(X, Y, N: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + row * N + cols, mask=cols < N, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(Y + row * N + cols, (e / tl.sum(e, axis=0)).to(tl.float16), mask=cols < N)


@triton.jit
def hw_layernorm(X, Y, N: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + row * N + cols, mask=cols < N, other=0.0)
    mean = tl.sum(x, axis=0) / N
    var = tl.sum(x * x, axis=0) / N - mean * mean
    tl.store(Y + row * N + cols, (x - mean) * tl.rsqrt(var + 1e-5), mask=cols < N)


@triton.jit
def hw_gemv(A, B, C, N, K: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_N, BLOCK_K], tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(A + ks, mask=ks < K, other=0.0).to(tl.float32)
        b = tl.load(B + rows[:, None] * K + ks[None, :], mask=(rows[:, None] < N) & (ks[None, :] < K), other=0.0)
        acc += a[None, :] * b.to(tl.float32)
    tl.store(C + rows, tl.sum(acc, axis=1).to(tl.float16), mask=rows < N)


@triton.jit
def hw_gemm(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr,
            STAGES: tl.constexpr):  # fmt: skip
    pid = tl.program_id(0)
    num_m, num_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    group = pid // (GROUP * num_n)
    first_m = group * GROUP
    size_m = min(num_m - first_m, GROUP)
    pid_m = first_m + (pid % (GROUP * num_n)) % size_m
    pid_n = (pid % (GROUP * num_n)) // size_m
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), num_stages=STAGES):
        a = tl.load(A + rm[:, None] * K + (k * BK + rk)[None, :])
        b = tl.load(B + (k * BK + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(C + rm[:, None] * N + rn[None, :], acc.to(C.dtype.element_ty))


# ---------------------------------------------------------------------------- the table


def bench(fn):
    return triton.testing.do_bench(fn, return_mode="median")


def case_rows(quick: bool):
    s = 4 if quick else 1
    dev = "cuda"
    rows = []

    def add(name, make_tl, hand, torch_fn, ref_fn, inputs, work, unit, atol=1e-2):
        rows.append((name, make_tl, hand, torch_fn, ref_fn, inputs, work, unit, atol))

    for n in (1 << 20, (1 << 28) // s):
        a16 = lambda n=n: [torch.randn(n, device=dev, dtype=torch.float16)]  # noqa: E731
        for view, factory in (("block view", tl_copy), ("thread view", tl_copy_thread_view)):
            add(f"copy fp16 2^{n.bit_length() - 1} ({view})", lambda f=factory, n=n: f(n, 1024, 256),
                lambda x, n=n: _launch(hw_copy, (triton.cdiv(n, 1024),), x, torch.empty_like(x), n, BLOCK=1024),
                lambda x: x.clone(), lambda x: x, a16, 2 * 2 * n, "GB/s")  # fmt: skip
    m = 16384 // s
    add("add fp32 16384^2", lambda: tl_add(m, 16384, 32, 256),
        lambda x, y: _launch_add(x, y), torch.add, torch.add,
        lambda: [torch.randn(m, 16384, device=dev), torch.randn(m, 16384, device=dev)], 3 * 4 * m * 16384, "GB/s")  # fmt: skip
    add("row sum fp32 16384x4096", lambda: tl_rowsum(m, 4096, 128),
        lambda x: _launch(hw_rowsum, (m,), x, torch.empty(m, device=dev), N=4096, BLOCK=4096),
        lambda x: x.sum(1), lambda x: x.double().sum(1), lambda: [torch.randn(m, 4096, device=dev)], 4 * m * 4096, "GB/s", atol=1e-2)  # fmt: skip
    for exp2 in (False, True):
        add(f"softmax fp16 16384x4096 ({'T.exp2' if exp2 else 'T.exp'})", lambda e=exp2: tl_softmax(m, 4096, e),
            lambda x: _launch(hw_softmax, (m,), x, torch.empty_like(x), N=4096, BLOCK=4096, num_warps=8),
            lambda x: torch.softmax(x, -1), lambda x: torch.softmax(x.float(), -1),
            lambda: [torch.randn(m, 4096, device=dev, dtype=torch.float16)], 2 * 2 * m * 4096, "GB/s", atol=2e-3)  # fmt: skip
    add("layernorm fp32 16384x4096", lambda: tl_layernorm(m, 4096, 128),
        lambda x: _launch(hw_layernorm, (m,), x, torch.empty_like(x), N=4096, BLOCK=4096, num_warps=8),
        lambda x: torch.nn.functional.layer_norm(x, (4096,), eps=1e-5),
        lambda x: torch.nn.functional.layer_norm(x.double(), (4096,), eps=1e-5),
        lambda: [torch.randn(m, 4096, device=dev)], 2 * 4 * m * 4096, "GB/s", atol=1e-3)  # fmt: skip
    add("GEMV fp16 16384^2", lambda: tl_gemv(m, 16384, 64, 128),
        lambda a, b: _launch(hw_gemv, (triton.cdiv(m, 64),), a, b, torch.empty(m, device=dev, dtype=torch.float16), m, K=16384, BLOCK_N=64, BLOCK_K=128),
        lambda a, b: torch.mv(b, a), lambda a, b: b.float() @ a.float(),
        lambda: [torch.randn(16384, device=dev, dtype=torch.float16), torch.randn(m, 16384, device=dev, dtype=torch.float16)],
        2 * m * 16384, "GB/s", atol=0.25)  # fmt: skip
    for size in (4096, 8192 // (2 if quick else 1)):
        for dtype, tdt in (("float16", torch.float16), ("bfloat16", torch.bfloat16)):
            for bm, bn, bk, stages, threads, sw in (
                (128, 256, 64, 3, 256, 8),
                (128, 128, 32, 3, 128, 0),
                (128, 128, 32, 3, 128, 8),
            ):
                add(f"GEMM {dtype} {size}^3 {bm}x{bn}x{bk}{' swizzle ' + str(sw) if sw else ''}", lambda z=size, d=dtype, c=(bm, bn, bk, stages, threads, sw): tl_gemm(z, z, z, *c[:5], c[5], d),
                    lambda a, b, c=(bm, bn, bk, stages, threads): _launch_gemm(a, b, *c),
                    torch.matmul, lambda a, b: (a.float() @ b.float()),
                    lambda z=size, t=tdt: [torch.randn(z, z, device=dev, dtype=t), torch.randn(z, z, device=dev, dtype=t)],
                    2 * size**3, "TFLOP/s", atol=0.5)  # fmt: skip
    return rows


def _launch(kernel, grid, *args, num_warps=4, **meta):
    out = [a for a in args if isinstance(a, torch.Tensor)][-1]
    kernel[grid](*args, num_warps=num_warps, **meta)
    return out


def _launch_add(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    hw_add[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out


@triton.jit
def hw_add(X, Y, Z, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    tl.store(Z + offs, tl.load(X + offs, mask=mask) + tl.load(Y + offs, mask=mask), mask=mask)


def _launch_gemm(a, b, bm, bn, bk, stages, threads):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty(M, N, device=a.device, dtype=a.dtype)
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    hw_gemm[grid](a, b, c, M, N, K, BM=bm, BN=bn, BK=bk, GROUP=8, STAGES=stages, num_warps=threads // 32)
    return c


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="")
    parser.add_argument("--out", default="")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("benchmarks need a CUDA GPU")
        return 0
    torch.manual_seed(0)
    lines = [
        f"{torch.cuda.get_device_name()} | torch {torch.__version__} | triton {triton.__version__} | "
        f"{time.strftime('%Y-%m-%d')}",
        "",
        "| kernel | tile2triton ms | hand Triton ms | torch ms | tile2triton | hand Triton | torch | t2t / hand | t2t / torch | max err |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    for name, make_tl, hand, torch_fn, ref_fn, inputs, work, unit, atol in case_rows(args.quick):
        if args.only and not any(o.strip() in name for o in args.only.split(",")):
            continue
        try:
            xs = inputs()
            kernel = make_tl()
            out = kernel(*xs)
            ref = ref_fn(*xs)
            err = (out.double() - ref.double()).abs().max().item()
            hand_out = hand(*xs)
            hand_err = (hand_out.double() - ref.double()).abs().max().item()
            ok = err <= atol * max(1.0, ref.double().abs().max().item() * (1 if unit == "GB/s" else 0.01))
            t_t2t, t_hand, t_torch = bench(lambda: kernel(*xs)), bench(lambda: hand(*xs)), bench(lambda: torch_fn(*xs))
            scale = 1e-9 if unit == "GB/s" else 1e-12

            def rate(ms):
                return f"{work * scale / (ms * 1e-3):.0f} {unit}"

            line = (f"| {name} | {t_t2t:.3f} | {t_hand:.3f} | {t_torch:.3f} | {rate(t_t2t)} | {rate(t_hand)} | {rate(t_torch)} | "
                    f"{t_t2t / t_hand:.2f} | {t_t2t / t_torch:.2f} | {err:.2g}{'' if ok else ' FAIL'} (hand {hand_err:.2g}) |")  # fmt: skip
        except Exception as exc:  # noqa: BLE001 - report and go on to the next kernel
            line = f"| {name} | error: {type(exc).__name__}: {str(exc).splitlines()[0][:150]} |"
        print(line, flush=True)
        lines.append(line)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
