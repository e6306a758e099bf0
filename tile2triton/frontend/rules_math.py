"""Binding rules of element-wise intrinsics: math functions, integer and bitwise operations,
casts and ``T.reinterpret``, packed loads/stores (``T.ldg*``/``T.stg*``), ``T.__ldg``, inline asm
and the ``T.ptx_*`` reads.
"""

from __future__ import annotations

from .. import ir
from ..errors import LoweringCheckError
from ..ir import BOOL, FLOAT32, INT32
from ..ir.exprs import as_expr, binary_dtype, const_int, int_promoted, is_python_value, is_weak, tvm_dtype
from ..language.dtypes import DTYPES, lookup_dtype
from . import packed, vectors
from .rules_base import RULES, BinderLike, rule

UNARY_MATH = {
    "exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "abs", "tanh", "sigmoid", "sin", "cos",
    "tan", "erf", "floor", "ceil", "round", "nearbyint", "trunc", "isnan", "isinf", "isfinite",
    "sinh", "cosh", "asinh", "acosh", "atanh", "asin", "acos", "atan",
    "__exp", "__exp10", "__log", "__log2", "__log10", "__sin", "__cos", "__tan",
}  # fmt: skip
_PREDICATES = {"isnan", "isinf", "isfinite"}


# --- element-wise intrinsics
def _math_rule(name):
    def bind(b: BinderLike, node, args):
        (x,) = args.values()
        x = as_expr(x, b.loc(node))
        if name.startswith("__") and not (x.dtype.is_float and x.dtype.bits >= 16) and not is_weak(x):
            # the fast-math intrinsics (T.__exp, ...) take float16/bfloat16/float32/float64 only, as in TileLang
            raise b.error(f"T.{name} only supports floating-point inputs, but got {x.dtype}", node)
        if name in _PREDICATES:
            dtype = BOOL
        elif name in ("abs", "floor", "ceil", "round", "nearbyint", "trunc") and not x.dtype.is_float:
            dtype = x.dtype
        else:
            dtype = x.dtype if x.dtype.is_float and not is_weak(x) else FLOAT32
        if name in ("floor", "ceil", "round", "nearbyint", "trunc") and not x.dtype.is_float:
            return x
        if name == "abs" and not x.dtype.is_float:
            x = int_promoted(x)  # |-128| of an int8 is 128, as C computes it
            dtype = x.dtype
        return ir.Call(name.lstrip("_"), (x,), dtype)

    return bind


for _name in UNARY_MATH:
    RULES[_name] = _math_rule(_name)


@rule("round")
def bind_round(b: BinderLike, node, args):
    """``T.round(x)`` rounds ties to even (TileLang emits ``nearbyintf``, as for ``T.nearbyint``);
    ``rounding_mode="ties-away-from-zero"`` is C's ``roundf``."""
    mode = args.get("rounding_mode") or "ties-to-even"
    if mode not in ("ties-to-even", "ties-away-from-zero"):
        raise b.error(
            f"Unsupported T.round rounding_mode {mode!r}; expected 'ties-to-even' or 'ties-away-from-zero'", node
        )
    x = as_expr(args["x"], b.loc(node))
    if not x.dtype.is_float:
        return x
    return ir.Call(
        "nearbyint" if mode == "ties-to-even" else "round_away", (x,), x.dtype if not is_weak(x) else FLOAT32
    )


IEEE_MODES = ("rn", "rz", "ru", "rd")


@rule("ieee_add", "ieee_sub", "ieee_mul", "ieee_fmaf", "ieee_frcp", "ieee_fsqrt", "ieee_frsqrt", "ieee_fdiv")
def bind_ieee(b: BinderLike, node, args, name):
    """``T.ieee_add(x, y, "rz")`` and the like: the operation rounded once, as ``rounding_mode`` says
    (codegen/intrinsics.py).  The mode is the call's last argument, as its index in ``IEEE_MODES``."""
    mode = args.get("rounding_mode", "rn")
    if mode not in IEEE_MODES:
        raise b.error(f"Invalid rounding mode {mode!r} for T.{name}. Must be one of: {', '.join(IEEE_MODES)}", node)
    operands = [as_expr(args[k], b.loc(node)) for k in ("x", "y", "z") if k in args]
    x = operands[0]
    dtype = x.dtype if x.dtype.is_float and not is_weak(x) else FLOAT32  # TileLang: the first operand's dtype
    # TileLang's codegen refusals, with its messages
    if dtype.bits < 32 and mode != "rn":
        raise b.error(f"T.{name}: Only rounding mode 'rn' is available for half precision ({dtype.name})", node)
    if dtype.bits > 32 and name == "ieee_frsqrt":
        raise b.error("T.ieee_frsqrt: frsqrt is not supported for float64 (CUDA has no float64 rsqrt)", node)
    return ir.Call(name, (*operands, ir.Const(IEEE_MODES.index(mode), INT32)), dtype)


