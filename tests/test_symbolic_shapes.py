"""Tensor shapes given by expressions of T.dynamic sizes (``M // 4``, ``T.ceildiv(M, 4)``, ``2 * M``):
the first tensor that has the bare size binds it, the others are checked against the evaluated
expression (a KernelCallError on a mismatch), and inside the kernel the expression is a value."""

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import KernelCallError, TileLangCompileError

GROUP = 4


@tilelang.jit
def group_max():
    M = T.dynamic("M")
    groups = T.ceildiv(M, GROUP)  # a host-side expression of M, used as a shape and in the body

    @T.prim_func
    def main(
        A: T.Tensor((M, 6), T.float32),
        W: T.Tensor((M * 2 + 1,), T.float32),
        G: T.Tensor((groups, 6), T.float32),
        N: T.Tensor((T.max(M // 3, 1),), T.float32),
    ):
        with T.Kernel(groups, threads=32) as bx:
            for j in T.Parallel(6):
                G[bx, j] = -1e30
                for r in T.serial(GROUP):
                    if bx * GROUP + r < M:
                        G[bx, j] = T.max(G[bx, j], A[bx * GROUP + r, j] * W[2 * (bx * GROUP + r)])
            if bx == 0:
                N[0] = groups * 1.0 + W[M * 2]

    return main


def reference(A, W):
    m = A.shape[0]
    scaled = A.double() * W[: 2 * m : 2].double()[:, None]
    G = torch.stack([scaled[g : g + GROUP].amax(0) for g in range(0, m, GROUP)])
    return G, (m + GROUP - 1) // GROUP + W[2 * m].double()


@pytest.mark.parametrize("m", [7, 13])
def test_expression_shapes_bind_check_and_evaluate(dev, m):
    kernel = group_max()
    A = torch.randn(m, 6, device=dev)
    W = torch.rand(2 * m + 1, device=dev) + 0.5
    G = poison(((m + GROUP - 1) // GROUP, 6), device=dev)
    N = poison((max(m // 3, 1),), device=dev)
    kernel(A, W, G, N)
    G_ref, first = reference(A, W)
    assert_close(G, G_ref, atol=1e-5, rtol=1e-5)
    assert_close(N[:1], first.reshape(1), atol=1e-5, rtol=1e-5)


def test_expression_shape_mismatch_is_a_call_error(dev):
    kernel = group_max()
    m = 13
    A, W = torch.randn(m, 6, device=dev), torch.rand(2 * m + 1, device=dev)
    N = torch.empty(4, device=dev)
    with pytest.raises(KernelCallError, match=r"parameter 'G' expects shape .*got \(3, 6\) \(dim 0 should be 4\)"):
        kernel(A, W, torch.empty(3, 6, device=dev), N)
    with pytest.raises(KernelCallError, match=r"parameter 'W' .*dim 0 should be 27"):
        kernel(A, torch.rand(26, device=dev), torch.empty(4, 6, device=dev), N)


@tilelang.jit(out_idx=[-1])
def halve_pairs(block=16):
    M = T.dynamic("M")

    @T.prim_func
    def main(A: T.Tensor((M,), T.float32), B: T.Tensor((M // 2,), T.float32)):
        with T.Kernel(T.ceildiv(M // 2, block), threads=32) as bx:
            for i in T.Parallel(block):
                if bx * block + i < M // 2:
                    B[bx * block + i] = A[2 * (bx * block + i)] + A[2 * (bx * block + i) + 1]

    return main


@pytest.mark.parametrize("m", [37, 50])
def test_expression_shape_of_an_output(dev, m):
    A = torch.randn(m, device=dev)
    B = halve_pairs()(A)
    assert B.shape == (m // 2,)
    ref = A[: 2 * (m // 2)].double().reshape(-1, 2).sum(1)
    assert_close(B, ref, atol=1e-5, rtol=1e-5)


@tilelang.jit
def eager_pairs(A, block=16):
    M = T.dynamic("M")
    A: T.Tensor((M * 2,), T.float32)
    B = T.empty((M,), T.float32)
    with T.Kernel(T.ceildiv(M, block), threads=32) as bx:
        for i in T.Parallel(block):
            if bx * block + i < M:
                B[bx * block + i] = A[2 * (bx * block + i)] - A[2 * (bx * block + i) + 1]
    return B


@pytest.mark.parametrize("m", [19, 40])
def test_size_solved_from_a_linear_expression_dim(dev, m):
    # M appears only inside an expression (M * 2): solved from that dim, as TileLang's binder does
    A = torch.randn(2 * m, device=dev)
    B = eager_pairs(A)
    assert B.shape == (m,)
    assert_close(B, A.double()[0::2] - A.double()[1::2], atol=1e-6, rtol=1e-6)


@tilelang.jit
def affine_fill(block=32):
    n = T.dynamic("n")

    @T.prim_func
    def main(X: T.Tensor((n * 3 + 1,), T.float32), Y: T.Tensor((n * 3 + 1,), T.float32)):
        with T.Kernel(T.ceildiv(n * 3 + 1, block), threads=32) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n * 3 + 1:
                    Y[bx * block + i] = X[bx * block + i] * 2.0 + n

    return main


@pytest.mark.parametrize("n", [0, 5, 43])
def test_size_solved_from_an_affine_dim_is_a_value(dev, n):
    X = torch.randn(3 * n + 1, device=dev)
    Y = poison(X.shape, device=dev)
    affine_fill()(X, Y)
    assert_close(Y, X.double() * 2 + n, atol=1e-6, rtol=1e-6)


def test_affine_dim_no_whole_size_gives_is_a_call_error(dev):
    with pytest.raises(KernelCallError, match=r"parameter 'A' has shape \(37,\): dim 0 is \(?M \* 2\)?, which no whole M"):
        eager_pairs(torch.randn(37, device=dev))
    with pytest.raises(KernelCallError, match=r"parameter 'X' .*which no whole n >= 0 gives"):
        affine_fill()(torch.randn(18, device=dev), torch.randn(18, device=dev))


@tilelang.jit
def fp6_output(A):
    M = T.dynamic("M")
    A: T.Tensor((M,), T.float32)
    B = T.empty((M,), T.float6_e2m3fn)
    with T.Kernel(1, threads=32):
        for i in T.Parallel(4):
            B[i] = A[i]
    return B


def test_empty_with_an_unsupported_dtype_names_the_dtype():
    with pytest.raises(TileLangCompileError, match="T.float6_e2m3fn is a TileLang dtype that tile2triton does not"):
        fp6_output(torch.randn(8))
