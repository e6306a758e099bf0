"""TileLang's reducer epochs: the rules a ``T.alloc_reducer`` buffer obeys once an epoch op touches it.

An epoch is ``T.reducer_init(acc)``, then ``T.reducer_update(acc[i], v)`` inside ``T.Parallel``,
then ``T.finalize_reducer(acc, dst)``, each once per allocation; the reducer has no readable value
and takes no ordinary write (``acc[i] += v``, ``T.clear``, ``T.fill``, a read of ``acc[i]``); the
finalize closes the epoch in the loop iteration and branch that opened it (or in a branch nested
there).  A reducer no epoch op touches, or one allocated with ``replication=``, is TileLang's
legacy form (``T.clear``, ``acc[i] += v``, in-place ``T.finalize_reducer(acc)``, direct reads),
which stays allowed.  The binder logs each access as it binds it (program order); the checks run
when the kernel's body is bound, since an epoch op may come after the accesses it forbids.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from .. import ir
from ..errors import TileLangCompileError

_EPOCH_OPS = ("init", "update", "finalize")


@dataclass
class _Event:
    kind: str  # init, update, finalize, legacy_finalize, store, read
    loc: ir.Loc
    flow: tuple  # the bodies being bound around it (kernel body, loop and branch bodies), outermost first
    in_parallel: bool


@dataclass
class ReducerEpochs:
    events: dict = field(default_factory=dict)  # reducer buffer -> [_Event] in program order
    legacy: set = field(default_factory=set)  # reducers allocated with replication= (TileLang's v1)
    quiet: bool = False  # the writes an epoch op emits itself (reducer_init's fill) are not user stores

    def log(self, binder, buf: ir.Buffer, kind: str, loc: ir.Loc) -> None:
        if self.quiet and kind == "store":
            return
        flow = tuple(binder.body_stack)
        self.events.setdefault(buf, []).append(_Event(kind, loc, flow, binder.parallel_depth > 0))

    def unread(self, buf: ir.Buffer, loc: ir.Loc | None) -> None:
        """``acc[i]`` just bound was an update's target (``T.reducer_update(acc[i], v)``, ``acc[i] += v``), not a read."""
        events = self.events.get(buf, [])
        if events and events[-1].kind == "read" and events[-1].loc == loc:
            events.pop()

    def check(self, kernel: ir.Kernel) -> None:
        branches = _branch_bodies(kernel.body)
        for buf, events in self.events.items():
            if buf in self.legacy or not any(e.kind in _EPOCH_OPS for e in events):
                continue
            _check_epoch(buf, events, branches)


def _check_epoch(buf: ir.Buffer, events: list, branches: set) -> None:
    name = buf.name
    state, opened = "allocated", None
    for e in events:
        if e.kind == "store":
            raise TileLangCompileError(
                f"illegal store to reducer '{name}': use T.reducer_update(acc[indices], value) instead of "
                "ordinary writes (including `acc[i] += v`, T.clear and T.fill)",
                e.loc,
            )
        if e.kind == "read":
            raise TileLangCompileError(
                f"illegal read of reducer '{name}': a reducer has no readable value before "
                "T.finalize_reducer; read the finalize destination instead",
                e.loc,
            )
        if e.kind == "legacy_finalize":
            raise TileLangCompileError(
                f"T.finalize_reducer(acc) in place on reducer '{name}', which T.reducer_init / T.reducer_update "
                "use: give it a destination, T.finalize_reducer(acc, dst)",
                e.loc,
            )
        if e.kind == "init":
            if e.in_parallel:
                raise TileLangCompileError(
                    f"T.reducer_init on reducer '{name}' may not appear inside a T.Parallel loop", e.loc
                )
            if state != "allocated":
                raise TileLangCompileError(
                    f"double T.reducer_init on reducer '{name}'; each allocation supports exactly one epoch", e.loc
                )
            state, opened = "active", e.flow
        elif e.kind == "update" and state == "finalized":
            raise TileLangCompileError(f"T.reducer_update on reducer '{name}' after T.finalize_reducer", e.loc)
        elif e.kind == "finalize":
            if state == "allocated":
                raise TileLangCompileError(f"T.finalize_reducer on reducer '{name}' before T.reducer_init", e.loc)
            if state == "finalized":
                raise TileLangCompileError(f"double T.finalize_reducer on reducer '{name}'", e.loc)
            if not _refines(opened, e.flow, branches):
                raise TileLangCompileError(
                    f"T.finalize_reducer on reducer '{name}' is not in the scope of its T.reducer_init: the epoch "
                    "must close in the same loop iteration and branch it opened in, or in a conditional branch "
                    "nested inside that scope",
                    e.loc,
                )
            state = "finalized"
    if state == "active":
        opened_at = next(e.loc for e in events if e.kind == "init")
        raise TileLangCompileError(
            f"reducer '{name}' is initialized but never finalized; call T.finalize_reducer(acc, dst) exactly once",
            opened_at,
        )


def _refines(opened: tuple, closing: tuple, branches: set) -> bool:
    """The finalize's bodies are the init's, then only conditional branches (never a loop: the
    collective would run again on combined partials)."""
    if len(opened) > len(closing) or any(a is not b for a, b in zip(opened, closing)):
        return False
    return all(id(body) in branches for body in closing[len(opened) :])


def _branch_bodies(stmts: list) -> set:
    """ids of the statement lists that are the arms of an ``if`` (the rest are loop or kernel bodies)."""
    found: set = set()

    def walk(body: list) -> None:
        for s in body:
            if isinstance(s, ir.If):
                found.add(id(s.then_body))
                found.add(id(s.else_body))
            for f in dataclasses.fields(s) if dataclasses.is_dataclass(s) else ():
                value = getattr(s, f.name)
                if isinstance(value, list) and value and all(isinstance(x, ir.Stmt) for x in value):
                    walk(value)

    walk(stmts)
    return found
