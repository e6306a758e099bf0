"""TileLang's operand rules for tile ops: buffers, slices and start-index loads become Regions."""

from __future__ import annotations

from .. import ir
from ..ir.exprs import const_int, static


def extent_of(operand):
    """Buffer -> its shape; Region -> its extents; element Load -> None (start-index form)."""
    if isinstance(operand, ir.Buffer):
        return list(operand.shape)
    if isinstance(operand, ir.Region):
        return list(operand.extents)
    return None


def _is_one(extent) -> bool:
    return static(extent) == 1


def legalize_pairwise_extents(src: list, dst: list) -> tuple[list, list]:
    """TileLang's ``legalize_pairwise_extents``: broadcast unit dims so both sides tile alike."""
    src_non1 = sum(not _is_one(e) for e in src)
    dst_non1 = sum(not _is_one(e) for e in dst)
    if src_non1 == dst_non1:
        return list(src), list(dst)
    src, dst = list(src), list(dst)
    for k in range(1, min(len(src), len(dst)) + 1):
        a, b = src[-k], dst[-k]
        if _is_one(a) and not _is_one(b):
            src[-k] = b
        elif _is_one(b) and not _is_one(a):
            dst[-k] = a
        elif not _is_one(a) and not _is_one(b) and static(a) is not None and static(b) is not None and a != b:
            src[-k] = dst[-k] = max(static(a), static(b))
    return src, dst


def to_region(operand, extents: list) -> ir.Region:
    """Give an operand the (legalized) extents of a tile op, as TileLang's ``to_buffer_region``."""
    if isinstance(operand, ir.Buffer):
        return ir.Region(operand, tuple(const_int(0) for _ in operand.shape), tuple(operand.shape))
    if isinstance(operand, ir.Region):
        if len(extents) != operand.buffer.ndim:
            return operand
        clipped = []
        for own, wanted in zip(operand.extents, extents):
            a, b = static(own), static(wanted)
            clipped.append(min(a, b) if a is not None and b is not None else own)
        return ir.Region(operand.buffer, operand.starts, tuple(clipped))
    assert isinstance(operand, ir.Load)
    ndim = operand.buffer.ndim
    ext = list(extents)
    if len(ext) < ndim:
        ext = [1] * (ndim - len(ext)) + ext
    elif len(ext) > ndim:
        ext = ext[len(ext) - ndim :]
    return ir.Region(operand.buffer, tuple(operand.indices), tuple(ext))


def whole(buffer: ir.Buffer) -> ir.Region:
    return to_region(buffer, list(buffer.shape))
