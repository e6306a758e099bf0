"""A gemm of fewer rows than a warpgroup's 64 and at least 64 columns, as the transpose of its
transposed product (TILE2TRITON_TRANSPOSED_DOTS=1, codegen/tile_ops.py): attention backward's
dQ = dS^T K of 32 query rows.  The interpreter runs the code sm_90 gets."""

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


def dq_like(N, D, BM, BN):
    """Per key block k: S = K Q_k^T (BM x BN, a wgmma's rows), dQ_k = fp16(S)^T K (BN x D: 32 rows)."""

    @T.prim_func
    def main(K: T.Tensor((BM, D), "float16"), Q: T.Tensor((N, D), "float16"), dQ: T.Tensor((N, D), "float32")):
        with T.Kernel(1, threads=128) as _:
            k_s = T.alloc_shared((BM, D), "float16")
            q_s = T.alloc_shared((BN, D), "float16")
            s = T.alloc_fragment((BM, BN), "float32")
            s_s = T.alloc_shared((BM, BN), "float16")
            dq = T.alloc_fragment((BN, D), "float32")
            T.copy(K[0, 0], k_s)
            for k in T.Pipelined(T.ceildiv(N, BN), num_stages=2):
                T.copy(Q[k * BN, 0], q_s)
                T.gemm(k_s, q_s, s, transpose_B=True, clear_accum=True)
                T.copy(s, s_s)
                T.clear(dq)
                T.gemm(s_s, k_s, dq, transpose_A=True)
                T.copy(dq, dQ[k * BN, 0])

    return main


@pytest.mark.parametrize("switch", ["1", "0"])
def test_transposed_dot(dev, monkeypatch, switch):
    monkeypatch.setenv("TILE2TRITON_TRANSPOSED_DOTS", switch)
    N, D, BM, BN = 88, 80, 64, 32  # ragged query blocks; D padded to 128 columns
    kernel = tilelang.compile(dq_like(N, D, BM, BN), out_idx=[-1])
    k = (torch.randn(BM, D, device=dev) * 0.3).half()
    q = (torch.randn(N, D, device=dev) * 0.3).half()
    out = kernel(k, q)
    if dev == "cpu":
        source = kernel.get_kernel_source(interpret=True)
        assert ("tl.trans(tl.dot(" in source) == (switch == "1"), source
    p = (k.double() @ q.double().T).half().double()
    torch.testing.assert_close(out.double(), p.T @ k.double(), atol=2e-2, rtol=2e-2)
