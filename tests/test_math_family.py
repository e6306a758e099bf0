"""TVM's math functions TileLang's ``T`` exports beyond Triton's core (codegen/libm.py): hyperbolic
and inverse trigonometric functions, ``T.atan2``, ``T.hypot``, ``T.copysign``, ``T.nextafter``,
``T.ldexp``, ``T.log1p``, ``T.fabs``, ``T.popcount``, ``T.clz``, ``T.likely``; checked against torch
in float64 (ulps of the kernel's dtype), special values bit for bit, and compiled for sm_90."""

import math

import pytest
import torch
from test_fuzz_regressions import compile_for_hopper

import tile2triton as tilelang
import tile2triton.language as T

N = 203  # not a multiple of the block
BLOCK = 64

UNARY = {
    "sinh": (torch.sinh, lambda a: a * 6),
    "cosh": (torch.cosh, lambda a: a * 6),
    "asinh": (torch.asinh, lambda a: a * 50),
    "acosh": (torch.acosh, lambda a: a.abs() * 40 + 1),
    "atanh": (torch.atanh, lambda a: torch.tanh(a) * 0.999),
    "atan": (torch.atan, lambda a: a * 5),
    "asin": (torch.asin, lambda a: torch.tanh(a)),
    "acos": (torch.acos, lambda a: torch.tanh(a)),
    "log1p": (torch.log1p, lambda a: a.abs() * 3 - 0.95),
    "fabs": (torch.abs, lambda a: a),
}
# ulps of the dtype a result may be from the float64 reference
TOLERANCE_ULPS = 6


def _tolerance(dev, dtype):
    """On the GPU Triton's float32 exp and log are the approximate instructions (ex2.approx /
    lg2.approx of a rounded argument: a few ulps more for arguments up to ~20)."""
    return 32 if str(dev).startswith("cuda") and dtype == "float32" else TOLERANCE_ULPS


@tilelang.jit
def unary_kernel(name, dtype, n=N):
    fn = getattr(T, name)

    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, BLOCK), threads=BLOCK) as bx:
            for i in T.Parallel(BLOCK):
                if bx * BLOCK + i < n:
                    B[bx * BLOCK + i] = fn(A[bx * BLOCK + i])

    return main


@tilelang.jit
def binary_kernel(name, dtype, second_dtype, n=N):
    fn = getattr(T, name)

    @T.prim_func
    def main(A: T.Tensor((n,), dtype), E: T.Tensor((n,), second_dtype), B: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, BLOCK), threads=BLOCK) as bx:
            for i in T.Parallel(BLOCK):
                if bx * BLOCK + i < n:
                    B[bx * BLOCK + i] = fn(A[bx * BLOCK + i], E[bx * BLOCK + i])

    return main


def _inputs(dev, dtype, scale=1.0):
    a = torch.randn(N, dtype=torch.float64, device=dev, generator=torch.Generator(dev).manual_seed(7))
    # small magnitudes too, where a formula that cancels loses its digits
    a[:24] = torch.logspace(-9, 0, 24, dtype=torch.float64, device=dev) * (torch.arange(24, device=dev) % 2 * 2 - 1)
    return a


def _ulps(got, want, tdt):
    scale = want.abs().clamp_min(torch.finfo(tdt).tiny)
    err = torch.where(got.double() == want, 0.0, (got.double() - want).abs() / scale)
    return err.max().item() / torch.finfo(tdt).eps


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_functions(dev, name, dtype):
    ref, domain = UNARY[name]
    tdt = getattr(torch, dtype)
    a = domain(_inputs(dev, dtype)).to(tdt)
    b = torch.full((N,), float("nan"), dtype=tdt, device=dev)
    unary_kernel(name, dtype)(a, b)
    want = ref(a.double())
    assert not want.isnan().any()
    assert _ulps(b, want, tdt) <= _tolerance(dev, dtype)


@pytest.mark.parametrize("name", ["sinh", "atan", "acos", "log1p"])
def test_unary_functions_on_half_types(dev, name):
    # 16-bit floats are computed in float32 and rounded once to their dtype
    ref, domain = UNARY[name]
    for tdt in (torch.float16, torch.bfloat16):
        a = domain(_inputs(dev, "float32")).to(tdt)
        b = torch.full((N,), float("nan"), dtype=tdt, device=dev)
        unary_kernel(name, str(tdt).split(".")[1])(a, b)
        assert _ulps(b, ref(a.double()).to(tdt).double(), tdt) <= 1


SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.0, 0.5, float("inf"), -float("inf"), float("nan"), 1e-30, -3e38]


@pytest.mark.parametrize("name", ["sinh", "cosh", "asinh", "acosh", "atanh", "atan", "asin", "acos", "log1p"])
def test_unary_special_values(dev, name):
    # signed zeros, infinities, NaN and the domain's ends as C's functions give them (torch's are C's)
    ref = UNARY[name][0]
    a = torch.tensor(SPECIAL * 19, dtype=torch.float32, device=dev)[:N]
    b = torch.full((N,), 123.0, dtype=torch.float32, device=dev)
    unary_kernel(name, "float32")(a, b)
    want = ref(a.double()).float()
    assert torch.equal(b.isnan(), want.isnan())
    finite = ~want.isnan()
    assert torch.equal(torch.signbit(b[finite]), torch.signbit(want[finite]))
    assert _ulps(b[finite & want.isfinite()], want[finite & want.isfinite()].double(), torch.float32) <= _tolerance(
        dev, "float32"
    )
    assert torch.equal(b[want.isinf()], want[want.isinf()])


def _pairs(dev, tdt):
    a, e = _inputs(dev, "") * 3, torch.randn(N, dtype=torch.float64, device=dev) * 3
    special = torch.tensor(
        [[0.0, 0.0], [-0.0, 0.0], [0.0, -0.0], [-0.0, -0.0], [1.0, float("inf")], [-1.0, float("inf")],
         [float("inf"), float("inf")], [-float("inf"), 3.0], [float("inf"), float("nan")], [2.0, -0.0],
         [float("nan"), 1.0], [5.0, 5.0], [-2.0, -1e-30], [1e-30, -2.0]],
        dtype=torch.float64, device=dev,
    )  # fmt: skip
    a[: len(special)], e[: len(special)] = special[:, 0], special[:, 1]
    return a.to(tdt), e.to(tdt)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["atan2", "hypot"])
def test_atan2_hypot(dev, name, dtype):
    tdt = getattr(torch, dtype)
    a, e = _pairs(dev, tdt)
    b = torch.full((N,), float("nan"), dtype=tdt, device=dev)
    binary_kernel(name, dtype, dtype)(a, e, b)
    want = getattr(torch, name)(a.double(), e.double())
    assert torch.equal(b.isnan(), want.isnan())
    ok = ~want.isnan()
    assert torch.equal(torch.signbit(b[ok]), torch.signbit(want[ok]))
    assert _ulps(b[ok], want[ok], tdt) <= _tolerance(dev, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["copysign", "nextafter"])
def test_copysign_nextafter_bit_exact(dev, name, dtype):
    tdt = getattr(torch, dtype)
    bits = torch.int64 if dtype == "float64" else torch.int32
    a, e = _pairs(dev, tdt)
    b = torch.full((N,), float("nan"), dtype=tdt, device=dev)
    binary_kernel(name, dtype, dtype)(a, e, b)
    want = getattr(torch, name)(a, e)
    same = (b.view(bits) == want.view(bits)) | (b.isnan() & want.isnan())
    assert same.all()


@pytest.mark.parametrize("dtype, span", [("float32", 300), ("float64", 2100)])
def test_ldexp_exact(dev, dtype, span):
    tdt = getattr(torch, dtype)
    a = _inputs(dev, dtype).to(tdt)
    a[:4] = torch.tensor([0.0, -0.0, float("inf"), float("nan")], dtype=tdt)
    e = torch.randint(-span, span, (N,), dtype=torch.int32, device=dev)
    b = torch.full((N,), float("nan"), dtype=tdt, device=dev)
    binary_kernel("ldexp", dtype, "int32")(a, e, b)
    exact = []  # C's ldexp (torch's multiplies by 2.0**e, which overflows first)
    for x, k in zip(a.double().tolist(), e.tolist()):
        try:
            exact.append(math.ldexp(x, k))
        except OverflowError:
            exact.append(math.copysign(math.inf, x))
    want = torch.tensor(exact, dtype=torch.float64, device=dev).to(tdt)
    normal = (want.abs() >= torch.finfo(tdt).tiny) | (want == 0) | ~want.isfinite()
    assert torch.equal(b[normal].isnan(), want[normal].isnan())
    assert torch.equal(b[normal].nan_to_num(), want[normal].nan_to_num())


