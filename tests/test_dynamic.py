"""T.dynamic sizes (and the deprecated T.symbolic) in both styles: one compiled kernel serves
every size, and the size is a run-time argument of the generated Triton kernel; T.const and
static shapes stay compile-time constants."""

import re

import pytest
import torch
from t2t_util import Guarded, assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import KernelCallError
from tile2triton.runtime.cache import stats


@tilelang.jit(out_idx=[-1])
def lazy_scale(block=64, symbolic=False):
    N = T.symbolic("N") if symbolic else T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, block), threads=64) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] * 3.0 - 1.0

    return main


@tilelang.jit
def eager_scale(A, block=64):
    N = T.dynamic("N")
    A: T.Tensor((N,), T.float32)
    B = T.empty((N,), T.float32)
    with T.Kernel(T.ceildiv(N, block), threads=64) as bx:
        for i in T.Parallel(block):
            B[bx * block + i] = A[bx * block + i] * 3.0 - 1.0
    return B


@tilelang.jit
def const_scale(A, block=64):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    B = T.empty((N,), T.float32)
    with T.Kernel(T.ceildiv(N, block), threads=64) as bx:
        for i in T.Parallel(block):
            B[bx * block + i] = A[bx * block + i] * 3.0 - 1.0
    return B


def _kernel_signature(source: str) -> str:
    return re.search(r"def \w+_kernel\((.*)\):", source).group(1)


@pytest.mark.parametrize("symbolic", [False, True], ids=["dynamic", "symbolic"])
def test_lazy_dynamic_compiles_once_for_three_sizes(dev, symbolic):
    k = lazy_scale(64, symbolic)
    before = stats.compiles
    for n in (1, 100, 333):
        a = torch.randn(n, device=dev)
        assert_close(k(a), a.double() * 3 - 1, 1e-6, 1e-6)
    assert stats.compiles - before <= 1  # 0 when an earlier test compiled it for this device
    again = stats.compiles
    k(torch.randn(1000, device=dev))
    assert stats.compiles == again


def test_eager_dynamic_compiles_exactly_once(dev):
    before_binds, before = stats.binds, stats.compiles
    for n in (7, 64, 250):
        a = torch.randn(n, device=dev)
        assert_close(eager_scale(a, 32), a.double() * 3 - 1, 1e-6, 1e-6)
    assert stats.binds - before_binds == 1
    assert stats.compiles - before == 1


def test_const_compiles_per_size_then_hits_cache(dev):
    before = stats.compiles
    sizes = (90, 91) if dev == "cpu" else (92, 93)
    for n in sizes:
        a = torch.randn(n, device=dev)
        assert_close(const_scale(a), a.double() * 3 - 1, 1e-6, 1e-6)
    assert stats.compiles - before == 2
    for n in sizes:
        const_scale(torch.randn(n, device=dev))
    assert stats.compiles - before == 2


def test_dynamic_size_is_a_runtime_argument_in_triton():
    src = lazy_scale(64).get_kernel_source(interpret=True)
    assert _kernel_signature(src) == "A, B, N"
    assert "tl.constexpr" not in src
    assert re.search(r"< N\b", src)  # the bound mask reads the argument
    src = eager_scale._eager.get_kernel_source(torch.randn(10))
    assert _kernel_signature(src) == "A, B, N"


def test_const_size_is_a_compile_time_constant():
    src = const_scale._eager.get_kernel_source(torch.randn(77))
    assert _kernel_signature(src) == "A, B"
    assert "< 77" in src


@tilelang.jit(out_idx=[-1])
def dyn_rowsum(block_M=8, N_static=24):
    M = T.dynamic("M")

    @T.prim_func
    def main(A: T.Tensor((M, N_static), T.float32), B: T.Tensor((M, N_static), T.float32),
             C: T.Tensor((M, N_static), T.float32)):  # fmt: skip
        with T.Kernel(T.ceildiv(M, block_M), threads=32) as bx:
            for i, j in T.Parallel(block_M, 32):
                if j < N_static:
                    C[bx * block_M + i, j] = A[bx * block_M + i, j] + B[bx * block_M + i, j]

    return main


def test_mixed_dynamic_and_static_dims(dev):
    k = dyn_rowsum()
    for m in (3, 17):
        a, b = torch.randn(m, 24, device=dev), torch.randn(m, 24, device=dev)
        assert_close(k(a, b), a.double() + b.double(), 1e-6, 1e-6)
    with pytest.raises(
        KernelCallError, match=r"parameter 'B' expects shape \(M, 24\), got \(3, 25\) \(dim 1 should be 24\)"
    ):
        k(torch.randn(3, 24), torch.randn(3, 25))
    with pytest.raises(
        KernelCallError, match=r"parameter 'B' has shape \(4, 24\): dim 0 gives M=4, but 'A' dim 0 gave M=3"
    ):
        k(torch.randn(3, 24), torch.randn(4, 24))


@tilelang.jit
def eager_dyn_inplace(X, Y, block=32):
    N = T.dynamic("N")
    X: T.Tensor((N,), T.float32)
    Y: T.Tensor((N,), T.float32)
    with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
        for i in T.Parallel(block):
            Y[bx * block + i] = X[bx * block + i] + 0.5


def test_eager_dynamic_writes_nothing_outside(dev):
    for n in (5, 40):
        x = torch.randn(n, device=dev)
        g = Guarded((n,), device=dev)
        eager_dyn_inplace(x, g.tensor)
        assert_close(g.tensor, x.double() + 0.5, 1e-6, 1e-6)
        g.check_tail()


def test_zero_size_launches_nothing(dev):
    out = eager_scale(torch.randn(0, device=dev))
    assert out.shape == (0,)


def test_an_allocation_sized_by_a_run_time_value_names_its_expression():
    """TileLang refuses it too; the message shows the shape as written, not tile2triton's IR."""

    @tilelang.jit
    def sized_by_loop(n):
        @T.prim_func
        def main(A: T.Tensor((n,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                for i in T.serial(3):
                    S = T.alloc_shared((16 * (i + 1),), "float32")
                    T.copy(A[0:16], S[0:16])

        return main

    with pytest.raises(tilelang.TileLangCompileError) as err:
        sized_by_loop(40).get_kernel_source()
    assert "got (16 * (i + 1),) (not a compile-time constant)" in str(err.value)
    assert "test_dynamic.py" in str(err.value) and "VarRef" not in str(err.value)
