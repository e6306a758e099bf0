"""Generated Triton reads as a person would write it: no broadcast of an already spread value, no
``x // 1`` or ``0 + i``, a constant index's offset as one number (codegen/registers.spread,
codegen/lower.ev_binop and global_address).  The kernel also runs, against torch."""

import re

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


def masked_scores(M, N, R, groups, BM=16, BN=32):
    """Out[g, i, j] = A[1, i] * B[j] where Keep[j] != 0 else -inf, for rows of block ``g // groups``."""

    @T.prim_func
    def main(
        A: T.Tensor((R, M), T.float32),
        B: T.Tensor((N,), T.float32),
        Keep: T.Tensor((N,), T.int32),
        Out: T.Tensor((R, M, N), T.float32),
    ):
        with T.Kernel(T.ceildiv(M, BM), T.ceildiv(N, BN), R) as (bx, by, g):
            keep = T.alloc_fragment([BN], "bool")
            acc = T.alloc_fragment([BM, BN], T.float32)
            for j in T.Parallel(BN):
                keep[j] = Keep[by * BN + j] != 0
            for i, j in T.Parallel(BM, BN):
                acc[i, j] = T.if_then_else(keep[j], 0, -T.infinity(T.float32))
            for i, j in T.Parallel(BM, BN):
                acc[i, j] += A[1, bx * BM + 0 + i] * B[by * BN + j]
            T.copy(acc, Out[g // groups, bx * BM : (bx + 1) * BM, by * BN : (by + 1) * BN])

    return main


def test_generated_text_and_results(dev):
    M, N, R = 37, 70, 3
    kernel = tilelang.compile(masked_scores(M, N, R, 1), out_idx=[-1])
    source = kernel.lowered_for("sm_90").source
    source = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("#"))  # code only
    assert "tl.broadcast_to(tl.broadcast_to(" not in source
    assert "g // 1" not in source and "g * 2590" in source  # Out[g // groups] with groups = 1
    assert "+ 0 +" not in source and "0 + i" not in source
    assert "1 * 37" not in source and re.search(rf"offs\w* = {M} \+ ", source)  # A[1, ...]: row 1's offset
    torch.manual_seed(0)
    a = torch.randn(R, M, device=dev)
    b = torch.randn(N, device=dev)
    keep = (torch.rand(N, device=dev) < 0.6).to(torch.int32)
    out = kernel(a, b, keep)
    ref = torch.where(keep.bool()[None, :], a[1].double()[:, None] * b.double()[None, :], float("-inf"))
    assert_close(out, ref.expand(R, M, N), 1e-6, 1e-6)
