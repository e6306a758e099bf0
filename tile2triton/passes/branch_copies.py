"""An ``if`` / ``else`` whose branches copy the same global tiles into the same buffers from other
places, as one copy from the place the condition picks.

Block-causal attention's key loop reads its key and value tiles from one of two places::

    if is_noisy_diag != 0:
        T.copy(K[seq_start + bx * block : ..., by, :], K_shared)
    else:
        T.copy(K[clean_off + s * block : ..., by, :], K_shared)

Triton's software pipeliner prefetches only loads at the top level of a loop body; under ``scf.if``
each branch's load is synchronous, so every iteration waited for its tiles (offline TTGIR: a TMA copy
and its wait inside the branch, one buffer, no stages).  TileLang's CUDA issues the copy either way.
Here the pair becomes ``T.copy(K[T.if_then_else(is_noisy_diag != 0, seq_start + bx * block, clean_off
+ s * block) : ...], K_shared)``, which the pipeliner stages like any other.

The rewrite applies where both branches are the same number of copies, pairwise into the same whole
register or shared buffer from the same global tensor with the same extents, and the condition reads
none of the buffers they write; in block-view kernels only (a thread-view ``if`` may differ per thread,
and its copies act for the threads it keeps).
"""

from __future__ import annotations

import dataclasses

from .. import ir
from ..ir.exprs import ir_key
from .ir_edits import _replace


def merge_branch_copies(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with such branches as copies (the same object when there are none)."""
    if kernel.thread_vars:
        return kernel
    replace = {}
    for s in ir.walk(kernel.body):
        if isinstance(s, ir.If):
            merged = _merged(s)
            if merged is not None:
                replace[id(s)] = merged
    if not replace:
        return kernel
    return dataclasses.replace(kernel, body=_replace(kernel.body, replace))


def _merged(s: ir.If) -> list | None:
    then, other = s.then_body, s.else_body
    if not then or len(then) != len(other):
        return None
    written = set()
    out = []
    for a, b in zip(then, other):
        if not (_tile_copy(a) and _tile_copy(b)) or a.disable_tma != b.disable_tma:
            return None
        if a.dst.buffer is not b.dst.buffer or a.src.buffer is not b.src.buffer:
            return None
        if [_key(e) for e in a.src.extents] != [_key(e) for e in b.src.extents]:
            return None
        starts = []
        for x, y in zip(a.src.starts, b.src.starts):
            if ir_key(x) == ir_key(y):
                starts.append(x)
                continue
            picked = ir.Var(f"{a.src.buffer.name}_start", x.dtype, "let")  # named once, read by the copy
            out.append(ir.Let(a.loc, picked, ir.Select(s.cond, x, y, x.dtype)))
            starts.append(ir.VarRef(picked))
        written.add(a.dst.buffer.root)
        out.append(dataclasses.replace(a, src=ir.Region(a.src.buffer, tuple(starts), a.src.extents)))
    if any(isinstance(e, ir.Load) and e.buffer.root in written for e in ir.iter_expr_tree(s.cond)):
        return None
    return out


def _tile_copy(c) -> bool:
    """A copy of a global region into a whole on-chip buffer."""
    return (
        isinstance(c, ir.Copy)
        and isinstance(c.src, ir.Region)
        and isinstance(c.dst, ir.Region)
        and c.src.buffer.scope == ir.GLOBAL
        and c.dst.buffer.scope in (ir.SHARED, ir.FRAGMENT)
        and c.dst.is_whole()
    )


def _key(e):
    return ("int", e) if isinstance(e, int) else ir_key(e)
