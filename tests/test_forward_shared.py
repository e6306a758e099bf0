"""A warp-specialized producer's shared buffers forwarded into the consumers' reads
(``TILE2TRITON_FORWARD_SHARED``, passes/forward_shared.py).

The kernels: a hand warp-specialized sparse MLA forward written after TileLang's pipelined example
(tests/ws_mla_kernels.py: a producer gathers KV rows by index into a two-slot shared ring, skipping
rows past the causal limit; two consumer warpgroups run the gemms), the gather ring of
tests/test_thread_copies.py, and small kernels whose shared buffers must not be forwarded.  Each
runs under the interpreter against torch with NaN-prefilled outputs."""

import pytest
import torch
from t2t_util import assert_close, poison
from test_thread_copies import CASES, _reference, gather_ring
from ws_mla_kernels import reference, sparse_mla_ws

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.compiler import compile_prim_func
from tile2triton.passes.forward_shared import forward_shared
from tile2triton.passes.thread_copies import rewrite_thread_copies

H, D, DT, TOPK = 16, 64, 64, 128
SCALE = (D + DT) ** -0.5


def _mla_inputs(S, SKV, dev, seed=0):
    torch.manual_seed(seed)
    q = (torch.randn(1, S, H, D + DT) / 3).bfloat16()
    kv = (torch.randn(1, SKV, 1, D + DT) / 3).bfloat16()
    idx = torch.randint(0, SKV, (1, S, 1, TOPK), dtype=torch.int32)
    idx[..., 0] = 0  # one valid key a query
    return q.to(dev), kv.to(dev), idx.to(dev)


@pytest.mark.parametrize("S, SKV, start", [(5, 100, 40), (3, 70, 1000)])
def test_mla_forwarded(dev, monkeypatch, S, SKV, start):
    """start=40: many keys past the limit (the producer skips them; the forwarded gathers read 0)."""
    monkeypatch.setenv("TILE2TRITON_FORWARD_SHARED", "1")
    q, kv, idx = _mla_inputs(S, SKV, dev)
    kernel = tilelang.compile(sparse_mla_ws(H, D, DT, TOPK, SCALE))
    out = poison((1, S, H, D), torch.bfloat16, dev)
    kernel(q, kv, idx, torch.tensor([start], dtype=torch.int32, device=dev), out)
    assert_close(out[0], reference(q.cpu(), kv.cpu(), idx.cpu(), start, SCALE, D), 4e-3, 2e-2)


def test_mla_same_as_unforwarded(dev, monkeypatch):
    """Every key valid (no stale slot is read): both lowerings give the same result."""
    S, SKV, start = 3, 60, 1000
    q, kv, idx = _mla_inputs(S, SKV, dev, seed=3)
    outs = []
    for switch in ("0", "1"):
        monkeypatch.setenv("TILE2TRITON_FORWARD_SHARED", switch)
        kernel = tilelang.compile(sparse_mla_ws(H, D, DT, TOPK, SCALE))
        out = poison((1, S, H, D), torch.bfloat16, dev)
        kernel(q, kv, idx, torch.tensor([start], dtype=torch.int32, device=dev), out)
        outs.append(out)
    assert_close(outs[1], outs[0].double(), 4e-3, 2e-2)
    assert_close(outs[1][0], reference(q.cpu(), kv.cpu(), idx.cpu(), start, SCALE, D), 4e-3, 2e-2)


def _code(kernel) -> str:
    return "\n".join(line for line in kernel.get_kernel_source().splitlines() if not line.strip().startswith("#"))


