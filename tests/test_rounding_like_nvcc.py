"""float32 arithmetic rounded as TileLang's CUDA (nvcc's defaults) rounds it: ``/`` and ``T.sqrt``
correctly rounded (``tl.math.div_rn`` / ``tl.sqrt_rn``; Triton's own are the approximate
``div.full.f32`` / ``sqrt.approx.f32``), the approximate forms under ``TL_ENABLE_FAST_MATH``, and
``-x`` of +0.0 is -0.0 (Triton 3.6 lowers ``-x`` to ``0 - x``)."""

import random
from fractions import Fraction

import pytest
import torch
import triton

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.runtime.target import compile_offline

pytestmark = pytest.mark.poison_empty


@tilelang.jit(out_idx=[-1])
def quotients(n, block, fast=False):
    configs = {tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: fast}

    @T.prim_func
    def main(X: T.Tensor((n,), T.float32), Y: T.Tensor((n,), T.float32), Q: T.Tensor((4, n), T.float32)):
        T.annotate_pass_configs(configs)
        with T.Kernel(T.ceildiv(n, block), threads=64) as bx:
            for i in T.Parallel(block):
                k = bx * block + i
                if k < n:
                    Q[0, k] = X[k] / Y[k]
                    Q[1, k] = X[k] / 448.0
                    Q[2, k] = T.sqrt(T.abs(X[k]))
                    Q[3, k] = -X[k]

    return main


def test_division_and_sqrt_round_correctly(dev):
    """Each result is the float64 value rounded once to float32 (exact for / and sqrt of float32
    operands), bit for bit; on the GPU, Triton's approximate forms miss some of these."""
    n = 3001
    g = torch.Generator().manual_seed(3)
    x = torch.randn(n, generator=g) * torch.pow(10.0, torch.randint(-3, 4, (n,), generator=g))
    y = torch.randn(n, generator=g) * torch.pow(10.0, torch.randint(-3, 4, (n,), generator=g))
    x[:4] = torch.tensor([0.0, -0.0, 1.0, -3.0])
    q = quotients(n, 128)(x.to(dev), y.to(dev)).cpu()
    want = [
        (x.double() / y.double()).float(),
        (x.double() / 448.0).float(),
        x.double().abs().sqrt().float(),
        -x,
    ]
    for row, expected in enumerate(want):
        bad = (q[row].view(torch.int32) != expected.view(torch.int32)).nonzero().flatten()
        assert bad.numel() == 0, (
            f"row {row}: {bad.numel()} of {n} differ, e.g. {q[row, bad[:3]]} vs {expected[bad[:3]]}"
        )
    assert torch.signbit(q[3, 0]) and not torch.signbit(q[3, 1])  # -(+0) is -0, -(-0) is +0


@pytest.mark.parametrize("fast", [False, True])
def test_fast_math_keeps_the_approximate_forms(fast):
    source = quotients.compile(n=3001, block=128, fast=fast).lowered_for("sm_90").source
    body = source[source.index("def main_kernel") :]
    assert ("tl.math.div_rn(" in body) == (not fast) and ("tl.sqrt_rn(" in body) == (not fast)
    assert ("tl.sqrt(" in body) == fast
    assert "* -1.0" in body  # the negation, either way


@tilelang.jit(out_idx=[-1])
def row_quotients(rows, cols, block_rows, block_cols):
    """Each row of X divided by its element of Y, as an attention output by its row sum."""

    @T.prim_func
    def main(
        X: T.Tensor((rows, cols), T.float32), Y: T.Tensor((rows,), T.float32), Q: T.Tensor((rows, cols), T.float32)
    ):
        with T.Kernel(T.ceildiv(rows, block_rows), T.ceildiv(cols, block_cols), threads=128) as (bx, by):
            x = T.alloc_fragment((block_rows, block_cols), T.float32)
            y = T.alloc_fragment((block_rows,), T.float32)
            T.copy(X[bx * block_rows, by * block_cols], x)
            T.copy(Y[bx * block_rows], y)
            for i, j in T.Parallel(block_rows, block_cols):
                x[i, j] /= y[i]
            T.copy(x, Q[bx * block_rows, by * block_cols])

    return main


def _spread(shape, g):
    """Values of every magnitude float32 has, normal and subnormal, and its special values."""
    exponents = torch.randint(-149, 128, shape, generator=g).double()
    values = (torch.rand(shape, generator=g, dtype=torch.float64) + 0.5) * torch.pow(2.0, exponents)
    values = torch.where(torch.rand(shape, generator=g) < 0.5, -values, values).float()
    special = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1e-45, -3e-39, 3.4e38, 1.0])
    picks = torch.rand(shape, generator=g) < 0.05
    return torch.where(picks, special[torch.randint(0, len(special), shape, generator=g)], values)