def _binary_call(name):
    def bind(b: BinderLike, node, args):
        x, y = (as_expr(v, b.loc(node)) for v in args.values())
        dtype = binary_dtype(name, x, y)
        if name in _FLOAT_RESULTS and not dtype.is_float:
            dtype = FLOAT32
        return ir.Call(name, (x, y), dtype)

    return bind


_FLOAT_RESULTS = ("pow", "atan2", "fmod", "hypot", "copysign", "nextafter")
for _name in ("max", "min", *_FLOAT_RESULTS):
    RULES[_name] = _binary_call(_name)


@rule("fabs")
def bind_fabs(b: BinderLike, node, args):
    """``T.fabs(x)``: TIR's float absolute value (``T.abs`` of a float)."""
    x = as_expr(args["x"], b.loc(node))
    return ir.Call("abs", (x,), x.dtype if x.dtype.is_float and not is_weak(x) else FLOAT32)


@rule("ldexp")
def bind_ldexp(b: BinderLike, node, args):
    """``T.ldexp(x1, x2)``: ``x1 * 2**x2`` in x1's dtype (codegen/libm.py)."""
    x, e = (as_expr(args[k], b.loc(node)) for k in ("x1", "x2"))
    return ir.Call("ldexp", (x, e), x.dtype if x.dtype.is_float and not is_weak(x) else FLOAT32)


@rule("popcount", "clz")
def bind_bit_count(b: BinderLike, node, args, name):
    """``T.popcount(x)`` (x's dtype) and ``T.clz(x)`` (int32), as TVM's calls type them."""
    x = as_expr(args["x"], b.loc(node))
    if not x.dtype.is_int:
        raise b.error(f"T.{name} takes an integer, got {x.dtype.name}", node)
    return ir.Call(name, (x,), x.dtype if name == "popcount" and not is_weak(x) else INT32)


@rule("likely")
def bind_likely(b: BinderLike, node, args):
    """``T.likely(cond)``: a branch-prediction hint, the condition itself."""
    return args["cond"]


for _name, _op in (("floordiv", "//"), ("floormod", "%"), ("bitwise_and", "&"), ("bitwise_or", "|"),
                   ("bitwise_xor", "^"), ("shift_left", "<<"), ("shift_right", ">>")):  # fmt: skip

    def _op_rule(b, node, args, _op=_op):
        x, y = (as_expr(args[k], b.loc(node)) for k in ("a", "b"))
        return ir.BinOp(_op, x, y, binary_dtype(_op, x, y))

    RULES[_name] = _op_rule


@rule("truncdiv", "truncmod")
def bind_trunc(b: BinderLike, node, args, name):
    x, y = as_expr(args["a"]), as_expr(args["b"])
    return ir.Call(name, (x, y), binary_dtype("//", x, y))


@rule("bitwise_not")
def bind_bitwise_not(b: BinderLike, node, args):
    x = as_expr(args["x"])
    return ir.UnaryOp("~", x, x.dtype)


@rule("ceildiv")
def bind_ceildiv(b: BinderLike, node, args):
    x, y = as_expr(args["a"]), as_expr(args["b"])
    dtype = binary_dtype("+", x, y)
    return ir.BinOp("//", ir.BinOp("-", ir.BinOp("+", x, y, dtype), const_int(1), dtype), y, dtype)


@rule("if_then_else")
def bind_if_then_else(b: BinderLike, node, args):
    cond = args["cond"]
    if is_python_value(cond):
        return args["true_value"] if cond else args["false_value"]
    return b.select(cond, args["true_value"], args["false_value"])


@rule("clamp")
def bind_clamp(b: BinderLike, node, args):
    x, lo, hi = (as_expr(args[k]) for k in ("dst", "min_val", "max_val"))
    dtype = binary_dtype("max", x, lo)
    return ir.Call("min", (ir.Call("max", (x, lo), dtype), hi), dtype)


@rule("cast")
def bind_cast(b: BinderLike, node, args):
    from ..language.tir.ir import check_cast_options, unsupported_cast_option

    if isinstance(args["value"], packed.Vector) or packed.vector_dtype(args["dtype"]) is not None:
        return vectors.cast(b, args["value"], args["dtype"], node)  # lane by lane
    dtype = b.dtype_arg(args["dtype"], node)
    try:
        check_cast_options(args["round"], args["sat"], args["rbits"])
    except ValueError as exc:
        raise b.error(str(exc), node) from None
    why = unsupported_cast_option(args["round"], args["sat"], dtype.name)
    if why is not None and args["round"] == "rs":  # a hardware refusal: tvm.error.InternalError, as TileLang's
        raise LoweringCheckError(why, b.loc(node))
    if why is not None:
        raise b.error(why, node)
    return ir.Cast(as_expr(args["value"], b.loc(node)), dtype)


