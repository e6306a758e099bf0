"""``T`` element-wise math: unary functions (host values too), max/min/pow and integer division,
selects and clamps, casts and ``T.reinterpret``, typed constants, bitwise operations.
"""

from __future__ import annotations

import builtins
import inspect as _inspect
import math

from ._primitive import KernelOnlyError, _fastmath_on_symbol, _host_ok, _kernel_only
from ._sizes import Dynamic, SizeExpr, _SizeArith
from .dtypes import DType, TypedLiteral, tensor_dtype, to_dtype


# --- element-wise math ------------------------------------------------------------------------
def _unary(name: str, host=None):
    def fn(x):
        if host is not None and isinstance(x, (builtins.int, builtins.float)):
            return host(x)
        if name.startswith("__") and isinstance(x, Dynamic):
            return _fastmath_on_symbol(name, x)
        raise KernelOnlyError(f"T.{name} can only be used inside a kernel body")

    fn.__name__ = name
    fn.__t2t__ = name
    fn.__doc__ = f"Element-wise {name}."
    return fn


_UNARY_HOST = {
    "exp": math.exp,
    "exp2": lambda x: 2.0**x,
    "exp10": lambda x: 10.0**x,
    "log": math.log,
    "log2": math.log2,
    "log10": math.log10,
    "log1p": math.log1p,
    "sqrt": math.sqrt,
    "rsqrt": lambda x: 1.0 / math.sqrt(x),
    "abs": builtins.abs,
    "tanh": math.tanh,
    "sigmoid": lambda x: 1.0 / (1.0 + math.exp(-x)),
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "erf": math.erf,
    "floor": math.floor,
    "ceil": math.ceil,
    "nearbyint": builtins.round,
    "trunc": math.trunc,
    "isnan": math.isnan,
    "isinf": math.isinf,
    "isfinite": math.isfinite,
    "sinh": math.sinh,
    "cosh": math.cosh,
    "asinh": math.asinh,
    "acosh": math.acosh,
    "atanh": math.atanh,
    "asin": math.asin,
    "acos": math.acos,
    "atan": math.atan,
}
for _name, _host in _UNARY_HOST.items():
    globals()[_name] = _unary(_name, _host)


def _round_half_away(x):
    t = math.trunc(x)
    return t + (1 if x - t >= 0.5 else -1 if t - x >= 0.5 else 0)


ROUNDING_MODES = ("ties-to-even", "ties-away-from-zero")


@_host_ok("round")
def round(x, rounding_mode="ties-to-even"):  # noqa: A001
    """Round to the nearest integer: ties to even (``nearbyintf``, TileLang's default), or
    ``rounding_mode="ties-away-from-zero"`` (C's ``roundf``)."""
    if rounding_mode is None:
        rounding_mode = "ties-to-even"
    if rounding_mode not in ROUNDING_MODES:
        raise ValueError(
            f"Unsupported T.round rounding_mode {rounding_mode!r}; expected 'ties-to-even' or 'ties-away-from-zero'."
        )
    if isinstance(x, (builtins.int, builtins.float)):
        return builtins.round(x) if rounding_mode == "ties-to-even" else _round_half_away(x)
    raise KernelOnlyError("T.round can only be used inside a kernel body")


for _name in ("__exp", "__exp10", "__log", "__log2", "__log10", "__sin", "__cos", "__tan"):
    globals()[_name] = _unary(_name)


def _symbolic_sizes(*args) -> builtins.bool:
    """Integer arguments of which at least one is a symbolic size (host-side size arithmetic)."""
    sizes = [a for a in args if not isinstance(a, builtins.bool) and isinstance(a, (builtins.int, _SizeArith))]
    return len(sizes) == len(args) and any(isinstance(a, _SizeArith) for a in args)


@_host_ok("max")
def max(a, b):  # noqa: A001
    """Binary maximum."""
    if isinstance(a, (builtins.int, builtins.float)) and isinstance(b, (builtins.int, builtins.float)):
        return builtins.max(a, b)
    if _symbolic_sizes(a, b):
        return SizeExpr("max", a, b)
    raise KernelOnlyError("T.max can only be used inside a kernel body")


@_host_ok("min")
def min(a, b):  # noqa: A001
    """Binary minimum."""
    if isinstance(a, (builtins.int, builtins.float)) and isinstance(b, (builtins.int, builtins.float)):
        return builtins.min(a, b)
    if _symbolic_sizes(a, b):
        return SizeExpr("min", a, b)
    raise KernelOnlyError("T.min can only be used inside a kernel body")