@pytest.mark.parametrize("shared", ["0", "1"])
def test_division_by_a_shared_divisor_rounds_correctly(dev, shared, monkeypatch):
    """A row's divisor is shared by its numerators: on CUDA its reciprocal is taken once
    (TILE2TRITON_SHARED_DIVISORS); the quotients must still be div.rn.f32's, bit for bit, over every
    magnitude, subnormals, zeros of both signs, infinities and NaN."""
    monkeypatch.setenv("TILE2TRITON_SHARED_DIVISORS", shared)
    rows, cols = 301, 203
    g = torch.Generator().manual_seed(14)
    x, y = _spread((rows, cols), g), _spread((rows,), g)
    # the first 192 rows (whole 64-row tiles) of ordinary sizes: the fast path; the others hold
    # extreme values in every tile: the tile-wide fallback
    mild = torch.arange(rows) < 192
    x[mild] = torch.randn(int(mild.sum()), cols, generator=g) * 100
    y[mild] = torch.rand(int(mild.sum()), generator=g) * 1000 + 1e-3
    x[:8, :8] = 0.0  # zeros of both signs on the fast path (their quotient keeps the sign)
    x[:8, 8:16] = -0.0
    q = row_quotients(rows, cols, 64, 128)(x.to(dev), y.to(dev)).cpu()  # 64 quotients a thread
    expected = (x.double() / y.double()[:, None]).float()  # rounded once: exact for float32 operands
    nan = expected.isnan()
    assert torch.equal(q.isnan(), nan)
    bad = (q.view(torch.int32) != expected.view(torch.int32)) & ~nan
    assert not bad.any(), f"{int(bad.sum())} quotients differ, e.g. {q[bad][:3]} vs {expected[bad][:3]}"


def test_shared_divisor_division_is_one_reciprocal_a_row_on_cuda(monkeypatch):
    """The helper where a thread holds at least SHARED_DIVISOR_MIN_PER_THREAD quotients (64 here);
    not for a thread's 16 (32 x 64 on 128 threads), nor under the interpreter, nor with the switch off."""
    monkeypatch.setenv("TILE2TRITON_SHARED_DIVISORS", "1")
    kernel = row_quotients.compile(rows=301, cols=203, block_rows=64, block_cols=128)
    module = kernel.lowered_for("sm_90")
    assert "tl.math.div_rn(1.0, " in module.source and "_div_rn_shared(" in module.source
    assert compile_offline(module, "sm_90")[0]["bytes"] > 0
    assert "_div_rn_shared" not in kernel.lowered(True).source  # the interpreter: tl.math.div_rn
    few = row_quotients.compile(rows=301, cols=203, block_rows=32, block_cols=64).lowered_for("sm_90").source
    assert "_div_rn_shared" not in few and "tl.math.div_rn(" in few
    monkeypatch.setenv("TILE2TRITON_SHARED_DIVISORS", "0")
    off = row_quotients.compile(rows=301, cols=203, block_rows=64, block_cols=128).lowered_for("sm_90").source
    assert "_div_rn_shared" not in off and "tl.math.div_rn(" in off


