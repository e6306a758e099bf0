"""Shared and fragment buffers with a dim that is not a power of two, split into power-of-two parts.

Triton's tiles have power-of-two extents, so a 128 x 192 tile is held as 128 x 256 with a quarter
of padding: a quarter more tensor-core work in each gemm over that dim, and a quarter more
registers for an accumulator (attention backward with head dim 192: dK at 128 x 256 fp32 is 128
registers a thread of 8 warps, and the kernel spills).  TileLang's own MMA tiles are 192 wide.

Here such a buffer becomes one buffer per power of two of its extent (192 = 128 + 64: ``dk_0`` of
128 x 128 and ``dk_128`` of 128 x 64, named by their first index on the split dim), and every
statement that touches it is rewritten for the parts:

* an allocation, a fill of the whole buffer: one per part;
* a copy or a tile atomic between the whole buffer and a global box (or another buffer split the
  same way): one per part, the global box narrowed to the part's columns;
* a gemm: one per part of each split gemm dim (M, N or K); parts of K accumulate into the same
  output (the first keeps the gemm's ``clear_accum``, the others add);
* a ``T.Parallel`` that indexes the split dim with one of its loop variables: one loop per part,
  that variable offset by the part's start everywhere else.

A buffer with any other use (a partial region, a reduction over it, a scalar access outside a
``T.Parallel``, an index other than a loop variable, a view of it) is not split, nor is a buffer whose gemm or
copy partner is not.  The rewrite makes a new kernel; the bound one is not changed.
Switch: ``TILE2TRITON_SPLIT_DIMS`` (codegen's ``LoweringOptions.split_dims``).
"""

from __future__ import annotations

import dataclasses

from .. import ir
from ..ir.exprs import map_children, static

MIN_PART = 16  # a gemm's K (and wgmma's N) is at least 16: smaller parts are not worth a dot
MAX_PARTS = 3


class _Refuse(Exception):
    def __init__(self, buffers):
        super().__init__()
        self.buffers = set(buffers)


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _parts(extent: int) -> list[tuple[int, int]] | None:
    """(start, size) of the powers of two of ``extent``, largest first (192: (0, 128), (128, 64))."""
    parts, start = [], 0
    for bit in reversed(range(extent.bit_length())):
        size = 1 << bit
        if extent & size:
            parts.append((start, size))
            start += size
    if len(parts) > MAX_PARTS or any(size < MIN_PART for _, size in parts):
        return None
    return parts


def _candidates(body) -> dict:
    """Buffer -> (split dim, parts) for the shared/fragment allocations with one such dim."""
    out = {}
    allocs = [s for s in ir.walk(body) if isinstance(s, ir.Alloc)]
    # a view (T.reshape, T.view) and the buffers under it keep their one layout: the view is lowered
    # over its base's tile, which parts would not leave
    viewed = {s.buffer.alias_of.root for s in allocs if s.buffer.alias_of is not None}
    for s in allocs:
        if s.buffer.scope not in (ir.SHARED, ir.FRAGMENT) or s.buffer.alias_of is not None or s.buffer in viewed:
            continue
        shape = [static(d) for d in s.buffer.shape]
        if any(d is None for d in shape):
            continue
        odd = [d for d, e in enumerate(shape) if not _pow2(e)]
        if len(odd) != 1:
            continue
        parts = _parts(shape[odd[0]])
        if parts is not None:
            out[s.buffer] = (odd[0], parts)
    return out


def split_pow2_dims(kernel: ir.Kernel) -> ir.Kernel | None:
    """A copy of ``kernel`` with its non-power-of-two buffers split, or None when none can be."""
    done = split_body(kernel.body, _candidates(kernel.body))
    return None if done is None else dataclasses.replace(kernel, body=done[0])


