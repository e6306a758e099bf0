"""Division of 16-bit floats rounds to the operands' type, as TileLang's (CUDA's ``__hdiv``) does.
Triton divides float16 and bfloat16 in float32 and keeps the float32 quotient, so a comparison of the
quotient (``a / b > c``) decided on bits the TileLang kernel never has (fuzz seed 7343807)."""

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


@tilelang.jit(out_idx=[-2, -1])
def divide(n, dtype, block=64):
    @T.prim_func
    def main(
        A: T.Tensor((n,), dtype),
        B: T.Tensor((n,), dtype),
        C: T.Tensor((n,), dtype),
        Q: T.Tensor((n,), "float32"),
        Above: T.Tensor((n,), "int32"),
    ):
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            for i in T.Parallel(block):
                k = bx * block + i
                if k < n:
                    q = A[k] / B[k]
                    Q[k] = T.cast(q, "float32")
                    Above[k] = T.if_then_else(q > C[k], 1, 0)

    return main


@tilelang.jit(out_idx=[-1])
def divide_literals(n, dtype, block=64):
    @T.prim_func
    def main(A: T.Tensor((n,), dtype), Q: T.Tensor((n, 2), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            for i in T.Parallel(block):
                k = bx * block + i
                if k < n:
                    Q[k, 0] = T.cast(A[k] / 3.0, "float32")
                    Q[k, 1] = T.cast(T.cast(1.5, dtype) / A[k], "float32")

    return main


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_quotient_is_rounded_to_the_operands_type(dev, dtype):
    n = 777
    torch_dtype = getattr(torch, dtype)
    g = torch.Generator().manual_seed(7)
    a = (torch.rand(n, generator=g, dtype=torch.float64) * 4 - 2).to(torch_dtype)
    b = (torch.rand(n, generator=g, dtype=torch.float64) * 3 + 0.25).to(torch_dtype)
    want = (a.double() / b.double()).to(torch_dtype)  # one rounding of the exact quotient
    c = want.clone()  # the quotient itself: never above it in the operands' type
    q, above = divide(n, dtype)(a.to(dev), b.to(dev), c.to(dev))
    assert torch.equal(q.cpu(), want.float())
    assert int(above.sum()) == 0


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_quotient_with_a_literal(dev, dtype):
    n = 150
    torch_dtype = getattr(torch, dtype)
    a = (torch.rand(n, dtype=torch.float64) * 4 + 0.5).to(torch_dtype)
    q = divide_literals(n, dtype)(a.to(dev)).cpu()
    # a Python float is a float32 constant: TileLang's CUDA divides in float32, `(float)A / 3.0f`
    assert torch.equal(q[:, 0], (a.double() / 3.0).float())
    assert torch.equal(q[:, 1], (1.5 / a.double()).to(torch_dtype).float())


@tilelang.jit(out_idx=[-1])
def floor_divide(n, dtype, block=64):
    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), Q: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            for i in T.Parallel(block):
                k = bx * block + i
                if k < n:
                    Q[k] = T.floordiv(A[k], B[k])

    return main


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_floor_of_the_rounded_quotient(dev, dtype):
    """TVM's floordiv of floats is the floor of the quotient as ``/`` rounds it: a 16-bit quotient
    just under an integer that rounds up to it floors to that integer; an exact quotient (6 / 3) is
    not floored below it by an approximate division."""
    n = 500
    torch_dtype = getattr(torch, dtype)
    g = torch.Generator().manual_seed(3)
    b = (torch.rand(n, generator=g, dtype=torch.float64) * 3 + 0.5).to(torch_dtype)
    k = torch.randint(-40, 40, (n,), generator=g).double()
    nudge = torch.rand(n, generator=g, dtype=torch.float64) * 0.004 - 0.002  # a few quotients just off k
    a = (k * b.double() * (1 + nudge * (torch.arange(n) % 2))).to(torch_dtype)
    want = torch.floor((a.double() / b.double()).to(torch_dtype).double()).to(torch_dtype)
    got = floor_divide(n, dtype)(a.to(dev), b.to(dev)).cpu()
    assert torch.equal(got, want)
