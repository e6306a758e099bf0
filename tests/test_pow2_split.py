"""Buffers with a dim that is not a power of two, lowered as power-of-two parts
(passes/pow2_split.py, TILE2TRITON_SPLIT_DIMS=1): the same results as the padded lowering, and the
parts in the generated source."""

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


@pytest.fixture(params=["1", "0"], ids=["split", "padded"])
def split(monkeypatch, request):
    monkeypatch.setenv("TILE2TRITON_SPLIT_DIMS", request.param)
    return request.param == "1"


def attention_like(M, N, D, BM, BN):
    """Every form the rewrite handles, on a D-wide head dim (D = 96 = 64 + 32):
    S = A B^T (D is gemm K), acc += P B (D is N), g = P^T A (D is N, transposed A), h = A^T P (D is M),
    element atomics of g scaled by W[j] in a T.Parallel, a tile atomic of h, a copy of acc out."""

    @T.prim_func
    def main(
        A: T.Tensor((M, D), "float16"),
        B: T.Tensor((N, D), "float16"),
        W: T.Tensor((D,), "float32"),
        Out: T.Tensor((M, D), "float32"),
        G: T.Tensor((N, D), "float32"),
        H: T.Tensor((D, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(M, BM), threads=128) as bx:
            A_s = T.alloc_shared((BM, D), "float16")
            B_s = T.alloc_shared((BN, D), "float16")
            S = T.alloc_fragment((BM, BN), "float32")
            P = T.alloc_fragment((BM, BN), "float16")
            acc = T.alloc_fragment((BM, D), "float32")
            g = T.alloc_fragment((BN, D), "float32")
            h = T.alloc_fragment((D, BN), "float32")
            T.copy(A[bx * BM, 0], A_s)
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(N, BN), num_stages=2):
                T.copy(B[k * BN, 0], B_s)
                T.gemm(A_s, B_s, S, transpose_B=True, clear_accum=True)
                T.copy(S, P)
                T.gemm(P, B_s, acc)
                T.gemm(P, A_s, g, transpose_A=True, clear_accum=True)
                for i, j in T.Parallel(BN, D):
                    T.atomic_add(G[k * BN + i, j], g[i, j] * W[j])
                T.gemm(A_s, P, h, transpose_A=True, clear_accum=True)
                T.atomic_add(H[0, k * BN], h)
            for i, j in T.Parallel(BM, D):
                acc[i, j] = acc[i, j] * W[j]
            T.copy(acc, Out[bx * BM, 0])

    return main


def test_parts_match_torch(dev, split):
    M, N, D, BM, BN = 72, 40, 96, 32, 16  # ragged row blocks and key blocks
    kernel = tilelang.compile(attention_like(M, N, D, BM, BN))
    a = (torch.randn(M, D, device=dev) * 0.5).half()
    b = (torch.randn(N, D, device=dev) * 0.5).half()
    w = torch.rand(D, device=dev) + 0.5
    out = torch.full((M, D), float("nan"), device=dev)
    g = torch.zeros(N, D, device=dev)
    h = torch.zeros(D, N, device=dev)
    kernel(a, b, w, out, g, h)
    source = kernel.get_kernel_source(interpret=dev == "cpu")
    names = ("A_s_0", "A_s_64", "B_s_64", "acc_64", "g_64", "h_64")
    assert all(n in source for n in names) == split, source
    p = (a.double() @ b.double().T).half().double()
    torch.testing.assert_close(out.double(), (p @ b.double()) * w.double(), atol=2e-2, rtol=2e-2)
    torch.testing.assert_close(g.double(), (p.T @ a.double()) * w.double(), atol=2e-2, rtol=2e-2)
    torch.testing.assert_close(h.double(), a.double().T @ p, atol=2e-2, rtol=2e-2)


def row_sums(M, D, BM):
    """A reduction over a 96-wide buffer: a use the rewrite does not handle, so it stays whole."""

    @T.prim_func
    def main(A: T.Tensor((M, D), "float32"), Out: T.Tensor((M, D), "float32"), Sums: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, BM), threads=128) as bx:
            a = T.alloc_fragment((BM, D), "float32")
            s = T.alloc_fragment((BM,), "float32")
            T.copy(A[bx * BM, 0], a)
            T.reduce_sum(a, s, dim=1)
            for i, j in T.Parallel(BM, D):
                a[i, j] = a[i, j] * 2
            T.copy(a, Out[bx * BM, 0])
            T.copy(s, Sums[bx * BM])

    return main


def test_unhandled_use_keeps_the_buffer_whole(dev, split):
    M, D, BM = 40, 96, 16
    kernel = tilelang.compile(row_sums(M, D, BM), out_idx=[1, 2])
    x = torch.randn(M, D, device=dev)
    out, sums = kernel(x)
    assert "a_64" not in kernel.get_kernel_source(interpret=dev == "cpu")
    torch.testing.assert_close(out, x * 2)
    torch.testing.assert_close(sums, x.sum(1), atol=1e-4, rtol=1e-4)


def reshaped_rows(rows, width, groups, op):
    """A fragment whose width is not a power of two (192, 96), reshaped into groups and reduced:
    the view is lowered over its base's tile, so the base is not split into parts (TileLang's
    test_reduce_sum_reshape_straddle_layout_regression)."""

    @T.prim_func
    def main(A: T.Tensor((rows, width), "float32"), B: T.Tensor((rows, groups), "float32")):
        with T.Kernel(1, threads=128):
            src = T.alloc_fragment((rows, width), "float32")
            dst = T.alloc_fragment((rows, groups), "float32")
            for i, j in T.Parallel(rows, width):
                src[i, j] = A[i, j] * 2.0 - 1.0
            grouped = T.reshape(src, (rows, groups, width // groups))
            if op == "sum":
                T.reduce_sum(grouped, dst, dim=2)
            else:
                T.reduce_absmax(grouped, dst, dim=2)
            for i, g in T.Parallel(rows, groups):
                B[i, g] = dst[i, g]

    return main


@pytest.mark.parametrize("rows, width, groups", [(2, 192, 6), (4, 96, 3)])
@pytest.mark.parametrize("op", ["sum", "absmax"])
def test_a_reshaped_buffer_is_not_split(dev, split, rows, width, groups, op):
    kernel = tilelang.compile(reshaped_rows(rows, width, groups, op), out_idx=[1])
    a = torch.randn(rows, width, device=dev)
    grouped = (a.double() * 2 - 1).reshape(rows, groups, -1)
    want = grouped.sum(-1) if op == "sum" else grouped.abs().amax(-1)
    torch.testing.assert_close(kernel(a).double(), want, atol=1e-4, rtol=1e-5)
