"""Rounding constructs (issue 26): ``T.round`` (ties to even by default, as TileLang's ``nearbyintf``;
``rounding_mode="ties-away-from-zero"`` is ``roundf``), ``T.nearbyint``, and the IEEE operations with
an explicit rounding mode (``T.ieee_add(x, y, "rz")``, ...).  The IEEE references round the exact
value (mpmath at 400 bits) to float32 in the mode, independently of the kernels' float64 emulation."""

import math

import mpmath
import numpy as np
import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import TileLangCompileError

pytestmark = pytest.mark.poison_empty  # outputs the runtime allocates start as NaN / a sentinel

mpmath.mp.prec = 400


def _round_kernel(n, block):
    @T.prim_func
    def main(
        A: T.Tensor((n,), T.float32),
        H: T.Tensor((n,), T.float16),
        B: T.Tensor((n,), T.float32),
        C: T.Tensor((n,), T.float32),
        D: T.Tensor((n,), T.float32),
        E: T.Tensor((n,), T.float16),
    ):
        with T.Kernel(T.ceildiv(n, block), threads=32) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    k = bx * block + i
                    B[k] = T.round(A[k])
                    C[k] = T.nearbyint(A[k])
                    D[k] = T.round(A[k], rounding_mode="ties-away-from-zero")
                    E[k] = T.round(H[k])

    return main


