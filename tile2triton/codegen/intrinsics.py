"""Element-wise intrinsics: one lowering per TileLang math function."""

from __future__ import annotations

import ast
import math

from .. import ir
from ..ir import BOOL, FLOAT32, INT32
from ..language.dtypes import DTYPES
from . import libm, ptx
from . import pyast as P
from .values import Tile, convert, is_fp8, is_literal, literal_value

LOG10_E = 1.0 / math.log(10.0)
INT64, UINT32, FLOAT64 = DTYPES["int64"], DTYPES["uint32"], DTYPES["float64"]

# TileLang name -> Triton core function of the same meaning
DIRECT = {
    "exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "sqrt": "sqrt", "rsqrt": "rsqrt",
    "abs": "abs", "sigmoid": "sigmoid", "sin": "sin", "cos": "cos", "erf": "erf", "floor": "floor",
    "ceil": "ceil", "max": "maximum", "min": "minimum",
}  # fmt: skip


# ``TL_ENABLE_FAST_MATH``: the functions Triton computes accurately (libdevice or a longer formula)
# get the GPU's approximate instruction, as nvcc's --use_fast_math gives TileLang (CUDA targets only:
# elsewhere the accurate lowering stands).  Triton already
# uses the approximate instructions for exp, exp2, sqrt, rsqrt and division, so those stay.
# TileLang name -> (PTX of the approximation, factor applied to its result)
FAST_MATH = {
    "tanh": ("tanh.approx.f32 $0, $1;", None),
    "sin": ("sin.approx.ftz.f32 $0, $1;", None),
    "cos": ("cos.approx.ftz.f32 $0, $1;", None),
    "log2": ("lg2.approx.ftz.f32 $0, $1;", None),
    "log": ("lg2.approx.ftz.f32 $0, $1;", math.log(2.0)),
    "log10": ("lg2.approx.ftz.f32 $0, $1;", math.log10(2.0)),
}


# quotients a thread holds at least, for ``_div_rn_shared``: its one tile-wide test costs a reduction
# and a barrier, repaid where div.rn.f32's per-element chains are many (H200, Triton 3.6,
# benchmarks/division_probe.py and hand_variants/attn_fwd_edits.py: attention outputs of 64 and 128
# a thread 1-4 us faster, of 32 (vertical-slash's 64 x 64 tile on 128 threads) no faster; a softmax
# row of 8 a thread 1.4 us slower)
SHARED_DIVISOR_MIN_PER_THREAD = 64


def shared_divisor_div_rn(lw, a: Tile, b: Tile, axes) -> Tile | None:
    """``a / b`` (float32, correctly rounded) where ``b`` varies along fewer lane axes than the
    quotient (one divisor for a row of numerators: ``acc_o[i, j] /= logsum[i]``), outside emitted
    loops, on CUDA targets, for tiles of at least SHARED_DIVISOR_MIN_PER_THREAD quotients a thread:
    the helper ``_div_rn_shared`` (codegen/emit.py) with the divisor's reciprocal taken once; else
    None (``tl.math.div_rn`` per element)."""
    if not (lw.options.shared_divisors and ptx.ptx_allowed(lw.options)) or lw.scope.loop_depth:
        # not in a loop: the helper's tile-wide test is a branch, which could keep Triton from
        # pipelining the loop; not under the interpreter (Triton 3.6's tl.fma rounds twice there)
        return None
    if not b.axes < axes or a.dtype != FLOAT32 or b.dtype != FLOAT32 or lw.scope.lanes is None:
        return None
    threads = (lw.options.num_warps or 0) * 32 or lw.kernel.threads
    lanes = lw.scope.lanes
    if math.prod(lanes.padded[k] for k in range(lanes.rank) if k in axes) < SHARED_DIVISOR_MIN_PER_THREAD * threads:
        return None
    lw.helpers.add("_div_rn_shared")
    reciprocal = P.call("tl.math.div_rn", P.const(1.0), b.node)  # once per divisor, broadcast in the helper
    return Tile(P.call("_div_rn_shared", a.node, b.node, reciprocal), FLOAT32, axes)


