"""A gemm of fewer rows than a warpgroup's 64 and at least 64 columns, as the transpose of its
transposed product (TILE2TRITON_TRANSPOSED_DOTS=1, codegen/tile_ops.py): attention backward's
dQ = dS^T K of 32 query rows.  The interpreter runs the code sm_90 gets."""

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


def dq_like(N, D, BM, BN):
    """dQ[rows of block k] += dS_k^T K for each key block: C (BN x D) = A^T (BN x BM) B (BM x D)."""

    @T.prim_func
    def main(S: T.Tensor((BM, N), "float16"), K: T.Tensor((BM, D), "float16"), Q: T.Tensor((N, D), "float32")):
        with T.Kernel(1, threads=128) as _:
            k_s = T.alloc_shared((BM, D), "float16")
            s_s = T.alloc_shared((BM, BN), "float16")
            dq = T.alloc_fragment((BN, D), "float32")
            T.copy(K[0, 0], k_s)
            for k in T.Pipelined(T.ceildiv(N, BN), num_stages=2):
                T.copy(S[0, k * BN], s_s)
                T.clear(dq)
                T.gemm(s_s, k_s, dq, transpose_A=True)
                T.copy(dq, Q[k * BN, 0])

    return main


@pytest.mark.parametrize("switch", ["1", "0"])
def test_transposed_dot(dev, monkeypatch, switch):
    monkeypatch.setenv("TILE2TRITON_TRANSPOSED_DOTS", switch)
    N, D, BM, BN = 88, 80, 64, 32  # ragged key blocks; D padded to 128 columns
    kernel = tilelang.compile(dq_like(N, D, BM, BN), out_idx=[-1])
    s = torch.randn(BM, N, device=dev).half()
    k = torch.randn(BM, D, device=dev).half()
    out = kernel(s, k)
    if dev == "cpu":
        source = kernel.get_kernel_source(interpret=True)
        assert ("tl.trans(tl.dot(" in source) == (switch == "1"), source
    torch.testing.assert_close(out.double(), s.double().T @ k.double(), atol=2e-2, rtol=2e-2)
