"""Copies of global tiles issued ahead of the block-uniform ``if`` that holds them, in a
software-pipelined loop (``LoweringOptions.speculate_copies``, TILE2TRITON_SPECULATE_COPIES).

Sparse attention loops guard each key block by a data-dependent test (block-sparse masks,
``if block_mask[k]``; NSA's ``if 0 <= i_s <= i_t``).  Triton's software pipeliner only prefetches
loads at the top level of the loop body: a ``tl.load`` inside ``scf.if`` is a plain synchronous
load, so every iteration waits for its K and V tiles (blocksparse_attention's kernel compiled for
sm_90: no async copy at all).  Issued before the ``if`` with the condition in their mask, the same
loads read nothing where the condition is false and become ``cp.async`` copies, three stages deep.

A copy moves when nothing it depends on changes between the test and the copy, and nothing else
sees its destination:

* it copies a global tile the kernel never writes into a whole register buffer, at the top level of
  an ``if`` without ``else`` at the top level of the loop body;
* its region's indices use no name bound inside the ``if`` and load only from unwritten globals;
* its destination appears nowhere in the kernel but in the statements of that ``if`` after it (so
  the zeros it holds when the condition is false are never read, in this iteration or later).
"""

from __future__ import annotations

from .. import ir
from ..passes.analysis import referenced_buffers
from .descriptors import _written_globals
from .local_loops import in_memory, vars_in
from .rules_base import lowers
from .values import Lowerer

_BODIES = ("body", "then_body", "else_body")


def speculate_copies(lw: Lowerer, body: list) -> list:
    """``body`` (a pipelined loop's) with the copies that qualify moved ahead of their ``if``."""
    if not lw.options.speculate_copies or lw.scope.lanes is not None:
        return body
    out, changed = [], False
    for st in body:
        if isinstance(st, ir.If) and st.then_body and not st.else_body:
            moved = [c for k, c in enumerate(st.then_body) if _movable(lw, st, k)]
            if moved:
                # the condition once, named: the guarded copies and the `if` test the same value
                guard = ir.Var("guard", ir.BOOL, "let")
                cond = ir.VarRef(guard)
                out.append(ir.Let(st.loc, guard, st.cond))
                out += [ir.GuardedCopy(c.loc, c, cond) for c in moved]
                kept = [c for c in st.then_body if not any(c is m for m in moved)]
                out.append(ir.If(st.loc, cond, kept, []))
                changed = True
                continue
        out.append(st)
    return out if changed else body


def _movable(lw: Lowerer, guard: ir.If, k: int) -> bool:
    c = guard.then_body[k]
    if not (isinstance(c, ir.Copy) and isinstance(c.src, ir.Region) and isinstance(c.dst, ir.Region)):
        return False
    src, dst = c.src, c.dst
    if src.buffer.scope != ir.GLOBAL or dst.buffer.scope == ir.GLOBAL or not dst.is_whole():
        return False
    written = _written_globals(lw)
    if src.buffer.root in written or src.buffer.root.address is not None:
        return False
    rb = lw.regs.get(dst.buffer)
    if rb is None or rb.lanes is not None or rb.view_of is not None or in_memory(lw, dst.buffer):
        return False
    index = list(src.starts) + list(src.extents)
    bound = {s.var for s in ir.walk(guard.then_body) if isinstance(s, ir.Let)}
    if vars_in(index) & bound:
        return False
    for e in index:
        for sub in ir.iter_expr_tree(e):
            if isinstance(sub, ir.Load) and (sub.buffer.scope != ir.GLOBAL or sub.buffer.root in written):
                return False
    # the destination: named by no statement before the copy in the `if`, and by none outside it
    if any(dst.buffer in referenced_buffers(s) for s in guard.then_body[:k]):
        return False
    inside = {id(s) for s in ir.walk(guard.then_body[k:])}
    for s in ir.walk(lw.kernel.body):
        if id(s) in inside or isinstance(s, ir.Alloc):
            continue
        if any(hasattr(s, a) for a in _BODIES):  # a loop or branch: its own expressions (its body is walked)
            if any(load.buffer is dst.buffer for load in ir.loads_in(s)):
                return False
        elif dst.buffer in referenced_buffers(s):
            return False
    return True


@lowers(ir.GuardedCopy)
def lower_guarded_copy(lw: Lowerer, s: ir.GuardedCopy) -> None:
    cond = lw.ev(s.cond)
    if cond.axes:  # not block-uniform after all: the copy under its `if`, as written
        lw.lower_stmts([ir.If(s.loc, s.cond, [s.copy], [])])
        return
    with lw.scoped(load_guard=cond.node):
        lw.lower_stmts([s.copy])
