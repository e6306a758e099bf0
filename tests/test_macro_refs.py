"""``T.Ref`` macro parameters (TileLang's eager builder, the eager_jit notebook's "Passing references"): the
argument, a buffer element or a ``T.alloc_var``, is passed by reference, so assigning the parameter (``=``,
``+=``) stores into it; an element's indices are taken at the call; a recursive macro passes its reference on."""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import TileLangCompileError

pytestmark = pytest.mark.poison_empty


@T.macro
def swap(x: T.Ref, y: T.Ref):
    old = x + 0
    x = y
    y = old  # noqa: F841 - stores into the caller's element


@T.macro
def scale_and_count(x: T.Ref, count: T.Ref, factor):
    x *= factor
    count += 1


@T.macro
def advance_then_store(x: T.Ref, j: T.Ref, value):
    j += 1
    x = value  # the element of the call's j, not the advanced one


def _swap_kernel(n, m):
    @T.prim_func
    def main(A: T.Tensor((n, m), T.float32), Steps: T.Tensor((n,), T.int32), B: T.Tensor((n, m), T.float32)):
        with T.Kernel(n, threads=32) as bx:
            count = T.alloc_var(T.int32, 0)
            j = T.alloc_var(T.int32, 0)
            for k in T.serial(m // 2):
                swap(A[bx, k * 2], A[bx, k * 2 + 1])
            for k in T.serial(m):
                if A[bx, k] > 0:
                    scale_and_count(A[bx, k], count, 3.0)
            for k in T.serial(m):
                advance_then_store(B[bx, j], j, A[bx, k] + k)
            Steps[bx] = count + j * 100

    return main


def test_references_to_elements_and_variables(dev):
    n, m = 5, 14
    a = torch.randn(n, m)
    out = a.clone().to(dev)
    steps = torch.full((n,), -1, dtype=torch.int32, device=dev)
    b = torch.full((n, m), float("nan"), device=dev)
    tilelang.compile(_swap_kernel(n, m))(out, steps, b)
    swapped = a.view(n, m // 2, 2).flip(-1).reshape(n, m)
    want_steps = (swapped > 0).sum(1)
    ref = torch.where(swapped > 0, swapped * 3, swapped)  # float32, as the kernel rounds x * 3
    assert_close(out, ref, atol=0, rtol=0)
    assert_close(b, ref + torch.arange(m, dtype=torch.float32), atol=0, rtol=0)
    assert torch.equal(steps.cpu().long(), want_steps + m * 100)


@T.macro
def collatz(x, var: T.Ref):
    if x == 1:
        pass
    elif x % 2 == 0:
        var = var // 2
        collatz(x // 2, var)
    else:
        var = var * 3 + 1
        collatz(x * 3 + 1, var)


@tilelang.jit
def collatz_kernel(A: T.Tensor[[3], T.int32], n: int):
    with T.Kernel(1) as _:
        collatz(n, A[1])


@pytest.mark.parametrize("n", [6, 7])
def test_recursive_macro_passes_its_reference_on(dev, n):
    """The notebook's n31: each step rewrites the caller's element, the recursion unrolled at compile time."""
    a = torch.randint(1000, 5000, (3,), dtype=torch.int32)
    out = a.clone().to(dev)
    collatz_kernel(out, n)
    want, x = int(a[1]), n
    while x != 1:
        want, x = (want // 2, x // 2) if x % 2 == 0 else (want * 3 + 1, x * 3 + 1)
    assert out.cpu().tolist() == [int(a[0]), want, int(a[2])]


def test_a_reference_to_a_value_is_an_error():
    @T.prim_func
    def main(A: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=32):
            swap(A[0], 2.0)

    with pytest.raises(
        TileLangCompileError, match=r"T.Ref parameter 'y' takes a buffer element .* got the Python value 2.0"
    ):
        tilelang.compile(main)
