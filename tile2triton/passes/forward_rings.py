"""Hand-pipelined rings read at their source (``TILE2TRITON_FORWARD_RINGS``).

A TileLang kernel may software-pipeline a loop by hand over a ring of shared-memory slots
(MInference's vertical-slash attention: cp.async copies in flight while the previous slot is
used)::

    ring[0, i, j] = F(start - 1)            # prologue: the first iteration's tile
    for v in T.serial(start, stop):
        ring[(v + 1) % 2, i, j] = F(v)      # the slot of the next iteration
        ... ring[v % 2, ...] ...            # this iteration's slot, stored one iteration earlier
    ... ring[stop % 2, ...] ...             # epilogue: the last slot

tile2triton keeps a shared buffer in registers, so the ring is a ``[2, 64, 64]`` tile carried
through the loop (and through every loop before it that writes it), each slot picked out by a
select over both: twice the registers, and the loads are not pipelined, since no load feeds the
dot of its own iteration.  Triton pipelines a loop itself when a tile is loaded where it is used,
so each read of the ring here computes what the slot holds: ``F`` at the iteration that stored it.
The stores, read by nobody any more, go.  The loop is then the plain form Triton's pipeliner
prefetches (``num_stages``), as a Triton author would write it.

In terms of iterations: a store ``ring[(v + a) % D, ...] = F(v)`` in the loop's body, the only
write of the ring there, fills slot ``(u + a) % D`` with ``F(u)`` at iteration ``u``.  A read of
slot ``(v + b) % D`` at iteration ``v`` finds the tile of the latest iteration ``u <= v`` (``u < v``
where the read comes before the store in the body) with ``u + a == v + b (mod D)``; a read after
the loop of slot ``(stop + c) % D`` finds the latest ``u <= stop - 1``.  Iterations before
``start`` are the prologue: stores before the loop whose slots and values are those of iterations
``start - 1, start - 2, ...`` (compared after folding integer sums: ``(start - 1 + a) % D`` and
``F(start - 1)``), as many as the reads reach back.

Forwarded when (checked; otherwise nothing changes):

- the store is a ``T.Parallel`` of one unconditional store writing a whole slot (its variables
  index the other dims, each whole), or a ``T.copy`` from a global region into a whole slot, at the
  top level of a ``T.serial`` / ``T.unroll`` loop of step 1, or alone under an ``if`` there that
  holds at every iteration whose tile is read (a guarded prefetch, ``if v + 1 < stop:``: each
  comparison ``v + c < stop`` with ``c`` at most the reads' least lag); its slot index is
  ``(v + a) % D``;
- some read reaches back before its own iteration (a loop that reads only slots stored earlier
  in the same iteration is no pipeline: ``TILE2TRITON_FORWARD_STAGES`` reads those already);
- every read of the ring in the loop, and after it until the next statement that writes the ring,
  is a ``T.copy`` out of one slot or an element load, at a slot ``(v + b) % D`` (in the loop) or
  ``(stop + c) % D`` (after it), the same ``D``;
- ``F`` and the loop's bounds read only buffers nothing writes from the prologue to the last
  forwarded read, names bound once (names bound in the body before the store are inlined), block
  and thread indices, the loop variable and the store's own variables;
- no view of the ring exists.

A read after the loop uses the tile of iteration ``max(stop, start) - 1 - e`` (``e`` from its
slot), exact whenever the loop runs; where it runs no iteration (``stop < start``) and the slot
read is not one the prologue filled, TileLang reads what the slot held before the prologue, this
the prologue's tile (docs/compat.md).  The ring's stores are dropped where no read of the ring
remains after them in program order or in a loop around them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .. import ir
from ..ir.dtypes import INT32
from ..ir.exprs import conjuncts, int_const, static
from .ir_edits import _map_children, _map_exprs, _subst
from .thread_copies import _loads, _nodes

_LOOP_KINDS = ("serial", "unroll")


class _Refuse(Exception):
    pass


@dataclass
class _SlotStore:
    """A statement that writes one whole slot of a ring: ``value(element indices)`` per element."""

    stmt: ir.Stmt
    buffer: ir.Buffer
    dim: int  # the slot dim
    slot: ir.Expr
    lanes: tuple  # the variables ``template`` is written in, one per element dim (the other dims)
    template: ir.Expr  # the stored value (cast to the ring's dtype), in ``lanes``
    guard: ir.Expr | None = None  # ``if guard:`` around the store in the loop's body (a guarded prefetch)

    def value(self, index: tuple) -> ir.Expr:
        return _subst(self.template, dict(zip(self.lanes, index)))


@dataclass
class _Read:
    stmt: ir.Stmt  # the statement holding it (a Copy, or any statement loading elements)
    slot: ir.Expr  # the slot index it reads at


_LANE_NAMES = ("i", "j", "k")


def forward_rings(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with the rings described above read at their source (a new Kernel; ``kernel``
    itself when nothing applies)."""
    ctx = _Context(kernel)
    body = ctx.lists(kernel.body)
    if not ctx.changed:
        return kernel
    body = _drop_dead_stores(body, ctx.dead_candidates)
    return dataclasses.replace(kernel, body=body)


