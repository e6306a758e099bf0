"""Atomic updates staged through an on-chip buffer, made straight from the values the buffer held.

TileLang's sparse MLA backward adds a ``[32, 512]`` dKV accumulator into global rows picked by an
index list, with ``T.atomic_addx4`` (four consecutive floats a thread): its fragment layout does not
give a thread four consecutive columns, so it stages the accumulator through shared memory, half
of the rows at a time::

    for s in range(2):
        for i, j in T.Parallel(32, 512):
            if i < 16:
                acc_shared[i, j] = acc[i + s * 16, j]
        for i, j in T.Parallel(16, 128):
            T.atomic_addx4(dKV[Idx[i + s * 16], j * 4], acc_shared[i, j * 4])

In Triton a register tensor is handed to ``tl.atomic_add`` whole and Triton picks the layout of
the vector atomics itself, so the stage is only cost: a register tile ``acc_shared`` written from
rows of ``acc`` (a gather, or, past the one-hot limit, global scratch memory with barriers) and a
loop of two halves.  Three rewrites, in order, make it one ``tl.atomic_add`` of ``acc``:

1. forwarding (``_forward``): reads of a staging buffer by atomics compute the stored value
   instead (``acc_shared[i, j * 4 + k]`` becomes ``acc[i + s * 16, j * 4 + k]``), and the
   staging store, read by nobody now, goes with its buffer;
2. folding (``_fold``): a loop whose body is T.Parallels of commuting atomics, adding into global
   buffers nothing in the loop reads, is one more axis of each T.Parallel (``T.Parallel(2, 16,
   128)``): the iterations' order cannot be observed;
3. coalescing (``_coalesce``): on such a T.Parallel, the loop's axis and an axis of the T.Parallel
   that appear only together as ``b + a * extent(b)`` are one axis of their product (``r`` in
   ``T.Parallel(32, 128)``, reading ``acc[r, j * 4 + k]``): the accumulator's rows read in order,
   whatever the sizes' padding.

Forwarding a staging buffer ``B`` is exact when (checked; otherwise nothing changes):

- ``B`` is a shared or fragment buffer of a kernel without a thread view, and its one write is a
  T.Parallel of one store (under ``if``s without ``else`` in it) at indices that are the
  T.Parallel's variables, each once;
- the stored value is arithmetic and casts of on-chip buffers' elements (no global load, no math
  function): computing it again at the reads costs nothing;
- every read of ``B`` is a load in an atomic of a statement after that store in the same
  statement list, in no sequential loop there (it would compute the value once an iteration), at
  indices where the store's conditions provably hold and which lie in the T.Parallel's extents
  and ``B``'s shape (value ranges of the loops and T.Parallels around);
- nothing from the store on writes a buffer the stored value reads, or rebinds a name it uses.

Folding takes a loop of constant trip count whose iterations' tiles together stay within
``WIDENED_PER_THREAD`` values a thread, whose atomics commute (one kind per destination, no
previous value returned) and whose statements read none of their destinations.
"""

from __future__ import annotations

import dataclasses

from .. import ir
from ..ir.dtypes import INT32
from ..ir.exprs import const_int, mentions, static, static_trips
from .analysis import Ranges
from .ir_edits import _subst, _subst_stmts

COMMUTING = frozenset({"add", "max", "min", "and", "or", "xor"})
# the values per thread a folded loop's T.Parallel may hold at once (codegen/rules.py's budget for
# loops widened into a tile axis: half of a thread's 255 registers)
WIDENED_PER_THREAD = 128
_BODIES = ("body", "then_body", "else_body")


