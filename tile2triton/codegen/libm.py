"""The math functions core Triton lacks (TileLang's ``T.sinh``, ``T.atan``, ``T.hypot``,
``T.popcount``, ...), as ``@triton.jit`` helpers written with core operations only: libdevice is
CUDA's (and Triton's interpreter cannot call it), these run on every target and the interpreter
alike.  Each takes float32 or float64 operands (16-bit floats are computed in float32, as the other
transcendental functions are) and is accurate to a few ulps of its dtype; the bit-level ones
(copysign, nextafter, ldexp, popcount, clz) are exact.  Their ``HELPERS`` join
``emit.JIT_HELPER_SOURCES``; ``intrinsics.py`` calls them.
"""

from __future__ import annotations

# TileLang name -> the helper that computes it
UNARY = {
    "sinh": "_sinh",
    "cosh": "_cosh",
    "asinh": "_asinh",
    "acosh": "_acosh",
    "atanh": "_atanh",
    "atan": "_atan",
    "asin": "_asin",
    "acos": "_acos",
    "log1p": "_log1p",
}
BINARY = {"atan2": "_atan2", "hypot": "_hypot", "copysign": "_copysign", "nextafter": "_nextafter"}
# helpers another helper calls (added with it)
NEEDS = {
    "_asinh": ("_log1p",),
    "_acosh": ("_log1p",),
    "_atanh": ("_log1p",),
    "_asin": ("_atan",),
    "_acos": ("_atan",),
    "_atan2": ("_atan", "_copysign", "_signbit"),
    "_copysign": ("_signbit",),
    **{f"_ieee64_{op}": ("_ieee64_round",) for op in ("mul", "div", "rcp", "sqrt")},
    **{f"_ieee64_{op}": ("_ieee64_round", "_ieee_zero_sum", "_signbit") for op in ("sum", "fma")},
    "_ieee_zero_sum": ("_signbit",),
}

