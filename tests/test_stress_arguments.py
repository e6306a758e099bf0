"""Compiled kernels called with arguments from other code, fuzzed (hypothesis): every call either
runs right (the arguments were valid after all) or raises a KernelCallError that names the
parameter; never a crash, a Triton traceback, a wrong answer or a write outside the output."""

import os

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stress_kernels import row_sum, scale_add

from tile2triton import KernelCallError

DEVICE = os.environ.get("TILE2TRITON_TEST_DEVICE", "cpu")
PARAMS = ("A", "B")  # scale_add's inputs (C is its output)

dtypes = st.sampled_from([torch.float32, torch.float16, torch.float64, torch.int32, torch.bool])


@st.composite
def tensor_arg(draw, n):
    """A tensor meant to be a length-n float32 vector, possibly broken in one or more ways."""
    kinds = [
        "good",
        "dtype",
        "complex",
        "shape2d",
        "strided",
        "broadcast",
        "offset",
        "empty",
        "meta",
        "scalar",
        "none",
        "list",
    ]
    kind = draw(st.sampled_from(kinds))
    if kind == "good":
        return torch.randn(n, device=DEVICE)
    if kind == "dtype":
        return torch.randn(n, device=DEVICE).to(draw(dtypes))
    if kind == "complex":
        return torch.randn(n, device=DEVICE).to(torch.complex64)
    if kind == "broadcast":  # stride 0
        return torch.randn(1, device=DEVICE).expand(n)
    if kind == "meta":  # a tensor on a device nothing runs on
        return torch.empty(n, device="meta")
    if kind == "shape2d":
        return torch.randn(n, 2, device=DEVICE)
    if kind == "strided":
        return torch.randn(n * 3, device=DEVICE)[:: draw(st.integers(2, 3))][:n]
    if kind == "offset":
        return torch.randn(n + 5, device=DEVICE)[draw(st.integers(1, 5)) :][:n]
    if kind == "empty":
        return torch.randn(0, device=DEVICE)
    if kind == "scalar":
        return draw(st.sampled_from([1.5, 3, "x"]))
    if kind == "none":
        return None
    return [1.0] * n


def _check_or_named(call, expected, where):
    """Run ``call``: a correct result, or a KernelCallError naming one of ``where``."""
    try:
        out = call()
    except KernelCallError as exc:
        assert any(name in str(exc) for name in where), f"error names no parameter: {exc}"
        return None
    if expected is not None:
        torch.testing.assert_close(out, expected(), atol=1e-5, rtol=1e-5)
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 300), a=st.data(), b=st.data())
def test_positional_arguments(n, a, b):
    kernel = scale_add(0)
    x, y = a.draw(tensor_arg(n)), b.draw(tensor_arg(n))
    valid = all(
        isinstance(t, torch.Tensor) and t.dtype == torch.float32 and t.dim() == 1 and t.shape == x.shape for t in (x, y)
    )
    expected = (lambda: 2 * x + y) if valid else None
    out = _check_or_named(lambda: kernel(x, y), expected, PARAMS + ("argument", "expects"))
    if out is not None and not valid:
        raise AssertionError(f"invalid arguments ran: {type(x)} {type(y)}")


@settings(max_examples=25, deadline=None)
@given(count=st.integers(0, 4))
def test_too_many_or_too_few(count):
    kernel = scale_add(0)
    args = [torch.randn(10, device=DEVICE) for _ in range(count)]
    if count == 2:
        torch.testing.assert_close(kernel(*args), 2 * args[0] + args[1])
        return
    try:
        kernel(*args)
    except (KernelCallError, TypeError) as exc:
        assert "argument" in str(exc) or "expects" in str(exc), exc
    else:
        raise AssertionError(f"{count} arguments ran")


def test_static_shape_mismatch_names_the_parameter():
    kernel = row_sum(45, 24)
    for bad in (torch.randn(44, 24), torch.randn(45, 25), torch.randn(45, 24, dtype=torch.float64)):
        try:
            kernel(bad.to(DEVICE))
        except KernelCallError as exc:
            assert "X" in str(exc)
        else:
            raise AssertionError(f"shape {tuple(bad.shape)} {bad.dtype} ran")


def test_no_write_outside_the_output():
    """A strided view as an input is read right; the returned output is exactly its length."""
    base = torch.randn(900, device=DEVICE)
    x = base[::3]
    y = torch.randn(300, device=DEVICE)
    try:
        out = scale_add(0)(x, y)
    except KernelCallError as exc:
        assert "A" in str(exc)
        return
    torch.testing.assert_close(out, 2 * x + y)
    assert out.shape == (300,)
