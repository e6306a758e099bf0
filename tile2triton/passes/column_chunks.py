"""Wide columns of a kernel past the register budget, computed in chunks of 128 columns.

TileLang's sparse MLA backward keeps its 512 head dims whole: ``KV_shared[32, 512]`` read by two
gemms (``S = Q KV^T``, ``dP = dO KV^T``), ``acc_dq[64, 512]`` and ``acc_dkv[32, 512]`` beside them,
about 230 accumulator registers a thread.  Triton lowers each gemm to one wgmma a K step, each with
a 64-bit shared-memory descriptor; LLVM computes the 32 descriptors of ``KV_shared`` once for both
gemms and keeps them live from the first to the second (64 registers), and ptxas spills them: 83
local loads an iteration (Triton 3.6, sm_90).  Computed 128 columns at a time, with the gemms that
read a chunk side by side, one chunk's descriptors are live at once and the dKV chunk is added to
memory before the next is computed: no spills, 1504 instructions an iteration against 1919, and on
the H200 0.1857 -> 0.1453 ms at the suite's shape (a hand-written kernel of this form: 0.1424;
benchmarks/mlabwd_interleave_probe.py: 64-column chunks spill again, 256-column ones are no faster).

The pass, for a kernel whose gemm accumulators pass the register budget
(``analysis.accumulators_past_budget``) and has no thread view:

1. **Split.**  Each shared or fragment buffer of two dims whose last dim is a multiple of 128, at
   least 256, becomes one buffer a chunk (``KV_shared_c0`` ...), with every statement that touches
   it rewritten for the chunks by ``pow2_split``'s rewriter (allocations, fills, copies, gemms over
   K or N, ``T.Parallel`` loops over the columns, including a vector atomic's ``d * 4 + k``).  A
   buffer with any other use stays whole, with its partners; buffers that no gemm reads or writes,
   directly or through their partners, stay whole too.
2. **Schedule.**  In each statement list, a statement made for the chunks moves up past the
   statements it does not depend on (no buffer one writes and the other reads or writes; no
   barrier, variable binding or control flow in between) until it meets another chunked statement,
   and a run of chunked statements is emitted chunk by chunk (all statements' chunk 0, then chunk
   1, ...) where no other buffer is written by one of them and used by another.

Switch: ``TILE2TRITON_COLUMN_CHUNKS`` (``LoweringOptions.column_chunks``).
"""

from __future__ import annotations

import dataclasses

from .. import ir
from ..ir.exprs import static
from .analysis import accumulators_past_budget, buffer_accesses
from .pow2_split import split_body

CHUNK = 128  # columns a chunk: 8 wgmma K steps of bf16 (measured: 64 spills again, 256 is no faster)


def chunk_columns(kernel: ir.Kernel, warps: int) -> ir.Kernel:
    """A copy of ``kernel`` with its wide columns chunked and scheduled chunk by chunk, or
    ``kernel`` itself where nothing applies."""
    if kernel.thread_vars or not accumulators_past_budget(kernel, warps):
        return kernel
    split = _candidates(kernel.body)
    while True:
        done = split_body(kernel.body, split, scaled_axes=True, name=lambda b, k, start: f"{b.name}_c{k}")
        if done is None:
            return kernel
        idle = split.keys() - _with_gemms(kernel.body, split)
        if not idle:
            body, rewriter = done
            return dataclasses.replace(kernel, body=_schedule(body, rewriter.produced))
        for b in idle:  # chunks only where a gemm takes them; their partners stay with them
            del split[b]


def _candidates(body) -> dict:
    """Buffer -> (last dim, its 128-column chunks) for the wide shared/fragment allocations."""
    out = {}
    for s in ir.walk(body):
        if not isinstance(s, ir.Alloc) or s.buffer.scope not in (ir.SHARED, ir.FRAGMENT) or s.init is not None:
            continue
        b = s.buffer
        shape = [static(d) for d in b.shape]
        if b.ndim != 2 or b.alias_of is not None or any(not isinstance(d, int) for d in shape):
            continue
        width = shape[-1]
        if width % CHUNK == 0 and width >= 2 * CHUNK:
            out[b] = (1, [(start, CHUNK) for start in range(0, width, CHUNK)])
    return out


def _with_gemms(body, split: dict) -> set:
    """The split buffers a gemm names, and those joined to them by a statement naming both."""
    linked: dict = {b: {b} for b in split}
    seeds = set()
    for s in ir.walk(body):
        named = {b for b in _buffers(s) if b in split}
        if isinstance(s, ir.Gemm):
            seeds |= named
        for b in named:
            linked[b] |= named
    reached, todo = set(), list(seeds)
    while todo:
        b = todo.pop()
        if b not in reached:
            reached.add(b)
            todo.extend(linked[b] - reached)
    return reached


