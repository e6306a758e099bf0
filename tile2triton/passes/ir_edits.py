"""Small rewrites of TileIR expressions and statements used by ``forward_shared.py``: constant
folding of sums, substitution, conjunction, a rebuild of a statement with its expressions mapped,
and the upper bound of a thread-range condition."""

from __future__ import annotations

import dataclasses

from .. import ir
from ..ir.dtypes import BOOL, INT32
from ..ir.exprs import conjuncts
from ..ir.exprs import map_children as _map_children
from .thread_copies import _exprs, _loads


def _range_hi(cond, aliases) -> int | None:
    """The exclusive upper bound of a conjunction of thread-index comparisons with constants that
    has one (``tx < 128``, ``tx >= 128 and tx < 256``); None for anything else."""
    hi = None
    for p in conjuncts(cond):
        if not (isinstance(p, ir.Compare) and isinstance(p.lhs, ir.VarRef) and p.lhs.var in aliases):
            return None
        c = _const(p.rhs)
        if c is None:
            return None
        if p.op == "<":
            hi = c if hi is None else min(hi, c)
        elif p.op == "<=":
            hi = c + 1 if hi is None else min(hi, c + 1)
        elif p.op not in (">", ">="):
            return None
    return hi


# ------------------------------------------------------------------------------ expression helpers
def _const(e):
    if isinstance(e, int) and not isinstance(e, bool):
        return e
    if isinstance(e, ir.Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    return None


def _plus(a, b):
    """``a + b``, without adding a zero."""
    if _const(a) == 0:
        return b
    if _const(b) == 0:
        return a
    return ir.BinOp("+", a, b, INT32)


def _var_plus_const(e, pvars):
    if isinstance(e, ir.VarRef) and e.var in pvars:
        return e.var, 0
    if isinstance(e, ir.BinOp) and e.op == "+":
        for a, b in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
            if isinstance(a, ir.VarRef) and a.var in pvars and _const(b) is not None:
                return a.var, _const(b)
    return None, 0


def _conj(conds: list):
    e = conds[0]
    for c in conds[1:]:
        e = ir.BinOp("and", e, c, BOOL)
    return e


def _subst(e, env: dict):
    if isinstance(e, ir.VarRef) and e.var in env:
        return env[e.var]
    return _map_children(e, lambda x: _subst(x, env))


def _mentions_in_exprs(st, buf) -> bool:
    return any(ld.buffer is buf for e in _exprs(st) for ld in _loads(e))


def _map_exprs(st, f):
    """The statement with ``f`` applied to each expression it holds directly."""
    changes = {}
    for fl in dataclasses.fields(st):
        v = getattr(st, fl.name)
        if isinstance(v, ir.Expr):
            changes[fl.name] = f(v)
        elif isinstance(v, tuple) and any(isinstance(x, ir.Expr) for x in v):
            changes[fl.name] = tuple(f(x) if isinstance(x, ir.Expr) else x for x in v)
        elif isinstance(v, ir.Region):
            changes[fl.name] = dataclasses.replace(
                v,
                starts=tuple(f(x) if isinstance(x, ir.Expr) else x for x in v.starts),
                extents=tuple(f(x) if isinstance(x, ir.Expr) else x for x in v.extents),
            )
    return [dataclasses.replace(st, **changes)]


def _replace(body: list, replace: dict) -> list:
    """``body`` with statements replaced by lists (by id); nested statements are rebuilt."""

    def go(stmts):
        out = []
        for s in stmts:
            if id(s) in replace:
                new = replace[id(s)]
                # a replaced statement's nested bodies still get the other replacements
                out.extend(_rebuild(n, go) for n in new)
                continue
            out.append(_rebuild(s, go))
        return out

    return go(body)


def _rebuild(s, go):
    if isinstance(s, ir.For):
        return dataclasses.replace(s, body=go(s.body))
    if isinstance(s, ir.If):
        return dataclasses.replace(s, then_body=go(s.then_body), else_body=go(s.else_body))
    if isinstance(s, (ir.Parallel, ir.While)):
        return dataclasses.replace(s, body=go(s.body))
    return s


def _subst_stmts(stmts: list, env: dict) -> list:
    out = []
    for s in stmts:
        (s,) = _map_exprs(s, lambda e: _subst(e, env))
        out.append(_rebuild(s, lambda b: _subst_stmts(b, env)))
    return out
