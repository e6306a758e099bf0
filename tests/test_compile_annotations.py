"""TileLang's ahead-of-time entry points with annotations in place of tensors:
``fn.compile(out=T.Tensor[(M, N), dtype])`` and ``fn.get_tir(T.Tensor(...), ...)`` of an eager
kernel, and the module-level ``tilelang.par_compile`` over the prim_funcs ``get_tir`` gives
(TileLang's testing/python/language eager-JIT and atomic tests use them)."""

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import KernelCallError


@T.macro
def add_rows(A, B, block):
    # reads the shapes of the tensors it is handed: the eager declarations must be bound by then
    M, N = A.shape
    with T.Kernel(T.ceildiv(M, block), threads=64) as bx:
        for i, j in T.Parallel(block, N):
            if bx * block + i < M:
                B[bx * block + i, j] = A[bx * block + i, j] * 2.0 + 1.0


@tilelang.jit
def scaled_const(A, B, block=16):
    M, N = T.const("M, N")
    A: T.Tensor[[M, N], T.float32]
    B: T.Tensor[[M, N], T.float32]
    add_rows(A, B, block)


@tilelang.jit
def scaled_signature(A: T.Tensor[[37, 24], T.float32], B: T.Tensor[[37, 24], T.float32], block=16):
    add_rows(A, B, block)


@tilelang.jit
def scaled_dynamic(A, B, block=16):
    M = T.dynamic("M")
    N = T.const("N")
    A: T.Tensor[[M, N], T.float32]
    B: T.Tensor[[M, N], T.float32]
    add_rows(A, B, block)


@tilelang.jit
def accumulate(out, rounds=3):
    out: T.Tensor[(21, 12), T.float32]
    with T.Kernel(1, threads=64):
        acc = T.alloc_shared((21, 12), T.float32)
        T.fill(acc, 0.5)
        for _ in range(rounds):
            T.atomic_add(out, acc)


def test_compile_with_annotation_arguments(dev):
    k = accumulate.compile(out=T.Tensor[(21, 12), T.float32])
    assert k is accumulate.compile(out=T.Tensor[(21, 12), T.float32], rounds=3)  # one kernel
    out = torch.randn(21, 12, device=dev)
    ref = out.double() + 1.5
    k(out)
    assert_close(out, ref, atol=1e-6, rtol=0)
    k5 = accumulate.compile(out=T.Tensor[(21, 12), T.float32], rounds=5)
    assert k5 is not k
    # another dtype: TileLang compiles the declaration's (the eager_jit notebook's par_compile relies on it); warned
    with pytest.warns(UserWarning, match=r"parameter 'out' is declared T.Tensor\(\(21, 12\), float32\).*as declared"):
        assert accumulate.compile(out=T.Tensor[(21, 12), T.float16]) is k
    with pytest.raises(KernelCallError, match="parameter 'out' is declared"):
        accumulate.compile(out=T.Tensor[(20, 12), T.float32])
    with pytest.raises(KernelCallError, match="expects a torch.Tensor"):
        accumulate(T.Tensor[(21, 12), T.float32])  # running needs a tensor


@pytest.mark.parametrize("fn", [scaled_const, scaled_signature, scaled_dynamic], ids=lambda f: f.__name__)
def test_get_tir_and_par_compile(dev, fn):
    tirs = [fn.get_tir(T.Tensor((37, 24)), T.Tensor((37, 24)), block=b) for b in (16, 8)]
    kernels = tilelang.par_compile(tirs)
    assert len(kernels) == 2
    a = torch.randn(37, 24, device=dev)
    for k in kernels:
        b = poison((37, 24), device=dev)
        k(a, b)
        assert_close(b, a.double() * 2 + 1, atol=1e-6, rtol=0)
    b = poison((37, 24), device=dev)
    fn(a, b)  # the decorated function itself, afterwards
    assert_close(b, a.double() * 2 + 1, atol=1e-6, rtol=0)


def test_par_compile_prim_funcs_and_errors():
    @T.prim_func
    def negate(A: T.Tensor((50,), T.float32), B: T.Tensor((50,), T.float32)):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(50):
                B[i] = -A[i]

    @T.prim_func
    def broken(A: T.Tensor((50,), T.float32)):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(50):
                A[i] = T.no_such_primitive(A[i])  # noqa: F821

    with pytest.warns(UserWarning, match="par_compile: function 1 failed"):
        k, bad = tilelang.par_compile([negate, broken], out_idx=[1], ignore_error=True)
    assert bad is None
    a = torch.randn(50)
    assert_close(k(a), -a.double(), atol=0, rtol=0)
    with pytest.raises(tilelang.TileLangCompileError):
        tilelang.par_compile([negate, broken], out_idx=[1])
    # tilelang.compile takes what get_tir gives, with out_idx applied to it
    tir = scaled_const.get_tir(T.Tensor((37, 24)), T.Tensor((37, 24)))
    k = tilelang.compile(tir, out_idx=[1])
    a = torch.randn(37, 24)
    assert_close(k(a), a.double() * 2 + 1, atol=1e-6, rtol=0)
