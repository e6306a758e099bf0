"""Per-thread local arrays held one value per element (passes/held_locals.py says which, and why).

An array of ``held`` gets one Triton value per element, each of the thread lanes' shape
(``local_0 ... local_127``, one register a thread), instead of one ``[threads, n]`` tile.  Its
accesses index it with constants: the loops that index it are lowered one iteration at a time
(``unroll``) with their variable a constant, and lets of those variables bound to their values, so
``local[chunkbase + k + chunksize // 2]`` folds to one element.  An access the lowering meets in
another form (an index that does not fold, a lane space other than the thread view's) raises
``HeldMisread``: the kernel is lowered again without that array held (emit.lower_kernel).
"""

from __future__ import annotations

import ast
import math

from .. import ir
from ..ir import INT32
from ..ir.exprs import mentions, static
from ..passes.held_locals import NOTHING, held_locals
from . import pyast as P
from .local_loops import TrailingAxis
from .values import Lowered, Lowerer, RegBuf, Tile, literal_value


class HeldMisread(Exception):
    """An access to a held array that the analysis did not foresee: lower again without holding it."""

    def __init__(self, buffer: ir.Buffer):
        super().__init__(buffer.name)
        self.buffer = buffer


def open_held(lw: Lowerer, kernel: ir.Kernel) -> None:
    """Which arrays of a thread-view kernel are held by element."""
    lw.held = held_locals(kernel, lw.not_held) if lw.options.held_locals else NOTHING


def alloc(lw: Lowerer, buf: ir.Buffer) -> bool:
    """One value per element of ``buf``, zero at first (a value overwritten before any read is
    dropped with the other dead assignments); False when ``buf`` is not held."""
    if buf not in lw.held.buffers or lw.scope.lanes is None:
        return False
    lanes = lw.scope.lanes
    dt = P.dtype(lw.storage_dtype(buf.dtype))
    elements = []
    for flat in range(math.prod(buf.shape)):
        name = lw.names.fresh(f"{buf.name}_{flat}")
        lw.assign_to(name, P.call("tl.zeros", P.list_(lanes.padded), dt))
        elements.append(RegBuf(buf, name, tuple(lanes.padded), lanes))
    lw.held_elements[buf] = elements
    return True


def element(lw: Lowerer, buf: ir.Buffer, indices) -> RegBuf:
    """The element of held ``buf`` at ``indices``, which must fold to constants within its extents,
    in the lane space it was allocated in."""
    elements = lw.held_elements[buf]
    if len(indices) != len(buf.shape) or lw.scope.lanes is not elements[0].lanes:
        raise HeldMisread(buf)
    flat = 0
    for index, extent in zip(indices, buf.shape):
        t = lw.ev(index)
        value = literal_value(t.node)
        if t.axes or type(value) is not int or not 0 <= value < extent:
            raise HeldMisread(buf)
        flat = flat * extent + value
    return elements[flat]


def unrolls(lw: Lowerer, s: ir.For) -> bool:
    return id(s) in lw.held.unrolled


def unroll(lw: Lowerer, s: ir.For, store_rule) -> None:
    """``s`` one iteration after another, its variable a constant in each; a loop that only moves
    a run of elements to or from memory as one tile (``copy_as_tile``).  ``store_rule`` lowers an
    ``ir.Store``."""
    if copy_as_tile(lw, s, store_rule):
        return
    bounds = []
    for e in (s.start, s.stop, s.step):
        value = literal_value(lw.ev(e).node)
        if type(value) is not int:
            raise HeldMisread(next(iter(lw.held.buffers)))
        bounds.append(value)
    for v in range(*bounds):
        lw.scope.env[s.var] = Tile(P.const(v), INT32)
        lw.scope.ranges.set(s.var, v, v)
        first = len(lw.out)
        lw.lower_stmts(s.body)
        if v != bounds[0]:  # the source lines were quoted above the first iteration's statements
            for st in lw.out[first:]:
                st.t2t_repeat = True


def binds_constant(lw: Lowerer, s: ir.Let, value: Tile) -> bool:
    """A let of ``static_lets`` whose value folded to an int: bound to it, nothing emitted."""
    if s.var not in lw.held.static_lets or type(literal_value(value.node)) is not int:
        return False
    lw.scope.env[s.var] = value
    lw.scope.ranges.set(s.var, value.node.value, value.node.value)
    return True


def touched_in(lw: Lowerer, body) -> bool:
    """Whether statements of ``body`` read or write a held array (a loop that does stays a loop
    rather than become a tile axis, which would read the elements in another lane space)."""
    if not lw.held_elements:
        return False
    for s in ir.walk(body):
        if isinstance(s, ir.Store) and s.buffer in lw.held_elements:
            return True
        if any(load.buffer in lw.held_elements for load in ir.loads_in(s)):
            return True
    return False


