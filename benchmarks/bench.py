"""GPU benchmark: each kernel written in TileLang and transpiled by tile2triton, the same kernel
hand-written in idiomatic Triton, and PyTorch -- timed in one process with
``triton.testing.do_bench`` (median), every output checked against torch.

    PYTHONPATH=. python benchmarks/bench.py [--quick] [--only NAME[,NAME]] [--out FILE.md]
    PYTHONPATH=. python benchmarks/bench.py --only flash --fa-configs   # sweep the flash-attention tiles
    PYTHONPATH=. python benchmarks/bench.py --cpu    # no GPU: flash attention at tiny sizes, interpreted, checked

Flash attention (fp16 forward, (batch, heads, seq, dim)): examples/flash_attention.py transpiled,
the same algorithm hand-written after Triton's tutorial 06-fused-attention.py (``hw_attn_fwd``;
tensor descriptors made on the host, or in the kernel, or plain pointer loads: ``--fa-hand``), and
``F.scaled_dot_product_attention`` (cuDNN when it takes the case: ``--sdpa``). Tile configs:
FA_TL_CONFIG / FA_HAND_CONFIG below; ``--fa-configs`` times the FA_*_SWEEP candidates first and
keeps the fastest of each.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import math
import os
import sys
import time
from pathlib import Path
from typing import NamedTuple

if __name__ == "__main__" and "--cpu" in sys.argv[1:]:
    os.environ["TRITON_INTERPRET"] = "1"  # read when @triton.jit decorates the hand-written kernels below

import torch
import triton
import triton.language as tl

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.runtime.cache import interpreter_mode


def _load_example(name: str):
    """examples/<name>.py as a module (the benchmark runs the example's TileLang kernel as written)."""
    path = Path(__file__).resolve().parent.parent / "examples" / f"{name}.py"
    mod_name = f"tile2triton_example_{name}"
    if mod_name not in sys.modules:
        spec = importlib.util.spec_from_file_location(mod_name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = module
        spec.loader.exec_module(module)
    return sys.modules[mod_name]


fa_example = _load_example("flash_attention")
# flashattn(batch, heads, seq_q, seq_kv, dim, is_causal, block_M, block_N, num_stages, threads)
flashattn = fa_example.flashattn

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


# Flash attention forward, after Triton's tutorial 06-fused-attention.py: one program per
# (BLOCK_M queries, batch*head); online softmax in base 2; with CAUSAL, the key blocks left of the
# diagonal run without a mask (stage 1) and the diagonal block with it (stage 2). Q/K/V/O are
# (batch, heads, seq, dim) contiguous, seen as (batch*heads*seq, dim) rows. DESC: loads and the
# store go through tensor descriptors (TMA on Hopper) -- made on the host (TensorDescriptor
# arguments) or, when given pointers, in the kernel (tl.make_tensor_descriptor, which needs
# triton.set_allocator); else plain pointer loads.


@triton.jit
def _hw_attn_desc(x, rows, HEAD_DIM: tl.constexpr, BLOCK: tl.constexpr):
    if isinstance(x, tl.tensor_descriptor):
        return x  # made on the host
    else:
        return tl.make_tensor_descriptor(
            x, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1], block_shape=[BLOCK, HEAD_DIM]
        )


@triton.jit
def _hw_attn_blocks(acc, l_i, m_i, q, K, V, kv_row, start_m, qk_scale, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    HEAD_DIM: tl.constexpr, N_CTX: tl.constexpr, STAGE: tl.constexpr, DESC: tl.constexpr,
                    WARP_SPECIALIZE: tl.constexpr):  # fmt: skip
    # STAGE 1: key blocks left of the diagonal (no mask); 2: the diagonal block (masked); 3: all keys
    if STAGE == 1:
        lo, hi = 0, start_m * BLOCK_M
    elif STAGE == 2:
        lo, hi = start_m * BLOCK_M, (start_m + 1) * BLOCK_M
        lo = tl.multiple_of(lo, BLOCK_M)
    else:
        lo, hi = 0, N_CTX
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    for start_n in tl.range(lo, hi, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        if DESC:
            k = K.load([kv_row + start_n, 0]).T
        else:
            k = tl.load(K + (start_n + offs_n)[None, :] * HEAD_DIM + offs_d[:, None])
        qk = tl.dot(q, k)
        if STAGE == 2:
            keep = offs_m[:, None] >= (start_n + offs_n)[None, :]
            qk = qk * qk_scale + tl.where(keep, 0, -1.0e6)
            m_new = tl.maximum(m_i, tl.max(qk, 1))
            qk -= m_new[:, None]
        else:
            m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_new[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_new)
        l_new = tl.sum(p, 1)
        acc = acc * alpha[:, None]
        if DESC:
            v = V.load([kv_row + start_n, 0])
        else:
            v = tl.load(V + (start_n + offs_n)[:, None] * HEAD_DIM + offs_d[None, :])
        acc = tl.dot(p.to(tl.float16), v, acc)
        l_i = l_i * alpha + l_new
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def hw_attn_fwd(Q, K, V, Out, sm_scale, ZH, N_CTX: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, DESC: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):  # fmt: skip
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    kv_row = off_hz * N_CTX  # first row of this (batch, head) in the (batch*heads*seq, dim) view
    q_row = kv_row + start_m * BLOCK_M
    offs_m = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    if DESC:
        Q = _hw_attn_desc(Q, ZH * N_CTX, HEAD_DIM, BLOCK_M)
        K = _hw_attn_desc(K, ZH * N_CTX, HEAD_DIM, BLOCK_N)
        V = _hw_attn_desc(V, ZH * N_CTX, HEAD_DIM, BLOCK_N)
        Out = _hw_attn_desc(Out, ZH * N_CTX, HEAD_DIM, BLOCK_M)
        q = Q.load([q_row, 0])
    else:
        head = off_hz.to(tl.int64) * N_CTX * HEAD_DIM
        Q += head
        K += head
        V += head
        Out += head
        q = tl.load(Q + (start_m * BLOCK_M + offs_m)[:, None] * HEAD_DIM + offs_d[None, :])
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    qk_scale = sm_scale * 1.44269504  # log2(e): exp(x) = exp2(x * log2(e))
    if CAUSAL:
        acc, l_i, m_i = _hw_attn_blocks(acc, l_i, m_i, q, K, V, kv_row, start_m, qk_scale, BLOCK_M, BLOCK_N, HEAD_DIM,
                                        N_CTX, 1, DESC, WARP_SPECIALIZE)  # fmt: skip
        acc, l_i, m_i = _hw_attn_blocks(acc, l_i, m_i, q, K, V, kv_row, start_m, qk_scale, BLOCK_M, BLOCK_N, HEAD_DIM,
                                        N_CTX, 2, DESC, WARP_SPECIALIZE)  # fmt: skip
    else:
        acc, l_i, m_i = _hw_attn_blocks(acc, l_i, m_i, q, K, V, kv_row, start_m, qk_scale, BLOCK_M, BLOCK_N, HEAD_DIM,
                                        N_CTX, 3, DESC, WARP_SPECIALIZE)  # fmt: skip
    out = (acc / l_i[:, None]).to(tl.float16)
    if DESC:
        Out.store([q_row, 0], out)
    else:
        tl.store(Out + (start_m * BLOCK_M + offs_m)[:, None] * HEAD_DIM + offs_d[None, :], out)


@triton.jit
def hw_gemm_tma(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr,
                STAGES: tl.constexpr):  # fmt: skip
    """The same GEMM with tensor-descriptor (TMA) loads and store, as Triton's Hopper tutorials write it."""
    a_desc = tl.make_tensor_descriptor(A, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(B, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    c_desc = tl.make_tensor_descriptor(C, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pid = tl.program_id(0)
    num_m, num_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    group = pid // (GROUP * num_n)
    first_m = group * GROUP
    size_m = min(num_m - first_m, GROUP)
    pid_m = first_m + (pid % (GROUP * num_n)) % size_m
    pid_n = (pid % (GROUP * num_n)) // size_m
    acc = tl.zeros([BM, BN], tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), num_stages=STAGES):
        a = a_desc.load([pid_m * BM, k * BK])
        b = b_desc.load([k * BK, pid_n * BN])
        acc = tl.dot(a, b, acc)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(C.dtype.element_ty))


# ---------------------------------------------------------------------------- the table


def bench(fn, **kw):
    return triton.testing.do_bench(fn, return_mode="median", **kw)


class Row(NamedTuple):
    name: str
    make_tl: object  # () -> tile2triton kernel
    hand: object  # (*inputs) -> output of the hand-written Triton
    torch_fn: object
    ref_fn: object  # (*inputs) -> reference in higher precision (of view(output) when view is given)
    inputs: object  # () -> list of inputs
    work: float  # bytes or FLOPs
    unit: str
    atol: float = 1e-2
    view: object = None  # output -> the part the reference covers
    tune: object = None  # (inputs) -> lines: time candidate configs, keep the fastest (--fa-configs)
    describe: object = None  # () -> the configs used, appended to the name


def case_rows(quick: bool):
    s = 4 if quick else 1
    dev = "cuda"
    rows = []

    def add(name, make_tl, hand, torch_fn, ref_fn, inputs, work, unit, atol=1e-2):
        rows.append(Row(name, make_tl, hand, torch_fn, ref_fn, inputs, work, unit, atol))

    for n in (1 << 20, (1 << 28) // s):
        a16 = lambda n=n: [torch.randn(n, device=dev, dtype=torch.float16)]  # noqa: E731
        # the hand-written copy runs with the TileLang kernel's threads as num_warps (the same kernel)
        variants = [("block view", tl_copy, 256), ("thread view", tl_copy_thread_view, 256)]
        if n > 1 << 20:  # 128 threads: 8 fp16 = 16 bytes per thread and access, 256 threads move 8 bytes
            variants.append(("block view", tl_copy, 128))
        for view, factory, threads in variants:
            add(f"copy fp16 2^{n.bit_length() - 1} ({view}, {threads} threads)", lambda f=factory, n=n, t=threads: f(n, 1024, t),
                lambda x, n=n, t=threads: _launch(hw_copy, (triton.cdiv(n, 1024),), x, torch.empty_like(x), n, BLOCK=1024, num_warps=t // 32),
                lambda x: x.clone(), lambda x: x, a16, 2 * 2 * n, "GB/s")  # fmt: skip
    m = 16384 // s
    add("add fp32 16384^2", lambda: tl_add(m, 16384, 32, 256),
        lambda x, y: _launch_add(x, y), torch.add, torch.add,
        lambda: [torch.randn(m, 16384, device=dev), torch.randn(m, 16384, device=dev)], 3 * 4 * m * 16384, "GB/s")  # fmt: skip
    add("add fp32 16384^2 (T.dynamic M, N)", lambda: tl_add(T.dynamic("M"), T.dynamic("N"), 32, 256),
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
                    lambda a, b, c=(bm, bn, bk, stages, threads, sw or 1): _launch_gemm(a, b, *c),
                    torch.matmul, lambda a, b: (a.float() @ b.float()),
                    lambda z=size, t=tdt: [torch.randn(z, z, device=dev, dtype=t), torch.randn(z, z, device=dev, dtype=t)],
                    2 * size**3, "TFLOP/s", atol=0.5)  # fmt: skip
    return rows


# ---------------------------------------------------------------------------- flash attention

# (block_M, block_N, num_stages, threads) for examples/flash_attention.py, per head dim: TileLang's
# own examples' tiles (example_mha_fwd_bhsd.py).
# Per (dim, causal): the fastest of a sweep on the H200 (gpu_logs/2026-11-29_s2_fa_sweep_h200.log).
FA_TL_CONFIG = {
    (128, False): (128, 64, 2, 128),
    (128, True): (128, 64, 2, 128),
    (64, False): (128, 64, 3, 128),
    (64, True): (64, 64, 2, 128),
}
# (BLOCK_M, BLOCK_N, num_stages, num_warps) for hw_attn_fwd; causal needs BLOCK_M % BLOCK_N == 0.
FA_HAND_CONFIG = {128: (128, 128, 3, 8), 64: (128, 64, 3, 4)}
# --fa-configs times these (and the defaults above) and keeps the fastest of each.
FA_TL_SWEEP = {
    128: [(128, 128, 2, 256), (128, 64, 2, 256), (128, 64, 3, 256), (128, 128, 1, 256), (64, 64, 2, 128)],
    64: [(128, 64, 2, 128), (128, 128, 2, 128), (128, 128, 2, 256), (128, 64, 3, 128), (64, 64, 2, 128)],
}
FA_HAND_SWEEP = {
    128: [(128, 128, 2, 8), (128, 128, 3, 8), (128, 64, 3, 8), (128, 64, 4, 8), (64, 64, 3, 4)],
    64: [(128, 64, 3, 4), (128, 64, 4, 4), (128, 128, 2, 8), (128, 128, 3, 8), (64, 64, 3, 4)],
}
# the warp-specialized variant (non-causal only; Triton 3.6 specializes the loop at 4 warps, into 12)
FA_HAND_WS_SWEEP = {128: [(128, 128, 2, 4), (128, 64, 3, 4), (128, 64, 4, 4)], 64: [(128, 64, 3, 4), (128, 128, 2, 4)]}
# descriptors made on the host / in the kernel; pointer loads; in-kernel descriptors with the K/V loop
# warp-specialized (what the tutorial runs for the non-causal forward on Hopper; Triton 3.6 fails to
# compile it for sm_90 with host descriptors, or with the two loops of the causal case)
FA_HAND_VARIANTS = ("host", "device", "ptr", "device-ws")
# issue #8's figures (ms; fp16 forward 4x32x4096), printed under the table for comparison
FA_ISSUE_MS = {
    "native TileLang": (2.137, 1.189, 1.336, 0.795),
    "hand-written Triton": (2.249, 1.248, 1.297, 0.727),
    "cuDNN SDPA": (1.906, 1.104, 1.262, 0.679),
}


def fa_config_str(cfg) -> str:
    return "x".join(map(str, cfg[:2])) + f" s{cfg[2]}"


def _descriptor_allocator(size: int, align: int, stream):
    return torch.empty(size, dtype=torch.int8, device="cuda")


def hw_attention(q, k, v, causal: bool, config, variant: str = "host"):
    """Run hw_attn_fwd on (batch, heads, seq, dim) fp16 tensors; config = (BLOCK_M, BLOCK_N, num_stages, num_warps)."""
    bm, bn, stages, warps = config
    B, H, S, D = q.shape
    if S % bm or (causal and bm % bn) or q.stride() != k.stride() or not q.is_contiguous():
        raise ValueError(
            f"hw_attention: seq {S} must be a multiple of BLOCK_M {bm}, and causal needs BLOCK_M % BLOCK_N == 0"
        )
    o = torch.empty_like(q)
    desc, _, ws = variant.partition("-")
    if variant not in FA_HAND_VARIANTS:
        raise ValueError(f"unknown hand-written variant {variant!r}; one of {FA_HAND_VARIANTS}")
    if desc == "host":
        from triton.tools.tensor_descriptor import TensorDescriptor

        rows = B * H * S
        args = [
            TensorDescriptor(t.view(rows, D), [rows, D], [D, 1], [blk, D])
            for t, blk in ((q, bm), (k, bn), (v, bn), (o, bm))
        ]
    else:
        if desc == "device" and q.is_cuda:
            triton.set_allocator(_descriptor_allocator)  # tl.make_tensor_descriptor's scratch memory
        args = [q, k, v, o]
    launch = hw_attn_fwd[(S // bm, B * H)]
    with contextlib.nullcontext() if q.is_cuda else interpreter_mode(True):  # CPU: Triton's interpreter
        launch(*args, 1.0 / math.sqrt(D), B * H, N_CTX=S, HEAD_DIM=D, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal,
               DESC=desc != "ptr", WARP_SPECIALIZE=ws == "ws", num_warps=warps, num_stages=stages)  # fmt: skip
    return o


_SDPA_USED: dict = {}  # (backend, shape, causal, device) -> the backend that ran: `backend` or "default"


def _sdpa_key(backend, shape, causal, device_type):
    return (backend, tuple(shape), bool(causal), device_type)


def sdpa(q, k, v, causal: bool, backend: str = "cudnn"):
    """torch's scaled_dot_product_attention through `backend` when it takes the case, else torch's default."""
    F = torch.nn.functional
    key = _sdpa_key(backend, q.shape, causal, q.device.type)
    if backend != "default" and _SDPA_USED.get(key, backend) == backend:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        chosen = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
                  "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}[backend]  # fmt: skip
        try:
            with sdpa_kernel([chosen]):
                out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            _SDPA_USED[key] = backend
            return out
        except RuntimeError:  # this backend does not take the case: torch's default from now on
            _SDPA_USED[key] = "default"
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def fa_rows(batch, heads, seq, dev, tl_configs=None, hand_configs=None, variant="host", sdpa_backend="cudnn",
            dims=(128, 64), sweep=False, bench_kw=None):  # fmt: skip
    """Rows for flash attention, (dim, causal) in dims x (False, True). The reference is float64 on a
    sample of (batch, head) pairs: batches 0 and batch-1, heads 0 and heads-1."""
    rows = []
    bs = sorted({0, batch - 1})
    hs = sorted({0, heads - 1})

    def view(t):
        return t[bs][:, hs]

    for dim in dims:
        for causal in (False, True):
            chosen = {
                "tl": tl_configs[dim] if tl_configs else FA_TL_CONFIG[dim, causal],
                "hand": (hand_configs or FA_HAND_CONFIG)[dim],
                "variant": variant.removesuffix("-ws") if causal else variant,  # see FA_HAND_VARIANTS
            }

            def make_tl(dim=dim, causal=causal, chosen=chosen):
                return flashattn(batch, heads, seq, seq, dim, causal, *chosen["tl"])

            def hand(q, k, v, causal=causal, chosen=chosen):
                return hw_attention(q, k, v, causal, chosen["hand"], chosen["variant"])

            def inputs(dim=dim):
                return [torch.randn(batch, heads, seq, dim, device=dev, dtype=torch.float16) for _ in range(3)]

            def ref(q, k, v, causal=causal):
                return fa_example.ref_program(view(q), view(k), view(v), causal)

            def describe(chosen=chosen, dim=dim, causal=causal):
                return (f"t2t {fa_config_str(chosen['tl'])} t{chosen['tl'][3]}, "
                        f"hand {chosen['variant']} {fa_config_str(chosen['hand'])} w{chosen['hand'][3]}, "
                        f"torch {_SDPA_USED.get(_sdpa_key(sdpa_backend, (batch, heads, seq, dim), causal, torch.device(dev).type), sdpa_backend)}")  # fmt: skip

            def tune(xs, dim=dim, causal=causal, chosen=chosen):
                return fa_tune(xs, batch, heads, seq, dim, causal, chosen, bench_kw or {})

            flops = 4 * batch * heads * seq * seq * dim // (2 if causal else 1)
            rows.append(Row(f"flash attn fp16 {batch}x{heads}x{seq} D{dim}{' causal' if causal else ''}", make_tl, hand,
                            lambda q, k, v, causal=causal: sdpa(q, k, v, causal, sdpa_backend), ref, inputs, flops,
                            "TFLOP/s", atol=1e-2, view=view, tune=tune if sweep else None, describe=describe))  # fmt: skip
    return rows


def fa_tune(xs, batch, heads, seq, dim, causal, chosen, bench_kw) -> list:
    """Time FA_TL_SWEEP and FA_HAND_SWEEP (plus the chosen configs), the other hand-written variants at
    the fastest hand-written config, FA_HAND_WS_SWEEP (non-causal); keep the fastest of each in `chosen`.
    Returns markdown lines."""
    name = f"D{dim}{' causal' if causal else ''}"
    lines = []

    def timed(label, fn):
        try:
            ms = bench(fn, **bench_kw)
        except Exception as exc:  # noqa: BLE001 - a config that does not compile or fit is reported and skipped
            lines.append(f"| {name} | {label} | error: {type(exc).__name__}: {str(exc).splitlines()[0][:100]} |")
            return float("inf")
        lines.append(f"| {name} | {label} | {ms:.3f} |")
        return ms

    best = {}
    for cfg in dict.fromkeys([chosen["tl"], *FA_TL_SWEEP[dim]]):
        kernel = None
        try:
            kernel = flashattn(batch, heads, seq, seq, dim, causal, *cfg)
        except Exception as exc:  # noqa: BLE001
            lines.append(f"| {name} | t2t {cfg} | error: {type(exc).__name__}: {str(exc).splitlines()[0][:100]} |")
            continue
        ms = timed(f"t2t {fa_config_str(cfg)} t{cfg[3]}", lambda kernel=kernel: kernel(*xs))
        if ms < best.get("tl", (float("inf"),))[0]:
            best["tl"] = (ms, cfg)

    def try_hand(variant, cfg):
        if (variant, cfg) in tried or (causal and (cfg[0] % cfg[1] or variant.endswith("-ws"))):
            return
        tried.add((variant, cfg))
        ms = timed(f"hand {variant} {fa_config_str(cfg)} w{cfg[3]}",
                   lambda: hw_attention(*xs, causal, cfg, variant))  # fmt: skip
        if ms < best.get("hand", (float("inf"),))[0]:
            best["hand"] = (ms, cfg, variant)

    tried = set()
    for cfg in [chosen["hand"], *FA_HAND_SWEEP[dim]]:
        try_hand(chosen["variant"], cfg)
    if "hand" in best:  # the other variants at the fastest config
        for variant in FA_HAND_VARIANTS:
            try_hand(variant, best["hand"][1])
    for cfg in FA_HAND_WS_SWEEP[dim]:
        try_hand("device-ws", cfg)
    if "tl" in best:
        chosen["tl"] = best["tl"][1]
    if "hand" in best:
        chosen["hand"], chosen["variant"] = best["hand"][1], best["hand"][2]
    return lines


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


def _launch_gemm(a, b, bm, bn, bk, stages, threads, group):
    """``group`` rows of tiles per panel, as the TileLang kernel's T.use_swizzle (1: row-major order)."""
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty(M, N, device=a.device, dtype=a.dtype)
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    kernel = hw_gemm_tma if _has_tma(a) else hw_gemm
    kernel[grid](a, b, c, M, N, K, BM=bm, BN=bn, BK=bk, GROUP=group, STAGES=stages, num_warps=threads // 32)
    return c


def _has_tma(t) -> bool:
    """Hopper or newer, and a Triton with in-kernel tensor descriptors (their workspace allocator set)."""
    if not (t.is_cuda and hasattr(tl, "make_tensor_descriptor") and torch.cuda.get_device_capability(t.device)[0] >= 9):
        return False
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=t.device))
    return True


def run_rows(rows, only: str = "", timer=None) -> tuple[list, list]:
    """Check and time each row (those whose name contains one of the comma-separated `only`); print
    and return its table line, and the --fa-configs lines."""
    timer = timer or bench
    lines, sweep_lines = [], []
    for row in rows:
        if only and not any(o.strip() in row.name for o in only.split(",")):
            continue
        name = row.name
        try:
            xs = row.inputs()
            if row.tune is not None:
                found = row.tune(xs)
                sweep_lines += found
                print("\n".join(f"<!-- {x} -->" for x in found), file=sys.stderr, flush=True)
            if row.describe is not None:
                name = f"{row.name} ({row.describe()})"
            kernel = row.make_tl()
            view = row.view or (lambda t: t)
            out = view(kernel(*xs))
            ref = row.ref_fn(*xs).double()
            hand_out = view(row.hand(*xs))
            scale = max(1.0, ref.abs().max().item() * (1 if row.unit == "GB/s" else 0.01))
            err = (out.double() - ref).abs().max().item()
            hand_err = (hand_out.double() - ref).abs().max().item()
            ok, hand_ok = err <= row.atol * scale, hand_err <= row.atol * scale
            del out, hand_out, ref
            t_t2t = timer(lambda: kernel(*xs))
            t_hand = timer(lambda: row.hand(*xs))
            t_torch = timer(lambda: row.torch_fn(*xs))
            if row.describe is not None:  # the torch backend is known once it ran
                name = f"{row.name} ({row.describe()})"
            work_scale = 1e-9 if row.unit == "GB/s" else 1e-12

            def rate(ms, row=row, work_scale=work_scale):
                return f"{row.work * work_scale / (ms * 1e-3):.0f} {row.unit}"

            line = (f"| {name} | {t_t2t:.3f} | {t_hand:.3f} | {t_torch:.3f} | {rate(t_t2t)} | {rate(t_hand)} | {rate(t_torch)} | "
                    f"{t_t2t / t_hand:.2f} | {t_t2t / t_torch:.2f} | {err:.2g}{'' if ok else ' FAIL'} "
                    f"(hand {hand_err:.2g}{'' if hand_ok else ' FAIL'}) |")  # fmt: skip
        except Exception as exc:  # noqa: BLE001 - report and go on to the next kernel
            line = f"| {name} | error: {type(exc).__name__}: {str(exc).splitlines()[0][:150]} |"
        print(line, flush=True)
        lines.append(line)
    return lines, sweep_lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--only", default="", help="rows whose name contains one of these (comma-separated)")
    parser.add_argument("--out", default="", help="also write the table to this markdown file")
    parser.add_argument(
        "--fa-configs",
        action="store_true",
        help="flash attention: time the FA_*_SWEEP configs first, keep the fastest of each",
    )
    parser.add_argument(
        "--fa-hand",
        default="host",
        choices=FA_HAND_VARIANTS,
        help="hand-written flash attention: descriptors made on the host (tutorial's Hopper path), in the kernel, or pointer loads",
    )
    parser.add_argument(
        "--sdpa",
        default="cudnn",
        choices=("cudnn", "flash", "efficient", "default"),
        help="torch SDPA backend for the flash-attention rows (falls back to torch's default when it refuses a case)",
    )
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="no GPU: flash attention at tiny sizes through Triton's interpreter, checked, not timed",
    )
    args = parser.parse_args(argv)
    if args.cpu:
        return cpu_smoke(args)
    if not torch.cuda.is_available():
        print("benchmarks need a CUDA GPU (--cpu: an interpreted correctness smoke run)")
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
    seq = 4096 // (4 if args.quick else 1)
    rows = case_rows(args.quick) + fa_rows(4, 32, seq, "cuda", variant=args.fa_hand, sdpa_backend=args.sdpa,
                                           sweep=args.fa_configs, bench_kw={"warmup": 10, "rep": 40})  # fmt: skip
    table, sweep_lines = run_rows(rows, args.only)
    lines += table
    if any(line.startswith("| flash attn") for line in table) and not args.quick:
        extra = ["", "Issue #8's flash-attention figures (ms; D128, D128 causal, D64, D64 causal): "
                 + "; ".join(f"{k} {', '.join(map(str, v))}" for k, v in FA_ISSUE_MS.items())]  # fmt: skip
        print("\n".join(extra), flush=True)
        lines += extra
    if sweep_lines:
        extra = ["", "Flash-attention configs timed (--fa-configs; do_bench warmup 10 ms, rep 40 ms):", "",
                 "| case | config (block_M x block_N, stages, threads / warps) | ms |", "|---|---|---|", *sweep_lines]  # fmt: skip
        print("\n".join(extra), flush=True)
        lines += extra
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


def cpu_smoke(args) -> int:
    """Flash attention at tiny sizes on the CPU: the transpiled kernel and the hand-written one (every
    variant) through Triton's interpreter, each checked against the float64 reference. Not timed."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        print("--cpu needs TRITON_INTERPRET=1 before triton is imported (run this file as a script)")
        return 1
    torch.manual_seed(0)
    print(f"CPU smoke (Triton interpreter) | torch {torch.__version__} | triton {triton.__version__}")
    print(
        "| case | tile2triton max err | "
        + " | ".join(f"hand {v} max err" for v in FA_HAND_VARIANTS)
        + " | torch max err |"
    )
    print("|---|---|" + "---|" * len(FA_HAND_VARIANTS) + "---|")
    configs_tl = {128: (64, 32, 2, 128), 64: (64, 64, 2, 128), 32: (32, 16, 1, 128)}
    configs_hand = {128: (64, 32, 2, 4), 64: (64, 64, 2, 4), 32: (32, 16, 1, 4)}
    failed = 0
    for row in fa_rows(2, 3, 128, "cpu", configs_tl, configs_hand, sdpa_backend="default", dims=(128, 64, 32)):
        if args.only and not any(o.strip() in row.name for o in args.only.split(",")):
            continue
        xs = row.inputs()
        ref = row.ref_fn(*xs)
        errs = []
        outs = [lambda: row.make_tl()(*xs)]
        outs += [
            lambda v=v: hw_attention(*xs, "causal" in row.name, configs_hand[xs[0].shape[-1]], v)
            for v in FA_HAND_VARIANTS
        ]
        outs.append(lambda: row.torch_fn(*xs))
        for run in outs:
            try:
                # tile2triton switches Triton's library functions back to the compiler's flavour after each
                # interpreted launch; interpreter_mode puts the interpreter's back for the hand-written ones
                with interpreter_mode(True):
                    out = run()
                err = (row.view(out).double() - ref).abs().max().item()
                errs.append(f"{err:.2g}" + ("" if err <= row.atol else " FAIL"))
                failed += err > row.atol
            except Exception as exc:  # noqa: BLE001
                errs.append(f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:100]}")
                failed += 1
        print(f"| {row.name} | " + " | ".join(errs) + " |", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
