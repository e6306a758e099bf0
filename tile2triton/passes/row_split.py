"""An attention kernel on a grid under half a wave: each block's rows over two blocks (a forward's query rows,
with ``backward`` a backward's key rows).

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

With ``backward`` (``TILE2TRITON_ROW_SPLIT_BACKWARD``, on; H100, session 61: 3-21% faster on grids of 32-64 blocks) an attention backward's key rows too:

* a gemm may sum over the rows (``dQ = dS^T K``: both its K dims in the row group) where its product is a
  partial sum (``_partial_sum_gemms``): its accumulator is written only by such gemms and by fills of 0, and
  read only as the value of atomic adds into global memory (element atomics of its elements, or a tile atomic
  of it or of a copy of it that nothing else reads); each half then adds its part, and the parts sum to the
  whole tile's;
* a global box may start at ``x + g * R`` (``x`` free of ``g``: a varlen sequence's first row).

Then ``g``'s grid axis doubles and the block's threads halve (to 128 at the least; the probe's 64-row
tiles ran on 128): ``g`` is bound to its new index halved, and ``pow2_split``'s rewriter
keeps one part of each row buffer, ``R / 2`` rows from ``(index % 2) * R / 2``; global boxes and
the ``T.Parallel`` loop variables outside the row buffers' own indices (``q_idx = bx * 128 + i``)
move with it.  Where any statement refuses a row buffer, the kernel is left as it was.
Switches: ``TILE2TRITON_ROW_SPLIT`` (``LoweringOptions.row_split``), ``TILE2TRITON_ROW_SPLIT_BACKWARD``.
"""

from __future__ import annotations

import dataclasses
import math

from .. import ir
from ..ir.exprs import static
from .pow2_split import split_body
from .tile_partners import k_dims, paired_dims, partner_links, region_ends, register_accesses, summed_dims, whole_tiles

MIN_ROWS = 64  # a half keeps at least a warpgroup's wgmma M
WARPGROUP = 128  # threads
MEASURED_ARCHS = ("sm_90",)  # the probe's card (as runtime/tuning.py's rules): elsewhere only ``always`` splits


def split_rows_for(
    kernel: ir.Kernel, mode: str, arch: str | None, sms: int | None, backward: bool = False
) -> ir.Kernel:
    """``split_rows`` as ``TILE2TRITON_ROW_SPLIT``'s ``mode`` asks ("off", "on" on a measured card, "always"),
    for the card ``arch`` of ``sms`` SMs; the lowering, the launch heuristic and the Gluon routes all ask here."""
    if mode == "off" or (mode == "on" and arch not in MEASURED_ARCHS):
        return kernel
    return split_rows(kernel, sms, always=mode == "always", backward=backward)


def split_rows(kernel: ir.Kernel, sms: int | None, always: bool = False, backward: bool = False) -> ir.Kernel:
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
    found = _rows(kernel, tiles, backward)
    if found is None:
        return kernel
    axis, group, rows = found
    return _split(kernel, axis, group, rows)


def _gemms_in(loop: ir.For) -> int:
    return sum(isinstance(s, ir.Gemm) for s in ir.walk(loop.body))


def _block_start(start, block_vars, offset: bool = False) -> tuple | None:
    """(block var, R) where ``start`` is ``g * R`` (or ``R * g``), ``g`` a block index; with ``offset``
    also ``x + g * R`` (either way round) where ``x`` does not mention ``g``."""
    if offset and isinstance(start, ir.BinOp) and start.op == "+":
        for term, rest in ((start.lhs, start.rhs), (start.rhs, start.lhs)):
            found = _block_start(term, block_vars)
            if found is not None and not any(
                isinstance(e, ir.VarRef) and e.var is found[0] for e in ir.iter_expr_tree(rest)
            ):
                return found
        return None
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


