"""Masks of 0 and -inf from integer comparisons, as float arithmetic (``TILE2TRITON_ARITHMETIC_MASKS``).

``T.if_then_else(q_idx >= k_idx, 0, -T.infinity(dtype))`` is how attention kernels mask their scores.  As
``tl.where`` of a tile of comparisons, LLVM's SLP vectorizer joins the comparisons into one ``<64 x i1>``
vector, which the NVPTX backend packs into 16-bit words and takes apart again bit by bit before each select:
in the sink forward's loop (Triton 3.6 and 3.9, sm_90) about 170 of its 802 instructions.  Written here as
float arithmetic there is no boolean to pack: ``a >= b`` holds exactly where the *margin*
``float(a - b) + 0.5`` is positive (an integer difference rounds to a float of the same sign, and adding a half
never reaches zero), a conjunction is the least of its margins, a disjunction the greatest, and

    ``_neg_inf_unless(margin)`` = ``min(0, margin * inf)`` = 0 where the margin is positive, else -inf.

The values are the select's, bit for bit; the rule is taken only where the value ranges prove that no
difference wraps (else ``tl.where`` stays).
"""

from __future__ import annotations

import ast

from .. import ir
from ..ir import FLOAT32
from ..ir.exprs import binary_dtype
from . import pyast as P
from .values import Tile

HELPER = "_neg_inf_unless"
HELPERS = {
    HELPER: """
@triton.jit
def _neg_inf_unless(margin):
    # 0 where margin > 0, else -inf: a mask built without booleans (codegen/masks.py says why)
    return tl.minimum(0.0, margin * float("inf"))
""",
}

# a comparison's margin: float(lhs - rhs) plus this (lhs OP rhs holds where the margin is positive)
_OFFSET = {">=": 0.5, ">": -0.5}
_FLIPPED = {"<=": ">=", "<": ">"}  # a <= b is b >= a
_WITH_INFINITY = ("float16", "bfloat16", "float32", "float64")  # fp8 has none to select
_JOIN = {"and": "tl.minimum", "&": "tl.minimum", "or": "tl.maximum", "|": "tl.maximum"}


def neg_inf_mask(lw, e: ir.Select) -> Tile | None:
    """``select(cond, 0, -inf)`` (or ``select(cond, -inf, 0)``) of a float dtype, ``cond`` comparisons of
    integers joined by and/or, as ``_neg_inf_unless(margin)`` of the comparisons the value ranges leave open;
    None where the select is not of that form, the ranges decide it whole (the plain lowering folds it), or a
    difference may wrap."""
    if not (lw.options.arithmetic_masks and lw.options.backend == "cuda" and e.dtype.name in _WITH_INFINITY):
        return None
    values = (_float_value(e.true_value), _float_value(e.false_value))
    if values not in ((0.0, float("-inf")), (float("-inf"), 0.0)):
        return None
    cond = _undecided(lw, e.cond)
    if cond is None or isinstance(cond, bool) or not _margin_ok(lw, cond):
        return None  # not of the form; or decided for every lane, which the plain lowering folds
    margin, axes = _margin(lw, cond)
    if values[0] != 0.0:  # -inf where cond holds: 0 where it does not, whose margin is the negation
        margin = P.binop("*", margin, P.const(-1.0))
    lw.helpers.add(HELPER)
    return lw.cast(Tile(P.call(HELPER, margin), FLOAT32, axes), e.dtype)


def _float_value(value) -> float | None:
    """The number a constant expression of the IR stands for (``-c`` and casts of constants included)."""
    if isinstance(value, ir.Const) and isinstance(value.value, (int, float)) and not isinstance(value.value, bool):
        return float(value.value)
    if isinstance(value, ir.UnaryOp) and value.op == "-":
        inner = _float_value(value.operand)
        return None if inner is None else -inner
    if isinstance(value, ir.Cast) and value.dtype.is_float:
        return _float_value(value.value)
    return None


def _undecided(lw, cond):
    """``cond`` without the comparisons the value ranges (or a split loop) decide for every lane: a smaller
    condition, True / False where that decides it all, None where it is not comparisons joined by and/or."""
    if isinstance(cond, ir.BinOp) and cond.op in _JOIN:
        lhs, rhs = _undecided(lw, cond.lhs), _undecided(lw, cond.rhs)
        if lhs is None or rhs is None:
            return None
        conjunction = cond.op in ("and", "&")
        for known, other in ((lhs, rhs), (rhs, lhs)):
            if isinstance(known, bool):  # x and True is x, x and False is False (and dually for or)
                return other if known == conjunction else known
        return ir.BinOp(cond.op, lhs, rhs, cond.dtype)
    if not (isinstance(cond, ir.Compare) and cond.op in ("<", "<=", ">", ">=")):
        return None
    known = lw.scope.decided(cond)
    return cond if known is None else known


def _margin_ok(lw, cond) -> bool:
    """Every comparison of ``cond`` is of signed integers whose difference the value ranges bound."""
    if isinstance(cond, ir.BinOp):
        return _margin_ok(lw, cond.lhs) and _margin_ok(lw, cond.rhs)
    if cond.lhs.dtype.kind != "int" or cond.rhs.dtype.kind != "int":  # unsigned differences wrap
        return False
    dtype = binary_dtype("-", cond.lhs, cond.rhs)
    span = lw.scope.ranges.of(ir.BinOp("-", cond.lhs, cond.rhs, dtype))
    lo, hi = dtype.int_range
    return span is not None and lo <= span[0] and span[1] <= hi


def _margin(lw, cond) -> tuple[ast.expr, frozenset]:
    """The margin of ``cond`` and the tile axes it varies along."""
    if isinstance(cond, ir.BinOp):
        (a, a_axes), (b, b_axes) = _margin(lw, cond.lhs), _margin(lw, cond.rhs)
        return P.call(_JOIN[cond.op], a, b), a_axes | b_axes
    op, lhs, rhs = cond.op, cond.lhs, cond.rhs
    if op in _FLIPPED:
        op, lhs, rhs = _FLIPPED[op], rhs, lhs
    difference = lw.cast(lw.ev(ir.BinOp("-", lhs, rhs, binary_dtype("-", lhs, rhs))), FLOAT32)
    offset = _OFFSET[op]
    return P.binop("+" if offset > 0 else "-", difference.node, P.const(abs(offset))), difference.axes
