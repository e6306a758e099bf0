"""An attention forward on a grid under half a wave: each block's query rows over two blocks.

The suite's sink forward (1 x 32 heads x 256 tokens, 128-row query tiles) launches 64 blocks on a
132-SM card: half the SMs idle while each busy one computes a 128-row tile.  The rows of such a tile
are independent (a row's scores, softmax and output read no other row), so two blocks of half the
rows each compute the same outputs; the grid still fits one wave.  Measured over ten shapes (H100,
session 55, ``benchmarks/row_split_probe.py``, TileLang's source at 64-row tiles on 128 threads against
128-row tiles on 256): 15-25% faster on all six grids of 32 and 64 blocks; past that it depends on the
head dim (dim 128: 128 blocks 15.1 -> 17.2 us, 256 blocks 38.9 -> 41.2, slower; dim 64: 256 blocks
21.7 -> 16.8, 512 blocks 38.1 -> 37.9), so only grids that double within half the SMs are split.

A kernel is split where (``split_rows``):

* it is block-view, unswizzled, with a static grid of at most half the device's SMs in blocks, on
  sm_90 (``always``: any grid, any target; the interpreter and tests);
* a loop holds two gemms or more (the launch heuristic's "attention");
* a whole shared/fragment tile is loaded from a global box whose start along a dim is ``g * R``
  (``g`` a block index, ``R`` the box's and the tile's extent there, 2 * MIN_ROWS or more): the rows;
* the rows' partners (``_row_group``: a gemm's M dims, the dims two register buffers of one copy
  pair, one ``T.Parallel`` loop variable's dims, a reduction's kept dims) are whole static
  shared/fragment tiles, each under one dim, of ``R`` rows, none of them a gemm's K dim or a
  reduction's reduced dim, and every global box such a tile is copied from or to starts at
  ``g * R`` along the paired dim;
* a ``T.Parallel`` that walks the rows stores only into row tiles or into global memory at an
  index of its row variable (``_rows_stay_apart``: no sum across the rows into anything else).

Then ``g``'s grid axis doubles and the block's threads halve (to 128 at the least; the probe's 64-row
tiles ran on 128): ``g`` is bound to its new index halved, and ``pow2_split``'s rewriter
keeps one part of each row buffer, ``R / 2`` rows from ``(index % 2) * R / 2``; global boxes and
the ``T.Parallel`` loop variables outside the row buffers' own indices (``q_idx = bx * 128 + i``)
move with it.  Where any statement refuses a row buffer, the kernel is left as it was.
Switch: ``TILE2TRITON_ROW_SPLIT`` (``LoweringOptions.row_split``).
"""

from __future__ import annotations

import dataclasses
import math

from .. import ir
from ..ir.exprs import static
from .pow2_split import split_body
from .tile_partners import paired_dims, partner_links, region_ends, register_accesses, summed_dims, whole_tiles

MIN_ROWS = 64  # a half keeps at least a warpgroup's wgmma M
WARPGROUP = 128  # threads
MEASURED_ARCHS = ("sm_90",)  # the probe's card (as runtime/tuning.py's rules): elsewhere only ``always`` splits


def split_rows_for(kernel: ir.Kernel, mode: str, arch: str | None, sms: int | None) -> ir.Kernel:
    """``split_rows`` as ``TILE2TRITON_ROW_SPLIT``'s ``mode`` asks ("off", "on" on a measured card, "always"),
    for the card ``arch`` of ``sms`` SMs; the lowering, the launch heuristic and the Gluon routes all ask here."""
    if mode == "off" or (mode == "on" and arch not in MEASURED_ARCHS):
        return kernel
    return split_rows(kernel, sms, always=mode == "always")


def split_rows(kernel: ir.Kernel, sms: int | None, always: bool = False) -> ir.Kernel:
    """``kernel`` with its blocks' rows over twice the blocks, or itself where the rule does not apply."""
    if kernel.thread_vars or kernel.swizzle or kernel.compute_threads or kernel.section_threads:
        return kernel
    grid = [static(g) for g in kernel.grid]
    if not all(isinstance(g, int) for g in grid):
        return kernel
    if not always and (not sms or 2 * math.prod(grid) > sms):
        return kernel
    if not any(_gemms_in(s) >= 2 for s in ir.walk(kernel.body) if isinstance(s, ir.For)):
        return kernel
    tiles = whole_tiles(kernel.body)
    found = _rows(kernel, tiles)
    if found is None:
        return kernel
    axis, group, rows = found
    return _split(kernel, axis, group, rows)


def _gemms_in(loop: ir.For) -> int:
    return sum(isinstance(s, ir.Gemm) for s in ir.walk(loop.body))


def _block_start(start, block_vars) -> tuple | None:
    """(block var, R) where ``start`` is ``g * R`` (or ``R * g``), ``g`` a block index."""
    if not (isinstance(start, ir.BinOp) and start.op == "*"):
        return None
    for var_side, factor in ((start.lhs, start.rhs), (start.rhs, start.lhs)):
        rows = static(factor)
        if isinstance(var_side, ir.VarRef) and var_side.var in block_vars and isinstance(rows, int):
            return var_side.var, rows
    return None


def _global_boxes(body, tiles: dict) -> list:
    """(tile region, global box) of every copy between a whole register tile and a global box."""
    out = []
    for s in ir.walk(body):
        ends = region_ends(s)
        if ends is None:
            continue
        src, dst = ends
        if src.buffer.scope == ir.GLOBAL and dst.buffer in tiles and dst.is_whole():
            out.append((dst, src))
        elif dst.buffer.scope == ir.GLOBAL and src.buffer in tiles and src.is_whole():
            out.append((src, dst))
    return out