def _rows(kernel: ir.Kernel, tiles: dict, backward: bool = False) -> tuple | None:
    """(grid axis, {buffer: dim} of the row group, R) for the first tile loaded at ``g * R`` rows
    whose group passes every check, else None."""
    boxes = _global_boxes(kernel.body, tiles)
    partial = _partial_sum_gemms(kernel.body) if backward else []
    for tile, box in boxes:
        for dim, global_dim in paired_dims(tile, box):
            start = _block_start(box.starts[global_dim], kernel.block_vars, offset=backward)
            if start is None or start[1] != tiles[tile.buffer][dim] or start[1] < 2 * MIN_ROWS or start[1] % 2:
                continue
            var, rows = start
            group = _row_group(kernel.body, (tile.buffer, dim), tiles, rows, partial)
            if (
                group is not None
                and _boxes_follow(boxes, group, var, rows, offset=backward)
                and _rows_stay_apart(kernel.body, group)
                and _atomics_apart(kernel.body, group, partial)
            ):
                return kernel.block_vars.index(var), group, rows
    return None


def _row_group(body, seed: tuple, tiles: dict, rows: int, partial: list = ()) -> dict | None:
    """{buffer: dim} of the (buffer, dim) pairs the statements tie to ``seed``, where each is a whole
    static tile of ``rows`` under one dim that no gemm reduces over (K) and no reduction reduces, but
    the ``partial`` gemms (``_partial_sum_gemms``), whose K dims may be rows: both or neither."""
    links: dict = {}
    for x, y in partner_links(body, reductions=True):
        links.setdefault(x, set()).add(y)
        links.setdefault(y, set()).add(x)
    for gemm in partial:  # a partial sum's two K dims split together
        x, y = k_dims(gemm)
        links.setdefault(x, set()).add(y)
        links.setdefault(y, set()).add(x)
    barred = summed_dims(body, skip=partial)  # (buffer, dim) a gemm's K or a reduction sums over
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
    for gemm in partial:  # a part of the rows' sum goes into a whole accumulator, never a row tile
        k_split = k_dims(gemm)[0] in seen
        if (k_split and gemm.c.buffer in group) or (not k_split and _sums_into_split(gemm, partial, seen)):
            return None
    return group


def _sums_into_split(gemm: ir.Gemm, partial: list, seen: set) -> bool:
    """Whether another gemm into ``gemm``'s accumulator sums over the rows: the halves would then add
    this one's whole product twice."""
    return any(other.c.buffer is gemm.c.buffer and k_dims(other)[0] in seen for other in partial)


def _partial_sum_gemms(body) -> list:
    """The gemms whose accumulator C is a partial sum each half may add on its own: C is a whole
    shared/fragment tile written only by gemms and fills of 0, and read only as the value of atomic adds
    into global memory (element atomics whose value is an element of C, or a tile atomic of C or of a
    copy of C that nothing else reads).  The sum of the halves' adds is then the whole tile's."""
    stmts = list(ir.walk(body))
    out = []
    for gemm in (s for s in stmts if isinstance(s, ir.Gemm)):
        c = gemm.c.buffer
        if c.scope in (ir.SHARED, ir.FRAGMENT) and gemm.c.is_whole() and _only_summed(c, stmts, staging=True):
            out.append(gemm)
    return out


def _only_summed(buffer: ir.Buffer, stmts: list, staging: bool) -> bool:
    """Whether every statement of ``stmts`` that touches ``buffer`` allocates it, zeroes it, accumulates a gemm into
    it, or adds it into global memory (``staging``: or copies it whole into a buffer that passes this
    test without staging)."""
    for s in stmts:
        if isinstance(s, ir.Parallel):
            continue  # its statements are among stmts (ir.walk)
        touched = buffer in ir.operand_buffers(s) or any(ld.buffer is buffer for ld in ir.loads_in(s))
        if isinstance(s, ir.Store) and s.buffer is buffer:
            return False
        if not touched:
            continue
        if isinstance(s, ir.Alloc) and s.buffer is buffer and s.init is None:
            continue
        if isinstance(s, ir.Fill) and s.dst.buffer is buffer and static(s.value) == 0:
            continue
        if isinstance(s, ir.Gemm) and s.c.buffer is buffer and buffer not in (s.a.buffer, s.b.buffer):
            continue
        if isinstance(s, ir.Atomic) and s.kind == "add" and s.result is None and _adds_into_global(s, buffer):
            continue
        if (
            staging
            and isinstance(s, ir.Copy)
            and isinstance(s.src, ir.Region)
            and isinstance(s.dst, ir.Region)
            and s.src.buffer is buffer
            and s.src.is_whole()
            and s.dst.is_whole()
            and s.dst.buffer.scope in (ir.SHARED, ir.FRAGMENT)
            and s.dst.buffer is not buffer
            and _only_summed(s.dst.buffer, [x for x in stmts if x is not s], staging=False)
        ):
            continue
        return False
    return True