def stage_atomics(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with the rewrites above (a new Kernel; ``kernel`` is unchanged, and returned as it
    is when nothing applies)."""
    if kernel.thread_vars:
        return kernel  # per-thread statements: the block-level order below does not hold
    body = kernel.body
    forwarded = _forward(body)
    if forwarded is not None:
        body = forwarded
    folded = _fold(body, kernel.threads)
    if folded is not None:
        body = folded
    if body is kernel.body:
        return kernel
    return dataclasses.replace(kernel, body=body)


# ------------------------------------------------------------------------------ 1. forwarding
def _forward(body: list) -> list | None:
    """``body`` with every staging buffer that qualifies forwarded into its atomic reads, else None."""
    changed = False
    while True:
        for buf in [s.buffer for s in ir.walk(body) if isinstance(s, ir.Alloc)]:
            new = _forward_buffer(body, buf)
            if new is not None:
                body, changed = new, True
                break
        else:
            return body if changed else None


def _forward_buffer(body: list, buf: ir.Buffer) -> list | None:
    if buf.scope not in (ir.SHARED, ir.FRAGMENT) or buf.alias_of is not None:
        return None
    found = _find_store(body, buf, Ranges())
    if found is None:
        return None
    stmts, pos, store, conds, par, ranges = found
    if not _cheap(store.value):
        return None
    lanes = dict(zip(par.vars, par.extents))
    # every other statement naming buf: its Alloc, or an atomic after the store in the same list
    later = stmts[pos + 1 :]
    readers = {id(s) for s in ir.walk(later) if isinstance(s, ir.Atomic) and buf in _named(s) and buf not in _writes(s)}
    for s in ir.walk(body):
        if s is par or s is store or any(s is c for c in ir.walk(par.body)):
            continue
        if buf in _named(s) and not (isinstance(s, ir.Alloc) and s.buffer is buf) and id(s) not in readers:
            return None
    if not readers or any(_in_loop(later, r) for r in readers):
        return None
    # what the stored value depends on stays as it was from the store on
    value_bufs = {ld.buffer.root for ld in _loads(store.value, *conds)}
    value_vars = _vars(store.value, *conds) - set(par.vars)
    for s in ir.walk(later):
        if _writes(s) & value_bufs or (isinstance(s, ir.Let) and s.var in value_vars):
            return None
    index_of = {v.var: d for d, v in enumerate(store.indices)}

    def forward(ld: ir.Load, at: Ranges):
        env = {v: ld.indices[index_of[v]] for v in par.vars}
        for d, e in enumerate(ld.indices):
            bound = min(lanes[store.indices[d].var], buf.shape[d])
            if not (at.nonneg(e) and at.below(e, bound)):
                raise _Refuse
        for c in conds:
            if _decide(_subst(c, env), at) is not True:
                raise _Refuse
        value = _subst(store.value, env)
        # the store converts to the buffer's dtype (a float16 stage of float32 values rounds them)
        return value if value.dtype == buf.dtype else ir.Cast(value, buf.dtype)

    try:
        new_later = _map_reads(later, buf, forward, ranges)
    except _Refuse:
        return None
    return _replace_list(body, stmts, stmts[:pos] + new_later, buf)


class _Refuse(Exception):
    pass


def _cheap(value) -> bool:
    """A stored value the reads may compute again at no cost: arithmetic and casts of on-chip
    buffers' elements (no global load, no math function)."""
    for e in ir.iter_expr_tree(value):
        if isinstance(e, ir.Load) and e.buffer.scope == ir.GLOBAL:
            return False
        if not isinstance(e, (ir.Load, ir.Const, ir.VarRef, ir.BinOp, ir.UnaryOp, ir.Cast, ir.Compare, ir.Select)):
            return False
    return True


def _in_loop(stmts: list, target_id: int, inside: bool = False) -> bool:
    """Whether the statement ``target_id`` (an id) runs inside a sequential loop of ``stmts``
    (vectorized loops, an atomic's lanes, are one access)."""
    for s in stmts:
        if id(s) == target_id:
            return inside
        looped = inside or isinstance(s, ir.While) or (isinstance(s, ir.For) and s.kind != "vectorized")
        for attr in _BODIES:
            body = getattr(s, attr, None)
            if body and _in_loop(body, target_id, looped):
                return True
    return False


def _find_store(stmts: list, buf: ir.Buffer, ranges: Ranges):
    """(the statement list, position, store, its conditions, T.Parallel, ranges there) of ``buf``'s
    one write, when it is a staging store as described above; else None."""
    for pos, s in enumerate(stmts):
        if isinstance(s, ir.Parallel):
            store = _staging_store(s, buf)
            if store is not None:
                return (stmts, pos, *store, s, ranges)
        if buf in _writes(s) or not any(getattr(s, a, None) for a in _BODIES):
            continue
        inner = _enter(s, ranges)
        for attr in _BODIES:
            found = _find_store(getattr(s, attr, None) or [], buf, inner)
            if found is not None:
                return found
    return None


def _staging_store(par: ir.Parallel, buf: ir.Buffer):
    """(store, conditions) when ``par`` is ``[if c:] buf[vars] = value``, each variable once."""
    body, conds = par.body, []
    while len(body) == 1 and isinstance(body[0], ir.If) and not body[0].else_body:
        conds.append(body[0].cond)
        body = body[0].then_body
    if len(body) != 1 or not isinstance(body[0], ir.Store) or body[0].buffer is not buf:
        return None
    store = body[0]
    refs = [i.var for i in store.indices if isinstance(i, ir.VarRef)]
    if len(refs) != len(store.indices) or len(set(refs)) != len(refs) or set(refs) != set(par.vars):
        return None
    if any(ld.buffer is buf for ld in _loads(store.value, *conds)):
        return None
    return store, conds


def _enter(s: ir.Stmt, ranges: Ranges) -> Ranges:
    """The ranges inside ``s``'s bodies: its loop variable's or T.Parallel variables'."""
    if isinstance(s, ir.Parallel):
        inner = ranges.copy()
        for v, n in zip(s.vars, s.extents):
            inner.set(v, 0, n - 1)
        return inner
    if isinstance(s, ir.For) and static(s.step) == 1:
        inner = ranges.copy()
        lo, hi = ranges.of(s.start), ranges.of(s.stop)
        if lo is not None and hi is not None:
            inner.set(s.var, lo[0], hi[1] - 1)
        return inner
    return ranges


def _map_reads(stmts: list, buf: ir.Buffer, forward, ranges: Ranges) -> list:
    """``stmts`` with each load of ``buf`` replaced by ``forward(load, ranges there)``."""
    out = []
    for s in stmts:
        if buf in _named(s, bodies=False):
            (s,) = _map_stmt_exprs(s, lambda e, r=ranges: _map_loads(e, buf, forward, r))
        inner = _enter(s, ranges)
        changes = {a: _map_reads(getattr(s, a), buf, forward, inner) for a in _BODIES if getattr(s, a, None)}
        out.append(dataclasses.replace(s, **changes) if changes else s)
    return out


def _map_loads(e, buf, forward, ranges):
    if isinstance(e, ir.Load) and e.buffer is buf:
        return forward(e, ranges)
    if isinstance(e, ir.Load):
        return dataclasses.replace(e, indices=tuple(_map_loads(i, buf, forward, ranges) for i in e.indices))
    if isinstance(e, (ir.BinOp, ir.Compare)):
        return dataclasses.replace(
            e, lhs=_map_loads(e.lhs, buf, forward, ranges), rhs=_map_loads(e.rhs, buf, forward, ranges)
        )
    if isinstance(e, ir.UnaryOp):
        return dataclasses.replace(e, operand=_map_loads(e.operand, buf, forward, ranges))
    if isinstance(e, ir.Cast):
        return dataclasses.replace(e, value=_map_loads(e.value, buf, forward, ranges))
    if isinstance(e, ir.Select):
        return dataclasses.replace(
            e,
            cond=_map_loads(e.cond, buf, forward, ranges),
            true_value=_map_loads(e.true_value, buf, forward, ranges),
            false_value=_map_loads(e.false_value, buf, forward, ranges),
        )
    if isinstance(e, ir.Call):
        return dataclasses.replace(
            e, args=tuple(_map_loads(a, buf, forward, ranges) if isinstance(a, ir.Expr) else a for a in e.args)
        )
    if any(isinstance(ld, ir.Load) and ld.buffer is buf for ld in ir.iter_expr_tree(e)):
        raise _Refuse  # a node kind not rebuilt here
    return e


def _map_stmt_exprs(s: ir.Stmt, f) -> list:
    """The atomic with ``f`` applied to its operands (an element atomic: loads)."""
    if not isinstance(s, ir.Atomic) or not isinstance(s.dst, ir.Load) or not isinstance(s.value, ir.Expr):
        raise _Refuse
    return [dataclasses.replace(s, dst=f(s.dst), value=f(s.value))]


def _replace_list(body: list, old: list, new: list, buf: ir.Buffer) -> list:
    """``body`` with the statement list ``old`` (by identity) replaced by ``new``, and ``buf``'s
    Alloc and its now unread store dropped."""

    def go(stmts):
        if stmts is old:
            stmts = new
        out = []
        for s in stmts:
            if isinstance(s, ir.Alloc) and s.buffer is buf:
                continue
            if isinstance(s, ir.Parallel) and _staging_store(s, buf) is not None:
                continue
            changes = {a: go(getattr(s, a)) for a in _BODIES if getattr(s, a, None)}
            out.append(dataclasses.replace(s, **changes) if changes else s)
        return out

    return go(body)


# ------------------------------------------------------------------------------ 2. folding
def _fold(body: list, threads: int) -> list | None:
    changed = False

    def go(stmts):
        nonlocal changed
        out = []
        for s in stmts:
            folded = _fold_loop(s, threads) if isinstance(s, ir.For) else None
            if folded is not None:
                changed = True
                out.extend(folded)
                continue
            changes = {a: go(getattr(s, a)) for a in _BODIES if getattr(s, a, None)}
            out.append(dataclasses.replace(s, **changes) if changes else s)
        return out

    new = go(body)
    return new if changed else None


def _fold_loop(loop: ir.For, threads: int) -> list | None:
    n = static_trips(loop)
    if n is None or n < 1 or loop.kind not in ("serial", "unroll") or static(loop.step) != 1:
        return None
    if not loop.body or not all(isinstance(s, ir.Parallel) for s in loop.body):
        return None
    kinds: dict = {}  # destination -> the atomic kind adding into it
    for s in ir.walk(loop.body):
        if isinstance(s, ir.Atomic):
            if not (
                s.kind in COMMUTING
                and s.result is None
                and isinstance(s.dst, ir.Load)
                and s.dst.buffer.scope == ir.GLOBAL
            ):
                return None
            if kinds.setdefault(s.dst.buffer.root, s.kind) != s.kind:
                return None
        elif isinstance(s, ir.For):
            if static(s.start) is None or static(s.stop) is None or s.kind not in ("vectorized", "serial", "unroll"):
                return None
        elif not isinstance(s, (ir.Parallel, ir.If)):
            return None
    for s in ir.walk(loop.body):
        reads = [ld for ld in ir.loads_in(s) if not (isinstance(s, ir.Atomic) and ld is s.dst)]  # dst's indices stay
        if any(ld.buffer.root in kinds for ld in reads):
            return None  # a read of a destination would see the iterations' order
    out = []
    for par in loop.body:
        inner = 1
        for s in ir.walk(par.body):
            if isinstance(s, ir.For):
                inner *= _pow2(static(s.stop) - static(s.start))
        if _pow2(n) * _pow2_prod(par.extents) * inner > WIDENED_PER_THREAD * threads:
            return None
        axis = ir.Var(loop.var.name, INT32, "lane")
        at = ir.BinOp("+", loop.start, ir.VarRef(axis), INT32) if static(loop.start) != 0 else ir.VarRef(axis)
        widened = ir.Parallel(par.loc, [axis, *par.vars], [n, *par.extents], _subst_stmts(par.body, {loop.var: at}))
        out.append(_coalesce(widened))
    return out


def _pow2(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def _pow2_prod(extents) -> int:
    out = 1
    for e in extents:
        out *= _pow2(e)
    return out


# ------------------------------------------------------------------------------ 3. coalescing
def _coalesce(par: ir.Parallel) -> ir.Parallel:
    """``par`` with its first axis ``a`` and another axis ``b`` that appear only as ``b + a *
    extent(b)`` (times a constant, in sums) merged into one axis of ``extent(a) * extent(b)``."""
    a, na = par.vars[0], par.extents[0]
    for b, nb in zip(par.vars[1:], par.extents[1:]):
        merged = ir.Var(b.name, INT32, "lane")
        try:
            body = _rewrite_sums(par.body, a, b, nb, merged)
        except _Refuse:
            continue
        if any(mentions(e, v) for st in ir.walk(body) for e in ir.stmt_exprs(st) for v in (a, b)):
            continue  # an occurrence not rewritten
        vars_ = [merged if v is b else v for v in par.vars[1:]]
        extents = [na * nb if v is b else e for v, e in zip(par.vars[1:], par.extents[1:])]
        return ir.Parallel(par.loc, vars_, extents, body)
    return par


def _rewrite_sums(stmts: list, a: ir.Var, b: ir.Var, nb: int, merged: ir.Var) -> list:
    out = []
    for s in stmts:
        (s,) = _map_all_exprs(s, lambda e: _merge(e, a, b, nb, merged))
        changes = {x: _rewrite_sums(getattr(s, x), a, b, nb, merged) for x in _BODIES if getattr(s, x, None)}
        out.append(dataclasses.replace(s, **changes) if changes else s)
    return out


def _map_all_exprs(s: ir.Stmt, f) -> list:
    changes = {}
    for fl in dataclasses.fields(s):
        if fl.name in _BODIES or fl.name == "loc":
            continue
        v = getattr(s, fl.name)
        if isinstance(v, ir.Expr):
            changes[fl.name] = f(v)
        elif isinstance(v, tuple) and any(isinstance(x, ir.Expr) for x in v):
            changes[fl.name] = tuple(f(x) if isinstance(x, ir.Expr) else x for x in v)
        elif isinstance(v, (ir.Region, ir.Buffer, ir.Var, list)) and _mentions_any(v):
            raise _Refuse  # regions, views: not rewritten here
    return [dataclasses.replace(s, **changes)] if changes else [s]


def _mentions_any(v) -> bool:
    return isinstance(v, ir.Region) or (isinstance(v, list) and any(isinstance(x, ir.Expr) for x in v))


def _merge(e, a, b, nb, merged):
    """``e`` with each sum holding ``k * (b + a * nb)`` holding ``k * merged``; _Refuse where ``a``
    or ``b`` appears otherwise."""
    form = _linear(e)
    if form is not None:
        terms, atoms, const = form
        ka, kb = terms.get(a, 0), terms.get(b, 0)
        if ka == 0 and kb == 0:
            if not any(mentions(x, a) or mentions(x, b) for x in atoms):
                return e
        elif ka != kb * nb:
            raise _Refuse
        else:
            terms = {(merged if v is b else v): k for v, k in terms.items() if v is not a}
        atoms = [_merge(x, a, b, nb, merged) for x in atoms]
        return _build(terms, atoms, const)
    return _rebuild_children(e, lambda x: _merge(x, a, b, nb, merged))


def _linear(e):
    """({var: coefficient}, [other terms], constant) of an int sum of variables times constants;
    None for an expression that is not such a sum (or holds no variable)."""
    terms: dict = {}
    atoms: list = []
    const = [0]

    def add(x, k):
        c = _int(x)
        if c is not None:
            const[0] += k * c
        elif isinstance(x, ir.VarRef):
            terms[x.var] = terms.get(x.var, 0) + k
        elif isinstance(x, ir.BinOp) and x.op in ("+", "-") and x.dtype == INT32:
            add(x.lhs, k)
            add(x.rhs, k if x.op == "+" else -k)
        elif isinstance(x, ir.BinOp) and x.op == "*" and x.dtype == INT32 and _int(x.rhs) is not None:
            add(x.lhs, k * _int(x.rhs))
        elif isinstance(x, ir.BinOp) and x.op == "*" and x.dtype == INT32 and _int(x.lhs) is not None:
            add(x.rhs, k * _int(x.lhs))
        elif k == 1:
            atoms.append(x)
        else:
            raise _Refuse

    if not (isinstance(e, ir.VarRef) or (isinstance(e, ir.BinOp) and e.op in ("+", "-", "*"))):
        return None
    if getattr(e, "dtype", None) != INT32:
        return None
    try:
        add(e, 1)
    except _Refuse:
        return None
    return terms, atoms, const[0]


def _build(terms: dict, atoms: list, const: int):
    parts = []
    for v, k in terms.items():
        if k:
            parts.append(ir.VarRef(v) if k == 1 else ir.BinOp("*", ir.VarRef(v), const_int(k), INT32))
    parts.extend(atoms)
    if const or not parts:
        parts.append(const_int(const))
    e = parts[0]
    for p in parts[1:]:
        e = ir.BinOp("+", e, p, INT32)
    return e


def _rebuild_children(e, f):
    if isinstance(e, ir.Load):
        return dataclasses.replace(e, indices=tuple(f(i) for i in e.indices))
    if isinstance(e, (ir.BinOp, ir.Compare)):
        return dataclasses.replace(e, lhs=f(e.lhs), rhs=f(e.rhs))
    if isinstance(e, ir.UnaryOp):
        return dataclasses.replace(e, operand=f(e.operand))
    if isinstance(e, ir.Cast):
        return dataclasses.replace(e, value=f(e.value))
    if isinstance(e, ir.Select):
        return dataclasses.replace(e, cond=f(e.cond), true_value=f(e.true_value), false_value=f(e.false_value))
    if isinstance(e, ir.Call):
        return dataclasses.replace(e, args=tuple(f(x) if isinstance(x, ir.Expr) else x for x in e.args))
    if isinstance(e, ir.VarRef) or any(True for _ in ir.child_exprs(e)):
        raise _Refuse  # a variable outside a sum, or a node kind not rebuilt here
    return e


def _int(e):
    v = static(e)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


# ------------------------------------------------------------------------------ helpers
def _loads(*exprs) -> list:
    return [x for e in exprs for x in ir.iter_expr_tree(e) if isinstance(x, ir.Load)]


def _vars(*exprs) -> set:
    return {x.var for e in exprs for x in ir.iter_expr_tree(e) if isinstance(x, ir.VarRef)}


def _named(s: ir.Stmt, bodies: bool = False) -> set:
    """The buffers (and the buffers they view) a statement names outside its nested bodies."""
    out: set = set()

    def add(v, depth=0):
        if isinstance(v, ir.Buffer):
            out.add(v)
            if v.alias_of is not None:
                add(v.alias_of, depth)
        elif depth > 32 or isinstance(v, (str, int, float, bool, type(None), ir.Loc, ir.Var)):
            return
        elif isinstance(v, (list, tuple, set, frozenset)):
            for x in v:
                add(x, depth + 1)
        elif isinstance(v, dict):
            add(list(v.keys()) + list(v.values()), depth + 1)
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            for fl in dataclasses.fields(v):
                if bodies or fl.name not in _BODIES:
                    add(getattr(v, fl.name), depth + 1)

    add(s)
    return out


def _writes(s: ir.Stmt) -> set:
    """The buffers (roots) a statement may write, itself (not its nested bodies); every buffer it
    names for a statement kind not known here."""
    if isinstance(s, ir.Store):
        return {s.buffer.root}
    if isinstance(s, ir.Atomic):
        dst = s.dst.buffer if isinstance(s.dst, (ir.Load, ir.Region)) else None
        return {dst.root} if dst is not None else {b.root for b in _named(s)}
    if isinstance(s, (ir.Copy, ir.Fill)):
        return {s.dst.buffer.root} if isinstance(s.dst, ir.Region) else {b.root for b in _named(s)}
    if isinstance(s, ir.Gemm):
        return {s.c.buffer.root}
    if isinstance(s, (ir.Reduce, ir.Scan)):
        return {s.dst.buffer.root}
    if isinstance(s, (ir.Let, ir.For, ir.Parallel, ir.If, ir.While, ir.Alloc, ir.Break, ir.Continue, ir.Barrier)):
        return set()
    return {b.root for b in _named(s)}


def _decide(cond, ranges: Ranges):
    """True / False where the ranges decide ``cond`` (comparisons joined by ``and``), else None."""
    if isinstance(cond, ir.BinOp) and cond.op in ("and", "&"):
        a, b = _decide(cond.lhs, ranges), _decide(cond.rhs, ranges)
        return True if a is True and b is True else (False if a is False or b is False else None)
    if isinstance(cond, ir.Compare):
        return ranges.compare(cond.op, cond.lhs, cond.rhs)
    value = static(cond)
    return bool(value) if isinstance(value, (bool, int)) else None