class _Context:
    def __init__(self, kernel: ir.Kernel):
        self.kernel = kernel
        self.changed = False
        self.dead_candidates: dict = {}  # id(store statement) -> ring buffer
        self.let_count: dict = {}
        self.lets: dict = {}  # Var bound once -> its value
        for s in ir.walk(kernel.body):
            if isinstance(s, ir.Let):
                self.let_count[s.var] = self.let_count.get(s.var, 0) + 1
                self.lets[s.var] = s.value
        self.lets = {v: e for v, e in self.lets.items() if self.let_count[v] == 1}
        self.viewed = {b.alias_of for s in ir.walk(kernel.body) for b in _buffers_named(s) if b.alias_of is not None}

    # ---------------------------------------------------------------- the walk
    def lists(self, stmts: list) -> list:
        """``stmts`` (and every statement list nested in it) with the rings of its loops forwarded."""
        out = [self._nested(s) for s in stmts]
        for position in range(len(out)):
            tried: set = set()
            while True:
                loop = out[position]
                if not (isinstance(loop, ir.For) and loop.kind in _LOOP_KINDS and int_const(loop.step) == 1):
                    break
                todo = [st for st in _slot_stores(loop.body, loop.var) if st.buffer not in tried]
                if not todo:
                    break
                tried.add(todo[0].buffer)
                try:
                    out = self._forward(out, position, todo[0])
                except _Refuse:
                    continue
                self.changed = True
        return out

    def _nested(self, s):
        if isinstance(s, (ir.For, ir.Parallel, ir.While)):
            body = self.lists(s.body)
            return s if _same(body, s.body) else dataclasses.replace(s, body=body)
        if isinstance(s, ir.If):
            then_body, else_body = self.lists(s.then_body), self.lists(s.else_body)
            if _same(then_body, s.then_body) and _same(else_body, s.else_body):
                return s
            return dataclasses.replace(s, then_body=then_body, else_body=else_body)
        return s

    def fresh(self, name: str) -> ir.Var:
        return ir.Var(name, INT32, "lane")

    # ---------------------------------------------------------------- one ring
    def _forward(self, stmts: list, position: int, store: _SlotStore) -> list:
        loop = stmts[position]
        ring, v = store.buffer, loop.var
        if ring in self.viewed or ring.alias_of is not None:
            raise _Refuse
        at = loop.body.index(store.stmt)
        own = {id(x) for x in ir.walk([store.stmt])}
        if any(_writes(s, ring) for s in ir.walk(loop.body) if id(s) not in own):
            raise _Refuse
        # names the body binds before the store are inlined (the store is read at other iterations)
        inline: dict = {}
        for s in loop.body[:at]:
            if isinstance(s, ir.Let) and self.let_count.get(s.var) == 1:
                inline[s.var] = _subst(s.value, inline)
        slot = self._mod_form(_subst(store.slot, inline), v)
        if slot is None:
            raise _Refuse
        a, depth = slot
        store = dataclasses.replace(store, template=_subst(store.template, inline))
        inside = {x for st in ir.walk(loop.body) for x in _bound_vars(st)}
        for n in _nodes(store.template):
            if isinstance(n, ir.VarRef) and n.var is not v and n.var not in store.lanes:
                if n.var in inside or (n.var.kind == "let" and self.let_count.get(n.var) != 1):
                    raise _Refuse  # a name of one iteration, or one bound again
        # what the tile and the loop's bounds read must stay as it was, from the prologue on
        sources = {ld.buffer for e in (store.template, loop.start, loop.stop) for ld in _loads(self._inlined(e))}
        if ring in sources:
            raise _Refuse

        # reads in the loop: the tile of iteration v - lag
        reads_in = []
        for top, s in enumerate(loop.body):
            for read in self._reads(s, ring, store.dim):
                form = self._mod_form(read.slot, v)
                if form is None or form[1] != depth:
                    raise _Refuse
                b = form[0]
                lag = (a - b) % depth if top > at else 1 + (a - b - 1) % depth
                reads_in.append((read, lag))

        # reads after the loop, up to the next statement that writes the ring
        reads_after = []
        end = position + 1
        while end < len(stmts) and not any(_writes(s, ring) for s in ir.walk([stmts[end]])):
            end += 1
        last = position
        for top in range(position + 1, end):
            for read in self._reads(stmts[top], ring, store.dim):
                c = self._stop_form(read.slot, loop.stop, depth)
                if c is None or not self._bound_after(read.slot, loop.body + stmts[position + 1 : end]):
                    raise _Refuse
                reads_after.append((read, (a - c - 1) % depth))
                last = top
        if not reads_after and all(lag == 0 for _, lag in reads_in):
            # none (the loop reads no slot), or only slots stored earlier in their own iteration: no
            # pipeline, and TILE2TRITON_FORWARD_STAGES reads those at the stored tile already
            raise _Refuse
        if store.guard is not None:
            guard = _subst(store.guard, inline)
            needed = min([lag for _, lag in reads_in] + [e for _, e in reads_after])
            if not self._guard_holds(guard, v, loop.stop, needed):
                raise _Refuse
            sources |= {ld.buffer for ld in _loads(self._inlined(guard))}
        sources |= {ld.buffer for r, _ in reads_in + reads_after for ld in _loads(self._inlined(r.slot))}
        if any(_writes(s, b) for s in ir.walk(loop.body + stmts[position + 1 : last + 1]) for b in sources):
            raise _Refuse

        # the prologue: the stores of iterations start - 1, ..., start - reach
        reach = max([lag for _, lag in reads_in] + [e + 1 for _, e in reads_after])
        prologue = self._prologue(stmts, position, store, reach, sources, depth, a)

        # the rewrite
        replaced: dict = {}
        for read, lag in reads_in:
            u = ir.BinOp("-", ir.VarRef(v), ir.Const(lag, INT32), INT32) if lag else ir.VarRef(v)
            replaced[id(read.stmt)] = self._forwarded(read.stmt, ring, store, v, u)
        if reads_after:
            start, stop = static(loop.start), static(loop.stop)
            runs = isinstance(start, int) and isinstance(stop, int) and stop >= start
            # where the loop may run no iteration, the prologue's tile
            ran = loop.stop if runs else ir.Call("max", (loop.stop, loop.start), INT32)
            for read, e in reads_after:
                u = ir.BinOp("-", ran, ir.Const(1 + e, INT32), INT32)
                replaced[id(read.stmt)] = self._forwarded(read.stmt, ring, store, v, u)
        out = list(stmts)
        out[position] = dataclasses.replace(loop, body=_replace(loop.body, replaced))
        out[position + 1 : end] = _replace(stmts[position + 1 : end], replaced)
        for st in [store.stmt, *prologue]:
            self.dead_candidates[id(st)] = ring
        return out

    def _guard_holds(self, guard: ir.Expr, v: ir.Var, stop: ir.Expr, lag: int) -> bool:
        """Does the store's ``if`` hold at every iteration whose tile is read: ``u <= stop - 1 - lag``
        (``lag``: the least of the reads)?  Yes for a conjunction of comparisons each ``u + c < stop``
        (or ``<=``, ``>``, ``>=`` of the same) with ``c <= lag``."""
        parts = conjuncts(guard)
        limit = _linear(stop, self.lets)
        if limit is None:
            return False
        for p in parts:
            if not isinstance(p, ir.Compare) or p.op not in ("<", "<=", ">", ">="):
                return False
            high, low = (p.rhs, p.lhs) if p.op in ("<", "<=") else (p.lhs, p.rhs)
            # high - low >= 1 wanted; with ``<=`` / ``>=``, high - low + 1 >= 1
            diff = _linear(ir.BinOp("-", high, low, INT32), self.lets)
            if diff is None:
                return False
            const, terms = diff
            if p.op in ("<=", ">="):
                const += 1
            want = dict(limit[1])
            want[("var", id(v))] = want.get(("var", id(v)), 0) - 1
            if terms != {k: c for k, c in want.items() if c}:
                return False
            # high - low = stop - u + (const - limit's constant) >= 1 + lag + ...
            if 1 + lag + const - limit[0] < 1:
                return False
        return True

    def _inlined(self, e: ir.Expr) -> ir.Expr:
        return _inline_lets(e, self.lets)

    def _bound_after(self, e: ir.Expr, stmts: list) -> bool:
        """Is every name ``e`` reads through that loads memory bound in ``stmts`` (where the loop's
        bound and the read both see what the checked writes leave)?"""
        lets = {s.var for s in ir.walk(stmts) if isinstance(s, ir.Let)}
        for n in _nodes(e):
            if isinstance(n, ir.VarRef) and n.var in self.lets and _loads(self._inlined(self.lets[n.var])):
                if n.var not in lets or not self._bound_after(self.lets[n.var], stmts):
                    return False
        return True

    def _prologue(self, stmts, position, store, reach, sources, depth, a) -> list:
        """The prologue's stores (statements), checked to be iterations start - 1 ... start - reach."""
        loop = stmts[position]
        start = static(loop.start)
        if not isinstance(start, int):
            raise _Refuse
        latest: dict = {}  # slot -> (position, its store), the last store before the loop
        for q in range(position - 1, -1, -1):
            s = stmts[q]
            found = _slot_store(s, store.buffer, None) if isinstance(s, (ir.Parallel, ir.Copy)) else None
            if found is None:
                if any(_writes(x, store.buffer) for x in ir.walk([s])):
                    break  # an earlier store could be overwritten in part: the prologue ends here
                continue
            slot = static(found.slot)
            if not isinstance(slot, int) or found.dim != store.dim:
                break
            latest.setdefault(slot % depth, (q, found))
        used = []
        for x in range(start - reach, start):
            entry = latest.get((x + a) % depth)
            if entry is None:
                raise _Refuse
            q, found = entry
            lanes = tuple(ir.VarRef(self.fresh("e")) for _ in found.lanes)
            want = _subst(store.value(lanes), {loop.var: ir.Const(x, INT32)})
            if _canon(want, self.lets) != _canon(found.value(lanes), self.lets):
                raise _Refuse
            if any(_writes(s, b) for s in ir.walk(stmts[q + 1 : position]) for b in sources):
                raise _Refuse
            used.append(found.stmt)
        return used

    def _reads(self, s: ir.Stmt, ring: ir.Buffer, dim: int) -> list:
        """The reads of ``ring`` in ``s`` (and the statements in it), each with its slot index;
        refused where one is not a copy out of one slot or element loads at one slot."""
        found = []
        for x in ir.walk([s]):
            if isinstance(x, ir.Copy) and isinstance(x.src, ir.Region) and x.src.buffer is ring:
                if static(x.src.extents[dim]) != 1 or getattr(x.dst, "buffer", None) is ring:
                    raise _Refuse
                found.append(_Read(x, x.src.starts[dim]))
                continue
            loads = [ld for e in ir.stmt_exprs(x) for ld in _loads(e) if ld.buffer is ring]
            if loads:
                keys = {_canon(ld.indices[dim], self.lets) for ld in loads}
                if len(keys) != 1:
                    raise _Refuse
                found.append(_Read(x, loads[0].indices[dim]))
            elif ring in ir.operand_buffers(x) and not _writes(x, ring):
                raise _Refuse  # a gemm or reduction reading the ring whole
        return found

    def _forwarded(self, s: ir.Stmt, ring: ir.Buffer, store: _SlotStore, v: ir.Var, u: ir.Expr) -> list:
        """``s`` reading ``store``'s tile of iteration ``u`` instead of the ring."""

        def element(index: tuple) -> ir.Expr:
            rest = tuple(i for d, i in enumerate(index) if d != store.dim)
            return _simplify(_subst(store.value(rest), {v: u}))

        if isinstance(s, ir.Copy) and isinstance(s.src, ir.Region) and s.src.buffer is ring:
            src, dst = s.src, s.dst
            if not isinstance(dst, ir.Region):
                raise _Refuse
            src_dims = [d for d in range(ring.ndim) if static(src.extents[d]) != 1]
            dst_dims = [d for d in range(dst.buffer.ndim) if static(dst.extents[d]) != 1]
            extents = [static(src.extents[d]) for d in src_dims]
            if extents != [static(dst.extents[d]) for d in dst_dims] or not all(isinstance(n, int) for n in extents):
                raise _Refuse
            lanes = [self.fresh(_LANE_NAMES[k] if k < len(_LANE_NAMES) else "l") for k in range(len(src_dims))]
            src_index, dst_index = list(src.starts), list(dst.starts)
            for lane, ds, dd in zip(lanes, src_dims, dst_dims):
                src_index[ds] = _plus(src.starts[ds], ir.VarRef(lane))
                dst_index[dd] = _plus(dst.starts[dd], ir.VarRef(lane))
            value = ir.Cast(element(tuple(src_index)), dst.buffer.dtype)  # a copy converts to its destination's dtype
            body = [ir.Store(s.loc, dst.buffer, tuple(dst_index), value)]
            return [ir.Parallel(s.loc, lanes, extents, body)]

        def swap(e):
            if isinstance(e, ir.Load) and e.buffer is ring:
                return element(tuple(swap(i) for i in e.indices))
            return _map_children(e, swap)

        return _map_exprs(s, swap)

    # ---------------------------------------------------------------- slot forms
    def _mod_form(self, e: ir.Expr, v: ir.Var):
        """(a, D) of ``(v + a) % D`` (names bound once inlined), else None."""
        e = _inline_lets(e, self.lets)
        if not (isinstance(e, ir.BinOp) and e.op == "%"):
            return None
        depth = int_const(e.rhs)
        form = _linear(e.lhs, self.lets)
        if not depth or depth < 1 or form is None:
            return None
        const, terms = form
        if list(terms.items()) != [(("var", id(v)), 1)]:
            return None
        return const, depth

    def _stop_form(self, e: ir.Expr, stop: ir.Expr, depth: int):
        """c of ``(stop + c) % depth``, else None."""
        e = _inline_lets(e, self.lets)
        if not (isinstance(e, ir.BinOp) and e.op == "%" and int_const(e.rhs) == depth):
            return None
        diff = _linear(ir.BinOp("-", e.lhs, stop, INT32), self.lets)
        if diff is None or diff[1]:
            return None
        return diff[0]