def _converts_to(node: ast.expr, dtype) -> bool:
    """Is ``node`` already ``value.to(dtype)`` (an int32 result of C's promotion cast back to TVM's type)?"""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "to"
        and len(node.args) == 1
        and not node.keywords
        and ast.dump(node.args[0]) == ast.dump(P.dtype(dtype))
    )


def _bitcast(lw, x: Tile, dtype, axes) -> Tile:
    """``T.reinterpret``: the bits of ``x`` read as ``dtype``.  ``x`` is first made a tensor of its own
    dtype: a literal has none yet, and Triton may have widened narrow integer arithmetic."""
    if x.dtype.bits != dtype.bits:
        raise lw.error(f"T.reinterpret from {x.dtype.name} ({x.dtype.bits} bits) to {dtype.name} ({dtype.bits} bits)")
    if is_literal(x):
        node = P.call("tl.full", P.list_([]), x.node, P.dtype(x.dtype))
    else:  # (bf16 kept in float32 by the interpreter: back to its own bits first)
        kept = lw.storage_dtype(x.dtype)
        own = kept if kept.bits == x.dtype.bits else x.dtype
        node = x.node if _converts_to(x.node, own) else P.to(x.node, own)
    out = P.call(P.attr(node, "to"), P.dtype(dtype), bitcast=True)
    if lw.storage_dtype(dtype) != dtype:
        out = P.call(P.attr(out, "to"), P.dtype(lw.storage_dtype(dtype)))
    return Tile(out, dtype, axes)


