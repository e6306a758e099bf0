"""Packed fp4 (``T.float4_e2m1fn``) in global memory.

A tensor of fp4 is bytes holding two values each, the element of even index in the low nibble (as
TileLang's CUDA templates pack them).  Its buffer keeps the logical shape and strides (in elements),
so ``buf[idx]``'s byte is at ``offset // 2`` and its nibble at ``offset % 2``.  In registers an fp4
value is its 4-bit code (uint8); casts decode it to float (sign, 2-bit exponent, 1-bit mantissa:
0, 0.5, 1, 1.5, 2, 3, 4, 6) or encode a float to it (round to nearest even, saturating at 6, as
CUDA's ``cvt.rn.satfinite``).  A tile store writes each aligned pair of lanes (consecutive elements,
the first even) as one whole byte; a lone nibble belongs to a byte that other lanes or programs may
write at the same time, so it is two atomics (and, or) on the aligned 32-bit word holding the byte:
they touch disjoint bits, so any order gives the same bytes.

``T.int4`` / ``uint4`` tensors are packed the same way and use the same nibble loads and stores; in
registers their values are integers (int4 sign-extended to int8, uint4 in uint8).  As in TileLang's
CUDA (``tl_int4_packed_load`` gives an ``int``), arithmetic on them runs in int32 (uint4: uint32)
and its result stays there; a store to an int4 / uint4 buffer or a cast to one keeps the low 4
bits (sign-extended for int4), as ``tl_int4_packed_store`` does."""

from __future__ import annotations

import ast
import dataclasses

from .. import ir
from ..ir.exprs import static
from ..language.dtypes import DTYPES, is_packed, is_packed_fp4, is_packed_int4
from . import pyast as P
from .local_loops import vars_in
from .values import Tile, is_literal, literal_value

UINT8, INT8, INT32, UINT32 = DTYPES["uint8"], DTYPES["int8"], DTYPES["int32"], DTYPES["uint32"]
FLOAT32 = DTYPES["float32"]

HELPERS = {
    "_fp4_load": """
@triton.jit
def _fp4_load(base, offs, mask):
    # the 4-bit code of packed fp4 element ``offs`` (low nibble first)
    if mask is None:
        byte = tl.load(base + offs // 2).to(tl.uint8)
    else:  # out of bounds reads code 0 (0.0), as other loads read 0
        byte = tl.load(base + offs // 2, mask=mask, other=0).to(tl.uint8)
    return (byte >> ((offs % 2) * 4).to(tl.uint8)) & 15
""",
    "_fp4_store": """
@triton.jit
def _fp4_store(base, offs, code, mask):
    # write one nibble: clear it, then set it, in the aligned 32-bit word (other nibbles untouched)
    addr = (base + offs // 2).to(tl.int64)
    word = (addr - (addr & 3)).to(tl.pointer_type(tl.uint32))
    shift = ((addr & 3) * 8 + (offs % 2) * 4).to(tl.uint32)
    tl.atomic_and(word, ~(tl.full(shift.shape, 15, tl.uint32) << shift), mask=mask, sem="relaxed")
    bits = ((code + tl.zeros(shift.shape, tl.uint32)) & 15) << shift  # code may be a constant
    tl.atomic_or(word, bits, mask=mask, sem="relaxed")
""",
    "_fp4_decode": """
@triton.jit
def _fp4_decode(code):
    # e2m1: exponent 0 is subnormal (0 or 0.5), else (1 + m / 2) * 2 ** (e - 1)
    code = code.to(tl.int32)
    e = (code >> 1) & 3
    m = (code & 1).to(tl.float32)
    magnitude = tl.where(e == 0, m * 0.5, (1.0 + m * 0.5) * (1 << e).to(tl.float32) * 0.5)
    return tl.where((code & 8) != 0, -magnitude, magnitude)
""",
    "_fp4_encode": """
@triton.jit
def _fp4_encode(x):
    # round to nearest even on the grid 0, 0.5, 1, 1.5, 2, 3, 4, 6 (ties to the even code),
    # saturating at 6; NaN gives 6 as cvt.rn.satfinite does
    x = x.to(tl.float32)
    a = tl.abs(x)
    code = ((a > 0.25).to(tl.int32) + (a >= 0.75).to(tl.int32) + (a > 1.25).to(tl.int32)
            + (a >= 1.75).to(tl.int32) + (a > 2.5).to(tl.int32) + (a >= 3.5).to(tl.int32)
            + (a > 5.0).to(tl.int32))
    code = tl.where(x != x, 7, code)
    negative = (x.to(tl.int32, bitcast=True) < 0) & (x == x)
    return tl.where(negative, code | 8, code).to(tl.uint8)
""",
}