# ------------------------------------------------------------------ slot stores
def _slot_stores(body: list, v: ir.Var) -> list:
    """The statements at the top level of a loop's body that each write one whole slot of a ring
    at a slot index naming ``v``."""
    out = []
    for s in body:
        guard = None
        inner = s
        if isinstance(s, ir.If) and not s.else_body and len(s.then_body) == 1:  # if t + 1 < n: prefetch
            guard, inner = s.cond, s.then_body[0]
        found = _slot_store(inner, None, v) if isinstance(inner, (ir.Parallel, ir.Copy)) else None
        if found is not None:
            out.append(dataclasses.replace(found, stmt=s, guard=guard))
    return out


def _slot_store(s, ring, v) -> _SlotStore | None:
    """``s`` as a _SlotStore (of ``ring`` where given; its slot naming ``v`` where given)."""
    if isinstance(s, ir.Parallel):
        if len(s.body) != 1 or not isinstance(s.body[0], ir.Store):
            return None
        st = s.body[0]
        buf = st.buffer
        lanes = {var: ext for var, ext in zip(s.vars, s.extents)}
        slot_dims = []
        order = []
        for d, idx in enumerate(st.indices):
            if isinstance(idx, ir.VarRef) and idx.var in lanes:
                if lanes[idx.var] != buf.shape[d] or idx.var in order:
                    return None
                order.append(idx.var)
            elif any(isinstance(n, ir.VarRef) and n.var in lanes for n in _nodes(idx)):
                return None
            else:
                slot_dims.append(d)
        if len(slot_dims) != 1 or len(order) != len(s.vars):
            return None
        d = slot_dims[0]
        template = ir.Cast(st.value, buf.dtype)
        found = _SlotStore(s, buf, d, st.indices[d], tuple(order), template)
    elif isinstance(s, ir.Copy):
        src, dst = s.src, s.dst
        if not (isinstance(src, ir.Region) and isinstance(dst, ir.Region) and src.buffer.scope == ir.GLOBAL):
            return None
        buf = dst.buffer
        slot_dims = [d for d in range(buf.ndim) if static(dst.extents[d]) == 1 and buf.shape[d] != 1]
        if len(slot_dims) != 1:
            return None
        d = slot_dims[0]
        for e in range(buf.ndim):
            if e != d and (static(dst.starts[e]) != 0 or static(dst.extents[e]) != buf.shape[e]):
                return None
        src_dims = [k for k in range(src.buffer.ndim) if static(src.extents[k]) != 1]
        dst_dims = [k for k in range(buf.ndim) if k != d and buf.shape[k] != 1]
        if [static(src.extents[k]) for k in src_dims] != [buf.shape[k] for k in dst_dims]:
            return None
        lanes = tuple(ir.Var(f"c{k}", INT32, "lane") for k in range(buf.ndim) if k != d)
        by_dim = dict(zip([k for k in range(buf.ndim) if k != d], lanes))
        index = list(src.starts)
        for ks, kd in zip(src_dims, dst_dims):
            index[ks] = _plus(src.starts[ks], ir.VarRef(by_dim[kd]))
        template = ir.Cast(ir.Load(src.buffer, tuple(index), s.loc), buf.dtype)
        found = _SlotStore(s, buf, d, dst.starts[d], lanes, template)
    else:
        return None
    if buf.scope not in (ir.SHARED, ir.FRAGMENT) or (ring is not None and buf is not ring):
        return None
    if v is not None and not any(isinstance(n, ir.VarRef) and n.var is v for n in _nodes(found.slot)):
        return None
    return found