@rule("Cast")
def bind_tvm_cast(b: BinderLike, node, args):
    if isinstance(args["value"], packed.Vector) or packed.vector_dtype(args["dtype"]) is not None:
        return vectors.cast(b, args["value"], args["dtype"], node)  # lane by lane
    return ir.Cast(as_expr(args["value"], b.loc(node)), b.dtype_arg(args["dtype"], node))


@rule("reinterpret")
def bind_reinterpret(b: BinderLike, node, args):
    if lookup_dtype(args["value"]) is not None and lookup_dtype(args["dtype"]) is None:
        args = dict(args, value=args["dtype"], dtype=args["value"])  # TVM's older order, which TileLang accepts
    if isinstance(args["value"], packed.Vector) or packed.vector_dtype(args["dtype"]) is not None:
        return packed.reinterpret(b, args["value"], args["dtype"], node)
    value = as_expr(args["value"])
    narrow = tvm_dtype(value)  # the bits of TVM's narrow integer type, not of its int32 arithmetic
    return ir.Call(
        "bitcast", (value if narrow == value.dtype else ir.Cast(value, narrow),), b.dtype_arg(args["dtype"], node)
    )


@rule("ldg32", "ldg64", "ldg128", "ldg256", "lds32", "lds64", "lds128")
def bind_packed_load(b: BinderLike, node, args, name):
    """``T.ldgN`` / ``T.ldsN``: a plain load of the elements the N bits cover (frontend/packed.py)."""
    return packed.load(b, args["src"], int(name[3:]), args.get("pred"), f"T.{name}", node)


@rule("stg32", "stg64", "stg128", "stg256", "sts32", "sts64", "sts128")
def bind_packed_store(b: BinderLike, node, args, name):
    """``T.stgN`` / ``T.stsN``: a plain store of the elements the N bits cover (frontend/packed.py)."""
    packed.store(b, args["dst"], args["value"], int(name[3:]), args.get("pred"), f"T.{name}", node)


@rule("__ldg")
def bind_ldg(b: BinderLike, node, args):
    """``T.__ldg(x[i])`` / ``T.__ldg(x, i)``: a read-only-cache hint; the load itself."""
    src, index = args["load_or_buf"], args["index"]
    if isinstance(src, ir.Load) and index is None:
        return src
    if isinstance(src, ir.Buffer) and index is not None:
        index = index[0] if isinstance(index, (list, tuple)) and len(index) == 1 else index
        if src.ndim != 1 or isinstance(index, (list, tuple)):
            raise b.error("T.__ldg(buffer, index) takes a 1-D buffer and one index", node)
        return ir.Load(src, (as_expr(index),))
    raise b.error("T.__ldg takes x[i], or a buffer and an index", node)


@rule("inline_asm")
def bind_inline_asm(b: BinderLike, node, args):
    asm, constraints = args["asm"], args["constraints"]
    if not isinstance(asm, str) or not isinstance(constraints, str):
        raise b.error("T.inline_asm needs the assembly and its constraints as compile-time strings", node)
    operands = tuple(as_expr(a, b.loc(node)) for a in args["args"])
    if not operands:
        raise b.error("T.inline_asm needs at least one argument (it is element-wise over them)", node)
    return ir.InlineAsm(asm, constraints, operands, b.dtype_arg(args["dtype"], node), bool(args["is_pure"]),
                        int(args["pack"]), b.loc(node))  # fmt: skip


def _ptx_rule(name, dtype):
    def bind(b: BinderLike, node, args):
        return ir.Call(name, tuple(as_expr(v, b.loc(node)) for v in args.values()), dtype)

    return bind


for _name in ("ptx_ex2", "ptx_tanh", "ptx_rcp", "ptx_rsqrt", "fast_rcp"):
    RULES[_name] = _ptx_rule("ptx_rcp" if _name == "fast_rcp" else _name, FLOAT32)
for _name in ("ptx_laneid", "ptx_warpid", "ptx_smid"):
    RULES[_name] = _ptx_rule(_name, INT32)
for _name in ("ptx_clock64", "ptx_globaltimer"):
    RULES[_name] = _ptx_rule(_name, DTYPES["int64"])


@rule("align_up")
def bind_align_up(b: BinderLike, node, args):
    """``T.ceildiv(x, y) * y``, as TileLang defines it."""
    x, y = as_expr(args["x"]), as_expr(args["y"])
    dtype = binary_dtype("+", x, y)
    return ir.BinOp("*", RULES["ceildiv"](b, node, {"a": x, "b": y}), y, dtype)
