"""``T.reduce_bitand`` / ``reduce_bitor`` / ``reduce_bitxor`` (TileLang's testing/python/math folder): a
row reduction of an integer tile with ``&`` ``|`` ``^`` (``tl.reduce``), padded lanes holding the identity,
``clear=False`` combining with the old output."""

import functools
import operator

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import TileLangCompileError

pytestmark = pytest.mark.poison_empty


def _bitwise(m, n, block_m, name, clear):
    op = getattr(T, "reduce_" + name)

    @T.prim_func
    def main(A: T.Tensor((m, n), T.int32), B: T.Tensor((m,), T.int32), Out: T.Tensor((m,), T.int32)):
        with T.Kernel(T.ceildiv(m, block_m), threads=128) as by:
            tile = T.alloc_fragment((block_m, n), T.int32)
            row = T.alloc_fragment((block_m,), T.int32)
            T.copy(A[by * block_m, 0], tile)
            T.copy(B[by * block_m], row)
            op(tile, row, dim=1, clear=clear)
            T.copy(row, Out[by * block_m])

    return main


@pytest.mark.parametrize("name,fn", [("bitand", operator.and_), ("bitor", operator.or_), ("bitxor", operator.xor)])
@pytest.mark.parametrize("clear", [True, False])
def test_bitwise_reductions(dev, name, fn, clear):
    m, n = 45, 32  # 45 rows: a partial last tile (TileLang needs a power-of-two fragment width)
    a = torch.randint(-(2**31), 2**31 - 1, (m, n), dtype=torch.int32, device=dev)
    if name == "bitand":
        a |= torch.randint(0, 2**30, (m, n), dtype=torch.int32, device=dev)  # keep some bits set in every row
    b = torch.randint(-(2**31), 2**31 - 1, (m,), dtype=torch.int32, device=dev)
    out = tilelang.compile(_bitwise(m, n, 32, name, clear), out_idx=[2])(a, b)
    rows = [functools.reduce(fn, a[i].tolist()) for i in range(m)]
    ref = [r if clear else fn(r, int(x)) for r, x in zip(rows, b.tolist())]
    assert out.cpu().tolist() == ref


def _float_bitand():
    @T.prim_func
    def main(A: T.Tensor((4, 4), T.float32), B: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=32):
            tile = T.alloc_fragment((4, 4), T.float32)
            row = T.alloc_fragment((4,), T.float32)
            T.copy(A, tile)
            T.reduce_bitand(tile, row, dim=1)
            T.copy(row, B)

    return main


def test_bitwise_reduction_of_floats_is_an_error():
    with pytest.raises(TileLangCompileError, match="integer buffer"):
        tilelang.compile(_float_bitand())
