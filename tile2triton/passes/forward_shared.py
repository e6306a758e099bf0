"""Shared buffers a warp-specialized producer fills, forwarded into the consumers that read them.

A hand warp-specialized kernel (TileLang's pipelined sparse MLA forward) has a producer thread
range gather rows of KV by index into a shared ring, skipping rows it marks invalid, and consumer
warpgroups wait on mbarriers and feed the ring's slots to their gemms::

    if tx >= 256:                                   # producer (after passes/thread_copies.py)
        for i in T.Parallel(BI):
            valid[stage, i] = Indices[..., base + i] <= limit
        for i, j in T.Parallel(BI, C):
            if valid[stage, i]:
                KV_s[stage, i, j] = KV[b, Indices[..., base + i], g, j]
    if tx < 128:                                    # consumer
        ... T.if_then_else(valid[stage, j], 0, -inf) ...
        T.copy(KV_s[stage, :, 0:256], part)         # a gemm's operand
        T.gemm(Q_part, part, acc_s, transpose_B=True)

tile2triton runs the sections in one block-level order (frontend/warp_sections.py): the producer's
statements of an iteration, then the consumers'.  In that order each read of ``KV_s`` reads what
the store of the same iteration wrote, so the read can compute the stored value itself: the copy
into ``part`` becomes the masked gather ``part[i, j] = KV[b, Indices[..., base + i], g, j]`` where
``Indices[..., base + i] <= limit`` (0 elsewhere), the flag read becomes ``Indices[...] <= limit``,
and the producer's stores, read by nobody now, go.  Triton then pipelines the gathers into the
dots like any block-view loop.  Likewise a ``T.copy`` (TMA or not) of a global tile into shared
memory read back by sub-tile copies (``Q_shared``) becomes copies straight from global memory.

Where the producer skips a row (``if valid[...]`` false), the consumer reads zeros, where TileLang
reads the slot as it was: uninitialised shared memory the first time (undefined), later the
finite KV row of an earlier block, which the consumer multiplies by P = 0 after its -inf mask.
Results agree for finite inputs (docs/compat.md).

A read is forwarded from a store of its buffer when (checked; otherwise the read, and the store,
stay as they are):

- the store is a ``T.Parallel`` of one store (under ``if``s inside it) whose indices are, per
  dimension, a Parallel variable plus a constant, or an expression without them, each variable in
  one dimension; or a ``Copy`` into a box of the buffer from a global region or a register tile;
- the stored value and its conditions read only global buffers the kernel never writes, names
  bound once, loop variables of loops around the store, block indices and sizes (a Copy from a
  register tile: nothing writes that tile between the store and the read);
- the read is a ``Copy`` of a region of the buffer (into another buffer) or a load of one element,
  after the store in program order, inside every loop around the store, within the box the store
  writes, and at the same index where the store's index has no Parallel variable;
- no other statement writes the buffer between the store and the read, nor in a loop around the
  read that the store is not in; where the store is conditional, nothing else writes the buffer.

Each store of a buffer is tried in program order (O_shared, which is Q_shared, is stored twice
after Q's copy: the output's copies read the accumulators).  Then:

- a buffer nothing reads any more loses its stores, and a thread-range section left with no
  statements goes; where no statement of the kernel names the thread index any more but the
  thread-range ``if``s, the threads above the highest range still used are not launched (the
  producer's warps);
- a gathered fragment with unit dimensions that only gemms read whole drops them, and a gather
  equal to an earlier one of the same iteration (the PV dot's V rows are the QK dot's K rows) reads
  the earlier tile: one load for both dots;
- the outermost sequential loop around a forwarded ring's store, a ``serial(n) x unroll(depth)``
  nest over the slots flattened to one loop first, pipelines with the ring's depth (the producer
  filled that many slots ahead).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from .. import ir
from ..ir.dtypes import BOOL, INT32
from ..ir.exprs import const_int, ir_key
from .ir_edits import (
    _conj,
    _const,
    _map_children,
    _map_exprs,
    _mentions_in_exprs,
    _plus,
    _range_hi,
    _rebuild,
    _replace,
    _subst,
    _subst_stmts,
    _var_plus_const,
)
from .thread_copies import _exprs, _loads, _nodes

_DEBUG = False
_GATHER_VAR = re.compile(r"_f\d+$")  # the variables of the Parallels _forward_copy makes


class _Refuse(Exception):
    pass


class _NoMore(_Refuse):
    """No further candidate store of the buffer."""


@dataclass
class _Site:
    stmt: ir.Stmt
    pos: int
    loops: tuple  # enclosing For nodes, outermost first
    parents: tuple  # enclosing statements (For, If, Parallel), outermost first


def forward_shared(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with the shared buffers described above forwarded into their reads (a new Kernel;
    ``kernel`` is unchanged, and returned as it is when nothing applies)."""
    produced = _producer_buffers(kernel)
    if not produced:
        return kernel  # no producer section that only copies into shared memory
    body = kernel.body
    forwarded: list = []
    made: list = []
    rings: dict = {}  # forwarded ring -> (loop variables around its store, its depth)
    while True:
        sites = _index(body)
        progress = False
        for buf in _shared_buffers(body):
            for which in range(len(sites)):
                fw = _Forward(kernel, body, sites, buf, which)
                try:
                    body = fw.run()
                except _NoMore:
                    break
                except _Refuse as why:
                    if _DEBUG:
                        print(f"forward_shared: {buf.name}, store {which}, kept: {why}")
                    continue
                progress = True
                made += fw.made
                if _DEBUG:
                    print(f"forward_shared: {buf.name}, store {which}: forwarded")
                if buf not in forwarded:
                    forwarded.append(buf)
                if fw.kind == "parallel" and fw.dims[0][0] == "fixed" and fw.store_site.loops:
                    slot = {n.var for n in _nodes(fw.dims[0][1]) if isinstance(n, ir.VarRef)}
                    loops = [f.var for f in fw.store_site.loops]
                    if slot and slot <= set(loops) and isinstance(buf.shape[0], int) and buf.shape[0] > 1:
                        rings[buf] = (loops, buf.shape[0])
                break
            if progress:
                break
        if not progress:
            break
    if not forwarded:
        return kernel
    body, gone = _drop_dead(body, forwarded)
    if not produced <= set(gone):
        return kernel  # a producer's buffer is still read: the ring stays, and so does the rest
    body = _squeeze_gathers(body)
    body = _share_gathers(body, _thread_aliases(kernel))
    body = _hoist(body, made, _thread_aliases(kernel))
    body = _pipeline(body, [rings[b] for b in gone if b in rings])
    out = dataclasses.replace(kernel, body=body)
    threads = _threads_left(out)
    if threads is not None and threads < kernel.threads:
        out = dataclasses.replace(out, threads=threads, thread_extents=(threads,))
    return out