def lower_call(lw, e: ir.Call) -> Tile:
    if e.fn in ptx.PTX_HELPERS:
        return ptx.lower_helper(lw, e)
    if e.fn in RNG_DRAWS:
        return _rng_draw(lw, e)
    args = [lw.ev(a) for a in e.args]
    axes = frozenset().union(*(a.axes for a in args))
    fn = e.fn
    if fn in FAST_MATH and lw.options.fast_math and ptx.ptx_allowed(lw.options) and e.dtype.bits <= 32:
        return _fast_math(lw, e, args[0], axes)
    if fn in ("max", "min") and e.dtype.kind == "int" and lw.options.proven_min_max:
        # T.min(k_start + 128, seq_len) where the ranges prove which operand it is for every block (as
        # TileLang's simplifier folds it): that operand, so Triton sees a constant trip count or extent
        first_is_lower = lw.scope.ranges.compare("<=", e.args[0], e.args[1])
        if first_is_lower is not None:
            return lw.cast(args[0 if first_is_lower == (fn == "min") else 1], e.dtype)
    if fn in ("max", "min"):
        # fp8 operands are compared in float32 (Triton's max/min on fp8 tiles fails to compile for
        # the GPU and compares raw bytes under the interpreter); the result is one operand: exact
        wide = FLOAT32 if is_fp8(e.dtype) else e.dtype
        a, b = (lw.cast(x, wide) if not _weak(x) else x for x in args)
        return lw.cast(Tile(P.call("tl." + DIRECT[fn], a.node, b.node), wide, axes), e.dtype)
    if fn.startswith("ieee_"):
        return _ieee(lw, e, args, axes)
    x = args[0]
    if fn == "bitcast":
        return _bitcast(lw, x, e.dtype, axes)
    if fn == "ffs":
        return _ffs(lw, x, axes)
    if fn == "fns":
        lw.helpers.add("_fns")
        mask, base, offset = (lw.cast(a, INT32) if a.dtype.bits > 32 else a for a in args)
        return Tile(P.call("_fns", _typed_int(lw, mask, UINT32).node, base.node, offset.node), e.dtype, axes)
    if fn == "fma":  # one rounding of a * b + c (16-bit floats: exact product in float32, then rounded)
        wide = [_float_tensor(lw, a, e.dtype) for a in args]
        return lw.cast(Tile(P.call("tl.fma", *wide), FLOAT64 if e.dtype.bits > 32 else FLOAT32, axes), e.dtype)
    if fn in libm.BINARY or fn == "ldexp":
        return _libm_binary(lw, e, args, axes)
    if fn in ("popcount", "clz"):
        return _bit_count(lw, e, x, axes)
    if e.dtype.is_float and fn not in ("abs",) and not x.dtype.is_float:
        x = lw.cast(x, FLOAT32)
    node = x.node
    if fn in libm.UNARY:
        helper = libm.UNARY[fn]
        lw.helpers.update(libm.helpers_for(helper))
        out = P.call(helper, _float_tensor(lw, x))
    elif fn == "sqrt" and not lw.options.fast_math and x.dtype.bits <= 32:
        # Triton's tl.sqrt is the approximate sqrt.approx.f32; TileLang's sqrtf rounds correctly
        # (nvcc's default -prec-sqrt=true), as tl.sqrt_rn does
        out = P.call("tl.sqrt_rn", _float_tensor(lw, x, FLOAT32))
    elif fn == "abs" and x.dtype.is_float:
        out = lw.magnitude(_math_operand(lw, x, e.dtype))
    elif fn in DIRECT:
        out = P.call("tl." + DIRECT[fn], _math_operand(lw, x, e.dtype))
    elif fn == "log10":
        out = P.binop("*", P.call("tl.log", _math_operand(lw, x, e.dtype)), P.const(LOG10_E))
    elif fn == "exp10":
        out = P.call("tl.exp2", P.binop("*", _math_operand(lw, x, e.dtype), P.const(math.log2(10.0))))
    elif fn == "tanh":  # core Triton has no tanh (emit.py's _tanh)
        lw.helpers.add("_tanh")
        out = P.call("_tanh", _math_operand(lw, x, e.dtype))
    elif fn == "tan":
        v = _math_operand(lw, x, e.dtype)
        out = P.binop("/", P.call("tl.sin", v), P.call("tl.cos", v))
    elif fn in ("round", "nearbyint", "round_away"):  # ties to even (nearbyintf) / away from zero (roundf)
        helper = "_round_half_away" if fn == "round_away" else "_rint"
        lw.helpers.add(helper)
        out = P.call(helper, _math_operand(lw, x, e.dtype))
    elif fn == "trunc":
        v = _math_operand(lw, x, e.dtype)
        out = P.call("tl.where", P.binop(">=", v, P.const(0)), P.call("tl.floor", v), P.call("tl.ceil", v))
    elif fn == "isnan":
        return Tile(P.binop("!=", node, node), BOOL, axes)
    elif fn == "isinf":
        return Tile(P.binop("==", P.call("tl.abs", node), P.const(float("inf"))), BOOL, axes)
    elif fn == "isfinite":
        return Tile(
            P.binop("&", P.binop("==", node, node), P.binop("!=", P.call("tl.abs", node), P.const(float("inf")))),
            BOOL,
            axes,
        )
    elif fn == "pow":
        return _pow(lw, e, args, axes)
    elif fn == "fmod":  # Triton's float % is C's fmod (exact: representable in the operands' type)
        a, b = (lw.cast(t, e.dtype) if not is_literal(t) else t for t in args)
        return Tile(P.binop("%", a.node, b.node), e.dtype, axes)
    elif fn in ("truncdiv", "truncmod"):
        return Tile(P.binop("//" if fn == "truncdiv" else "%", args[0].node, args[1].node), e.dtype, axes)
    else:
        raise lw.error(f"T.{fn} is not supported by tile2triton yet")
    return _result(lw, out, x, e, axes)


def _typed_int(lw, t: Tile, dtype) -> Tile:
    """An integer operand as a tensor of ``dtype`` (a literal has no type of its own yet)."""
    if is_literal(t):
        return Tile(P.call("tl.full", P.list_([]), t.node, P.dtype(dtype)), dtype)
    return lw.cast(t, dtype)


