"""An index of a register buffer's dim as the digits of a mixed radix of lane variables
(``k * 4 + j``, ``k // 4 * 2 + 1``, ``i_s * 64 + i_k`` through lets): what lets a read or write at
such an index be a reshape and a permute of the tile (``registers.split_read`` / ``split_write``,
``TILE2TRITON_BLOCK_SLICES`` and ``TILE2TRITON_DIGIT_READS``) instead of a gather or a scatter."""

from __future__ import annotations

from .. import ir
from ..ir import INT32
from . import pyast as P
from .values import AtDim, LaneDim, LaneField, Lowerer, Tile


def radix_parts(lw: Lowerer, e: ir.Expr, size: int, lanes, blocks: bool = False) -> list | None:
    """An index of a dim of ``size`` elements as the digits of a mixed radix, outermost first:
    ``LaneDim`` for a lane variable whose extent is its digit's, ``AtDim`` for a lane-independent
    outermost digit.  ``k * 4 + j`` (j of extent 4, k of extent size / 4) is [k, j].  None when
    ``e`` is not such a sum (an offset, a coefficient that is not the product of the inner extents).

    ``blocks``: lane digits that cover only part of the dim (``i`` of extent 4 over 64 rows, or
    ``i + 8``) are its inner digits, and the block they read (``c // 4`` for a constant offset ``c``
    that is a multiple of their extents) the outermost, so ``acc[:4, :]`` is a reshape to
    (16, 4, ...) and a select over 16 blocks instead of a one-hot over 64 rows for each of 4 lanes."""
    offset = 0
    if blocks:
        e, offset = constant_offset(e)
    terms = scaled_terms(e)
    if terms is None:
        return None
    by_coeff = {}
    for coeff, term in terms:
        if coeff <= 0 or coeff in by_coeff:
            return None
        by_coeff[coeff] = term
    parts, stride = [], 1
    coeffs = sorted(by_coeff)
    for n, coeff in enumerate(coeffs):
        term, last = by_coeff[coeff], n == len(coeffs) - 1
        if coeff != stride:
            return None
        k = lanes.vars.index(term.var) if isinstance(term, ir.VarRef) and term.var in lanes.vars else None
        if k is None:  # a lane-independent digit: only the outermost, with an extent dividing the dim
            t = lw.ev(term)
            if t.axes or not last or size % stride:
                return None
            parts.append(AtDim(t, size // stride))
            continue
        extent = lanes.extents[k]
        partial = blocks and last and extent * stride != size
        if last and not partial and extent * stride != size:
            return None
        if (not last or partial) and (extent & (extent - 1) or extent != lanes.padded[k]):
            return None
        parts.append(LaneDim(k))
        stride *= extent
        if partial:  # the lanes read one block of `stride` elements: the outermost digit picks it
            if size % stride or offset % stride or not 0 <= offset < size:
                return None
            parts.append(AtDim(Tile(P.const(offset // stride), INT32), size // stride))
            offset = 0
    if offset:  # an offset only where it names a block
        return None
    return parts[::-1]


def lane_digits(fields: list, padded) -> dict | None:
    """Lane axis -> its digits, outermost first: the ``LaneField``s of it in ``fields`` and, above,
    between and below them, the extents (ints) of the digits none of them is; None where two fields
    of a lane overlap (``X[k, k % 4]``)."""
    layout = {}
    for f in sorted(fields, key=lambda f: (f.axis, -f.low)):
        layout.setdefault(f.axis, []).append(f)
    for k, mine in layout.items():
        top, laid = padded[k], []  # the lane's digits not laid out yet: [1, top)
        for f in mine:
            if f.low * f.size > top:
                return None
            if f.low * f.size < top:
                laid.append(top // (f.low * f.size))
            laid.append(f)
            top = f.low
        if top > 1:
            laid.append(top)
        layout[k] = laid
    return layout


def field_parts(lw: Lowerer, e: ir.Expr, size: int, lanes, fields_only: bool = True) -> list | None:
    """``radix_parts`` with digit fields of lane variables among the digits (``LaneField``):
    ``j // 2`` over a dim of n / 2 elements is [j's field above its lowest bit]; ``k // 4 * 2 + 1``
    over n / 2 elements is [k's field above its two lowest bits, the constant 1 of extent 2].
    A constant may be the innermost digit or name the block the lane digits read (outermost), a
    lane-independent term the outermost digit.  None when ``e`` is no such sum, or (``fields_only``)
    has no field (``radix_parts`` serves whole lane variables)."""
    e, offset = constant_offset(e)
    terms = scaled_terms(e)
    if terms is None or offset < 0 or len({c for c, _ in terms}) != len(terms):
        return None
    parts, stride = [], 1
    ordered = sorted(terms, key=lambda term: term[0])
    for n, (coeff, term) in enumerate(ordered):
        if coeff != stride:  # a constant innermost digit below the lowest term
            if stride != 1 or coeff <= offset or size % coeff:
                return None
            parts.append(AtDim(Tile(P.const(offset), INT32), coeff))
            stride, offset = coeff, 0
        field = lane_field(term, lanes, lw.scope.ranges.defs)
        if field is None:  # a lane-independent digit: only the outermost, with an extent dividing the dim
            t = lw.ev(term)
            if t.axes or n != len(ordered) - 1 or size % stride:
                return None
            parts.append(AtDim(t, size // stride))
            stride = size
            continue
        parts.append(field)
        stride *= field.size
    if offset:  # the block the digits read
        if size % stride or offset % stride or offset >= size:
            return None
        parts.append(AtDim(Tile(P.const(offset // stride), INT32), size // stride))
        stride = size
    if stride != size:
        return None
    if fields_only and not any(isinstance(p, LaneField) and p.size != lanes.padded[p.axis] for p in parts):
        return None
    return parts[::-1]


def lane_field(e: ir.Expr, lanes, lets: dict, depth: int = 0) -> LaneField | None:
    """``e`` as a digit field of a lane variable of a power-of-two extent: ``k`` (all of its
    digits), ``k // c`` or ``k >> s`` (those above c), ``k % c`` or ``k & (c - 1)`` (those below c),
    and their compositions, c dividing the field, also through once-bound lets (``lets``: ``i_s,
    i_k = i // 64, i % 64``); None otherwise."""
    if depth > 8:
        return None
    if isinstance(e, ir.VarRef):
        if e.var in lets:
            return lane_field(lets[e.var], lanes, lets, depth + 1)
        if e.var not in lanes.vars:
            return None
        k = lanes.vars.index(e.var)
        return LaneField(k, 1, lanes.padded[k]) if lanes.extents[k] == lanes.padded[k] else None
    if not (isinstance(e, ir.BinOp) and isinstance(e.rhs, ir.Const) and type(e.rhs.value) is int):
        return None
    op, c = e.op, e.rhs.value
    if op == ">>" and 0 <= c < 31:
        op, c = "//", 1 << c
    elif op == "&" and c > 0 and c & (c + 1) == 0:
        op, c = "%", c + 1
    if op not in ("//", "%") or c <= 0:
        return None
    inner = lane_field(e.lhs, lanes, lets, depth + 1)
    if inner is None or inner.size % c:
        return None
    if op == "//":
        return LaneField(inner.axis, inner.low * c, inner.size // c)
    return LaneField(inner.axis, inner.low, c)


def constant_offset(e: ir.Expr) -> tuple[ir.Expr, int]:
    """``e`` as (an expression, an integer added to it): ``i + 8`` is (i, 8); ``i`` is (i, 0)."""
    if isinstance(e, ir.BinOp) and e.op == "+":
        for const, other in ((e.rhs, e.lhs), (e.lhs, e.rhs)):
            if isinstance(const, ir.Const) and isinstance(const.value, int) and not isinstance(const.value, bool):
                return other, const.value
    return e, 0


def scaled_terms(e: ir.Expr, scale: int = 1, depth: int = 0) -> list | None:
    """``e`` as [(integer coefficient, expression)]: sums of scaled variables and lane-independent
    products; None for a constant term or anything else."""
    if depth > 16 or e.dtype.kind != "int":
        return None
    if isinstance(e, ir.BinOp) and e.op == "+":
        a, b = scaled_terms(e.lhs, scale, depth + 1), scaled_terms(e.rhs, scale, depth + 1)
        return None if a is None or b is None else a + b
    if isinstance(e, ir.BinOp) and e.op == "*":
        for factor, other in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
            if isinstance(factor, ir.Const) and isinstance(factor.value, int) and not isinstance(factor.value, bool):
                return scaled_terms(other, scale * factor.value, depth + 1)
    if isinstance(e, ir.Const):
        return None
    return [(scale, e)]