def _thread_aliases(kernel: ir.Kernel) -> set:
    if len(kernel.thread_vars) != 1:
        return set()
    tx = kernel.thread_vars[0]
    aliases = {tx}
    for s in ir.walk(kernel.body):
        if isinstance(s, ir.Let) and isinstance(s.value, ir.VarRef) and s.value.var is tx:
            aliases.add(s.var)
    return aliases


def _producer_buffers(kernel: ir.Kernel) -> set:
    """The shared buffers of the kernel's producer sections: thread-range ``if``s (no ``else``)
    whose statements are all ``T.Parallel`` stores into shared memory (after passes/thread_copies.py:
    a producer that only copies); empty when there is none."""
    aliases = _thread_aliases(kernel)
    out: set = set()
    if not aliases:
        return out
    for s in ir.walk(kernel.body):
        if not (isinstance(s, ir.If) and not s.else_body and s.then_body and _thread_range(s.cond, aliases)):
            continue
        bufs = set()
        for par in s.then_body:
            if not isinstance(par, ir.Parallel):
                break
            stores = [x for x in ir.walk(par.body) if isinstance(x, ir.Store)]
            others = [x for x in ir.walk(par.body) if not isinstance(x, (ir.Store, ir.If))]
            if others or not stores or any(x.buffer.scope != ir.SHARED for x in stores):
                break
            bufs.update(x.buffer for x in stores)
        else:
            out |= bufs
    return out


def _thread_range(cond, aliases: set) -> bool:
    """Whether ``cond`` is a conjunction of comparisons of the thread index with constants."""
    if isinstance(cond, ir.BinOp) and cond.op in ("and", "&"):
        return _thread_range(cond.lhs, aliases) and _thread_range(cond.rhs, aliases)
    return (
        isinstance(cond, ir.Compare)
        and cond.op in ("<", "<=", ">", ">=")
        and isinstance(cond.lhs, ir.VarRef)
        and cond.lhs.var in aliases
        and _const(cond.rhs) is not None
    )


# ------------------------------------------------------------------------------ program positions
def _index(body: list) -> dict:
    """id(stmt) -> _Site, in pre-order."""
    sites: dict = {}
    counter = [0]

    def go(stmts, loops, parents):
        for s in stmts:
            sites[id(s)] = _Site(s, counter[0], loops, parents)
            counter[0] += 1
            if isinstance(s, ir.For):
                go(s.body, loops + (s,), parents + (s,))
            elif isinstance(s, ir.If):
                go(s.then_body, loops, parents + (s,))
                go(s.else_body, loops, parents + (s,))
            elif isinstance(s, (ir.Parallel, ir.While)):
                go(s.body, loops + ((s,) if isinstance(s, ir.While) else ()), parents + (s,))
            elif isinstance(s, ir.Kernel):
                go(s.body, loops, parents + (s,))
        # positions after a statement list close at its end: a later sibling is later in order

    go(body, (), ())
    return sites


def _shared_buffers(body: list) -> list:
    seen: dict = {}
    for s in ir.walk(body):
        if isinstance(s, ir.Store) and s.buffer.scope == ir.SHARED:
            seen.setdefault(s.buffer, None)
        if isinstance(s, ir.Copy) and isinstance(s.dst, ir.Region) and s.dst.buffer.scope == ir.SHARED:
            seen.setdefault(s.dst.buffer, None)
    return list(seen)