@pytest.mark.skipif(
    tuple(int(p) for p in triton.__version__.split(".")[:2]) < (3, 7),
    reason="Triton's interpreter computes tl.fma as a product and a sum, rounded twice, before 3.7",
)
def test_shared_divisor_helper_is_division_bit_for_bit(tmp_path):
    """``_div_rn_shared`` (codegen/emit.py), the source the generated module holds, in a kernel of its
    own under Triton's interpreter: each block is one tile; tiles of ordinary values take the
    FMA path, tiles with an extreme value (zero divisor, infinity, NaN, subnormal, past 2^60) the
    tile-wide fallback; both must be the correctly rounded quotient."""
    import importlib.util

    from tile2triton.codegen.emit import JIT_HELPER_SOURCES

    path = tmp_path / "div_rn_shared_probe.py"
    path.write_text(
        "import triton\nimport triton.language as tl\n"
        + JIT_HELPER_SOURCES["_div_rn_shared"]
        + """
@triton.jit
def rows_kernel(X, Y, Q, COLS: tl.constexpr):
    row = tl.program_id(0) * 4 + tl.arange(0, 4)[:, None]
    offs = row * COLS + tl.arange(0, COLS)[None, :]
    y = tl.load(Y + tl.program_id(0) * 4 + tl.arange(0, 4))
    tl.store(Q + offs, _div_rn_shared(tl.load(X + offs), y[:, None], tl.math.div_rn(1.0, y)[:, None]))
"""
    )
    from triton.runtime.interpreter import InterpretedFunction

    from tile2triton.runtime.interpreter import use_library

    spec = importlib.util.spec_from_file_location("div_rn_shared_probe", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    use_library(True)  # Triton's library (tl.min) in the interpreter's flavour, as tile2triton's CPU launches do
    g = torch.Generator().manual_seed(23)
    tiles, cols = 40, 64
    x = torch.randn(tiles * 4, cols, generator=g) * torch.pow(10.0, torch.randint(-6, 7, (tiles * 4, 1), generator=g))
    y = torch.rand(tiles * 4, generator=g) * torch.pow(10.0, torch.randint(-6, 7, (tiles * 4,), generator=g)) + 1e-9
    # quotients next to a midpoint between two float32s: a = RN(b * (m + half an ulp))
    m = torch.randn(tiles * 4, cols, generator=g, dtype=torch.float64).float().double()
    half_ulp = torch.pow(2.0, torch.floor(torch.log2(m.abs())) - 24)
    x[::2] = (y.double()[:, None] * (m + half_ulp)).float()[::2]
    x[0, :8] = 0.0
    x[0, 8:16] = -0.0
    special = _spread((tiles * 4, cols), g)
    for t in range(tiles // 2, tiles):  # one extreme element (or divisor) in each of these tiles
        r = 4 * t + t % 4
        x[r, t % cols] = special[r, t % cols]
        if t % 3 == 0:
            y[r] = special[r, 0]
    x[4 * tiles - 1, :] = _spread((cols,), g)
    q = torch.full_like(x, float("nan"))
    module._div_rn_shared = InterpretedFunction(module._div_rn_shared.fn)
    InterpretedFunction(module.rows_kernel.fn)[(tiles,)](x, y, q, COLS=cols)
    expected = (x.double() / y.double()[:, None]).float()
    nan = expected.isnan()
    assert torch.equal(q.isnan(), nan)
    bad = (q.view(torch.int32) != expected.view(torch.int32)) & ~nan
    assert not bad.any(), f"{int(bad.sum())} quotients differ, e.g. {q[bad][:3]} vs {expected[bad][:3]}"


def _rn32(x: Fraction) -> Fraction:
    """``x`` rounded to the nearest float32, ties to even (normal range)."""
    if x == 0:
        return x
    sign, x = (-1 if x < 0 else 1), abs(x)
    e = x.numerator.bit_length() - x.denominator.bit_length()
    e -= Fraction(2) ** e > x
    unit = Fraction(2) ** (e - 23)
    n, rem = divmod(x / unit, 1)
    n = int(n) + (rem > Fraction(1, 2) or rem == Fraction(1, 2) and int(n) % 2 == 1)
    return sign * n * unit


def test_shared_divisor_sequence_rounds_correctly_in_exact_arithmetic():
    """The sequence ``_div_rn_shared`` (codegen/emit.py) runs on its fast path, every step an IEEE
    round-to-nearest float32 operation emulated exactly: y = RN(1/b), q = RN(a y), then one
    correction q = RN(q + RN(a - b q) y) (two FMAs).  Over the range it guards (|a|, |b| in
    [2^-60, 2^60]), with quotients next to the midpoints between two float32s (the hard cases: the
    product alone misses about a quarter of them), it must give RN(a / b)."""
    rng = random.Random(14)

    def value(low, high):
        return _rn32(Fraction(rng.uniform(1, 2)) * Fraction(2) ** rng.randint(low, high) * rng.choice((1, -1)))

    product_misses = 0
    for k in range(3000):
        b = value(-60, 59)
        if k % 2:
            a = value(-60, 59)
        else:  # a = b times a midpoint, rounded: a / b lies next to it
            q = value(-25, 25)
            e = abs(q).numerator.bit_length() - abs(q).denominator.bit_length()
            e -= Fraction(2) ** e > abs(q)
            a = _rn32((q + Fraction(2) ** (e - 24) * rng.choice((1, -1))) * b)
        y = _rn32(1 / b)
        q = _rn32(a * y)
        product_misses += q != _rn32(a / b)
        q = _rn32(q + _rn32(a - b * q) * y)
        assert q == _rn32(a / b), (float(a), float(b))
    assert product_misses > 300  # the cases are hard ones: the correction is what makes them right