def split_body(body: list, split: dict, **options) -> tuple[list, _Rewriter] | None:
    """(``body`` rewritten, the rewriter) for the buffers of ``split`` (buffer -> (dim, parts)) that
    every statement accepts: a buffer a statement refuses, and its partners there, are dropped from
    ``split`` (in place) and the rest tried again; None when none is left.  ``options``: the
    rewriter's (``scaled_axes``, ``name``)."""
    while split:
        rewriter = _Rewriter(split, **options)
        try:
            return rewriter.block(body), rewriter
        except _Refuse as refused:
            dropped = {b for b in refused.buffers if b in split}
            if not dropped:
                return None
            for b in dropped:
                del split[b]
    return None


class _Rewriter:
    """Rewrites a kernel body for ``split`` (buffer -> (dim, [(start, size), ...])).  ``scaled_axes``
    (passes/column_chunks.py) also takes a ``T.Parallel`` whose loop variable indexes the split dim
    scaled, ``a * d + k`` with ``k`` a vector lane in ``[0, a)`` of a static loop nested in it (a
    vectorized atomic's ``d * 4 + k``); each part's start and size must then be multiples of ``a``.
    A part's start may be an expression (passes/row_split.py: the block's half of its rows), where
    its loop variables are not scaled.  ``reductions`` (row_split) also takes a reduction along a dim
    other than the split one: one a part."""

    def __init__(self, split: dict, scaled_axes: bool = False, name=None, reductions: bool = False):
        self.split = split
        self.scaled_axes = scaled_axes
        self.reductions = reductions
        self.produced: dict = {}  # id(statement made) -> (the statement it was made from, part)
        name = name or (lambda b, k, start: f"{b.name}_{start}")
        self.pieces = {
            b: [
                ir.Buffer(
                    name(b, k, start),
                    b.scope,
                    tuple(size if d == dim else e for d, e in enumerate(b.shape)),
                    b.dtype,
                    b.loc,
                )
                for k, (start, size) in enumerate(parts)
            ]
            for b, (dim, parts) in split.items()
        }

    # ------------------------------------------------------------------ statements
    def block(self, stmts) -> list:
        out = []
        for s in stmts:
            made = self.stmt(s)
            if len(made) > 1:  # one statement a part (a gemm split on two dims: one a pair of parts)
                for k, m in enumerate(made):
                    self.produced[id(m)] = (s, k)
            out.extend(made)
        return out

    def stmt(self, s) -> list:
        if isinstance(s, ir.Alloc) and s.buffer in self.split:
            return [dataclasses.replace(s, buffer=p) for p in self.pieces[s.buffer]]
        if isinstance(s, ir.Parallel):
            return self.parallel(s)
        if isinstance(s, ir.Fill):
            return self.fill(s)
        if isinstance(s, ir.Copy) and isinstance(s.src, ir.Region) and isinstance(s.dst, ir.Region):
            return self.copy(s, "src", "dst")
        if isinstance(s, ir.Atomic) and isinstance(s.dst, ir.Region) and isinstance(s.value, ir.Region):
            return self.copy(s, "value", "dst")
        if isinstance(s, ir.Gemm):
            return self.gemm(s)
        if isinstance(s, ir.Reduce) and self.reductions:
            return self.reduce(s)
        if isinstance(s, (ir.For, ir.If, ir.While, ir.Kernel)):
            self._untouched_exprs(s)
            fields = {a: self.block(getattr(s, a)) for a in ("body", "then_body", "else_body") if hasattr(s, a)}
            return [dataclasses.replace(s, **fields)]
        self._untouched(s)
        return [s]

    def _touched(self, s) -> set:
        found = {b for b in ir.operand_buffers(s) if b in self.split}
        found |= {ld.buffer for ld in ir.loads_in(s) if ld.buffer in self.split}
        if isinstance(s, ir.Store) and s.buffer in self.split:
            found.add(s.buffer)
        if isinstance(s, ir.Atomic) and isinstance(s.dst, ir.Load) and s.dst.buffer in self.split:
            found.add(s.dst.buffer)
        return found

    def _untouched(self, s) -> None:
        touched = self._touched(s)
        for attr in ("body", "then_body", "else_body"):
            for inner in ir.walk(getattr(s, attr, None) or []):
                touched |= self._touched(inner)
        if touched:
            raise _Refuse(touched)

    def _untouched_exprs(self, s) -> None:
        touched = {ld.buffer for ld in ir.loads_in(s) if ld.buffer in self.split}
        if touched:
            raise _Refuse(touched)

    def fill(self, s: ir.Fill) -> list:
        b = s.dst.buffer
        if b not in self.split:
            self._untouched(s)
            return [s]
        if not s.dst.is_whole():
            raise _Refuse({b})
        return [dataclasses.replace(s, dst=_whole(p)) for p in self.pieces[b]]

    def copy(self, s, src_attr: str, dst_attr: str) -> list:
        src, dst = getattr(s, src_attr), getattr(s, dst_attr)
        ends = [r for r in (src, dst) if r.buffer in self.split]
        if not ends:
            self._untouched(s)
            return [s]
        both = {src.buffer, dst.buffer}
        if any(not r.is_whole() for r in ends):
            raise _Refuse(both)
        src_dims = [d for d, e in enumerate(src.extents) if static(e) != 1]
        dst_dims = [d for d, e in enumerate(dst.extents) if static(e) != 1]
        if len(src_dims) != len(dst_dims) or any(
            static(src.extents[a]) != static(dst.extents[b]) or static(src.extents[a]) is None
            for a, b in zip(src_dims, dst_dims)
        ):
            raise _Refuse(both)
        # the split dim, as a position among the non-unit dims both regions share
        positions = set()
        for r, dims in ((src, src_dims), (dst, dst_dims)):
            if r.buffer in self.split:
                dim = self.split[r.buffer][0]
                if dim not in dims:
                    raise _Refuse(both)
                positions.add(dims.index(dim))
        if len(positions) != 1:
            raise _Refuse(both)
        pos = positions.pop()
        parts = self.split[ends[0].buffer][1]
        for r in (src, dst):
            if r.buffer not in self.split and r.buffer.scope != ir.GLOBAL:
                raise _Refuse(both)  # a register tile the same statement would need whole
        out = []
        for k, (start, size) in enumerate(parts):
            new = {}
            for attr, r, dims in ((src_attr, src, src_dims), (dst_attr, dst, dst_dims)):
                if r.buffer in self.split:
                    new[attr] = _whole(self.pieces[r.buffer][k])
                else:
                    new[attr] = _narrow(r, dims[pos], start, size)
            out.append(dataclasses.replace(s, **new))
        return out

    def reduce(self, s: ir.Reduce) -> list:
        src, dst = s.src.buffer, s.dst.buffer
        if src not in self.split and dst not in self.split:
            self._untouched(s)
            return [s]
        if src not in self.split or dst not in self.split or not (s.src.is_whole() and s.dst.is_whole()):
            raise _Refuse({src, dst})
        dim = self.split[src][0]
        # the destination drops the reduced dim (or keeps it as 1): the split dim's place there
        dst_dim = dim if dst.ndim == src.ndim else dim - (dim > s.dim)
        if dim == s.dim or self.split[dst] != (dst_dim, self.split[src][1]):
            raise _Refuse({src, dst})
        return [
            dataclasses.replace(s, src=_whole(a), dst=_whole(b)) for a, b in zip(self.pieces[src], self.pieces[dst])
        ]

    def gemm(self, s: ir.Gemm) -> list:
        # the logical dims of each operand: A (M, K), B (K, N), C (M, N)
        roles = {
            "a": ("K", "M") if s.trans_a else ("M", "K"),
            "b": ("N", "K") if s.trans_b else ("K", "N"),
            "c": ("M", "N"),
        }
        regions = {name: getattr(s, name) for name in roles}
        touched = {r.buffer for r in regions.values() if r.buffer in self.split}
        if not touched:
            self._untouched(s)
            return [s]
        everyone = {r.buffer for r in regions.values()}
        split_dims: dict = {}  # logical dim -> parts
        for name, r in regions.items():
            if r.buffer in self.split:
                if r.buffer.ndim != 2 or not r.is_whole():
                    raise _Refuse(everyone)
                dim, parts = self.split[r.buffer]
                split_dims.setdefault(roles[name][dim], parts)
                if split_dims[roles[name][dim]] != parts:
                    raise _Refuse(everyone)
        for name, r in regions.items():  # every operand over a split dim is split on it
            for d, role in enumerate(roles[name]):
                if role in split_dims and (r.buffer not in self.split or self.split[r.buffer][0] != d):
                    raise _Refuse(everyone)
        whole = [(0, None)]
        m_parts = list(enumerate(split_dims.get("M", whole)))
        n_parts = list(enumerate(split_dims.get("N", whole)))
        k_parts = list(enumerate(split_dims.get("K", whole)))

        def operand(name, index):
            r = regions[name]
            if r.buffer not in self.split:
                return r
            role = roles[name][self.split[r.buffer][0]]
            return _whole(self.pieces[r.buffer][index[role]])

        out = []
        for mi, _ in m_parts:
            for ni, _ in n_parts:
                for ki, _ in k_parts:
                    index = {"M": mi, "N": ni, "K": ki}
                    out.append(
                        dataclasses.replace(
                            s,
                            a=operand("a", index),
                            b=operand("b", index),
                            c=operand("c", index),
                            clear_accum=s.clear_accum if ki == 0 else ir.Const(False, ir.BOOL, weak=True),
                        )
                    )
        return out

    def parallel(self, s: ir.Parallel) -> list:
        accesses = []  # (buffer, indices) of every split buffer the body reads or writes
        lanes = {}  # a static loop's variable nested in the body -> its (first, last) value
        for inner in ir.walk(s.body):
            if isinstance(inner, ir.For) and self.scaled_axes:
                first, stop, step = static(inner.start), static(inner.stop), static(inner.step)
                if first is not None and stop is not None and step == 1 and stop > first:
                    lanes[inner.var] = (first, stop - 1)
                    continue
            if isinstance(inner, (ir.For, ir.While, ir.Parallel)):
                if self._touched_deep(s):
                    raise _Refuse(self._touched_deep(s))
                return [s]
            for ld in ir.loads_in(inner):
                if ld.buffer in self.split:
                    accesses.append((ld.buffer, ld.indices))
            if isinstance(inner, ir.Store) and inner.buffer in self.split:
                accesses.append((inner.buffer, inner.indices))
            if isinstance(inner, ir.Atomic) and isinstance(inner.dst, ir.Load) and inner.dst.buffer in self.split:
                accesses.append((inner.dst.buffer, inner.dst.indices))
            if not isinstance(inner, (ir.Store, ir.If, ir.Atomic, ir.Let)) and self._touched(inner):
                raise _Refuse(self._touched(inner))
            if isinstance(inner, ir.Atomic) and not isinstance(inner.dst, ir.Load) and self._touched(inner):
                raise _Refuse(self._touched(inner))
        if not accesses:
            return [s]
        touched = {b for b, _ in accesses}
        axis = set()
        for b, indices in accesses:
            dim = self.split[b][0]
            var, scale = _axis_of(indices[dim], s.vars, lanes)
            if var is None or (scale != 1 and not self.scaled_axes):
                raise _Refuse(touched)
            if s.extents[[k for k, v in enumerate(s.vars) if v is var][0]] * scale != b.shape[dim]:
                raise _Refuse(touched)
            axis.add((var, scale))
        parts = {tuple(self.split[b][1]) for b in touched}
        if len(axis) != 1 or len(parts) != 1:
            raise _Refuse(touched)
        var, scale = axis.pop()
        parts = parts.pop()
        if any(not isinstance(start, int) and scale != 1 for start, _ in parts):
            raise _Refuse(touched)
        if any(start % scale or size % scale for start, size in parts if isinstance(start, int)):
            raise _Refuse(touched)
        if _indexes_whole_register_tile(s.body, var, self.split):
            # an unsplit register tile at an offset index of the axis would be a one-hot per part
            raise _Refuse(touched)
        k_axis = [k for k, v in enumerate(s.vars) if v is var][0]
        out = []
        for k, (start, size) in enumerate(parts):
            fresh = [ir.Var(v.name, v.dtype, v.kind) for v in s.vars]
            renamed = {v: ir.VarRef(f) for v, f in zip(s.vars, fresh)}
            axis_ref = renamed[var]
            step = start // scale if isinstance(start, int) else start
            shifted = _offset(axis_ref, step, var.dtype)
            sub = _Subst(renamed, var, axis_ref, shifted, self.split, self.pieces, k, step)
            extents = list(s.extents)
            extents[k_axis] = size // scale
            out.append(dataclasses.replace(s, vars=fresh, extents=extents, body=[sub.stmt(x) for x in s.body]))
        return out

    def _touched_deep(self, s) -> set:
        found = set()
        for inner in ir.walk([s]):
            found |= self._touched(inner)
        return found