def _mentions(s: ir.Stmt, buf: ir.Buffer) -> bool:
    """Whether the statement itself (not its nested statements) names ``buf``."""
    for f in dataclasses.fields(s):
        v = getattr(s, f.name)
        for x in v if isinstance(v, (tuple, list)) else (v,):
            if x is buf:
                return True
            if isinstance(x, ir.Region) and x.buffer is buf:
                return True
            if isinstance(x, ir.Region):
                if any(
                    isinstance(e, ir.Expr) and any(ld.buffer is buf for ld in _loads(e))
                    for e in (*x.starts, *x.extents)
                ):
                    return True
            if f.name == "copy" and isinstance(x, ir.Copy) and _mentions(x, buf):  # GuardedCopy
                return True
    return any(ld.buffer is buf for e in _exprs(s) for ld in _loads(e))


def written_roots(body: list) -> set:
    """Root buffers a statement of ``body`` may write (stores, tile-op and atomic destinations,
    whatever an intrinsic names); ``None`` among them where inline asm may write anything."""
    out = set()
    for s in ir.walk(body):
        if isinstance(s, ir.Store):
            out.add(s.buffer.root)
        for f in dataclasses.fields(s):
            v = getattr(s, f.name)
            if f.name in ("dst", "c") and isinstance(v, ir.Region):
                out.add(v.buffer.root)
        if isinstance(s, (ir.Atomic, ir.GuardedCopy)):
            for f in dataclasses.fields(s):
                v = getattr(s, f.name)
                if isinstance(v, ir.Region) or (f.name == "dst" and isinstance(v, ir.Load)):  # element form: a Load
                    out.add(v.buffer.root)
                if isinstance(v, ir.Copy) and isinstance(v.dst, ir.Region):
                    out.add(v.dst.buffer.root)
        if not isinstance(s, (ir.Store, ir.Copy, ir.Fill, ir.Gemm, ir.Reduce, ir.Let, ir.Alloc, ir.For, ir.If,
                              ir.Parallel, ir.Barrier, ir.SafeValues, ir.MakeTensor)):  # fmt: skip
            # anything else (atomics, scans, intrinsics, asm) may write what it names
            for f in dataclasses.fields(s):
                v = getattr(s, f.name)
                if isinstance(v, ir.Region):
                    out.add(v.buffer.root)
                if isinstance(v, ir.Buffer):
                    out.add(v.root)
        for e in _exprs(s):
            for n in _nodes(e):
                if isinstance(n, ir.InlineAsm):
                    out.add(None)  # inline asm may write anything
    return out


