"""TILE2TRITON_COMPACT_GUARDED_LOOPS (passes/compact_guarded.py): a ``T.Pipelined`` loop whose body is one
``if`` on a mask read at the iteration runs over the active iterations only.

Each kernel runs under the interpreter (or CUDA) with the switch on and off, against a float64 torch
reference, with masks empty, full and in between; sizes are not multiples of the tiles.  The loops the
pass leaves (a mask the kernel writes, an ``else``, a thread-view kernel) keep their results."""

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T

DEV = "cuda" if torch.cuda.is_available() else "cpu"


def blocksparse_gemm(M, N, K, bm=32, bn=32, bk=16, start=0, step=1, writes_mask=False, with_else=False):
    """C = sum over k of A[:, k-th tile] @ B[k-th tile, :] where Mask[by, bx, k]; the loop runs k from
    ``start`` by ``step`` (skipped tiles are not summed); ``writes_mask``: the loop also clears the mask
    element it read; ``with_else``: an inactive tile adds its rows' first column instead."""
    NK = T.ceildiv(K, bk)

    @T.prim_func
    def main(
        A: T.Tensor((M, K), T.float16),
        B: T.Tensor((K, N), T.float16),
        Mask: T.Tensor((T.ceildiv(M, bm), T.ceildiv(N, bn), NK), T.int8),
        C: T.Tensor((M, N), T.float32),
    ):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_shared = T.alloc_shared((bm, bk), T.float16)
            B_shared = T.alloc_shared((bk, bn), T.float16)
            C_local = T.alloc_fragment((bm, bn), T.float32)
            T.clear(C_local)
            for kk in T.Pipelined(T.ceildiv(NK - start, step), num_stages=2):
                k = start + kk * step
                if Mask[by, bx, k] != 0:
                    T.copy(A[by * bm, k * bk], A_shared)
                    T.copy(B[k * bk, bx * bn], B_shared)
                    T.gemm(A_shared, B_shared, C_local)
                    if writes_mask:
                        Mask[by, bx, k] = 0
                elif with_else:
                    for i, j in T.Parallel(bm, bn):
                        C_local[i, j] += 1.0
            T.copy(C_local, C[by * bm, bx * bn])

    return main


def _reference(a, b, mask, bm, bn, bk, start, step, with_else=False):
    M, N = a.shape[0], b.shape[1]
    c = torch.zeros(M, N, dtype=torch.float64)
    a64, b64 = a.cpu().double(), b.cpu().double()
    for by in range(mask.shape[0]):
        for bx in range(mask.shape[1]):
            rows, cols = slice(by * bm, (by + 1) * bm), slice(bx * bn, (bx + 1) * bn)
            for k in range(start, mask.shape[2], step):
                if mask[by, bx, k]:
                    c[rows, cols] += a64[rows, k * bk : (k + 1) * bk] @ b64[k * bk : (k + 1) * bk, cols]
                elif with_else:
                    c[rows, cols] += 1.0
    return c


def _run(monkeypatch, compact, density, M=70, N=45, K=150, bm=32, bn=32, bk=16, start=0, step=1, **kw):
    monkeypatch.setenv("TILE2TRITON_COMPACT_GUARDED_LOOPS", "1" if compact else "0")
    torch.manual_seed(1)
    kernel = tilelang.compile(blocksparse_gemm(M, N, K, bm, bn, bk, start, step, **kw))
    a = torch.randn(M, K, device=DEV).half()
    b = torch.randn(K, N, device=DEV).half()
    grid = (-(-M // bm), -(-N // bn), -(-K // bk))
    mask = (torch.rand(grid) < density).to(torch.int8).to(DEV)
    c = poison((M, N), torch.float32, DEV)
    ref = _reference(a, b, mask.cpu(), bm, bn, bk, start, step, kw.get("with_else", False))
    kernel(a, b, mask.clone(), c)
    assert_close(c.cpu(), ref, 1e-2, 1e-2)
    return "\n".join(line for line in kernel.get_kernel_source().splitlines() if not line.strip().startswith("#"))


@pytest.mark.parametrize("density", [0.0, 0.4, 1.0])
def test_masked_loop_runs_over_its_active_iterations(monkeypatch, density):
    src = _run(monkeypatch, True, density)
    assert "kk_rank = tl.cumsum(" in src  # the active iterations ranked once, before the loop
    assert "for kk_nth in tl.range(0, kk_count" in src
    assert "if " not in src.split("for kk_nth", 1)[1]  # the body unguarded


def test_start_and_step(monkeypatch):
    # k from 1 by 2 over 10 tiles: 5 iterations; the mask row of 8 lanes holds them
    src = _run(monkeypatch, True, 0.6, K=150, start=1, step=2)
    assert "tl.arange(0, 8)" in src


def test_switch_off_keeps_the_guard(monkeypatch):
    src = _run(monkeypatch, False, 0.5)
    assert "kk_rank" not in src


@pytest.mark.parametrize("kw", [{"writes_mask": True}, {"with_else": True}])
def test_loops_the_pass_leaves(monkeypatch, kw):
    # a mask the loop writes is not the one a pass reading it first would see; an else runs for the
    # inactive iterations too
    src = _run(monkeypatch, True, 0.5, **kw)
    assert "kk_rank" not in src
