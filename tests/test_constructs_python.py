"""Compile-time Python in kernel bodies (issue 26): a ``for`` over a compile-time sequence
(``enumerate(zip(starts, sizes))``) is unrolled while binding, as TileLang's builder runs it, and
slices and builtins of compile-time sequences (``sizes[:k]``, ``sum``, ``len``, ``sorted``) are
plain Python; typed literals (``T.int32(5) & 1``) fold.  The prim_func was checked to be valid
TileLang 0.1.15 (compiled for sm_90a)."""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import TileLangCompileError

pytestmark = pytest.mark.poison_empty

STARTS, SIZES = [0, 10, 30], [10, 20, 47]


def _segments(n):
    @T.prim_func
    def main(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
        with T.Kernel(1, threads=32):
            for k, (start, size) in enumerate(zip(STARTS, SIZES)):
                for i in T.Parallel(size):
                    B[start + i] = A[start + i] * (k + 1) + sum(SIZES[:k]) + len(SIZES) + sorted(SIZES)[0]

    return main


def _segments_ref(a):
    ref = a.clone()
    for k, (start, size) in enumerate(zip(STARTS, SIZES)):
        ref[start : start + size] = a[start : start + size] * (k + 1) + sum(SIZES[:k]) + 3 + 10
    return ref


def test_python_loop_over_a_compile_time_sequence(dev):
    n = 77
    kernel = tilelang.compile(_segments(n), out_idx=[1])
    a = torch.randn(n, device=dev)
    assert_close(kernel(a), _segments_ref(a), atol=1e-6, rtol=1e-6)


@tilelang.jit
def _eager_segments(A, weights=(0.5, -2.0, 3.0)):
    n = T.const("n")
    A: T.Tensor((n,), T.float32)
    B = T.empty((n,), T.float32)
    with T.Kernel(1, threads=64):
        acc = T.alloc_fragment((64,), T.float32)
        T.clear(acc)
        for w, shift in zip(weights[::-1], range(len(weights))):  # a reversed slice, zip with a range
            for i in T.Parallel(64):
                if i + shift < n:
                    acc[i] += A[i + shift] * w
        for i in T.Parallel(64):
            if i < n:
                B[i] = acc[i]
    return B


def test_eager_python_loop_with_slices(dev):
    n = 53
    a = torch.randn(n, device=dev)
    weights = (0.5, -2.0, 3.0)
    ref = torch.zeros(n, device=dev)
    for shift, w in enumerate(weights[::-1]):
        ref[: n - shift] += a[shift:] * w
    assert_close(_eager_segments(a), ref, atol=1e-5, rtol=1e-5)


def _break_in_python_loop():
    @T.prim_func
    def main(A: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=32):
            for k in [1, 2, 3]:
                if k == 2:
                    break
                A[k] = 1.0

    return main


def test_break_in_a_python_loop_is_an_error():
    with pytest.raises(TileLangCompileError, match="compile-time sequence"):
        tilelang.compile(_break_in_python_loop())


def _typed_literals(n):
    @T.prim_func
    def main(A: T.Tensor((n,), T.int32)):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(n):
                A[i] = i + (T.int32(5) & 1) + (T.int32(6) | 1) * 10 + (T.int32(3) ^ 1) * 100 + (T.int32(1) << 4)

    return main


def test_typed_literal_operators(dev):
    n = 45
    out = tilelang.compile(_typed_literals(n), out_idx=[0])()
    assert torch.equal(out.cpu(), torch.arange(n, dtype=torch.int32) + 1 + 70 + 200 + 16)


def test_typed_literal_operators_in_host_code():
    # TileLang's test_tilelang_intimm: a declaration combined with a mask, literals wrapped to their bits
    assert (T.int32() & 0x7FFFFFFF).dtype == T.int32
    assert (T.int32(5) & 1).value == 1
    assert (T.int32(1) << 31).value == -(2**31)
    assert (T.uint64(0xFFFFFFFFFFFFFFFF) & T.uint64(0xFFFFFFFFFFFFFFFF)).value == 2**64 - 1
    assert (6 | T.uint32(1)).value == 7
