"""Binder drop-in cases found by running TileLang's example CI: compile-time `is`/`in`,
symbolic sizes from tvm Var, and the other names the examples use."""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import TileLangCompileError

# ---------------------------------------------------------------- `is` / `in` on compile-time values


@tilelang.jit
def scaled_window(A, scale=None, window=None, dtype=T.float32, block=16):
    N = T.const("N")
    A: T.Tensor((N,), dtype)
    assert dtype in [T.float32, T.float16], "only float32 and float16"
    assert dtype not in (T.int8,)
    if scale is None:
        scale = 2.0
    B = T.empty((N,), dtype)
    with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
        # the window start is a compile-time choice (the attention-sink examples' idiom)
        start = T.max(0, bx * block - window) if window is not None else 0
        for i in T.Parallel(block):
            idx = bx * block + i
            if idx < N:
                B[idx] = T.if_then_else(idx >= start, A[idx] * scale, A[idx])
    return B


def test_is_and_in_evaluate_at_compile_time(dev):
    a = torch.randn(53, device=dev)
    assert_close(scaled_window(a), a.double() * 2, 1e-6, 1e-6)
    assert_close(scaled_window(a, scale=-3.0), a.double() * -3, 1e-6, 1e-6)
    out = scaled_window(a, scale=0.5, window=5)
    idx = torch.arange(53)
    start = torch.clamp((idx // 16) * 16 - 5, min=0)
    ref = torch.where(idx >= start, a.double().cpu() * 0.5, a.double().cpu())
    assert_close(out, ref, 1e-6, 1e-6)


def test_membership_assert_fails_with_its_message():
    with pytest.raises(TileLangCompileError, match="only float32 and float16"):
        scaled_window(torch.randn(20, dtype=torch.float64), dtype=T.float64)


@tilelang.jit
def membership_on_kernel_value(A):
    N = T.const("N")
    A: T.Tensor((N,), T.int32)
    B = T.empty((N,), T.int32)
    with T.Kernel(1, threads=32) as bx:
        for i in T.Parallel(N):
            B[i] = 1 if A[i] in [1, 2] else 0
    return B


def test_membership_on_kernel_value_is_an_error():
    with pytest.raises(TileLangCompileError, match="'in' comparisons are not supported on kernel values"):
        membership_on_kernel_value(torch.arange(7, dtype=torch.int32))