# ------------------------------------------------------------------ statements
def _buffers_named(s) -> set:
    out = set(ir.operand_buffers(s))
    out.update(ld.buffer for ld in ir.loads_in(s))
    if isinstance(s, ir.Store):
        out.add(s.buffer)
    return out


_KNOWN = (ir.Alloc, ir.Let, ir.For, ir.If, ir.Parallel, ir.While, ir.Store, ir.Copy, ir.Fill, ir.Gemm, ir.Reduce,
          ir.Scan, ir.Atomic, ir.GuardedCopy, ir.ThreadAllReduce, ir.Barrier, ir.MakeTensor, ir.Print,
          ir.DeviceAssert, ir.SafeValues, ir.Break, ir.Continue)  # fmt: skip


def _writes(s, buf) -> bool:
    """Does ``s`` itself (not its nested statements) write ``buf`` (or memory ``buf`` shares)?"""
    targets = []
    if isinstance(s, ir.Store):
        targets.append(s.buffer)
    elif isinstance(s, ir.Alloc) and s.init is not None:
        targets.append(s.buffer)
    elif isinstance(s, ir.GuardedCopy):
        targets.append(s.copy.dst.buffer)
    elif not isinstance(s, _KNOWN):
        targets.extend(ir.operand_buffers(s))  # a statement named nowhere here: taken as writing all
    for name in ("dst", "c"):
        r = getattr(s, name, None)
        if isinstance(r, (ir.Region, ir.Load)):
            targets.append(r.buffer)
    return any(t is buf or t.root is buf.root for t in targets)