# ------------------------------------------------------------------ runs of elements as one tile
def copy_as_tile(lw: Lowerer, s: ir.For, store_rule) -> bool:
    """``for i in T.vectorized(n): a[c + i] = <value>`` or ``<target> = a[c + i]`` over held ``a``
    (``c`` a constant, n a power of two, one store the body): the loop variable a trailing lane axis,
    as codegen/local_loops.py lowers it for a tile, and the run of n elements split from the value's
    tile / joined into one.  One vector load or store, not n scalar ones (Triton's coalescing pass
    also takes time quadratic in the memory operations of a kernel whose values all depend on one
    another: 770 scalar ones took it three minutes)."""
    n = static(s.stop)
    if static(s.start) != 0 or static(s.step) != 1 or n is None or n < 2 or n & (n - 1):
        return False
    if len(s.body) != 1 or not isinstance(s.body[0], ir.Store) or ir.loop_exits(s.body):
        return False
    st = s.body[0]
    lanes = lw.scope.lanes
    if st.buffer in lw.held_elements:  # a run of elements written
        run = _run(lw, s.var, st.buffer, st.indices, n)
        if run is None or _reads_held(lw, st.value) or any(mentions(i, s.var) for i in st.indices[:-1]):
            return False
        mask = lw.lane_mask(frozenset()) if lw.scope.conds else None
        with TrailingAxis(lw, s) as axis:
            value = lw.cast(lw.ev(st.value), st.buffer.dtype)
            full = frozenset(range(axis.rank + 1))
            node = value.node if value.axes == full else lw.broadcast(value, [*lanes.padded, axis.padded])
            tile = lw.assign(f"{st.buffer.name}_run", node)
        for rb, part in zip(run, _split(lw, tile, list(lanes.padded), n)):
            lw.assign_whole(rb, Tile(part, st.buffer.dtype, frozenset(range(lanes.rank))), mask)
        return True
    value = st.value.value if isinstance(st.value, ir.Cast) else st.value
    if not (isinstance(value, ir.Load) and value.buffer in lw.held_elements):
        return False
    run = _run(lw, s.var, value.buffer, value.indices, n)
    if run is None or any(_reads_held(lw, i) for i in st.indices):
        return False
    joined = _join(lw, [P.name(rb.name) for rb in run], list(lanes.padded))
    tile = lw.assign(f"{value.buffer.name}_run", joined)
    read = Lowered(Tile(P.name(tile), value.buffer.dtype, frozenset(range(lanes.rank + 1))))
    stored = ir.Cast(read, st.value.dtype) if isinstance(st.value, ir.Cast) else read
    with TrailingAxis(lw, s):
        store_rule(lw, ir.Store(st.loc, st.buffer, st.indices, stored))
    return True


def _run(lw: Lowerer, var: ir.Var, buf: ir.Buffer, indices, n: int) -> list | None:
    """The elements ``buf[c + var]`` for var = 0 ... n - 1 (``c`` folding to a constant), or None."""
    if len(indices) != 1 or len(buf.shape) != 1:
        return None
    index = indices[0]
    if isinstance(index, ir.VarRef) and index.var is var:
        start = 0
    elif isinstance(index, ir.BinOp) and index.op == "+" and isinstance(index.rhs, ir.VarRef) and index.rhs.var is var:
        if mentions(index.lhs, var):
            return None
        start = literal_value(lw.ev(index.lhs).node)
    else:
        return None
    elements = lw.held_elements[buf]
    if type(start) is not int or start < 0 or start + n > len(elements):
        return None
    return elements[start : start + n]


def _reads_held(lw: Lowerer, e) -> bool:
    return any(isinstance(sub, ir.Load) and sub.buffer in lw.held_elements for sub in ir.iter_expr_tree(e))


def _split(lw: Lowerer, tile: str, lanes: list, n: int) -> list:
    """The n values along the last axis of ``tile`` (shape ``lanes + [n]``), in order: ``tl.split``
    halves the even and odd positions, recursively."""
    out = [None] * n

    def go(node: ast.expr, positions: list) -> None:
        m = len(positions)
        if m == 1:
            out[positions[0]] = node
            return
        pair = node if m == 2 else P.call("tl.reshape", node, P.tuple_(lanes + [m // 2, 2]))
        names = [lw.names.fresh(f"{tile}_{'even' if k == 0 else 'odd'}") for k in range(2)]
        lw.emit(
            ast.Assign([ast.Tuple([P.store_name(x) for x in names], ast.Store())], P.call("tl.split", pair), lineno=0)
        )
        go(P.name(names[0]), positions[0::2])
        go(P.name(names[1]), positions[1::2])

    go(P.name(tile), list(range(n)))
    return out


def _join(lw: Lowerer, values: list, lanes: list) -> ast.expr:
    """``values`` (each of shape ``lanes``) as one tile ``lanes + [len(values)]``: the inverse of ``_split``."""
    m = len(values)
    if m == 1:
        return values[0]
    even, odd = _join(lw, values[0::2], lanes), _join(lw, values[1::2], lanes)
    pair = P.call("tl.join", even, odd)
    return pair if m == 2 else P.call("tl.reshape", pair, P.tuple_(lanes + [m]))