# bit k of the position of a single set bit p is 1 iff p & _EVEN_BITS[k] == 0
_EVEN_BITS = [0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F, 0x00FF00FF00FF00FF,
              0x0000FFFF0000FFFF, 0x00000000FFFFFFFF]  # fmt: skip


def _ffs(lw, x: Tile, axes) -> Tile:
    """CUDA ``__ffs`` / ``__ffsll``: the one-based position of the lowest set bit, 0 for 0."""
    bits = 64 if x.dtype.bits > 32 else 32
    signed = _typed_int(lw, x, INT64 if bits == 64 else INT32)
    if x.dtype.kind == "uint" and not is_literal(x):  # the same bits, as a signed integer
        signed = Tile(P.call(P.attr(lw.cast(x, x.dtype).node, "to"), P.dtype(signed.dtype), bitcast=True), signed.dtype)
    value = lw.named(signed.node, "ffs_operand")
    lowest = lw.named(P.binop("&", value, ast.UnaryOp(ast.USub(), value)), "lowest_bit")
    position = P.const(1)
    for k, even in enumerate(_EVEN_BITS[: 5 if bits == 32 else 6]):
        is_zero = P.binop("==", P.binop("&", lowest, P.const(even & (2**bits - 1))), P.const(0))
        position = P.binop("+", position, P.binop("*", P.to(is_zero, INT32), P.const(2**k)))
    return Tile(P.call("tl.where", P.binop("!=", value, P.const(0)), position, P.const(0)), INT32, axes)


def _float_tensor(lw, x: Tile, dtype=None) -> ast.expr:
    """A float operand of a libm helper (codegen/libm.py) as a tensor of float32 or float64: a
    16-bit float is computed in float32, a literal becomes a typed scalar (helpers call methods
    on their operands)."""
    dtype = dtype or (x.dtype if x.dtype.is_float and not is_literal(x) else FLOAT32)
    wide = FLOAT64 if dtype.bits > 32 else FLOAT32
    if is_literal(x):
        return P.call("tl.full", P.list_([]), P.const(float(literal_value(x.node))), P.dtype(wide))
    return lw.cast(x, wide).node if lw.storage_dtype(x.dtype) != wide else x.node


def _libm_binary(lw, e: ir.Call, args, axes) -> Tile:
    """``T.atan2(y, x)``, ``T.hypot``, ``T.copysign``, ``T.nextafter`` (both operands in the result's
    dtype, as TVM's calls take the first operand's) and ``T.ldexp(x, e)`` (``e`` an int32: C's
    ``ldexpf`` converts a float exponent so)."""
    x, y = args
    if e.fn == "ldexp":
        helper, second = "_ldexp", _typed_int(lw, y, INT32).node
    else:
        helper, second = libm.BINARY[e.fn], _float_tensor(lw, y, e.dtype)
    lw.helpers.update(libm.helpers_for(helper))
    out = P.call(helper, _float_tensor(lw, x, e.dtype), second)
    return _result(lw, out, x, e, axes)


def _bit_count(lw, e: ir.Call, x: Tile, axes) -> Tile:
    """``T.popcount(x)`` (in x's dtype) and ``T.clz(x)`` (int32) on the bits of an integer of 32 or
    64 bits; a narrower one is first promoted to 32 bits as C promotes it (CUDA's ``__popc`` /
    ``__clz`` take an int: signed types sign-extend)."""
    if not x.dtype.is_int:
        raise lw.error(f"T.{e.fn} takes an integer, got {x.dtype.name}")
    bits = 64 if x.dtype.bits > 32 else 32
    value = _typed_int(lw, x, INT64 if bits == 64 else INT32)
    unsigned = DTYPES[f"uint{bits}"]
    helper = f"_{e.fn}{bits}"
    lw.helpers.add(helper)
    out = P.call(helper, P.call(P.attr(value.node, "to"), P.dtype(unsigned), bitcast=True))
    return lw.cast(Tile(out, unsigned if e.fn == "popcount" else INT32, axes), e.dtype)


