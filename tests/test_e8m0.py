"""float8_e8m0fnu (the exponent-only scale format of block-scaled MMA: 2**(bits - 127), 0xFF NaN):
uint8 in memory, float32 in registers.  Global tensors read and written element by element
(on-chip buffers and tile ops: test_e8m0_onchip.py); a cast to it rounds up to a power of two as
CUDA's __nv_cvt_float_to_e8m0 (satfinite, round toward +inf) does, which TileLang's casts use."""

import math

import pytest
import torch
from t2t_util import assert_close
from test_fuzz_regressions import compile_for_hopper

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import TileLangCompileError

E8M0 = T.float8_e8m0fnu


@tilelang.jit
def scale_roundtrip(n, block=64):
    @T.prim_func
    def main(
        X: T.Tensor((n,), T.float32),
        S: T.Tensor((n,), E8M0),
        Y: T.Tensor((n,), E8M0),
        Z: T.Tensor((n,), T.float32),
    ):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                k = bx * block + i
                if k < n:
                    Y[k] = T.cast(X[k], E8M0)
                    Z[k] = T.cast(S[k], T.float32) * X[k]

    return main


def e8m0_reference(x: torch.Tensor) -> torch.Tensor:
    """2**ceil(log2|x|), clamped to [2**-127, 2**127] (0 gives 2**-127)."""
    a = x.double().abs()
    e = torch.where(a > 0, torch.ceil(torch.log2(a.clamp_min(1e-300))), torch.full_like(a, -127.0))
    return torch.exp2(e.clamp(-127, 127))


@pytest.mark.parametrize("n", [37, 150])
def test_e8m0_cast_store_and_load(dev, n):
    g = torch.Generator().manual_seed(n)
    X = torch.randn(n, generator=g) * torch.exp2(torch.randint(-40, 40, (n,), generator=g).float())
    X[:4] = torch.tensor([0.0, 3.0, -0.75, 2.0**-130])  # 0, round up, sign ignored, subnormal
    X[4] = 2.0**127 * 1.5  # above the largest: saturates
    codes = torch.randint(64, 191, (n,), generator=g, dtype=torch.uint8)  # products stay normal floats
    codes[:5] = 127  # scale 1 for the special inputs
    codes[5:8] = torch.tensor([0, 1, 254], dtype=torch.uint8)  # 2**-127 (no zero in e8m0), 2**-126, 2**127
    X[5:8] = torch.tensor([2.0**100, 2.0**100, 2.0**-100])
    X, S = X.to(dev), codes.to(dev).view(torch.float8_e8m0fnu)
    Y = torch.full((n,), 0xFF, dtype=torch.uint8, device=dev).view(torch.float8_e8m0fnu)  # NaN
    Z = torch.full((n,), float("nan"), device=dev)
    scale_roundtrip(n)(X, S, Y, Z)
    assert_close(Y.view(torch.uint8).double().sub(127).exp2(), e8m0_reference(X), atol=0, rtol=0)
    assert_close(Z, torch.exp2(codes.double() - 127).to(dev) * X.double(), atol=0, rtol=1e-6)


@tilelang.jit
def e8m0_atomic(n):
    @T.prim_func
    def main(S: T.Tensor((n,), E8M0), Z: T.Tensor((n,), E8M0)):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(n):
                T.atomic_max(Z[i], S[i])

    return main


def test_e8m0_atomics_are_a_clear_error():
    # on-chip buffers, tile ops and casts of e8m0: test_e8m0_onchip.py
    with pytest.raises(TileLangCompileError, match=r"test_e8m0.py:\d+.*'Z' is float8_e8m0fnu, which an atomic"):
        e8m0_atomic(40).compile()


def test_e8m0_compiles_for_hopper(tmp_path):
    compile_for_hopper(scale_roundtrip(150), tmp_path)


@tilelang.jit
def e8m0_from_loop_index(n, vec):
    @T.prim_func
    def main(A: T.Tensor((n,), E8M0)):
        with T.Kernel(1, threads=32):
            for i in T.vectorized(vec):
                A[i] = T.cast(i + 1, E8M0)

    return main


@pytest.mark.parametrize("vec", [1, 2, 3])
def test_e8m0_cast_of_a_loop_index(dev, vec):
    """An integer cast to e8m0 (TileLang's test_vectorize_all_dtypes): a one-lane loop's index is
    a Python int under the interpreter, which the rounding helper must take too."""
    a = torch.full((8,), float("nan"), device=dev).to(torch.float8_e8m0fnu)
    e8m0_from_loop_index(8, vec)(a)
    want = [2.0 ** math.ceil(math.log2(k + 1)) for k in range(vec)]
    assert a[:vec].float().tolist() == want