def _rows(kernel: ir.Kernel, tiles: dict) -> tuple | None:
    """(grid axis, {buffer: dim} of the row group, R) for the first tile loaded at ``g * R`` rows
    whose group passes every check, else None."""
    boxes = _global_boxes(kernel.body, tiles)
    for tile, box in boxes:
        for dim, global_dim in paired_dims(tile, box):
            start = _block_start(box.starts[global_dim], kernel.block_vars)
            if start is None or start[1] != tiles[tile.buffer][dim] or start[1] < 2 * MIN_ROWS or start[1] % 2:
                continue
            var, rows = start
            group = _row_group(kernel.body, (tile.buffer, dim), tiles, rows)
            if group is not None and _boxes_follow(boxes, group, var, rows) and _rows_stay_apart(kernel.body, group):
                return kernel.block_vars.index(var), group, rows
    return None


def _row_group(body, seed: tuple, tiles: dict, rows: int) -> dict | None:
    """{buffer: dim} of the (buffer, dim) pairs the statements tie to ``seed``, where each is a whole
    static tile of ``rows`` under one dim that no gemm reduces over (K) and no reduction reduces."""
    links: dict = {}
    for x, y in partner_links(body, reductions=True):
        links.setdefault(x, set()).add(y)
        links.setdefault(y, set()).add(x)
    barred = summed_dims(body)  # (buffer, dim) a gemm's K or a reduction sums over
    seen, todo = {seed}, [seed]
    while todo:
        for other in links.get(todo.pop(), ()):
            if other not in seen:
                seen.add(other)
                todo.append(other)
    group: dict = {}
    for key in seen:
        if key[0] == "loop":
            continue
        buffer, dim = key
        if buffer not in tiles or buffer in group or key in barred or tiles[buffer][dim] != rows:
            return None
        group[buffer] = dim
    return group


def _boxes_follow(boxes: list, group: dict, var: ir.Var, rows: int) -> bool:
    """Whether every global box a row tile is copied from or to starts at ``var * rows`` along the
    dim paired with its rows (so each half reads and writes its own rows)."""
    for tile, box in boxes:
        if tile.buffer not in group:
            continue
        paired = dict(paired_dims(tile, box))
        global_dim = paired.get(group[tile.buffer])
        if global_dim is None or _block_start(box.starts[global_dim], [var]) != (var, rows):
            return False
    return True


def _rows_stay_apart(body, group: dict) -> bool:
    """Whether every ``T.Parallel`` that walks the rows (indexes a row buffer's rows with a loop variable)
    stores only into row buffers or into global memory at an index of that variable: a store or an update
    of anything else (``total[0] += l[i]``, a sum across the rows) would see only a half's rows."""
    for p in (s for s in ir.walk(body) if isinstance(s, ir.Parallel)):
        row_vars = {
            index.var
            for buffer, indices in register_accesses(p.body)
            if buffer in group
            for index in [indices[group[buffer]]]
            if isinstance(index, ir.VarRef) and any(index.var is v for v in p.vars)
        }
        if not row_vars:
            continue
        for inner in ir.walk(p.body):
            if isinstance(inner, ir.Store):
                target, indices = inner.buffer, inner.indices
            elif isinstance(inner, ir.Atomic) and isinstance(inner.dst, ir.Load):
                target, indices = inner.dst.buffer, inner.dst.indices
            elif isinstance(inner, ir.Atomic):
                return False
            else:
                continue
            if target in group:
                continue
            mentions = any(
                isinstance(e, ir.VarRef) and e.var in row_vars for index in indices for e in ir.iter_expr_tree(index)
            )
            if target.scope != ir.GLOBAL or not mentions:
                return False
    return True


def _split(kernel: ir.Kernel, axis: int, group: dict, rows: int) -> ir.Kernel:
    var = kernel.block_vars[axis]
    index = ir.Var(f"{var.name}_half", var.dtype, "block")  # the new grid index along the axis
    half = ir.Var("row_half", var.dtype, "let")
    at = ir.VarRef(index)
    two = ir.Const(2, var.dtype)
    start = ir.BinOp("*", ir.VarRef(half), ir.Const(rows // 2, var.dtype), var.dtype)
    split = {b: (dim, [(start, rows // 2)]) for b, dim in group.items()}
    done = split_body(kernel.body, split, name=lambda b, k, s: b.name, reductions=True)
    if done is None or set(split) != set(group):
        return kernel
    lets = [
        ir.Let(kernel.loc, var, ir.BinOp("//", at, two, var.dtype)),
        ir.Let(kernel.loc, half, ir.BinOp("%", at, two, var.dtype)),
    ]
    grid = list(kernel.grid)
    grid[axis] = ir.Const(static(grid[axis]) * 2, ir.INT32)
    block_vars = list(kernel.block_vars)
    block_vars[axis] = index
    # half the rows on half the threads (TileLang's own 64-row configs run 128), a warpgroup at least
    threads = kernel.threads // 2 if kernel.threads >= 2 * WARPGROUP and kernel.threads % 64 == 0 else kernel.threads
    return dataclasses.replace(kernel, grid=grid, block_vars=block_vars, body=lets + done[0], threads=threads)
