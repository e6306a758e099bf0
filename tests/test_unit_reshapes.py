"""Unit axes of register tiles (TILE2TRITON_UNIT_RESHAPES): a (1, N) fragment written from a copied row and
read back into it, a ``T.Parallel(1, N)`` lane space reading a 1-D buffer.  They are ``tl.reshape``s, which
keep a loaded row's layout on the GPU, not ``x[None, :]`` (an expand_dims Triton serves through shared
memory) or a sum over the unit axis; offline (Triton 3.6, sm_90) layernorm's conversions went 6 -> 0 and
rms_norm_splitk's 4 -> 0; on an H100 layernorm 0.0630 -> 0.0511 ms."""

import re

import pytest
import torch
from norm_kernels import rms_norm_splitk
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T


def _code(kernel) -> str:
    src = kernel.get_kernel_source(interpret=False)
    return "\n".join(line for line in src.splitlines() if not line.strip().startswith("#"))


def scaled_rows(M, D):
    """Layernorm's shape: a (1, D) row tile, a 1-D gamma read in a T.Parallel(1, D) lane space."""

    @T.prim_func
    def main(X: T.Tensor((M, D), "float32"), G: T.Tensor((D,), "float32"), Y: T.Tensor((M, D), "float32")):
        with T.Kernel(M, threads=128) as bx:
            x = T.alloc_shared((1, D), "float32")
            g = T.alloc_shared((D,), "float32")
            y = T.alloc_fragment((1, D), "float32")
            total = T.alloc_fragment((1,), "float32")
            T.copy(X[bx, 0], x)
            T.copy(G, g)
            T.reduce_sum(x, total, dim=1)
            for i, j in T.Parallel(1, D):
                y[i, j] = (x[i, j] - total[i] / D) * g[j]
            T.copy(y, Y[bx, 0])

    return main


@pytest.mark.parametrize("M,N,blk_k", [(7, 300, 128), (5, 200, 64)])
@pytest.mark.parametrize("switch", ["1", "0"])
def test_row_tiles(dev, monkeypatch, M, N, blk_k, switch):
    monkeypatch.setenv("TILE2TRITON_UNIT_RESHAPES", switch)
    torch.manual_seed(M * N)
    kernel = tilelang.jit(out_idx=[])(rms_norm_splitk)(M, N, blk_k)
    a = torch.randn(M, N, device=dev)
    out = poison((M, N), device=dev)
    kernel(a, out)
    a64 = a.cpu().double()
    assert_close(out, a64 * torch.rsqrt(a64.square().mean(dim=1, keepdim=True) + 1e-12), atol=1e-5, rtol=1e-5)
    code = _code(kernel)
    expanded = re.search(r"\)\[None, :\]", code)
    if switch == "1":
        assert not expanded and f"tl.reshape(A_shared, ({blk_k},))" in code, code
    else:
        assert expanded, code


@pytest.mark.parametrize("M,D", [(6, 200), (3, 96)])
@pytest.mark.parametrize("switch", ["1", "0"])
def test_row_lane_space_reads_a_vector(dev, monkeypatch, M, D, switch):
    monkeypatch.setenv("TILE2TRITON_UNIT_RESHAPES", switch)
    torch.manual_seed(M + D)
    kernel = tilelang.jit(out_idx=[])(scaled_rows)(M, D)
    x, g = torch.randn(M, D, device=dev), torch.randn(D, device=dev)
    out = poison((M, D), device=dev)
    kernel(x, g, out)
    x64 = x.cpu().double()
    assert_close(out, (x64 - x64.mean(dim=1, keepdim=True)) * g.cpu().double(), atol=1e-5, rtol=1e-5)
    if switch == "1":  # gamma meets the row as it was loaded
        assert "tl.reshape(g, (1, " in _code(kernel), _code(kernel)
