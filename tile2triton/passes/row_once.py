"""A global row that several reads of one block of statements take, loaded once
(``TILE2TRITON_ROW_ONCE``).

Sparse kernels read their index list where each statement needs it: TileLang's pipelined sparse
MLA forward, once its producer's ring is forwarded (passes/forward_shared.py), reads the
iteration's 64 indices for the score mask and twice in each of three column parts of the KV gather
(once for the validity test, once as the rows)::

    for h, j in T.Parallel(64, 64):
        acc_s[h, j] = T.if_then_else(Indices[b, s, g, base + j] <= limit, 0, -inf)
    for r, c in T.Parallel(64, 256):
        part[r, c] = T.if_then_else(Indices[b, s, g, base + r] <= limit, KV[b, Indices[b, s, g, base + r], g, c], 0)
    ...

Lowered as written that is seven loads of the same 64 elements an iteration, in two layouts (Triton
merges only the identical ones: five remain).  Here the row is read once into a fragment, before
the first statement that reads it, and each read takes the fragment at its lane::

    for u in T.Parallel(64):
        Indices_row[u] = Indices[b, s, g, base + u]
    ... Indices_row[j] ... Indices_row[r] ...

On the H200 (Triton 3.6, session 20) the kernel went 56.5 -> 53.2 us at the suite's shape (hand edit
of the generated source, benchmarks/hand_variants/mla_pipe_variants.py, ``gen`` vs ``dedupe``); in
the suite run through this pass, kernel time 51.3 -> 49.2 us.  Not in a kernel whose gemm
accumulators pass the register budget (``analysis.accumulators_past_budget``): the fragment stays
live across the gemms between its reads.  Sparse MLA backward (232 accumulator registers a thread,
three reads of its index row: the mask and two gathers) went 182.6 -> 189.1 us with it.

Taken when (checked; otherwise nothing changes), in a kernel within the register budget, in one
list of statements, the ``T.Parallel``
statements of that list read an element ``G[i0, .., v + t, ..]`` of a global buffer at least twice
in all, where:

- the reading ``T.Parallel`` holds element assignments (and branches, lets) only: where its lanes
  are lowered over other axes (an atomic's fused lane axis) a fragment read at ``v`` would be a
  register gather;
- ``v`` is a variable of the reading ``T.Parallel`` and appears in that one index, as ``v`` plus
  terms without it; every read has the same extent along ``v`` (the fragment's);
- the other indices and ``t`` read no buffer and name no variable of a ``T.Parallel`` and none that
  a statement from the first read to the last binds (a loop variable, a let); in a thread-view
  kernel they name only block indices, sizes, parameters, names bound once at the kernel's top
  level from those, and the variables of loops around the list;
- no statement of the kernel writes ``G`` (nor inline asm, which may write anything).

The fragment is read for every lane where some read was conditional; the lowering masks a global
load by the bounds it cannot prove, so the extra lanes read nothing outside ``G``.
"""

from __future__ import annotations

import dataclasses

from .. import ir
from ..ir.dtypes import INT32
from ..ir.exprs import ir_key, map_children, mentions, substitute
from .analysis import accumulators_past_budget
from .forward_shared import written_roots
from .ir_edits import _map_exprs, _rebuild
from .prefetch_indices import _names_only, _uniform_names, _unit_step

_LANE = ir.Var("lane", INT32, "lane")  # stands for a read's own T.Parallel variable in the keys


def load_rows_once(kernel: ir.Kernel, warps: int) -> ir.Kernel:
    """``kernel`` (launched with ``warps`` warps) with each such row loaded once per list of
    statements (a new kernel), or ``kernel`` itself when none qualifies."""
    written = written_roots(kernel.body)
    if None in written or accumulators_past_budget(kernel, warps):
        return kernel
    uniform = _uniform_names(kernel) if kernel.thread_vars else None
    rows = _Rows(written, uniform)
    body = rows.block(kernel.body, frozenset())
    return dataclasses.replace(kernel, body=body) if rows.made else kernel