def _halves(n):
    a = torch.randn(n, dtype=torch.float64) * 20
    ties = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, -4.5, 0.49999997, -0.49999997, 8388609.0, 1e30, -0.0, 2.0**23 - 0.5]
    a[: len(ties)] = torch.tensor(ties, dtype=torch.float64)
    a[len(ties) : n // 2] = (torch.randint(-60, 60, (n // 2 - len(ties),)) + 0.5).double()  # more exact ties
    return a.float()


def test_round_ties_to_even_and_away_from_zero(dev):
    n, block = 93, 20
    kernel = tilelang.compile(_round_kernel(n, block), out_idx=[2, 3, 4, 5])
    a = _halves(n).to(dev)
    h = (a.clamp(-1000, 1000)).half()
    b, c, d, e = kernel(a, h)
    x = a.cpu().double()
    away = torch.trunc(x) + torch.where((x - torch.trunc(x)).abs() >= 0.5, torch.sign(x), torch.zeros_like(x))
    assert torch.equal(b.cpu(), torch.round(a.cpu())), "T.round rounds ties to even"
    assert torch.equal(c.cpu(), torch.round(a.cpu()))
    assert torch.equal(d.cpu().double(), away)
    assert torch.equal(e.cpu(), torch.round(h.cpu().float()).half())
    assert torch.signbit(b.cpu()[12]) and torch.signbit(d.cpu()[9]), "-0.0 and -0.49999997 keep their sign"
    assert T.round(2.5) == 2 and T.round(2.5, "ties-away-from-zero") == 3 and T.round(-2.5, "ties-away-from-zero") == -3


def test_round_mode_is_checked():
    @T.prim_func
    def main(A: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(8):
                A[i] = T.round(A[i], "half-up")

    with pytest.raises(TileLangCompileError, match="rounding_mode 'half-up'"):
        tilelang.compile(main)


MODES = ("rn", "rz", "ru", "rd")
OPS = {  # name: (operand count, exact value from mpmath operands)
    "ieee_add": (2, lambda a, b: a + b),
    "ieee_sub": (2, lambda a, b: a - b),
    "ieee_mul": (2, lambda a, b: a * b),
    "ieee_fmaf": (3, lambda a, b, c: a * b + c),
    "ieee_fdiv": (2, lambda a, b: a / b),
    "ieee_frcp": (1, lambda a: 1 / a),
    "ieee_fsqrt": (1, mpmath.sqrt),
    "ieee_frsqrt": (1, lambda a: 1 / mpmath.sqrt(a)),
}


def _zero_sum_sign(op, mode, operands) -> float | None:
    """IEEE 754 6.3's sign of a sum (ieee_add / ieee_sub / ieee_fmaf) that is exactly zero, which an
    mpmath number cannot carry: +0.0 unless both terms are -0, and toward -inf (rd) -0.0 unless both
    are +0; None for other operations (their zero keeps the sign rules mpmath's float() gives)."""
    if op not in ("ieee_add", "ieee_sub", "ieee_fmaf"):
        return None
    x = [float(v) for v in operands]
    terms = {"ieee_add": (x[0], x[1]), "ieee_sub": (x[0], -x[1])}.get(op) or (x[0] * x[1], x[2])
    plus = [t == 0 and math.copysign(1.0, t) > 0 for t in terms]
    minus = [t == 0 and math.copysign(1.0, t) < 0 for t in terms]
    if mode == "rd":
        return 0.0 if all(plus) else -0.0
    return -0.0 if all(minus) else 0.0


def _expected(op, mode, operands, round_fn):
    """``op`` of ``operands`` (floats) rounded in ``mode`` by ``round_fn``, with IEEE's zero signs."""
    exact = OPS[op][1](*(mpmath.mpf(float(v)) for v in operands))
    if exact == 0 and _zero_sum_sign(op, mode, operands) is not None:
        return _zero_sum_sign(op, mode, operands)
    return round_fn(exact, mode)


def _ieee_kernel(n, block, op, mode):
    arity = OPS[op][0]
    fn = getattr(T, op)
    extra = {} if op == "ieee_frsqrt" else {"rounding_mode": mode}

    @T.prim_func
    def main(X: T.Tensor((3, n), T.float32), Y: T.Tensor((n,), T.float32)):
        with T.Kernel(T.ceildiv(n, block), threads=32) as bx:
            for i in T.Parallel(block):
                k = bx * block + i
                if k < n:
                    if arity == 1:
                        Y[k] = fn(X[0, k], **extra)
                    elif arity == 2:
                        Y[k] = fn(X[0, k], X[1, k], **extra)
                    else:
                        Y[k] = fn(X[0, k], X[1, k], X[2, k], **extra)

    return main


def _round_f32(x, mode: str) -> np.float32:
    """The float32 that ``x`` (an mpmath number) rounds to in ``mode``."""
    c = np.float32(float(x))
    if mpmath.mpf(float(c)) == x:
        return c
    other = np.nextafter(c, np.float32(np.inf if mpmath.mpf(float(c)) < x else -np.inf))
    lo, hi = sorted((c, other))
    if mode == "rd" or (mode == "rz" and x > 0):
        return lo
    if mode == "ru" or mode == "rz":
        return hi
    d_lo, d_hi = x - mpmath.mpf(float(lo)), mpmath.mpf(float(hi)) - x
    if d_lo != d_hi:
        return lo if d_lo < d_hi else hi
    return lo if lo.view(np.int32) % 2 == 0 else hi


def _operands(n, op):
    g = torch.Generator().manual_seed(7)
    x = torch.randn(3, n, generator=g, dtype=torch.float64) * torch.pow(10.0, torch.randint(-3, 4, (3, n), generator=g))
    # sums whose float64 value hides which way the exact value lies (TwoSum's lost part decides)
    x[:, 0] = torch.tensor([1.0, 2.0**-60, -(2.0**-80)])
    x[:, 1] = torch.tensor([-1.0, -(2.0**-60), 2.0**-80])
    x[:, 2] = torch.tensor([3.0, 1.0 + 2.0**-23, -(2.0**-90)])  # fma: 3 * b is a float32 tie that z breaks
    x[:, 3] = torch.tensor([3.0, 7.0, -5.0])
    if op in ("ieee_add", "ieee_sub", "ieee_fmaf"):  # exact zero sums, whose sign IEEE fixes by the
        x[:, 4] = torch.tensor([1.5, 1.5 if op == "ieee_sub" else -1.5, 0.0])  # mode: x + (-x), x - x,
        x[:, 5] = torch.tensor([0.0, -0.0, 0.0])  # and zeros of both signs
        x[:, 6] = torch.tensor([-0.0, -0.0 if op != "ieee_sub" else 0.0, 0.0])
    return (x.abs() if op in ("ieee_fsqrt", "ieee_frsqrt") else x).float()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", list(OPS))
def test_ieee_ops_round_once_in_their_mode(dev, op, mode):
    if op == "ieee_frsqrt" and mode != "rn":
        pytest.skip("T.ieee_frsqrt rounds to nearest only (as TileLang's)")
    n, block = 45, 16
    kernel = tilelang.compile(_ieee_kernel(n, block, op, mode), out_idx=[1])
    x = _operands(n, op)
    y = kernel(x.to(dev)).cpu()
    arity = OPS[op][0]
    want = np.array([_expected(op, mode, [x[j, k] for j in range(arity)], _round_f32) for k in range(n)], np.float32)
    got = y.numpy()
    bad = np.flatnonzero(got.view(np.int32) != want.view(np.int32))
    assert bad.size == 0, f"{op} {mode}: {bad.size} of {n} differ, e.g. at {bad[:4]}: {got[bad[:4]]} vs {want[bad[:4]]}"


def test_ieee_directed_modes_differ_where_the_value_is_inexact(dev):
    """The check above can fail: 1/3 rounds down in rz/rd and up in ru."""
    kernel = tilelang.compile(_ieee_kernel(5, 16, "ieee_fdiv", "ru"), out_idx=[1])
    x = torch.tensor([[1.0] * 5, [3.0] * 5, [0.0] * 5])
    up = kernel(x.to(dev)).cpu()
    down = tilelang.compile(_ieee_kernel(5, 16, "ieee_fdiv", "rd"), out_idx=[1])(x.to(dev)).cpu()
    assert (up.view(torch.int32) - down.view(torch.int32)).tolist() == [1] * 5


def test_ieee_bad_mode_and_tilelangs_refusals_are_errors():
    @T.prim_func
    def bad_mode(A: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(8):
                A[i] = T.ieee_add(A[i], A[i], "rx")

    with pytest.raises(TileLangCompileError, match="Invalid rounding mode 'rx'"):
        tilelang.compile(bad_mode)
    with pytest.raises(ValueError, match="Invalid rounding mode 'xy'"):  # host code, as TileLang checks it
        T.ieee_mul(1.0, 2.0, "xy")

    # TileLang's codegen refuses these, with these messages
    @T.prim_func
    def half_rz(A: T.Tensor((8,), T.float16)):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(8):
                A[i] = T.ieee_add(A[i], A[i], "rz")

    with pytest.raises(TileLangCompileError, match="Only rounding mode 'rn' is available for half precision"):
        tilelang.compile(half_rz)

    @T.prim_func
    def f64_rsqrt(A: T.Tensor((8,), T.float64)):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(8):
                A[i] = T.ieee_frsqrt(A[i])

    with pytest.raises(TileLangCompileError, match="frsqrt is not supported for float64"):
        tilelang.compile(f64_rsqrt)


def _ieee64_kernel(n, block, op, mode):
    arity = OPS[op][0]
    fn = getattr(T, op)

    @T.prim_func
    def main(X: T.Tensor((3, n), T.float64), Y: T.Tensor((n,), T.float64)):
        with T.Kernel(T.ceildiv(n, block), threads=32) as bx:
            for i in T.Parallel(block):
                k = bx * block + i
                if k < n:
                    if arity == 1:
                        Y[k] = fn(X[0, k], mode)
                    elif arity == 2:
                        Y[k] = fn(X[0, k], X[1, k], mode)
                    else:
                        Y[k] = fn(X[0, k], X[1, k], X[2, k], mode)

    return main


def _round_f64(x, mode: str) -> float:
    """The float64 that ``x`` (an mpmath number) rounds to in ``mode`` (a directed one)."""
    if mpmath.isinf(x) or mpmath.isnan(x):
        return float(x)
    c = float(mpmath.nstr(x, 40)) if abs(x) < mpmath.mpf(2) ** 1024 else float(mpmath.sign(x) * mpmath.inf)
    if mpmath.isinf(c):  # past the largest finite float64: rz and the mode toward zero stop there
        big = np.finfo(np.float64).max * (1 if x > 0 else -1)
        return c if (mode == "ru" and x > 0) or (mode == "rd" and x < 0) else big
    other = np.nextafter(c, np.inf if mpmath.mpf(c) < x else -np.inf)
    if mpmath.mpf(c) == x:
        return c
    lo, hi = sorted((c, float(other)))
    if mode == "rd" or (mode == "rz" and x > 0):
        return lo
    return hi


def _operands64(n, op):
    g = torch.Generator().manual_seed(11)
    x = torch.randn(3, n, generator=g, dtype=torch.float64) * torch.pow(10.0, torch.randint(-5, 6, (3, n), generator=g))
    # a sum whose lost part is tiny, an fma whose product cancels the addend, a quotient past the
    # largest float64 (overflow: rz / rd keep the largest finite value), an exact result
    x[:, 0] = torch.tensor([1.0, 2.0**-70, -(2.0**-140)], dtype=torch.float64)
    x[:, 1] = torch.tensor([1.0 + 2.0**-52, 1.0 - 2.0**-52, -1.0], dtype=torch.float64)
    x[:, 2] = torch.tensor([1e300, 1e-300 if op == "ieee_fdiv" else 1e300, 3.0], dtype=torch.float64)
    x[:, 3] = torch.tensor([3.0, 7.0, -5.0], dtype=torch.float64)
    if op == "ieee_sub":
        x[1, 1] = -x[1, 1]
    if op in ("ieee_add", "ieee_sub", "ieee_fmaf"):  # exact zero sums, whose sign IEEE fixes by the mode
        x[:, 4] = torch.tensor([2.5, 2.5 if op == "ieee_sub" else -2.5, 0.0], dtype=torch.float64)
        x[:, 5] = torch.tensor([0.0, -0.0, 0.0], dtype=torch.float64)
        x[:, 6] = torch.tensor([-0.0, -0.0 if op != "ieee_sub" else 0.0, 0.0], dtype=torch.float64)
    return x.abs() if op == "ieee_fsqrt" else x


@pytest.mark.parametrize("mode", ["rz", "ru", "rd"])
@pytest.mark.parametrize("op", [op for op in OPS if op != "ieee_frsqrt"])
def test_ieee_float64_directed_modes_exact(dev, op, mode):
    # float64 has no wider type: on the interpreter (and AMD) the nearest result moves by its exact
    # residual (codegen/libm.py); on CUDA it is PTX's add.rz.f64 and the like
    n, block = 45, 16
    kernel = tilelang.compile(_ieee64_kernel(n, block, op, mode), out_idx=[1])
    x = _operands64(n, op)
    y = kernel(x.to(dev)).cpu()
    arity = OPS[op][0]
    want = np.array([_expected(op, mode, [x[j, k] for j in range(arity)], _round_f64) for k in range(n)], np.float64)
    got = y.numpy()
    bad = np.flatnonzero(got.view(np.int64) != want.view(np.int64))
    assert bad.size == 0, f"{op} {mode}: {bad.size} of {n} differ, e.g. at {bad[:4]}: {got[bad[:4]]} vs {want[bad[:4]]}"


def _all_ieee_kernel(n):
    @T.prim_func
    def main(X: T.Tensor((3, n), T.float32), Y: T.Tensor((n,), T.float32), Z: T.Tensor((2 * n,), T.float64)):
        with T.Kernel(1, threads=64):
            for k in T.Parallel(n):
                a, b, c = X[0, k], X[1, k], X[2, k]
                Y[k] = (T.ieee_add(a, b, "rz") + T.ieee_sub(a, b, "ru") + T.ieee_mul(a, b, "rd") + T.ieee_fmaf(a, b, c)
                        + T.ieee_fdiv(a, b, "rz") + T.ieee_frcp(a, "ru") + T.ieee_fsqrt(T.abs(a), "rd")
                        + T.ieee_frsqrt(T.abs(b)) + T.round(a) + T.round(b, "ties-away-from-zero"))  # fmt: skip
                a64, b64, c64 = T.Cast(T.float64, a), T.Cast(T.float64, b), T.Cast(T.float64, c)
                Z[k] = T.ieee_fmaf(a64, b64, c64) + T.ieee_fdiv(a64, b64) + T.round(a64 * 1000.0)
                Z[n + k] = (T.ieee_add(a64, b64, "rz") + T.ieee_sub(a64, b64, "ru") + T.ieee_mul(a64, b64, "rd")
                            + T.ieee_fmaf(a64, b64, c64, "rz") + T.ieee_fdiv(a64, b64, "ru")
                            + T.ieee_frcp(a64, "rd") + T.ieee_fsqrt(T.abs(a64), "rz"))  # fmt: skip

    return main


def test_rounding_constructs_compile_for_hopper(tmp_path):
    from test_fuzz_regressions import compile_for_hopper

    compile_for_hopper(tilelang.compile(_all_ieee_kernel(45)), tmp_path)


def test_ieee_float64_rounds_to_nearest(dev):
    n = 45
    kernel = tilelang.compile(_all_ieee_kernel(n), out_idx=[1, 2])
    x = _operands(n, "ieee_mul").to(dev)  # (no zero sums: the test divides by b)
    _, z = kernel(x)
    a, b, c = x.cpu().double()
    torch.testing.assert_close(z[:n].cpu(), a * b + c + a / b + torch.round(a * 1000.0), rtol=1e-15, atol=1e-300)
    directed = a + b + (a - b) + a * b + (a * b + c) + a / b + 1 / a + a.abs().sqrt()
    torch.testing.assert_close(z[n:].cpu(), directed, rtol=1e-14, atol=1e-300)