def _bound_vars(s) -> list:
    if isinstance(s, ir.For):
        return [s.var]
    if isinstance(s, ir.Parallel):
        return list(s.vars)
    if isinstance(s, ir.Atomic) and s.result is not None:
        return [s.result]
    return []


def _same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _replace(body: list, replaced: dict) -> list:
    """``body`` with statements replaced by lists (by id); a statement holding none of them stays
    the same object (the ring's stores are found by identity later)."""
    out = []
    for s in body:
        if id(s) in replaced:
            out.extend(replaced[id(s)])
            continue
        if isinstance(s, (ir.For, ir.Parallel, ir.While)):
            inner = _replace(s.body, replaced)
            s = s if _same(inner, s.body) else dataclasses.replace(s, body=inner)
        elif isinstance(s, ir.If):
            then_body, else_body = _replace(s.then_body, replaced), _replace(s.else_body, replaced)
            if not (_same(then_body, s.then_body) and _same(else_body, s.else_body)):
                s = dataclasses.replace(s, then_body=then_body, else_body=else_body)
        out.append(s)
    return out


def _drop_dead_stores(body: list, candidates: dict) -> list:
    """``body`` without the candidate stores no read of their ring can observe: none later in
    program order, none in a loop around the store."""
    order: dict = {}  # id(statement) -> (pre-order position, ids of the loops around it)
    reads: dict = {}  # ring -> [(position, loops)]
    rings = set(candidates.values())

    def walk(stmts, loops):
        for s in stmts:
            here = (len(order), loops)
            order[id(s)] = here
            for ring in rings:
                if _reads_ring(s, ring):
                    reads.setdefault(ring, []).append(here)
            inner = loops | {id(s)} if isinstance(s, (ir.For, ir.While)) else loops
            for name in ("body", "then_body", "else_body"):
                child = getattr(s, name, None)
                if child:
                    walk(child, inner)

    walk(body, frozenset())
    dead = set()
    for sid, ring in candidates.items():
        if sid not in order:
            continue
        at, loops = order[sid]
        if not any(pos > at or (loops & read_loops) for pos, read_loops in reads.get(ring, [])):
            dead.add(sid)
    if not dead:
        return body

    def go(stmts):
        out = []
        for s in stmts:
            if id(s) in dead:
                continue
            if isinstance(s, (ir.For, ir.Parallel, ir.While)):
                s = dataclasses.replace(s, body=go(s.body))
            elif isinstance(s, ir.If):
                s = dataclasses.replace(s, then_body=go(s.then_body), else_body=go(s.else_body))
            out.append(s)
        return out

    return go(body)