def test_mla_forwarded_source(monkeypatch):
    """The ring, the flags and Q_shared/O_shared are gone: no scratch, no thread lanes; one gather
    per KV column block (the PV dots reuse the QK dots' tiles); Q's three tiles loaded once, before
    one loop pipelined with the ring's depth; the producer's warps not launched (256 of 384
    threads: 8 warps, not 16)."""
    monkeypatch.setenv("TILE2TRITON_FORWARD_SHARED", "1")
    kernel = tilelang.compile(sparse_mla_ws(H, D, DT, TOPK, SCALE))
    code = _code(kernel)
    assert "scratch +" not in code and "tx = " not in code
    assert code.count("tl.load(KV + ") == 3  # columns [0, 32), [32, 64) and the tail
    assert code.count("tl.range(") == 1 and "num_stages=2" in code
    loop = code.index("tl.range(")
    assert code.count("tl.load(Q + ") == 3 and code.rindex("tl.load(Q + ") < loop  # Q's tiles hoisted
    assert kernel.num_warps == 8
    monkeypatch.setenv("TILE2TRITON_FORWARD_SHARED", "0")
    assert tilelang.compile(sparse_mla_ws(H, D, DT, TOPK, SCALE)).num_warps == 16


@pytest.mark.parametrize("M, N, NB, BI, C, limit", CASES)
def test_gather_ring_forwarded(dev, monkeypatch, M, N, NB, BI, C, limit):
    """Element reads of the ring and of its flags (``T.if_then_else(valid[...], S[...], 0)``)."""
    monkeypatch.setenv("TILE2TRITON_FORWARD_SHARED", "1")
    torch.manual_seed(2)
    kernel = tilelang.compile(gather_ring(M, N, NB, BI, C, limit))
    idx = torch.randint(0, N, (M, NB * BI), dtype=torch.int32)
    idx[:, ::3] = N - 1  # past the limit: skipped
    g = torch.randn(N, C)
    out = poison((M, NB * BI, C), torch.float32, dev)
    total = poison((M, C), torch.float32, dev)
    kernel(idx.to(dev), g.to(dev), out, total)
    ref_out, ref_sum = _reference(idx, g, limit)
    assert_close(out, ref_out, 0, 0)
    assert_close(total, ref_sum, 1e-5, 1e-5)
    code = _code(kernel)
    assert "scratch +" not in code and kernel.num_warps == 4  # the producer's 128 threads gone


def rewritten_twice(N):
    """S stored, read, stored again, read at another element and read whole by a reduction: no
    producer section, nothing forwarded; the same results either way."""

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32"),
             R: T.Tensor((1,), "float32")):  # fmt: skip
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((N,), "float32")
            acc = T.alloc_fragment((N,), "float32")
            tot = T.alloc_fragment((1,), "float32")
            tx = T.get_thread_binding()
            if tx < 128:
                for i in T.Parallel(N):
                    S[i] = A[i] + 1.0
                for i in T.Parallel(N):
                    B[i] = S[i] * 3.0
                for i in T.Parallel(N):
                    S[i] = A[i] * 2.0
                for i in T.Parallel(N):
                    C[i] = S[(i * 7) % N]
                T.copy(S, acc)
                T.reduce_sum(acc, tot, dim=0)
                R[0] = tot[0]

    return main


@pytest.mark.parametrize("switch", ["0", "1"])
def test_rewritten_twice(dev, monkeypatch, switch):
    monkeypatch.setenv("TILE2TRITON_FORWARD_SHARED", switch)
    N = 37
    a = torch.randn(N)
    b, c, r = (poison((n,), torch.float32, dev) for n in (N, N, 1))
    tilelang.compile(rewritten_twice(N))(a.to(dev), b, c, r)
    assert_close(b, (a.double() + 1) * 3, 1e-6, 1e-6)
    assert_close(c, (a.double() * 2)[(torch.arange(N) * 7) % N], 0, 0)
    assert_close(r, (a.double() * 2).sum().reshape(1), 1e-5, 1e-5)


def test_rewritten_twice_kept():
    """No producer section that only copies into shared memory: the kernel comes back as it is."""
    kernel = rewrite_thread_copies(compile_prim_func(rewritten_twice(37)).kernels[0])
    assert forward_shared(kernel) is kernel


def test_unproven_kept():
    """A kernel with nothing to forward comes back as it is."""
    kernel = rewrite_thread_copies(compile_prim_func(gather_ring(*CASES[0], row_shift=1)).kernels[0])
    assert forward_shared(kernel) is kernel
