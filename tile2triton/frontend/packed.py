"""Packed values of TileLang's explicit vector memory ops (``T.ldg32/64/128/256``, ``T.lds*``, ``T.stg*``,
``T.sts*``) and of ``T.reinterpret`` to a vector dtype (``T.float32x4``).

Triton vectorizes memory accesses itself, so such an op means only its data movement: the N bits at
an element are loaded or stored as the N / bits consecutive elements of the last axis.  A packed value
is kept element-wise in the binder (a ``Vector``: one scalar expression per lane, named by ``Let`` so
the load happens where the call stands); it converts to 32-bit words (how TileLang types the loaded
value: uint32, uint32x2, ...) and back to elements of any dtype of 8, 16, 32 or 64 bits."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .. import ir
from ..ir.exprs import as_expr
from ..language.dtypes import DTYPES, DType

UINT = {8: DTYPES["uint8"], 16: DTYPES["uint16"], 32: DTYPES["uint32"], 64: DTYPES["uint64"]}
_VECTOR_NAME = re.compile(r"^(\w+?)x(\d+)$")


@dataclass(frozen=True)
class Vector:
    """A packed value: ``lanes`` scalar expressions of ``dtype``."""

    lanes: tuple
    dtype: DType


def vector_dtype(dtype) -> tuple[DType, int] | None:
    """``float32x4`` -> (float32, 4); None for a scalar dtype."""
    m = _VECTOR_NAME.match(str(getattr(dtype, "name", dtype)))
    if m is None or m.group(1) not in DTYPES:
        return None
    return DTYPES[m.group(1)], int(m.group(2))


def _check_bits(b, dtype: DType, node) -> None:
    if dtype.bits not in UINT or dtype.name == "bool":
        raise b.error(f"packed values of {dtype.name} are not supported (8, 16, 32 or 64-bit elements)", node)


def _u(value: int, dtype: DType) -> ir.Const:
    return ir.Const(value, dtype)


def to_words(b, lanes, dtype: DType, node) -> list:
    """The lanes' bits as uint32 words (lane 0 in the low bits, as in memory on a little-endian GPU)."""
    _check_bits(b, dtype, node)
    u32, bits = UINT[32], dtype.bits
    raw = [ir.Call("bitcast", (as_expr(x),), UINT[bits]) if dtype != UINT[bits] else as_expr(x) for x in lanes]
    if bits == 32:
        return raw
    if bits == 64:
        words = []
        for x in raw:
            words.append(ir.Cast(ir.BinOp("&", x, _u(0xFFFFFFFF, UINT[64]), UINT[64]), u32))
            words.append(ir.Cast(ir.BinOp(">>", x, _u(32, UINT[64]), UINT[64]), u32))
        return words
    per = 32 // bits
    if len(raw) % per:
        raise b.error(f"{len(raw)} {dtype.name} lanes do not fill whole 32-bit words", node)
    words = []
    for w in range(len(raw) // per):
        word = None
        for k in range(per):
            part = ir.Cast(raw[w * per + k], u32)
            if k:
                part = ir.BinOp("<<", part, _u(bits * k, u32), u32)
            word = part if word is None else ir.BinOp("|", word, part, u32)
        words.append(word)
    return words


def from_words(b, words, dtype: DType, node) -> list:
    """uint32 ``words`` read as elements of ``dtype``."""
    _check_bits(b, dtype, node)
    bits = dtype.bits

    def typed(x, raw_dtype):
        return x if dtype == raw_dtype else ir.Call("bitcast", (x,), dtype)

    if bits == 32:
        return [typed(w, UINT[32]) for w in words]
    if bits == 64:
        if len(words) % 2:
            raise b.error(f"{len(words)} 32-bit words do not fill whole {dtype.name} elements", node)
        u64 = UINT[64]
        pairs = zip(words[0::2], words[1::2])
        return [
            typed(ir.BinOp("|", ir.Cast(lo, u64), ir.BinOp("<<", ir.Cast(hi, u64), _u(32, u64), u64), u64), u64)
            for lo, hi in pairs
        ]
    u32, out = UINT[32], []
    for w in words:
        for k in range(32 // bits):
            shifted = ir.BinOp(">>", w, _u(bits * k, u32), u32) if k else w
            field = ir.BinOp("&", shifted, _u((1 << bits) - 1, u32), u32)
            out.append(typed(ir.Cast(field, UINT[bits]), UINT[bits]))
    return out


def elements(b, ref, count: int, what: str, node) -> list:
    """``count`` consecutive elements of the last axis, from ``x[i]``, ``x[i:j]`` or a whole buffer:
    (buffer, list of index tuples)."""
    if isinstance(ref, ir.Buffer):
        ref = ir.Region(ref, tuple(ir.Const(0, ir.INT32) for _ in ref.shape), tuple(ref.shape))
    if isinstance(ref, ir.Load):
        buffer, starts = ref.buffer, tuple(ref.indices)
    elif isinstance(ref, ir.Region):
        buffer, starts = ref.buffer, tuple(ref.starts)
        inner = 1
        for e in ref.extents[:-1]:
            inner *= e if isinstance(e, int) else 2  # a run-time extent is more than one element
        if inner != 1:
            raise b.error(f"{what} takes consecutive elements of the last axis (a region of one row)", node)
    else:
        raise b.error(f"{what} takes a buffer element or slice: x[i] or x[i:i+n]", node)
    last = as_expr(starts[-1])
    index = [
        (*starts[:-1], last if k == 0 else ir.BinOp("+", last, ir.Const(k, last.dtype), last.dtype))
        for k in range(count)
    ]
    return buffer, index


def name_lanes(b, lanes, node, hint: str) -> tuple:
    """Each lane bound to a fresh name here (the load happens where the call stands)."""
    named = []
    for x in lanes:
        var = ir.Var(b.fresh_name(hint), x.dtype, "let")
        b.emit(ir.Let(b.loc(node), var, x))
        named.append(ir.VarRef(var))
    return tuple(named)


def load(b, src, bits: int, pred, what: str, node):
    """``T.ldgN`` / ``T.ldsN``: the N bits at ``src`` as uint32 words (a uint32 for N = 32)."""
    buffer = src.buffer if isinstance(src, (ir.Load, ir.Region)) else src
    if not isinstance(buffer, ir.Buffer):
        raise b.error(f"{what} takes a buffer element or slice: x[i] or x[i:i+n]", node)
    _check_bits(b, buffer.dtype, node)
    count = max(1, bits // buffer.dtype.bits)
    buffer, index = elements(b, src, count, what, node)
    words = to_words(b, [ir.Load(buffer, idx) for idx in index], buffer.dtype, node)
    if len(words) * 32 != bits:
        raise b.error(f"{what} of {buffer.dtype.name} elements: {bits} bits are not whole elements", node)
    if pred is not None:  # a skipped load reads 0
        words = [ir.Select(as_expr(pred), w, ir.Const(0, UINT[32]), UINT[32]) for w in words]
    words = name_lanes(b, words, node, "packed")
    return words[0] if bits == 32 else Vector(words, UINT[32])


def store(b, dst, value, bits: int | None, pred, what: str, node) -> None:
    """``T.stgN`` / ``T.stsN`` / ``x[i:j] = vector``: the bits of ``value`` into consecutive elements."""
    buffer = dst.buffer if isinstance(dst, (ir.Load, ir.Region)) else dst
    if not isinstance(buffer, ir.Buffer):
        raise b.error(f"{what} takes a buffer element or slice: x[i] or x[i:i+n]", node)
    lanes = list(value.lanes) if isinstance(value, Vector) else [as_expr(value)]
    lane_dtype = value.dtype if isinstance(value, Vector) else lanes[0].dtype
    have = len(lanes) * lane_dtype.bits
    if bits is not None and have != bits:
        raise b.error(f"{what} stores {bits} bits; the value has {have}", node)
    if lane_dtype != buffer.dtype:  # the same bits, as elements of the buffer's dtype
        lanes = from_words(b, to_words(b, lanes, lane_dtype, node), buffer.dtype, node)
    buffer, index = elements(b, dst, len(lanes), what, node)
    stores = [ir.Store(b.loc(node), buffer, idx, x) for idx, x in zip(index, lanes)]
    if pred is not None:
        b.emit(ir.If(b.loc(node), as_expr(pred), stores, []))
        return
    for s in stores:
        b.emit(s)


def reinterpret(b, value, dtype, node):
    """``T.reinterpret`` with a packed value or a vector dtype: the same bits as lanes of another dtype."""
    target = vector_dtype(dtype)
    if isinstance(value, Vector):
        words = to_words(b, value.lanes, value.dtype, node)
    else:
        value = as_expr(value)
        words = to_words(b, [value], value.dtype, node)
    if target is None:
        if not isinstance(dtype, DType) and str(dtype) not in DTYPES:
            raise b.error(f"T.reinterpret to {dtype!r}", node)
        scalar = dtype if isinstance(dtype, DType) else DTYPES[str(dtype)]
        lanes = from_words(b, words, scalar, node)
        if len(lanes) != 1:
            raise b.error(f"T.reinterpret of {len(words) * 32} bits to one {scalar.name}", node)
        return lanes[0]
    base, count = target
    lanes = from_words(b, words, base, node)
    if len(lanes) != count:
        raise b.error(f"T.reinterpret of {len(words) * 32} bits to {count} x {base.name}", node)
    return Vector(tuple(lanes), base)