def _reads_ring(s, ring) -> bool:
    if any(ld.buffer is ring for ld in ir.loads_in(s)):
        return True
    if ring not in ir.operand_buffers(s):
        return False
    if isinstance(s, (ir.Store, ir.Fill, ir.Alloc)):
        return False
    if isinstance(s, ir.Copy):  # a copy into the ring reads it only where it copies from it too
        return getattr(s.src, "buffer", None) is ring
    return True


# ------------------------------------------------------------------ expressions
def _inline_lets(e, lets: dict, depth: int = 0):
    if depth > 16:
        return e
    if isinstance(e, ir.VarRef) and e.var in lets:
        return _inline_lets(lets[e.var], lets, depth + 1)
    return _map_children(e, lambda x: _inline_lets(x, lets, depth))


def _plus(a, b):
    if int_const(a) == 0:
        return b
    return ir.BinOp("+", a, b, INT32)


def _is_int(e) -> bool:
    return getattr(e.dtype, "kind", None) == "int"


def _linear(e, lets: dict | None):
    """An integer expression as (constant, {term key: coefficient}) over +, -, * by constants and
    unary minus; other sub-expressions are terms keyed by their canonical form.  None unless int."""
    if not _is_int(e):
        return None
    const, terms = 0, {}

    def add(node, coef):
        nonlocal const
        c = int_const(node)
        if c is not None:
            const += coef * c
        elif isinstance(node, ir.VarRef) and lets is not None and node.var in lets and _is_int(lets[node.var]):
            add(lets[node.var], coef)
        elif isinstance(node, ir.BinOp) and node.op in ("+", "-") and _is_int(node):
            add(node.lhs, coef)
            add(node.rhs, coef if node.op == "+" else -coef)
        elif isinstance(node, ir.BinOp) and node.op == "*" and _is_int(node) and int_const(node.rhs) is not None:
            add(node.lhs, coef * int_const(node.rhs))
        elif isinstance(node, ir.BinOp) and node.op == "*" and _is_int(node) and int_const(node.lhs) is not None:
            add(node.rhs, coef * int_const(node.lhs))
        elif isinstance(node, ir.UnaryOp) and node.op == "-" and _is_int(node):
            add(node.operand, -coef)
        else:
            key = _canon(node, lets)
            terms[key] = terms.get(key, 0) + coef

    add(e, 1)
    return const, {k: c for k, c in terms.items() if c}


