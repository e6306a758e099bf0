"""Tiles wider than their tensor, the part past its end not computed (passes/dead_parts.py,
TILE2TRITON_DEAD_PARTS): the same results as the whole tiles, and the cut tiles in the source."""

import re

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


@pytest.fixture(params=["1", "0"], ids=["cut", "whole"])
def cut(monkeypatch, request):
    monkeypatch.setenv("TILE2TRITON_DEAD_PARTS", request.param)
    return request.param == "1"


def gemm_epilogue(M, N, K, BM, BN, BK, store, threads=128, stages=2):
    """C = relu(A B + bias) in BM x BN tiles, stored by ``T.copy`` ("direct"), through shared memory
    ("through-shared": TileLang's Hopper convolution epilogue) or element by element in the
    ``T.Parallel`` ("elements": masked at the tensor's end, as TileLang's safe memory access; "guarded":
    under the user's own bounds test).
    benchmarks/dead_parts_sweep.py times it too."""

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        bias: T.Tensor((N,), "float32"),
        C: T.Tensor((M, N), "float16"),
    ):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), threads=threads) as (bx, by):
            A_s = T.alloc_shared((BM, BK), "float16")
            B_s = T.alloc_shared((BK, BN), "float16")
            acc = T.alloc_fragment((BM, BN), "float32")
            out_s = T.alloc_shared((BM, BN), "float16")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, BK), num_stages=stages):
                T.copy(A[by * BM, k * BK], A_s)
                T.copy(B[k * BK, bx * BN], B_s)
                T.gemm(A_s, B_s, acc)
            if store == "elements":
                for i, j in T.Parallel(BM, BN):
                    C[by * BM + i, bx * BN + j] = T.max(acc[i, j] + bias[bx * BN + j], 0)
            elif store == "guarded":
                for i, j in T.Parallel(BM, BN):
                    if by * BM + i < M and bx * BN + j < N:
                        C[by * BM + i, bx * BN + j] = T.max(acc[i, j] + bias[bx * BN + j], 0)
            else:
                for i, j in T.Parallel(BM, BN):
                    acc[i, j] = T.max(acc[i, j] + bias[bx * BN + j], 0)
            if store == "through-shared":
                T.copy(acc, out_s)
                T.copy(out_s, C[by * BM, bx * BN])
            elif store == "direct":
                T.copy(acc, C[by * BM, bx * BN])

    return main


def _widths(source: str, name: str) -> set:
    """The shapes ``name`` is allocated with in the generated source."""
    return set(re.findall(rf"\b{name} = tl\.zeros\((\[[^\]]*\])", source))


def _reference(a, b, bias):
    return torch.relu(a.double() @ b.double() + bias.double())


@pytest.mark.parametrize(
    "M, N, K, BM, BN, want",
    [
        (40, 100, 70, 32, 256, {"acc": "[32, 128]"}),  # 256 -> 128 columns: 100 live
        (40, 37, 70, 32, 256, {"acc": "[32, 64]"}),  # 256 -> 64: 37 live
        (24, 192, 40, 32, 256, {"acc": "[32, 256]"}),  # a quarter dead: 128 + 64 would be two dots, not cut
        (50, 72, 45, 128, 128, {"acc": "[64, 128]"}),  # the rows: 128 -> 64; the columns' 72 need all 128
    ],
)
@pytest.mark.parametrize("store", ["direct", "through-shared", "elements", "guarded"])
def test_cut_tiles_match_torch(dev, cut, M, N, K, BM, BN, want, store):
    kernel = tilelang.compile(gemm_epilogue(M, N, K, BM, BN, 32, store), out_idx=[3])
    a = torch.randn(M, K, device=dev).half()
    b = torch.randn(K, N, device=dev).half()
    bias = torch.randn(N, device=dev)
    c = kernel(a, b, bias)
    torch.testing.assert_close(c.double(), _reference(a, b, bias), atol=3e-2, rtol=3e-2)
    source = kernel.get_kernel_source(interpret=dev == "cpu")
    if not cut:
        want = {"acc": f"[{BM}, {BN}]"}
    assert {name: _widths(source, name) for name in ("acc", "acc_64", "acc_128")} == {
        name: {want[name]} if name in want else set() for name in ("acc", "acc_64", "acc_128")
    }, source


def test_a_tile_with_live_upper_half_in_some_block_stays_whole(dev, cut):
    """300 columns in two 256-wide blocks: the first block's upper half is inside the tensor."""
    M, N, K = 24, 300, 40
    kernel = tilelang.compile(gemm_epilogue(M, N, K, 32, 256, 32, "direct"), out_idx=[3])
    a, b, bias = torch.randn(M, K, device=dev).half(), torch.randn(K, N, device=dev).half(), torch.randn(N, device=dev)
    torch.testing.assert_close(kernel(a, b, bias).double(), _reference(a, b, bias), atol=3e-2, rtol=3e-2)
    assert _widths(kernel.get_kernel_source(interpret=dev == "cpu"), "acc") == {"[32, 256]"}


def row_max(M, N, K, BN):
    """The row maximum of A B over a tile wider than N: the padded columns (zeros: B's loads past N)
    take part in the maximum, as in TileLang, so no half is dead."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32"),
             R: T.Tensor((M,), "float32")):  # fmt: skip
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((M, K), "float16")
            B_s = T.alloc_shared((K, BN), "float16")
            acc = T.alloc_fragment((M, BN), "float32")
            rmax = T.alloc_fragment((M,), "float32")
            T.copy(A[0, 0], A_s)
            T.copy(B[0, 0], B_s)
            T.gemm(A_s, B_s, acc, clear_accum=True)
            T.reduce_max(acc, rmax, dim=1)
            T.copy(acc, C[0, 0])
            T.copy(rmax, R[0])

    return main


def test_a_reduction_over_the_wide_dim_keeps_the_tile(dev, cut):
    M, N, K = 16, 40, 32
    kernel = tilelang.compile(row_max(M, N, K, 128), out_idx=[2, 3])
    a = torch.randn(M, K, device=dev).half()
    b = -torch.rand(K, N, device=dev).half()  # some rows entirely negative: the padded zeros win there
    a = a.abs()
    c, r = kernel(a, b)
    product = a.double() @ b.double()
    torch.testing.assert_close(c.double(), product, atol=2e-2, rtol=2e-2)
    torch.testing.assert_close(r.double(), product.amax(1).clamp(min=0), atol=2e-2, rtol=2e-2)
    source = kernel.get_kernel_source(interpret=dev == "cpu")
    assert "acc_64" not in source and "tl.arange(0, 128)" in source, source