# ----------------------------------------------------------------------------- scheduling
def _buffers(s) -> set:
    """Every buffer a statement (and any statement in it) names."""
    read, written = _effects(s)
    return read | written


def _effects(s) -> tuple[set, set]:
    """(buffers read, buffers written) by ``s`` and the statements in it (an allocation writes its
    buffer: nothing that uses it moves above it)."""
    read, written = buffer_accesses([s])
    return read, written | {a.buffer.root for a in ir.walk([s]) if isinstance(a, ir.Alloc)}


_MOVABLE = (ir.Alloc, ir.Copy, ir.Fill, ir.Gemm, ir.Parallel)


def _movable(s) -> bool:
    """Whether ``s`` may change places with its neighbours when no buffer orders them: tile
    statements and ``T.Parallel`` loops of element statements (no barrier, binding seen outside,
    loop exit or scalar effect)."""
    if not isinstance(s, _MOVABLE):
        return False
    if isinstance(s, ir.Copy):  # a tile copy (a scalar copy's element is not a region)
        return isinstance(s.src, ir.Region) and isinstance(s.dst, ir.Region)
    if isinstance(s, ir.Parallel):
        return all(isinstance(x, (ir.Store, ir.Atomic, ir.If, ir.Let, ir.For)) for x in ir.walk(s.body))
    return True


def _independent(a: tuple, b: tuple) -> bool:
    (ra, wa), (rb, wb) = a, b
    return not (wa & (rb | wb) or wb & ra)


def _schedule(body: list, produced: dict) -> list:
    """``body`` (and every list in it) with its chunked statements gathered and run chunk by chunk."""
    body = [_schedule_children(s, produced) for s in body]
    # units: the chunks of one statement, or one statement that was not chunked
    units: list[list] = []
    for s in body:
        origin = produced.get(id(s))
        if origin is not None and units and produced.get(id(units[-1][0]), (None,))[0] is origin[0]:
            units[-1].append(s)
        else:
            units.append([s])
    chunked = lambda u: id(u[0]) in produced and len(u) > 1  # noqa: E731
    effects_of = [[_effects(s) for s in u] for u in units]  # per statement of each unit
    effects = [_merge(e) for e in effects_of]
    # move each chunked unit up to the chunked unit before it, past independent statements
    order = list(range(len(units)))
    for pos in range(len(order)):
        i = order[pos]
        if not chunked(units[i]) or not all(_movable(s) for s in units[i]):
            continue
        at, target = pos, None
        while at > 0:
            j = order[at - 1]
            if chunked(units[j]):
                target = at
                break
            if not _movable(units[j][0]) or not _independent(effects[i], effects[j]):
                break
            at -= 1
        if target is not None and target != pos:
            order.insert(target, order.pop(pos))
    # runs of chunked units of one chunk count, chunk by chunk where nothing else orders them
    out: list = []
    run: list[int] = []

    def flush():
        if len(run) > 1 and _fusable([effects_of[i] for i in run]):
            for k in range(len(units[run[0]])):
                out.extend(units[i][k] for i in run)
        else:
            for i in run:
                out.extend(units[i])
        run.clear()

    for i in order:
        if chunked(units[i]) and (not run or len(units[run[0]]) == len(units[i])):
            run.append(i)
            continue
        flush()
        if chunked(units[i]):
            run.append(i)
        else:
            out.extend(units[i])
    flush()
    return out


def _merge(pairs) -> tuple[set, set]:
    read, written = set(), set()
    for r, w in pairs:
        read |= r
        written |= w
    return read, written


def _fusable(unit_effects: list) -> bool:
    """Whether running units chunk by chunk keeps every dependence, given each unit's (read,
    written) per chunk statement: a buffer that is not one of the chunks (the same in every chunk's
    statement) written by one unit is used by no other."""
    shared_of = [
        (set.intersection(*(r for r, _ in per_chunk)), set.intersection(*(w for _, w in per_chunk)))
        for per_chunk in unit_effects
    ]
    for i, (_, wi) in enumerate(shared_of):
        for j, (rj, wj) in enumerate(shared_of):
            if i != j and wi & (rj | wj):
                return False
    return True


def _schedule_children(s, produced: dict):
    changes = {}
    for attr in ("body", "then_body", "else_body"):
        child = getattr(s, attr, None)
        if child and not isinstance(s, ir.Parallel):
            changes[attr] = _schedule(child, produced)
    if not changes:
        return s
    made = dataclasses.replace(s, **changes)
    if id(s) in produced:
        produced[id(made)] = produced[id(s)]
    return made