def _canon(e, lets: dict | None):
    """A structural key of ``e`` in which equal integer sums compare equal (``(-1 * 64 + 64) + i``
    and ``0 + i``): names bound once are read through."""
    if isinstance(e, ir.VarRef):
        if lets is not None and e.var in lets:
            return _canon(lets[e.var], lets)
        return ("var", id(e.var))
    if _is_int(e) and (isinstance(e, (ir.Const, ir.UnaryOp)) or (isinstance(e, ir.BinOp) and e.op in ("+", "-", "*"))):
        const, terms = _linear(e, lets)
        if not terms:
            return ("const", const)
        if const == 0 and list(terms.values()) == [1]:
            return next(iter(terms))
        return ("sum", const, tuple(sorted(terms.items(), key=repr)))
    if isinstance(e, ir.Const):
        return ("const", e.value)
    if isinstance(e, ir.Load):
        return ("load", id(e.buffer), tuple(_canon(i, lets) for i in e.indices))
    if isinstance(e, (ir.BinOp, ir.Compare)):
        return (type(e).__name__, e.op, _canon(e.lhs, lets), _canon(e.rhs, lets))
    if isinstance(e, ir.UnaryOp):
        return ("unary", e.op, _canon(e.operand, lets))
    if isinstance(e, ir.Cast):
        return ("cast", e.dtype.name, _canon(e.value, lets))
    if isinstance(e, ir.Select):
        return ("select", _canon(e.cond, lets), _canon(e.true_value, lets), _canon(e.false_value, lets))
    if isinstance(e, ir.Call):
        return ("call", e.fn, tuple(_canon(a, lets) if isinstance(a, ir.Expr) else a for a in e.args))
    return ("node", id(e))


