"""TILE2TRITON_COLUMN_SPLIT (passes/column_split.py): a shared/fragment buffer used only as static
column blocks is one buffer per block (MLA's Q_shared[:, :512] / [:, 512:]), not one padded tile."""

import os
from unittest import mock

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.compiler import bind_kernel_source
from tile2triton.passes.column_split import split_columns

pytestmark = pytest.mark.poison_empty


def two_block(M, D, DT, N, read_whole=False):
    """Out = Q[:, :D] K^T + Q[:, D:] Kt^T + 1 with Q staged in one Q_s[M, D + DT]; with
    ``read_whole`` Q_s is also read by element (so it must stay whole)."""
    dt = "float16"

    @T.prim_func
    def main(
        Q: T.Tensor((M, D + DT), dt),
        K: T.Tensor((N, D + DT), dt),
        Out: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(1, threads=128) as _:
            Q_s = T.alloc_shared((M, D + DT), dt)
            K_s = T.alloc_shared((N, D), dt)
            Kt_s = T.alloc_shared((N, DT), dt)
            acc = T.alloc_fragment((M, N), "float32")
            T.copy(Q[0:M, :D], Q_s[:, :D])
            T.copy(Q[0:M, D:], Q_s[:, D:])
            T.copy(K[0:N, :D], K_s)
            T.copy(K[0:N, D:], Kt_s)
            T.fill(acc, 1)
            T.gemm(Q_s[:, :D], K_s, acc, transpose_B=True)
            T.gemm(Q_s[:, D:], Kt_s, acc, transpose_B=True)
            if read_whole:
                for i, j in T.Parallel(M, N):
                    acc[i, j] += Q_s[i, 0]
            T.copy(acc, Out[0:M, 0:N])

    return main


def _split(prim):
    func = bind_kernel_source(prim)
    return split_columns(func.kernels[0])


def test_blocks_become_buffers():
    _, pieces = _split(two_block(32, 128, 32, 48))
    ((buf, parts),) = pieces.items()
    assert buf.name == "Q_s" and [p.shape for p in parts.values()] == [(32, 128), (32, 32)]


@pytest.mark.parametrize(
    "args, why",
    [
        ((32, 128, 32, 48, True), "an element read keeps the buffer whole"),
        ((32, 64, 64, 48), "two 64-column blocks pad to what 128 columns pad to: nothing to gain"),
    ],
)
def test_left_whole(args, why):
    kernel, pieces = _split(two_block(*args))
    assert pieces == {}, why


@pytest.mark.parametrize("shape", [(32, 128, 32, 48), (20, 64, 16, 24)])
@pytest.mark.parametrize("switch", ["1", "0"])
def test_split_matches_torch(shape, switch):
    M, D, DT, N = shape
    with mock.patch.dict(os.environ, {"TILE2TRITON_COLUMN_SPLIT": switch}):
        kernel = tilelang.compile(two_block(M, D, DT, N))
        source = kernel.get_kernel_source()
        g = torch.Generator().manual_seed(3)
        q = torch.randn(M, D + DT, generator=g).half()
        k = torch.randn(N, D + DT, generator=g).half()
        out = torch.full((M, N), float("nan"))
        kernel(q, k, out)
    assert ("Q_s_1 = tl.load(" in source) == (switch == "1")
    assert_close(out, q.double() @ k.double().T + 1, atol=2e-2, rtol=2e-3)
