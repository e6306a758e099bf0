"""Register-tile access of the lowerer (``RegisterAccess``, a base of ``lower.KernelLowerer``):
reads and writes of shared, fragment and local buffers held as Triton tiles.

An index that is a lane variable maps to a tile axis (broadcast/permute); a lane-independent index
selects by one-hot comparison; a read with one lane-dependent dim is a ``tl.gather`` along it; one
written and read one dim at a time is separable; any other index is an exact one-hot gather/scatter
over the flattened buffer.  The methods use the lowerer's state and its other methods through
``self``; this module never imports ``lower.py``.
"""

from __future__ import annotations

import ast

from .. import ir
from ..ir import BOOL, FLOAT32, INT32
from ..language.dtypes import DType
from . import held, scratch
from . import pyast as P
from .radix import field_parts, lane_digits, radix_parts
from .threads import in_thread_view
from .values import (
    AtDim,
    DimIndex,
    IrregularDim,
    LaneDim,
    LaneField,
    Lowerer,
    RegBuf,
    Tile,
    is_literal,
    literal_value,
    prod,
)


class RegisterAccess:
    """The register-buffer methods of ``KernelLowerer``."""

    def scalar_mask(self, node: ast.expr, block: bool = False) -> ast.expr:
        """A condition with lane-independent parts.  Under the interpreter loop counters are Python
        ints and a comparison of a program id keeps int32 data under its int1 type; either breaks
        ``mask=`` ('mask has unsupported dtype'), and ``tl.where`` rebuilds it as true booleans."""
        if self.options.interpret:
            return P.call("tl.where", node, P.const(True), P.const(False))
        return node

    def broadcast(self, t: Tile, shape) -> ast.expr:
        """``t`` as a tile of ``shape`` (scalars may be plain ints under the interpreter)."""
        if not t.axes:
            dtype = P.dtype(self.storage_dtype(t.dtype))
            if is_literal(t):
                if literal_value(t.node) == 0:
                    return P.call("tl.zeros", P.list_(shape), dtype)
                return P.call("tl.full", P.list_(shape), t.node, dtype)
            return P.binop("+", _typed(self, t), P.call("tl.zeros", P.list_(shape), dtype))
        return self.broadcast_lanes(t.node, t.axes, shape, t.dtype)

    def full_rank_mask(self, mask: ast.expr | None) -> ast.expr | None:
        """A lane mask at the lane space's full rank (see ``broadcast_lanes``), to index with None."""
        if mask is None or not self.scope.loop_axes:
            return mask
        return self.broadcast_lanes(mask, frozenset(), self.scope.lanes.padded, BOOL)

    def broadcast_lanes(self, node: ast.expr, axes, shape, dtype) -> ast.expr:
        """``tl.broadcast_to(node, shape)`` for a lane-space tile.  Inside a loop evaluated as a
        leading lane axis (rules._LoopAxis), a value from outside the loop keeps its lower rank
        (Triton's arithmetic broadcasts it); tl.broadcast_to needs the full rank, an addition not.

        In the thread view a global load spread this way is loaded at ``shape`` instead
        (``LoweringOptions.per_thread_loads``): every thread loads its own copy, as TileLang's
        threads do.  Triton lays out a load of fewer elements than the block has threads
        differently from the block-shaped values it meets, and moving it over costs a trip through
        shared memory and two barriers each time the load runs (benchmarks/gemv_thread_view_variants.py measures it)."""
        loaded = self.per_thread_load(node, axes, shape)
        return loaded if loaded is not None else self.spread(node, axes, shape, dtype)

    def per_thread_load(self, node: ast.expr, axes, shape) -> ast.expr | None:
        """``node``, a global load at ``axes`` of the thread view's lanes, loaded at ``shape``;
        None when the option is off or ``node`` is something else."""
        if not (axes and self.options.per_thread_loads and in_thread_view(self)):
            return None
        if all(size == 1 or d in axes for d, size in enumerate(shape)):
            return None  # nothing to spread: the load is already at the shape
        # a mask of lower rank than the pointer (a value from outside a loop axis) is spread too
        lower_rank = bool(self.scope.loop_axes) and 0 not in axes
        return _load_at(node, lambda n, dt: self.spread(n, axes, shape, dt), lower_rank)

    def spread(self, node: ast.expr, axes, shape, dtype) -> ast.expr:
        """``node`` broadcast to ``shape`` (see ``broadcast_lanes``)."""
        if self.scope.loop_axes and 0 not in axes:
            zeros = P.call("tl.zeros", P.list_(shape), P.dtype(self.storage_dtype(dtype)))
            return P.binop("|" if dtype == BOOL else "+", node, zeros)
        if _has_shape(node, shape):
            return node  # already spread (to_buffer_layout spreads a value it re-lays for a buffer, or reshapes it)
        return P.call("tl.broadcast_to", node, P.tuple_(shape))

    def reg(self, buf: ir.Buffer) -> RegBuf:
        if buf in self.scratch.views:  # a tile operation's operand: the whole buffer as a tile
            return scratch.tile(self, buf)
        if buf in self.held_elements:  # held by element (held.py): no tile to hand out
            raise held.HeldMisread(buf)
        if buf not in self.regs:
            raise self.error(f"buffer '{buf.name}' is used before it is allocated")
        rb = self.regs[buf]
        if rb.view_of is not None:  # a T.reshape view: refresh it from the buffer it reshapes
            refresh = P.assign(rb.name, P.call("tl.reshape", P.name(rb.view_of.name), P.tuple_(rb.shape or (1,))))
            if not (self.out and ast.dump(self.out[-1]) == ast.dump(refresh)):
                self.emit(refresh)
        return rb

    def assign_to(self, target: str, value: ast.expr) -> None:
        self.emit(P.assign(target, value))
        if self.forwards:  # a write of the buffer (or of a view of it): the tile its stage held is no longer known
            views = {rb.view_of.name for rb in self.regs.values() if rb.view_of is not None and rb.name == target}
            for buf in [b for b in self.forwards if self.regs[b].name in views | {target}]:
                del self.forwards[buf]
        if target in self.scratch.tiles:  # a tile operation's result: back to its scratch buffer
            scratch.write_back(self, target)
        for rb in self.regs.values():  # writing a view writes the buffer it reshapes
            if rb.view_of is not None and rb.name == target:
                self.emit(
                    P.assign(rb.view_of.name, P.call("tl.reshape", P.name(target), P.tuple_(rb.view_of.shape or (1,))))
                )

    def classify(self, rb: RegBuf, indices) -> list[LaneDim | AtDim] | None:
        """Per buffer dim: ``LaneDim`` when indexed by a lane variable spanning it, ``AtDim`` when the
        index is the same for every lane; None when some index varies otherwise (a gather or
        scatter: see ``flat_read`` / ``flat_write``)."""
        kinds = []
        dims = rb.local_shape if rb.lanes is not None else rb.buffer.shape
        used_axes = set()
        for d, e in enumerate(indices):
            t = self.ev(e)
            if rb.lanes is None and self.scope.lanes is not None and isinstance(t.node, ast.Name):
                k = self.scope.lanes.names.index(t.node.id) if t.node.id in self.scope.lanes.names else None
                if k is not None and self.scope.lanes.extents[k] == rb.buffer.shape[d] and k not in used_axes:
                    used_axes.add(k)
                    kinds.append(LaneDim(k))
                    continue
            if t.axes:
                return None
            kinds.append(AtDim(t, dims[d] if d < len(dims) else 1))
        return kinds

    # A buffer read or written at lane-dependent positions that are not a lane variable itself
    # (``S[tx + 1]``, ``S[n - 1 - tx]``): flatten it and select by one-hot comparison. Exact, and
    # O(lanes x buffer size) per access.
    def flat_index(self, rb: RegBuf, indices) -> Tile:
        dims = rb.local_shape
        lin, axes = None, frozenset()
        stride = 1
        for d in reversed(range(len(indices))):
            t = self.ev(indices[d])
            axes |= t.axes
            if d < len(dims):
                term = t.node if stride == 1 else P.binop("*", t.node, P.const(stride))
                lin = term if lin is None else P.binop("+", term, lin)
                stride *= dims[d]
        return Tile(lin if lin is not None else P.const(0), INT32, axes)

    def one_irregular_dim(self, rb: RegBuf, indices) -> tuple[list[DimIndex], int] | None:
        """Kinds per dim as ``classify`` gives them, and the position of the one dim indexed by a
        lane-dependent expression (an ``IrregularDim``); None for any other shape."""
        if rb.lanes is not None or self.scope.lanes is None:
            return None
        kinds, irregular, used = [], None, set()
        for d, e in enumerate(indices):
            t = self.ev(e)
            names = self.scope.lanes.names
            k = names.index(t.node.id) if isinstance(t.node, ast.Name) and t.node.id in names else None
            if k is not None and k not in used and self.scope.lanes.extents[k] == rb.buffer.shape[d]:
                used.add(k)
                kinds.append(LaneDim(k))
            elif not t.axes:
                kinds.append(AtDim(t, rb.shape[d]))
            elif irregular is None:
                irregular = d
                kinds.append(IrregularDim(t))
            else:
                return None
        return (kinds, irregular) if irregular is not None else None

    def gather_read(self, rb: RegBuf, indices) -> Tile | None:
        """``F[i, j // 2]``: one dim indexed by a lane-dependent expression, the others by lane
        variables or fixed positions.  Select along that dim only: O(lanes x its extent)."""
        split = self.one_irregular_dim(rb, indices)
        if split is None:
            return None
        kinds, gather = split
        kept = [k for k in kinds if not isinstance(k, AtDim)]
        lane_dims = [k.axis for k in kept if isinstance(k, LaneDim)]
        extra = sorted(kinds[gather].index.axes - set(lane_dims))
        # tl.gather only where the one-hot select would be large: Triton 3.6's gather layout pass
        # asserts (isWarpLocal) when the index is much longer than a small source along the axis
        # (under a loop made a lane axis the index tiles are not at full rank: always tl.gather)
        use_gather = (
            len(extra) == 1
            and rb.buffer.dtype != BOOL
            and (self.scope.loop_axes or prod(self.scope.lanes.padded) * rb.shape[gather] > scratch.ONE_HOT_LIMIT)
        )
        if not use_gather:
            scratch.check_one_hot(self, rb, rb.shape[gather])
        rank = self.scope.lanes.rank
        value = P.name(rb.name)
        storage_rank = len(rb.shape)
        for d in reversed(range(len(kinds))):
            if isinstance(kinds[d], AtDim):
                value = self.select_at(value, d, storage_rank, kinds[d].index, rb.shape[d], rb.buffer.dtype)
                storage_rank -= 1
        if use_gather:
            return self.gather_along(value, kept, kinds[gather].index, extra[0], rb.shape[gather], rb.buffer.dtype)
        order = sorted(
            range(len(kept)),
            key=lambda i: (isinstance(kept[i], IrregularDim), kept[i].axis if isinstance(kept[i], LaneDim) else 0),
        )
        value = P.permute(value, order)
        value = P.subscript_none(value, [k in lane_dims for k in range(rank)] + [True])
        index = kinds[gather].index
        size = rb.shape[gather]
        # as in gather_along, a read past the buffer takes its nearest element (TileLang's fragments
        # keep per-thread storage there, and its examples read a value broadcast into them so)
        position = index.node
        if not self.scope.ranges.nonneg(indices[gather]):
            position = P.call("tl.maximum", position, P.const(0))
        if not self.scope.ranges.below(indices[gather], size):
            position = P.call("tl.minimum", position, P.const(size - 1))
        positions = P.subscript_none(P.call("tl.arange", 0, size), [False] * rank + [True])
        hit = P.binop("==", positions, P.subscript_none(position, [True] * rank + [False]))
        picked = self.one_hot_pick(hit, value, rank, rb.buffer.dtype)
        if rb.buffer.dtype == BOOL:
            picked = P.binop("!=", picked, P.const(0))
        else:  # tl.sum widens 8-bit integers: keep the buffer's type (a tl.dot operand, say)
            picked = self.narrowed(picked, rb.buffer.dtype)
        return Tile(picked, rb.buffer.dtype, frozenset(lane_dims) | index.axes)

    def gather_along(self, value: ast.expr, kept: list, index: Tile, extra: int, size: int, dtype) -> Tile:
        """``tl.gather`` along the irregular dim: ``value`` holds the buffer's dims indexed by lane
        variables and the irregular one (buffer order); the index varies along those lanes and one
        more, ``extra``, whose extent becomes the gathered axis's.  Exact, and no one-hot tile."""
        rank = self.scope.lanes.rank
        axis = next(p for p, k in enumerate(kept) if isinstance(k, IrregularDim))
        order = [extra if isinstance(k, IrregularDim) else k.axis for k in kept]  # the lane of each result dim
        union = sorted(order)
        # padded lanes may compute positions past the buffer: keep every read inside it
        idx = P.call("tl.minimum", P.call("tl.maximum", index.node, P.const(0)), P.const(size - 1))
        full = [self.scope.lanes.padded[k] if k in union else 1 for k in range(rank)]
        idx = self.broadcast_lanes(idx, index.axes, full, INT32)
        if len(union) != rank:
            idx = P.call("tl.reshape", idx, P.list_([self.scope.lanes.padded[k] for k in union]))
        idx = P.permute(idx, [union.index(k) for k in order])
        out = P.call("tl.gather", value, self.named(idx, "index"), axis)
        out = P.permute(out, [order.index(k) for k in union])  # result dims in lane order
        if len(union) != rank:
            out = P.subscript_none(out, [k in union for k in range(rank)])
        return Tile(out, dtype, frozenset(union))

    def scatter_write(self, rb: RegBuf, indices, value: Tile) -> bool:
        """``D[i, 2 * j] = v``: one dim written at a lane-dependent position, the others at lane
        variables or fixed positions.  Scatter along that dim only (O(lanes x its extent)), combining
        the lanes that are not buffer dims.  False when the access has another shape."""
        split = self.one_irregular_dim(rb, indices)
        if split is None:
            return False
        kinds, scatter = split
        scratch.check_one_hot(self, rb, rb.shape[scatter])
        used = {k.axis for k in kinds if isinstance(k, LaneDim)}
        rank = self.scope.lanes.rank
        size = rb.shape[scatter]
        value = self.cast(value, rb.buffer.dtype)
        index = kinds[scatter].index
        positions = P.subscript_none(P.call("tl.arange", 0, size), [False] * rank + [True])
        hit = P.binop(
            "==", P.subscript_none(self.broadcast(index, self.scope.lanes.padded), [True] * rank + [False]), positions
        )
        active = self.full_rank_mask(self.lane_mask(frozenset(range(rank))))
        if active is not None:
            hit = P.binop("&", hit, P.subscript_none(active, [True] * rank + [False]))
        hit_name = self.assign(f"{rb.name}_hit", hit)
        vals = P.subscript_none(self.broadcast(value, self.scope.lanes.padded), [True] * rank + [False])
        written = P.call("tl.where", P.name(hit_name), vals, P.const(_lowest(self.storage_dtype(rb.buffer.dtype))))
        touched = P.to(P.name(hit_name), INT32)
        # combine the lanes that are not a dim of the buffer (several writers of one position agree)
        combined = sorted(set(range(rank)) - used, reverse=True)
        for k in combined:
            written = P.call("tl.max", written, axis=k)
            touched = P.call("tl.max", touched, axis=k)
        if combined:
            written = self.narrowed(written, rb.buffer.dtype)
        # now: the buffer's lane dims in lane order, then the scattered dim; put them in buffer order
        mapped = sorted(k.axis for k in kinds if isinstance(k, LaneDim))
        order = [
            mapped.index(k.axis) if isinstance(k, LaneDim) else len(mapped) for k in kinds if not isinstance(k, AtDim)
        ]
        written, touched = P.permute(written, order), P.permute(touched, order)
        pattern = [not isinstance(k, AtDim) for k in kinds]
        mask = P.subscript_none(P.binop(">", touched, P.const(0)), pattern)
        written = P.subscript_none(written, pattern)
        for d, k in enumerate(kinds):
            if isinstance(k, AtDim) and rb.shape[d] > 1:
                mask = P.binop(
                    "&", mask, P.binop("==", P.expand(P.call("tl.arange", 0, rb.shape[d]), d, len(kinds)), k.index.node)
                )
        self.assign_to(rb.name, P.call("tl.where", mask, written, P.name(rb.name)))
        return True

    def flat_read(self, rb: RegBuf, indices) -> Tile:
        scratch.check_one_hot(self, rb, prod(rb.local_shape))
        lin = self.flat_index(rb, indices)
        rank = self.scope.lanes.rank
        size = prod(rb.local_shape)
        storage = P.name(rb.name)
        if rb.lanes is None:
            flat = P.call("tl.reshape", storage, P.tuple_([size])) if len(rb.shape) > 1 else storage
            flat = P.subscript_none(flat, [False] * rank + [True])
            axes = lin.axes
        else:
            flat = P.call("tl.reshape", storage, P.tuple_(list(self.scope.lanes.padded) + [size]))
            axes = frozenset(range(rank))
        positions = P.subscript_none(P.call("tl.arange", 0, size), [False] * rank + [True])
        hit = P.binop("==", positions, P.subscript_none(lin.node, [True] * rank + [False]))
        picked = self.one_hot_pick(hit, flat, rank, rb.buffer.dtype)
        if rb.buffer.dtype == BOOL:
            picked = P.binop("!=", picked, P.const(0))
        return Tile(picked, rb.buffer.dtype, axes)

    def separable(self, rb: RegBuf, indices) -> tuple[list[Tile], list[int]] | None:
        """The index tiles and, per buffer dim, the one lane axis its index varies along (a
        different axis for every dim, all of them used); None for any other access."""
        lanes = self.scope.lanes
        if rb.lanes is not None or lanes is None or self.scope.loop_axes or rb.buffer.dtype == BOOL:
            return None
        tiles = [self.ev(e) for e in indices]
        axes = [min(t.axes) if len(t.axes) == 1 else None for t in tiles]
        if len(tiles) != len(rb.shape) or None in axes or sorted(axes) != list(range(lanes.rank)):
            return None
        return tiles, axes

    def lane_index(self, index: Tile, axis: int) -> ast.expr:
        """An index that varies along lane axis ``axis`` only, as a 1-D tile."""
        if self.scope.lanes.rank == 1:
            return index.node
        return P.call("tl.reshape", index.node, P.tuple_([self.scope.lanes.padded[axis]]))

    def separable_read(self, rb: RegBuf, indices) -> Tile | None:
        """``X[i + 2, j + 2]``: the read of ``separable_write``'s shape.  Select one dim at a time,
        each step replacing the dim by its lane axis: O(buffer size x lanes along that axis)."""
        split = self.separable(rb, indices)
        if split is None:
            return None
        tiles, axes = split
        rank = self.scope.lanes.rank
        scratch.check_one_hot(self, rb, max(self.scope.lanes.padded))
        value = P.name(rb.name)
        layout = [("dim", d) for d in range(rank)]  # what each axis of ``value`` holds
        for d, (index, axis) in enumerate(zip(tiles, axes)):
            at = layout.index(("dim", d))
            positions = P.expand(P.call("tl.arange", 0, rb.shape[d]), at, rank + 1)
            hit = P.binop("==", positions, P.expand(self.lane_index(index, axis), rank, rank + 1))
            picked = self.one_hot_pick(hit, P.subscript_none(value, [True] * rank + [False]), at, rb.buffer.dtype)
            value = P.name(self.assign(f"{rb.name}_cols", picked))
            layout = layout[:at] + layout[at + 1 :] + [axis]
        return Tile(P.permute(value, [layout.index(k) for k in range(rank)]), rb.buffer.dtype, frozenset(range(rank)))

    def separable_write(self, rb: RegBuf, indices, value: Tile) -> bool:
        """``X[i + 2, j + 2] = v`` (a copy into an offset region): every dim written at a position
        that depends on one lane axis of its own.  Scatter one dim at a time, each step replacing a
        lane axis by the dim's positions: O(lanes x extent) per dim, where ``flat_write`` builds
        lanes x buffer size (past Triton's 2**20 elements per tile for tiles of a few hundred).
        False when the access has another shape."""
        split = self.separable(rb, indices)
        if split is None:
            return False
        tiles, axes = split
        lanes, rank = self.scope.lanes, self.scope.lanes.rank
        scratch.check_one_hot(self, rb, max(rb.shape))
        value = self.cast(value, rb.buffer.dtype)
        low = _lowest(self.storage_dtype(rb.buffer.dtype))
        written = self.broadcast(value, lanes.padded)
        touched = P.call("tl.full", P.list_(lanes.padded), P.const(1), P.dtype(INT32))
        active = self.lane_mask(frozenset(range(rank)))
        if active is not None:  # padded and inactive lanes write nothing
            written = P.call("tl.where", active, written, P.const(low))
            touched = P.call("tl.where", active, touched, P.const(0))
        layout = list(range(rank))  # what each axis of the tiles holds: a lane axis, or ("dim", d)
        for d, (index, axis) in enumerate(zip(tiles, axes)):
            at = layout.index(axis)
            lane_index = self.lane_index(index, axis)
            positions = P.expand(P.call("tl.arange", 0, rb.shape[d]), rank, rank + 1)
            hit = P.binop("==", P.expand(lane_index, at, rank + 1), positions)
            hit = self.assign(f"{rb.name}_hit", hit)
            grown = [True] * rank + [False]
            written = P.call(
                "tl.max", P.call("tl.where", P.name(hit), P.subscript_none(written, grown), P.const(low)), axis=at
            )
            touched = P.call(
                "tl.max", P.call("tl.where", P.name(hit), P.subscript_none(touched, grown), P.const(0)), axis=at
            )
            written, touched = self.assign(f"{rb.name}_rows", written), self.assign(f"{rb.name}_touched", touched)
            written, touched = P.name(written), P.name(touched)
            layout = layout[:at] + layout[at + 1 :] + [("dim", d)]
        written = self.narrowed(written, rb.buffer.dtype)
        self.assign_to(rb.name, P.call("tl.where", P.binop(">", touched, P.const(0)), written, P.name(rb.name)))
        return True

    def flat_write(self, rb: RegBuf, indices, value: Tile) -> None:
        scratch.check_one_hot(self, rb, prod(rb.local_shape))
        lin = self.flat_index(rb, indices)
        lanes = self.scope.lanes
        rank = lanes.rank
        size = prod(rb.local_shape)
        value = self.cast(value, rb.buffer.dtype)
        active = self.lane_mask(frozenset(range(rank)))
        positions = P.call("tl.arange", 0, size)
        if rb.lanes is not None:  # per-lane local array: each lane writes its own copy
            active = self.full_rank_mask(active)
            if value.axes and self.scope.loop_axes:
                value = Tile(self.broadcast(value, lanes.padded), value.dtype, frozenset(range(rank)))
            hit = P.binop("==", P.subscript_none(positions, [False] * rank + [True]),
                          P.subscript_none(lin.node, [True] * rank + [False]))  # fmt: skip
            if active is not None:
                hit = P.binop("&", hit, P.subscript_none(active, [True] * rank + [False]))
            flat = P.call("tl.reshape", P.name(rb.name), P.tuple_(list(lanes.padded) + [size]))
            node = P.subscript_none(value.node, [True] * rank + [False]) if value.axes else _typed(self, value)
            new = P.call("tl.where", hit, node, flat)
            self.assign_to(rb.name, P.call("tl.reshape", new, P.tuple_(rb.shape)))
            return
        # shared/fragment buffer written by many lanes: a scatter (lanes flattened to one axis)
        n_lanes = prod(lanes.padded)

        def lanes_1d(t: Tile):
            return P.call("tl.reshape", self.broadcast(t, lanes.padded), P.tuple_([n_lanes]))

        lin_1d = lanes_1d(lin)
        hit = P.binop("==", P.subscript_none(lin_1d, [True, False]),
                      P.subscript_none(positions, [False, True]))  # fmt: skip
        if active is not None:
            hit = P.binop("&", hit, P.subscript_none(lanes_1d(Tile(active, BOOL, self.cond_axes())), [True, False]))
        hit_name = self.assign(f"{rb.name}_hit", hit)
        low = _lowest(self.storage_dtype(rb.buffer.dtype))
        vals = P.subscript_none(lanes_1d(value), [True, False])
        # any writer of a position wins (all writers of one position agree in a race-free program)
        written = P.call("tl.max", P.call("tl.where", P.name(hit_name), vals, P.const(low)), axis=0)
        written = self.narrowed(written, rb.buffer.dtype)
        touched = P.call("tl.max", P.to(P.name(hit_name), INT32), axis=0)
        storage = P.name(rb.name)
        flat = P.call("tl.reshape", storage, P.tuple_([size])) if len(rb.shape) > 1 else storage
        new = P.call("tl.where", P.binop(">", touched, P.const(0)), written, flat)
        self.assign_to(rb.name, P.call("tl.reshape", new, P.tuple_(rb.shape)) if len(rb.shape) > 1 else new)

    def reg_read(self, buf: ir.Buffer, indices) -> Tile:
        rb = held.element(self, buf, indices) if buf in self.held_elements else self.reg(buf)
        if not rb.shape:  # a one-element buffer is a scalar, whatever the (necessarily zero) index
            return Tile(P.name(rb.name), buf.dtype)
        if rb.lanes is not None and rb.lanes is self.scope.lanes and len(rb.shape) == rb.lanes.rank:
            # each lane's (thread's) one element, whatever the (necessarily zero) index: nz_idx[count]
            return Tile(P.name(rb.name), buf.dtype, frozenset(range(rb.lanes.rank)))
        kinds = self.classify(rb, indices)
        if kinds is None:
            return (
                self.split_read(rb, indices)
                or self.gather_read(rb, indices)
                or self.separable_read(rb, indices)
                or self.flat_read(rb, indices)
            )
        value = P.name(rb.name)
        lead = rb.lanes.rank if rb.lanes is not None else 0
        # select fixed positions, last dim first so earlier dim numbers stay valid
        has_local_dims = len(rb.shape) > lead  # one-element buffers are stored without their unit dims
        shape = list(rb.shape)  # the value's, as dims are selected away
        for d in reversed(range(len(kinds))):
            if isinstance(kinds[d], AtDim) and has_local_dims:
                value = self.select_at(
                    value, lead + d, len(shape), kinds[d].index, rb.shape[lead + d], rb.buffer.dtype, shape
                )
                del shape[lead + d]
        axes = frozenset(range(rb.lanes.rank)) if rb.lanes is not None else frozenset()
        lane_dims = [k.axis for k in kinds if isinstance(k, LaneDim)]
        if lane_dims:
            order = sorted(range(len(lane_dims)), key=lambda i: lane_dims[i])
            value = P.permute(value, order)
            value = self.at_lane_rank(
                value, {k.axis: rb.shape[lead + d] for d, k in enumerate(kinds) if isinstance(k, LaneDim)}
            )
            axes = frozenset(lane_dims)
        dt = buf.dtype
        return Tile(value, dt, axes)

    def split_read(self, rb: RegBuf, indices) -> Tile | None:
        """``X[i, k * 4 + j]`` with lane variables ``k`` (extent n) and ``j`` (extent 4) of a dim of
        n x 4 elements: the dim is a mixed-radix pair of lane axes, so the read is ``tl.reshape`` of
        the tile (the dim split into (n, 4)) and a permute, with no select.  The outermost part may
        also be lane-independent (``X[i, kk * 4 + j]`` in a loop over ``kk``: a select along n).
        Every part but the outermost has a power-of-two extent (then the padded tile splits exactly).

        A part may also be a digit field of a lane variable (``LaneField``; ``TILE2TRITON_DIGIT_READS``):
        ``X[i, j // 2]`` (each element read by two neighbouring lanes: a packed byte's two nibbles),
        ``E[i, k // 16]``, ``A[i, k // 4 * 2 + 1]`` (a constant innermost digit).  The read is then
        made over the digits and the lanes' own digits it does not use are a broadcast: a reshape
        of the tile, never a gather.  None when the access has another shape."""
        lanes = self.scope.lanes
        if rb.lanes is not None or lanes is None or rb.buffer.dtype == BOOL or len(indices) != len(rb.shape):
            return None
        shape, kinds, used, split_any = [], [], set(), False
        for d, e in enumerate(indices):
            t = self.ev(e)
            parts = (
                [AtDim(t, rb.shape[d])]
                if not t.axes
                else radix_parts(self, e, rb.buffer.shape[d], lanes, self.options.block_slices)
            )
            if parts is not None:
                for part in parts:  # outermost first
                    if isinstance(part, LaneDim):
                        if part.axis in used:
                            return None
                        used.add(part.axis)
                inner = prod(lanes.extents[p.axis] if isinstance(p, LaneDim) else 1 for p in parts[1:])
                sizes = [rb.shape[d] // inner] + [lanes.extents[p.axis] for p in parts[1:]]
            elif self.options.digit_reads and rb.shape[d] == rb.buffer.shape[d]:
                parts = field_parts(self, e, rb.shape[d], lanes)
                if parts is None:
                    return None
                sizes = [p.size for p in parts]
            else:
                return None
            split_any |= len(parts) > 1 or isinstance(parts[0], LaneField)
            shape += sizes
            kinds += parts
        if not split_any:
            return None
        value = P.name(rb.name)
        if tuple(shape) != tuple(rb.shape):
            value = P.call("tl.reshape", value, P.tuple_(shape))
        kept_shape = list(shape)  # the value's, as dims are selected away
        for d in reversed(range(len(kinds))):
            if isinstance(kinds[d], AtDim):
                value = self.select_at(value, d, len(kept_shape), kinds[d].index, shape[d], rb.buffer.dtype, kept_shape)
                del kept_shape[d]
        if any(isinstance(k, LaneField) for k in kinds):
            kept = [(k, n) for k, n in zip(kinds, shape) if not isinstance(k, AtDim)]
            return self.digits_to_lanes(value, kept, rb.buffer.dtype, f"{rb.name}_digits")
        lane_dims = [k.axis for k in kinds if isinstance(k, LaneDim)]
        if not lane_dims:
            return Tile(value, rb.buffer.dtype)
        value = P.permute(value, sorted(range(len(lane_dims)), key=lambda i: lane_dims[i]))
        value = self.at_lane_rank(value, {k.axis: n for k, n in zip(kinds, shape) if isinstance(k, LaneDim)})
        return Tile(value, rb.buffer.dtype, frozenset(lane_dims))

    def digits_to_lanes(self, value: ast.expr, kept: list, dtype, hint: str) -> Tile | None:
        """``value``, whose dims are digits of lane variables (``kept``: (LaneDim or LaneField, the
        dim's extent) in order), as a tile of the lane space: digits grouped by lane, outermost
        first, the digits of a lane the read does not use broadcast, each lane's digits merged by
        ``tl.reshape``.  None where two digits overlap (``X[k, k % 4]``: a diagonal)."""
        lanes = self.scope.lanes
        fields = []
        for kind, extent in kept:
            if isinstance(kind, LaneDim):  # a whole lane variable: its one digit
                if extent != lanes.padded[kind.axis]:
                    return None
                kind = LaneField(kind.axis, 1, extent)
            fields.append(kind)
        layout = lane_digits(fields, lanes.padded)
        if layout is None:
            return None
        value = P.permute(value, sorted(range(len(fields)), key=lambda i: (fields[i].axis, -fields[i].low)))
        pattern, digits, out = [], [], []  # per digit: read (or a broadcast), its extent; the lanes' extents
        for k in range(lanes.rank):
            for digit in layout.get(k, [1]):  # a lane the read does not use: one unit dim
                pattern.append(isinstance(digit, LaneField))
                digits.append(digit.size if isinstance(digit, LaneField) else digit)
            out.append(lanes.padded[k] if k in layout else 1)
        # a repeat of neighbouring elements (the last digit unused) as tl.join of the value with
        # itself: the copies stay in one thread, where a broadcast of a trailing unit dim spreads
        # them over threads (Triton's default layout) and costs a shared-memory layout conversion
        repeats = 1
        if not pattern[-1] and digits[-1] > 1 and digits[-1] & (digits[-1] - 1) == 0:
            repeats = digits[-1]
            pattern, digits = pattern[:-1], digits[:-1]
        value = P.subscript_none(value, pattern)
        if any(not keep and n > 1 for keep, n in zip(pattern, digits)):
            value = P.call("tl.broadcast_to", value, P.tuple_(digits))
        while repeats > 1:
            value = self.named(value, hint)
            value = P.call("tl.join", value, value)
            digits, repeats = [*digits, 2], repeats // 2
        if digits != out:
            value = P.call("tl.reshape", value, P.tuple_(out))
        return Tile(value, dtype, frozenset(f.axis for f in fields))

    def select_at(
        self, value: ast.expr, dim: int, rank: int, index: Tile, size: int, dtype=None, shape=None
    ) -> ast.expr:
        """``value`` with ``dim`` removed, keeping position ``index`` (one-hot select, exact; a
        constant half of a trailing pair is ``tl.split``'s, which moves no data; a unit dim of a
        value whose ``shape`` is known is dropped by ``tl.reshape``, see ``with_unit_axes``)."""
        if size == 2 and dim == rank - 1 and is_literal(index) and (dtype is None or dtype != BOOL):
            half = literal_value(index.node)
            if type(half) is int and half in (0, 1):
                return ast.Subscript(P.call("tl.split", value), P.const(half), ast.Load())
        if size == 1 and shape is not None and rank > 1 and self.options.unit_reshapes:
            return _reshape(value, [n for d, n in enumerate(shape) if d != dim])
        if size == 1:
            picked = self.one_hot_pick(None, value, dim if rank > 1 else 0, dtype)
        else:
            positions = P.expand(P.call("tl.arange", 0, size), dim, rank)
            picked = self.one_hot_pick(P.binop("==", positions, index.node), value, dim, dtype)
        # tl.sum of booleans is an int32 count: back to a boolean (a mask must be one)
        return P.binop("!=", picked, P.const(0)) if dtype is not None and dtype.name == "bool" else picked

    def with_unit_axes(self, value: ast.expr, present: list[bool], shape: list[int]) -> ast.expr:
        """``value`` with a unit axis inserted where ``present`` is False (``x[None, :]``); ``shape``:
        the tile it stands for (its extents where present, the lanes' or buffer's elsewhere).  Where
        every inserted axis has extent 1 there (a (1, N) fragment, a ``T.Parallel(1, N)`` lane
        space) it is ``tl.reshape``: Triton gives a reshape the value's own layout, where an
        expand_dims needs a slice layout and moves a loaded row through shared memory to get one,
        each time it runs (TILE2TRITON_UNIT_RESHAPES)."""
        if all(present):
            return value
        if self.options.unit_reshapes and all(shape[d] == 1 for d, keep in enumerate(present) if not keep):
            return _reshape(value, shape)
        return P.subscript_none(value, present)

    def at_lane_rank(self, value: ast.expr, extent: dict) -> ast.expr:
        """``value``, whose dims are the lane axes of ``extent`` (lane axis -> its extent) in lane
        order, at the lane space's full rank (see ``with_unit_axes``)."""
        lanes = self.scope.lanes
        present = [k in extent for k in range(lanes.rank)]
        return self.with_unit_axes(value, present, [extent.get(k, lanes.padded[k]) for k in range(lanes.rank)])

    def one_hot_pick(self, hit, value: ast.expr, axis: int, dtype) -> ast.expr:
        """The element of ``value`` along ``axis`` where ``hit`` holds (at one position at most; None:
        the axis has one element), as a ``tl.sum`` of the masked values.  Triton has no fp8 sums
        on the GPU, so fp8 values are summed as float32 and converted back (exact: one term); a sum
        of integers narrower than 32 bits is 32 bits wide (int4 / uint4 registers are int8 / uint8):
        converted back too, or a loop writing the element into its tile would change the tile's type
        (Triton 3.6 refuses that on the GPU)."""
        storage = self.storage_dtype(dtype) if dtype is not None else None
        fp8 = storage is not None and storage.name.startswith("float8")
        narrow_int = storage is not None and storage.is_int and storage.name != "bool" and storage.bits < 32
        if fp8:
            value = P.to(value, FLOAT32)
        if hit is not None:
            value = P.call("tl.where", hit, value, P.const(0))
        picked = P.call("tl.sum", value, axis=axis)
        return P.to(picked, storage) if fp8 or narrow_int else picked

    def reg_write(self, buf: ir.Buffer, indices, value: Tile) -> None:
        rb = held.element(self, buf, indices) if buf in self.held_elements else self.reg(buf)
        lead = rb.lanes.rank if rb.lanes is not None else 0
        if len(rb.shape) == lead:  # one element (per iteration, for locals allocated in T.Parallel)
            if (
                rb.lanes is None
                and self.scope.lanes is not None
                and all(self.scope.lanes.padded[k] == 1 for k in value.axes | self.cond_axes())
            ):
                if value.axes:  # T.Parallel(1, 1): the single iteration's value
                    value = Tile(P.call("tl.sum", P.call("tl.reshape", value.node, P.tuple_([1])), axis=0), value.dtype)
                mask = self.lane_mask(frozenset()) if self.scope.conds else None
                if mask is not None and self.cond_axes():  # and its condition, a scalar like the element
                    one = P.call("tl.sum", P.call("tl.reshape", P.to(mask, INT32), P.tuple_([1])), axis=0)
                    mask = P.binop("!=", one, P.const(0))
                self.assign_whole(rb, value, mask)
                return
            if rb.lanes is None and (value.axes or self.cond_axes()):
                raise self.error(
                    f"different T.Parallel iterations write the one element of '{buf.name}'; "
                    "allocate it inside the T.Parallel body or give it the loop's shape"
                )
            self.assign_whole(rb, value, self.lane_mask(frozenset()) if self.scope.conds else None)
            return
        kinds = self.classify(rb, indices)
        if kinds is None:
            if (
                not self.split_write(rb, indices, value)
                and not self.scatter_write(rb, indices, value)
                and not self.separable_write(rb, indices, value)
            ):
                self.flat_write(rb, indices, value)
            return
        rank = len(rb.shape)
        value = self.cast(value, buf.dtype)
        conds = self.lane_mask(frozenset()) if self.scope.conds else None
        cond_axes = self.cond_axes()
        if rb.lanes is not None:
            node, mask = _typed(self, value), conds
            pattern = [True] * lead + [False] * (rank - lead)
            node = P.subscript_none(node, pattern) if rank > lead and value.axes else node
            if mask is not None:
                mask = P.subscript_none(mask, pattern) if rank > lead else mask
        else:
            lane_axes = [k.axis for k in kinds if isinstance(k, LaneDim)]
            if any(self.scope.lanes.padded[k] != 1 for k in (value.axes | cond_axes) - set(lane_axes)):
                # the written element is chosen per lane (``if tx == 0: S[0] = v``): a scatter
                # (a lane axis of extent 1, as in ``T.Parallel(1, D)``, has one iteration: no choice)
                self.flat_write(rb, indices, value)
                return
            node = self.to_buffer_layout(value.node, value.axes, kinds, rank, value.dtype)
            mask = self.to_buffer_layout(conds, cond_axes, kinds, rank, BOOL) if conds is not None else None
        for d, k in enumerate(kinds):
            if isinstance(k, AtDim) and rb.shape[lead + d] > 1:  # a unit dim has only the one position
                hit = P.binop("==", P.expand(P.call("tl.arange", 0, rb.shape[lead + d]), lead + d, rank), k.index.node)
                mask = hit if mask is None else P.binop("&", mask, hit)
        if mask is None:
            if _needs_bcast(value, rb, kinds, self.options.unit_reshapes):
                node = self.broadcast(Tile(node, value.dtype, value.axes), rb.shape)
            self.assign_to(rb.name, node)
        else:
            self.assign_to(rb.name, P.call("tl.where", mask, node, P.name(rb.name)))

    def split_write(self, rb: RegBuf, indices, value: Tile) -> bool:
        """``C[i // 16, j // 16, i % 16, j % 16] = v``, ``F[k // 4, k % 4] = v``, ``X[k * 4 + j] = v``:
        each dim's index a mixed radix of digit fields of lane variables (``field_parts``), and
        together they use every digit of each lane they name once, so the statement writes every
        element of the buffer once: the write is the tile's digits permuted (reshape, permute,
        reshape), no scatter (``TILE2TRITON_DIGIT_READS``).  False for any other access, or under
        a condition."""
        lanes = self.scope.lanes
        if (
            not self.options.digit_reads
            or rb.lanes is not None
            or lanes is None
            or self.scope.conds
            or rb.buffer.dtype == BOOL
            or len(indices) != len(rb.shape)
            or tuple(rb.shape) != tuple(rb.buffer.shape)
        ):
            return False
        parts = []  # the buffer's digits, dim by dim, outermost first
        for d, e in enumerate(indices):
            dim = field_parts(self, e, rb.shape[d], lanes, fields_only=False)
            if dim is None or any(isinstance(p, AtDim) for p in dim):
                return False
            parts += dim
        by_lane = lane_digits(parts, lanes.padded)
        # every digit of each lane, once (no overlap, none unused): a permutation of the elements
        if by_lane is None or any(not isinstance(d, LaneField) for laid in by_lane.values() for d in laid):
            return False
        if value.axes - set(by_lane):  # lanes the index leaves out write one element with different values
            return False
        used = [lanes.padded[k] if k in by_lane else 1 for k in range(lanes.rank)]
        value = self.cast(value, rb.buffer.dtype)
        node = value.node if value.axes == set(by_lane) else self.broadcast(value, used)
        digits = [f for k in sorted(by_lane) for f in by_lane[k]]  # lane order, outermost first
        if [f.size for f in digits] != used:
            node = P.call("tl.reshape", node, P.tuple_([f.size for f in digits]))
        node = P.permute(node, [digits.index(f) for f in parts])
        if [f.size for f in parts] != list(rb.shape):
            node = P.call("tl.reshape", node, P.tuple_(rb.shape))
        self.assign_to(rb.name, node)
        return True

    def to_buffer_layout(self, node, axes, kinds, rank, dtype=INT32) -> ast.expr:
        """Re-lay a lane-space tile (axes ⊆ the buffer's lane-indexed dims) in buffer dim order."""
        lane_axes = [k.axis for k in kinds if isinstance(k, LaneDim)]
        if not lane_axes:
            return node
        lanes = self.scope.lanes
        if axes:
            # drop lane axes the buffer is not indexed by (the value is constant along them)
            keep = sorted(lane_axes)
            if set(range(lanes.rank)) - set(keep):
                full = [lanes.padded[k] if k in axes else 1 for k in range(lanes.rank)]
                node = P.call("tl.reshape", node, P.tuple_([full[k] for k in keep]))
                if any(lanes.padded[k] != 1 for k in set(keep) - set(axes)):
                    node = P.call("tl.broadcast_to", node, P.tuple_([lanes.padded[k] for k in keep]))
            elif set(axes) != set(keep):
                node = self.broadcast_lanes(node, axes, [lanes.padded[k] for k in keep], dtype)
            order = [sorted(lane_axes).index(k) for k in lane_axes]
            node = P.permute(node, order)
        if not axes:
            return node
        shape = [lanes.padded[k.axis] if isinstance(k, LaneDim) else k.size for k in kinds]
        return self.with_unit_axes(node, [isinstance(k, LaneDim) for k in kinds], shape)

    def assign_whole(self, rb: RegBuf, value: Tile, mask) -> None:
        value = self.cast(value, rb.buffer.dtype)
        node = value.node
        if rb.lanes is not None and value.axes != frozenset(range(rb.lanes.rank)) and mask is None:
            node = self.broadcast_lanes(_typed(self, value), value.axes, rb.shape, value.dtype)
        elif rb.lanes is not None and value.axes != frozenset(range(rb.lanes.rank)):
            node = self.per_thread_load(node, value.axes, rb.shape) or node  # tl.where spreads the rest
        elif not rb.shape and not value.axes and is_literal(value):
            node = P.call("tl.full", P.list_([]), node, P.dtype(self.storage_dtype(rb.buffer.dtype)))
        if mask is not None:
            node = P.call("tl.where", mask, node, P.name(rb.name))
        self.assign_to(rb.name, node)


def _load_at(node: ast.expr, spread, with_mask: bool) -> ast.expr | None:
    """``tl.load(ptr, ...)`` (or its ``.to(dtype)``) loading at ``spread(offsets or pointer,
    dtype)``, and its mask spread too when ``with_mask`` (tl.load broadcasts a mask of the
    pointer's rank itself); None when ``node`` is no such load."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "to"
        and not isinstance(node.func.value, ast.Name)
    ):
        inner = _load_at(node.func.value, spread, with_mask)
        return None if inner is None else ast.Call(ast.Attribute(inner, "to", ast.Load()), node.args, node.keywords)
    if not (P.is_tl_call(node, "load") and node.args):
        return None
    ptr = node.args[0]
    if isinstance(ptr, ast.BinOp) and isinstance(ptr.op, ast.Add) and isinstance(ptr.left, ast.Name):
        ptr = ast.BinOp(ptr.left, ast.Add(), spread(ptr.right, INT32))  # ``A + offs``: spread the offsets
    else:
        ptr = spread(ptr, INT32)
    keywords = [
        ast.keyword(k.arg, spread(k.value, BOOL))
        if with_mask and k.arg == "mask" and not isinstance(k.value, ast.Constant)
        else k
        for k in node.keywords
    ]
    return ast.Call(node.func, [ptr, *node.args[1:]], keywords)


def _reshape(node: ast.expr, shape) -> ast.expr:
    """``tl.reshape(node, shape)``, a reshape of a reshape folded into one."""
    if P.is_tl_call(node, "reshape") and len(node.args) == 2 and not node.keywords:
        node = node.args[0]
    return P.call("tl.reshape", node, P.tuple_(shape))


def _has_shape(node: ast.expr, shape) -> bool:
    """``node`` is ``tl.broadcast_to(x, shape)`` or ``tl.reshape(x, shape)``."""
    return (
        (P.is_tl_call(node, "broadcast_to") or P.is_tl_call(node, "reshape"))
        and len(node.args) == 2
        and ast.dump(node.args[1]) == ast.dump(P.tuple_(shape))
    )


def _needs_bcast(value: Tile, rb: RegBuf, kinds, unit_reshapes: bool) -> bool:
    lane_dims = [k for k in kinds if isinstance(k, LaneDim)]
    if not {k.axis for k in lane_dims} <= value.axes:
        return True
    if unit_reshapes and rb.lanes is None and lane_dims and all(k.size == 1 for k in kinds if isinstance(k, AtDim)):
        return False  # to_buffer_layout reshaped it to the buffer's shape (with_unit_axes)
    return len(lane_dims) != len(rb.shape)


def _typed(lowerer: Lowerer, value: Tile) -> ast.expr:
    if is_literal(value):
        return P.call("tl.full", P.list_([]), value.node, P.dtype(lowerer.storage_dtype(value.dtype)))
    return value.node


def _lowest(dt: DType):
    if dt.is_float:
        return float("-inf")
    if dt == BOOL:
        return 0
    return -(2 ** (dt.bits - 1)) if dt.kind == "int" else 0
