"""Scalars (and local arrays) that every ``T.Parallel`` iteration writes for itself: one copy per iteration.

A ``T.alloc_var`` (or one-element ``T.alloc_local``) allocated outside a ``T.Parallel`` and assigned
in its body with a value that differs between iterations::

    idx = T.alloc_var(T.int32)
    for i in T.Parallel(M):
        idx = i
        Data[i] = idx

is, in TileLang, a variable of each thread: every thread's iterations write and read their own copy
(issue 1549).  tile2triton evaluates a ``T.Parallel`` body once for all iterations, as lanes, so the
same meaning is a copy per iteration: a per-iteration local of the body takes the variable's place
there.  Two uses would depend on which iterations share a thread, an order the lanes do not have,
and are errors at the user's line:

* an iteration that may read the variable before it writes it (the value another iteration of the
  same thread left);
* a read after the loop, before the variable is written again: each thread then holds the value of
  its own last iteration, and tile2triton runs the statements outside a ``T.Parallel`` once for the
  block.

A ``T.alloc_local`` of several elements is scratch of each iteration the same way where the body writes
every element before it reads any (``for j in T.serial(n): tmp[j] = ...`` first): a copy per
iteration.  Writes of a value every iteration shares (``flag = 1``) keep the one variable, as before.  Kernels in
the thread view (``T.get_thread_binding``) keep a value per thread already and are left alone.
"""

from __future__ import annotations

import dataclasses

from .. import ir
from ..errors import TileLangCompileError
from ..ir.exprs import static
from .analysis import first_access
from .ir_edits import _map_children, _map_exprs

_PRIVATE = (ir.LOCAL, ir.VAR)


def privatize_parallel_vars(func: ir.PrimFunc) -> None:
    """Give each ``T.Parallel`` iteration its own copy of the scalars it writes per iteration (in place)."""
    for kernel in func.kernels:
        if not kernel.thread_vars:
            _Kernel(kernel).run()


class _Kernel:
    def __init__(self, kernel: ir.Kernel):
        self.kernel = kernel
        self.scalars = {
            s.buffer for s in ir.walk(kernel.body) if isinstance(s, ir.Alloc) and s.buffer.scope in _PRIVATE
        }

    def run(self) -> None:
        for path in list(self.parallels(self.kernel.body, [])):
            holder, at = path[-1]
            loop = holder[at]
            inside = {s.buffer for s in ir.walk(loop.body) if isinstance(s, ir.Alloc)}
            lanes = dict(zip(loop.vars, loop.extents))
            targets = [
                buf for buf in _varying_writes(loop, self.scalars - inside)
                if buf not in _atomic_dsts(loop) and (_is_scalar(buf) or _written_first(loop.body, buf, lanes))
            ]  # fmt: skip
            if not targets:
                continue
            body, copies = loop.body, []
            for buf in targets:
                if _is_scalar(buf) and not _written_first(loop.body, buf, lanes):  # arrays: checked above
                    raise TileLangCompileError(
                        f"'{buf.name}' is written by every T.Parallel iteration (TileLang keeps one copy per thread), "
                        "and an iteration may read it before writing it: it would read the value another iteration "
                        "of its thread left, and which iterations share a thread is TileLang's layout choice. "
                        "Write it at the top of the body, or allocate it inside the T.Parallel body",
                        _first_store(loop.body, buf).loc,
                    )
                copy = dataclasses.replace(buf)  # the same name: codegen makes it unique
                copies.append(ir.Alloc(buf.loc, copy))
                body = _rename(body, buf, copy)
            holder[at] = dataclasses.replace(loop, body=copies + body)
            for buf in targets:
                if first_access(_after(path), buf) == "read":
                    raise TileLangCompileError(
                        f"'{buf.name}' is written by every T.Parallel iteration, so after the loop each thread holds "
                        "the value of its own last iteration (TileLang keeps one copy per thread); tile2triton runs "
                        "the statements outside a T.Parallel once for the block: write it again before reading it "
                        "after the loop, or keep the values in a buffer of the loop's shape",
                        _first_store(loop.body, buf).loc,
                    )

    def parallels(self, stmts: list, path: list):
        """The path ([(list, index)], outermost first) to each ``T.Parallel`` of ``stmts``."""
        for k, s in enumerate(stmts):
            here = [*path, (stmts, k)]
            if isinstance(s, ir.Parallel):
                yield here
                continue
            for attr in ("body", "then_body", "else_body"):
                child = getattr(s, attr, None)
                if isinstance(child, list) and not isinstance(s, ir.Kernel):
                    yield from self.parallels(child, here)


