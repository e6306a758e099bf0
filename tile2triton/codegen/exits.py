"""``break`` and ``continue`` in sequential loops.  Triton's ``@triton.jit`` has neither, so a loop
that is left early keeps flags instead:

* ``running``: cleared by ``break``; every later iteration is skipped (``for``) or the loop's test
  fails (``while``);
* ``active``: (only with ``continue``) this iteration is still running; set from ``running`` at the
  top of each iteration, cleared by ``continue`` and ``break``.

The statements after one that may leave run under the flag.  Where every ``break`` is taken the
same way by the whole block (no per-thread / per-lane condition inside the loop), the flags are
scalars and the rest of the body stands in a plain ``if``, so tile operations and
``T.sync_threads()`` in it still act for the whole block.  Under a per-lane condition (the thread
view, a ``T.Parallel`` body) the flags are lane tiles, each lane leaving on its own as each CUDA
thread does, and they mask the writes like an ``if`` does."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .. import ir
from ..ir import BOOL
from . import pyast as P
from .values import Lowerer, Tile


@dataclass
class LoopExits:
    running: str | None  # cleared by `break` (None: the loop has no break)
    active: str | None  # cleared by `continue` and `break` for the rest of the iteration (None: no continue)
    per_lane: bool  # the flags are lane tiles (a break under a per-lane condition)
    depth: int  # how many `if` masks were active where the loop starts

    @property
    def guard(self) -> str:
        """The flag the rest of an iteration runs under."""
        return self.active or self.running


class _PerLaneExit(Exception):
    """A scalar flag met a per-lane condition: the loop is lowered again with lane flags."""


def loop_body(lw: Lowerer, body: list, var_hint: str, per_lane: bool = False) -> tuple[list, LoopExits | None]:
    """Lower a loop body; with ``break``/``continue`` in it, the flags are set up (their first
    values are emitted before the loop, the current statement list being the loop's)."""
    kinds = ir.loop_exits(body)
    if not kinds:
        with lw.scoped(exits=None):
            return lw.block(body), None
    if per_lane:
        return _lower_with_flags(lw, body, kinds, var_hint, per_lane=True)
    saved, names = lw.scope.snapshot(), set(lw.names.taken)
    try:
        return _lower_with_flags(lw, body, kinds, var_hint, per_lane=False)
    except _PerLaneExit:
        lw.scope.restore(saved)
        lw.names.taken = names
        return _lower_with_flags(lw, body, kinds, var_hint, per_lane=True)


def _lower_with_flags(lw: Lowerer, body: list, kinds: set, var_hint: str, per_lane: bool):
    lanes = lw.scope.lanes
    per_lane = per_lane and lanes is not None
    running = lw.names.fresh(f"{var_hint}_running") if ir.Break in kinds else None
    active = lw.names.fresh(f"{var_hint}_active") if ir.Continue in kinds else None
    exits = LoopExits(running, active, per_lane, len(lw.scope.conds))
    all_axes = frozenset(range(lanes.rank)) if per_lane else frozenset()

    def lower() -> None:
        if active is not None:  # every iteration starts active (unless a break came before)
            lw.emit(P.assign(active, P.name(running) if running else _start_value(lw, per_lane)))
        if per_lane:  # lanes that left are masked like an `if` masks them
            with lw.scoped(conds=[*lw.scope.conds, Tile(P.name(exits.guard), BOOL, all_axes)]):
                lw.lower_stmts(body)
        elif running is not None:
            lw.emit(ast.If(P.name(running), lw.block(body), []))  # skip the iterations after a break
        else:
            lw.lower_stmts(body)

    with lw.scoped(exits=exits):
        statements = lw.block(body, fn=lower)
    if running is not None:
        lw.emit(P.assign(running, _start_value(lw, per_lane)))
    return statements, exits


def _start_value(lw: Lowerer, per_lane: bool) -> ast.expr:
    """True; per lane: the lanes that run the loop at all (the padding lanes and the lanes masked
    around the loop never count as running, so a while loop stops when the real lanes have left)."""
    if not per_lane:
        return P.const(True)
    shape = lw.scope.lanes.padded
    every = P.call("tl.full", P.list_(shape), P.const(True), P.dtype(BOOL))
    mask = lw.lane_mask(frozenset(range(lw.scope.lanes.rank)))
    return every if mask is None else P.binop("&", every, mask)


def still_running(lw: Lowerer, exits: LoopExits | None, test: Tile) -> ast.expr:
    """A while loop's test, false once every lane has left (by ``break``, or where its own test
    fails: a per-lane test)."""
    if exits is None or exits.running is None:
        return test.node
    if not exits.per_lane:
        return P.binop("&", P.name(exits.running), test.node)
    live = P.name(exits.running) if not test.axes else P.binop("&", P.name(exits.running), test.node)
    some = P.binop(">", P.call("tl.max", P.call("tl.where", live, P.const(1), P.const(0))), P.const(0))
    return some if test.axes else P.binop("&", some, test.node)


def lower_exit(lw: Lowerer, s: ir.Stmt) -> None:
    """``break`` clears both flags, ``continue`` the iteration's, where the conditions inside the
    loop hold."""
    exits = lw.scope.exits
    if exits is None:
        raise lw.error(f"'{type(s).__name__.lower()}' outside a loop")
    inner = lw.scope.conds[exits.depth :]
    if not exits.per_lane and any(c.axes for c in inner):
        raise _PerLaneExit()
    flags = [exits.active] if isinstance(s, ir.Continue) else [exits.running, exits.active]
    for flag in flags:
        if flag is None:
            continue
        # (``flag & ~(flag & c)`` is ``flag & ~c``)
        taken = P.and_all([c.node for c in inner if not (isinstance(c.node, ast.Name) and c.node.id == flag)])
        if taken is None and exits.per_lane:  # every lane still here leaves (keeps the tile's shape)
            lw.emit(P.assign(flag, P.binop("&", P.name(flag), P.const(False))))
        elif taken is None:  # in plain `if`s (or none): the branch is the condition
            lw.emit(P.assign(flag, P.const(False)))
        else:
            lw.emit(P.assign(flag, P.binop("&", P.name(flag), ast.UnaryOp(ast.Invert(), taken))))


def leaves(s: ir.Stmt) -> bool:
    """Whether ``s`` may leave the iteration (a break or continue of the loop being lowered)."""
    return bool(ir.loop_exits([s]))


def guard_rest(lw: Lowerer, rest: list) -> bool:
    """Lower the statements after one that may leave the iteration under the scalar flag (a plain
    ``if``); per-lane flags already mask them.  False where there is nothing to do here."""
    exits = lw.scope.exits
    if exits is None or exits.per_lane or not rest:
        return False
    lw.emit(ast.If(P.name(exits.guard), lw.block(rest), []))
    return True