def _adds_into_global(s: ir.Atomic, buffer: ir.Buffer) -> bool:
    """Whether the atomic add ``s`` reads ``buffer`` only as its value, into a global destination."""
    if isinstance(s.dst, ir.Region):
        return (
            s.dst.buffer.scope == ir.GLOBAL
            and isinstance(s.value, ir.Region)
            and s.value.buffer is buffer
            and s.value.is_whole()
            and not _reads(ir.region_exprs(s.dst), buffer)
        )
    return (
        isinstance(s.dst, ir.Load)
        and s.dst.buffer.scope == ir.GLOBAL
        and isinstance(s.value, ir.Load)
        and s.value.buffer is buffer
        and not _reads([*s.dst.indices, *s.value.indices], buffer)
    )


def _reads(exprs, buffer: ir.Buffer) -> bool:
    """Whether any of ``exprs`` loads an element of ``buffer``."""
    return any(isinstance(e, ir.Load) and e.buffer is buffer for x in exprs for e in ir.iter_expr_tree(x))


def _boxes_follow(boxes: list, group: dict, var: ir.Var, rows: int, offset: bool = False) -> bool:
    """Whether every global box a row tile is copied from or to starts at ``var * rows`` along the
    dim paired with its rows (so each half reads and writes its own rows)."""
    for tile, box in boxes:
        if tile.buffer not in group:
            continue
        paired = dict(paired_dims(tile, box))
        global_dim = paired.get(group[tile.buffer])
        if global_dim is None or _block_start(box.starts[global_dim], [var], offset) != (var, rows):
            return False
    return True


def _rows_stay_apart(body, group: dict) -> bool:
    """Whether every ``T.Parallel`` that walks the rows (indexes a row buffer's rows with a loop variable)
    stores only into row buffers or into global memory at an index of that variable: a store or an update
    of anything else (``total[0] += l[i]``, a sum across the rows) would see only a half's rows."""
    for p in (s for s in ir.walk(body) if isinstance(s, ir.Parallel)):
        row_vars = _row_vars(p, group)
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


def _row_vars(p: ir.Parallel, group: dict) -> set:
    """The loop variables of ``p`` that index a row buffer's rows: those with which it walks the rows."""
    return {
        index.var
        for buffer, indices in register_accesses(p.body)
        if buffer in group
        for index in [indices[group[buffer]]]
        if isinstance(index, ir.VarRef) and any(index.var is v for v in p.vars)
    }


def _atomics_apart(body, group: dict, partial: list) -> bool:
    """Whether every atomic adds a half's own part: an element atomic in a ``T.Parallel`` that walks the
    rows (``_rows_stay_apart`` checks its index), a tile atomic of a row tile, or the add of a partial
    sum whose gemm sums over the rows (or of its staging copy).  Any other one both halves would make."""

    def in_group(key) -> bool:
        return group.get(key[0]) == key[1]

    sums = {g.c.buffer for g in partial if in_group(k_dims(g)[0])}
    sums |= {
        s.dst.buffer
        for s in ir.walk(body)
        if isinstance(s, ir.Copy) and isinstance(s.src, ir.Region) and s.src.buffer in sums
    }
    walked = set()  # the atomics of T.Parallel loops that walk the rows
    for p in (s for s in ir.walk(body) if isinstance(s, ir.Parallel)):
        if _row_vars(p, group):
            walked |= {id(x) for x in ir.walk(p.body) if isinstance(x, ir.Atomic)}
    for s in ir.walk(body):
        if not isinstance(s, ir.Atomic) or id(s) in walked:
            continue
        value = s.value.buffer if isinstance(s.value, (ir.Region, ir.Load)) else None
        if value is None or not (value in sums or (isinstance(s.value, ir.Region) and value in group)):
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