def _mask(mask: ast.expr | None) -> ast.expr:
    return mask if mask is not None else P.const(None)


def load(lw, buf, offs: ast.expr, mask: ast.expr | None, axes, packed: ast.expr | None = None) -> Tile:
    """``buf[idx]`` of packed ``buf``: the element's nibble (fp4: its code; int4: sign-extended).
    ``packed``: every pair of the last lane axis is one whole byte (``pairs_whole``), these are the bytes'
    offsets (``pair_offsets``): the bytes load as vectors and split into their nibbles, low first, where
    element offsets halved (``_fp4_load``) load each byte twice, one at a time."""
    if packed is not None:
        lanes = lw.scope.lanes
        shape = [lanes.padded[k] if k in axes else 1 for k in range(lanes.rank)]
        byte = lw.named(P.to(P.call("tl.load", P.binop("+", P.name(lw.pointer(buf)), packed),
                                    **({"mask": mask, "other": P.const(0)} if mask is not None else {})),
                             UINT8), "pair_byte")  # fmt: skip
        nibbles = P.call("tl.join", P.binop("&", byte, P.const(15)), P.binop(">>", byte, P.const(4)))
        node = P.call("tl.reshape", nibbles, P.list_(shape))
    else:
        lw.helpers.add("_fp4_load")
        node = P.call("_fp4_load", P.name(lw.pointer(buf)), offs, _mask(mask))
    if buf.dtype.name == "int4":  # bit 3 is the sign: 8..15 are -8..-1
        node = P.binop("-", P.binop("^", P.to(node, INT8), P.const(8)), P.const(8))
    return Tile(node, buf.dtype, axes)


def int_storage(dt):
    """The register dtype of int4 (int8) / uint4 (uint8) values."""
    return INT8 if dt.name == "int4" else UINT8


def wrap_value(value: int, dt) -> int:
    """An integer known when compiling, as int4 / uint4: its low 4 bits (sign-extended for int4)."""
    low = int(value) & 15
    return low - 16 if dt.name == "int4" and low >= 8 else low


def to_int4(lw, t: Tile, dt) -> Tile:
    """An int32 tile as int4 / uint4 values: the low 4 bits (sign-extended for int4)."""
    if is_literal(t):
        return Tile(P.const(wrap_value(literal_value(t.node), dt)), dt, t.axes)
    low = P.binop("&", t.node, P.const(15))
    if dt.name == "int4":
        low = P.binop("-", P.binop("^", low, P.const(8)), P.const(8))
    return Tile(P.to(low, int_storage(dt)), dt, t.axes)


def nibble(t: Tile) -> Tile:
    """An int4 / uint4 tile's stored nibble (uint8 0..15), what ``store`` writes."""
    if is_literal(t):
        return Tile(P.const(int(literal_value(t.node)) & 15), UINT8, t.axes)
    return Tile(P.to(P.binop("&", t.node, P.const(15)), UINT8), UINT8, t.axes)


