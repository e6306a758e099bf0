"""Tensor-descriptor (TMA) loads for ``T.copy`` of a global box into a register tile.

Inside a loop, a copy of a rectangular global region into a whole shared/fragment buffer is what
Hopper's bulk tensor copy engine does: ``tl.make_tensor_descriptor`` once per program (hoisted to
the top of the kernel) and ``desc.load([starts])`` per iteration.  The hardware zero-fills the
parts of the box outside the tensor, which is what the masked-pointer path's ``other=0`` does.

The descriptor needs 16-byte aligned strides (checked here, statically) and a 16-byte aligned
base address (checked by the runtime per call: a misaligned tensor runs the pointer-path variant).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import ir
from ..ir.exprs import static
from . import e8m0
from . import pyast as P
from .values import Lowerer, Tile, ir_expr, safe_values

MAX_BOX = 256  # elements per box dimension (cuTensorMapEncodeTiled's limit)
MAX_RANK = 5


@dataclass
class DescriptorState:
    """The tensor descriptors of the kernel being lowered (``lw.descriptors``)."""

    by_key: dict = field(default_factory=dict)  # (global Buffer, block shape) -> descriptor name
    prologue: list = field(default_factory=list)  # their creation, hoisted to the top of the kernel
    host: list = field(default_factory=list)  # (parameter name, Buffer, box) of those made on the host
    aligned: set = field(default_factory=set)  # global Buffers whose base must be 16-byte aligned
    written: set | None = None  # global tensors the kernel writes (root buffers), once computed


def descriptor_load(lw: Lowerer, src: ir.Region, dst: ir.Region, stage: bool = False) -> Tile | None:
    """``src`` loaded through a tensor descriptor as a tile over ``dst``'s non-unit extents (the
    lane axes of the copy's element space), or None when the copy does not qualify.  ``stage``:
    ``dst`` is one whole stage of a ring whose stages are forwarded as tiles (tile_ops._stage_key),
    so the loaded box is that stage's tile as it is."""
    if not _qualifies(lw, src, dst, stage):
        return None
    buf = src.buffer
    box = tuple(static(e) for e in src.extents)
    desc = _descriptor(lw, buf, box)
    starts = [lw.scalar(e, "a copy offset").node for e in src.starts]
    node = P.call(P.attr(desc, "load"), P.list_(starts))
    kept = [e for e in box if e != 1]
    if len(kept) != len(box):
        node = P.call("tl.reshape", node, P.list_([P.const(e) for e in kept]))
    if lw.storage_dtype(buf.dtype) != buf.dtype:
        node = P.to(node, lw.storage_dtype(buf.dtype))
    return Tile(node, buf.dtype, frozenset(range(len(kept))))


