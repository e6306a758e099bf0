"""A ``T.copy`` from global memory to global memory, larger than the block holds in registers, as a loop of
smaller copies.

TileLang lowers such a copy as a loop of vector loads and stores over the region: nothing of it stays in
registers.  Lowered as one Triton tile, the whole region is loaded before it is stored, padded to powers of
two: DeepSeek sparse MLA backward's ``postprocess`` (``T.copy(dKV[.., bx * 64 : (bx + 1) * 64, .., :],
dKV_out[...])``, 64 x 576 fp32 to bf16 on 128 threads) became a 64 x 1024 tile, 512 elements a thread, and
ptxas spilled 5.7 KB a thread (Triton 3.6, sm_90).

Here such a copy becomes a loop nest of copies of at most ``ELEMS_PER_THREAD`` elements a thread, each an
exact part of the region (no new masks): a dim whose extent is not a power of two is first cut into its
powers of two (576 = 512 + 64: a copy each), then the outer dims (and, where still too large, the inner one)
are walked in chunks of a power of two that divides them.  Copies that already fit, whose extents are not
static, or within one tensor (whose regions may overlap) stay as written.
"""

from __future__ import annotations

import dataclasses

from .. import ir
from ..ir.dtypes import INT32
from ..ir.exprs import static
from .analysis import next_pow2
from .ir_edits import _plus, _replace
from .pow2_split import _parts

# elements of a copied tile a thread holds at once: 64 fp32 registers, sixteen 16-byte vectors in flight
ELEMS_PER_THREAD = 64


def chunk_global_copies(kernel: ir.Kernel, warps: int, warp_size: int = 32) -> ir.Kernel:
    """``kernel`` with its oversized global-to-global copies as loops of copies (the same object when none)."""
    budget = ELEMS_PER_THREAD * warps * warp_size
    replace = {}
    for s in ir.walk(kernel.body):
        if isinstance(s, ir.Copy) and _global(s.src) and _global(s.dst) and not _per_thread(s) and not _same(s):
            made = _chunked(s, budget)
            if made is not None:
                replace[id(s)] = made
    if not replace:
        return kernel
    return dataclasses.replace(kernel, body=_replace(kernel.body, replace))


def _global(region) -> bool:
    return isinstance(region, ir.Region) and region.buffer.scope == ir.GLOBAL


def _same(s: ir.Copy) -> bool:
    """Within one tensor (regions that may overlap): kept whole, every element read before any is written."""
    return s.src.buffer.root is s.dst.buffer.root


def _per_thread(s: ir.Copy) -> bool:
    """A thread-view copy at thread-dependent places (each thread copies its own region): not the block's tile."""
    starts = [*s.src.starts, *s.dst.starts]
    return any(isinstance(n, ir.VarRef) and n.var.kind == "thread" for e in starts for n in ir.iter_expr_tree(e))


def _copied_dims(s: ir.Copy) -> list | None:
    """(src dim, dst dim, extent) of each dim the copy spans (extent > 1), outermost first; None where an
    extent is not static or the two regions do not span the same extents."""
    spans = []
    for region in (s.src, s.dst):
        extents = [static(e) for e in region.extents]
        if any(e is None for e in extents):
            return None
        spans.append([(d, e) for d, e in enumerate(extents) if e != 1])
    (src, dst) = spans
    if [e for _, e in src] != [e for _, e in dst]:
        return None
    return [(ds, dd, e) for (ds, e), (dd, _) in zip(src, dst)]


def _chunked(s: ir.Copy, budget: int) -> list | None:
    dims = _copied_dims(s)
    if not dims:
        return None
    padded = 1
    for *_, e in dims:
        padded *= next_pow2(e)
    if padded <= budget:
        return None
    *outer, (ds, dd, inner) = dims
    # an inner extent of many small powers of two is kept whole (padded)
    parts = (_parts(inner) if next_pow2(inner) != inner else None) or [(0, inner)]
    out = []
    for start, width in parts:
        part = _narrowed(s, ds, dd, start, width) if len(parts) > 1 else s
        out.extend(_loop_nest(part, [*outer, (ds, dd, width)], budget))
    return out


def _narrowed(s: ir.Copy, ds: int, dd: int, start: int, width: int) -> ir.Copy:
    return ir.Copy(
        s.loc, _sub(s.src, ds, ir.Const(start, INT32), width), _sub(s.dst, dd, ir.Const(start, INT32), width)
    )


def _sub(region: ir.Region, dim: int, offset, extent: int) -> ir.Region:
    """``region`` from ``offset`` past its start on ``dim``, ``extent`` long there."""
    starts = list(region.starts)
    start = starts[dim]
    starts[dim] = _plus(ir.Const(start, INT32) if isinstance(start, int) else start, offset)
    extents = list(region.extents)
    extents[dim] = extent
    return ir.Region(region.buffer, tuple(starts), tuple(extents))


def _loop_nest(s: ir.Copy, dims: list, budget: int) -> list:
    """``s`` (spanning ``dims``, each a power of two or an exact chunking of it) as serial loops over chunks:
    outer dims first, each in the largest power-of-two chunk that divides it and lets the dims inside it fit."""
    chunks = [e for *_, e in dims]
    for k in range(len(dims)):
        inside = 1
        for e in chunks[k + 1 :]:
            inside *= next_pow2(e)
        if inside * next_pow2(chunks[k]) <= budget:
            break
        chunk = 1
        while chunks[k] % (chunk * 2) == 0 and inside * chunk * 2 <= budget:
            chunk *= 2
        chunks[k] = chunk
    copy, loops = s, []
    for (ds, dd, extent), chunk in zip(dims, chunks):
        if chunk == extent:
            continue
        var = ir.Var(f"copy_chunk{len(loops)}", INT32, "loop")
        offset = ir.BinOp("*", ir.VarRef(var), ir.Const(chunk, INT32), INT32)
        copy = ir.Copy(s.loc, _sub(copy.src, ds, offset, chunk), _sub(copy.dst, dd, offset, chunk))
        loops.append((var, extent // chunk))
    body = [copy]
    for var, trips in reversed(loops):
        body = [ir.For(s.loc, var, ir.Const(0, INT32), ir.Const(trips, INT32), ir.Const(1, INT32), "serial", body)]
    return body