@_host_ok("pow")
def pow(a, b):  # noqa: A001
    """``a ** b``."""
    if isinstance(a, (builtins.int, builtins.float)) and isinstance(b, (builtins.int, builtins.float)):
        return a**b
    raise KernelOnlyError("T.pow can only be used inside a kernel body")


@_host_ok("ceildiv")
def ceildiv(a, b):
    """Integer ceil division (host ints too)."""
    if isinstance(a, builtins.int) and isinstance(b, builtins.int):
        return -(-a // b)
    if _symbolic_sizes(a, b):
        return SizeExpr("ceildiv", a, b)
    raise KernelOnlyError("T.ceildiv on kernel values can only be used inside a kernel body")


cdiv = ceildiv


@_host_ok("align_up")
def align_up(x, y):
    """``x`` rounded up to a multiple of ``y``: ``T.ceildiv(x, y) * y`` (host ints too)."""
    if isinstance(x, builtins.int) and isinstance(y, builtins.int):
        return -(-x // y) * y
    if _symbolic_sizes(x, y):
        return SizeExpr("*", SizeExpr("ceildiv", x, y), y)
    raise KernelOnlyError("T.align_up on kernel values can only be used inside a kernel body")


@_host_ok("floordiv")
def floordiv(a, b):
    """Floor division."""
    if isinstance(a, builtins.int) and isinstance(b, builtins.int):
        return a // b
    if _symbolic_sizes(a, b):
        return SizeExpr("//", a, b)
    raise KernelOnlyError("T.floordiv can only be used inside a kernel body")


@_host_ok("floormod")
def floormod(a, b):
    """Floor modulo."""
    if isinstance(a, builtins.int) and isinstance(b, builtins.int):
        return a % b
    raise KernelOnlyError("T.floormod can only be used inside a kernel body")


@_kernel_only("truncdiv")
def truncdiv(a, b):
    """Division rounding toward zero."""


@_kernel_only("truncmod")
def truncmod(a, b):
    """Remainder with the dividend's sign."""


@_kernel_only("fmod")
def fmod(a, b):
    """Float remainder with the dividend's sign."""


@_kernel_only("atan2")
def atan2(a, b):
    """Element-wise atan2."""


def _host_binary(name: str, host):
    def fn(x1, x2):
        numbers = (builtins.int, builtins.float)
        if isinstance(x1, numbers) and isinstance(x2, numbers) and not isinstance(x1, builtins.bool):
            return host(x1, x2)
        raise KernelOnlyError(f"T.{name} can only be used inside a kernel body")

    fn.__name__ = name
    fn.__t2t__ = name
    fn.__doc__ = f"Element-wise {name} (TVM's tir.{name})."
    return fn


hypot = _host_binary("hypot", math.hypot)
copysign = _host_binary("copysign", math.copysign)
nextafter = _host_binary("nextafter", math.nextafter)
ldexp = _host_binary("ldexp", lambda x, e: math.ldexp(x, builtins.int(e)))


@_host_ok("fabs")
def fabs(x):
    """Absolute value of a float (TIR's ``fabs``)."""
    if isinstance(x, (builtins.int, builtins.float)):
        return math.fabs(x)
    raise KernelOnlyError("T.fabs can only be used inside a kernel body")


@_kernel_only("popcount")
def popcount(x):
    """Set bits of an integer, in its dtype."""


@_kernel_only("clz")
def clz(x):
    """Leading zero bits of a 32- or 64-bit integer, as int32."""


@_host_ok("likely")
def likely(cond, span=None):
    """A branch-prediction hint: the condition itself."""
    if isinstance(cond, (builtins.bool, builtins.int)):
        return cond
    raise KernelOnlyError("T.likely can only be used inside a kernel body")


@_kernel_only("if_then_else")
def if_then_else(cond, true_value, false_value):
    """Select; only the taken side's memory access happens."""


Select = if_then_else


@_kernel_only("clamp")
def clamp(dst, min_val, max_val):
    """``min(max(dst, min_val), max_val)`` (TileLang's parameter names)."""


@_host_ok("cast")
def cast(value, dtype, round="", sat=True, rbits=None):  # noqa: A002
    """Convert ``value`` to ``dtype`` (``round`` / ``sat`` / ``rbits``: see tile2triton/language/tir/ir.py).
    On a Python number it gives a typed literal, like ``T.float32(1.0)``."""
    from .tir.ir import CastOptionUnsupported, check_cast_options, unsupported_cast_option

    check_cast_options(round, sat, rbits)
    target = tensor_dtype(dtype)  # also a packed 4-bit dtype: T.cast(0.0, T.float4_e2m1fn) is its code's literal
    if isinstance(value, TypedLiteral):
        value = value.value
    number = isinstance(value, (builtins.bool, builtins.int, builtins.float))
    why = unsupported_cast_option(round, sat, target.name)
    # a number the target holds exactly converts to itself under every rounding and saturation mode
    if why is not None and not (number and _exact_in(value, target)):
        raise CastOptionUnsupported(why)
    if number:
        return TypedLiteral(target, value)
    raise KernelOnlyError(
        "T.cast of a run-time value can only be used inside a @T.prim_func or @tilelang.jit kernel body"
    )


@_kernel_only("Cast")
def Cast(dtype, value):  # noqa: N802
    """TVM's ``Cast(dtype, value)`` (dtype first)."""


# TVM's logical operators (TileLang's T re-exports them; so does tvm/tirx.py): inside a kernel ``Not(a)``,
# ``And(a, b)`` and ``Or(a, b)`` are ``not a``, ``a and b`` and ``a or b`` on boolean kernel values
# (frontend/rules_tvm.py)
@_kernel_only("Not")
def Not(a, span=None):  # noqa: N802 - TVM's name
    """Logical negation of a boolean kernel value."""


@_kernel_only("And")
def And(a, b, span=None):  # noqa: N802 - TVM's name
    """Logical conjunction of two boolean kernel values."""


@_kernel_only("Or")
def Or(a, b, span=None):  # noqa: N802 - TVM's name
    """Logical disjunction of two boolean kernel values."""


@_kernel_only("reinterpret")
def reinterpret(value, dtype):
    """Bit cast."""


def _exact_in(value, dtype: DType) -> bool:
    import math

    import torch

    if not math.isfinite(value):
        return False
    try:
        converted = torch.tensor(value, dtype=torch.float64).to(dtype.as_torch()).double().item()
    except (TypeError, RuntimeError):
        return False
    return converted == value


@_host_ok("infinity")
def infinity(dtype):
    """+inf of ``dtype``."""
    return TypedLiteral(to_dtype(dtype), builtins.float("inf"))


@_host_ok("max_value")
def max_value(dtype):
    """Largest finite value of ``dtype``."""
    return TypedLiteral(to_dtype(dtype), "max")


@_host_ok("min_value")
def min_value(dtype):
    """Smallest finite value of ``dtype``."""
    return TypedLiteral(to_dtype(dtype), "min")


def _binary_op(name: str):
    def fn(a, b):
        raise KernelOnlyError(f"T.{name} can only be used inside a kernel body")

    fn.__name__ = name
    fn.__t2t__ = name
    fn.__doc__ = f"Element-wise {name}."
    return fn


for _name in ("bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right"):
    globals()[_name] = _binary_op(_name)


@_kernel_only("bitwise_not")
def bitwise_not(x):
    """``~x``."""


@_kernel_only("fast_rcp")
def fast_rcp(x):
    """TileLang's fast reciprocal: ``rcp.approx`` on the GPU."""


# --- IEEE operations with an explicit rounding mode (CUDA's __fadd_rz, ...): codegen/intrinsics.py


def _check_rounding_mode(fn, args, kwargs) -> None:
    mode = _inspect.signature(fn).bind(*args, **kwargs).arguments.get("rounding_mode", "rn")
    if not (isinstance(mode, builtins.str) and mode in IEEE_ROUNDING_MODES):
        raise ValueError(f"Invalid rounding mode '{mode}'. Must be one of: {set(IEEE_ROUNDING_MODES)}")


def _ieee(name: str):
    """An IEEE operation: in host code, as in TileLang, the rounding mode is checked first."""
    return _kernel_only(name, host_check=_check_rounding_mode)


IEEE_ROUNDING_MODES = ("rn", "rz", "ru", "rd")


@_ieee("ieee_add")
def ieee_add(x, y, rounding_mode="rn"):
    """``x + y`` rounded as ``rounding_mode`` says (CUDA's ``__fadd_r{n,z,u,d}``)."""


@_ieee("ieee_sub")
def ieee_sub(x, y, rounding_mode="rn"):
    """``x - y`` rounded as ``rounding_mode`` says (``__fsub_r*``)."""


@_ieee("ieee_mul")
def ieee_mul(x, y, rounding_mode="rn"):
    """``x * y`` rounded as ``rounding_mode`` says (``__fmul_r*``)."""


@_ieee("ieee_fmaf")
def ieee_fmaf(x, y, z, rounding_mode="rn"):
    """``x * y + z`` with one rounding, as ``rounding_mode`` says (``__fmaf_r*``)."""


@_ieee("ieee_frcp")
def ieee_frcp(x, rounding_mode="rn"):
    """``1 / x`` rounded as ``rounding_mode`` says (``__frcp_r*``)."""


@_ieee("ieee_fsqrt")
def ieee_fsqrt(x, rounding_mode="rn"):
    """``sqrt(x)`` rounded as ``rounding_mode`` says (``__fsqrt_r*``)."""


@_ieee("ieee_frsqrt")
def ieee_frsqrt(x):
    """``1 / sqrt(x)`` rounded to nearest (``__frsqrt_rn``)."""


@_ieee("ieee_fdiv")
def ieee_fdiv(x, y, rounding_mode="rn"):
    """``x / y`` rounded as ``rounding_mode`` says (``__fdiv_r*``)."""


# --- vector values (T.float16x2(a, b), ...): lane by lane in the binder (frontend/vectors.py) --
@_kernel_only("extract_lane")
def extract_lane(vector, lane, span=None):
    """Lane ``lane`` (a compile-time integer) of a vector value."""


@_kernel_only("Broadcast")
def Broadcast(value, lanes, span=None):  # noqa: N802
    """``value`` on ``lanes`` lanes."""


@_kernel_only("Ramp")
def Ramp(base, stride, lanes, span=None):  # noqa: N802
    """The vector ``base + k * stride`` for ``k < lanes``."""


@_kernel_only("Shuffle")
def Shuffle(vectors, indices, span=None):  # noqa: N802
    """The lanes ``indices`` of ``vectors`` laid end to end."""


# --- TileLang's packed two-lane math on float32x2 / bfloat16x2 / float16x2 values
# (frontend/rules_vectors.py binds them lane by lane).  In host code, as in TileLang, the operands'
# dtypes are checked first (a tirx.Var("x", "float16x2") has one).
_PACKED_X2_DTYPES = ("bfloat16x2", "float16x2", "float32x2")


def _check_packed_x2(name: str, *args):
    names = [str(getattr(a, "dtype", "float32" if isinstance(a, builtins.float) else "int32")) for a in args]
    for dtype in names:
        if dtype not in _PACKED_X2_DTYPES:
            raise ValueError(f"Expected dtype in {sorted(_PACKED_X2_DTYPES)}, got '{dtype}'")
    if len(set(names)) > 1:
        raise ValueError(f"Expected all packed x2 arguments to have the same dtype, got {names}")
    raise KernelOnlyError(f"T.{name} can only be used inside a kernel body")


def _packed_x2(name: str):
    def mark(fn):
        fn.__t2t__ = name
        return fn

    return mark


@_packed_x2("add2")
def add2(x, y):
    """Packed element-wise add (x + y)."""
    _check_packed_x2("add2", x, y)


@_packed_x2("sub2")
def sub2(x, y):
    """Packed element-wise subtract (x - y)."""
    _check_packed_x2("sub2", x, y)


@_packed_x2("mul2")
def mul2(x, y):
    """Packed element-wise multiply (x * y)."""
    _check_packed_x2("mul2", x, y)


@_packed_x2("max2")
def max2(x, y):
    """Packed element-wise maximum."""
    _check_packed_x2("max2", x, y)


@_packed_x2("min2")
def min2(x, y):
    """Packed element-wise minimum."""
    _check_packed_x2("min2", x, y)


@_packed_x2("fma2")
def fma2(x, y, z):
    """Packed fused multiply-add (x * y + z)."""
    _check_packed_x2("fma2", x, y, z)


@_packed_x2("abs2")
def abs2(x):
    """Packed element-wise absolute value."""
    _check_packed_x2("abs2", x)