class _Subst:
    """A ``T.Parallel`` body for one part: the loop variables renamed, the split axis offset by the
    part's start except where it indexes a split buffer's part."""

    def __init__(self, renamed, var, axis_ref, shifted, split, pieces, k, step=0):
        self.renamed, self.var, self.axis_ref, self.shifted = renamed, var, axis_ref, shifted
        self.split, self.pieces, self.k, self.step = split, pieces, k, step

    def stmt(self, s):
        if isinstance(s, ir.Store):
            buffer, indices = self.access(s.buffer, s.indices)
            return dataclasses.replace(s, buffer=buffer, indices=indices, value=self.expr(s.value))
        if isinstance(s, ir.Atomic):
            return dataclasses.replace(s, dst=self.expr(s.dst), value=self.expr(s.value))
        if isinstance(s, ir.If):
            return dataclasses.replace(
                s,
                cond=self.expr(s.cond),
                then_body=[self.stmt(x) for x in s.then_body],
                else_body=[self.stmt(x) for x in s.else_body],
            )
        if isinstance(s, ir.Let):
            return dataclasses.replace(s, value=self.expr(s.value))
        if isinstance(s, ir.For):  # a vector lane's loop (scaled axes): its own variable in each part
            fresh = ir.Var(s.var.name, s.var.dtype, s.var.kind)
            self.renamed[s.var] = ir.VarRef(fresh)
            bounds = {a: self.expr(getattr(s, a)) for a in ("start", "stop", "step")}
            return dataclasses.replace(s, var=fresh, **bounds, body=[self.stmt(x) for x in s.body])
        raise _Refuse(set())

    def access(self, buffer, indices):
        if buffer in self.split:
            dim = self.split[buffer][0]
            new = [self.expr(e) for e in indices]
            new[dim] = self.expr(indices[dim], local=True)  # the part's own index: the axis not offset
            return self.pieces[buffer][self.k], tuple(new)
        return buffer, tuple(self.expr(e) for e in indices)

    def expr(self, e, local: bool = False):
        if isinstance(e, ir.VarRef):
            if e.var is self.var:
                return self.axis_ref if local else self.shifted
            return self.renamed.get(e.var, e)
        if local:
            return map_children(e, lambda x: self.expr(x, local=True))
        if isinstance(self.step, int) and self.step and isinstance(e, ir.BinOp) and e.op == "*":
            # ``a * d`` offset as ``a * d + a * step``, not ``a * (d + step)``: the sum keeps the
            # ``a * d + k`` form codegen fuses into one lane axis (local_loops._fused_lane_axis)
            for v, a in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
                factor = static(a)
                if isinstance(v, ir.VarRef) and v.var is self.var and isinstance(factor, int):
                    scaled = (
                        dataclasses.replace(e, lhs=self.axis_ref, rhs=a)
                        if v is e.lhs
                        else (dataclasses.replace(e, lhs=a, rhs=self.axis_ref))
                    )
                    return ir.BinOp("+", scaled, ir.Const(factor * self.step, e.dtype), e.dtype)
        if isinstance(e, ir.Load):
            buffer, indices = self.access(e.buffer, e.indices)
            return dataclasses.replace(e, buffer=buffer, indices=indices)
        if isinstance(e, (ir.BinOp, ir.Compare)):
            return dataclasses.replace(e, lhs=self.expr(e.lhs), rhs=self.expr(e.rhs))
        if isinstance(e, ir.UnaryOp):
            return dataclasses.replace(e, operand=self.expr(e.operand))
        if isinstance(e, ir.Cast):
            return dataclasses.replace(e, value=self.expr(e.value))
        if isinstance(e, (ir.Call, ir.InlineAsm)):
            return dataclasses.replace(e, args=tuple(self.expr(a) for a in e.args))
        if isinstance(e, ir.WarpOp):
            mask = None if e.mask is None else self.expr(e.mask)
            return dataclasses.replace(e, args=tuple(self.expr(a) for a in e.args), mask=mask)
        if isinstance(e, ir.Select):
            return dataclasses.replace(
                e, cond=self.expr(e.cond), true_value=self.expr(e.true_value), false_value=self.expr(e.false_value)
            )
        return e


