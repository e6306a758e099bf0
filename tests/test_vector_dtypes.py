"""TileLang's vector dtypes (``T.float16x2``, ``T.bfloat16x2``, ``T.int8x4``, ``T.float32x4`` ...):
vector values (packed with ``T.float16x2(a, b)``, taken apart with ``T.extract_lane``, computed
lane by lane, cast, broadcast, ramped, shuffled) and buffers of a vector dtype, which are buffers
of the element dtype with a trailing lane axis (TileLang's testing/python/language extract-lane
test, ``test_extract_lane_cuda``)."""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import TileLangCompileError

pytestmark = pytest.mark.poison_empty  # outputs the runtime allocates start as NaN / a sentinel


def _extract_lane_kernel(dtype, vector_dtype):
    @T.prim_func
    def kernel(A: T.Tensor((2,), dtype), B: T.Tensor((2,), dtype)):
        with T.Kernel(1, threads=1):
            packed = T.alloc_var(vector_dtype)
            packed = vector_dtype(A[0], A[1])
            B[0] = T.extract_lane(packed, 0)
            B[1] = T.extract_lane(packed, 1)

    return kernel


@pytest.mark.parametrize("dtype,vector_dtype", [(T.bfloat16, T.bfloat16x2), (T.float16, T.float16x2)])
def test_extract_lane_round_trip(dev, dtype, vector_dtype):
    kernel = tilelang.compile(_extract_lane_kernel(dtype, vector_dtype), out_idx=-1)
    a = torch.randn(2, device=dev).to(dtype.as_torch())
    assert_close(kernel(a), a, atol=0, rtol=0)


@tilelang.jit(out_idx=[1, 2])
def pairs(n, block=32):
    @T.prim_func
    def main(A: T.Tensor((2 * n,), T.float16), Y: T.Tensor((2 * n,), T.float32), S: T.Tensor((n,), T.float32)):
        with T.Kernel(T.ceildiv(n, block), threads=64) as bx:
            V = T.alloc_fragment((block,), T.float16x2)  # (block, 2) float16
            V_shared = T.alloc_shared((block,), T.float16x2)
            W = T.alloc_fragment((block,), T.float32x2)
            for i in T.Parallel(block):
                k = bx * block + i
                V[i] = T.float16x2(
                    T.if_then_else(k < n, A[2 * k], 0), T.if_then_else(k < n, A[2 * k + 1], 0)
                )
            T.copy(V, V_shared)  # whole vector buffers: lanes included
            for i in T.Parallel(block):
                w: T.float32x2 = V_shared[i] * T.float16(2) + T.Broadcast(T.float16(1), 2)
                w += T.Ramp(T.float32(0), T.float32(0.5), 2)  # + (0, 0.5)
                W[i] = T.Shuffle([w], [1, 0])  # lanes swapped
            for i in T.Parallel(block):
                k = bx * block + i
                if k < n:
                    Y[2 * k] = T.extract_lane(W[i], 1)
                    Y[2 * k + 1] = T.extract_lane(W[i], 0)
                    S[k] = T.extract_lane(W[i], 0) + T.extract_lane(T.cast(V[i], T.float32x2), 0)

    return main


def test_vector_buffers_and_lane_arithmetic(dev):
    n = 45
    a = torch.randn(2 * n, device=dev).half()
    y, s = pairs(n)(a)
    x = a.double().view(n, 2)
    ref = x * 2 + 1  # computed in float16 by the kernel: compared at float16's precision
    ref[:, 1] += 0.5
    assert_close(y.view(n, 2), ref, atol=2e-3, rtol=2e-3)
    assert_close(s, ref[:, 1] + x[:, 0], atol=2e-3, rtol=2e-3)


