"""The part of a tile that no output sees, not computed.

A tile wider than its tensor computes lanes that every store masks away.  TileLang's convolution
on Hopper (``example_convolution_autotune``'s heuristic config, and any autotuned config like it)
tiles the filters by ``block_N = 256``: over F = 128 filters half of each wgmma and of the
accumulator is for columns past the tensor's end, and TileLang computes them too.  Here those
columns are dropped:

1. **Seeds.**  A copy or tile atomic from a whole shared/fragment buffer into a global box that
   reaches past its tensor's end along a dim in every block: the box's start there, at its lowest
   over the block indices' ranges (``analysis.kernel_ranges``), leaves ``live`` elements inside the
   tensor, fewer than the buffer's extent.  Likewise a ``T.Parallel``'s element store at
   ``base + j`` (masked at the tensor's end, as TileLang's safe memory access masks it; under the
   user's own bounds test or not) for the register tiles that loop indexes with ``j``.  The buffer keeps ``live`` rounded up to a power of two,
   at least ``MIN_PART`` (``_kept``: 100 -> 128, 37 -> 64), where that is less than its
   extent; the rest is the dead part.
2. **Partners.**  The dims the statements tie to it, which must be cut with it: a gemm's C rows
   with A's M dim and its columns with B's N dim, the dims two register buffers of one copy pair,
   the dims one loop variable of a ``T.Parallel`` indexes.  A group with a buffer under two dims,
   with unequal extents, or with a buffer that is not a whole shared/fragment allocation of static
   shape is left alone; a group takes the most live elements of its seeds.
3. **Split.**  ``pow2_split``'s rewriter makes each buffer of a group one buffer a part (the first
   keeps the buffer's name) and every statement one per part.
4. **Drop.**  The dead parts' copies into boxes wholly past their tensor's end go (and their loops'
   element stores past it in every lane), then every
   statement that only writes dead parts nothing else reads (allocations, fills, copies, gemms,
   ``T.Parallel`` loops of plain stores), until none is left.  A group whose dead parts are not
   all gone is not split; the pass repeats on what it made while a seed is left.

The result is the kernel's own: the dropped lanes reached no output (a gemm over the cut dim as M
or N never mixes lanes; a K dim joins a group only through a gemm whose dead-part product then
feeds a live accumulator, and such a group is not split).
Switch: ``TILE2TRITON_DEAD_PARTS`` (``LoweringOptions.dead_parts``).
"""

from __future__ import annotations

import dataclasses
from collections import Counter

from .. import ir
from ..ir.exprs import static
from .analysis import buffer_accesses, kernel_ranges, loaded_roots
from .pow2_split import MIN_PART, split_body
from .tile_partners import paired_dims, partner_links, region_ends, register_accesses, whole_tiles

ROUNDS = 3  # a buffer is cut along one dim a round: its rows in one, its columns in the next


