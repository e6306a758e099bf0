"""Warp-specialized sections that hand data to each other through mbarriers.

TileLang runs the sections of a warp-specialized kernel concurrently (``if tx < 128: ... elif
tx < 256: ...``, or ``with T.ws(k):``), ordered only by their ``T.alloc_barrier`` arrives and
waits.  tile2triton runs every statement at block level, one after another, so it must pick
one order of the sections' statements in which every wait finds its barrier's phase complete:
that order is then one of the executions the concurrent program may have, and the barriers
order nothing it does not.

While the kernel is bound, each arrive and wait is a ``BarrierEvent`` statement in the IR.
``schedule_kernel`` then

1. keeps program order where it satisfies every wait;
2. otherwise (sections written as an ``if`` around a ``with T.ws(k):``, or as consecutive
   ``with T.ws(k):`` blocks, first read as that chain: ``_as_chains``),
   for an ``if``/``elif`` chain of thread-range sections whose main loops have the
   same iteration space, fuses those loops into one whose body runs each section's iteration
   under the section's own condition, in the first order of the sections (and loop depth)
   that satisfies every wait.  A section's statements before its loop run before the fused
   loop, those after it after, in program order.  Where no order of whole iterations works
   (sections that meet inside an iteration: each arrives, then waits for the other), every
   part is split before its waits and the parts interleaved: running the barriers, the next
   part is the first section's whose waits pass (``_Interleave``), and the order the
   iterations share is the one tried;
3. checks the result by running the barriers (``_Simulation``: phases, arrive counts, parity),
   raises a clear error at the first wait no order satisfies, and removes the events.

Named barriers (PTX ``bar.sync`` / ``bar.arrive``: ``T.sync_threads(id, n)``,
``T.named_barrier_arrive(id, n)``) are barriers too: barrier ``id`` completes a phase when ``n``
threads have arrived; ``T.named_barrier_arrive`` only arrives, ``T.sync_threads(id, n)`` arrives
and then waits for the phase its own arrival joined (a ``"sync"`` event, paired with its arrive).

An arrive counts the threads that execute it: those its enclosing thread-range conditions
pick, or a ``T.ws`` block's warp groups (128 threads each).  A ``T.tma_copy``'s transaction
completes when it is issued, so it adds no arrival, except on a barrier no thread arrives at,
where it completes a phase.  Where the barriers cannot be run (a barrier index, parity,
condition or loop start known only at run time), program order stands if every wait follows
an arrive on its barrier in the same loop body (``_program_order_check``).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import operator
from dataclasses import dataclass

from .. import ir
from ..errors import TileLangCompileError
from ..ir import BOOL, INT32
from ..ir.exprs import as_expr, const_int, ir_key, static

# a loop whose trip count is only known at run time is run for this many iterations
_DYNAMIC_TRIPS = 8
# a longer static loop runs this many iterations plus its trip count's remainder modulo _PERIOD
# (every phase parity of rings of up to 8 buffers repeats with it), so that the barriers end
# in the state the whole loop leaves
_MAX_TRIPS, _PERIOD = 256, 1680
# iterations one run of the barriers may take before it gives up
_BUDGET = 200_000
# with more looped sections than this, only the interleaving of their parts is tried (not n! orders)
_MAX_PERMUTED = 4


@dataclass(eq=False)
class BarrierEvent(ir.Stmt):
    """An arrive or wait on one mbarrier (removed before the IR leaves the binder)."""

    kind: str  # "arrive", "wait", "tma" (a T.tma_copy's transaction), or "sync" (a named barrier's wait)
    ref: object  # rules.BarrierRef
    parity: object  # wait: the phase parity waited for (int or ir.Expr)
    node: object  # the user's AST node, for errors
    name: str  # the T.* name the user called
    threads: int | None = None  # inside T.ws: its warp groups' threads; None: the enclosing conditions'
    count: object = None  # a named barrier: the threads a phase waits for (int or ir.Expr)
    pair: int | None = None  # T.sync_threads(id, n): its arrive and its "sync" wait share this key

    @property
    def waits(self) -> bool:
        return self.kind in ("wait", "sync")


class _Blocked(Exception):
    def __init__(self, event: BarrierEvent):
        self.event = event


class _Unknown(Exception):
    def __init__(self, event_or_stmt, what: str):
        self.where, self.what = event_or_stmt, what


# ------------------------------------------------------------------ expressions at compile time
_BINOPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod,
           "&": operator.and_, "|": operator.or_, "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift}  # fmt: skip
_COMPARES = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
             "!=": operator.ne}  # fmt: skip


def evaluate(e, env: dict):
    """The int value of ``e`` with the variables of ``env`` bound to ints, or to the expressions of
    names bound once (``tx = T.get_thread_binding()``); None where anything else enters."""
    if isinstance(e, bool):
        return int(e)
    if isinstance(e, int):
        return e
    if isinstance(e, ir.Const):
        return int(e.value) if isinstance(e.value, (int, bool)) else None
    if isinstance(e, ir.VarRef):
        value = env.get(e.var)
        return evaluate(value, env) if isinstance(value, ir.Expr) else value  # an Expr: a let's value
    if isinstance(e, ir.Cast):
        return evaluate(e.value, env) if e.dtype.kind in ("int", "uint", "bool") else None
    if isinstance(e, ir.BinOp) and e.op in ("and", "or"):
        x = evaluate(e.lhs, env)
        if x is not None and bool(x) == (e.op == "or"):
            return int(bool(x))  # decided by the left operand
        y = evaluate(e.rhs, env)
        return None if x is None or y is None else int(bool(y))
    if isinstance(e, (ir.BinOp, ir.Compare)):
        fn = _BINOPS.get(e.op) if isinstance(e, ir.BinOp) else _COMPARES.get(e.op)
        x, y = evaluate(e.lhs, env), evaluate(e.rhs, env)
        if fn is None or x is None or y is None or (e.op in ("//", "%") and y == 0):
            return None
        return int(fn(x, y))
    if isinstance(e, ir.UnaryOp):
        x = evaluate(e.operand, env)
        if x is None:
            return None
        if e.op == "-":
            return -x
        if e.op == "not" or (e.op == "~" and e.dtype.kind == "bool"):
            return int(not x)
        return ~x if e.op == "~" else None
    if isinstance(e, ir.Select):
        c = evaluate(e.cond, env)
        return None if c is None else evaluate(e.true_value if c else e.false_value, env)
    return None


def _bodies(s) -> list:
    return [getattr(s, a) for a in ("body", "then_body", "else_body") if isinstance(getattr(s, a, None), list)]


def _events(stmts) -> list:
    out = []
    for s in stmts:
        if isinstance(s, BarrierEvent):
            out.append(s)
        for body in _bodies(s):
            out.extend(_events(body))
    return out


class _Facts:
    """What the kernel's names mean: thread indices, and names bound once (``ir.Let``) to values."""

    def __init__(self, kernel: ir.Kernel):
        self.kernel = kernel
        self.thread_vars = frozenset(kernel.thread_vars)
        self.sets: dict = {}
        self.refresh()

    def refresh(self) -> None:
        """Read the names again (a fused loop binds them to values of its own loop variables)."""
        lets: dict = {}
        for s in _walk(self.kernel.body):
            if isinstance(s, ir.Let):
                lets.setdefault(s.var, []).append(s.value)
        self.aliases = {var: values[0] for var, values in lets.items() if len(values) == 1}
        self.bases: dict = {}

    def base_vars(self, e) -> frozenset:
        """The variables ``e`` depends on, through the names bound once."""
        if not isinstance(e, ir.Expr):
            return frozenset()
        out = set()
        for x in ir.iter_expr_tree(e):
            if isinstance(x, ir.VarRef):
                if x.var in self.aliases:
                    if x.var not in self.bases:
                        self.bases[x.var] = frozenset()  # a cycle cannot happen; this only guards it
                        self.bases[x.var] = self.base_vars(self.aliases[x.var])
                    out |= self.bases[x.var]
                else:
                    out.add(x.var)
        return frozenset(out)

    def by_thread(self, e) -> bool:
        return bool(self.base_vars(e) & self.thread_vars)

    def thread_range(self, cond) -> bool:
        """Whether ``cond`` depends on the thread indices, and on nothing else but constants."""
        bases = self.base_vars(cond)
        return bool(bases) and bases <= self.thread_vars

    def thread_env(self, t: int) -> dict:
        env = dict(self.aliases)
        for var, extent in zip(self.kernel.thread_vars, self.kernel.thread_extents):
            env[var] = t % extent
            t //= extent
        return env

    def thread_set(self, cond) -> frozenset | None:
        """The block's threads for which ``cond`` (of thread indices and constants) holds."""
        if id(cond) not in self.sets:
            chosen = set()
            for t in range(self.kernel.threads):
                value = evaluate(cond, self.thread_env(t))
                if value is None:
                    chosen = None
                    break
                if value:
                    chosen.add(t)
            self.sets[id(cond)] = None if chosen is None else frozenset(chosen)
        return self.sets[id(cond)]


