"""``T.empty`` in a ``@T.prim_func`` (issue 26, TileLang's func_attrs tests): an output declared before
the T.Kernel blocks and returned, allocated by the runtime (shapes may use scalar parameters); a
sub-byte output is returned as torch's storage dtype.  Checked valid with TileLang 0.1.15 (sm_90a)."""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.language.dtypes import fp4_storage_torch

pytestmark = pytest.mark.poison_empty


def _scaled(m, n):
    @T.prim_func
    def main(A: T.Tensor((m, n), T.float16), s: T.int32):
        out = T.empty((m, s), T.float32)
        total = T.empty((m,), T.float32)
        with T.Kernel(1, threads=64):
            acc = T.alloc_fragment((m, 8), T.float32)
            row = T.alloc_fragment((m,), T.float32)
            for i, j in T.Parallel(m, 8):
                acc[i, j] = T.if_then_else(j < s, A[i, j % n] * 2, 0)
                if j < s:
                    out[i, j] = acc[i, j]
            T.reduce_sum(acc, row, dim=1)
            T.copy(row, total)
        return out, total

    return main


def test_prim_func_empty_outputs(dev):
    m, n, s = 5, 7, 6
    kernel = tilelang.compile(_scaled(m, n))
    a = torch.randn(m, n, device=dev).half()
    out, total = kernel(a, s)
    assert out.shape == (m, s)
    assert_close(out, a[:, :s].float() * 2, atol=1e-3, rtol=1e-3)
    assert_close(total, (a[:, :s].float() * 2).sum(1), atol=1e-3, rtol=1e-3)


def _fp4_empty():
    @T.prim_func
    def kernel(n: T.int32):
        output = T.empty((3, n * 2), T.float4_e2m1fn)
        with T.Kernel(1, threads=1):
            T.evaluate(0)
        return output

    return kernel


def test_prim_func_subbyte_empty_is_torch_storage():
    output = tilelang.compile(_fp4_empty())(11)
    assert output.dtype == fp4_storage_torch()
    assert output.shape == (3, 11)