# ------------------------------------------------------------------------------ one buffer
class _Forward:
    def __init__(self, kernel: ir.Kernel, body: list, sites: dict, buf: ir.Buffer, which: int = 0):
        self.kernel, self.body, self.sites, self.buf, self.which = kernel, body, sites, buf, which
        self.made: list = []  # the copies from global memory made at reads
        self.lets: dict = {}
        for s in ir.walk(body):
            if isinstance(s, ir.Let):
                self.lets[s.var] = self.lets.get(s.var, 0) + 1

    def run(self) -> list:
        buf = self.buf
        users = [st for st in ir.walk(self.body) if not isinstance(st, ir.Alloc) and _mentions(st, buf)]
        stores = [st for st in users if self._writes(st)]
        if self.which >= len(stores):
            raise _NoMore("no further store")
        store = self._the_store(stores)
        site = self.sites[id(store)]
        self.store_site = site
        reads = [st for st in users if not self._writes(st)]
        if not reads:
            raise _Refuse("nothing reads it")
        inside = {id(x) for x in ir.walk([store])}
        others = [st for st in stores if id(st) not in inside]
        conditional = isinstance(store, ir.Parallel) and isinstance(store.body[0], ir.If)
        if conditional and others:
            raise _Refuse("a conditional store and other writes")
        written = written_roots(self.body)
        if None in written:
            raise _Refuse("inline asm")
        self._check_value(written)
        replace: dict = {}
        for r in reads:
            rs = self.sites[id(r)]
            if rs.pos <= site.pos or rs.loops[: len(site.loops)] != site.loops:
                continue  # read before the store, or in a loop the store is not in: kept
            if any(self._between(w, rs) for w in others + self._source_writes()):
                continue  # another write may reach it (or change the value it stores): kept
            self.lanes = {v: k for p in rs.parents if isinstance(p, ir.Parallel) for v, k in zip(p.vars, p.extents)}
            try:
                replace[id(r)] = self._rewrite_read(r)
            except _Refuse as why:
                if _DEBUG:
                    print(f"forward_shared: a read of {buf.name} kept: {why}")
                continue
        if not replace:
            raise _Refuse("no read forwarded")
        return _replace(self.body, replace)

    def _source_writes(self) -> list:
        """Statements that write the register buffer a Copy store reads (none for a global one)."""
        if self.kind != "copy" or self.copy.src.buffer.scope == ir.GLOBAL:
            return []
        src = self.copy.src.buffer
        return [
            st
            for st in ir.walk(self.body)
            if st is not self.copy
            and not isinstance(st, (ir.Alloc, ir.Parallel, ir.If, ir.For))
            and _mentions(st, src)
            and _writes_buffer(st, src)
        ]

    def _between(self, w, rs: _Site) -> bool:
        """Whether write ``w`` may run between the store and the read at ``rs``."""
        site, ws = self.store_site, self.sites[id(w)]
        if site.pos < ws.pos < rs.pos:
            return True
        return any(loop in rs.loops and loop not in site.loops for loop in ws.loops)

    def _writes(self, st) -> bool:
        if isinstance(st, ir.Store):
            return st.buffer is self.buf
        if isinstance(st, ir.Parallel):
            return False  # its nested stores are the writes
        if isinstance(st, ir.Copy):
            return isinstance(st.dst, ir.Region) and st.dst.buffer is self.buf
        if isinstance(st, ir.Load):
            return False
        if isinstance(st, (ir.If, ir.For, ir.Let)):
            return False
        if isinstance(st, ir.GuardedCopy):
            return isinstance(st.copy.dst, ir.Region) and st.copy.dst.buffer is self.buf
        # anything else that names it (fills, gemms, reductions, atomics): a write
        return True

    def _the_store(self, stores: list):
        """The one forwardable store (a Parallel of one Store, or a Copy from global), or _Refuse."""
        cands = []
        for st in stores:
            if isinstance(st, ir.Store):
                ifs = []
                node = None
                for p in reversed(self.sites[id(st)].parents):
                    if isinstance(p, ir.Parallel):
                        node = p
                        break
                    ifs.append(p)
                if isinstance(node, ir.Parallel) and all(isinstance(x, ir.If) for x in ifs):
                    cands.append((node, st))  # else: a write, not forwarded
            elif isinstance(st, ir.Copy):
                src = st.src
                scopes = (ir.GLOBAL, ir.FRAGMENT, ir.LOCAL)
                if isinstance(src, ir.Region) and src.buffer.scope in scopes and isinstance(st.dst, ir.Region):
                    cands.append((st, None))
        cands.sort(key=lambda c: self.sites[id(c[0])].pos)
        if self.which >= len(cands):
            raise _NoMore("no forwardable store")
        # the others are writes the reads forwarded from this one must not see (checked)
        node, store = cands[self.which]
        if isinstance(node, ir.Parallel):
            self._parse_parallel(node, store)
        else:
            self._parse_copy(node)
        return node

    # ---------------------------------------------------------------- a Parallel store
    def _parse_parallel(self, par: ir.Parallel, store: ir.Store) -> None:
        conds = []
        body = par.body
        while True:
            if len(body) != 1:
                raise _Refuse("a Parallel of more than one statement")
            s = body[0]
            if isinstance(s, ir.If):
                if s.else_body:
                    raise _Refuse("else")
                conds.append(s.cond)
                body = s.then_body
            elif s is store:
                break
            else:
                raise _Refuse("a Parallel of more than one store")
        pvars = set(par.vars)
        dims = []  # per dim: ("fixed", expr) or ("var", Var, const offset)
        used = set()
        for e in store.indices:
            refs = {n.var for n in _nodes(e) if isinstance(n, ir.VarRef) and n.var in pvars}
            if not refs:
                dims.append(("fixed", e))
                continue
            var, off = _var_plus_const(e, pvars)
            if var is None or var in used:
                raise _Refuse("an index not a Parallel variable plus a constant")
            used.add(var)
            dims.append(("var", var, off))
        if used != pvars:
            raise _Refuse("a Parallel variable the indices leave out")
        self.kind = "parallel"
        self.par, self.dims, self.conds, self.value = par, dims, conds, store.value
        self.extent = dict(zip(par.vars, par.extents))
        for k in par.extents:
            if not isinstance(k, int):
                raise _Refuse("a dynamic extent")

    def _parse_copy(self, copy: ir.Copy) -> None:
        src, dst = copy.src, copy.dst
        de = [_const(x) for x in dst.extents]
        ds = [_const(x) for x in dst.starts]
        if None in de or None in ds:
            raise _Refuse("a dynamic copy box")
        # the source's dims that are not 1 (a dynamic extent, H1 - H0, is the destination's)
        big_src = [k for k, x in enumerate(src.extents) if _const(x) != 1]
        big_dst = [k for k, e in enumerate(de) if e != 1]
        if len(big_src) != len(big_dst):
            raise _Refuse("copy boxes of different shapes")
        for sd, cd in zip(big_src, big_dst):
            if _const(src.extents[sd]) not in (None, de[cd]):
                raise _Refuse("copy boxes of different shapes")
        if src.buffer is self.buf:
            raise _Refuse("a copy within the buffer")
        self.kind = "copy"
        self.copy, self.conds = copy, []
        self.box = (ds, de, dict(zip(big_dst, big_src)))

    def _check_value(self, written: set) -> None:
        exprs = []
        if self.kind == "parallel":
            exprs = [self.value, *self.conds, *(d[1] for d in self.dims if d[0] == "fixed")]
            local = set(self.par.vars)
        else:
            exprs = [*self.copy.src.starts, *self.copy.src.extents]
            local = set()
            src = self.copy.src.buffer
            if src.scope == ir.GLOBAL and src.root in written:
                raise _Refuse("the source is written in the kernel")
        loops = {f.var for f in self.store_site.loops}
        for e in exprs:
            if not isinstance(e, ir.Expr):
                continue
            for n in _nodes(e):
                if isinstance(n, ir.VarRef):
                    v = n.var
                    if v in local or v in loops or v.kind in ("block", "size", "param"):
                        continue
                    if v.kind == "let" and self.lets.get(v) == 1:
                        continue
                    raise _Refuse(f"the value names {v.name}")
                elif isinstance(n, ir.Load):
                    if n.buffer.scope != ir.GLOBAL or n.buffer.root in written:
                        raise _Refuse(f"the value reads {n.buffer.name}")
                elif isinstance(n, (ir.InlineAsm, ir.WarpOp)):
                    raise _Refuse("asm in the value")
                elif isinstance(n, ir.Call) and n.fn in ("rand", "random", "clock", "timer"):
                    raise _Refuse("a call with state")

    # ---------------------------------------------------------------- reads
    def _rewrite_read(self, st):
        if isinstance(st, ir.Copy) and isinstance(st.src, ir.Region) and st.src.buffer is self.buf:
            if isinstance(st.dst, ir.Region) and st.dst.buffer is self.buf:
                raise _Refuse("a copy within the buffer")
            if _mentions_in_exprs(st, self.buf) or not isinstance(st.dst, ir.Region):
                raise _Refuse("a copy reading it twice")
            return self._forward_copy(st)
        if isinstance(st, (ir.Copy, ir.Gemm, ir.Reduce, ir.GuardedCopy)) or isinstance(
            st, (ir.Fill, ir.Atomic, ir.Scan)
        ):
            raise _Refuse(f"a {type(st).__name__} reads it")
        # element loads in the statement's own expressions
        return _map_exprs(st, lambda e: self._subst_loads(e))

    def _subst_loads(self, e):
        if isinstance(e, ir.Load) and e.buffer is self.buf:
            if self.kind != "parallel":
                raise _Refuse("an element read of a copied buffer")
            env = {}
            for idx, d in zip(e.indices, self.dims):
                if d[0] == "fixed":
                    if ir_key(idx) != ir_key(d[1]):
                        raise _Refuse("a read of another slot")
                else:
                    _, var, off = d
                    lo, hi = self._range_of(idx)
                    if lo is not None and (lo < off or hi >= off + self.extent[var]):
                        raise _Refuse("a read outside the stored box")
                    if lo is None:
                        raise _Refuse("a read at an index of unknown range")
                    env[var] = ir.BinOp("-", idx, const_int(off), INT32) if off else idx
            return self._value_at(env, e.dtype)
        return _map_children(e, self._subst_loads)

    def _range_of(self, e):
        """Static bounds [lo, hi] of a read's index: a constant, or a variable of a Parallel around
        the read (plus a constant); (None, None) otherwise."""
        c = _const(e)
        if c is not None:
            return c, c
        var, off = _var_plus_const(e, set(self.lanes))
        if var is None:
            return None, None
        return off, off + self.lanes[var] - 1

    def _value_at(self, env: dict, dtype):
        value = _subst(self.value, env)
        if not self.conds:
            return value
        cond = _subst(_conj(self.conds), env)
        zero = ir.Const(False if dtype == BOOL else 0, dtype)
        return ir.Select(cond, value, zero, dtype)

    def _forward_copy(self, st: ir.Copy) -> list:
        src, dst = st.src, st.dst
        se = [_const(x) for x in src.extents]
        ss = [_const(x) for x in src.starts]
        if None in se:
            raise _Refuse("a dynamic read box")
        if self.kind == "copy":
            # the read box, in the source's coordinates: src.start + (read start - stored start)
            c = self.copy
            cs, ce, src_dim = self.box
            if None in ss:
                raise _Refuse("a dynamic read start")
            for k in range(len(cs)):
                if ss[k] < cs[k] or ss[k] + se[k] > cs[k] + ce[k]:
                    raise _Refuse("a read outside the stored box")
            starts, extents = list(c.src.starts), [const_int(1)] * len(c.src.starts)
            for cd, sd in src_dim.items():
                starts[sd] = _plus(c.src.starts[sd], const_int(ss[cd] - cs[cd]))
                extents[sd] = const_int(se[cd])
            if [e for e in se if e != 1] != [_const(e) for e in extents if _const(e) != 1]:
                raise _Refuse("read shapes")
            new = dataclasses.replace(st, src=ir.Region(c.src.buffer, tuple(starts), tuple(extents)))
            self.made.append(new)
            return [new]
        de = [_const(x) for x in dst.extents]
        if None in se or None in de:
            raise _Refuse("a dynamic read box")
        if [e for e in se if e != 1] != [e for e in de if e != 1]:
            raise _Refuse("read boxes of different shapes")
        qvars = [ir.Var(f"{dst.buffer.name}_f{k}", INT32, "lane") for k in range(len(de))]
        big_dst = [k for k, e in enumerate(de) if e != 1]
        big_src = [k for k, e in enumerate(se) if e != 1]
        src_of = dict(zip(big_src, big_dst))  # src dim -> the dst dim (its Parallel variable)
        dst_idx = tuple(
            _plus(dst.starts[k], ir.VarRef(qvars[k])) if de[k] != 1 else dst.starts[k] for k in range(len(de))
        )
        env = {}
        for k, d in enumerate(self.dims):
            if d[0] == "fixed":
                if se[k] != 1 or ir_key(src.starts[k]) != ir_key(d[1]):
                    raise _Refuse("a read of another slot")
                continue
            _, var, off = d
            if ss[k] is None:
                raise _Refuse("a dynamic read start")
            if ss[k] < off or ss[k] + se[k] > off + self.extent[var]:
                raise _Refuse("a read outside the stored box")
            e = ir.VarRef(qvars[src_of[k]]) if k in src_of else const_int(0)
            if ss[k] - off:
                e = ir.BinOp("+", e, const_int(ss[k] - off), INT32)
            env[var] = e
        value = _subst(self.value, env)
        body: list = [ir.Store(st.loc, dst.buffer, dst_idx, value)]
        if self.conds:
            # rows the producer skips read zeros (TileLang: the slot's stale or uninitialised data)
            cond = _subst(_conj(self.conds), env)
            zero = ir.Const(0, dst.buffer.dtype)
            body = [ir.Store(st.loc, dst.buffer, dst_idx, ir.Select(cond, value, zero, dst.buffer.dtype))]
        return [ir.Parallel(st.loc, qvars, de, body)]