def _weak(t: Tile) -> bool:
    return is_literal(t)


def _math_operand(lw, x: Tile, dtype):
    """Triton's transcendental functions want fp32/fp64: compute half types in fp32."""
    if x.dtype.bits < 32 and x.dtype.is_float and lw.storage_dtype(x.dtype) != FLOAT32:
        return convert(x.node, FLOAT32, x.axes)
    return x.node


# T.ieee_*: the operation on float64 operands.  A sum is ("sum", a, b): its float64 rounding may
# hide which way the exact sum lies, so the float32 path keeps the lost part (TwoSum)
def _one(dt):
    return P.call("tl.full", P.list_([]), P.const(1.0), P.dtype(dt))


_IEEE_OPS = {
    "ieee_add": lambda a, b: ("sum", a, b),
    "ieee_sub": lambda a, b: ("sum", a, P.negate(b, FLOAT64)),
    "ieee_fmaf": lambda a, b, c: ("sum", P.binop("*", a, b), c),  # a product of two fp32 is exact in fp64
    "ieee_mul": lambda a, b: P.binop("*", a, b),
    "ieee_fdiv": lambda a, b: P.binop("/", a, b),  # float64 division and sqrt round to nearest (IEEE)
    "ieee_frcp": lambda a: P.binop("/", _one(FLOAT64), a),
    "ieee_fsqrt": lambda a: P.call("tl.sqrt", a),
    "ieee_frsqrt": lambda a: P.binop("/", _one(FLOAT64), P.call("tl.sqrt", a)),
}


def _ieee(lw, e: ir.Call, args, axes) -> Tile:
    """``T.ieee_add(x, y, mode)`` and the like on float32: computed in float64 (a product of fp32
    values is exact there; a quotient or square root of them is never a float64 that hides which way
    the exact value lies; a sum keeps its lost part), then rounded to float32 once, in the mode
    (``_ieee_round``): the same bits on the GPU and the interpreter, and no fma contraction can merge
    it with the operations around it.  float64 operands round to nearest only (the binder checks)."""
    *operands, mode = args
    mode = int(literal_value(mode.node))
    if e.dtype.bits > 32 and mode != 0:
        return _ieee64_directed(lw, e, operands, mode, axes)
    if e.dtype.bits > 32:
        wide = [lw.cast(a, e.dtype).node for a in operands]
        if e.fn == "ieee_fmaf":
            return Tile(P.call("tl.fma", *wide), e.dtype, axes)
        op = _IEEE_OPS[e.fn](*wide)
        return Tile(P.binop("+", op[1], op[2]) if isinstance(op, tuple) else op, e.dtype, axes)
    wide = [lw.cast(lw.cast(a, FLOAT32), FLOAT64).node for a in operands]
    op = _IEEE_OPS[e.fn](*wide)
    if isinstance(op, tuple):
        terms = op[1:]
        if mode == 3:  # the zero sum's sign below reads the terms again: each evaluated once, named
            names = [lw.names.fresh("ieee_term") for _ in terms]
            for name, term in zip(names, terms):
                lw.emit(ast.Assign([P.store_name(name)], term))
            terms = [P.name(n) for n in names]
        lw.helpers.add("_two_sum")
        total, lost = lw.names.fresh("ieee_sum"), lw.names.fresh("ieee_lost")
        target = ast.Tuple([P.store_name(total), P.store_name(lost)], ast.Store())
        lw.emit(ast.Assign([target], P.call("_two_sum", *terms)))
        value, lost = P.name(total), P.name(lost)
    else:
        value, lost = op, P.const(0.0)
    lw.helpers.add("_ieee_round")
    out = P.call("_ieee_round", value, lost, P.const(mode))
    if isinstance(op, tuple) and mode == 3:  # an exact zero sum's sign toward -inf (libm._ieee_zero_sum)
        lw.helpers.update(libm.helpers_for("_ieee_zero_sum"))
        out = P.call("_ieee_zero_sum", out, value, *terms, P.const(mode))
    return lw.cast(Tile(out, FLOAT32, axes), e.dtype)