def _axis_of(index, loop_vars, lanes: dict) -> tuple:
    """(loop variable, scale) where ``index`` is ``d``, ``a * d`` or ``a * d + k`` for ``d`` one of
    ``loop_vars`` and ``k`` a constant or a variable of ``lanes`` (var -> (first, last)) in
    ``[0, a)``; else (None, None)."""

    def scaled(e):
        if isinstance(e, ir.VarRef) and any(e.var is v for v in loop_vars):
            return e.var, 1
        if isinstance(e, ir.BinOp) and e.op == "*":
            for v, a in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
                if isinstance(v, ir.VarRef) and any(v.var is x for x in loop_vars):
                    factor = static(a)
                    if isinstance(factor, int) and factor > 0:
                        return v.var, factor
        return None, None

    var, scale = scaled(index)
    if var is not None or not (isinstance(index, ir.BinOp) and index.op == "+"):
        return var, scale
    for head, lane in ((index.lhs, index.rhs), (index.rhs, index.lhs)):
        var, scale = scaled(head)
        if var is None:
            continue
        if isinstance(lane, ir.VarRef) and lane.var in lanes:
            first, last = lanes[lane.var]
        else:
            first = last = static(lane)
        if isinstance(first, int) and isinstance(last, int) and 0 <= first and last < scale:
            return var, scale
    return None, None


