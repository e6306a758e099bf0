"""Which dims of a kernel's shared/fragment tiles its statements tie together, for the passes that cut
tiles along a dim through ``pow2_split``'s rewriter (dead_parts.py, row_split.py): a dim cut in one
buffer must be cut alike in every buffer it is tied to."""

from __future__ import annotations

from collections.abc import Iterator

from .. import ir
from ..ir.exprs import static


def whole_tiles(body) -> dict:
    """Buffer -> static shape, for the shared/fragment allocations a split may take (no views)."""
    allocs = [s for s in ir.walk(body) if isinstance(s, ir.Alloc)]
    viewed = {s.buffer.alias_of.root for s in allocs if s.buffer.alias_of is not None}
    out = {}
    for s in allocs:
        b = s.buffer
        if b.scope not in (ir.SHARED, ir.FRAGMENT) or b.alias_of is not None or b in viewed or s.init is not None:
            continue
        shape = [static(d) for d in b.shape]
        if all(isinstance(d, int) for d in shape):
            out[b] = tuple(shape)
    return out


def region_ends(s) -> tuple | None:
    """(source, destination) regions of a tile copy or tile atomic, else None."""
    if isinstance(s, ir.Copy):
        src, dst = s.src, s.dst
    elif isinstance(s, ir.Atomic):
        src, dst = s.value, s.dst
    else:
        return None
    return (src, dst) if isinstance(src, ir.Region) and isinstance(dst, ir.Region) else None


def paired_dims(a: ir.Region, b: ir.Region) -> list:
    """(dim of a, dim of b) of the non-unit dims two regions of one copy pair, in order."""
    a_dims = [d for d, e in enumerate(a.extents) if static(e) != 1]
    b_dims = [d for d, e in enumerate(b.extents) if static(e) != 1]
    if len(a_dims) != len(b_dims) or any(static(a.extents[x]) != static(b.extents[y]) for x, y in zip(a_dims, b_dims)):
        return []
    return list(zip(a_dims, b_dims))


def register_accesses(body) -> list:
    """(buffer, indices) of every element access of a non-global buffer in a ``T.Parallel`` body."""
    out = []
    for inner in ir.walk(body):
        out += [(ld.buffer, ld.indices) for ld in ir.loads_in(inner)]
        if isinstance(inner, ir.Store):
            out.append((inner.buffer, inner.indices))
        if isinstance(inner, ir.Atomic) and isinstance(inner.dst, ir.Load):
            out.append((inner.dst.buffer, inner.dst.indices))
    return [(b, i) for b, i in out if b.scope != ir.GLOBAL]


def partner_links(body, reductions: bool = False) -> Iterator[tuple]:
    """Pairs of (buffer, dim) keys the statements of ``body`` tie together: a gemm's C rows with A's M dim
    and its columns with B's N dim, the dims two register buffers of one copy pair, every dim one
    ``T.Parallel`` loop variable indexes (through a ``("loop", id, var)`` key); with ``reductions``, a
    reduction's kept dims with its destination's."""
    for s in ir.walk(body):
        if isinstance(s, ir.Gemm):
            yield (s.c.buffer, 0), (s.a.buffer, 1 if s.trans_a else 0)
            yield (s.c.buffer, 1), (s.b.buffer, 0 if s.trans_b else 1)
        elif reductions and isinstance(s, ir.Reduce):
            kept = [d for d in range(s.src.buffer.ndim) if d != s.dim]
            dst_dims = kept if s.dst.buffer.ndim == s.src.buffer.ndim else range(s.dst.buffer.ndim)
            for a, b in zip(kept, dst_dims):
                yield (s.src.buffer, a), (s.dst.buffer, b)
        elif (ends := region_ends(s)) is not None:
            src, dst = ends
            if ir.GLOBAL not in (src.buffer.scope, dst.buffer.scope):
                for x, y in paired_dims(src, dst):
                    yield (src.buffer, x), (dst.buffer, y)
        elif isinstance(s, ir.Parallel):
            for buffer, indices in register_accesses(s.body):
                for dim, index in enumerate(indices):
                    if isinstance(index, ir.VarRef) and any(index.var is v for v in s.vars):
                        yield (buffer, dim), ("loop", id(s), index.var)


def k_dims(gemm: ir.Gemm) -> tuple:
    """The (buffer, dim) keys of a gemm's A and B that it sums over (its K dims)."""
    return (gemm.a.buffer, 0 if gemm.trans_a else 1), (gemm.b.buffer, 1 if gemm.trans_b else 0)


def summed_dims(body, skip=()) -> set:
    """(buffer, dim) keys a gemm (its K dims; not the gemms in ``skip``) or a reduction (its reduced dim) sums over."""
    out = set()
    for s in ir.walk(body):
        if isinstance(s, ir.Gemm) and not any(s is g for g in skip):
            out |= set(k_dims(s))
        elif isinstance(s, ir.Reduce):
            out.add((s.src.buffer, s.dim))
    return out