def _simplify(e):
    """``e`` with its integer sums folded (``(bi - 1) * 64 + 64 + i`` is ``bi * 64 + i``): the
    terms in the order they first appear, then the constant."""
    if _is_int(e) and isinstance(e, ir.BinOp) and e.op in ("+", "-", "*"):
        const, order = 0, []

        def add(node, coef):
            nonlocal const
            c = int_const(node)
            if c is not None:
                const += coef * c
            elif isinstance(node, ir.BinOp) and node.op in ("+", "-") and _is_int(node):
                add(node.lhs, coef)
                add(node.rhs, coef if node.op == "+" else -coef)
            elif isinstance(node, ir.BinOp) and node.op == "*" and _is_int(node) and int_const(node.rhs) is not None:
                add(node.lhs, coef * int_const(node.rhs))
            elif isinstance(node, ir.BinOp) and node.op == "*" and _is_int(node) and int_const(node.lhs) is not None:
                add(node.rhs, coef * int_const(node.lhs))
            else:
                node = _simplify(node)
                key = _canon(node, None)
                for entry in order:
                    if entry[0] == key:
                        entry[2] += coef
                        return
                order.append([key, node, coef])

        add(e, 1)
        out = None
        for _, node, coef in order:
            if coef == 0:
                continue
            term = node if abs(coef) == 1 else ir.BinOp("*", node, ir.Const(abs(coef), e.dtype), e.dtype)
            if out is None:
                out = term if coef > 0 else ir.BinOp("-", ir.Const(0, e.dtype), term, e.dtype)
            else:
                out = ir.BinOp("+" if coef > 0 else "-", out, term, e.dtype)
        if out is None:
            return ir.Const(const, e.dtype)
        if const:
            out = ir.BinOp("+" if const > 0 else "-", out, ir.Const(abs(const), e.dtype), e.dtype)
        return out
    return _map_children(e, _simplify)