@tilelang.jit
def bit_count_kernel(dtype, n=N):
    @T.prim_func
    def main(A: T.Tensor((n,), dtype), P: T.Tensor((n,), dtype), Z: T.Tensor((n,), T.int32)):
        with T.Kernel(T.ceildiv(n, BLOCK), threads=BLOCK) as bx:
            for i in T.Parallel(BLOCK):
                k = bx * BLOCK + i
                if T.likely(k < n):
                    P[k] = T.popcount(A[k])
                    Z[k] = T.clz(A[k])

    return main


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "uint32", "int64"])
def test_popcount_clz(dev, dtype):
    # narrower integers are promoted to 32 bits as C promotes them for CUDA's __popc / __clz
    tdt = getattr(torch, dtype)
    info = torch.iinfo(tdt)
    a = torch.randint(max(info.min, -(2**62)), min(info.max, 2**62), (N,), dtype=torch.int64, device=dev)
    a[:6] = torch.tensor([0, 1, 2, info.max, info.min, -1 if info.min else 7])
    a = a.to(tdt)
    p = torch.full((N,), 99, dtype=tdt, device=dev)
    z = torch.full((N,), -99, dtype=torch.int32, device=dev)
    bit_count_kernel(dtype)(a, p, z)
    bits = 64 if dtype == "int64" else 32
    words = [int(v) & (2**bits - 1) for v in a.to(torch.int64).tolist()]
    assert [int(v) for v in p.to(torch.int64).tolist()] == [int(torch.tensor(bin(w).count("1")).to(tdt)) for w in words]
    assert z.tolist() == [bits - w.bit_length() for w in words]


def test_host_numbers():
    assert T.sinh(0.5) == math.sinh(0.5) and T.atan(2.0) == math.atan(2.0) and T.acosh(3.0) == math.acosh(3.0)
    assert T.hypot(3.0, 4.0) == 5.0 and T.copysign(2.0, -0.0) == -2.0 and T.ldexp(1.5, 3) == 12.0
    assert T.nextafter(1.0, 2.0) == math.nextafter(1.0, 2.0) and T.fabs(-3) == 3.0 and T.likely(True) is True
    with pytest.raises(T.KernelOnlyError):
        T.popcount(3)


def test_integer_operand_errors():
    with pytest.raises(tilelang.TileLangCompileError, match="T.popcount takes an integer"):

        @T.prim_func
        def bad(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32):
                for i in T.Parallel(8):
                    B[i] = T.popcount(A[i])

        tilelang.compile(bad)


@pytest.mark.parametrize(
    "kernel",
    [
        lambda: unary_kernel("sinh", "float32"),
        lambda: unary_kernel("acos", "float64"),
        lambda: unary_kernel("asinh", "bfloat16"),
        lambda: binary_kernel("atan2", "float32", "float32"),
        lambda: binary_kernel("nextafter", "float64", "float64"),
        lambda: binary_kernel("ldexp", "float32", "int32"),
        lambda: bit_count_kernel("int64"),
        lambda: bit_count_kernel("int8"),
    ],
)
def test_compile_for_hopper(tmp_path, kernel):
    compile_for_hopper(kernel(), tmp_path)


@pytest.mark.parametrize("name", ["tan", "__tan"])
def test_tan_on_half_types(dev, name):
    # TileLang's test_tan_16bit_compiles_and_runs checks its kernel source for htan( before these results
    for tdt in (torch.float16, torch.bfloat16):
        a = torch.linspace(-1.0, 1.0, N, device=dev).to(tdt)
        b = torch.full((N,), float("nan"), dtype=tdt, device=dev)
        unary_kernel(name, str(tdt).split(".")[1])(a, b)
        assert _ulps(b, torch.tan(a.double()).to(tdt).double(), tdt) <= 1
