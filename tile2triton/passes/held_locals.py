"""Per-thread local arrays held one register value per element, as CUDA compilers hold them.

In the thread view a ``T.alloc_local((n,), dt)`` array is otherwise one ``[threads, n]`` register tile
(codegen/registers.py), and each access to an element at a position every thread shares is a one-hot
select over the n columns: a ``tl.where`` and a ``tl.sum`` a read, a ``tl.where`` a write.  A kernel
that works on its array element by element in unrolled loops (a Walsh-Hadamard butterfly, a bitonic
network, a per-thread radix count) then does n operations where TileLang's CUDA does one: nvcc unrolls
the loops that index the array and keeps each element in a register of its own.

This analysis finds the arrays that can be held that way, and the loops to unroll for it:

- a local array of the thread view (outside ``T.Parallel``) of at most ``HELD_LIMIT`` elements, used
  only through element loads and stores made outside ``T.Parallel`` (no tile operation, view, atomic or
  all-reduce names it);
- every index of those accesses is a constant once the loops it depends on are unrolled: an expression
  of constants, variables of enclosing loops and lets bound once to such expressions;
- some access is not at the variable of a loop over the whole array (an array only filled and read
  that way stays a tile: those loops are one tile axis with vector loads, codegen/local_loops.py);
- those loops, and the loops their bounds depend on, have such bounds, a positive step and no
  ``break`` / ``continue``; unrolled, they lower at most ``UNROLL_STATEMENTS`` statements.

Codegen (codegen/held.py) keeps each element as a value of its own, lowers the loops of ``unrolled``
one iteration at a time with the loop variable a constant, and binds the lets of ``static_lets`` to
their constant values.  Anything the lowering then meets that the analysis did not foresee lowers the
kernel again without that array held.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import ir
from ..ir.evaluate import HOST_OPS, INT_BIT_OPS
from ..ir.exprs import static

HELD_LIMIT = 256  # elements of one array
UNROLL_STATEMENTS = 1 << 14  # statements the unrolled loops may lower, all together

_INT_OPS = {**HOST_OPS, **INT_BIT_OPS}


@dataclass(frozen=True)
class HeldLocals:
    buffers: frozenset = frozenset()  # ir.Buffer: the arrays held one value per element
    unrolled: frozenset = frozenset()  # id() of the ir.For loops lowered one iteration at a time
    static_lets: frozenset = frozenset()  # ir.Var: lets whose value is a constant in every iteration


NOTHING = HeldLocals()


def held_locals(kernel: ir.Kernel, excluded=frozenset()) -> HeldLocals:
    """The arrays of thread-view ``kernel`` to hold by element (none of ``excluded``)."""
    if not kernel.thread_vars:
        return NOTHING
    scan = _Scan(excluded)
    scan.block(kernel.body, (), False)
    candidates = {b for b in scan.candidates if b not in scan.disqualified}
    needs = {buf: scan.loops_for(buf) for buf in candidates}
    loops_needed: set = set()
    held = set()
    while True:  # an array held makes its loops unrolled, which may end another's tile axes
        more = {
            b for b, n in needs.items() if n is not None and b not in held and not scan.tile_friendly(b, loops_needed)
        }
        if not more:
            break
        held |= more
        for buf in more:
            loops_needed |= needs[buf]
    if not held:
        return NOTHING
    loop_vars = {scan.loops[i].var for i in loops_needed}
    static_lets = frozenset(
        v for v, need in ((v, scan.needs(ir.VarRef(v))) for v in scan.once_lets) if need and need <= loop_vars
    )
    result = HeldLocals(frozenset(held), frozenset(loops_needed), static_lets)
    try:
        if _count(kernel.body, {}, scan, result) > UNROLL_STATEMENTS:
            return NOTHING
    except _NotStatic:
        return NOTHING
    return result


class _NotStatic(Exception):
    pass


@dataclass
class _Scan:
    excluded: frozenset
    candidates: set = field(default_factory=set)
    disqualified: set = field(default_factory=set)
    accesses: dict = field(default_factory=dict)  # buffer -> [(indices, enclosing loops)]
    loops: dict = field(default_factory=dict)  # id -> ir.For
    enclosing: dict = field(default_factory=dict)  # loop var -> (id of its loop, the loops around it)
    lets: dict = field(default_factory=dict)  # let var -> [values]
    _memo: dict = field(default_factory=dict)

    @property
    def once_lets(self) -> dict:
        return {v: values[0] for v, values in self.lets.items() if len(values) == 1}

    def block(self, stmts, loops: tuple, in_parallel: bool) -> None:
        for s in stmts:
            self.stmt(s, loops, in_parallel)

    def stmt(self, s, loops: tuple, in_parallel: bool) -> None:
        if isinstance(s, ir.Alloc):
            buf = s.buffer
            if buf.alias_of is not None:
                self.disqualified.add(buf.alias_of)
            elif _eligible(buf) and not in_parallel and buf not in self.excluded:
                self.candidates.add(buf)
        elif isinstance(s, ir.Let):
            self.lets.setdefault(s.var, []).append(s.value)
        if not isinstance(s, (ir.Alloc, ir.Store)):  # a region or buffer operand: a tile operation's
            self.disqualified |= ir.operand_buffers(s)
        if isinstance(s, (ir.Atomic, ir.ThreadAllReduce)) and isinstance(s.dst, ir.Load):
            self.disqualified.add(s.dst.buffer)
        for load in ir.loads_in(s):
            self.access(load.buffer, load.indices, loops, in_parallel)
        if isinstance(s, ir.Store):
            self.access(s.buffer, s.indices, loops, in_parallel)
        if isinstance(s, ir.For):
            self.loops[id(s)] = s
            self.enclosing[s.var] = (id(s), loops)
            self.block(s.body, loops + (id(s),), in_parallel)
        elif isinstance(s, ir.Parallel):
            self.block(s.body, loops, True)
        elif isinstance(s, ir.If):
            self.block(s.then_body, loops, in_parallel)
            self.block(s.else_body, loops, in_parallel)
        elif isinstance(s, ir.While):
            self.block(s.body, loops, in_parallel)
        elif isinstance(s, ir.Kernel):
            self.block(s.body, loops, in_parallel)

    def access(self, buf, indices, loops, in_parallel) -> None:
        if in_parallel:
            self.disqualified.add(buf)
        else:
            self.accesses.setdefault(buf, []).append((indices, loops))

    def needs(self, e) -> frozenset | None:
        """The loop variables ``e`` depends on, where unrolling them makes it a constant; else None."""
        if isinstance(e, ir.VarRef):  # per variable (a VarRef may be made just for the question)
            return self._needs(e)
        kept = self._memo.get(id(e))  # the node kept beside its answer: its id stays its own
        if kept is None:
            kept = self._memo[id(e)] = (e, self._needs(e))
        return kept[1]

    def _needs(self, e) -> frozenset | None:
        if isinstance(e, ir.Const):
            return frozenset() if isinstance(e.value, int) else None
        if isinstance(e, ir.VarRef):
            v = e.var
            if v.kind == "loop" and v in self.enclosing:
                return frozenset([v])
            values = self.lets.get(v)
            if v.kind == "let" and values is not None and len(values) == 1:
                return self.needs(values[0])
            return None
        if isinstance(e, ir.BinOp) and e.op in _INT_OPS and e.dtype.is_int:
            a, b = self.needs(e.lhs), self.needs(e.rhs)
            return None if a is None or b is None else a | b
        if isinstance(e, ir.Cast) and e.dtype.is_int:
            return self.needs(e.value)
        return None

    def loops_for(self, buf) -> set | None:
        """The loops to unroll for every access to ``buf`` to have constant indices; None if some
        access cannot have them."""
        loops: set = set()
        for indices, around in self.accesses.get(buf, []):
            for e in indices:
                need = self.needs(e)
                if need is None:
                    return None
                for var in need:
                    if not self._unrollable(var, around, loops):
                        return None
        return loops

    def tile_friendly(self, buf, unrolled: set) -> bool:
        """Whether every access to ``buf`` indexes it by the variable of a loop over its whole extent
        that is not unrolled (``for k in T.vectorized(n): a[k] = A[base + k]``): as a tile, such loops
        are one more tile axis (codegen/local_loops.py), whose loads are vectors; held by element
        each would be n scalar loads."""
        if len(buf.shape) != 1:
            return False
        for indices, _ in self.accesses.get(buf, []):
            (index,) = indices
            if not (isinstance(index, ir.VarRef) and index.var in self.enclosing):
                return False
            loop_id = self.enclosing[index.var][0]
            loop = self.loops[loop_id]
            if loop_id in unrolled or (static(loop.start), static(loop.step), static(loop.stop)) != (
                0,
                1,
                buf.shape[0],
            ):
                return False
        return True

    def _unrollable(self, var, around: tuple, loops: set) -> bool:
        loop_id, outer = self.enclosing[var]
        if loop_id not in around:  # a loop variable used after its loop: not an index we can fold
            return False
        if loop_id in loops:
            return True
        loop = self.loops[loop_id]
        if ir.loop_exits(loop.body):
            return False
        loops.add(loop_id)
        for bound in (loop.start, loop.stop, loop.step):
            need = self.needs(bound)
            if need is None or not all(self._unrollable(v, outer, loops) for v in need):
                return False
        return True


def _eligible(buf: ir.Buffer) -> bool:
    if buf.scope != ir.LOCAL or not all(isinstance(d, int) for d in buf.shape):
        return False
    return 2 <= math.prod(buf.shape) <= HELD_LIMIT


def _value(e, env: dict, scan: _Scan) -> int:
    if isinstance(e, ir.Const) and isinstance(e.value, int):
        return e.value
    if isinstance(e, ir.VarRef):
        if e.var in env:
            return env[e.var]
        values = scan.lets.get(e.var)
        if values is not None and len(values) == 1:
            return _value(values[0], env, scan)
    if isinstance(e, ir.BinOp) and e.op in _INT_OPS:
        a, b = _value(e.lhs, env, scan), _value(e.rhs, env, scan)
        if e.op in ("//", "%") and b == 0 or e.op in ("<<", ">>") and not 0 <= b < 64:
            raise _NotStatic
        return _INT_OPS[e.op](a, b)
    if isinstance(e, ir.Cast):
        return _value(e.value, env, scan)
    raise _NotStatic


def _count(stmts, env: dict, scan: _Scan, held: HeldLocals) -> int:
    """Statements lowered, the loops of ``held.unrolled`` unrolled (raises ``_NotStatic``)."""
    n = 0
    for s in stmts:
        n += 1
        if isinstance(s, ir.For) and id(s) in held.unrolled:
            start, stop, step = (_value(e, env, scan) for e in (s.start, s.stop, s.step))
            if step <= 0:
                raise _NotStatic
            for v in range(start, stop, step):
                n += _count(s.body, {**env, s.var: v}, scan, held)
                if n > UNROLL_STATEMENTS:
                    return n
        else:
            for attr in ("body", "then_body", "else_body"):
                n += _count(getattr(s, attr, None) or [], env, scan, held)
        if n > UNROLL_STATEMENTS:
            return n
    return n