def pairs_whole(lw, buf, idx: list, idx_ir: list) -> bool:
    """Does every aligned pair of the store's last lane axis write one whole byte, for every block?  So when
    that axis walks the buffer's contiguous last dim (index ``X + j``, ``X`` even), every other dim's offset
    is even, and nothing masks the axis (its extent a power of two, its bound proved, no condition on it):
    TileLang's quantization kernels (``T.copy(y_shared, quant[bx * 32, by * 32])``) need no nibble fallback."""
    lanes = lw.scope.lanes
    if lanes is None or lanes.padded[-1] < 2 or lanes.extents[-1] != lanes.padded[-1]:
        return False
    k = lanes.rank - 1
    var = lanes.vars[k]
    if k in lw.cond_axes() or len(idx_ir) != len(buf.shape) or any(e is None for e in idx_ir):
        return False
    for d, (t, e, stride) in enumerate(zip(idx, idx_ir, buf.strides)):
        stride = static(stride)
        if var not in vars_in([e]):
            if k in t.axes or stride is None or not (stride % 2 == 0 or _even(e)):
                return False
            continue
        rest = _minus_var(e, var)
        if d != len(idx_ir) - 1 or stride != 1 or rest is None or not _even(rest):
            return False
        if not (lw.scope.ranges.below(e, buf.shape[d]) and lw.scope.ranges.nonneg(e)):
            return False  # a bound on the axis would mask one lane of a pair
    return True


def _minus_var(e, var):
    """``e`` less the variable ``var`` where ``e`` is ``var``, ``X + var`` or ``var + X`` (X free of it); else None."""
    if isinstance(e, ir.VarRef) and e.var is var:
        return ir.Const(0, DTYPES["int32"])
    if isinstance(e, ir.BinOp) and e.op == "+":
        for a, b in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
            if isinstance(b, ir.VarRef) and b.var is var and var not in vars_in([a]):
                return a
    return None


def _even(e) -> bool:
    """Is the integer ``e`` even, whatever the block and lane (a product with an even constant, a sum of even terms)?"""
    if isinstance(e, ir.Const):
        return isinstance(e.value, int) and e.value % 2 == 0
    if isinstance(e, ir.Cast):
        return _even(e.value)
    if isinstance(e, ir.BinOp):
        if e.op in ("+", "-"):
            return _even(e.lhs) and _even(e.rhs)
        if e.op == "*":
            return _even(e.lhs) or _even(e.rhs)
        if e.op == "<<":
            return static(e.rhs) is not None and static(e.rhs) >= 1
    return False