HELPERS = {
    "_log1p": """
@triton.jit
def _log1p(x):
    # log(1 + x) without the cancellation of a rounded 1 + x (Goldberg): u = fl(1 + x) and
    # log(u) * x / (u - 1); where u == 1, log1p(x) is x to the dtype's precision
    u = 1.0 + x
    d = u - 1.0
    exact = d == 0.0
    r = tl.log(u) * (x / tl.where(exact, 1.0, d))
    return tl.where(exact, x, tl.where(u == float("inf"), u, r))
""",
    "_sinh": """
@triton.jit
def _sinh(x):
    # (e^t - e^-t) / 2 cancels for small t = |x|: there the odd Taylor series (below fp64's
    # precision for t < 0.5); e^t as exp(t / 2) squared reaches the largest sinh without overflow
    t = tl.abs(x)
    h = tl.exp(0.5 * t)
    large = (0.5 * h) * h - (0.5 / h) / h
    x2 = x * x
    series = 1.0 / 1307674368000.0
    series = 1.0 / 6227020800.0 + x2 * series
    series = 1.0 / 39916800.0 + x2 * series
    series = 1.0 / 362880.0 + x2 * series
    series = 1.0 / 5040.0 + x2 * series
    series = 1.0 / 120.0 + x2 * series
    series = 1.0 / 6.0 + x2 * series
    small = x + x * x2 * series
    return tl.where(t < 0.5, small, tl.where(x < 0, -large, large))
""",
    "_cosh": """
@triton.jit
def _cosh(x):
    # (e^t + e^-t) / 2, e^t as exp(t / 2) squared: no overflow before cosh itself overflows
    h = tl.exp(0.5 * tl.abs(x))
    return (0.5 * h) * h + (0.5 / h) / h
""",
    "_asinh": """
@triton.jit
def _asinh(x):
    # log(t + sqrt(t^2 + 1)) = log1p(t + t^2 / (1 + sqrt(t^2 + 1))), no cancellation near 0;
    # past 2^28 the square would overflow and log(2t) is asinh(t) to the dtype's precision
    t = tl.abs(x)
    big = t > 268435456.0
    s = tl.where(big, 1.0, t)
    r = _log1p(s + s * s / (1.0 + tl.sqrt(s * s + 1.0)))
    r = tl.where(big, tl.log(t) + 0.6931471805599453, r)
    return tl.where(x < 0, -r, tl.where(x == 0, x, r))
""",
    "_acosh": """
@triton.jit
def _acosh(x):
    # log(x + sqrt(x^2 - 1)) = log1p(y + sqrt(2y + y^2)) with y = x - 1 (exact near 1);
    # past 2^28 log(2x); below 1 NaN
    big = x > 268435456.0
    y = tl.where(big, 1.0, x - 1.0)
    r = _log1p(y + tl.sqrt(2.0 * y + y * y))
    r = tl.where(big, tl.log(x) + 0.6931471805599453, r)
    return tl.where(x < 1.0, float("nan"), r)
""",
    "_atanh": """
@triton.jit
def _atanh(x):
    # log((1 + t) / (1 - t)) / 2 = log1p(2t / (1 - t)) / 2; 1 at t == 1 gives inf, t > 1 NaN
    t = tl.abs(x)
    r = 0.5 * _log1p(2.0 * t / (1.0 - t))
    r = tl.where(t > 1.0, float("nan"), r)
    return tl.where(x < 0, -r, tl.where(x == 0, x, r))
""",
    "_atan": """
@triton.jit
def _atan(x):
    # Cephes' atan: t = |x| reduced to [-0.42, 0.66] by atan(t) = pi/2 + atan(-1/t) (t > tan(3pi/8))
    # and pi/4 + atan((t-1)/(t+1)) (t > 0.66), then a rational approximation good to fp64's
    # precision (pi/2's and pi/4's lost low parts added back)
    t = tl.abs(x)
    big = t > 2.414213562373095
    mid = (t > 0.66) & (t <= 2.414213562373095)
    z = tl.where(big, -1.0 / t, tl.where(mid, (t - 1.0) / (t + 1.0), t))
    zero = tl.zeros_like(z)  # the constants in z's dtype (a select of two literals is float32)
    base = tl.where(big, zero + 1.5707963267948966, tl.where(mid, zero + 0.7853981633974483, zero))
    low = tl.where(big, zero + 6.123233995736766e-17, tl.where(mid, zero + 3.061616997868383e-17, zero))
    z2 = z * z
    p = -8.750608600031904e-01 * z2 - 1.615753718733365e01
    p = p * z2 - 7.500855792314705e01
    p = p * z2 - 1.228866684490136e02
    p = p * z2 - 6.485021904942025e01
    q = z2 + 2.485846490142306e01
    q = q * z2 + 1.650270098316988e02
    q = q * z2 + 4.328810604912903e02
    q = q * z2 + 4.853903996359137e02
    q = q * z2 + 1.945506571482614e02
    r = base + ((z * (z2 * p / q) + z) + low)
    return tl.where(x < 0, -r, tl.where(x == 0, x, r))
""",
    "_asin": """
@triton.jit
def _asin(x):
    # atan(x / sqrt((1 - x)(1 + x))): +-pi/2 at +-1 (x / 0), NaN past them
    return _atan(x / tl.sqrt((1.0 - x) * (1.0 + x)))
""",
    "_acos": """
@triton.jit
def _acos(x):
    # 2 atan(sqrt((1 - x) / (1 + x))): pi at -1, 0 at 1, NaN past them
    return 2.0 * _atan(tl.sqrt((1.0 - x) / (1.0 + x)))
""",
    "_atan2": """
@triton.jit
def _atan2(y, x):
    # atan of the smaller magnitude over the larger (in [0, 1]), moved to the quadrant of (x, y)
    # as C's atan2: -0.0 counts as negative, both infinite is pi/4 of the quadrant, NaN stays NaN
    ax = tl.abs(x)
    ay = tl.abs(y)
    hi = tl.maximum(ax, ay)
    lo = tl.minimum(ax, ay)
    both_inf = (ax == float("inf")) & (ay == float("inf"))
    a = _atan(tl.where(both_inf, 1.0, tl.where(hi == 0, 0.0, lo / tl.where(hi == 0, 1.0, hi))))
    a = tl.where(ay > ax, 1.5707963267948966 - a, a)
    # the signs from the bits (_copysign), not from 1 / -0.0 < 0, which the GPU compile folds away
    a = tl.where(_signbit(x), 3.141592653589793 - a, a)
    a = _copysign(a, y)
    return tl.where((x != x) | (y != y), x + y, a)
""",
    "_pow": """
@triton.jit
def _pow(x, y):
    # C's pow: exp2(y * log2|x|), negative for an odd integer power of a negative base, NaN for its
    # other non-integer powers; pow(x, 0) and pow(1, y) are 1, NaN or not (y * 0.5 is exact, so
    # floor(y * 0.5) * 2 == y tells an even y also where every float is an integer); no & of the
    # conditions: either operand may be a 0-d tensor, whose & the interpreter gives as int data
    r = tl.exp2(y * tl.log2(tl.abs(x)))
    odd = tl.floor(y * 0.5) * 2.0 != y
    negative_base = tl.where(tl.floor(y) == y, tl.where(odd, -r, r), float("nan"))
    r = tl.where(x < 0, negative_base, r)
    r = tl.where(y == 0, 1.0, r)
    return tl.where(x == 1, 1.0, r)
""",
    "_hypot": """
@triton.jit
def _hypot(x, y):
    # hi * sqrt(1 + (lo / hi)^2): no overflow or underflow in between; an infinity wins over NaN
    ax = tl.abs(x)
    ay = tl.abs(y)
    hi = tl.maximum(ax, ay)
    lo = tl.minimum(ax, ay)
    q = lo / tl.where(hi == 0, 1.0, hi)
    r = tl.where(hi == 0, 0.0, hi * tl.sqrt(1.0 + q * q))
    r = tl.where((x != x) | (y != y), x + y, r)
    return tl.where((ax == float("inf")) | (ay == float("inf")), float("inf"), r)
""",
    "_signbit": """
@triton.jit
def _signbit(v):
    # the sign bit of a float32 / float64 (-0.0 and negative NaNs included), read as an integer
    if v.dtype == tl.float64:
        return v.to(tl.int64, bitcast=True) < 0
    else:
        return v.to(tl.int32, bitcast=True) < 0
""",
    "_copysign": """
@triton.jit
def _copysign(x, y):
    # x's magnitude bits with y's sign bit, all in integers: no float operation that the GPU could
    # flush (subnormals) or fold (the sign of a zero)
    if y.dtype == tl.float64:
        m = x.to(tl.int64, bitcast=True) & 0x7FFFFFFFFFFFFFFF
        return tl.where(_signbit(y), m | -9223372036854775808, m).to(tl.float64, bitcast=True)
    else:
        m = x.to(tl.int32, bitcast=True) & 0x7FFFFFFF
        return tl.where(_signbit(y), m | -2147483648, m).to(tl.float32, bitcast=True)
""",
    "_nextafter": """
@triton.jit
def _nextafter(x, y):
    # the next float after x toward y: the bits of a float order its magnitude, so a step away
    # from zero adds one to them and a step toward zero subtracts one; from zero the smallest
    # subnormal with y's sign; y when equal, NaN when either is
    if x.dtype == tl.float64:
        bits = x.to(tl.int64, bitcast=True)
    else:
        bits = x.to(tl.int32, bitcast=True)
    away = (y > x) == (x > 0)
    step = tl.where(away, bits + 1, bits - 1).to(x.dtype, bitcast=True)
    tiny = (bits * 0 + 1).to(x.dtype, bitcast=True)
    r = tl.where(x == 0, tl.where(y > 0, tiny, -tiny), step)
    r = tl.where(x == y, y, r)
    return tl.where((x != x) | (y != y), x + y, r)
""",
    "_ldexp": """
@triton.jit
def _ldexp(x, e):
    # x * 2^e: 2^e as the bits of floats, in three factors so every exponent a result can reach
    # is covered (each factor a normal power of two); exact unless the result is subnormal
    if x.dtype == tl.float64:
        e = tl.minimum(tl.maximum(e, -2200), 2200)
        e1 = e // 3
        e2 = (e - e1) // 2
        e3 = e - e1 - e2
        f1 = ((e1 + 1023).to(tl.int64) << 52).to(tl.float64, bitcast=True)
        f2 = ((e2 + 1023).to(tl.int64) << 52).to(tl.float64, bitcast=True)
        f3 = ((e3 + 1023).to(tl.int64) << 52).to(tl.float64, bitcast=True)
    else:
        e = tl.minimum(tl.maximum(e, -330), 330)
        e1 = e // 3
        e2 = (e - e1) // 2
        e3 = e - e1 - e2
        f1 = ((e1 + 127) << 23).to(tl.float32, bitcast=True)
        f2 = ((e2 + 127) << 23).to(tl.float32, bitcast=True)
        f3 = ((e3 + 127) << 23).to(tl.float32, bitcast=True)
    return x * f1 * f2 * f3
""",
    "_popcount32": """
@triton.jit
def _popcount32(v):
    # set bits of a uint32 (SWAR: pairs, nibbles, bytes, then the bytes summed by a multiply)
    v = v - ((v >> 1) & 0x55555555)
    v = (v & 0x33333333) + ((v >> 2) & 0x33333333)
    v = (v + (v >> 4)) & 0x0F0F0F0F
    return (v * 0x01010101) >> 24
""",
    "_popcount64": """
@triton.jit
def _popcount64(v):
    # set bits of a uint64, as _popcount32
    v = v - ((v >> 1) & 0x5555555555555555)
    v = (v & 0x3333333333333333) + ((v >> 2) & 0x3333333333333333)
    v = (v + (v >> 4)) & 0x0F0F0F0F0F0F0F0F
    return (v * 0x0101010101010101) >> 56
""",
    "_clz32": """
@triton.jit
def _clz32(v):
    # leading zero bits of a uint32 (32 for 0, as CUDA's __clz): a binary search from the top
    n = (v * 0).to(tl.int32)
    empty = (v >> 16) == 0
    n += tl.where(empty, 16, 0)
    v = tl.where(empty, v << 16, v)
    empty = (v >> 24) == 0
    n += tl.where(empty, 8, 0)
    v = tl.where(empty, v << 8, v)
    empty = (v >> 28) == 0
    n += tl.where(empty, 4, 0)
    v = tl.where(empty, v << 4, v)
    empty = (v >> 30) == 0
    n += tl.where(empty, 2, 0)
    v = tl.where(empty, v << 2, v)
    empty = (v >> 31) == 0
    n += tl.where(empty, 1, 0)
    v = tl.where(empty, v << 1, v)
    return n + ((v >> 31) == 0).to(tl.int32)
""",
    "_clz64": """
@triton.jit
def _clz64(v):
    # leading zero bits of a uint64 (64 for 0, as CUDA's __clzll), as _clz32
    n = (v * 0).to(tl.int32)
    empty = (v >> 32) == 0
    n += tl.where(empty, 32, 0)
    v = tl.where(empty, v << 32, v)
    empty = (v >> 48) == 0
    n += tl.where(empty, 16, 0)
    v = tl.where(empty, v << 16, v)
    empty = (v >> 56) == 0
    n += tl.where(empty, 8, 0)
    v = tl.where(empty, v << 8, v)
    empty = (v >> 60) == 0
    n += tl.where(empty, 4, 0)
    v = tl.where(empty, v << 4, v)
    empty = (v >> 62) == 0
    n += tl.where(empty, 2, 0)
    v = tl.where(empty, v << 2, v)
    empty = (v >> 63) == 0
    n += tl.where(empty, 1, 0)
    v = tl.where(empty, v << 1, v)
    return n + ((v >> 63) == 0).to(tl.int32)
""",
    # T.ieee_* on float64 with a directed rounding mode, where no PTX can say it (the interpreter,
    # AMD): the operation rounded to nearest, its exact residual (exact value - rounded) from
    # error-free transformations, and one step toward the mode where the residual says so.  Exact
    # where the residual is representable: always for sums, and for products, quotients, square
    # roots and fmas whose results and products are not subnormal (an fma's rounding error of a
    # product is exact down to 2^-969 there)
    "_ieee64_round": """
@triton.jit
def _ieee64_round(r, res, overflow, mode: tl.constexpr):
    # r: the float64 nearest the exact value, res: the sign of exact - r (its value); overflow: r is
    # infinite although the exact value is finite (it then lies toward zero from r).  mode 1 rz,
    # 2 ru, 3 rd, as PTX's .rz / .rp / .rm
    res = tl.where(overflow, -r, res)
    bits = r.to(tl.int64, bitcast=True)
    up = tl.where(r > 0, bits + 1, tl.where(r == 0, 1, bits - 1)).to(tl.float64, bitcast=True)
    down = tl.where(r > 0, bits - 1, tl.where(r == 0, -9223372036854775807, bits + 1)).to(tl.float64, bitcast=True)
    if mode == 1:
        return tl.where((r > 0) & (res < 0), down, tl.where((r < 0) & (res > 0), up, r))
    if mode == 2:
        return tl.where(res > 0, up, r)
    return tl.where(res < 0, down, r)
""",
    "_ieee64_sum": """
@triton.jit
def _ieee64_sum(a, b, mode: tl.constexpr):
    # TwoSum: the lost part of a + b, exactly
    s = a + b
    bb = s - a
    lost = (a - (s - bb)) + (b - bb)
    finite = (tl.abs(a) < float("inf")) & (tl.abs(b) < float("inf"))
    return _ieee_zero_sum(_ieee64_round(s, lost, finite & (tl.abs(s) == float("inf")), mode), s, a, b, mode)
""",
    "_ieee_zero_sum": """
@triton.jit
def _ieee_zero_sum(r, s, a, b, mode: tl.constexpr):
    # IEEE 754 6.3: a sum a + b that is exactly zero (s, its float64 value, is 0) is +0 unless both
    # operands are -0, except when rounding toward -inf (mode 3, PTX's .rm), where it is -0 unless
    # both are +0; r is the sum rounded in the mode (rounding to nearest gave the other cases' sign)
    if mode == 3:
        both_plus_zero = (a == 0) & (b == 0) & ~_signbit(a) & ~_signbit(b)
        return tl.where((s == 0) & ~both_plus_zero, tl.abs(r) * -1.0, r)  # Triton 3.6: -x is 0 - x
    else:
        return r
""",
    "_ieee64_mul": """
@triton.jit
def _ieee64_mul(a, b, mode: tl.constexpr):
    # the fma of a, b and -p is a * b - p exactly (a product's rounding error is representable)
    p = a * b
    finite = (tl.abs(a) < float("inf")) & (tl.abs(b) < float("inf"))
    return _ieee64_round(p, tl.fma(a, b, -p), finite & (tl.abs(p) == float("inf")), mode)
""",
    "_ieee64_div": """
@triton.jit
def _ieee64_div(a, b, mode: tl.constexpr):
    # a - q * b (an fma, exact) has the sign of a / b - q times the sign of b
    q = a / b  # float64 division and square root round to nearest (IEEE)
    rem = tl.fma(-q, b, a)
    finite = (tl.abs(a) < float("inf")) & (tl.abs(b) < float("inf")) & (b != 0)
    return _ieee64_round(q, tl.where(b < 0, -rem, rem), finite & (tl.abs(q) == float("inf")), mode)
""",
    "_ieee64_rcp": """
@triton.jit
def _ieee64_rcp(b, mode: tl.constexpr):
    # as _ieee64_div with a = 1
    q = 1.0 / b
    rem = tl.fma(-q, b, 1.0)
    finite = (tl.abs(b) < float("inf")) & (b != 0)
    return _ieee64_round(q, tl.where(b < 0, -rem, rem), finite & (tl.abs(q) == float("inf")), mode)
""",
    "_ieee64_sqrt": """
@triton.jit
def _ieee64_sqrt(a, mode: tl.constexpr):
    # a - s * s (an fma, exact) has the sign of sqrt(a) - s
    s = tl.sqrt(a)
    return _ieee64_round(s, tl.fma(-s, s, a), s < 0, mode)  # (a square root never overflows)
""",
    "_ieee64_fma": """
@triton.jit
def _ieee64_fma(a, b, c, mode: tl.constexpr):
    # Boldo and Muller's ErrFma: a * b + c = r + r2 + r3 exactly, |r3| <= ulp(r2) / 2, so the
    # residual's sign is r2's, or r3's where r2 is 0
    r = tl.fma(a, b, c)
    u1 = a * b
    u2 = tl.fma(a, b, -u1)
    a1 = c + u2  # TwoSum(c, u2) = (a1, z)
    v = a1 - c
    z = (c - (a1 - v)) + (u2 - v)
    b1 = u1 + a1  # TwoSum(u1, a1) = (b1, b2)
    w = b1 - u1
    b2 = (u1 - (b1 - w)) + (a1 - w)
    g = (b1 - r) + b2
    r2 = g + z  # FastTwoSum(g, z) = (r2, r3)
    r3 = z - (r2 - g)
    finite = (tl.abs(a) < float("inf")) & (tl.abs(b) < float("inf")) & (tl.abs(c) < float("inf"))
    rounded = _ieee64_round(r, tl.where(r2 != 0, r2, r3), finite & (tl.abs(r) == float("inf")), mode)
    return _ieee_zero_sum(rounded, r, u1, c, mode)  # (u1: a * b, which carries the product's sign)
""",
}


def helpers_for(name: str) -> tuple:
    """``name`` and the helpers it calls."""
    return (name, *NEEDS.get(name, ()))