def _indexes_whole_register_tile(body, var, split) -> bool:
    """Whether a buffer other than a global one or a split one is indexed with ``var`` in ``body``."""
    for inner in ir.walk(body):
        accesses = [(ld.buffer, ld.indices) for ld in ir.loads_in(inner)]
        if isinstance(inner, ir.Store):
            accesses.append((inner.buffer, inner.indices))
        if isinstance(inner, ir.Atomic) and isinstance(inner.dst, ir.Load):
            accesses.append((inner.dst.buffer, inner.dst.indices))
        for buffer, indices in accesses:
            if buffer.scope == ir.GLOBAL or buffer in split:
                continue
            for index in indices:
                if any(isinstance(e, ir.VarRef) and e.var is var for e in ir.iter_expr_tree(index)):
                    return True
    return False


def _whole(b: ir.Buffer) -> ir.Region:
    return ir.Region(b, tuple(ir.Const(0, ir.INT32) for _ in b.shape), tuple(b.shape))


def _offset(e, start, dtype=ir.INT32):
    """``e + start``: ``start`` a constant (0: ``e`` itself) or an expression."""
    if isinstance(start, int):
        return e if start == 0 else ir.BinOp("+", e, ir.Const(start, dtype), dtype)
    return ir.BinOp("+", e, start, dtype)


def _narrow(r: ir.Region, dim: int, start, size: int) -> ir.Region:
    starts = list(r.starts)
    starts[dim] = _offset(starts[dim], start)
    extents = list(r.extents)
    extents[dim] = size
    return ir.Region(r.buffer, tuple(starts), tuple(extents))