def _walk(stmts):
    for s in stmts:
        yield s
        for body in _bodies(s):
            yield from _walk(body)


# ------------------------------------------------------------------ running the barriers
class _Simulation:
    """Runs the barrier statements of a kernel body in order: each barrier counts arrivals, a
    phase completes at its arrive count, and a wait for parity p passes once the number of
    completed phases has the other parity (PTX ``mbarrier.try_wait.parity``)."""

    def __init__(self, facts: _Facts, skip: set):
        self.facts, self.skip = facts, skip
        self.arrivals: dict = {}
        self.joined: dict = {}  # (a named sync's pair, barrier) -> the phase its arrive joined
        self.signalled_by_arrive = {id(ev.ref.array) for ev in _events(facts.kernel.body) if ev.kind == "arrive"}
        self.has_events: dict = {}
        self.budget = _BUDGET

    def contains_events(self, s) -> bool:
        known = self.has_events.get(id(s))
        if known is None:
            known = isinstance(s, BarrierEvent) or any(self.contains_events(x) for b in _bodies(s) for x in b)
            self.has_events[id(s)] = known
        return known

    def threads_where(self, cond, env: dict, active: frozenset, stmt) -> frozenset:
        if not self.facts.by_thread(cond):
            value = evaluate(cond, env)
            if value is None:
                raise _Unknown(stmt, "its condition is not known at compile time")
            return active if value else frozenset()
        if self.facts.thread_range(cond):  # the same threads in every iteration
            chosen = self.facts.thread_set(cond)
            if chosen is None:
                raise _Unknown(stmt, "its condition is not known at compile time")
            return active & chosen
        chosen = set()
        for t in active:
            value = evaluate(cond, {**env, **self.facts.thread_env(t)})
            if value is None:
                raise _Unknown(stmt, "its condition is not known at compile time")
            if value:
                chosen.add(t)
        return frozenset(chosen)

    def run(self, stmts, env: dict, active: frozenset) -> None:
        for s in stmts:
            if not self.contains_events(s):
                continue
            if isinstance(s, BarrierEvent):
                self.event(s, env, active)
            elif isinstance(s, ir.If):
                taken = self.threads_where(s.cond, env, active, s)
                if taken:
                    self.run(s.then_body, env, taken)
                if active - taken:
                    self.run(s.else_body, env, active - taken)
            elif isinstance(s, ir.For):
                for local in self.iterations([s], env):
                    self.run(s.body, local, active)
            elif isinstance(s, _Interleave):
                self.interleave(s, env, active)
            else:
                raise _Unknown(s, "tile2triton follows barriers only through for loops and ifs")

    def iterations(self, loops: list, env: dict):
        """The variables of each iteration of a loop nest, in order."""
        if not loops:
            yield env
            return
        s = loops[0]
        start, stop, step = (evaluate(x, env) for x in (s.start, s.stop, s.step))
        if start is None or step is None or step == 0:
            raise _Unknown(s, "its bounds are not known at compile time")
        trips = _DYNAMIC_TRIPS if stop is None else max(0, -(-(stop - start) // step))
        if trips > _MAX_TRIPS:
            trips = _MAX_TRIPS + (trips - _MAX_TRIPS) % _PERIOD
        self.budget -= trips
        if self.budget < 0:
            raise _Unknown(s, "it runs too many iterations to follow")
        for k in range(trips):
            yield from self.iterations(loops[1:], {**env, s.var: start + k * step})

    def interleave(self, s: _Interleave, env: dict, active: frozenset) -> None:
        """Each iteration: run the first section's next segment whose waits pass, until every
        segment has run; record the order (none once an iteration cannot go on)."""
        total = sum(len(segs) for segs in s.segments)
        for local in self.iterations(s.levels, env):
            done, order = [0] * len(s.segments), []
            while len(order) < total:
                for k, segs in enumerate(s.segments):
                    if done[k] == len(segs):
                        continue
                    saved = dict(self.arrivals), dict(self.joined)
                    try:
                        self.run(segs[done[k]], local, active)
                    except _Blocked:
                        self.arrivals, self.joined = saved
                        continue
                    order.append((k, done[k]))
                    done[k] += 1
                    break
                else:
                    return
            s.orders.append(tuple(order))

    def event(self, ev: BarrierEvent, env: dict, active: frozenset) -> None:
        array, counts = ev.ref.array, getattr(ev.ref.array, "counts", None)
        index = const_int(0) if ev.ref.index is None else ev.ref.index
        parity = ev.parity if ev.kind == "wait" else 0
        # (barrier index, parity) -> how many threads execute the event with them: each thread
        # may pick its own barrier (``mbars[tx // 32]``)
        groups: dict = {}
        if self.facts.by_thread(index) or self.facts.by_thread(parity):
            for t in active:
                local = {**env, **self.facts.thread_env(t)}
                key = (evaluate(index, local), evaluate(parity, local))
                groups[key] = groups.get(key, 0) + 1
        elif active or ev.threads is not None:
            groups[(evaluate(index, env), evaluate(parity, env))] = (
                ev.threads if ev.threads is not None else len(active)
            )
        for (i, p), threads in groups.items():
            if ev.count is not None:  # a named barrier: the call gives its thread count
                count = evaluate(ev.count, env)
                if i is None or count is None or count <= 0:
                    raise _Unknown(ev, "its named barrier or thread count is not known at compile time")
            elif i is None or counts is None or not 0 <= i < len(counts):
                raise _Unknown(ev, "its barrier (or the index into the barrier array) is not known at compile time")
            else:
                count = counts[i]
            key = (id(array), i)
            done = self.arrivals.get(key, 0)
            if ev.kind == "arrive":
                if ev.pair is not None:
                    self.joined[(ev.pair, key)] = done // count
                self.arrivals[key] = done + threads
            elif ev.kind == "sync":  # bar.sync: until the phase this thread's arrival joined completes
                if done // count <= self.joined.get((ev.pair, key), done // count) and id(ev) not in self.skip:
                    raise _Blocked(ev)
            elif ev.kind == "tma":
                # a barrier that only T.tma_copy signals completes a phase at each copy; where
                # threads arrive too, the copy's transaction completes at once and adds no arrival
                if id(array) not in self.signalled_by_arrive:
                    self.arrivals[key] = done + count
            elif p is None:
                raise _Unknown(ev, "its parity is not known at compile time")
            elif (done // count) % 2 == p % 2 and id(ev) not in self.skip:
                raise _Blocked(ev)


# ------------------------------------------------------------------ fusing the sections' loops
def _substitute(node, mapping: dict):
    """``node`` with the variables of ``mapping`` replaced (a copy where anything changed)."""
    if isinstance(node, ir.VarRef):
        return ir.VarRef(mapping[node.var]) if node.var in mapping else node
    if isinstance(node, (list, tuple)):
        items = [_substitute(x, mapping) for x in node]
        return node if all(a is b for a, b in zip(items, node)) else type(node)(items)
    if isinstance(node, BarrierEvent):
        index = _substitute(node.ref.index, mapping)
        parity = _substitute(node.parity, mapping)
        if index is node.ref.index and parity is node.parity:
            return node
        ref = type(node.ref)(node.ref.array, index)
        return dataclasses.replace(node, ref=ref, parity=parity)
    if isinstance(node, (ir.Expr, ir.Stmt, ir.Region)) and dataclasses.is_dataclass(node):
        changes = {}
        for f in dataclasses.fields(node):
            if f.init:
                value = getattr(node, f.name)
                new = _substitute(value, mapping)
                if new is not value:
                    changes[f.name] = new
        return dataclasses.replace(node, **changes) if changes else node
    return node


@dataclass
class _Section:
    path: list  # [(If, branch taken: True for then)], outermost first
    before: list
    loops: list  # the perfectly nested For loops of its main loop, outermost first ([] if none)
    after: list


def _chain_sections(s: ir.If, facts: _Facts) -> list | None:
    """The sections of an ``if``/``elif``/``else`` chain over thread ranges, or None."""
    sections, path, cur = [], [], s
    while True:
        if not facts.thread_range(cur.cond) or facts.thread_set(cur.cond) is None:
            return None  # a section is a range of threads, the same in every iteration
        sections.append(([*path, (cur, True)], cur.then_body))
        path = [*path, (cur, False)]
        rest = cur.else_body
        if len(rest) == 1 and isinstance(rest[0], ir.If) and facts.thread_range(rest[0].cond):
            cur = rest[0]
            continue
        if rest:
            sections.append((path, rest))
        break
    out = []
    for path, body in sections:
        # the main loop: the last loop with barrier statements (earlier ones run before it)
        mains = [i for i, x in enumerate(body) if isinstance(x, ir.For) and _events([x])]
        if not mains:
            out.append(_Section(path, list(body), [], []))
            continue
        i = mains[-1]
        loops = [body[i]]
        while len(loops[-1].body) == 1 and isinstance(loops[-1].body[0], ir.For):
            loops.append(loops[-1].body[0])
        out.append(_Section(path, body[:i], loops, body[i + 1 :]))
    return out


def _same(a, b) -> bool:
    x, y = evaluate(a, {}), evaluate(b, {})
    if x is not None and y is not None:
        return x == y
    return ir_key(a) == ir_key(b)


def _common_depth(sections: list) -> int:
    """How many levels of the sections' main loops have the same iteration space."""
    looped = [s for s in sections if s.loops]
    depth = min(len(s.loops) for s in looped)
    for level in range(depth):
        first = looped[0].loops[level]
        for other in looped[1:]:
            loop = other.loops[level]
            if not all(_same(getattr(first, a), getattr(loop, a)) for a in ("start", "stop", "step")):
                return level
    return depth


def _guarded(facts: _Facts, section: _Section, stmts: list) -> list:
    """``stmts`` under the section's condition: its own where that excludes the earlier sections'
    threads (``elif tx >= 256``), else the chain's conditions nested as the user wrote them."""
    if not stmts:
        return []
    (last, taken), earlier = section.path[-1], section.path[:-1]
    if taken:
        mine = facts.thread_set(last.cond)
        others = [facts.thread_set(c.cond) for c, _ in earlier]
        if mine is not None and all(o is not None and not (o & mine) for o in others):
            return [ir.If(last.loc, last.cond, stmts, [])]
    body = stmts
    for cond_if, branch in reversed(section.path):
        body = [ir.If(cond_if.loc, cond_if.cond, body, []) if branch else ir.If(cond_if.loc, cond_if.cond, [], body)]
    return body


def _iterations(sections: list, depth: int) -> tuple[list, list]:
    """The fused loop nest (the first looped section's loops) and each looped section's
    iteration body, in that nest's loop variables."""
    looped = [s for s in sections if s.loops]
    levels = looped[0].loops[:depth]
    bodies = []
    for s in looped:
        mapping = {loop.var: lead.var for loop, lead in zip(s.loops[:depth], levels) if loop.var is not lead.var}
        body = s.loops[depth - 1].body
        bodies.append(_substitute(body, mapping) if mapping else body)
    return levels, bodies


def _assemble(facts: _Facts, sections: list, levels: list, iteration: list) -> list:
    """The chain as the sections' statements before their loops, the fused loop nest running
    ``iteration``, then the sections' statements after their loops."""
    out = []
    for s in sections:
        out += _guarded(facts, s, s.before)
    for loop in reversed(levels):
        iteration = [dataclasses.replace(loop, body=iteration)]
    out += iteration
    for s in sections:
        out += _guarded(facts, s, s.after)
    return out


def _segments(body: list) -> list:
    """``body`` split before each statement that waits on a barrier."""
    segments: list = []
    for s in body:
        if not segments or (segments[-1] and any(ev.waits for ev in _events([s]))):
            segments.append([])
        segments[-1].append(s)
    return segments


@dataclass(eq=False)
class _Interleave(ir.Stmt):
    """A fused loop nest whose order of the sections' segments is still to be found: running the
    barriers, each iteration runs the first segment (in section order) whose waits pass."""

    levels: list  # the For loops of the nest, outermost first
    segments: list  # per looped section: its guarded segments, in order
    body: list  # every statement of the segments (so that the simulation sees their events)
    orders: list  # found: each iteration's order, as (section, segment) pairs

    def ordered(self, order: tuple) -> list:
        return [x for k, j in order for x in self.segments[k][j]]

    def found(self) -> tuple | None:
        """The order found (program order where no barrier statement constrains it)."""
        if self.orders:
            return self.orders[0]
        if not _events(self.body):
            return tuple((k, j) for k, segs in enumerate(self.segments) for j in range(len(segs)))
        return None


def _candidates(facts: _Facts, chain: ir.If, holder: list, at: int, pending: set):
    sections = _chain_sections(chain, facts)
    if sections is None:
        return
    looped = [s for s in sections if s.loops]
    if len(looped) < 2:  # no loops to fuse: each section's statements split at its waits, interleaved
        whole = _interleave(facts, [], sections, [[*s.before, *s.loops[:1], *s.after] for s in sections])
        _follow(facts, holder, at, chain, pending, [whole])
        if whole.found() is not None:
            yield whole.ordered(whole.found())
        return
    depths = [d for d in range(_common_depth(sections), 0, -1) if all(len(s.loops) >= d for s in looped)]
    for depth in depths if len(looped) <= _MAX_PERMUTED else ():  # whole iterations, each order
        levels, bodies = _iterations(sections, depth)
        for order in itertools.permutations(range(len(looped))):
            yield _assemble(facts, sections, levels, [x for k in order for x in _guarded(facts, looped[k], bodies[k])])
    for depth in depths:  # every part split at its waits, the sections' parts interleaved
        levels, bodies = _iterations(sections, depth)
        pre = _interleave(facts, [], sections, [s.before for s in sections])
        loop = _interleave(facts, levels, looped, bodies)
        post = _interleave(facts, [], sections, [s.after for s in sections])
        _follow(facts, holder, at, chain, pending, [pre, loop, post])
        if pre.found() is None or post.found() is None:
            continue
        for order in sorted(set(loop.orders), key=loop.orders.count, reverse=True):
            iteration = loop.ordered(order)
            for nest in reversed(levels):
                iteration = [dataclasses.replace(nest, body=iteration)]
            yield pre.ordered(pre.found()) + iteration + post.ordered(post.found())


def _follow(facts: _Facts, holder: list, at: int, chain: ir.If, pending: set, probe: list) -> None:
    """Run the barriers with ``probe`` (``_Interleave`` statements) in the chain's place, so that they
    record the orders they find; then put the chain back."""
    holder[at : at + 1] = probe
    try:
        _run(facts, pending)
    except _Unknown:
        pass  # a part the barriers cannot follow: no order found
    finally:
        holder[at : at + len(probe)] = [chain]


def _interleave(facts: _Facts, levels: list, sections: list, parts: list) -> _Interleave:
    segments = [[_guarded(facts, s, seg) for seg in _segments(part)] for s, part in zip(sections, parts)]
    loc = levels[0].loc if levels else sections[0].path[0][0].loc
    return _Interleave(loc, levels, segments, [x for segs in segments for seg in segs for x in seg], [])


# ------------------------------------------------------------------ the kernel
def _chains(stmts: list, facts: _Facts, out: list) -> None:
    """Each ``if`` over thread ranges that holds barrier events, with the list that holds it."""
    for s in stmts:
        if isinstance(s, ir.If) and facts.thread_range(s.cond) and _events([s]):
            out.append((stmts, s))
            continue
        for body in _bodies(s):
            _chains(body, facts, out)


def _section_if(s, facts: _Facts) -> frozenset | None:
    """The threads of an ``if`` over thread ranges without ``else`` (a section), else None."""
    if isinstance(s, ir.If) and not s.else_body and facts.thread_range(s.cond):
        return facts.thread_set(s.cond)
    return None


def _as_chains(stmts: list, facts: _Facts) -> None:
    """Sections written another way, as the ``if``/``elif`` chain ``_chain_sections`` reads: an ``if``
    that picks again every thread of the branch it stands in (``if tx >= 128: with T.ws(1): ...``)
    is its body; consecutive sections over disjoint threads (``with T.ws(1): ...`` then ``with
    T.ws(0): ...``) are one chain, each thread running the one section it is in either way."""
    for s in stmts:
        for body in _bodies(s):
            _as_chains(body, facts)
        chosen = facts.thread_set(s.cond) if isinstance(s, ir.If) and facts.thread_range(s.cond) else None
        if chosen is not None:  # (an else branch's one `if` is read as an elif by _chain_sections)
            body = s.then_body
            while len(body) == 1 and (inner := _section_if(body[0], facts)) is not None and chosen <= inner:
                body = body[0].then_body
            s.then_body = body
    i = 0
    while i < len(stmts):
        group, seen = [], frozenset()
        for s in stmts[i:]:
            threads = _section_if(s, facts)
            if threads is None or threads & seen:
                break
            group.append(s)
            seen |= threads
        if len(group) > 1 and _events(group):
            chain = group[-1]
            for s in reversed(group[:-1]):
                chain = ir.If(s.loc, s.cond, s.then_body, [chain])
            stmts[i : i + len(group)] = [chain]
        i += 1


def _strip(stmts: list) -> list:
    out = []
    for s in stmts:
        if isinstance(s, BarrierEvent):
            continue
        for attr in ("body", "then_body", "else_body"):
            if isinstance(getattr(s, attr, None), list):
                setattr(s, attr, _strip(getattr(s, attr)))
        out.append(s)
    return out


def _run(facts: _Facts, skip: set):
    """The first event that blocks (None when every wait passes)."""
    facts.refresh()
    try:
        _Simulation(facts, skip).run(facts.kernel.body, dict(facts.aliases), frozenset(range(facts.kernel.threads)))
    except _Blocked as blocked:
        return blocked.event
    return None


def _program_order_check(stmts: list, loop_var) -> BarrierEvent | None:
    """Where the barriers cannot be run (a barrier, parity, condition or loop bound known only at
    run time), program order stands if every wait is for an arrive earlier in the same loop body
    or (a wait whose parity is odd in the first iteration) the previous iteration's: the first
    wait that is not, else None."""
    arrived: set = set()

    def scan(body: list):
        for s in body:
            if isinstance(s, ir.For):
                blocked = _program_order_check(s.body, s.var)
                if blocked is not None:
                    return blocked
            elif isinstance(s, BarrierEvent):
                if s.kind == "sync":
                    continue  # a named sync waits for the phase of its own arrive, just before it
                if s.kind != "wait":
                    arrived.add(s.ref.key())
                elif s.ref.key() not in arrived:
                    first = evaluate(s.parity, {loop_var: 0} if loop_var is not None else {})
                    if first is None or first % 2 == 0:
                        return s
            else:
                for inner in _bodies(s):
                    blocked = scan(inner)
                    if blocked is not None:
                        return blocked
        return None

    return scan(stmts)


def _producer_only(stmts: list) -> bool:
    """Whether a section only feeds shared memory from global memory: copies, barrier events and
    the scalar bookkeeping around them (a TMA producer), so that no thread of it computes."""
    copies = 0
    for s in _walk(stmts):
        if isinstance(s, ir.Copy):
            src, dst = s.src, s.dst
            if not (isinstance(src, ir.Region) and isinstance(dst, ir.Region)):
                return False
            if src.buffer.scope != ir.GLOBAL or dst.buffer.scope != ir.SHARED:
                return False
            copies += 1
        elif not isinstance(s, (BarrierEvent, ir.For, ir.Let, ir.Alloc, ir.If)):
            return False
    return copies > 0


def _compute_threads(facts: _Facts, chains: list) -> int | None:
    """The threads left to compute once the producer sections (``_producer_only``) of the kernel's
    warp-specialized chains are taken away, or None where no chain has such a section.  Run one
    after another, the producer's copies are issued by every thread (and pipelined by Triton), so
    the launch needs only the consumers' warps (runtime/tuning.py)."""
    everyone = frozenset(range(facts.kernel.threads))
    producers: set = set()
    for _, chain in chains:
        sections = _chain_sections(chain, facts)
        if not sections:
            continue
        for section in sections:
            threads = everyone
            for node, taken in section.path:
                chosen = facts.thread_set(node.cond)
                if chosen is None:
                    return None
                threads = threads & chosen if taken else threads - chosen
            body = [*section.before, *section.loops[:1], *section.after]
            if threads and threads != everyone and _producer_only(body):
                producers |= threads
    if not producers or producers == everyone:
        return None
    return len(everyone - producers)


def _section_threads(kernel: ir.Kernel) -> int | None:
    """Threads of the widest section of a kernel whose work is one ``if``/``elif``/``else`` chain
    over thread ranges (``if tx < 32: ... else: ...``, no barriers), where every statement outside
    the chain spans no more elements than that section has threads; else None.  The sections run
    one after another here, each on tiles TileLang sized for its own threads (runtime/tuning.py)."""
    if not kernel.thread_vars:
        return None
    facts = _Facts(kernel)
    chains = [s for s in kernel.body if isinstance(s, ir.If) and facts.thread_range(s.cond)]
    sections = _chain_sections(chains[0], facts) if len(chains) == 1 else None
    if not sections:
        return None
    everyone = frozenset(range(kernel.threads))
    covered, widest = set(), 0
    for section in sections:
        threads = everyone
        for node, taken in section.path:
            chosen = facts.thread_set(node.cond)
            if chosen is None:
                return None
            threads = threads & chosen if taken else threads - chosen
        covered |= threads
        widest = max(widest, len(threads))
    if covered != everyone or widest >= kernel.threads:
        return None
    outside = [s for s in kernel.body if s is not chains[0]]
    if any(_elements(s) > widest for s in _walk(outside)):
        return None
    return widest


def _elements(s: ir.Stmt) -> float:
    """The most elements one statement's lane space or tile operands span."""
    if isinstance(s, ir.Gemm):
        return float("inf")
    spans = [math.prod(s.extents)] if isinstance(s, ir.Parallel) else []
    for value in vars(s).values():
        for v in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(v, ir.Region):
                extents = [static(e) for e in v.extents]
                spans.append(math.prod(extents) if all(isinstance(e, int) for e in extents) else float("inf"))
    return max(spans, default=0)


def schedule_kernel(b, kernel: ir.Kernel) -> None:
    """Order the kernel's warp-specialized sections so that every barrier wait is satisfied
    (fusing their loops where program order does not), then drop the barrier statements."""
    if not _events(kernel.body):
        kernel.section_threads = _section_threads(kernel)
        return
    try:
        facts, chains = _Facts(kernel), []
        if _run(facts, set()) is not None:  # program order does not do: see the sections as one chain
            _as_chains(kernel.body, facts)
            facts.refresh()
        _chains(kernel.body, facts, chains)
        kernel.compute_threads = _compute_threads(facts, chains)
        pending = {id(ev) for _, chain in chains for ev in _events([chain])}
        for holder, chain in chains:
            pending -= {id(ev) for ev in _events([chain])}
            if _run(facts, pending) is None:
                continue  # program order satisfies it
            at = next(i for i, x in enumerate(holder) if x is chain)
            for candidate in _candidates(facts, chain, holder, at, pending):
                holder[at : at + 1] = candidate
                try:
                    if _run(facts, pending) is None:
                        break
                except _Unknown:
                    pass  # the candidate cannot be followed: try the next
                holder[at : at + len(candidate)] = [chain]
        blocked = _run(facts, set())
    except _Unknown as unknown:
        blocked = _program_order_check(kernel.body, None)
        if blocked is not None:
            where = unknown.where
            node = where.node if isinstance(where, BarrierEvent) else None
            kinds = {ir.For: "loop", ir.If: "if", ir.While: "while loop", ir.Parallel: "T.Parallel loop"}
            here = "this barrier" if node is not None else f"the barriers in this {kinds.get(type(where), 'statement')}"
            message = (
                f"tile2triton cannot order the warp-specialized sections around {here}: {unknown.what} "
                "(it runs the sections one after another and must know, at compile time, which arrive each "
                "wait is for)"
            )
            raise (b.error(message, node) if node is not None else TileLangCompileError(message, where.loc)) from None
    if blocked is not None and blocked.kind == "sync":
        raise b.error(
            f"T.{blocked.name} waits at a named barrier until its thread count has arrived, and no order of the "
            "sections' statements brings that many threads to it (tile2triton runs warp-specialized sections one "
            "after another; on the GPU the block would hang here)",
            blocked.node,
        )
    if blocked is not None:
        raise b.error(
            f"T.{blocked.name} waits for an arrive that comes later in program order: tile2triton runs "
            "warp-specialized sections one after another (sections whose loops have the same iteration space, "
            "iteration by iteration), and no such order puts the arrive this wait needs before it",
            blocked.node,
        )
    kernel.body = _strip(kernel.body)


def warp_group_condition(b, call, node) -> ir.Expr:
    """``T.ws(k, ...)``'s threads as a condition, for a kernel in the thread view (frontend/bind.py):
    128 k <= the linear thread index < 128 (k + 1)."""
    kernel, linear, stride = b.kernel, None, 1
    for var, extent in zip(kernel.thread_vars, kernel.thread_extents):
        term = ir.VarRef(var) if stride == 1 else ir.BinOp("*", ir.VarRef(var), const_int(stride), INT32)
        linear = term if linear is None else ir.BinOp("+", linear, term, INT32)
        stride *= extent
    if not call.args:
        raise b.error("T.ws takes the warp group numbers whose threads run its statements", node)
    cond = None
    for arg in call.args:
        k = static(as_expr(b.expr(arg)))
        if k is None:
            raise b.error("T.ws takes warp group numbers known when compiling", node)
        lo, hi = const_int(128 * k), const_int(128 * (k + 1))
        group = ir.BinOp("and", ir.Compare(">=", linear, lo, BOOL), ir.Compare("<", linear, hi, BOOL), BOOL)
        cond = group if cond is None else ir.BinOp("or", cond, group, BOOL)
    return cond