def _qualifies(lw: Lowerer, src: ir.Region, dst: ir.Region, stage: bool) -> bool:
    buf = src.buffer
    if not lw.options.tensor_descriptors or lw.scope.loop_depth == 0 or lw.scope.lanes is not None or lw.scope.conds:
        return False
    if lw.scope.load_guard is not None:  # a guarded copy (speculate.py): a box load has no mask
        return False
    if lw.options.tma_pipelined_only and not lw.scope.loop_tma:
        return False  # a synchronous TMA load into registers (rules._tma_pays)
    trips = lw.scope.loop_trips
    # a descriptor built in the kernel costs every program a tensormap write and fence that few
    # iterations do not repay; one made on the host costs the program nothing
    if trips is not None and trips < lw.options.tma_min_trips and not _host_made(lw, buf):
        return False
    if buf.scope != ir.GLOBAL or dst.buffer.scope == ir.GLOBAL or buf.dtype != buf.root.dtype:
        return False
    if buf.root.address is not None:  # T.make_tensor: a pointer computed in the kernel, after the prologue
        return False
    if buf.dtype.kind == "bool" or buf.dtype.bits not in (8, 16, 32, 64) or not 1 <= buf.ndim <= MAX_RANK:
        return False
    if e8m0.is_e8m0(buf.dtype):  # its bytes are decoded on load (global_load)
        return False
    if buf.root in _written_globals(lw):  # a TMA read after a store would need a proxy fence
        return False
    if buf.root in safe_values(lw):  # TMA fills out-of-bounds elements with 0
        return False
    rb = lw.regs.get(dst.buffer)
    if rb is None or rb.lanes is not None or rb.view_of is not None:
        return False
    buffer_shape = tuple(static(d) for d in dst.buffer.shape)
    if stage:  # one whole stage of a forwarded ring (unpadded): the box is the stage's tile
        if tuple(rb.local_shape) != buffer_shape:
            return False
        dst_shape = tuple(static(e) for e in dst.extents)
    else:  # the whole destination buffer, unpadded: the loaded box is the register tile as it is
        dst_shape = buffer_shape
        if any(static(s) != 0 for s in dst.starts) or tuple(static(e) for e in dst.extents) != dst_shape:
            return False
        if tuple(rb.local_shape) != tuple(d for d in dst_shape if d != 1) and tuple(rb.local_shape) != dst_shape:
            return False
    box = [static(e) for e in src.extents]
    if any(e is None or e & (e - 1) or e > MAX_BOX for e in box):
        return False
    if [e for e in box if e != 1] != [e for e in dst_shape if e != 1]:
        return False
    if not lw.options.tma_vectors and sum(e != 1 for e in box) < 2:
        return False
    nbytes = buf.dtype.bits // 8
    if box[-1] * nbytes < 16:
        return False
    # TMA writes shared memory at 128-byte aligned addresses; a pipelined loop keeps one box per stage
    # back to back, so a box of another size puts stage 1 off that alignment (the H200 reported a
    # misaligned shared address for a 64-byte [1, 1, 16] float box): those load through pointers
    if math.prod(box) * nbytes % 128:
        return False
    strides = [static(s) for s in buf.strides]
    if strides[-1] != 1 or any(s is None or (s * nbytes) % 16 for s in strides[:-1]):
        return False
    return True


def _host_made(lw: Lowerer, buf: ir.Buffer) -> bool:
    """Is ``buf``'s descriptor made on the host (TILE2TRITON_HOST_DESCRIPTORS: a kernel parameter)?"""
    return lw.options.host_descriptors and any(buf is p for p in lw.params)


def _descriptor(lw: Lowerer, buf: ir.Buffer, box: tuple) -> str:
    """The descriptor of ``buf`` with block shape ``box``, created once at the top of the kernel."""
    key = (buf, box)
    name = lw.descriptors.by_key.get(key)
    if name is None:
        ptr = lw.pointer(buf)
        name = lw.names.fresh(f"{ptr}_desc")
        lw.descriptors.by_key[key] = name
        lw.descriptors.aligned.add(buf.root)
        if _host_made(lw, buf):
            # a kernel parameter: the host builds it per call (a CUtensorMap kernel argument, as
            # TileLang passes them) instead of every program writing and fencing one at its start
            lw.descriptors.host.append((name, buf, box))
            return name
        create = P.call(
            "tl.make_tensor_descriptor",
            P.name(ptr),
            shape=P.list_([lw.ev(ir_expr(d)).node for d in buf.shape]),
            strides=P.list_([lw.ev(ir_expr(s)).node for s in buf.strides]),
            block_shape=P.list_([P.const(e) for e in box]),
        )
        stmt = P.assign(name, create)
        stmt.t2t_origin = lw.origin
        lw.descriptors.prologue.append(stmt)
    return name


def _written_globals(lw: Lowerer) -> set:
    """Global tensors the kernel writes (stores, copies, fills, atomics), by root buffer."""
    written = lw.descriptors.written
    if written is None:
        written = set()
        for st in ir.walk(lw.kernel.body):
            if isinstance(st, ir.Store) and st.buffer.scope == ir.GLOBAL:
                written.add(st.buffer.root)
            for value in vars(st).values():
                if (
                    isinstance(value, ir.Region)
                    and value.buffer.scope == ir.GLOBAL
                    and value is not getattr(st, "src", None)
                ):
                    written.add(value.buffer.root)
        lw.descriptors.written = written
    return written