class _Rows:
    def __init__(self, written: set, uniform: set | None):
        self.written = written  # root buffers some statement writes
        self.uniform = uniform  # thread view: the names a row's indices may take (None: any)
        self.made = 0  # fragments made

    def block(self, stmts: list, loop_vars: frozenset) -> list:
        """``stmts`` (nested lists first) with their rows loaded once; ``loop_vars``: the variables
        of the loops around them."""
        out = []
        for s in stmts:
            if isinstance(s, ir.Parallel):  # its body is per element: no list of statements to load in
                out.append(s)
                continue
            inner = loop_vars | {s.var} if isinstance(s, ir.For) else loop_vars
            out.append(_rebuild(s, lambda body, inner=inner: self.block(body, inner)))
        reads: dict = {}  # key -> (the row, its extent, [position in out of each read])
        for k, s in enumerate(out):
            if isinstance(s, ir.Parallel):
                for load, var in self._row_reads(s, loop_vars):
                    key, row, extent = _key(load, var, s)
                    reads.setdefault(key, (row, extent, []))[2].append(k)
        made: dict = {}  # position -> [statements to put before it]
        swaps: dict = {}  # position -> {key: fragment}
        for key, (load, extent, found) in reads.items():
            first, last = found[0], found[-1]
            if len(found) < 2 or _rebound(out[first : last + 1], load):
                continue
            name = f"{load.buffer.name}_row" + (str(self.made) if self.made else "")
            frag = ir.Buffer(name, ir.FRAGMENT, (extent,), load.buffer.dtype, load.buffer.loc)
            lane = ir.Var(f"{load.buffer.name}_u", INT32, "lane")
            value = substitute(load, _LANE, ir.VarRef(lane))
            loc = out[first].loc
            fill = ir.Parallel(loc, [lane], [extent], [ir.Store(loc, frag, (ir.VarRef(lane),), value)])
            made.setdefault(first, []).extend([ir.Alloc(loc, frag), fill])
            for k in set(found):
                swaps.setdefault(k, {})[key] = frag
            self.made += 1
        if not made:
            return out
        result = []
        for k, s in enumerate(out):
            result.extend(made.get(k, []))
            result.append(_swap_reads(s, swaps[k]) if k in swaps else s)
        return result

    def _row_reads(self, par: ir.Parallel, loop_vars: frozenset) -> list:
        """(load, the T.Parallel variable it reads a row along) for each read of a row in ``par``; none
        where its body holds more than element assignments and branches (an atomic's lanes, a loop
        inside, are lowered over other axes, where a fragment read at the lane becomes a gather)."""
        if any(not isinstance(s, (ir.Store, ir.Let, ir.If)) for s in ir.walk(par.body)):
            return []
        found = []
        for s in ir.walk([par]):
            for e in _exprs(s):
                for sub in ir.iter_expr_tree(e):
                    if isinstance(sub, ir.Load):
                        var = self._row_var(sub, par, loop_vars)
                        if var is not None:
                            found.append((sub, var))
        return found

    def _row_var(self, load: ir.Load, par: ir.Parallel, loop_vars: frozenset) -> ir.Var | None:
        """The variable of ``par`` that ``load`` reads a row of a written-nowhere global buffer
        along, or None."""
        if load.buffer.scope != ir.GLOBAL or load.buffer.root in self.written:
            return None
        lanes = [v for v in par.vars if any(mentions(i, v) for i in load.indices)]
        if len(lanes) != 1:
            return None
        var = lanes[0]
        dims = [d for d, i in enumerate(load.indices) if mentions(i, var)]
        if len(dims) != 1 or not _unit_step(load.indices[dims[0]], var):
            return None
        for index in load.indices:
            rest = substitute(index, var, ir.Const(0, INT32))
            for sub in ir.iter_expr_tree(rest):
                if isinstance(sub, ir.Load) or isinstance(sub, ir.VarRef) and sub.var.kind == "lane":
                    return None
            if self.uniform is not None and not _names_only(rest, self.uniform | loop_vars):
                return None
        return var


def _exprs(s) -> list:
    """The expressions ``s`` holds directly, as ``_map_exprs`` visits them (reads and rewrites agree)."""
    found = []

    def collect(e):
        found.append(e)
        return e

    _map_exprs(s, collect)
    return found


def _key(load: ir.Load, var: ir.Var, par: ir.Parallel) -> tuple:
    """(key, the row: ``load`` with ``_LANE`` for ``var``, the extent of ``var``): reads of one row
    along T.Parallel variables of one extent share the key."""
    extent = par.extents[par.vars.index(var)]
    row = substitute(load, var, ir.VarRef(_LANE))
    return (ir_key(row), extent), row, extent


def _rebound(stmts: list, load: ir.Load) -> bool:
    """Does a statement of ``stmts`` bind a name the row's indices read (the row would differ
    between its reads)?"""
    bound = set()
    for s in ir.walk(stmts):
        if isinstance(s, (ir.Let, ir.For)):
            bound.add(s.var)
        elif isinstance(s, ir.Parallel):
            bound.update(s.vars)
    for sub in ir.iter_expr_tree(load):
        if isinstance(sub, ir.VarRef) and sub.var in bound and sub.var is not _LANE:
            return True
    return False


def _swap_reads(s, frags: dict):
    """``s`` (a T.Parallel) with each read of a row in ``frags`` (key -> fragment) taken from the
    fragment at the reading variable."""

    def go(stmts, par):
        return [_rebuild(_map_exprs(x, lambda e: swap(e, par))[0], lambda body: go(body, par)) for x in stmts]

    def swap(e, par):
        if isinstance(e, ir.Load):
            for var in par.vars:
                if any(mentions(i, var) for i in e.indices):
                    frag = frags.get(_key(e, var, par)[0])
                    if frag is not None:
                        return ir.Load(frag, (ir.VarRef(var),), e.loc)
        return map_children(e, lambda x: swap(x, par))

    return _rebuild(s, lambda body: go(body, s))
