"""Vector dtypes in locals (issue 26): ``T.alloc_var`` / ``T.alloc_local`` of ``T.bfloat16x2``,
``T.float16x2`` and ``T.int8x4`` in the thread view, built from elements, ``T.Broadcast`` and
``T.Ramp``, read back with ``T.extract_lane``.  The kernels were checked to be valid TileLang 0.1.15
(compiled for sm_90a)."""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


def _pairs(n):
    @T.prim_func
    def main(A: T.Tensor((2 * n,), T.bfloat16), C: T.Tensor((2 * n,), T.bfloat16), D: T.Tensor((n,), T.float32)):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            h = T.alloc_local((1,), T.bfloat16x2)
            g = T.alloc_var(T.float16x2)
            if tx < n:
                h[0] = T.bfloat16x2(A[2 * tx], A[2 * tx + 1])
                C[2 * tx] = T.extract_lane(h[0], 1)
                C[2 * tx + 1] = T.extract_lane(h[0], 0)
                g = T.float16x2(T.Cast(T.float16, A[2 * tx]), T.Cast(T.float16, A[2 * tx + 1]))
                D[tx] = T.Cast(T.float32, T.extract_lane(g, 0)) - T.Cast(T.float32, T.extract_lane(g, 1))

    return main


def test_bfloat16x2_and_float16x2_locals(dev):
    n = 37
    a = torch.randn(2 * n, device=dev).bfloat16()
    c, d = tilelang.compile(_pairs(n), out_idx=[1, 2])(a)
    assert torch.equal(c.view(n, 2), a.view(n, 2).flip(1))
    h = a.view(n, 2).half().float()
    assert_close(d, h[:, 0] - h[:, 1], atol=1e-6, rtol=1e-6)


def _int8x4(n):
    @T.prim_func
    def main(A: T.Tensor((n,), T.int8), B: T.Tensor((n,), T.int32)):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            v = T.alloc_var(T.int8x4)
            if tx < n:
                v = T.Broadcast(A[tx], 4) + T.Ramp(T.int8(0), T.int8(1), 4)
                B[tx] = T.Cast(T.int32, T.extract_lane(v, 3)) * 1000 + T.Cast(T.int32, T.extract_lane(v, 1))

    return main


def test_int8x4_local(dev):
    n = 45
    a = torch.randint(-120, 120, (n,), dtype=torch.int8, device=dev)
    out = tilelang.compile(_int8x4(n), out_idx=[1])(a)
    wrap = (a.int() + 3 + 128) % 256 - 128  # int8 lanes wrap
    assert torch.equal(out.cpu(), (wrap * 1000 + a.int() + 1).cpu())


# ------------------------------------------------------------------ vector dtypes of global tensors
@tilelang.jit(out_idx=[-1])
def vector_tensors(n):
    """Tensors of vector dtypes (tensors of the element dtype with a trailing lane axis): a tile copy
    of float32x2 elements into a shared vector buffer, a float16x2 element cast lane by lane."""

    @T.prim_func
    def main(A: T.Tensor((n,), T.float32x2), B: T.Tensor((n,), T.float16x2), C: T.Tensor((n,), T.float32x2)):
        with T.Kernel(T.ceildiv(n, 32), threads=32) as bx:
            S = T.alloc_shared((32,), T.float32x2)
            T.copy(A[bx * 32], S)
            for i in T.Parallel(32):
                if bx * 32 + i < n:
                    C[bx * 32 + i] = S[i] * 2.0 + T.Cast(T.float32x2, B[bx * 32 + i])

    return main


def test_vector_dtype_tensor_parameters(dev):
    n = 45
    a, b = torch.randn(n, 2, device=dev), torch.randn(n, 2, device=dev).half()
    out = vector_tensors(n)(a, b)
    assert out.shape == (n, 2) and out.dtype == torch.float32
    assert_close(out, 2 * a.double().cpu() + b.double().cpu(), 1e-6, 1e-6)


def _vector_empty(n):
    @T.prim_func
    def main(A: T.Tensor((n, 4), T.int8)):
        out = T.empty((n,), T.int8x4)
        with T.Kernel(1, threads=64):
            for i in T.Parallel(n):
                out[i] = T.int8x4(A[i, 3], A[i, 2], A[i, 1], A[i, 0])
        return out

    return main


def test_vector_dtype_empty_output(dev):
    n = 29
    a = torch.randint(-100, 100, (n, 4), dtype=torch.int8, device=dev)
    out = tilelang.compile(_vector_empty(n))(a)
    assert out.shape == (n, 4) and out.dtype == torch.int8
    assert torch.equal(out.cpu(), a.cpu().flip(1))


def _tma_atomic_add(dtype):
    @T.prim_func
    def main(out: T.Tensor((16, 16), dtype)):
        with T.Kernel(1):
            out_shared = T.alloc_shared((16, 16), dtype=dtype)
            T.atomic_add(out, out_shared, use_tma=True)

    return main


@pytest.mark.parametrize("dtype", [T.int16, T.float64, T.float32x2])
def test_tma_atomic_add_dtypes_are_tilelangs(dtype):
    """TileLang's lowering rejects a TMA atomic add the bulk reduction cannot do (an InternalError)."""
    from tile2triton import tvm

    with pytest.raises(tvm.error.InternalError, match=rf"TMA atomic add does not support dtype {dtype}"):
        tilelang.compile(_tma_atomic_add(dtype))
    tilelang.compile(_tma_atomic_add(T.float32))  # a supported dtype compiles