@tilelang.jit(out_idx=[1])
def var_ops(n):
    @T.prim_func
    def main(A: T.Tensor((n, 4), T.int8), B: T.Tensor((n, 4), T.int32)):
        with T.Kernel(n, threads=32) as bx:
            acc = T.alloc_var(T.int32x4, init=10)  # every lane
            v = T.int8x4(A[bx, 0], A[bx, 1], A[bx, 2], A[bx, 3])
            before = acc  # its value here (10s), not after the update
            acc += T.cast(v, T.int32x4) * 3
            neg = -acc
            big = acc > 20
            for k in T.serial(4):
                B[bx, k] = 0
            B[bx, 0] = T.extract_lane(neg, 0)
            B[bx, 1] = T.extract_lane(acc, 1)
            B[bx, 2] = T.if_then_else(T.extract_lane(big, 2), 1, 0)
            B[bx, 3] = T.extract_lane(acc, 3) - T.extract_lane(before, 2)

    return main


def test_vector_var_int_lanes(dev):
    n = 23
    a = torch.randint(-20, 20, (n, 4), dtype=torch.int8, device=dev)
    b = var_ops(n)(a)
    acc = 10 + 3 * a.long().cpu()
    ref = torch.stack([-acc[:, 0], acc[:, 1], (acc[:, 2] > 20).long(), acc[:, 3] - 10], dim=1)
    assert torch.equal(b.cpu().long(), ref)


def test_vector_errors():
    @T.prim_func
    def out_of_bounds(A: T.Tensor((2,), T.float16), B: T.Tensor((2,), T.float16)):
        with T.Kernel(1, threads=1):
            B[0] = T.extract_lane(T.float16x2(A[0], A[1]), 2)

    @T.prim_func
    def not_a_vector(A: T.Tensor((2,), T.float16), B: T.Tensor((2,), T.float16)):
        with T.Kernel(1, threads=1):
            B[0] = T.extract_lane(A[0], 0)

    @T.prim_func
    def lanes_differ(A: T.Tensor((4,), T.float16), B: T.Tensor((4,), T.float16)):
        with T.Kernel(1, threads=1):
            w = T.float16x2(A[0], A[1]) + T.float16x4(A[0], A[1], A[2], A[3])
            B[0] = T.extract_lane(w, 0)

    for fn, message in [
        (out_of_bounds, "lane index 2 is out of bounds for a vector of 2 lanes"),
        (not_a_vector, "T.extract_lane expects a vector expression"),
        (lanes_differ, "vectors of 4 and 2 lanes do not combine|vectors of 2 and 4 lanes do not combine"),
    ]:
        with pytest.raises(TileLangCompileError, match=r"test_vector_dtypes.py:\d+.*(" + message + ")"):
            tilelang.compile(fn)
    # a vector tensor is its element dtype with a trailing lane axis (test_constructs_vectors.py); one of
    # an element tile2triton has no dtype for stays an error
    with pytest.raises(TypeError, match="vector dtypes .* have no Triton equivalent"):
        T.Tensor((2,), T.float6_e2m3fnx2)


def test_vectors_compile_for_hopper(tmp_path):
    from test_fuzz_regressions import compile_for_hopper

    compile_for_hopper(pairs(45), tmp_path)
    compile_for_hopper(var_ops(23), tmp_path)


@tilelang.jit(out_idx=[1, 2])
def ramp_cast(n):
    @T.prim_func
    def main(X: T.Tensor((n, 4), T.float32), Y: T.Tensor((n, 4), T.float16), Z: T.Tensor((n, 2), T.float16)):
        with T.Kernel(n, threads=32) as bx:
            x_local = T.alloc_local((4,), T.float32)
            y_local = T.alloc_local((4,), T.float16)
            z_local = T.alloc_local((2,), T.float16)
            for k in T.serial(4):
                x_local[k] = X[bx, k]
            y_local[T.Ramp(0, 1, 4)] = T.Cast("float16x4", x_local[T.Ramp(0, 1, 4)])  # TIR's spelling
            z_local[0:2] = T.Cast("float16x2", x_local[2:4]) - T.Broadcast(T.float16(1), 2)
            for k in T.serial(4):
                Y[bx, k] = y_local[k]
            for k in T.serial(2):
                Z[bx, k] = z_local[k]

    return main


def test_ramp_index_and_region_cast(dev):
    n = 19
    x = torch.randn(n, 4, device=dev)
    y, z = ramp_cast(n)(x)
    assert_close(y, x.half(), atol=0, rtol=0)
    assert_close(z, (x[:, 2:].half() - 1).double(), atol=0, rtol=0)
