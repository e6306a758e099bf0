"""Index-set splitting: a loop whose T.Parallel conditions are decided for every lane in a prefix of
its iterations runs as two loops, the first with those conditions known.

Causal attention is the case in point: ``T.if_then_else(q_idx >= k_idx, 0, -inf)`` with
``q_idx = bx * M + i`` and ``k_idx = k * N + j`` is all-true while ``k * N + N - 1 <= bx * M``, so
the blocks below the diagonal need no mask; Triton's own attention tutorial splits its loop the
same way by hand.  A comparison qualifies when it is an integer comparison affine in the loop
variable and in the lane variables, with loop-invariant rest, that is true for a prefix of the
iterations (``q_idx >= k_idx``) or false for one (``q_idx < k_idx`` in the varlen example's
``T.if_then_else(q_idx < k_idx or k_idx >= kv_len, -1e9, 0)``), wherever it stands in the
condition's ``and`` / ``or`` / ``not``; the split point is computed once before the loops.
"""

from __future__ import annotations

from .. import ir
from ..ir import INT32
from ..ir.evaluate import same_exprs
from ..ir.exprs import static


def find_split(s: ir.For, ranges, let_count: dict, outer_lets: dict | None = None) -> tuple[ir.Expr, dict] | None:
    """The first iteration where some qualifying comparison may change its value (an expression of
    loop-invariant values, clamped to the loop's range) and the comparisons decided before it
    ({Compare: True or False}); None when no comparison qualifies.  ``outer_lets``: values of names
    bound once outside the loop (its start's), to see a prefix that ends where the loop starts
    (``T.if_then_else(by * M + i <= k * N + j, ..)`` from ``k = by * M // N``: decided after it)."""
    if s.kind not in ("serial", "pipelined") or static(s.step) != 1:
        return None
    inner = _bound_inside(s)
    if not _invariant(s.start, inner) or not _invariant(s.stop, inner):
        return None
    bounds, known = [], {}
    for par in _parallels(s.body):
        lanes = dict(zip(par.vars, par.extents))
        lets = {}  # names bound once in the kernel, by a statement before the condition's
        for st in par.body:
            for cmp in _conditions([st]):
                for value, form in ((True, cmp), (False, _negated(cmp))):
                    bound = _prefix_bound(form, s.var, lanes, lets, inner, ranges)
                    if bound is not None and not _at_or_before(bound, s.start, outer_lets or {}):
                        bounds.append(bound)
                        known[cmp] = value
            if isinstance(st, ir.Let) and let_count.get(st.var, 0) == 1:
                lets[st.var] = st.value
    if not bounds:
        return None
    distinct = []  # one bound per expression: the same mask tested by several statements gives it again
    for bound in bounds:
        if not any(same_exprs((bound,), (seen,)) for seen in distinct):
            distinct.append(bound)
    split, *bounds = distinct
    for b in bounds:
        split = ir.Call("min", (split, b), INT32)
    split = ir.Call("min", (ir.Call("max", (split, s.start), INT32), s.stop), INT32)
    return split, known


# ---------------------------------------------------------------------------- the loop body
def _parallels(stmts):
    """T.Parallel statements of the loop body, not inside a nested loop."""
    for st in stmts:
        if isinstance(st, ir.Parallel):
            yield st
        elif isinstance(st, ir.If):
            yield from _parallels(st.then_body)
            yield from _parallels(st.else_body)


def _conditions(stmts):
    """Comparisons that decide a select or an ``if``: those of their conditions' boolean trees."""
    for st in ir.walk(stmts):
        exprs = [st.cond] if isinstance(st, ir.If) else ir.stmt_exprs(st)
        for e in exprs:
            for sub in ir.iter_expr_tree(e):
                if isinstance(sub, ir.Select):
                    yield from _comparisons(sub.cond)
        if isinstance(st, ir.If):
            yield from _comparisons(st.cond)


def _comparisons(e):
    """The comparisons a condition combines with and / or / not (a comparison known for every lane
    simplifies the condition wherever it stands in that tree)."""
    if isinstance(e, ir.Compare):
        yield e
    elif isinstance(e, ir.BinOp) and e.dtype.kind == "bool" and e.op in ("and", "or", "&", "|"):
        yield from _comparisons(e.lhs)
        yield from _comparisons(e.rhs)
    elif isinstance(e, ir.UnaryOp) and e.op in ("not", "~") and e.dtype.kind == "bool":
        yield from _comparisons(e.operand)


_NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}


def _negated(cmp: ir.Compare) -> ir.Compare:
    """The comparison true exactly where ``cmp`` is false (integers: no NaN)."""
    return ir.Compare(_NEGATED[cmp.op], cmp.lhs, cmp.rhs, cmp.dtype)