# float64 with a directed mode: PTX's instruction on CUDA (.rz / .rp / .rm: TileLang's rz / ru / rd)
_PTX_MODES = {1: "rz", 2: "rp", 3: "rm"}
_PTX_OPS = {"ieee_add": "add", "ieee_sub": "sub", "ieee_mul": "mul", "ieee_fmaf": "fma", "ieee_fdiv": "div",
            "ieee_frcp": "rcp", "ieee_fsqrt": "sqrt"}  # fmt: skip
# elsewhere the rounded-to-nearest result moved by its exact residual (codegen/libm.py)
_FALLBACKS = {"ieee_add": "_ieee64_sum", "ieee_sub": "_ieee64_sum", "ieee_mul": "_ieee64_mul",
              "ieee_fmaf": "_ieee64_fma", "ieee_fdiv": "_ieee64_div", "ieee_frcp": "_ieee64_rcp",
              "ieee_fsqrt": "_ieee64_sqrt"}  # fmt: skip


def _ieee64_directed(lw, e: ir.Call, operands, mode: int, axes) -> Tile:
    """``T.ieee_add(x, y, "rz")`` and the like on float64: the instruction CUDA's ``__dadd_rz`` is
    (``add.rz.f64``) on CUDA targets; on others and the interpreter, float64 has no wider type to
    round from, so the result rounded to nearest moves one step where its exact residual says."""
    wide = [_float_tensor(lw, a, e.dtype) for a in operands]
    if e.fn == "ieee_sub" and not ptx.ptx_allowed(lw.options):
        wide[1] = ast.UnaryOp(ast.USub(), wide[1])  # a - b is a + (-b), exactly
    if ptx.ptx_allowed(lw.options):
        places = ", ".join(f"${k}" for k in range(len(wide) + 1))
        asm = f"{_PTX_OPS[e.fn]}.{_PTX_MODES[mode]}.f64 {places};"
        out = ptx.inline_asm(asm, ",".join(["=d"] + ["d"] * len(wide)), wide, FLOAT64, True, 1)
    else:
        helper = _FALLBACKS[e.fn]
        lw.helpers.update(libm.helpers_for(helper))
        out = P.call(helper, *wide, P.const(mode))
    return Tile(out, FLOAT64, axes)


def _result(lw, out, x: Tile, e: ir.Call, axes) -> Tile:
    if e.dtype.is_float and e.dtype.bits < 32 and lw.storage_dtype(e.dtype) != FLOAT32:
        return Tile(convert(out, e.dtype, axes), e.dtype, axes)
    return Tile(out, e.dtype, axes)


def _pow(lw, e: ir.Call, args, axes) -> Tile:
    base, exp = args
    k = literal_value(exp.node)
    # a literal base (RoPE's T.pow(10000, x)) as a float tensor: Triton has no log2 of an int constant
    b = _float_tensor(lw, base, e.dtype) if is_literal(base) else _math_operand(lw, base, e.dtype)
    if isinstance(k, (int, float)) and float(k).is_integer() and 0 <= k <= 8:
        if k == 0:
            return Tile(P.const(1.0), e.dtype, axes)
        out = b
        for _ in range(int(k) - 1):
            out = P.binop("*", out, b)
    elif k == 0.5:
        out = P.call("tl.sqrt", b)
    elif k == -0.5:
        out = P.call("tl.rsqrt", b)
    else:
        lw.helpers.update(libm.helpers_for("_pow"))
        out = P.call("_pow", b, _float_tensor(lw, exp, e.dtype))
    return _result(lw, out, base, e, axes)


