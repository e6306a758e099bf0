"""Static facts about the IR that checking and lowering need: value ranges (to drop provably-true
bounds checks) and whether a buffer must be initialised where it is allocated."""

from __future__ import annotations

import itertools
import math
import weakref
from collections import Counter
from dataclasses import dataclass

from .. import ir
from ..ir.dtypes import INT32
from ..ir.evaluate import NotHostEvaluable, host_fn, same_exprs
from ..ir.exprs import as_expr, static, substitute

# the most assignments of its variables over which ``Ranges.most`` evaluates an expression one by one
MOST_ASSIGNMENTS = 4096
ACC_REGS_PER_THREAD = 192  # accumulator registers a thread holds without spilling (measured; runtime/tuning.py's too)


def next_pow2(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def launch_warps(options, threads: int) -> int:
    """The warps a kernel of ``threads`` threads launches with: the options' own, else the
    target's warps for them (a warp is the target's: 128 threads are 4 warps of 32 lanes, or 2
    wavefronts of 64 on CDNA), rounded up to a power of two as Triton wants."""
    return options.num_warps or next_pow2(max(1, threads // options.warp_size))


def accumulators_past_budget(kernel: ir.Kernel, warps: int) -> bool:
    """Whether the kernel's gemm accumulators (each buffer counted once, padded to powers of two)
    take more registers a thread than ACC_REGS_PER_THREAD over ``warps`` warps."""
    accumulators = {g.c.buffer for g in ir.walk(kernel.body) if isinstance(g, ir.Gemm)}
    elements = 0
    for buf in accumulators:
        size = 1
        for d in buf.shape:
            size *= next_pow2(static(d) or 1)
        elements += size
    return elements > ACC_REGS_PER_THREAD * 32 * warps


def buffer_accesses(stmts: list) -> tuple[set, set]:
    """(read, written) root buffers of ``stmts`` and their bodies: an atomic writes its destination
    (it reads it atomically), a gemm's accumulator and a scan's in-place destination are read and
    written, an intrinsic naming a whole buffer does both."""
    read, written = set(), set()
    for s in ir.walk(stmts):
        if isinstance(s, ir.GuardedCopy):
            s = s.copy
        if isinstance(s, ir.Atomic):
            dst = s.dst.buffer
            written.add(dst.root)
            index_exprs = list(s.dst.indices) if isinstance(s.dst, ir.Load) else ir.region_exprs(s.dst)
            read |= loaded_roots(index_exprs + ir.region_exprs(s.value))
            if isinstance(s.value, ir.Region):
                read.add(s.value.buffer.root)
            continue
        read |= loaded_roots(ir.stmt_exprs(s))
        if isinstance(s, ir.Store):
            written.add(s.buffer.root)
        for name, value in vars(s).items():
            if isinstance(value, ir.Region):
                (written if name in ("dst", "c") else read).add(value.buffer.root)
                if name == "c" or (name == "dst" and isinstance(s, ir.Scan) and s.src.buffer is value.buffer):
                    read.add(value.buffer.root)
            elif isinstance(value, ir.Buffer) and not isinstance(s, (ir.Store, ir.Alloc, ir.MakeTensor)):
                read.add(value.root)  # an intrinsic naming a whole buffer
                written.add(value.root)
    return read, written


def loaded_roots(exprs) -> set:
    """The root buffers the element loads in ``exprs`` read."""
    return {sub.buffer.root for e in exprs for sub in ir.iter_expr_tree(e) if isinstance(sub, ir.Load)}


class Ranges:
    """Closed integer intervals of kernel expressions, where they can be proven."""

    def __init__(self, floor_below_zero: bool = False, exact_spans: bool = False):
        self.var_range: dict[ir.Var, tuple[int, int]] = {}
        # variables bound once (a let) -> their value: ``most`` sees through them to the block
        # indices they are computed from
        self.defs: dict[ir.Var, ir.Expr] = {}
        # ``a // c`` (c > 0) of a range reaching below zero: TileLang's // rounds toward -inf, so
        # it is monotonic there too (``(bx * 128 - window) // 128``); off: only ranges from zero
        # (codegen turns it on with TILE2TRITON_TRIP_BOUNDS, until measured)
        self.floor_below_zero = floor_below_zero
        # a let's range and a comparison also from exact spans where the intervals are loose (``span``;
        # codegen's follow TILE2TRITON_EXACT_RANGES; off elsewhere, the Gluon plans and the passes)
        self.exact_spans = exact_spans

    def copy(self) -> Ranges:
        out = Ranges(self.floor_below_zero, self.exact_spans)
        out.var_range = dict(self.var_range)
        out.defs = dict(self.defs)
        return out

    def define(self, var: ir.Var, value) -> None:
        """``var`` is bound once, to ``value``."""
        self.defs[var] = value

    def bind(self, var: ir.Var, value) -> None:
        """A let that binds ``var`` once: its range is ``value``'s, and ``most`` sees through it.  Where
        the interval is not one value, the exact span over the block indices and loop variables it is
        computed from tightens it: ``k_end - k_start`` with ``k_end = T.min(k_start + 128, n)`` is 128 in
        every block (as TileLang's simplifier proves it), where the intervals allow any size."""
        bounds = self.of(value)
        loose = bounds is None or bounds[0] != bounds[1]
        if loose and self.exact_spans and getattr(var.dtype, "kind", None) == "int":
            exact = self.span(value)
            if exact is not None:
                bounds = exact if bounds is None else (max(bounds[0], exact[0]), min(bounds[1], exact[1]))
        if bounds is not None:
            self.set(var, *bounds)
        self.define(var, value)

    def most_trips(self, start, stop, step: int = 1) -> int | None:
        """The most iterations a loop from ``start`` to ``stop`` (exclusive; ``step`` > 0) runs, over
        the values of what its bounds are computed from: ``most`` of its span where that is known,
        else the bounds' intervals allow; None where neither is known."""
        lo, hi = self.of(start), self.of(stop)
        spans = [] if lo is None or hi is None else [hi[1] - lo[0]]
        exact = self.most(ir.BinOp("-", as_expr(stop), as_expr(start), INT32))
        if exact is not None:
            spans.append(exact)
        return max(0, -(-min(spans) // step)) if spans else None

    def most(self, e) -> int | None:
        """The greatest value of the integer expression ``e`` over every assignment of the variables
        it is computed from (through the lets ``define`` gave), each over its range: evaluated
        assignment by assignment where they number at most MOST_ASSIGNMENTS, else None (so is an
        expression the host cannot evaluate, or a variable without a range).  Exact where ``of``'s
        interval is not: ``end - start`` of a sliding window's loop, both from the same block index
        (``T.min(n, bx + 3) - T.max(0, bx + 1)`` is 2 for every block; ``of`` says at most 5)."""
        span = self.span(e)
        return None if span is None else span[1]

    def span(self, e) -> tuple[int, int] | None:
        """The least and the greatest value of the integer expression ``e``, as ``most`` finds them."""
        e = self._through_lets(e)
        roots = list(dict.fromkeys(sub.var for sub in ir.iter_expr_tree(e) if isinstance(sub, ir.VarRef)))
        if any(var not in self.var_range for var in roots):
            return None
        bounds = [self.var_range[var] for var in roots]
        if math.prod(hi - lo + 1 for lo, hi in bounds) > MOST_ASSIGNMENTS:  # not len(): a range past ssize_t
            return None
        spans = [range(lo, hi + 1) for lo, hi in bounds]
        try:
            fn = host_fn(e)
            values = [fn(dict(zip(roots, point))) if callable(fn) else fn for point in itertools.product(*spans)]
        except (NotHostEvaluable, ZeroDivisionError):
            return None
        if not values or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return None
        return min(values), max(values)

    def _through_lets(self, e):
        """``e`` with each variable ``define`` gave replaced by its value, until none is left."""
        for _ in range(len(self.defs) + 1):  # a let reads only lets bound before it: no more passes
            defined = {sub.var for sub in ir.iter_expr_tree(e) if isinstance(sub, ir.VarRef) and sub.var in self.defs}
            if not defined:
                break
            for var in defined:
                e = substitute(e, var, self.defs[var])
        return e

    def set(self, var: ir.Var, lo: int | None, hi: int | None) -> None:
        if lo is not None and hi is not None and lo <= hi:
            self.var_range[var] = (lo, hi)

    def one_value(self, e) -> int | None:
        """The value of ``e`` where its range is that one value, else None."""
        bounds = self.of(e)
        return bounds[0] if bounds is not None and bounds[0] == bounds[1] else None

    def of(self, e) -> tuple[int, int] | None:
        r = self._of(e)
        dtype = getattr(e, "dtype", None)
        if dtype is None or getattr(dtype, "kind", None) != "uint":
            return r
        # an unsigned value is within its dtype whatever is known of it; arithmetic past it wraps
        lo, hi = dtype.int_range
        return r if r is not None and lo <= r[0] and r[1] <= hi else (lo, hi)

    def _of(self, e) -> tuple[int, int] | None:
        if isinstance(e, int):
            return (e, e)
        if isinstance(e, ir.Const):
            return (e.value, e.value) if isinstance(e.value, int) and not isinstance(e.value, bool) else None
        if isinstance(e, ir.VarRef):
            return self.var_range.get(e.var)
        if isinstance(e, ir.Cast):
            r = self.of(e.value) if e.dtype.is_int else None
            if r is None:
                return None
            lo, hi = e.dtype.int_range
            return r if lo <= r[0] and r[1] <= hi else None  # a cast that may wrap keeps no range
        if isinstance(e, ir.BinOp):
            a, b = self.of(e.lhs), self.of(e.rhs)
            if a is None or b is None:
                return None
            if e.op == "+":
                return (a[0] + b[0], a[1] + b[1])
            if e.op == "-":
                return (a[0] - b[1], a[1] - b[0])
            if e.op == "*":
                products = [x * y for x in a for y in b]
                return (min(products), max(products))
            if e.op == "//" and b[0] == b[1] and b[0] > 0 and (a[0] >= 0 or self.floor_below_zero):
                return (a[0] // b[0], a[1] // b[0])
            if e.op == "%" and b[0] == b[1] and b[0] > 0 and a[0] >= 0:
                return (0, min(a[1], b[0] - 1))
            if e.op in ("&",) and a[0] >= 0 and b[0] >= 0:
                return (0, min(a[1], b[1]))
            if e.op == ">>" and b[0] == b[1] and b[0] >= 0 and a[0] >= 0:
                return (a[0] >> b[0], a[1] >> b[0])
            if e.op == "<<" and a[0] >= 0 and b[0] >= 0 and b[1] < 64 and a[1] << b[1] < 2**31:
                return (a[0] << b[0], a[1] << b[1])
            if e.op in ("|", "^") and a[0] >= 0 and b[0] >= 0:  # no bit above the larger operand's highest
                return (0, (1 << max(a[1], b[1]).bit_length()) - 1)
            return None
        if isinstance(e, ir.Call) and e.fn in ("min", "max"):
            a, b = self.of(e.args[0]), self.of(e.args[1])
            if a is None or b is None:
                return None
            pick = min if e.fn == "min" else max
            return (pick(a[0], b[0]), pick(a[1], b[1]))
        return None

    def compare(self, op: str, lhs, rhs) -> bool | None:
        """The value of ``lhs op rhs`` where the ranges decide it for every lane, else None; with
        ``exact_spans``, where the intervals do not, the span of ``lhs - rhs`` (``span``) may."""
        if not (getattr(lhs, "dtype", None) and getattr(rhs, "dtype", None)):
            return None
        if lhs.dtype.kind != "int" or rhs.dtype.kind != "int":  # unsigned arithmetic wraps
            return None
        a, b = self.of(lhs), self.of(rhs)
        decided = None if a is None or b is None else self._compare_intervals(op, a, b)
        if decided is None and self.exact_spans and op in ("<", "<=", ">", ">="):
            # both sides from the same block index or loop variable: the exact span of their difference
            # (``T.min(k_start + (i + 1) * 64, k_end)``'s operands differ by at most 0 in every block)
            difference = self.span(ir.BinOp("-", lhs, rhs, INT32))
            if difference is not None:
                decided = self._compare_intervals(op, difference, (0, 0))
        return decided

    @staticmethod
    def _compare_intervals(op: str, a: tuple[int, int], b: tuple[int, int]) -> bool | None:
        if op in (">", ">="):
            op, a, b = {">": "<", ">=": "<="}[op], b, a
        if op == "<":
            return True if a[1] < b[0] else False if a[0] >= b[1] else None
        if op == "<=":
            return True if a[1] <= b[0] else False if a[0] > b[1] else None
        if op == "==" and a[0] == a[1] == b[0] == b[1]:
            return True
        if op in ("==", "!=") and (a[1] < b[0] or b[1] < a[0]):
            return op == "!="
        return None

    def nonneg(self, e) -> bool:
        r = self.of(e)
        return r is not None and r[0] >= 0

    def below(self, e, bound) -> bool:
        """Is ``e < bound`` provable?"""
        r, limit = self.of(e), static(bound)
        return r is not None and limit is not None and r[1] < limit


def kernel_ranges(kernel: ir.Kernel, lets: list, ranges: Ranges | None = None) -> Ranges:
    """``ranges`` (a new one by default) with the block indices of a static grid axis and the lets of
    ``lets`` (statements, in order; others skipped) bound: what a loop after them is bounded by.  A name
    bound once is seen through (``Ranges.bind``); one bound again keeps only the interval of the value
    bound last."""
    r = Ranges() if ranges is None else ranges
    for axis, var in enumerate(kernel.block_vars):
        extent = kernel.grid[axis]
        if isinstance(extent, ir.Const):
            r.set(var, 0, extent.value - 1)
    lets = [s for s in lets if isinstance(s, ir.Let)]
    bound = Counter(s.var for s in lets)
    for s in lets:
        if bound[s.var] == 1:
            r.bind(s.var, s.value)
            continue
        bounds = r.of(s.value)
        if bounds is not None:
            r.set(s.var, *bounds)
    return r


# ---------------------------------------------------------------------------------- facts of a guard
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _facts_of(facts, e):
    """``(op, other)`` for each comparison in ``facts`` that reads ``e op other`` (either way round)."""
    for f in facts:
        if f.op in _FLIPPED and same_exprs((f.lhs,), (e,)):
            yield f.op, f.rhs
        elif f.op in _FLIPPED and same_exprs((f.rhs,), (e,)):
            yield _FLIPPED[f.op], f.lhs


def known_below(facts, e, bound) -> bool:
    """Does a comparison in ``facts`` (true where an ``if`` mask is) say the integer ``e < bound``?"""
    limit = static(bound)
    for op, other in _facts_of(facts, e):
        have = static(other)
        if op == "<" and (same_exprs((other,), (as_expr(bound),)) or None not in (have, limit) and have <= limit):
            return True
        if op == "<=" and None not in (have, limit) and have < limit:
            return True
    return False


def known_nonneg(facts, e) -> bool:
    """Does a comparison in ``facts`` say the integer ``e >= 0``?"""
    for op, other in _facts_of(facts, e):
        have = static(other)
        if have is not None and (op == ">=" and have >= 0 or op == ">" and have >= -1):
            return True
    return False


# ---------------------------------------------------------------------------------- init analysis
def _reads(stmt, buf) -> bool:
    if any(load.buffer is buf for load in ir.loads_in(stmt)):
        return True
    if isinstance(stmt, ir.Copy) and isinstance(stmt.src, ir.Region) and stmt.src.buffer is buf:
        return True
    if isinstance(stmt, ir.Gemm):
        if stmt.a.buffer is buf or stmt.b.buffer is buf:
            return True
        return stmt.c.buffer is buf and not _const_true(stmt.clear_accum)
    if isinstance(stmt, (ir.Reduce, ir.Scan)):
        return stmt.src.buffer is buf or (stmt.dst.buffer is buf and not getattr(stmt, "clear", True))
    if isinstance(stmt, ir.Atomic) and isinstance(stmt.value, ir.Region) and stmt.value.buffer is buf:
        return True
    return False


def _const_true(e) -> bool:
    return isinstance(e, ir.Const) and bool(e.value) is True


def _writes_whole(stmt, buf, lane_vars=None) -> bool:
    if isinstance(stmt, ir.Fill):
        return stmt.dst.buffer is buf and stmt.dst.is_whole()
    if isinstance(stmt, ir.Copy):
        return isinstance(stmt.dst, ir.Region) and stmt.dst.buffer is buf and stmt.dst.is_whole()
    if isinstance(stmt, ir.Reduce):
        return stmt.dst.buffer is buf and stmt.clear and stmt.dst.is_whole()
    if isinstance(stmt, ir.Scan):
        return stmt.dst.buffer is buf and stmt.dst is not stmt.src and stmt.dst.is_whole()
    if isinstance(stmt, ir.Gemm):
        return stmt.c.buffer is buf and _const_true(stmt.clear_accum)
    if isinstance(stmt, ir.Store) and stmt.buffer is buf:
        if all(d == 1 for d in buf.shape):
            return True
        if lane_vars is None:
            return False
        used = [i.var for i in stmt.indices if isinstance(i, ir.VarRef)]
        return (
            len(used) == buf.ndim
            and all(v in lane_vars and lane_vars[v] == buf.shape[d] for d, v in enumerate(used))
            and len(set(used)) == len(used)
        )
    return False


# statement -> every buffer it (with its body) names.  Each allocation's analysis scans the rest of
# the kernel, so this is computed once per statement; weak keys: it lives as long as the IR does.
_REFERENCED: weakref.WeakKeyDictionary[ir.Stmt, frozenset] = weakref.WeakKeyDictionary()


def _referenced(stmt: ir.Stmt) -> frozenset:
    """Every buffer a statement (with its body) names."""
    cached = _REFERENCED.get(stmt)
    if cached is None:
        found = set()
        for s in ir.walk([stmt]):
            found.update(load.buffer for load in ir.loads_in(s))
            for value in vars(s).values():
                if isinstance(value, ir.Region):
                    found.add(value.buffer)
                elif isinstance(value, ir.Buffer):
                    found.add(value)
        cached = frozenset(found)
        _REFERENCED[stmt] = cached
    return cached


referenced_buffers = _referenced  # for the compiler (unused tensor parameters)


def first_access(stmts, buf, lane_vars=None) -> str | None:
    """'write' if ``buf`` is wholly written before it is read in ``stmts``, 'read' if it may be
    read (or partly written) first, None if untouched."""
    for k, s in enumerate(stmts):
        if buf not in _referenced(s):
            continue
        if _reads(s, buf):
            return "read"
        if _writes_whole(s, buf, lane_vars):
            return "write"
        if isinstance(s, ir.Parallel):
            inner = dict(lane_vars or {})
            inner.update(zip(s.vars, s.extents))
            found = first_access(s.body, buf, inner)
        elif isinstance(s, ir.For):
            found = first_access(s.body, buf, lane_vars)
            if found == "write" and _touched(stmts[k + 1 :], buf):
                found = "read"  # the loop's last value is used after it: define it before the loop
        elif isinstance(s, (ir.If, ir.Kernel)):
            found = "read" if _touched([s], buf) else None
        else:
            found = "read" if _touched([s], buf) else None
        if found is not None:
            return found
    return None


def _touched(stmts, buf) -> bool:
    for s in ir.walk([s for s in stmts if buf in _referenced(s)]):
        if _reads(s, buf) or _writes_whole(s, buf, {}):
            return True
        if isinstance(s, ir.Store) and s.buffer is buf:
            return True
        for r in (getattr(s, "dst", None), getattr(s, "c", None)):
            if isinstance(r, ir.Region) and r.buffer is buf:
                return True
    return False


# ---------------------------------------------------------------------------------- zero padding
# kernel -> its zero-padded buffers (see ``zero_padded``); weak keys: it lives as long as the IR does
_ZERO_PADDED: weakref.WeakKeyDictionary[ir.Kernel, frozenset] = weakref.WeakKeyDictionary()


def zero_padded(kernel: ir.Kernel) -> frozenset:
    """Shared and fragment buffers whose padding lanes (a register tile is padded to powers of two)
    hold zeros wherever the buffer is read: its every write is a ``T.copy`` from a global tensor
    into the whole buffer (a load masked with ``other=0`` there, which is 0 in the padding as well)
    or a ``T.fill`` / ``T.clear`` with 0, and it starts zeroed or with such a write.  A gemm needs no
    select to zero such an operand's padded K lanes.  A kernel with ``T.annotate_safe_value`` has
    none (its masked loads read other values)."""
    cached = _ZERO_PADDED.get(kernel)
    if cached is not None:
        return cached
    seen: set = set()
    bad: set = set()
    if kernel.safe_values or any(isinstance(s, ir.SafeValues) for s in ir.walk(kernel.body)):
        _ZERO_PADDED[kernel] = frozenset()
        return frozenset()
    for s in ir.walk(kernel.body):
        named = ir.operand_buffers(s)
        if isinstance(s, ir.Store):
            named.add(s.buffer)
        dst = getattr(s, "dst", None)
        if isinstance(dst, ir.Load):  # an element atomic, a thread allreduce: writes one element
            named.add(dst.buffer)
        for b in named:
            seen.add(b)
            if b.alias_of is not None:  # a view writes the buffer it views
                bad.update((b, b.root))
            elif not _keeps_zero_padding(s, b):
                bad.add(b)
    result = frozenset(
        b for b in seen - bad if b.scope in (ir.SHARED, ir.FRAGMENT) and b.dtype.is_float and b.dtype.bits >= 8
    )
    _ZERO_PADDED[kernel] = result
    return result


def _is_zero(e) -> bool:
    return isinstance(e, ir.Const) and e.value == 0 or isinstance(e, ir.Cast) and _is_zero(e.value)


def _keeps_zero_padding(s: ir.Stmt, buf: ir.Buffer) -> bool:
    """``s`` only reads ``buf``, or writes the whole of it with zeros in its padding."""
    if isinstance(s, ir.Alloc):
        return s.init is None or _is_zero(s.init)
    if isinstance(s, ir.Copy) and isinstance(s.dst, ir.Region) and s.dst.buffer is buf:
        return s.dst.is_whole() and isinstance(s.src, ir.Region) and s.src.buffer.scope == ir.GLOBAL
    if isinstance(s, ir.Copy):
        return isinstance(s.src, ir.Region) and s.src.buffer is buf
    if isinstance(s, ir.Fill):
        return s.dst.is_whole() and _is_zero(s.value)
    if isinstance(s, ir.Gemm):
        return s.c.buffer is not buf
    if isinstance(s, (ir.Reduce, ir.Scan)):
        return s.dst.buffer is not buf
    if isinstance(s, ir.Atomic):
        return isinstance(s.value, ir.Region) and s.value.buffer is buf and s.dst.buffer is not buf
    return False


# ---------------------------------------------------------------------------------- global mirrors
@dataclass(frozen=True, eq=False)
class Mirror:
    """A shared buffer that is a copy of a global tensor's elements (``global_mirrors``): ``copy``
    (a top-level ``T.Parallel``) writes ``buffer[var] = load`` where ``cond`` holds (None: always)."""

    copy: ir.Parallel
    var: ir.Var
    load: ir.Expr  # the stored value: a global Load (maybe cast), in terms of ``var``
    cond: ir.Expr | None

    def at(self, index: ir.Expr) -> ir.Expr:
        """The element at ``index``, read from the global tensor (0 where the copy skips it)."""
        value = substitute(self.load, self.var, index)
        if self.cond is None:
            return value
        return ir.Select(substitute(self.cond, self.var, index), value, ir.Const(0, value.dtype), value.dtype)


_MIRRORS: weakref.WeakKeyDictionary[ir.Kernel, dict] = weakref.WeakKeyDictionary()


def global_mirrors(kernel: ir.Kernel) -> dict:
    """Shared buffers that only ever hold a copy of global elements: the one statement writing
    one is a ``T.Parallel`` at the kernel's top level, ``for v in T.Parallel(n): [if c(v):]
    S[v] = G[f(v)]``, where ``G`` is a global tensor nothing in the kernel writes and ``f``, ``c``
    read only ``v``, constants and names the same in every thread and iteration (block indices,
    sizes, names bound once before the copy).  A read of ``S[i]`` after the copy is ``G[f(i)]``
    (an index list staged in shared memory, read at a loop's step: a scalar load, not a select
    out of the staged tile).  Returns buffer -> ``Mirror``."""
    cached = _MIRRORS.get(kernel)
    if cached is not None:
        return cached
    written: dict = {}  # buffer -> the statements that may write it
    lets: dict = {}
    bound = set(kernel.thread_vars)  # names that differ per thread or iteration
    for s in ir.walk(kernel.body):
        if isinstance(s, ir.Alloc):
            continue
        if isinstance(s, ir.Let):
            lets[s.var] = lets.get(s.var, 0) + 1
        if isinstance(s, (ir.For, ir.Parallel)):
            bound.update([s.var] if isinstance(s, ir.For) else s.vars)
        targets = set(ir.operand_buffers(s))
        if (
            isinstance(s, ir.Copy)
            and isinstance(s.src, ir.Region)
            and s.src.buffer is not getattr(s.dst, "buffer", None)
        ):
            targets.discard(s.src.buffer)  # what a copy reads is not written
        if isinstance(s, ir.Store):
            targets.add(s.buffer)
        dst = getattr(s, "dst", None)
        if isinstance(dst, ir.Load):
            targets.add(dst.buffer)
        for b in targets:
            written.setdefault(b.root, []).append(s)
            if b.alias_of is not None:
                written.setdefault(b, []).append(s)
    top_lets = set()
    out: dict = {}
    for s in kernel.body:
        if isinstance(s, ir.Let) and lets.get(s.var) == 1:
            top_lets.add(s.var)
        mirror = _mirror_copy(s) if isinstance(s, ir.Parallel) else None
        if mirror is None:
            continue
        buf, store = mirror
        if buf.scope != ir.SHARED or buf.alias_of is not None or written.get(buf) != [store]:
            continue
        if any(b.alias_of is buf for b in written):  # a view of it may write it
            continue
        copy = Mirror(s, s.vars[0], store.value, _store_cond(s))
        source = _global_source(store.value)
        if source is None or written.get(source.root):
            continue
        exprs = [store.value] + ([copy.cond] if copy.cond is not None else [])
        names = {x.var for e in exprs for x in ir.iter_expr_tree(e) if isinstance(x, ir.VarRef)} - {s.vars[0]}
        if any(v in bound or (v in lets and v not in top_lets) for v in names):
            continue
        out[buf] = copy
    _MIRRORS[kernel] = out
    return out


def _mirror_copy(p: ir.Parallel):
    """(buffer, store) of ``for v in T.Parallel(n): [if c: ] S[v] = value``, else None."""
    if len(p.vars) != 1 or len(p.body) != 1:
        return None
    s = p.body[0]
    if isinstance(s, ir.If) and not s.else_body and len(s.then_body) == 1:
        s = s.then_body[0]
    if not isinstance(s, ir.Store) or len(s.indices) != 1:
        return None
    index = s.indices[0]
    if not (isinstance(index, ir.VarRef) and index.var is p.vars[0]):
        return None
    return s.buffer, s


def _store_cond(p: ir.Parallel):
    s = p.body[0]
    return s.cond if isinstance(s, ir.If) else None


def _global_source(value) -> ir.Buffer | None:
    while isinstance(value, ir.Cast):
        value = value.value
    if isinstance(value, ir.Load) and value.buffer.scope == ir.GLOBAL:
        inner = [x for i in value.indices for x in ir.iter_expr_tree(i) if isinstance(x, ir.Load)]
        return None if inner else value.buffer
    return None
