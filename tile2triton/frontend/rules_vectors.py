"""Binding rules of TileLang's vector primitives (``T.extract_lane``, ``T.Broadcast``, ``T.Ramp``,
``T.Shuffle``); vector values and buffers themselves are in vectors.py."""

from __future__ import annotations

from .. import ir
from ..ir.exprs import as_expr
from . import vectors
from .packed import Vector
from .rules_base import BinderLike, rule


@rule("extract_lane")
def bind_extract_lane(b: BinderLike, node, args):
    return vectors.extract_lane(b, args["vector"], args["lane"], node)


@rule("Broadcast")
def bind_broadcast(b: BinderLike, node, args):
    return vectors.broadcast(b, args["value"], args["lanes"], node)


@rule("Ramp")
def bind_ramp(b: BinderLike, node, args):
    return vectors.ramp(b, args["base"], args["stride"], args["lanes"], node)


@rule("Shuffle")
def bind_shuffle(b: BinderLike, node, args):
    """``T.Shuffle([v, w, ...], [i, j, ...])``: lanes ``i, j, ...`` of the vectors' lanes laid end to end."""
    sources = args["vectors"]
    sources = list(sources) if isinstance(sources, (list, tuple)) else [sources]
    lanes = [x for v in sources for x in (v.lanes if isinstance(v, Vector) else (v,))]
    picked = []
    for i in args["indices"] if isinstance(args["indices"], (list, tuple)) else [args["indices"]]:
        i = getattr(i, "value", i)
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(lanes):
            raise b.error(f"T.Shuffle index {i!r} is not a compile-time lane below {len(lanes)}", node)
        picked.append(lanes[i])
    if len(picked) == 1:
        return picked[0]
    return vectors.construct(b, f"{vectors.lane_dtype(picked[0]).name}x{len(picked)}", picked, node)


# --- TileLang's packed two-lane math (T.add2, ..., T.abs2): lane by lane on x2 vectors
PACKED_X2_DTYPES = ("bfloat16x2", "float16x2", "float32x2")  # TileLang's _PACKED_X2_DTYPES
_PACKED_OPS = {"add2": "+", "sub2": "-", "mul2": "*", "max2": "max", "min2": "min", "fma2": "fma", "abs2": "abs"}


def packed_x2_dtype(value) -> str:
    """The dtype name TileLang's ``_validate_packed_x2_args`` reads from an operand."""
    if isinstance(value, Vector):
        return f"{value.dtype.name}x{len(value.lanes)}"
    return as_expr(value).dtype.name


def check_packed_x2(names: list[str]) -> str | None:
    """TileLang's message for packed x2 operands of these dtypes, None when they are valid."""
    for name in names:
        if name not in PACKED_X2_DTYPES:
            return f"Expected dtype in {sorted(PACKED_X2_DTYPES)}, got '{name}'"
    if len(set(names)) > 1:
        return f"Expected all packed x2 arguments to have the same dtype, got {names}"
    return None


@rule(*_PACKED_OPS)
def bind_packed_x2(b: BinderLike, node, args, name):
    """``T.add2(x, y)``, ``T.fma2(x, y, z)``, ``T.abs2(x)`` ...: TileLang's ``tl::add2`` and the like
    on float32x2 / bfloat16x2 / float16x2 values of one dtype, an element-wise operation per lane
    (fma2 fused: one rounding of x * y + z, in float32 for the 16-bit types)."""
    operands = list(args.values())
    why = check_packed_x2([packed_x2_dtype(v) for v in operands])
    if why is not None:
        raise b.error(f"T.{name}: {why}", node)
    dtype = operands[0].dtype
    op = _PACKED_OPS[name]
    lanes = []
    for parts in zip(*(v.lanes for v in operands)):
        parts = tuple(as_expr(p, b.loc(node)) for p in parts)
        if op in ("+", "-", "*"):
            lanes.append(ir.BinOp(op, *parts, dtype))
        else:
            lanes.append(ir.Call(op, parts, dtype))
    return Vector(tuple(lanes), dtype)
