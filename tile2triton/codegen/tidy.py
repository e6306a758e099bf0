"""Tidying a lowered kernel's Python AST before it is printed: what a person writing the kernel would not have
written. ``merge_repeated_values``: a value named twice (two TileLang statements' equal offsets) is named once;
``drop_dead_assignments``: assignments nothing reads go. Both keep the kernel's meaning exactly (Triton would
fold either away itself); they are for whoever reads the generated source."""

from __future__ import annotations

import ast
from collections import Counter

# Triton functions without side effects whose result depends only on their arguments (and the program id)
_PURE_TL_CALLS = frozenset({"arange", "program_id", "num_programs", "where", "minimum", "maximum"})
_PURE_NODES = (
    ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.Subscript, ast.Tuple, ast.Slice,
    ast.Attribute, ast.IfExp, ast.keyword, ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop,
)  # fmt: skip


def merge_repeated_values(fn: ast.FunctionDef) -> None:
    """``t = e`` is dropped and ``t`` read as ``s`` where an earlier ``s = e`` still holds ``e``: ``s`` assigned in
    the same statement list or in one enclosing it through ``if`` bodies only (values a loop computes stay in the
    loop), no name ``e`` reads assigned in between. ``offs_2 = (bx * 64 + i_2) * 6 + k`` for the second of two
    stores of one row becomes a second use of ``offs_1``. Only names assigned once in the whole function take
    part, and only pure expressions (arithmetic, comparisons, subscripts, ``tl.arange``, ``tl.where``, ...) that
    compute something."""
    stores = Counter(n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    stores.update(a.arg for a in fn.args.args)
    once = {name for name, count in stores.items() if count == 1}
    _merge(fn.body, {}, once, {})


def _merge(stmts: list, held: dict, once: set, renamed: dict) -> None:
    """Walk ``stmts`` in order; ``held`` maps an expression (its ``ast.dump``) to the name holding it here and
    the names it reads."""
    kept = []
    for st in stmts:
        _rename(st, renamed)
        if (
            isinstance(st, ast.Assign)
            and len(st.targets) == 1
            and isinstance(st.targets[0], ast.Name)
            and st.targets[0].id in once
            and _computed(st.value)
            and _pure(st.value)
        ):
            key = ast.dump(st.value)
            if key in held:
                renamed[st.targets[0].id] = held[key][0]
                continue
            held[key] = (st.targets[0].id, _reads(st.value))
            kept.append(st)
            continue
        if isinstance(st, (ast.For, ast.While)):
            # a loop's body starts afresh: a value it computes stays computed in it, as the lowering placed it
            # (codegen/rules.keeps_invariants_in_loop keeps some in loops on purpose: registers)
            for block in (st.body, st.orelse):
                _merge(block, {}, once, renamed)
        elif isinstance(st, ast.If):
            for block in (st.body, st.orelse):
                _merge(block, dict(held), once, renamed)
        _forget(held, _stored(st))
        kept.append(st)
    if stmts:
        stmts[:] = kept or [ast.Pass()]


def _computed(node: ast.expr) -> bool:
    """An expression that computes something (an offset, a mask): a lane index (``j = tl.arange(0, 128)[None, :]``)
    keeps the name the source gave it, even where an earlier one holds the same lanes."""
    return any(isinstance(n, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp)) for n in ast.walk(node))


def _pure(node: ast.expr) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            if not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "tl"):
                return False
            if f.attr not in _PURE_TL_CALLS:
                return False
        elif not isinstance(n, _PURE_NODES):
            return False
    return True


def _rename(st: ast.stmt, renamed: dict) -> None:
    """Reads of merged names in ``st``'s own expressions (a nested statement is renamed when it is walked)."""
    if not renamed:
        return
    own = [st.iter] if isinstance(st, ast.For) else [st.test] if isinstance(st, (ast.While, ast.If)) else [st]
    for n in (n for e in own for n in ast.walk(e)):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in renamed:
            n.id = renamed[n.id]


def _stored(st: ast.stmt) -> set:
    return {n.id for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _forget(held: dict, assigned: set) -> None:
    """Drop what no longer holds once ``assigned`` names changed: expressions reading them, and their own entries."""
    for key, (name, reads) in list(held.items()):
        if name in assigned or assigned & reads:
            del held[key]


def drop_dead_assignments(fn: ast.FunctionDef) -> None:
    """Remove ``name = <pure expression>`` whose value is never read (an unused T.Parallel index,
    the mask a split loop no longer needs): generated code should carry no dead code.  A backward
    liveness pass over the structured body; assignments have no side effects here (stores and
    atomics are expression statements), except an atomic's previous value, which stays a statement."""
    _live_before(fn.body, set(), remove=True)


# helpers of the generated module that perform atomics (their results may go unused)
_ATOMIC_HELPERS = ("_shared_atomic_", "_warp_aggregated_claim", "_atomic_rmw_16bit")


def _atomic(node) -> bool:
    return any(
        isinstance(n, ast.Call)
        and (
            isinstance(n.func, ast.Attribute)
            and n.func.attr.startswith("atomic_")
            or isinstance(n.func, ast.Name)
            and n.func.id.startswith(_ATOMIC_HELPERS)
        )
        for n in ast.walk(node)
    )


def _reads(node) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _live_before(stmts: list, live_after: set, remove: bool) -> set:
    live = set(live_after)
    kept = []
    for st in reversed(stmts):
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            target = st.targets[0].id
            if isinstance(st.value, ast.Name) and st.value.id == target:
                continue  # `x = x` (left where index-set splitting folded a select away): no effect
            if target not in live and _atomic(st.value):
                # an atomic whose previous value is not used: still performed, as a statement
                expr = ast.Expr(st.value)
                expr.t2t_origin = getattr(st, "t2t_origin", None)
                st = expr
                live |= _reads(st)
                kept.append(st)
                continue
            if target not in live:
                continue  # dead: dropped (when removing) and its reads not made live
            live = (live - {target}) | _reads(st.value)
        elif isinstance(st, ast.If):
            then_live = _live_before(st.body, live, remove)
            else_live = _live_before(st.orelse, live, remove) if st.orelse else live
            live = then_live | else_live | _reads(st.test)
        elif isinstance(st, (ast.For, ast.While)):
            head = _reads(st.iter) if isinstance(st, ast.For) else _reads(st.test)
            loop_live = set(live) | head  # live where an iteration ends: after the loop, or the next one
            while True:
                start = _live_before(st.body, loop_live, remove=False)
                grown = loop_live | start
                if grown == loop_live:
                    break
                loop_live = grown
            start = _live_before(st.body, loop_live, remove)
            live = live | start | head  # zero iterations: what is live after is live before
        else:
            live |= _reads(st)
        kept.append(st)
    if remove:
        stmts[:] = list(reversed(kept)) or [ast.Pass()]
    return live