# ------------------------------------------------------------------------------ after forwarding
def _drop_dead(body: list, forwarded: list) -> tuple[list, list]:
    """The stores of forwarded buffers nothing reads now, and thread-range sections left empty;
    also the buffers whose stores went."""
    dead = []
    for buf in forwarded:
        readers = [
            st for st in ir.walk(body) if not isinstance(st, ir.Alloc) and _mentions(st, buf) and not _is_write(st, buf)
        ]
        if not readers:
            dead.append(buf)

    def keep(s) -> bool:
        if isinstance(s, ir.Store) and s.buffer in dead:
            return False
        if isinstance(s, ir.Copy) and isinstance(s.dst, ir.Region) and s.dst.buffer in dead:
            return False
        return True

    def go(stmts):
        out = []
        for s in stmts:
            if not keep(s):
                continue
            if isinstance(s, ir.If):
                t, e = go(s.then_body), go(s.else_body)
                if not t and not e:
                    continue
                s = dataclasses.replace(s, then_body=t, else_body=e)
            elif isinstance(s, ir.Parallel):
                b = go(s.body)
                if not b:
                    continue
                s = dataclasses.replace(s, body=b)
            elif isinstance(s, ir.For):
                s = dataclasses.replace(s, body=go(s.body))
            out.append(s)
        return out

    return go(body), dead