def _after(path: list) -> list:
    """The statements that may run after the one at the end of ``path``, in order: the rest of
    its list, a loop around it again (its next iteration), then the rest of each outer list."""
    out: list = []
    for level in reversed(range(len(path))):
        holder, at = path[level]
        out += holder[at + 1 :]
        if level > 0:
            outer_holder, outer_at = path[level - 1]
            if isinstance(outer_holder[outer_at], (ir.For, ir.While)):
                out += outer_holder[outer_at].body
    return out


def _is_scalar(buf: ir.Buffer) -> bool:
    return all(d == 1 for d in buf.shape)


def _written_first(stmts: list, buf: ir.Buffer, lanes: dict) -> bool:
    """Whether every element of ``buf`` is written before any is read in ``stmts`` (one T.Parallel
    iteration's body): ``analysis.first_access``, where also a loop over a dim's whole extent
    (``for j in T.serial(n): tmp[j] = ...``) writes the elements its variable indexes."""
    found = first_access(stmts, buf, lanes)
    if found != "read":
        return found == "write"
    for s in stmts:
        if first_access([s], buf, lanes) is None:
            continue
        if isinstance(s, ir.For) and static(s.start) == 0 and static(s.step) == 1 and (static(s.stop) or 0) > 0:
            return _written_first(s.body, buf, {**lanes, s.var: static(s.stop)})
        return False
    return False


def _varying_writes(loop: ir.Parallel, scalars: set) -> list:
    """The ``scalars`` that ``loop``'s body stores a value to that differs between its iterations (or
    stores under a condition that does), in the order of their first such store."""
    varying_vars = {v for v, extent in zip(loop.vars, loop.extents) if extent != 1}  # T.Parallel(1, n): one i
    per_iteration = {s.buffer for s in ir.walk(loop.body) if isinstance(s, ir.Alloc)}
    found: list = []

    def varies(e) -> bool:
        for sub in ir.iter_expr_tree(e) if isinstance(e, ir.Expr) else ():
            if isinstance(sub, ir.VarRef) and sub.var in varying_vars:
                return True
            if isinstance(sub, ir.Load) and (sub.buffer in per_iteration or sub.buffer in found):
                return True
        return False

    def block(stmts: list, varying: bool) -> None:
        for s in stmts:
            if isinstance(s, ir.Let) and (varying or varies(s.value)):
                varying_vars.add(s.var)
            elif isinstance(s, ir.Store) and s.buffer in scalars and s.buffer not in found:
                if varying or any(varies(e) for e in (*s.indices, s.value)):
                    found.append(s.buffer)
            elif isinstance(s, ir.For):
                bounds = any(varies(e) for e in (s.start, s.stop, s.step))
                if bounds:
                    varying_vars.add(s.var)
                block(s.body, varying or bounds)
            elif isinstance(s, ir.While):
                block(s.body, varying or varies(s.cond))
            elif isinstance(s, ir.If):
                block(s.then_body, varying or varies(s.cond))
                block(s.else_body, varying or varies(s.cond))

    while True:  # a varying scalar read makes what it feeds vary: repeat until nothing changes
        before = (len(varying_vars), len(found))
        block(loop.body, False)
        if (len(varying_vars), len(found)) == before:
            return found


def _atomic_dsts(loop: ir.Parallel) -> set:
    out = set()
    for s in ir.walk(loop.body):
        if isinstance(s, ir.Atomic):
            dst = s.dst.buffer if isinstance(s.dst, (ir.Region, ir.Load)) else None
            out.add(dst)
    return out


def _first_store(stmts: list, buf: ir.Buffer) -> ir.Store:
    return next(s for s in ir.walk(stmts) if isinstance(s, ir.Store) and s.buffer is buf)


def _rename(stmts: list, old: ir.Buffer, new: ir.Buffer) -> list:
    """``stmts`` with every load and store of ``old`` made on ``new`` (rebuilt where anything changes)."""

    def expr(e):
        e = _map_children(e, expr)
        return dataclasses.replace(e, buffer=new) if isinstance(e, ir.Load) and e.buffer is old else e

    def stmt(s):
        (s,) = _map_exprs(s, expr)
        changes = {}
        for f in dataclasses.fields(s):
            value = getattr(s, f.name)
            if isinstance(value, ir.Region) and value.buffer is old:
                changes[f.name] = dataclasses.replace(value, buffer=new)
            elif isinstance(value, list) and f.name in ("body", "then_body", "else_body"):
                changes[f.name] = [stmt(x) for x in value]
        if isinstance(s, ir.Store) and s.buffer is old:
            changes["buffer"] = new
        return dataclasses.replace(s, **changes) if changes else s

    return [stmt(s) for s in stmts]
