"""Shared and fragment buffers used only by column blocks, split into one buffer per block.

DeepSeek's MLA kernels keep a query of 512 + 64 head dims in one ``Q_shared[H, 576]`` and use it
only as its two blocks: ``T.copy(Q[..., :D], Q_shared[:, :D])``, ``T.copy(Q[..., D:],
Q_shared[:, D:])`` and ``T.gemm(Q_shared[:, :D], ...)``.  A register tile is padded to a power of
two (576 -> 1024 columns), and the padded tile is past the one-hot limit, so the buffer went to
global scratch and every gemm read its block back from memory.  Split into ``Q_shared[H, 512]``
and ``Q_shared_1[H, 64]``, each block is a whole register tile, loaded once.

The rewrite is exact when (checked; any other buffer is left as it is):

- the buffer is a shared or fragment buffer allocated in the kernel, no view of it exists, and
  its last extent is static;
- every statement that names it is its ``Alloc`` or a ``T.copy`` whose region of it spans every
  other dim whole and a static column range of the last (a gemm's sub-region operand is such a
  copy already, frontend/rules_base._staged); no element access, no other tile operation;
- the column ranges used partition the columns into at least two blocks, and the blocks padded
  one by one take fewer columns than the buffer padded whole.

Each region then names one block, and each block is its own buffer of the same scope and dtype.
"""

from __future__ import annotations

import dataclasses

from .. import ir
from ..ir.exprs import static


def _pow2(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def _column_range(region: ir.Region) -> tuple[int, int] | None:
    """(start, extent) of a region's last dim when every other dim is whole and it is static."""
    buf = region.buffer
    for d in range(buf.ndim - 1):
        if static(region.starts[d]) != 0 or static(region.extents[d]) != buf.shape[d]:
            return None
    start, extent = static(region.starts[-1]), static(region.extents[-1])
    if not isinstance(start, int) or not isinstance(extent, int):
        return None
    return start, extent


def _blocks(buf: ir.Buffer, ranges: set) -> list[tuple[int, int]] | None:
    """The column blocks of ``buf`` when ``ranges`` partition its columns usefully."""
    width = buf.shape[-1]
    blocks = sorted(ranges)
    if len(blocks) < 2 or blocks[0][0] != 0:
        return None
    at = 0
    for start, extent in blocks:
        if start != at or extent <= 0:
            return None
        at += extent
    if at != width or sum(_pow2(e) for _, e in blocks) >= _pow2(width):
        return None
    return blocks


_BODIES = ("body", "then_body", "else_body")


def _buffers_in(value, depth: int = 0) -> set:
    """Every buffer an operand, expression or statement field names, however nested."""
    if isinstance(value, ir.Buffer):
        return {value} | ({value.alias_of} if value.alias_of is not None else set())
    if depth > 64 or isinstance(value, (str, int, float, bool, type(None), ir.Loc)):
        return set()
    if isinstance(value, dict):
        value = list(value.keys()) + list(value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        found: set = set()
        for v in value:
            found |= _buffers_in(v, depth + 1)
        return found
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _buffers_in([getattr(value, f.name) for f in dataclasses.fields(value)], depth + 1)
    return set()


def split_columns(kernel: ir.Kernel) -> tuple[ir.Kernel, dict]:
    """``kernel`` with its column-block buffers split (a new kernel; the input is not changed),
    and for each split buffer its blocks' buffers."""
    allocated: list = []
    ranges: dict = {}
    refused: set = set()
    for s in ir.walk(kernel.body):
        if isinstance(s, ir.Alloc):
            if s.buffer.scope in (ir.SHARED, ir.FRAGMENT) and s.init is None:
                allocated.append(s.buffer)
            continue
        if isinstance(s, ir.Copy):
            for operand in (s.src, s.dst):
                span = _column_range(operand) if isinstance(operand, ir.Region) else None
                if span is None:
                    refused.update(_buffers_in(operand))
                else:
                    ranges.setdefault(operand.buffer, set()).add(span)
                    refused.update(_buffers_in(list(operand.starts) + list(operand.extents)))
                    if operand.buffer.alias_of is not None:  # a view of a buffer keeps it whole
                        refused.add(operand.buffer.alias_of)
            continue
        # any other mention (element access, tile operation, pointer, view) keeps a buffer whole
        refused.update(_buffers_in([v for k, v in vars(s).items() if k not in _BODIES]))
    pieces: dict = {}
    for buf in allocated:
        if buf in refused or buf not in ranges or buf.alias_of is not None or not isinstance(buf.shape[-1], int):
            continue
        blocks = _blocks(buf, ranges[buf])
        if blocks is None:
            continue
        parts = {}
        for i, (start, extent) in enumerate(blocks):
            name = buf.name if i == 0 else f"{buf.name}_{i}"
            parts[start] = ir.Buffer(name, buf.scope, (*buf.shape[:-1], extent), buf.dtype, buf.loc)
        pieces[buf] = parts
    if not pieces:
        return kernel, {}
    return dataclasses.replace(kernel, body=_rewrite(kernel.body, pieces)), pieces


def _region(region, pieces: dict):
    if not isinstance(region, ir.Region) or region.buffer not in pieces:
        return region
    part = pieces[region.buffer][static(region.starts[-1])]
    return ir.Region(part, (*region.starts[:-1], ir.Const(0, ir.INT32)), tuple(region.extents))


def _rewrite(body: list, pieces: dict) -> list:
    out = []
    for s in body:
        if isinstance(s, ir.Alloc) and s.buffer in pieces:
            out.extend(ir.Alloc(s.loc, part) for part in pieces[s.buffer].values())
            continue
        if isinstance(s, ir.Copy):
            src, dst = _region(s.src, pieces), _region(s.dst, pieces)
            if src is not s.src or dst is not s.dst:
                s = dataclasses.replace(s, src=src, dst=dst)
        changes = {}
        for attr in ("body", "then_body", "else_body"):
            child = getattr(s, attr, None)
            if child:
                changes[attr] = _rewrite(child, pieces)
        out.append(dataclasses.replace(s, **changes) if changes else s)
    return out
