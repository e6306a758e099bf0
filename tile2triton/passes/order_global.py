"""A block's accesses to one global buffer, kept in statement order (no switch: TileLang's semantics).

A block-view statement runs for the whole block, and TileLang's threads run the statements in order:
``k = Off[bx, bi]`` and then ``Off[bx, bi] = k + 1`` read the old value in every thread.  Triton
spreads each statement over the hardware threads in its own layout, and keeps no order between two
statements' global accesses made by different threads: a scalar is loaded by every thread but
stored by one, and a tile's elements may sit on other threads in the next statement.  So a warp
running behind may load what another already stored (on the H200, a list a loop reads and updates
in place read the updated entries).  In TileLang the ``__syncthreads`` it places around shared
memory usually stand between such accesses; where tile2triton keeps the shared tile in registers,
none does.

Here a barrier (``ir.Barrier``, ``tl.debug_barrier()``) is placed before a statement that

- reads a global buffer stored or updated by an atomic since the last barrier (a load after a store), or
- writes one that an earlier statement read since then (a store after a load: the loads of one
  statement feed its own store, which orders them).

Loops and branches as in codegen/scratch.py: a loop body starts from what was pending before it and
everything the body itself accesses (the previous iteration); after a loop or branch, the same.  A
``T.Parallel`` nest is one statement (each lane's accesses are its own in TileLang too), so is a
vectorized loop.  Left as they are: two stores to one buffer (TileLang orders no global writes
either, and disjoint epilogue stores are the common case), atomics after atomics (they commute),
inline asm, and kernels of the thread view (``T.get_thread_binding``), whose threads are TileLang's
own and whose syncs are the program's.
"""

from __future__ import annotations

import dataclasses

from .. import ir
from .analysis import buffer_accesses, loaded_roots


@dataclasses.dataclass
class _Pending:
    """Global root buffers accessed since the last barrier."""

    stored: set = dataclasses.field(default_factory=set)  # by stores and atomics
    loaded: set = dataclasses.field(default_factory=set)

    def merged(self, other: _Pending) -> _Pending:
        return _Pending(self.stored | other.stored, self.loaded | other.loaded)


def order_global_accesses(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with a barrier before each statement that could overtake another's access to the
    same global buffer (a new kernel), or ``kernel`` itself when none is needed."""
    if kernel.thread_vars or not _reads_and_writes_a_global(kernel.body):
        return kernel
    placed = [0]
    body = _order(kernel.body, _Pending(), placed)
    return dataclasses.replace(kernel, body=body) if placed[0] else kernel


def _reads_and_writes_a_global(body: list) -> bool:
    read, written = _accesses_of(body)
    return bool(read & written)


def _order(stmts: list, pending: _Pending, placed: list) -> list:
    """``stmts`` with the barriers they need, ``pending`` (updated in place) before them."""
    out = []
    for s in stmts:
        if isinstance(s, ir.Barrier):
            pending.stored, pending.loaded = set(), set()
            out.append(s)
        elif isinstance(s, (ir.If, ir.While)) or (isinstance(s, ir.For) and s.kind != "vectorized"):
            out.extend(_nested(s, pending, placed))
        else:
            read, written = _accesses_of([s])
            why = _why(read & pending.stored, written & pending.loaded)
            if why:
                out.append(ir.Barrier(loc=s.loc, why=why))
                placed[0] += 1
                pending.stored, pending.loaded = set(), set()
            pending.stored |= written
            pending.loaded |= read
            out.append(s)
    return out


def _nested(s, pending: _Pending, placed: list) -> list:
    """A loop or branch: each body starts from what was pending before it and what the statement
    itself accesses (a loop's previous iteration); after it, the same (a body may not run).  A
    loop's bounds and a branch's condition are read once before it, a while's condition before
    each iteration."""
    out: list = []
    read, written = _accesses_of([s])
    start = pending.merged(_Pending(written, read))
    why = _why(_reads_of_exprs(ir.stmt_exprs(s)) & (start if isinstance(s, ir.While) else pending).stored, set())
    if why:
        out.append(ir.Barrier(loc=s.loc, why=why))
        placed[0] += 1
        start = _Pending(set(written), set(read))
    bodies = {}
    for attr in ("body", "then_body", "else_body"):
        child = getattr(s, attr, None)
        if child:
            bodies[attr] = _order(child, _Pending(set(start.stored), set(start.loaded)), placed)
    pending.stored, pending.loaded = start.stored, start.loaded
    out.append(dataclasses.replace(s, **bodies) if bodies else s)
    return out


def _why(read_after_store: set, store_after_load: set) -> str:
    """The barrier's comment in the generated source ("" where none is needed)."""
    if read_after_store:
        names = ", ".join(sorted(b.name for b in read_after_store))
        return f"{names}: every thread's earlier store lands before this reads it"
    if store_after_load:
        names = ", ".join(sorted(b.name for b in store_after_load))
        return f"{names}: every thread's earlier read comes before this stores it"
    return ""


def _accesses_of(stmts: list) -> tuple[set, set]:
    """(read, written) global root buffers of ``stmts`` and their bodies (analysis.buffer_accesses)."""
    read, written = buffer_accesses(stmts)
    return {b for b in read if b.scope == ir.GLOBAL}, {b for b in written if b.scope == ir.GLOBAL}


def _reads_of_exprs(exprs) -> set:
    return {b for b in loaded_roots(exprs) if b.scope == ir.GLOBAL}
