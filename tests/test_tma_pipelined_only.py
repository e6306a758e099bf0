"""TILE2TRITON_TMA_PIPELINED_ONLY: copies in loops load through tensor descriptors (TMA) only where Triton
software-pipelines the loop (a ``T.Pipelined`` loop with stages, or a loop with a gemm); a serial loop
without gemms, where a TMA load is synchronous (a barrier set up, waited on and invalidated per copy),
loads through pointers.  The sm_90 source is read offline (``lowered_for``); results on the interpreter."""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T


@pytest.fixture(autouse=True)
def descriptors_on(monkeypatch):
    monkeypatch.setenv("TILE2TRITON_TMA_MIN_TRIPS", "0")
    monkeypatch.setenv("TILE2TRITON_HOST_DESCRIPTORS", "0")


def column_sums(rows, cols, bm, bn, with_gemm=False, pipelined=False):
    """S[b, :] = the sum over the column blocks of block row b's (bm, bn) tiles (with_gemm: each tile
    also multiplied by a (bn, 16) matrix into P); T.Pipelined with 0 stages (a plain loop) or 2."""

    @T.prim_func
    def main(
        A: T.Tensor((rows, cols), "float16"),
        W: T.Tensor((bn, 16), "float16"),
        S: T.Tensor((T.ceildiv(rows, bm) * bm, bn), "float32"),
        P: T.Tensor((T.ceildiv(rows, bm) * bm, 16), "float32"),
    ):
        with T.Kernel(T.ceildiv(rows, bm), threads=128) as b:
            tile = T.alloc_shared((bm, bn), "float16")
            w = T.alloc_shared((bn, 16), "float16")
            acc = T.alloc_fragment((bm, bn), "float32")
            prod = T.alloc_fragment((bm, 16), "float32")
            T.clear(acc)
            T.clear(prod)
            T.copy(W[0, 0], w)
            for k in T.Pipelined(cols // bn, num_stages=2 if pipelined else 0):
                T.copy(A[b * bm, k * bn], tile)
                for i, j in T.Parallel(bm, bn):
                    acc[i, j] += tile[i, j]
                if with_gemm:
                    T.gemm(tile, w, prod)
            T.copy(acc, S[b * bm, 0])
            T.copy(prod, P[b * bm, 0])

    return main


@pytest.mark.parametrize("switch", ["1", "0"])
@pytest.mark.parametrize("with_gemm, pipelined", [(False, False), (True, False), (False, True)])
def test_descriptors_where_pipelined(dev, monkeypatch, switch, with_gemm, pipelined):
    monkeypatch.setenv("TILE2TRITON_TMA_PIPELINED_ONLY", switch)
    rows, bm, bn, steps = 80, 32, 32, 3  # 3 row blocks, the last hanging over
    kernel = tilelang.compile(column_sums(rows, bn * steps, bm, bn, with_gemm, pipelined), out_idx=[2, 3])
    source = kernel.lowered_for("sm_90").source
    keeps_tma = switch == "0" or with_gemm or pipelined
    assert ("A_desc.load(" in source) == keeps_tma, source
    torch.manual_seed(5)
    a = torch.randn(rows, bn * steps, device=dev).half()
    w = torch.randn(bn, 16, device=dev).half()
    s, p = kernel(a, w)
    ad = torch.zeros(s.shape[0], bn * steps, dtype=torch.float64)
    ad[:rows] = a.double().cpu()
    assert_close(s, ad.view(-1, steps, bn).sum(1), atol=1e-2, rtol=1e-3)
    if with_gemm:
        assert_close(p, ad @ torch.cat([w.double().cpu()] * steps), atol=5e-2, rtol=1e-2)