def _gathers(body: list) -> list:
    """The Parallels _forward_copy made: (the Parallel, its one Store into a fragment)."""
    out = []
    for s in ir.walk(body):
        if (
            isinstance(s, ir.Parallel)
            and s.vars
            and all(_GATHER_VAR.search(v.name) for v in s.vars)
            and len(s.body) == 1
        ):
            st = s.body[0]
            if isinstance(st, ir.Store) and st.buffer.scope == ir.FRAGMENT:
                out.append((s, st))
    return out


def _hoist(body: list, made: list, aliases: set) -> list:
    """A copy from global memory made at a read (Q's sub-tiles) whose box names no variable of
    the loops around it moves before the outermost such loop, with its fragment's allocation:
    the same tile every iteration (the source is never written), loaded once.  Only through loops
    and thread-range ``if``s, and where that copy is the fragment's one writer."""
    sites = _index(body)
    moves: dict = {}  # id(loop) -> statements to put before it
    drop: set = set()
    for c in made:
        site = sites.get(id(c))
        if site is None or c.src.buffer.scope != ir.GLOBAL or c.dst.buffer.scope != ir.FRAGMENT:
            continue
        frag = c.dst.buffer
        allocs = [s for s in ir.walk(body) if isinstance(s, ir.Alloc) and s.buffer is frag]
        writers = [
            s
            for s in ir.walk(body)
            if not isinstance(s, (ir.Alloc, ir.If, ir.For, ir.Parallel))
            and _mentions(s, frag)
            and _writes_buffer(s, frag)
        ]
        if writers != [c] or len(allocs) != 1:
            continue
        names = {
            n.var
            for e in (*c.src.starts, *c.src.extents, *c.dst.starts)
            if isinstance(e, ir.Expr)
            for n in _nodes(e)
            if isinstance(n, ir.VarRef)
        }
        target = None
        for loop in reversed(site.loops):
            bound = {loop.var} | {x.var for x in ir.walk(loop.body) if isinstance(x, ir.Let)}
            if names & bound or not isinstance(loop, ir.For):
                break
            target = loop
        if target is None:
            continue
        inside = site.parents[site.parents.index(target) + 1 :]
        if not all(
            isinstance(p, ir.For) or isinstance(p, ir.If) and not p.else_body and _thread_range(p.cond, aliases)
            for p in inside
        ):
            continue
        if sites[id(allocs[0])].parents[: len(site.parents)] != site.parents[: len(sites[id(allocs[0])].parents)]:
            continue
        moves.setdefault(id(target), []).extend([allocs[0], c])
        drop.update((id(allocs[0]), id(c)))
    if not moves:
        return body

    def go(stmts):
        out = []
        for s in stmts:
            if id(s) in drop:
                continue
            out.extend(moves.get(id(s), ()))
            out.append(_rebuild(s, go))
        return out

    return go(body)


