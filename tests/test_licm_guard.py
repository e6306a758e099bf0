"""TILE2TRITON_LICM_GUARD: on sm_90 a loop whose gemms read a shared operand stored before it, in a
kernel whose accumulators pass the register budget, is ``tl.range(..., disable_licm=True)``
(codegen/rules.keeps_invariants_in_loop): hoisted, every wgmma step's descriptor of that operand
is a 64-bit register live through the loop, which ptxas spills (sparse MLA backward's Q and dO)."""

import os
from unittest import mock

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T


def invariant_operand(blocks, iters, N2, threads=128, in_loop=False, mma_sync=False):
    """Per block: Q (64 x 32) stored once, then a loop of Q @ V[i] (32 x 256) and Q @ W[i] (32 x N2)
    into two accumulators (64 x 256 + 64 x N2 floats over ``threads``).  ``in_loop``: Q is copied in
    the loop too, so no gemm operand is invariant.  ``mma_sync``: a third gemm of 32 rows from a
    fragment, R_f (32 x 32) @ V[i] into a 32 x 256 accumulator, which Triton runs as mma.sync."""
    dt = "bfloat16"

    @T.prim_func
    def main(
        Q: T.Tensor((blocks, 64, 32), dt),
        V: T.Tensor((blocks, iters, 32, 256), dt),
        W: T.Tensor((blocks, iters, 32, N2), dt),
        C: T.Tensor((blocks, 64, 256), "float32"),
        E: T.Tensor((blocks, 64, N2), "float32"),
    ):
        with T.Kernel(blocks, threads=threads) as bx:
            Q_s = T.alloc_shared((64, 32), dt)
            V_s = T.alloc_shared((32, 256), dt)
            W_s = T.alloc_shared((32, N2), dt)
            C_f = T.alloc_fragment((64, 256), "float32")
            E_f = T.alloc_fragment((64, N2), "float32")
            R_f = T.alloc_fragment((32, 32), dt)
            G_f = T.alloc_fragment((32, 256), "float32")
            T.copy(Q[bx, :, :], Q_s)
            T.clear(C_f)
            T.clear(E_f)
            for i in T.Pipelined(iters, num_stages=0):
                if in_loop:
                    T.copy(Q[bx, :, :], Q_s)
                T.copy(V[bx, i, :, :], V_s)
                T.copy(W[bx, i, :, :], W_s)
                T.gemm(Q_s, V_s, C_f)
                T.gemm(Q_s, W_s, E_f)
                if mma_sync:
                    T.copy(Q_s[0:32, :], R_f)
                    T.gemm(R_f, V_s, G_f, clear_accum=True)
                    T.copy(G_f, C[bx, 0:32, :])
            T.copy(C_f, C[bx, :, :])
            T.copy(E_f, E[bx, :, :])

    return main


GUARDED = "disable_licm=True"


def _source(target, env="1", **kw) -> str:
    with mock.patch.dict(os.environ, {"TILE2TRITON_LICM_GUARD": env}):
        return tilelang.compile(invariant_operand(2, 3, 192, **kw)).lowered_for(target).source


def test_guard_where_an_invariant_operand_meets_a_full_register_file():
    # 64 x 256 + 64 x 256 (192 padded) floats over 4 warps: 256 registers a thread, past 192
    assert GUARDED in _source("sm_90")
    assert GUARDED not in _source("sm_90", env="0")  # the switch
    assert GUARDED not in _source("sm_80")  # wgmma descriptors are sm_90's
    assert GUARDED not in _source("cpu")  # the interpreter runs the loop as written
    assert GUARDED not in _source("sm_90", threads=256)  # 128 registers a thread: within the budget
    assert GUARDED not in _source("sm_90", in_loop=True)  # every operand stored in the loop
    # a gemm of the loop on mma.sync: Triton 3.9 spilled more with the guard there (rules.keeps_invariants_in_loop)
    assert GUARDED not in _source("sm_90", mma_sync=True)


@pytest.mark.parametrize("blocks, iters, N2", [(2, 3, 192), (3, 5, 96)])
def test_guarded_loop_matches_torch(dev, blocks, iters, N2):
    g = torch.Generator().manual_seed(2)

    def rnd(*s):
        return torch.randn(*s, generator=g).to(torch.bfloat16).to(dev)

    q, v, w = rnd(blocks, 64, 32), rnd(blocks, iters, 32, 256), rnd(blocks, iters, 32, N2)
    c = torch.full((blocks, 64, 256), float("nan"), device=dev)
    e = torch.full((blocks, 64, N2), float("nan"), device=dev)
    tilelang.compile(invariant_operand(blocks, iters, N2))(q, v, w, c, e)
    qd, vd, wd = q.double().cpu(), v.double().cpu(), w.double().cpu()
    assert_close(c.cpu(), torch.einsum("bmk,bikn->bmn", qd, vd), atol=2e-2, rtol=2e-2)
    assert_close(e.cpu(), torch.einsum("bmk,bikn->bmn", qd, wd), atol=2e-2, rtol=2e-2)