def pair_offsets(lw, buf, idx: list, idx_ir: list) -> ast.expr:
    """The byte offsets of a whole-pair store (``pairs_whole``): the offset of the row and of the last
    index's even start, halved, plus the pair's number along the last lane axis.  Triton sees them
    contiguous and stores bytes as vectors; the low lanes' element offsets halved it does not."""
    lanes = lw.scope.lanes
    rank = lanes.rank
    start = _minus_var(idx_ir[-1], lanes.vars[rank - 1])
    row, _, _ = lw.global_address(buf, [*idx[:-1], lw.ev(start)], [*idx_ir[:-1], start])
    pair = P.expand(P.call("tl.arange", 0, lanes.padded[rank - 1] // 2), rank - 1, rank)
    return P.binop("+", P.binop("//", row, P.const(2)), pair)


def store(lw, buf, offs: ast.expr, code: Tile, mask, axes=frozenset(), packed=None) -> None:
    """``buf[idx] = code``.  A tile whose last axis runs over consecutive elements writes each aligned
    pair of lanes as one whole byte; the other lanes (an odd start, a tile edge, a masked partner)
    write their nibble with ``_fp4_store``'s atomics.  ``packed``: every pair is known whole
    (``pairs_whole``), these are the bytes' offsets (``pair_offsets``): the byte stores alone, under the
    rows' mask (pairs_whole proved none on the last axis)."""
    base = P.name(lw.pointer(buf))
    lanes = lw.scope.lanes
    rank = lanes.rank if lanes is not None else 0
    if not rank or rank - 1 not in axes or lanes.padded[rank - 1] < 2:
        lw.helpers.add("_fp4_store")
        lw.emit(P.expr_stmt(P.call("_fp4_store", base, offs, code.node, _mask(mask))))
        return
    shape = [lanes.padded[k] if k in axes else 1 for k in range(rank)]
    pairs = [*shape[:-1], shape[-1] // 2, 2]

    def split(node, dt, hint):
        if dt.kind == "bool":  # a mask: broadcast with `&` (a sum of booleans is an integer)
            ones = P.binop("==", P.call("tl.zeros", P.list_(shape), P.dtype(DTYPES["int32"])), P.const(0))
            full = P.binop("&", ones, node)
        else:
            full = P.binop("+", node, P.call("tl.zeros", P.list_(shape), P.dtype(dt)))
        lo, hi = lw.names.fresh(f"{hint}_lo"), lw.names.fresh(f"{hint}_hi")
        target = ast.Tuple([P.store_name(lo), P.store_name(hi)], ast.Store())
        lw.emit(ast.Assign([target], P.call("tl.split", P.call("tl.reshape", full, P.list_(pairs)))))
        return P.name(lo), P.name(hi)

    code_lo, code_hi = split(code.node, UINT8, "pair_code")
    byte = P.binop("|", code_lo, P.binop("<<", code_hi, P.const(4)))
    if packed is not None:
        store = P.call("tl.store", P.binop("+", base, packed), P.to(byte, UINT8))
        if mask is not None:
            store.keywords.append(ast.keyword("mask", mask))
        lw.emit(P.expr_stmt(store))
        return
    offs_lo, offs_hi = split(offs, DTYPES["int32"], "pair_offs")
    lw.helpers.add("_fp4_store")
    whole = P.and_all([
        P.binop("==", offs_hi, P.binop("+", offs_lo, P.const(1))),
        P.binop("==", P.binop("%", offs_lo, P.const(2)), P.const(0)),
    ])  # fmt: skip
    if mask is not None:
        mask_lo, mask_hi = split(mask, DTYPES["bool"], "pair_mask")
        whole = P.and_all([mask_lo, mask_hi, whole])
    whole = P.name(lw.assign("whole_byte", whole))
    lw.emit(P.expr_stmt(P.call("tl.store", P.binop("+", base, P.binop("//", offs_lo, P.const(2))), P.to(byte, UINT8),
                               mask=whole)))  # fmt: skip
    # the lanes of the pairs not written whole: their nibbles
    written = P.call("tl.reshape", P.call("tl.join", whole, whole), P.list_(shape))
    rest = P.binop("==", written, P.const(0))
    rest = P.and_all([mask, rest]) if mask is not None else rest
    lw.emit(P.expr_stmt(P.call("_fp4_store", base, offs, code.node, rest)))


_GRID = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def encode_value(x: float) -> int:
    """The fp4 code of a number known when compiling (as ``_fp4_encode``)."""
    x = float(x)
    if x != x:
        return 7
    a = abs(x)
    code = sum((a > 0.25, a >= 0.75, a > 1.25, a >= 1.75, a > 2.5, a >= 3.5, a > 5.0))
    return code | 8 if str(x).startswith("-") else code


def literal(value, dtype, axes=frozenset()) -> Tile:
    """A constant of fp4 ``dtype``: its code."""
    return Tile(P.const(encode_value(value)), dtype, axes)


def decode(lw, t: Tile) -> Tile:
    """An fp4 code tile as float32."""
    if is_literal(t):
        code = int(literal_value(t.node))
        value = _GRID[code & 7]
        return Tile(P.const(-value if code & 8 else value), FLOAT32, t.axes)
    lw.helpers.add("_fp4_decode")
    return Tile(P.call("_fp4_decode", t.node), FLOAT32, t.axes)


def encode(lw, t: Tile) -> Tile:
    """A numeric tile as fp4 codes (an fp4 dtype, held as uint8)."""
    if is_literal(t) and isinstance(literal_value(t.node), (int, float)):
        return Tile(P.const(encode_value(literal_value(t.node))), DTYPES["uint8"], t.axes)
    lw.helpers.add("_fp4_encode")
    return Tile(P.call("_fp4_encode", t.node), DTYPES["uint8"], t.axes)


_ARITH = (ir.BinOp, ir.Compare, ir.UnaryOp, ir.Call)
_BITWISE = ("&", "|", "^", "<<", ">>", "~")


def _operands(e) -> list[str]:
    return ["operand"] if isinstance(e, ir.UnaryOp) else ["args"] if isinstance(e, ir.Call) else ["lhs", "rhs"]


def _is_packed(x) -> bool:
    return is_packed(getattr(x, "dtype", None))


def touches(e) -> bool:
    """Whether ``e`` is arithmetic on fp4 / int4 values (or giving one): it must not run on the codes
    (fp4) or in 8 bits (int4)."""
    if not isinstance(e, _ARITH):
        return False
    values = e.args if isinstance(e, ir.Call) else [getattr(e, f) for f in _operands(e)]
    return _is_packed(e) or any(_is_packed(v) for v in values)


def widened(e, error):
    """``e`` computed on fp4 operands decoded to float32 (an fp4 result encoded back: TileLang computes
    on fp4 values through float conversions too) and on int4 / uint4 operands as int32 / uint32
    (the result stays there, as C's integer promotion leaves TileLang's)."""
    fp4 = [x for x in (e.args if isinstance(e, ir.Call) else [getattr(e, f) for f in _operands(e)]) if
           is_packed_fp4(getattr(x, "dtype", None))]  # fmt: skip
    if getattr(e, "op", None) in _BITWISE and (fp4 or is_packed_fp4(e.dtype)):
        raise error(f"bitwise '{e.op}' on fp4 values: T.reinterpret them as uint8 first")

    def wide(x):
        dt = getattr(x, "dtype", None)
        return ir.Cast(x, FLOAT32 if is_packed_fp4(dt) else _wide_int(dt)) if is_packed(dt) else x

    changes = {"args": tuple(wide(a) for a in e.args)} if isinstance(e, ir.Call) else {
        f: wide(getattr(e, f)) for f in _operands(e)}  # fmt: skip
    if is_packed_fp4(e.dtype):
        changes["dtype"] = FLOAT32
        return ir.Cast(dataclasses.replace(e, **changes), e.dtype)
    if is_packed_int4(e.dtype):
        changes["dtype"] = _wide_int(e.dtype)
    return dataclasses.replace(e, **changes)


def _wide_int(dt):
    return INT32 if dt.name == "int4" else UINT32


# statements that compute on a buffer's values as a whole (not through loads, stores and casts)
_WHOLE_BUFFER_OPS = (ir.Gemm, ir.Reduce, ir.Scan, ir.Atomic, ir.ThreadAllReduce)


def _int4_gemm_operand(s, buf) -> bool:
    # int4 A/B tiles hold their values as int8 in registers (sign-extended): an int8 tensor-core dot
    return isinstance(s, ir.Gemm) and buf is not s.c.buffer and is_packed_int4(buf.dtype)


def check_stmt(s, error) -> None:
    """Refuse fp4 buffers in statements that would compute on their codes."""
    if not isinstance(s, _WHOLE_BUFFER_OPS):
        return
    for field in dataclasses.fields(s):
        value = getattr(s, field.name)
        buf = value if isinstance(value, ir.Buffer) else getattr(value, "buffer", None)
        if isinstance(buf, ir.Buffer) and is_packed(buf.dtype) and not _int4_gemm_operand(s, buf):
            what = type(s).__name__
            kind, into = ("fp4", "float16/float32") if is_packed_fp4(buf.dtype) else (buf.dtype.name, "int8/int32")
            raise error(
                f"{kind} buffer '{buf.name}' in a {what} statement: tile2triton computes on {kind} values only "
                f"element by element; T.copy it into a {into} buffer first"
            )


__all__ = ["HELPERS", "decode", "encode", "is_packed", "is_packed_fp4", "is_packed_int4", "load", "store"]