def _squeeze_gathers(body: list) -> list:
    """A gathered fragment with unit dims (the gemm operand ``[1, 64, 256]`` of a slot) that only
    gemms read, whole, as the tile without them: a ``[64, 256]`` tile needs no reshape."""
    new: dict = {}  # old fragment -> squeezed one
    pars: dict = {}
    for par, st in _gathers(body):
        buf = st.buffer
        if 1 not in buf.shape or all(e == 1 for e in buf.shape):
            continue
        ok = True
        for s in ir.walk(body):
            if s is st or isinstance(s, ir.Alloc) and s.buffer is buf or not _mentions(s, buf):
                continue
            if not (isinstance(s, ir.Gemm) and s.c.buffer is not buf):
                ok = False
            else:
                for r in (s.a, s.b):
                    if r.buffer is buf and not r.is_whole():
                        ok = False
        if ok:
            shape = tuple(e for e in buf.shape if e != 1)
            new[buf] = dataclasses.replace(buf, shape=shape)
            pars[id(par)] = (par, st)
    if not new:
        return body

    def region(r):
        if isinstance(r, ir.Region) and r.buffer in new:
            b = new[r.buffer]
            return ir.Region(b, tuple(const_int(0) for _ in b.shape), tuple(b.shape))
        return r

    def go(stmts):
        out = []
        for s in stmts:
            if id(s) in pars:
                par, st = pars[id(s)]
                keep = [k for k, e in enumerate(st.buffer.shape) if e != 1]
                store = dataclasses.replace(st, buffer=new[st.buffer], indices=tuple(st.indices[k] for k in keep))
                s = ir.Parallel(par.loc, [par.vars[k] for k in keep], [par.extents[k] for k in keep], [store])
            elif isinstance(s, ir.Alloc) and s.buffer in new:
                s = dataclasses.replace(s, buffer=new[s.buffer])
            elif isinstance(s, ir.Gemm):
                s = dataclasses.replace(s, a=region(s.a), b=region(s.b))
            out.append(_rebuild(s, go))
        return out

    return go(body)


def _share_gathers(body: list, aliases: set) -> list:
    """A forwarded gather that repeats an earlier one of the same iteration (the PV dot's V reads
    the rows the QK dot's K read) reads the earlier one's tile instead: one load, two dots."""
    sites = _index(body)
    gathers = []  # (Parallel, its fragment, key)
    for s, st in _gathers(body):
        env = {v: ir.VarRef(_canonical(k)) for k, v in enumerate(s.vars)}
        key = (_key(_subst(st.value, env)), tuple(s.extents), st.buffer.dtype)
        key = (key, tuple(_key(_subst(i, env)) for i in st.indices))
        gathers.append((s, st.buffer, key))
    writes: dict = {}
    for s in ir.walk(body):
        for buf in {g[1] for g in gathers}:
            if (
                not isinstance(s, ir.Alloc)
                and _mentions(s, buf)
                and (not isinstance(s, ir.Gemm) or s.c.buffer is buf or s.a.buffer is not buf and s.b.buffer is not buf)
            ):
                writes.setdefault(buf, []).append(s)
    alias: dict = {}
    drop: set = set()
    for k, (p2, f2, key2) in enumerate(gathers):
        if len(writes.get(f2, ())) != 1:
            continue
        for p1, f1, key1 in gathers[:k]:
            if f1 in alias or key1 != key2 or f1.shape != f2.shape or len(writes.get(f1, ())) != 1:
                continue
            s1, s2 = sites[id(p1)], sites[id(p2)]
            if s1.loops != s2.loops or not _sections_only(s1.parents, s2.parents, aliases):
                continue
            alias[f2] = f1
            drop.add(id(p2))
            break
    if not alias:
        return body

    def region(r):
        return dataclasses.replace(r, buffer=alias[r.buffer]) if isinstance(r, ir.Region) and r.buffer in alias else r

    def go(stmts):
        out = []
        for s in stmts:
            if id(s) in drop or isinstance(s, ir.Alloc) and s.buffer in alias:
                continue
            if isinstance(s, ir.Gemm):
                s = dataclasses.replace(s, a=region(s.a), b=region(s.b))
            out.append(_rebuild(s, go))
        return out

    return go(body)


def _key(e):
    """A structural key of an expression: equal keys, the same value (at the same point)."""
    if isinstance(e, ir.VarRef):
        return ("var", id(e.var))
    if isinstance(e, ir.Const):
        return ("const", type(e.value).__name__, e.value, e.dtype)
    if isinstance(e, ir.Load):
        return ("load", id(e.buffer), tuple(_key(i) for i in e.indices))
    if isinstance(e, (ir.BinOp, ir.Compare)):
        return (type(e).__name__, e.op, _key(e.lhs), _key(e.rhs), e.dtype)
    if isinstance(e, ir.UnaryOp):
        return ("unary", e.op, _key(e.operand), e.dtype)
    if isinstance(e, ir.Cast):
        return ("cast", e.dtype, _key(e.value))
    if isinstance(e, ir.Select):
        return ("select", _key(e.cond), _key(e.true_value), _key(e.false_value), e.dtype)
    if isinstance(e, ir.Call):
        return ("call", e.fn, tuple(_key(a) if isinstance(a, ir.Expr) else repr(a) for a in e.args), e.dtype)
    return ("node", id(e))


_CANONICAL: list = []


def _canonical(k: int) -> ir.Var:
    """The k-th Parallel variable in a comparison of two gathers' bodies."""
    while len(_CANONICAL) <= k:
        _CANONICAL.append(ir.Var(f"_q{len(_CANONICAL)}", INT32, "lane"))
    return _CANONICAL[k]