def drop_dead_parts(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with the parts of its tiles that no output sees dropped, or itself where none is."""
    if kernel.thread_vars:
        return kernel
    for _ in range(ROUNDS):
        cut = _cut_once(kernel)
        if cut is None:
            break
        kernel = cut
    return kernel


def _cut_once(kernel: ir.Kernel) -> ir.Kernel | None:
    # the lets bound once: a store between two bindings of a name would see the first one's value
    bindings = Counter(s.var for s in ir.walk(kernel.body) if isinstance(s, ir.Let))
    ranges = kernel_ranges(kernel, [s for s in kernel.body if isinstance(s, ir.Let) and bindings[s.var] == 1])
    tiles = whole_tiles(kernel.body)
    seeds = _seeds(kernel.body, ranges, tiles)
    groups = _disjoint(g for g in (_parts_of(g, seeds, tiles) for g in _groups(kernel.body, seeds)) if g is not None)
    while groups:
        split = {b: (dim, parts) for g in groups for b, dim, parts in g}
        done = split_body(kernel.body, split, name=lambda b, k, start: b.name if k == 0 else f"{b.name}_{start}")
        if done is None:
            return None
        body, rewriter = done
        last = {pieces[-1] for b, pieces in rewriter.pieces.items() if b in split}
        body = _without_outside_stores(body, last, ranges)
        dead = _dead(body, last)
        kept = [g for g in groups if all(b in split and rewriter.pieces[b][-1] in dead for b, _, _ in g)]
        if len(kept) == len(groups):
            return dataclasses.replace(kernel, body=_drop(body, dead))
        groups = kept
    return None


# ------------------------------------------------------------------------------ which dims


def _seeds(body, ranges, tiles: dict) -> dict:
    """(buffer, dim) -> the most elements along ``dim`` that a store of the register tile puts inside
    its tensor, in any block, where that is fewer than the tile's extent: a copy or tile atomic of the
    whole tile into a global box, or a ``T.Parallel``'s element stores (``_parallel_seeds``)."""
    seeds: dict = {}

    def seed(key, live):
        seeds[key] = max(seeds.get(key, 0), live)

    for s in ir.walk(body):
        if isinstance(s, ir.Parallel):
            for key, live in _parallel_seeds(s, ranges, tiles):
                seed(key, live)
            continue
        pair = _tile_to_global(s)
        if pair is None:
            continue
        tile, box = pair
        if tile.buffer not in tiles:
            continue
        for dim, global_dim in paired_dims(tile, box):
            live = _live(box, global_dim, ranges)
            if live is not None and 0 < live < tiles[tile.buffer][dim]:
                seed((tile.buffer, dim), live)
    return seeds


def _parallel_seeds(p: ir.Parallel, ranges, tiles: dict) -> list:
    """((buffer, dim), live) for a ``T.Parallel`` that stores into global memory at ``base + v`` along
    a dim, ``v`` one of its loop variables (the store masked at the tensor's end, as TileLang's safe
    memory access does): the register tiles it indexes with ``v``, and the most values of ``v`` whose
    store lands inside the tensor in some block."""
    out = []
    accesses = register_accesses(p.body)
    for inner in ir.walk(p.body):  # under an ``if`` too: a guard of the tensor's bounds, as users write one
        if not (isinstance(inner, ir.Store) and inner.buffer.scope == ir.GLOBAL):
            continue
        for dim, index in enumerate(inner.indices):
            found = _base_plus_var(index, p.vars)
            live = None if found is None else _inside(inner.buffer, dim, found[0], ranges)
            if live is None:
                continue
            var = found[1]
            for buffer, indices in accesses:
                for d, i in enumerate(indices):
                    if isinstance(i, ir.VarRef) and i.var is var and buffer in tiles and 0 < live < tiles[buffer][d]:
                        out.append(((buffer, d), live))
    return out


def _base_plus_var(index, loop_vars) -> tuple | None:
    """(base, v) where ``index`` is ``base + v`` (or ``v + base``) for ``v`` one of ``loop_vars`` and
    ``base`` free of them."""
    if not (isinstance(index, ir.BinOp) and index.op == "+"):
        return None
    for var_side, base in ((index.rhs, index.lhs), (index.lhs, index.rhs)):
        if isinstance(var_side, ir.VarRef) and any(var_side.var is v for v in loop_vars):
            free = not any(
                isinstance(e, ir.VarRef) and any(e.var is v for v in loop_vars) for e in ir.iter_expr_tree(base)
            )
            if free:
                return base, var_side.var
    return None


def _live(box: ir.Region, dim: int, ranges) -> int | None:
    """The most elements of ``box`` along ``dim`` inside its tensor over every block, where known."""
    return _inside(box.buffer, dim, box.starts[dim], ranges)


def _inside(tensor: ir.Buffer, dim: int, start, ranges) -> int | None:
    """The most elements from ``start`` on along ``dim`` inside ``tensor`` over every block, where known."""
    end, lowest = static(tensor.shape[dim]), ranges.of(start)
    if not isinstance(end, int) or lowest is None:
        return None
    return max(0, end - lowest[0])


def _kept(live: int, extent: int) -> int | None:
    """The elements a dim of ``extent`` keeps for ``live``: the least power of two at or above
    ``live``, at least MIN_PART; None where that is the whole.  Not a sum of two powers: F = 192 kept
    as 128 + 64 of a 256-wide tile measured slower than the whole tile (session 54, 0.1601 -> 0.1650 ms)."""
    kept = max(MIN_PART, 1 << (live - 1).bit_length())
    return kept if kept < extent else None


def _tile_to_global(s) -> tuple | None:
    """(whole register region, global box) of a copy or tile atomic that stores a tile into memory."""
    ends = region_ends(s)
    if ends is None or ends[1].buffer.scope != ir.GLOBAL:
        return None
    return ends if ends[0].is_whole() else None


def _outside(box: ir.Region, ranges) -> bool:
    """Whether ``box`` lies past its tensor's end along some dim in every block."""
    return any(_live(box, d, ranges) == 0 for d in range(box.buffer.ndim))


def _groups(body, seeds: dict) -> list:
    """The seeds' groups of (buffer, dim) the statements tie together (union-find over their links)."""
    parent: dict = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for x, y in partner_links(body):
        parent[find(x)] = find(y)
    members: dict = {}
    for key in list(parent):
        members.setdefault(find(key), []).append(key)
    roots = {find(seed) for seed in seeds}
    return [[key for key in members.get(root, [root]) if key[0] != "loop"] for root in roots]


def _parts_of(group: list, seeds: dict, tiles: dict) -> list | None:
    """(buffer, dim, parts) for each buffer of ``group``, the last part the dead one, where every
    buffer is a whole tile under one dim and all share one extent; else None."""
    buffers = [b for b, _ in group]
    if len(set(buffers)) != len(buffers) or any(b not in tiles for b in buffers):
        return None
    extents = {tiles[b][dim] for b, dim in group}
    if len(extents) != 1:
        return None
    extent = extents.pop()
    kept = _kept(max(seeds[key] for key in group if key in seeds), extent)
    if kept is None:
        return None
    parts = [(0, kept), (kept, extent - kept)]
    return [(b, dim, parts) for b, dim in group]


def _disjoint(groups) -> list:
    """Groups without a buffer in common, the largest dead part first: a buffer is cut along one dim
    a round (another dim's group waits for the next)."""

    def dead_share(group):
        _, _, parts = group[0]
        return parts[-1][1] / (parts[-1][0] + parts[-1][1])

    chosen, taken = [], set()
    for group in sorted(groups, key=dead_share, reverse=True):
        buffers = {b for b, _, _ in group}
        if not buffers & taken:
            chosen.append(group)
            taken |= buffers
    return chosen


# ------------------------------------------------------------------------------ what goes
def _without_outside_stores(body: list, dead_parts: set, ranges) -> list:
    """``body`` without the copies and tile atomics of a dead part into a box wholly past its tensor's
    end, and, in a ``T.Parallel`` that reads a dead part, without the element stores past a tensor's
    end in every lane and block (the loop goes too where no store is left)."""

    out = []
    for s in body:
        pair = _tile_to_global(s)
        if pair is not None and pair[0].buffer in dead_parts and _outside(pair[1], ranges):
            continue
        if isinstance(s, _CONTAINERS):
            fields = {a: _without_outside_stores(getattr(s, a), dead_parts, ranges) for a in _BODIES if hasattr(s, a)}
            s = dataclasses.replace(s, **fields)
        elif isinstance(s, ir.Parallel) and buffer_accesses([s])[0] & dead_parts:
            lanes = ranges.copy()
            for var, extent in zip(s.vars, s.extents):
                lanes.set(var, 0, extent - 1)
            kept = _filtered(s.body, lambda x, lanes=lanes: _store_outside(x, lanes))
            if not any(isinstance(x, (ir.Store, ir.Atomic)) for x in ir.walk(kept)):
                continue
            s = dataclasses.replace(s, body=kept)
        out.append(s)
    return out


def _store_outside(s, lanes) -> bool:
    """Whether ``s`` is an element store into global memory past the tensor's end in every lane and block."""
    if not (isinstance(s, ir.Store) and s.buffer.scope == ir.GLOBAL):
        return False
    for dim, index in enumerate(s.indices):
        end, values = static(s.buffer.shape[dim]), lanes.of(index)
        if isinstance(end, int) and values is not None and values[0] >= end:
            return True
    return False


def _dead(body: list, parts: set) -> set:
    """Of ``parts``, those nothing reads but statements that only write such parts."""
    dead = set(parts)
    while True:
        live = set()
        for unit, reads, _ in _units(body):
            if not _removable(unit, dead):
                live |= reads & dead
        if not live:
            return dead
        dead -= live


_CONTAINERS = (ir.For, ir.If, ir.While, ir.Kernel)  # statements whose bodies are statements of their own
_BODIES = ("body", "then_body", "else_body")


def _units(body: list):
    """(statement, roots it reads, roots it writes) for each statement as a whole, and for each
    loop or branch its own expressions, its body's statements in turn."""
    for s in body:
        if isinstance(s, _CONTAINERS):
            yield s, loaded_roots(ir.stmt_exprs(s)), set()
            for attr in _BODIES:
                yield from _units(getattr(s, attr, None) or [])
        else:
            reads, writes = buffer_accesses([s])
            yield s, reads, writes


_PURE = (ir.Store, ir.Let, ir.If)  # what a removable T.Parallel body holds


def _removable(s, dead: set) -> bool:
    if isinstance(s, ir.Alloc):
        return s.buffer in dead
    if not isinstance(s, (ir.Fill, ir.Copy, ir.Gemm, ir.Parallel)):
        return False
    if isinstance(s, ir.Parallel) and not all(isinstance(x, _PURE) for x in ir.walk(s.body)):
        return False
    _, writes = buffer_accesses([s])
    return bool(writes) and writes <= dead


def _drop(body: list, dead: set) -> list:
    return _filtered(body, lambda s: _removable(s, dead))


def _filtered(body: list, gone) -> list:
    out = []
    for s in body:
        if gone(s):
            continue
        if isinstance(s, _CONTAINERS):
            fields = {a: _filtered(getattr(s, a), gone) for a in _BODIES if hasattr(s, a)}
            s = dataclasses.replace(s, **fields)
        out.append(s)
    return out
