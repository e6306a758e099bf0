"""TileLang's packed two-lane math, ``T.add2/sub2/mul2/max2/min2/fma2/abs2`` on float32x2,
bfloat16x2 and float16x2 values (frontend/rules_vectors.py): lane by lane, fma2 fused; TileLang's
rejections of other and mixed dtypes, in kernels (at the user's line) and in host code."""

import pytest
import torch
from test_fuzz_regressions import compile_for_hopper

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import tvm

M = 37  # threads, each one pair (not a power of two)
DTYPES = ["float32", "bfloat16", "float16"]
BINARY = {
    "add2": lambda a, b: a + b,
    "sub2": lambda a, b: a - b,
    "mul2": lambda a, b: a * b,
    "max2": torch.maximum,
    "min2": torch.minimum,
}


@tilelang.jit
def binary_kernel(name, dtype):
    op = getattr(T, name)

    @T.prim_func
    def main(A: T.Tensor((M * 2,), dtype), B: T.Tensor((M * 2,), dtype), C: T.Tensor((M * 2,), dtype)):
        with T.Kernel(1, threads=M):
            tid = T.get_thread_binding()
            idx = T.Ramp(tid * 2, 1, 2)
            C[idx] = op(A[idx], B[idx])

    return main


@tilelang.jit
def fma_abs_kernel(dtype):
    vector = f"{dtype}x2"

    @T.prim_func
    def main(
        A: T.Tensor((M, 2), dtype),
        B: T.Tensor((M, 2), dtype),
        C: T.Tensor((M, 2), dtype),
        D: T.Tensor((M, 2), dtype),
        E: T.Tensor((M, 2), dtype),
    ):
        with T.Kernel(1, threads=M):
            tid = T.get_thread_binding()
            acc = T.alloc_local((1,), vector)  # a vector buffer: a trailing lane axis
            acc[0] = T.fma2(T.Cast(vector, A[tid, 0:2]), T.Cast(vector, B[tid, 0:2]), T.Cast(vector, C[tid, 0:2]))
            D[tid, 0] = T.extract_lane(acc[0], 0)
            D[tid, 1] = T.extract_lane(acc[0], 1)
            E[tid, 0:2] = T.abs2(T.Cast(vector, A[tid, 0:2]))

    return main


def _randn(dev, tdt, seed):
    return torch.randn(M * 2, generator=torch.Generator(dev).manual_seed(seed), device=dev).to(tdt)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(dev, name, dtype):
    tdt = getattr(torch, dtype)
    a, b = _randn(dev, tdt, 1), _randn(dev, tdt, 2)
    c = torch.full((M * 2,), float("nan"), dtype=tdt, device=dev)
    binary_kernel(name, dtype)(a, b, c)
    # one rounding of the exact result, as __hadd2 / __fmul2 / fmaxf give it
    assert torch.equal(c, BINARY[name](a.double(), b.double()).to(tdt))


@pytest.mark.parametrize("dtype", DTYPES)
def test_fma2_fused_and_abs2(dev, dtype):
    tdt = getattr(torch, dtype)
    a, b, c = (_randn(dev, tdt, s).reshape(M, 2) for s in (3, 4, 5))
    d = torch.full((M, 2), float("nan"), dtype=tdt, device=dev)
    e = torch.full((M, 2), float("nan"), dtype=tdt, device=dev)
    fma_abs_kernel(dtype)(a, b, c, d, e)
    fused = (a.double() * b.double() + c.double()).to(tdt)  # a * b is exact in float64: one rounding
    unfused = ((a * b).double() + c.double()).to(tdt)
    assert torch.equal(e, a.abs())
    ulp = torch.finfo(tdt).eps * torch.maximum(fused.double().abs(), torch.tensor(torch.finfo(tdt).tiny))
    assert ((d.double() - fused.double()).abs() <= ulp).all()
    # fused: equal to the once-rounded value almost everywhere, which the unfused product is not
    assert (d == fused).float().mean() > 0.97
    if dtype == "float32":  # the 16-bit products are exact in float32 anyway
        assert (d != unfused).any()


@tilelang.jit
def mixed_kernel(first, second):
    @T.prim_func
    def main(A: T.Tensor((M * 2,), first), B: T.Tensor((M * 2,), second), C: T.Tensor((M * 2,), first)):
        with T.Kernel(1, threads=M):
            tid = T.get_thread_binding()
            idx = T.Ramp(tid * 2, 1, 2)
            C[idx] = T.add2(A[idx], B[idx])

    return main


def test_kernel_rejects_mixed_and_other_dtypes(dev):
    with pytest.raises(tilelang.TileLangCompileError, match=r"test_packed_x2.py:\d+:\d+: error: T.add2: Expected all"):
        mixed_kernel("float16", "bfloat16")(*(torch.zeros(M * 2, device=dev, dtype=t) for t in (torch.float16,
                                                                                                 torch.bfloat16,
                                                                                                 torch.float16)))  # fmt: skip
    with pytest.raises(tilelang.TileLangCompileError, match=r"Expected dtype in .*got 'float64x2'"):
        mixed_kernel("float64", "float64")(*(torch.zeros(M * 2, device=dev, dtype=torch.float64) for _ in range(3)))


@pytest.mark.parametrize("name", ["add2", "sub2", "mul2", "max2", "min2"])
def test_host_rejects_mixed_packed_dtypes(name):
    # TileLang's own test: tirx.Var of packed dtypes, checked before any kernel exists
    x, y = tvm.tirx.Var("x", "float16x2"), tvm.tirx.Var("y", "bfloat16x2")
    with pytest.raises(ValueError, match="same dtype"):
        getattr(T, name)(x, y)
    with pytest.raises(ValueError, match="Expected dtype in"):
        getattr(T, name)(x, tvm.tirx.Var("z", "float32"))
    with pytest.raises(T.KernelOnlyError):
        getattr(T, name)(x, x)


@pytest.mark.parametrize("kernel", [lambda: binary_kernel("max2", "bfloat16"), lambda: fma_abs_kernel("float16")])
def test_compile_for_hopper(tmp_path, kernel):
    compile_for_hopper(kernel(), tmp_path)