def _sections_only(a: tuple, b: tuple, aliases: set) -> bool:
    """Whether the statements above two gathers differ only by thread-range ``if``s (warp
    sections, which the block-level program runs one after another in the same frame)."""
    n = 0
    while n < min(len(a), len(b)) and a[n] is b[n]:
        n += 1
    rest = a[n:] + b[n:]
    return all(isinstance(p, ir.If) and not p.else_body and _thread_range(p.cond, aliases) for p in rest)


def _writes_buffer(st, buf) -> bool:
    """Whether a statement (not a nest) that names ``buf`` may write it."""
    if isinstance(st, ir.Store):
        return st.buffer is buf
    if isinstance(st, ir.Copy):
        return isinstance(st.dst, ir.Region) and st.dst.buffer is buf
    if isinstance(st, ir.Gemm):
        return st.c.buffer is buf
    if isinstance(st, ir.Let):
        return False
    return True  # fills, reductions, atomics, anything else that names it


def _is_write(st, buf) -> bool:
    if isinstance(st, ir.Store):
        return st.buffer is buf
    if isinstance(st, ir.Copy):
        return (
            isinstance(st.dst, ir.Region)
            and st.dst.buffer is buf
            and not _mentions_in_exprs(st, buf)
            and not (isinstance(st.src, ir.Region) and st.src.buffer is buf)
        )
    return False


def _pipeline(body: list, rings: list) -> list:
    """The outermost sequential loop around a ring's store (gone now) takes the ring's depth as
    its pipeline stages, where nothing set them: the producer filled that many slots ahead.  A
    ``serial(n) x unroll(depth)`` nest over the ring's slots (the example's ``i_i`` and ``stage``)
    becomes one loop over ``n * depth`` blocks first, where the slot index is only arithmetic now:
    pipelining the nest would give each unrolled slot buffers of its own."""
    want: dict = {}
    for loops, depth in rings:
        want[loops[0]] = max(want.get(loops[0], 0), depth)

    def go(stmts):
        out = []
        for s in stmts:
            if isinstance(s, ir.For):
                s = dataclasses.replace(s, body=go(s.body))
                exits = any(isinstance(x, (ir.Break, ir.Continue, ir.While)) for x in ir.walk(s.body))
                if s.var in want and s.kind == "serial" and not s.num_stages and not exits:
                    depth = want[s.var]
                    s = _flatten(s) or s
                    s = dataclasses.replace(s, kind="pipelined", num_stages=depth)
            elif isinstance(s, ir.If):
                s = dataclasses.replace(s, then_body=go(s.then_body), else_body=go(s.else_body))
            out.append(s)
        return out

    return go(body) if want else body


def _flatten(outer: ir.For) -> ir.For | None:
    """``for i in serial(n): for j in unroll(m): body`` as ``for k in serial(n * m)`` with ``i``,
    ``j`` replaced by ``k // m``, ``k % m``; None where the nest is not that, or where ``j`` picks
    an element of a buffer other than a global one (a register tile would be indexed at run time)."""
    if len(outer.body) != 1 or not isinstance(outer.body[0], ir.For):
        return None
    inner = outer.body[0]
    n, m = (_const(outer.stop), _const(inner.stop))
    if inner.kind != "unroll" or None in (n, m) or _const(outer.start) != 0 or _const(inner.start) != 0:
        return None
    if _const(outer.step) != 1 or _const(inner.step) != 1:
        return None
    for st in ir.walk(inner.body):
        for e in _exprs(st):
            for ld in _loads(e):
                if ld.buffer.scope != ir.GLOBAL and any(
                    isinstance(x, ir.VarRef) and x.var is inner.var for i in ld.indices for x in _nodes(i)
                ):
                    return None
        for f in dataclasses.fields(st):
            v = getattr(st, f.name)
            if isinstance(v, ir.Region) and v.buffer.scope != ir.GLOBAL:
                if any(isinstance(x, ir.VarRef) and x.var is inner.var for i in v.starts for x in _nodes(i)):
                    return None
        if isinstance(st, ir.Store) and st.buffer.scope != ir.GLOBAL:
            if any(isinstance(x, ir.VarRef) and x.var is inner.var for i in st.indices for x in _nodes(i)):
                return None
    k = ir.Var(f"{outer.var.name}_{inner.var.name}", INT32, "loop")
    env = {
        outer.var: ir.BinOp("//", ir.VarRef(k), const_int(m), INT32),
        inner.var: ir.BinOp("%", ir.VarRef(k), const_int(m), INT32),
    }
    body = _subst_stmts(inner.body, env)
    return dataclasses.replace(outer, var=k, stop=const_int(n * m), body=body)


def _threads_left(kernel: ir.Kernel) -> int | None:
    """Threads still used: where the thread index appears only in thread-range conditions, the
    highest bound of those ranges (rounded up to a warp)."""
    aliases = _thread_aliases(kernel)
    if not aliases:
        return None
    hi = 0
    for s in ir.walk(kernel.body):
        if isinstance(s, ir.Let) and s.var in aliases:
            continue
        if isinstance(s, ir.If):
            r = _range_hi(s.cond, aliases)
            if r is not None:
                if s.else_body:
                    return None
                hi = max(hi, r)
                continue
        for e in _exprs(s):
            if any(isinstance(n, ir.VarRef) and n.var in aliases for n in _nodes(e)):
                return None
    if hi <= 0:
        return None
    return -(-hi // 32) * 32
