"""An integer T.min / T.max whose value ranges decide it for every block is emitted as that operand
(TILE2TRITON_PROVEN_MIN_MAX), as TileLang's simplifier folds it: ``T.min(start + chunk, n)`` with n a multiple
of the chunk is ``start + chunk`` (block_mean_pooling's ``k_end``), and the loop over the chunk gets a trip
count Triton can see.  Where the ranges do not decide it the ``tl.minimum`` stays."""

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T


def chunk_sums(n, D, chunk, block):
    """Y[c, :] = the sum of X's rows [c * chunk, min((c + 1) * chunk, n)), block rows at a time."""

    @T.prim_func
    def main(X: T.Tensor((n, D), "float32"), Y: T.Tensor((T.ceildiv(n, chunk), D), "float32")):
        with T.Kernel(T.ceildiv(n, chunk), threads=128) as bx:
            acc = T.alloc_fragment((D,), "float32")
            tile = T.alloc_fragment((block, D), "float32")
            T.clear(acc)
            start = bx * chunk
            end = T.min(start + chunk, n)
            for b in T.serial(T.ceildiv(end - start, block)):
                for i, j in T.Parallel(block, D):
                    row = start + b * block + i
                    tile[i, j] = T.if_then_else(row < end, X[row, j], 0)
                T.reduce_sum(tile, acc, dim=0, clear=False)
            for j in T.Parallel(D):
                Y[bx, j] = acc[j] * 0.5

    return main


@pytest.mark.parametrize("n,folds", [(144, True), (150, False)])
@pytest.mark.parametrize("switch", ["1", "0"])
def test_a_min_the_ranges_decide(dev, monkeypatch, n, folds, switch):
    monkeypatch.setenv("TILE2TRITON_PROVEN_MIN_MAX", switch)
    D, chunk, block = 24, 48, 20
    torch.manual_seed(n)
    kernel = tilelang.jit(out_idx=[])(chunk_sums)(n, D, chunk, block)
    x = torch.randn(n, D, device=dev)
    out = poison((-(-n // chunk), D), device=dev)
    kernel(x, out)
    x64 = x.cpu().double()
    expected = torch.stack([x64[c : c + chunk].sum(0) for c in range(0, n, chunk)]) * 0.5
    assert_close(out, expected, atol=1e-5, rtol=1e-5)
    source = kernel.get_kernel_source(interpret=False)
    assert ("tl.minimum(" in source) == (switch == "0" or not folds), source
