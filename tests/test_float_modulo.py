"""Float remainders.  ``a % b`` and ``T.floormod`` of floats are Python's (and ``torch.remainder``'s)
floor modulo, with the divisor's sign, as float ``//`` is the floor of the quotient: ``a == (a // b) * b
+ a % b``.  Triton's ``%`` of floats is C's ``fmod`` (the dividend's sign).  ``T.fmod`` and
``T.truncmod`` are ``fmod``: exact, as CUDA's ``fmodf`` is, also where the quotient is large.
(TileLang's own lowering refuses ``%`` of floats; a Python user means floor modulo.)"""

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


@tilelang.jit(out_idx=[-1])
def remainders(n, dtype, block=64):
    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), R: T.Tensor((n, 5), dtype)):
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            for i in T.Parallel(block):
                k = bx * block + i
                if k < n:
                    R[k, 0] = A[k] % B[k]
                    R[k, 1] = T.floormod(A[k], B[k])
                    R[k, 2] = T.fmod(A[k], B[k])
                    R[k, 3] = T.truncmod(A[k], B[k])
                    R[k, 4] = A[k] % 0.75

    return main


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_float_remainders(dev, dtype):
    n = 301
    torch_dtype = getattr(torch, dtype)
    g = torch.Generator().manual_seed(11)
    a = (torch.rand(n, generator=g, dtype=torch.float64) * 2 - 1) * torch.logspace(0, 4, n, dtype=torch.float64)
    b = (torch.rand(n, generator=g, dtype=torch.float64) * 2 - 1).sign() * (torch.rand(n, generator=g) + 0.1)
    a, b = a.to(torch_dtype), b.to(torch_dtype)
    r = remainders(n, dtype)(a.to(dev), b.to(dev)).cpu()
    a64, b64 = a.double(), b.double()
    fmod = torch.fmod(a64, b64)  # exact in the operands' type: only its rounding-free value counts
    floor = torch.where((fmod != 0) & ((fmod < 0) != (b64 < 0)), fmod + b64, fmod).to(torch_dtype)
    assert torch.equal(r[:, 2], fmod.to(torch_dtype)), (r[:, 2] - fmod).abs().max()
    assert torch.equal(r[:, 3], fmod.to(torch_dtype))
    assert torch.equal(r[:, 0], floor), (r[:, 0].double() - floor.double()).abs().max()
    assert torch.equal(r[:, 1], floor)
    by_literal = torch.remainder(a64, 0.75)
    assert torch.allclose(r[:, 4].double(), by_literal, atol=1e-6 if dtype == "float32" else 4e-3, rtol=0)
    assert bool(((r[:, 0] == 0) | ((r[:, 0] < 0) == (b < 0))).all())  # the divisor's sign
