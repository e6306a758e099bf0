"""Per-thread copy nests of a thread-range section, rewritten as the block-level copies they are.

A hand warp-specialized kernel's producer (``elif tx >= 256:``) moves a tile into shared memory one
thread at a time: each of its threads, in loops of its own, stores the elements its thread index
and loop counters name::

    for r in T.serial(4):
        idx = Indices[..., base + r * 16 + (tx - 256) // 8]
        valid[stage, r * 16 + (tx - 256) // 8] = idx <= limit
        if valid[stage, r * 16 + (tx - 256) // 8]:
            for u in T.serial(9):
                T.ptx_cp_async(S[stage, r * 16 + (tx - 256) // 8, 64 * u + (tx - 256) % 8 * 8], G[idx, ...], 8)

tile2triton binds the sections in one block-level order (frontend/warp_sections.py), so such a nest
is lowered as a lane space of every thread, its stores one-hot scatters or per-thread tiles in
scratch.  Here the nest becomes one ``T.Parallel`` per store, over the box the store covers
(``S[stage, 0:64, 0:576]``), which the register path and the tile rules lower like any other
block-level copy.

The rewrite is exact when (checked; any other nest keeps today's lowering):

- the nest holds only ``for`` loops with static bounds (serial, unroll, vectorized), ``if``
  without ``else``, and stores; it stores no global buffer;
- the thread index and the loop counters are digits of one mixed radix: every store index of a
  shared buffer is, per dimension, ``const + sum(coef * digit)`` with the thread index split at
  the divisors of its ``//`` and ``%`` (a chain dividing the section's thread count), digits of
  different dimensions disjoint, and each dimension's digits a mixed radix (coefficients 1, e0,
  e0 * e1, ... of the digits' extents), so the store maps its digits one to one onto a box;
- digits a store's indices leave out do not change its value or its conditions: those threads
  and iterations write the same value to the same element;
- each shared buffer is stored by one statement of the nest, and the nest reads it back only at
  the element the same thread and iteration stored before (``valid[...]`` above), under at least
  the conditions of that store;
- a one-element ``T.alloc_var`` stored in the nest, and a name bound in it (``row = r * 16 +
  tx // 8``), is a name for its value: stored (outside any ``if`` of the nest) or bound (once in the
  kernel) once, read only after that in the same loop body and ``if`` or deeper, never outside the
  nest.

Then every element the nest writes gets one value, whatever the order of the threads and
iterations, and the block-level copies write the same elements with the same values.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from .. import ir
from ..ir.dtypes import INT32
from ..ir.exprs import conjuncts, const_int, ir_key


class _Refuse(Exception):
    pass


@dataclass(eq=False)
class _Digit:
    name: str
    extent: int


@dataclass
class _Lin:
    """``const + sum(coef * digit) + rest`` (rest: an expression without digits, or None)."""

    terms: dict = field(default_factory=dict)  # _Digit -> int
    const: int = 0
    rest: ir.Expr | None = None


def rewrite_thread_copies(kernel: ir.Kernel, copied: set | None = None) -> ir.Kernel:
    """``kernel`` with each per-thread copy nest of a thread-range section as block-level
    ``T.Parallel`` copies (a new Kernel; ``kernel`` is unchanged).  Nests that do not meet the
    conditions above stay as they are.  ``copied`` gets the shared buffers the new copies store."""
    if len(kernel.thread_vars) != 1 or len(kernel.thread_extents) > 1:
        return kernel
    tx = kernel.thread_vars[0]
    lets: dict = {}
    for s in ir.walk(kernel.body):
        if isinstance(s, ir.Let):
            lets.setdefault(s.var, []).append(s)
    aliases = {tx} | {v for v, ss in lets.items() if len(ss) == 1 and _is_var(ss[0].value, tx)}
    ctx = _Kernel(kernel, aliases)
    ctx.lets = lets
    body, changed = ctx.body(kernel.body)
    if copied is not None:
        copied.update(ctx.copied)
    return dataclasses.replace(kernel, body=body) if changed else kernel


def _is_var(e, var) -> bool:
    return isinstance(e, ir.VarRef) and e.var is var


class _Kernel:
    def __init__(self, kernel: ir.Kernel, aliases: set):
        self.kernel = kernel
        self.aliases = aliases
        self.lets: dict = {}  # Var -> its Let statements in the kernel
        self.copied: set = set()  # shared buffers the rewritten nests store

    def body(self, stmts: list) -> tuple[list, bool]:
        out, changed = [], False
        for s in stmts:
            new = s
            if isinstance(s, ir.If):
                rng = self._thread_range(s.cond) if not s.else_body else None
                rewritten = None
                if rng is not None:
                    try:
                        rewritten = _Nest(self, s.then_body, *rng).rewrite()
                    except _Refuse:
                        rewritten = None
                if rewritten is not None:
                    new = dataclasses.replace(s, then_body=rewritten)
                    self.copied.update(x.buffer for x in ir.walk(rewritten) if isinstance(x, ir.Store))
                else:
                    then, c1 = self.body(s.then_body)
                    other, c2 = self.body(s.else_body)
                    if c1 or c2:
                        new = dataclasses.replace(s, then_body=then, else_body=other)
            elif isinstance(s, ir.For):
                inner, c = self.body(s.body)
                if c:
                    new = dataclasses.replace(s, body=inner)
            changed |= new is not s
            out.append(new)
        return out, changed

    def _thread_range(self, cond) -> tuple[int, int] | None:
        """``[lo, hi)`` of the threads a condition picks, when it is a conjunction of comparisons of
        the thread index with constants."""
        lo, hi = 0, self.kernel.threads
        for p in conjuncts(cond):
            if not (isinstance(p, ir.Compare) and isinstance(p.lhs, ir.VarRef) and p.lhs.var in self.aliases):
                return None
            if not (isinstance(p.rhs, ir.Const) and isinstance(p.rhs.value, int)):
                return None
            c = p.rhs.value
            if p.op == "<":
                hi = min(hi, c)
            elif p.op == "<=":
                hi = min(hi, c + 1)
            elif p.op == ">=":
                lo = max(lo, c)
            elif p.op == ">":
                lo = max(lo, c + 1)
            else:
                return None
        return (lo, hi) if hi > lo else None


@dataclass
class _StoreSite:
    store: ir.Store | None  # None: a Let
    loops: list  # enclosing For nodes inside the nest, outermost first
    conds: list  # enclosing If nodes inside the nest
    order: int


class _Nest:
    def __init__(self, kernel: _Kernel, body: list, lo: int, hi: int):
        self.k = kernel
        self.body_stmts = body
        self.lo, self.lanes = lo, hi - lo
        self.loop_digits: dict = {}  # Var -> (_Digit, start)
        self.stores: list[_StoreSite] = []
        self.var_defs: dict = {}  # Buffer -> (value, its site)
        self.let_defs: dict = {}  # Var -> (value, its site): names bound once in the kernel
        self.order = 0

    # ---------------------------------------------------------------- structure
    def rewrite(self) -> list:
        self._collect(self.body_stmts, [], [])
        if not any(s.store.buffer.scope == ir.SHARED for s in self.stores):
            raise _Refuse("no shared store")
        self._lane_digits()
        self._check_outside_uses()
        by_buffer: dict = {}
        for site in self.stores:
            if site.store.buffer in by_buffer:
                raise _Refuse("a buffer stored twice")
            by_buffer[site.store.buffer] = site
        self.by_buffer = by_buffer
        out = []
        for site in self.stores:
            if site.store.buffer.scope == ir.SHARED:
                out.append(self._parallel(site))
        return out

    def _collect(self, stmts, loops, conds):
        for s in stmts:
            if isinstance(s, ir.For):
                start, stop, step = (_const(x) for x in (s.start, s.stop, s.step))
                if s.kind not in ("serial", "unroll", "vectorized") or None in (start, stop) or step != 1:
                    raise _Refuse("loop")
                if stop <= start:
                    raise _Refuse("empty loop")
                self.loop_digits[s.var] = (_Digit(s.var.name, stop - start), start)
                self._collect(s.body, loops + [s], conds)
            elif isinstance(s, ir.If):
                if s.else_body:
                    raise _Refuse("else")
                self._collect(s.then_body, loops, conds + [s])
            elif isinstance(s, ir.Let):
                if len(self.k.lets.get(s.var, ())) != 1:
                    raise _Refuse("a name bound twice")
                self.let_defs[s.var] = (s.value, _StoreSite(None, loops, conds, self.order))
                self.order += 1
            elif isinstance(s, ir.Store):
                site = _StoreSite(s, loops, conds, self.order)
                self.order += 1
                buf = s.buffer
                if buf.scope in (ir.VAR, ir.LOCAL):
                    if buf.shape != (1,) or conds or buf in self.var_defs:
                        raise _Refuse("var store")
                    self.var_defs[buf] = (s.value, site)
                elif buf.scope == ir.SHARED:
                    self.stores.append(site)
                else:
                    raise _Refuse("store to " + buf.scope)
            else:
                raise _Refuse(type(s).__name__)

    def _check_outside_uses(self) -> None:
        """The nest's one-element vars are neither read nor stored outside it."""
        inside = {id(s) for s in ir.walk(self.body_stmts)}
        for s in ir.walk(self.k.kernel.body):
            if id(s) in inside:
                continue
            if isinstance(s, ir.Store) and s.buffer in self.var_defs:
                raise _Refuse("var stored outside the nest")
            for e in _exprs(s):
                if any(load.buffer in self.var_defs for load in _loads(e)):
                    raise _Refuse("var read outside the nest")
                if any(isinstance(n, ir.VarRef) and n.var in self.let_defs for n in _nodes(e)):
                    raise _Refuse("name used outside the nest")

    # ---------------------------------------------------------------- the thread index's digits
    def _lane_digits(self) -> None:
        divisors = set()
        for s in ir.walk(self.body_stmts):
            for e in _exprs(s):
                for node in _nodes(e):
                    if isinstance(node, ir.BinOp) and node.op in ("//", "%") and _const(node.rhs):
                        c = _const(node.rhs)
                        if 1 < c < self.lanes and self.lanes % c == 0:
                            divisors.add(c)
        chain = sorted(divisors)
        for a, b in zip(chain, chain[1:]):
            if b % a:
                raise _Refuse("divisors not a chain")
        bounds = [1, *chain, self.lanes]
        self.lane = [(_Digit(f"t{i}", bounds[i + 1] // bounds[i]), bounds[i]) for i in range(len(bounds) - 1)]

    # ---------------------------------------------------------------- linear forms
    def lin(self, e) -> _Lin:
        """``e`` as a linear form in the digits, or _Refuse."""
        if isinstance(e, ir.Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
            return _Lin(const=e.value)
        if isinstance(e, ir.VarRef):
            if e.var in self.k.aliases:
                return _Lin({d: c for d, c in self.lane}, self.lo)
            if e.var in self.loop_digits:
                d, start = self.loop_digits[e.var]
                return _Lin({d: 1}, start)
            if e.var in self.let_defs:
                return self.lin(self.let_defs[e.var][0])
        if not self._has_digits(e):
            return _Lin(rest=e)
        if isinstance(e, ir.Load) and e.buffer in self.var_defs:
            raise _Refuse("var in an index")
        if isinstance(e, ir.BinOp) and e.op in ("+", "-"):
            a, b = self.lin(e.lhs), self.lin(e.rhs)
            sign = 1 if e.op == "+" else -1
            terms = dict(a.terms)
            for d, c in b.terms.items():
                terms[d] = terms.get(d, 0) + sign * c
            rest = a.rest
            if b.rest is not None:
                rest = b.rest if rest is None and sign == 1 else ir.BinOp(e.op, rest or const_int(0), b.rest, e.dtype)
            return _Lin({d: c for d, c in terms.items() if c}, a.const + sign * b.const, rest)
        if isinstance(e, ir.BinOp) and e.op == "*":
            for x, y in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
                k = _const(y)
                if k is not None:
                    a = self.lin(x)
                    if a.rest is not None:
                        raise _Refuse("scaled rest")
                    return _Lin({d: c * k for d, c in a.terms.items() if c * k}, a.const * k)
            raise _Refuse("product of digits")
        if isinstance(e, ir.BinOp) and e.op in ("//", "%") and _const(e.rhs):
            c = _const(e.rhs)
            a = self.lin(e.lhs)
            if a.rest is not None:
                raise _Refuse("divided rest")
            q_terms = {d: k // c for d, k in a.terms.items() if k % c == 0}
            r_terms = {d: k for d, k in a.terms.items() if k % c}
            r_const = a.const % c
            lo = r_const + sum(min(0, k * (d.extent - 1)) for d, k in r_terms.items())
            hi = r_const + sum(max(0, k * (d.extent - 1)) for d, k in r_terms.items())
            if lo < 0 or hi >= c:
                raise _Refuse("remainder out of range")
            if e.op == "//":
                return _Lin(q_terms, a.const // c)
            return _Lin(r_terms, r_const)
        raise _Refuse("not linear")

    def _has_digits(self, e) -> bool:
        for node in _nodes(e):
            if isinstance(node, ir.VarRef) and (
                node.var in self.k.aliases or node.var in self.loop_digits or node.var in self.let_defs
            ):
                return True
            if isinstance(node, ir.Load) and node.buffer in self.var_defs:
                return True
        return False

    # ---------------------------------------------------------------- one store as a T.Parallel
    def _parallel(self, site: _StoreSite) -> ir.Parallel:
        store = site.store
        forms = [self.lin(i) for i in store.indices]
        used: dict = {}  # digit -> dim
        pvars, extents, digit_exprs, dims = [], [], {}, []
        for dim, f in enumerate(forms):
            digits = sorted(f.terms.items(), key=lambda dc: dc[1])
            for d, _ in digits:
                if d in used:
                    raise _Refuse("a digit in two dims")
                used[d] = dim
            if not digits:
                dims.append(None)
                continue
            running = 1
            for d, c in digits:
                if c != running:
                    raise _Refuse("not a mixed radix")
                running *= d.extent
            var = ir.Var(f"{store.buffer.name}_i{dim}", INT32, "lane")
            pvars.append(var)
            extents.append(running)
            dims.append((var, digits))
            for k, (d, c) in enumerate(digits):
                e = ir.VarRef(var)
                if c != 1:
                    e = ir.BinOp("//", e, const_int(c), INT32)
                if k != len(digits) - 1:
                    e = ir.BinOp("%", e, const_int(d.extent), INT32)
                digit_exprs[d] = e
        if not pvars:
            raise _Refuse("a store of one element")
        self.digit_exprs, self.dims = digit_exprs, dims
        indices = []
        for f, dim in zip(forms, dims):
            if dim is None:
                indices.append(f.rest if f.rest is not None and f.const == 0 else self._sum(f))
            else:
                base = ir.VarRef(dim[0])
                indices.append(self._offset(base, f))
        for e in (*store.indices, store.value, *(c.cond for c in site.conds)):
            self._check_reads(e, site)  # before inlining: it also bounds the vars' chains
        value = self.subst(store.value, site)
        conds = [self.subst(c.cond, site) for c in site.conds]
        # a digit the indices leave out has no expression in digit_exprs: _expr_of refuses a value
        # or a condition that depends on one, so those threads and iterations store the same value
        body: list = [ir.Store(store.loc, store.buffer, tuple(indices), value)]
        for c, node in reversed(list(zip(conds, site.conds))):
            body = [ir.If(node.loc, c, body, [])]
        return ir.Parallel(store.loc, pvars, extents, body)

    def _offset(self, base, f: _Lin):
        e = base
        if f.const:
            e = ir.BinOp("+", e, const_int(f.const), INT32)
        if f.rest is not None:
            e = ir.BinOp("+", e, f.rest, INT32)
        return e

    def _sum(self, f: _Lin):
        e = const_int(f.const)
        if f.rest is not None:
            e = f.rest if not f.const else ir.BinOp("+", f.rest, e, INT32)
        return e

    def _check_reads(self, e, site: _StoreSite) -> None:
        """Reads of buffers the nest stores: own-element reads of an earlier store only; names
        bound in the nest, after their binding."""
        for node in _nodes(e):
            if isinstance(node, ir.VarRef) and node.var in self.let_defs:
                value, def_site = self.let_defs[node.var]
                if def_site.order >= site.order or not _prefix(def_site.loops, site.loops):
                    raise _Refuse("name used before its binding")
                if not _prefix(def_site.conds, site.conds):
                    raise _Refuse("name used outside the if that binds it")
                self._check_reads(value, def_site)
        for load in _loads(e):
            if load.buffer in self.var_defs:
                _, def_site = self.var_defs[load.buffer]
                if def_site.order >= site.order or not _prefix(def_site.loops, site.loops):
                    raise _Refuse("var read before its store")
                self._check_reads(self.var_defs[load.buffer][0], def_site)
                continue
            writer = self.by_buffer.get(load.buffer)
            if writer is None:
                continue
            if writer is site or writer.order > site.order:
                raise _Refuse("read of a later store")
            if not _prefix(writer.loops, site.loops) or not _prefix(writer.conds, site.conds):
                raise _Refuse("read outside the store's iteration")
            mine = [self.lin(i) for i in load.indices]
            theirs = [self.lin(i) for i in writer.store.indices]
            if any(not _same(a, b) for a, b in zip(mine, theirs)):
                raise _Refuse("read of another element")

    # ---------------------------------------------------------------- substitution
    def subst(self, e, site: _StoreSite):
        """``e`` with the thread index, loop counters and vars written in terms of the Parallel's
        variables (each maximal linear subexpression as its box offsets)."""
        if isinstance(e, ir.Load) and e.buffer in self.var_defs:
            return self.subst(self.var_defs[e.buffer][0], site)
        if isinstance(e, ir.VarRef) and e.var in self.let_defs:
            return self.subst(self.let_defs[e.var][0], site)
        if self._has_digits(e) and not isinstance(e, ir.Load):
            try:
                f = self.lin(e)
            except _Refuse:
                f = None
            if f is not None and f.terms:
                return self._expr_of(f, e.dtype)
        if isinstance(e, ir.VarRef) and (e.var in self.k.aliases or e.var in self.loop_digits):
            return self._expr_of(self.lin(e), e.dtype)
        if isinstance(e, ir.Load):
            return dataclasses.replace(e, indices=tuple(self.subst(i, site) for i in e.indices))
        if isinstance(e, (ir.BinOp, ir.Compare)):
            return dataclasses.replace(e, lhs=self.subst(e.lhs, site), rhs=self.subst(e.rhs, site))
        if isinstance(e, ir.UnaryOp):
            return dataclasses.replace(e, operand=self.subst(e.operand, site))
        if isinstance(e, ir.Call):
            return dataclasses.replace(e, args=tuple(self.subst(a, site) for a in e.args))
        if isinstance(e, ir.Cast):
            return dataclasses.replace(e, value=self.subst(e.value, site))
        if isinstance(e, ir.Select):
            return dataclasses.replace(
                e,
                cond=self.subst(e.cond, site),
                true_value=self.subst(e.true_value, site),
                false_value=self.subst(e.false_value, site),
            )
        if self._has_digits(e):
            raise _Refuse(f"cannot rewrite {type(e).__name__}")
        return e

    def _expr_of(self, f: _Lin, dtype) -> ir.Expr:
        """A linear form in the Parallel's variables: a dimension's digits with their own radix
        scaled by one factor collapse to that dimension's variable."""
        terms = dict(f.terms)
        parts = []
        for dim in self.dims:
            if dim is None:
                continue
            var, digits = dim
            if all(d in terms for d, _ in digits):
                scale = terms[digits[0][0]]
                if all(terms[d] == scale * c for d, c in digits):
                    for d, _ in digits:
                        del terms[d]
                    v = ir.VarRef(var)
                    parts.append(v if scale == 1 else ir.BinOp("*", v, const_int(scale), INT32))
        for d, c in terms.items():
            if d not in self.digit_exprs:
                raise _Refuse("a digit the store does not cover")
            v = self.digit_exprs[d]
            parts.append(v if c == 1 else ir.BinOp("*", v, const_int(c), INT32))
        e = parts[0]
        for p in parts[1:]:
            e = ir.BinOp("+", e, p, INT32)
        if f.const:
            e = ir.BinOp("+", e, const_int(f.const), INT32)
        if f.rest is not None:
            e = ir.BinOp("+", e, f.rest, INT32)
        return e if dtype == INT32 else ir.Cast(e, dtype)


# -------------------------------------------------------------------- helpers
def _const(e):
    if isinstance(e, int):
        return e
    if isinstance(e, ir.Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    return None


def _prefix(a: list, b: list) -> bool:
    return len(a) <= len(b) and all(x is y for x, y in zip(a, b))


def _same(a: _Lin, b: _Lin) -> bool:
    if a.terms != b.terms or a.const != b.const:
        return False
    if (a.rest is None) != (b.rest is None):
        return False
    return a.rest is None or ir_key(a.rest) == ir_key(b.rest)


def _nodes(e):
    stack = [e]
    while stack:
        n = stack.pop()
        if n is None:
            continue
        yield n
        if isinstance(n, ir.Load):
            stack.extend(n.indices)
        elif isinstance(n, (ir.BinOp, ir.Compare)):
            stack.extend((n.lhs, n.rhs))
        elif isinstance(n, ir.UnaryOp):
            stack.append(n.operand)
        elif isinstance(n, (ir.Call, ir.InlineAsm, ir.WarpOp)):
            stack.extend(a for a in n.args if isinstance(a, ir.Expr))
        elif isinstance(n, ir.Cast):
            stack.append(n.value)
        elif isinstance(n, ir.Select):
            stack.extend((n.cond, n.true_value, n.false_value))


def _loads(e):
    return [n for n in _nodes(e) if isinstance(n, ir.Load)]


def _exprs(s):
    """The expressions a statement holds directly (not those of nested statements)."""
    out = []
    for f in dataclasses.fields(s):
        v = getattr(s, f.name)
        if isinstance(v, ir.Expr):
            out.append(v)
        elif isinstance(v, ir.Region):
            out.extend(x for x in (*v.starts, *v.extents) if isinstance(x, ir.Expr))
        elif isinstance(v, tuple):
            out.extend(x for x in v if isinstance(x, ir.Expr))
    return out
