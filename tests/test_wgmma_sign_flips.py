"""A gemm's accumulator negated, or its magnitude taken, where a condition holds (GPU fuzz seeds
9442089 and 9450384).

``-Cf[i, j]`` was always emitted as ``Cf * -1.0`` (IEEE's negation: -(+0) is -0, where Triton 3.6's
``-x`` is ``0 - x``).  LLVM turns it into an ``fneg``, and, for the accumulator elements whose
branch of the ``tl.where`` is known when compiling, into ``xor.b32 r, 0x80000000`` of the wgmma's
result register.  ptxas 12.8 / 12.9 (Triton 3.6's for sm_90) fold that xor to the flipped value the
register held before the wgmmas (the accumulator's initial constant): 198 of 2904 outputs read -0.5
on an H100.  ``tl.abs`` becomes ``and.b32 r, 0x7fffffff``, folded the same way.  ptxas 13.0 (CUDA 13's) and
13.4 (Triton 3.9's) keep both.  Where the card's ptxas is an old one, kernels with gemms negate floats as ``-x``
and take magnitudes as ``tl.maximum(x, -x)``; elsewhere, and in kernels without gemms, ``x * -1.0``
and ``tl.abs`` stay."""

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.runtime import target as target_mod


def flipped_gemm(M, N, K, block_m=64, block_n=64, block_k=48, fill=0.5, trans_a=False, op="neg"):
    """C = fill + A @ B, then negated (``op="abs"``: its magnitude) below the tile's diagonal (the
    fuzz programs' shape)."""
    a_shape = (K, M) if trans_a else (M, K)
    as_shape = (block_k, block_m) if trans_a else (block_m, block_k)

    @T.prim_func
    def main(A: T.Tensor(a_shape, "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_n), T.ceildiv(M, block_m), threads=128) as (bx, by):
            As = T.alloc_shared(as_shape, "float16")
            Bs = T.alloc_shared((block_k, block_n), "float16")
            Cf = T.alloc_fragment((block_m, block_n), "float32")
            T.fill(Cf, fill)
            for ko in T.serial(T.ceildiv(K, block_k)):
                if trans_a:
                    T.copy(A[ko * block_k, by * block_m], As)
                else:
                    T.copy(A[by * block_m, ko * block_k], As)
                T.copy(B[ko * block_k, bx * block_n], Bs)
                T.gemm(As, Bs, Cf, transpose_A=trans_a)
            for i, j in T.Parallel(block_m, block_n):
                if i > j:
                    if op == "abs":
                        Cf[i, j] = T.abs(Cf[i, j])
                    else:
                        Cf[i, j] = -Cf[i, j]
            T.copy(Cf, C[by * block_m, bx * block_n])

    return main


def row_amax_of_gemm(M, N, K):
    """A gemm, then each row's largest magnitude (T.reduce_absmax of the accumulator)."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), Y: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, 64), threads=128) as bx:
            As = T.alloc_shared((64, K), "float16")
            Bs = T.alloc_shared((K, N), "float16")
            Cf = T.alloc_fragment((64, N), "float32")
            amax = T.alloc_fragment((64,), "float32")
            T.copy(A[bx * 64, 0], As)
            T.copy(B[0, 0], Bs)
            T.gemm(As, Bs, Cf, clear_accum=True)
            T.reduce_absmax(Cf, amax, dim=1)
            T.copy(amax, Y[bx * 64])

    return main


def negated_rows(M, N):
    """No gemm: a negation keeps IEEE's sign of zero wherever it is compiled."""

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(M, threads=64) as bx:
            for j in T.Parallel(N):
                Y[bx, j] = -X[bx, j]

    return main


def _reference(a, b, fill, trans_a, block_n, op="neg"):
    a64 = a.double().cpu()
    c = (a64.T if trans_a else a64) @ b.double().cpu() + fill
    i = torch.arange(c.shape[0])[:, None] % 64  # the row and column in the output's tile
    j = torch.arange(c.shape[1])[None, :] % block_n
    return torch.where(i > j, c.abs() if op == "abs" else -c, c)


@pytest.mark.parametrize("op", ["neg", "abs"])
@pytest.mark.parametrize(
    "M,N,K,block_n,block_k,fill,trans_a",
    [(44, 66, 4, 64, 48, 0.5, False), (90, 70, 37, 24, 16, 0.0, True), (70, 100, 50, 64, 32, -1.25, False)],
)
def test_negated_accumulator(dev, M, N, K, block_n, block_k, fill, trans_a, op):
    torch.manual_seed(M + N + K)
    kernel = tilelang.compile(flipped_gemm(M, N, K, 64, block_n, block_k, fill, trans_a, op))
    a = torch.randn((K, M) if trans_a else (M, K), dtype=torch.float16, device=dev)
    b = torch.randn(K, N, dtype=torch.float16, device=dev)
    c = poison((M, N), device=dev)
    kernel(a, b, c)
    assert_close(c, _reference(a, b, fill, trans_a, block_n, op), atol=2e-2, rtol=1e-2)


def test_old_ptxas_spells_signs_as_arithmetic(monkeypatch):
    """The sm_90 source under each ptxas: ``-x`` and ``tl.maximum(x, -x)`` in a kernel with a gemm
    where ptxas is old; ``x * -1.0`` and ``tl.abs`` where it is new, on other cards, and in kernels
    without gemms."""
    neg = tilelang.compile(flipped_gemm(44, 66, 4))
    mag = tilelang.compile(flipped_gemm(44, 66, 4, op="abs"))
    rows = tilelang.compile(negated_rows(5, 30))
    amax = tilelang.compile(row_amax_of_gemm(100, 64, 32))
    monkeypatch.setattr(target_mod, "ptxas_keeps_wgmma_sign_flips", lambda: False)
    assert "tl.maximum(Cf, -Cf)" in amax.lowered_for("sm_90").source
    assert "tl.where(cond, -Cf, Cf)" in neg.lowered_for("sm_90").source
    assert "tl.where(cond, tl.maximum(Cf, -Cf), Cf)" in mag.lowered_for("sm_90").source
    assert "Cf * -1.0" in neg.lowered_for("sm_80").source  # mma.sync: no wgmma accumulator
    assert "tl.abs(Cf)" in mag.lowered_for("sm_80").source
    assert "* -1.0" in rows.lowered_for("sm_90").source
    monkeypatch.setattr(target_mod, "ptxas_keeps_wgmma_sign_flips", lambda: True)
    assert "Cf * -1.0" in neg.lowered_for("sm_90").source
    assert "tl.abs(Cf)" in mag.lowered_for("sm_90").source
    assert "tl.abs(Cf)" in amax.lowered_for("sm_90").source


def test_row_amax_of_gemm(dev):
    torch.manual_seed(1)
    kernel = tilelang.compile(row_amax_of_gemm(100, 64, 32))
    a = torch.randn(100, 32, dtype=torch.float16, device=dev)
    b = torch.randn(32, 64, dtype=torch.float16, device=dev)
    y = poison((100,), device=dev)
    kernel(a, b, y)
    assert_close(y, (a.double() @ b.double()).abs().amax(dim=1).cpu(), atol=2e-2, rtol=1e-2)


@pytest.mark.parametrize(
    "version,keeps", [("12.8", False), ("12.9", False), ("13.0", True), ("13.4", True), ("13.10", True)]
)
def test_ptxas_versions(monkeypatch, version, keeps):
    compiler = pytest.importorskip("triton.backends.nvidia.compiler")

    class Tool:
        pass

    tool = Tool()
    tool.version = version
    monkeypatch.setattr(compiler, "get_ptxas", lambda arch: tool)
    assert target_mod.ptxas_keeps_wgmma_sign_flips() is keeps


def test_negation_of_zero_without_gemm(dev):
    """-(+0) is -0, as TileLang's CUDA negates, in a kernel without gemms on every card."""
    kernel = tilelang.compile(negated_rows(5, 30))
    x = torch.randn(5, 30, device=dev)
    x[:, ::3] = 0.0
    y = poison((5, 30), device=dev)
    kernel(x, y)
    assert_close(y, -x.double().cpu(), atol=0, rtol=0)
    assert torch.equal(torch.signbit(y[:, ::3]).cpu(), torch.ones(5, 10, dtype=torch.bool))