def _bound_inside(s: ir.For) -> set:
    """Variables that change inside the loop: its own, and every name bound in its body."""
    inside = {s.var}
    for st in ir.walk(s.body):
        if isinstance(st, ir.Let):
            inside.add(st.var)
        elif isinstance(st, ir.For):
            inside.add(st.var)
        elif isinstance(st, ir.Parallel):
            inside.update(st.vars)
    return inside


def _invariant(e, inside: set) -> bool:
    """A pure integer expression of values that do not change inside the loop."""
    for sub in ir.iter_expr_tree(e):
        if isinstance(sub, ir.VarRef) and sub.var in inside:
            return False
        if not isinstance(sub, (ir.VarRef, ir.Const, ir.BinOp, ir.Cast, ir.Call)):
            return False
        if isinstance(sub, ir.Call) and sub.fn not in ("min", "max"):
            return False
    return True


# ---------------------------------------------------------------------------- affine forms
def _affine(e, lets: dict, inside: set, depth: int = 0) -> dict | None:
    """``e`` as {term: integer coefficient}: terms are the loop and lane Vars, loop-invariant
    expressions, and 1 (the constant); None when ``e`` is not affine in the loop and lane vars."""
    if depth > 32 or e.dtype.kind != "int":  # signed: no wrap-around in the range of interest
        return None
    if isinstance(e, ir.Const):
        return {1: int(e.value)}
    if isinstance(e, ir.VarRef):
        if e.var in lets:
            return _affine(lets[e.var], lets, inside, depth + 1)
        return {e.var: 1} if e.var in inside else {e: 1}
    if isinstance(e, ir.Cast):
        source = e.value.dtype
        if source.kind != "int" or source.bits > e.dtype.bits:
            return None  # a narrowing cast may wrap
        return _affine(e.value, lets, inside, depth + 1)
    if isinstance(e, ir.BinOp) and e.op in ("+", "-"):
        a, b = _affine(e.lhs, lets, inside, depth + 1), _affine(e.rhs, lets, inside, depth + 1)
        if a is None or b is None:
            return None
        sign = 1 if e.op == "+" else -1
        out = dict(a)
        for t, c in b.items():
            out[t] = out.get(t, 0) + sign * c
        return out
    if isinstance(e, ir.BinOp) and e.op == "//" and e.dtype.kind == "int":
        # (c * m + b) // d with d dividing every c: m * c / d + b // d (TileLang's // floors)
        d, form = static(e.rhs), _affine(e.lhs, lets, inside, depth + 1)
        if isinstance(d, int) and not isinstance(d, bool) and d > 0 and form is not None:
            if all(c % d == 0 for t, c in form.items() if t != 1):
                return {t: c // d for t, c in form.items()}
    if isinstance(e, ir.BinOp) and e.op == "*":
        for scale, other in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
            k = static(scale)
            if isinstance(k, int) and not isinstance(k, bool):
                form = _affine(other, lets, inside, depth + 1)
                return None if form is None else {t: k * c for t, c in form.items()}
    if _invariant(e, inside | set(lets)):
        return {e: 1}
    return None


def distinct_per_iteration(stores: list, var: ir.Var, lets: dict) -> bool:
    """Do different iterations of a loop over ``var`` write different elements through these stores
    (index tuples of one buffer)?  Yes when one dim of every store is ``c * var + r_i`` with one
    non-zero ``c`` and the ``r_i`` equal up to constants less than ``|c|`` apart (a strided row's
    elements): ``c * t + r_i == c * t' + r_j`` then needs ``t == t'``.  False when affine indices do
    not prove it (``A[T.Ramp(t - 2, 1, 4)]``: iterations overlap); indices with divisions, calls or
    loads (a thread-view permutation of ``k * threads + tx``) are taken as distinct, as before."""
    exprs = [_unwrapped(e) for ix in stores for e in ix]
    if any(_opaque(e, lets) for e in exprs):
        return True  # a division or a load in an index (a thread-view address map): outside this analysis
    for dim in range(len(stores[0])):
        forms = [_affine(_unwrapped(ix[dim]), lets, {var}) for ix in stores]
        if any(f is None for f in forms):
            continue
        scale = forms[0].get(var, 0)
        if scale == 0 or any(f.get(var, 0) != scale for f in forms):
            continue
        # loop-invariant terms: a name by its Var (each use is its own VarRef), others by identity
        rests = [{(t.var if isinstance(t, ir.VarRef) else t): c for t, c in f.items() if t is not var and t != 1 and c}
                 for f in forms]  # fmt: skip
        if any(r.keys() != rests[0].keys() or any(r[t] != rests[0][t] for t in r) for r in rests):
            continue
        offsets = [f.get(1, 0) for f in forms]
        if max(offsets) - min(offsets) < abs(scale):
            return True
    return False


def _unwrapped(e):
    """An index without TileLang's negative-index wrap (``select(x < 0, x + n, x)``: collisions of the
    wrapped index are collisions of ``x`` within the axis)."""
    if isinstance(e, ir.Select) and isinstance(e.cond, ir.Compare) and e.cond.op == "<" and e.cond.lhs is e.false_value:
        return e.false_value
    return e


def _opaque(e, lets: dict, depth: int = 0) -> bool:
    """Does ``e`` compute its value with a division, a modulo, a call or a load (through lets)?"""
    for n in ir.iter_expr_tree(e):
        if isinstance(n, ir.BinOp) and n.op in ("//", "%", "/"):
            return True
        if isinstance(n, (ir.Call, ir.Load)):
            return True
        if isinstance(n, ir.VarRef) and n.var in lets and depth < 8 and _opaque(lets[n.var], lets, depth + 1):
            return True
    return False


def _prefix_bound(cmp: ir.Compare, k: ir.Var, lanes: dict, lets: dict, inside: set, ranges) -> ir.Expr | None:
    """For ``cmp`` true at every lane exactly while ``k`` is below some bound: that bound (None
    as well when value ranges already prove it for every iteration: nothing to split)."""
    if cmp.op not in ("<", "<=", ">", ">=") or not (cmp.lhs.dtype.kind == cmp.rhs.dtype.kind == "int"):
        return None
    big, small = (cmp.lhs, cmp.rhs) if cmp.op in (">", ">=") else (cmp.rhs, cmp.lhs)
    a, b = _affine(big, lets, inside), _affine(small, lets, inside)
    if a is None or b is None:
        return None
    diff = dict(a)  # cmp holds iff diff >= 0
    for t, c in b.items():
        diff[t] = diff.get(t, 0) - c
    if cmp.op in ("<", ">"):
        diff[1] = diff.get(1, 0) - 1
    if _always_nonnegative(diff, lanes, ranges):
        return None
    ck = diff.pop(k, 0)
    if ck >= 0:
        return None
    lowest = diff.pop(1, 0)
    for v in list(diff):
        if isinstance(v, ir.Var):
            if v not in lanes:
                return None  # varies inside the loop in a way the bound cannot follow
            lowest += min(0, diff.pop(v) * (lanes[v] - 1))
    # all lanes hold iff ck * k + lowest + rest >= 0  <=>  k <= (lowest + rest) // -ck
    total = None
    for term, c in diff.items():
        if c:
            scaled = term if c == 1 else ir.BinOp("*", term, ir.Const(c, INT32), INT32)
            total = scaled if total is None else ir.BinOp("+", total, scaled, INT32)
    if total is None:
        total = ir.Const(lowest, INT32)
    elif lowest:
        total = ir.BinOp("-" if lowest < 0 else "+", total, ir.Const(abs(lowest), INT32), INT32)
    last = ir.BinOp("//", total, ir.Const(-ck, INT32), INT32)
    return ir.BinOp("+", last, ir.Const(1, INT32), INT32)


def _at_or_before(bound: ir.Expr, start: ir.Expr, lets: dict) -> bool:
    """Is ``bound <= start`` for every value of the names in both (affine forms, lets resolved; a
    start ``T.max(a, b)`` is at least each of them)?"""
    while isinstance(start, ir.VarRef) and start.var in lets:
        start = lets[start.var]
    if isinstance(start, ir.Call) and start.fn == "max":
        return any(_at_or_before(bound, arg, lets) for arg in start.args)
    a, b = _affine(bound, lets, set()), _affine(start, lets, set())
    if a is None or b is None:
        return False
    named = lambda form: {(t.var if isinstance(t, ir.VarRef) else t): c for t, c in form.items()}  # noqa: E731
    diff = named(a)
    for t, c in named(b).items():
        diff[t] = diff.get(t, 0) - c
    return all(c == 0 for t, c in diff.items() if t != 1) and diff.get(1, 0) <= 0


def _always_nonnegative(diff: dict, lanes: dict, ranges) -> bool:
    low = 0
    for term, c in diff.items():
        if term == 1:
            span = (c, c)
        elif isinstance(term, ir.Var):
            r = (0, lanes[term] - 1) if term in lanes else ranges.var_range.get(term)
            if r is None:
                return False
            span = (c * r[0], c * r[1])
        else:
            r = ranges.of(term)
            if r is None:
                return False
            span = (c * r[0], c * r[1])
        low += min(span)
    return low >= 0