def _fast_math(lw, e: ir.Call, x: Tile, axes) -> Tile:
    asm, factor = FAST_MATH[e.fn]
    operand = convert(x.node, FLOAT32, x.axes) if x.dtype != FLOAT32 else x.node
    out = ptx.inline_asm(asm, "=r,r", [operand], FLOAT32, True, 1)
    if factor is not None:
        out = P.binop("*", out, P.const(factor))
    return _result(lw, out, x, e, axes)


# ------------------------------------------------------------------------------ T.rng_rand*
RNG_DRAWS = ("rng_rand", "rng_uniform", "rng_normal")


def _rng_draw(lw, e: ir.Call) -> Tile:
    """The next draw of the stream ``T.rng_init`` started (frontend/rules_misc.py): curand's Philox
    stream, at the stream's counter plus, inside a T.Parallel, the element's row-major index; the
    counter then moves past the statement's draws (one, or one per element)."""
    seed, seq = (lw.ev(ref) for ref in e.args[:2])
    counter_ref = e.args[2]
    counter = lw.scope.env[counter_ref.var]
    if not isinstance(counter.node, ast.Name):  # name the counter: draws advance it in place
        name = lw.assign(counter_ref.var.name, counter.node)
        counter = Tile(P.name(name), counter.dtype, counter.axes)
        lw.scope.env[counter_ref.var] = counter
    draw, axes, count = counter.node, counter.axes | seed.axes | seq.axes, 1
    lanes = lw.scope.lanes
    if lanes is not None and isinstance(lanes.owner, ir.Parallel):  # each element draws its own number
        for k in reversed(range(lanes.rank)):
            index = lw.scope.env[lanes.vars[k]]
            draw = P.binop("+", draw, index.node if count == 1 else P.binop("*", index.node, P.const(count)))
            axes = axes | index.axes
            count *= lanes.extents[k]
    if lw.scope.inline_only:
        raise lw.error(f"T.{e.fn} cannot stand in this expression (it advances the random stream)")
    if e.fn == "rng_normal":  # Box-Muller's pairs are not curand's: Triton's normal at the draw's counter
        key = P.binop("+", seed.node, P.binop("<<", seq.node, P.const(32)))
        value = P.call("tl.randn", key, draw)
    else:
        helper = "_philox_draw" if e.fn == "rng_rand" else "_philox_uniform"
        lw.helpers.update(("_philox_draw", helper))
        value = P.call(helper, seed.node, seq.node, draw)
    if e.dtype.bits == 64:
        value = P.to(value, e.dtype)
    name = lw.assign("rand", value)  # drawn before the counter moves on
    lw.assign_to(counter.node.id, P.binop("+", counter.node, P.const(count)))
    return Tile(P.name(name), e.dtype, axes)


# ------------------------------------------------------------------------------ fp8 per target
def check_fp8(lw, kernel: ir.Kernel, params) -> None:
    """An fp8 dtype the target's Triton lacks (``LoweringOptions.fp8``: float8_e4m3fn below sm_89) is a
    compile error at the first buffer or cast that uses it, instead of Triton's error at compile time."""
    allowed = lw.options.fp8
    if allowed is None or lw.options.interpret:
        return
    found = [(p.dtype, p.loc) for p in params if isinstance(p, ir.Buffer)]
    for st in ir.walk(kernel.body):
        if isinstance(st, ir.Alloc):
            found.append((st.buffer.dtype, st.buffer.loc))
        for top in ir.stmt_exprs(st):
            found.extend((x.dtype, getattr(st, "loc", None)) for x in ir.iter_expr_tree(top) if isinstance(x, ir.Cast))
    for dtype, loc in found:
        if dtype.name.startswith("float8") and dtype.name not in allowed:
            raise lw.error(
                f"{dtype.name} is not an fp8 format Triton compiles for the {ptx.target_label(lw.options)} "
                f"(it has {', '.join(allowed) or 'none'}); float8_e4m3fn needs sm_89 or newer",
                loc,
            )
