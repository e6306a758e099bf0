"""Fragment elements that several ``T.Parallel`` iterations update: accumulations.

An update of a fragment element whose index leaves out one of the loop's variables::

    for i, k in T.Parallel(M, K):
        C_local[i] += A[i, k]            # every k updates C_local[i]
    for i, j, k in T.Parallel(bm, bn, bk):
        C_local[i, j] += A_s[i, k] * B_s[k, j]

is, in TileLang, a sum over ``k``: the loop is laid out by the fragment's layout, so all the
iterations that update one element run one after another in the thread (or each replica thread)
that holds it.  tile2triton evaluates a ``T.Parallel`` body once for all iterations, as lanes, and a
store from many lanes to one element keeps one of them; so the update becomes what it means, an
``ir.Atomic`` on the register tile (``acc[i] + v``: add, ``T.max(acc[i], v)``: max, ...), which
codegen reduces over the lanes the index does not depend on before combining it with the element
once (``atomics._register_reduction``, as for a ``T.alloc_reducer``).  Any other read and write of one
element by several iterations (``C[i] = C[i] * 0.5 + A[i, k]``) is an error at the line: its value
depends on the iterations' order.  Updates whose index uses every loop variable, and stores that do not
read their element, are left as they are.
"""

from __future__ import annotations

import dataclasses

from .. import ir
from ..errors import TileLangCompileError
from ..ir.exprs import is_element, update_of


def accumulate_parallel_updates(func: ir.PrimFunc) -> None:
    """Turn each fragment update inside a ``T.Parallel`` that more than one iteration makes into an
    accumulation (in place)."""
    for kernel in func.kernels:
        kernel.body = _stmts(kernel.body, None)


def _stmts(stmts: list, loop: _Loop | None) -> list:
    return [_stmt(s, loop) for s in stmts]


@dataclasses.dataclass
class _Loop:
    """A ``T.Parallel`` being walked: its varying variables, and the parallel variables each let
    bound in its body (so far) depends on."""

    vars: frozenset
    lets: dict = dataclasses.field(default_factory=dict)

    def depends(self, e) -> set:
        out = set()
        for sub in ir.iter_expr_tree(e) if isinstance(e, ir.Expr) else ():
            if isinstance(sub, ir.VarRef):
                out |= {sub.var} & self.vars or self.lets.get(sub.var, set())
        return out


def _reads_its_element(s: ir.Store) -> bool:
    return any(is_element(e, s.buffer, s.indices) for e in ir.iter_expr_tree(s.value))


def _stmt(s, loop: _Loop | None):
    if isinstance(s, ir.Parallel):
        varying = frozenset(v for v, extent in zip(s.vars, s.extents) if extent != 1)
        inner = _Loop(varying | (loop.vars if loop else frozenset()), dict(loop.lets) if loop else {})
        return dataclasses.replace(s, body=_stmts(s.body, inner))
    if loop is not None and isinstance(s, ir.Let):
        loop.lets[s.var] = loop.lets.get(s.var, set()) | loop.depends(s.value)  # a rebinding keeps both
        return s
    if loop is not None and isinstance(s, ir.Store) and s.buffer.scope == ir.FRAGMENT:
        indexed = set().union(*(loop.depends(i) for i in s.indices))
        update = update_of(s.buffer, s.indices, s.value)
        missing = loop.vars - indexed
        if update is not None and missing:
            kind, contribution = update
            return ir.Atomic(s.loc, kind, ir.Load(s.buffer, tuple(s.indices), s.loc), contribution)
        if missing and _reads_its_element(s):
            names = ", ".join(sorted(v.name for v in missing))
            raise TileLangCompileError(
                f"'{s.buffer.name}' is read and written at one element by every iteration of {names} of this "
                "T.Parallel: TileLang runs those iterations one after another in the thread that holds it, an order "
                "tile2triton keeps for updates (+=, T.max, T.min, &, |, ^) only; loop over "
                f"{names} with T.serial inside the T.Parallel for any other update",
                s.loc,
            )
        return s
    changes = {
        name: _stmts(getattr(s, name), loop)
        for name in ("body", "then_body", "else_body")
        if isinstance(getattr(s, name, None), list) and not isinstance(s, ir.Kernel)
    }
    return dataclasses.replace(s, **changes) if changes else s
