"""TileLang's vector dtypes (``T.float16x2``, ``T.int8x4``, ``T.float32x8`` ...) in a kernel.

Triton has no vector element types (it vectorizes tiles itself), so a vector is taken apart where
it is written: a vector value is a ``packed.Vector`` in the binder, one scalar expression per lane,
and a buffer of a vector dtype is a buffer of its element dtype with a trailing lane axis
(``T.alloc_fragment((n,), T.float16x2)`` holds ``(n, 2)`` float16).  So every stage after the
binder sees only scalars and ordinary buffers:

* ``T.float16x2(a, b)`` packs values (each cast to the element dtype, as TileLang's ``Shuffle``
  of them has it); ``T.float16x2(x)``, ``T.Broadcast(x, n)`` repeat one; ``T.Ramp(base, stride, n)``
  counts; ``T.extract_lane(v, k)`` is lane k; ``T.cast`` / ``T.Cast`` convert lane by lane;
  arithmetic, comparisons and ``-v`` act lane by lane, a scalar operand on every lane.
* ``x[T.Ramp(base, 1, n)]`` of a buffer of scalars is the vector of those elements (and can be
  assigned one).
* ``buf[i]`` of a vector buffer is the vector at ``i`` (its lanes ``buf[i, 0..n-1]``); storing a
  vector (or a scalar: every lane) there writes the lanes; a slice ``buf[i:j]`` is a region with
  all lanes; a ``T.alloc_var`` of a vector dtype is a one-element vector buffer read and assigned
  by its name.  Tile ops (``T.copy``, ``T.fill``, ...) move whole buffers, lanes included.

A global tensor of a vector dtype (a ``T.Tensor`` parameter, ``T.empty``) is laid out the same way:
a tensor of the element dtype with a trailing lane axis (torch has no vector dtypes; this is the
memory of TileLang's vector elements), so ``T.Tensor((M, N), T.float32x2)`` takes a float32 tensor
of shape (M, N, 2)."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .. import ir
from ..errors import TileLangCompileError
from ..ir import BOOL
from ..ir.exprs import as_expr, const_int, ir_key, is_python_value, static
from ..language.dtypes import TypedLiteral, vector_parts
from .packed import Vector, elements, vector_dtype
from .source import shape_text

ALLOCS = {"alloc_shared": ir.SHARED, "alloc_fragment": ir.FRAGMENT, "alloc_local": ir.LOCAL, "alloc_var": ir.LOCAL}


@dataclass(frozen=True)
class VectorBuffer:
    lanes: int
    is_var: bool  # a T.alloc_var: read and assigned by its name


def _buffers(b) -> dict:
    """The binder's vector buffers: Buffer -> VectorBuffer."""
    return b.__dict__.setdefault("vector_buffers", {})


def element_start(value) -> ir.Load | None:
    """``buf[i]`` of a vector buffer read as a vector, as a tile operation's operand: the load of its
    first lane, where the region starts (``T.copy(A[k], S)``); None for any other value."""
    if not isinstance(value, Vector) or not all(isinstance(x, ir.Load) for x in value.lanes):
        return None
    first = value.lanes[0]
    for k, lane in enumerate(value.lanes):
        if lane.buffer is not first.buffer or static(lane.indices[-1]) != k:
            return None
        if [ir_key(i) for i in lane.indices[:-1]] != [ir_key(i) for i in first.indices[:-1]]:
            return None
    return first


def global_layout(dtype, shape: tuple, strides: tuple | None):
    """A global tensor of ``dtype`` as (element dtype, shape, strides, lanes): a vector dtype's lanes
    become a trailing axis (strides in vectors scaled to elements); lanes None for any other dtype."""
    parts = vector_parts(dtype)
    if parts is None:
        return dtype, shape, strides, None
    element, lanes = parts
    if strides is not None:
        strides = (*(ir.BinOp("*", as_expr(s), const_int(lanes), ir.INT32) for s in strides), 1)
    return element, (*shape, lanes), strides, lanes


def register(b, buf: ir.Buffer, lanes: int) -> None:
    """A global tensor of a vector dtype (a parameter, ``T.empty``): ``buf`` holds its lanes as a trailing axis."""
    _buffers(b)[buf] = VectorBuffer(lanes, False)


def info(b, buf) -> VectorBuffer | None:
    return _buffers(b).get(buf) if isinstance(buf, ir.Buffer) else None


def is_vector_var(b, value) -> bool:
    found = info(b, value)
    return found is not None and found.is_var


# ------------------------------------------------------------------------------ values
def lane_value(b, value, dtype, node) -> ir.Expr:
    """``value`` as one lane of element dtype ``dtype``."""
    if isinstance(value, TypedLiteral):
        value = value.value
    if is_python_value(value):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise b.error(f"a {dtype.name} lane cannot hold {value!r}", node)
        return ir.Const(float(value) if dtype.is_float else int(value), dtype)
    if isinstance(value, Vector):
        raise b.error("a vector cannot be one lane of another vector", node)
    expr = as_expr(value, b.loc(node))
    return expr if expr.dtype == dtype else ir.Cast(expr, dtype)


def lane_dtype(value):
    return as_expr(value).dtype


def lanes_of(b, value, count: int, node) -> tuple:
    """The lanes of a vector operand, or a scalar repeated on ``count`` lanes."""
    if isinstance(value, Vector):
        if len(value.lanes) != count:
            raise b.error(f"vectors of {len(value.lanes)} and {count} lanes do not combine", node)
        return value.lanes
    return (value,) * count


def construct(b, dtype, args: list, node) -> Vector:
    """``T.float16x2(a, b)`` (one value per lane) or ``T.float16x2(x)`` (x on every lane)."""
    base, count = vector_dtype(dtype)
    if len(args) not in (1, count):
        raise b.error(f"T.{dtype} takes {count} values (one per lane) or one for every lane, got {len(args)}", node)
    if len(args) == 1 and isinstance(args[0], Vector):
        return cast(b, args[0], dtype, node)
    values = args if len(args) == count else args * count
    return Vector(tuple(lane_value(b, v, base, node) for v in values), base)


def cast(b, value, dtype, node) -> Vector:
    """``T.cast(v, T.float32x2)``: lane by lane (a scalar: on every lane)."""
    target = vector_dtype(dtype)
    if target is None:
        raise b.error(f"a vector of {len(value.lanes)} lanes cannot be cast to the scalar dtype {dtype}; "
                      "take a lane with T.extract_lane(v, k)", node)  # fmt: skip
    base, count = target
    if isinstance(value, (ir.Region, ir.Buffer)):  # T.Cast("float16x2", x[i:i+2]): consecutive elements
        buffer, index = elements(b, value, count, f"a cast to {dtype}", node)
        value = Vector(tuple(ir.Load(buffer, idx) for idx in index), buffer.dtype)
    return Vector(tuple(lane_value(b, x, base, node) for x in lanes_of(b, value, count, node)), base)


def annotation_dtype(b, annotation):
    """The vector dtype a variable annotation names (``v: T.float16x2 = ...``), else None (other
    annotations are documentation, never evaluated into an error)."""
    if not isinstance(annotation, (ast.Attribute, ast.Name, ast.Constant)):
        return None
    try:
        value = b.expr(annotation)
    except TileLangCompileError:
        return None
    return value if vector_dtype(value) is not None else None


def extract_lane(b, value, lane, node) -> ir.Expr:
    """``T.extract_lane(v, k)``: lane ``k`` (a compile-time integer) of vector ``v``."""
    if not isinstance(value, Vector):
        raise b.error("T.extract_lane expects a vector expression (a value of a vector dtype such as "
                      "T.float16x2)", node)  # fmt: skip
    if isinstance(lane, ir.Const):
        lane = lane.value
    if isinstance(lane, bool) or not isinstance(lane, int):
        raise b.error(f"T.extract_lane expects a compile-time integer lane, got {lane!r}", node)
    if not 0 <= lane < len(value.lanes):
        raise b.error(f"lane index {lane} is out of bounds for a vector of {len(value.lanes)} lanes", node)
    return as_expr(value.lanes[lane])


def broadcast(b, value, lanes, node) -> Vector:
    """``T.Broadcast(x, n)``: ``x`` on ``n`` lanes."""
    if isinstance(lanes, bool) or not isinstance(lanes, int) or lanes < 1:
        raise b.error(f"T.Broadcast needs a compile-time lane count, got {lanes!r}", node)
    if isinstance(value, Vector):
        raise b.error("T.Broadcast takes a scalar", node)
    expr = as_expr(value, b.loc(node))
    return Vector((expr,) * lanes, expr.dtype)


def ramp(b, base, stride, lanes, node) -> Vector:
    """``T.Ramp(base, stride, n)``: ``base + k * stride`` for k < n."""
    if isinstance(lanes, bool) or not isinstance(lanes, int) or lanes < 1:
        raise b.error(f"T.Ramp needs a compile-time lane count, got {lanes!r}", node)
    values = []
    for k in range(lanes):
        step = b.binop("*", lambda x, y: x * y, stride, k, node)
        values.append(as_expr(b.binop("+", lambda x, y: x + y, base, step, node), b.loc(node)))
    return Vector(tuple(values), values[0].dtype)


def binop(b, op: str, pyop, x, y, node) -> Vector:
    """``x op y`` with a vector operand: lane by lane."""
    count = len(x.lanes) if isinstance(x, Vector) else len(y.lanes)
    lanes = [
        as_expr(b.binop(op, pyop, p, q, node), b.loc(node))
        for p, q in zip(lanes_of(b, x, count, node), lanes_of(b, y, count, node))
    ]
    return Vector(tuple(lanes), lanes[0].dtype)


def compare(b, op: str, x, y, node) -> Vector:
    """``x < y`` with a vector operand: a bool per lane."""
    count = len(x.lanes) if isinstance(x, Vector) else len(y.lanes)
    lanes = [
        ir.Compare(op, as_expr(p, b.loc(node)), as_expr(q, b.loc(node)), ir.BOOL)
        for p, q in zip(lanes_of(b, x, count, node), lanes_of(b, y, count, node))
    ]
    return Vector(tuple(lanes), ir.BOOL)


def unary(b, op: str, value: Vector) -> Vector:
    lanes = [ir.UnaryOp(op, as_expr(x), x.dtype if op != "not" else ir.BOOL) for x in value.lanes]
    return Vector(tuple(lanes), lanes[0].dtype)


def named(b, value: Vector, name: str, node) -> Vector:
    """A vector assigned to a name: each computed lane bound by a ``Let`` where the assignment
    stands (a later store to a buffer it reads must not change it), as a scalar is."""
    lanes = []
    for x in value.lanes:
        x = as_expr(x, b.loc(node))
        if not isinstance(x, (ir.Const, ir.VarRef)):
            var = ir.Var(b.fresh_name(name), x.dtype, "let")
            b.emit(ir.Let(b.loc(node), var, x))
            x = ir.VarRef(var)
        lanes.append(x)
    return Vector(tuple(lanes), value.dtype)


# ------------------------------------------------------------------------------ buffers
def maybe_alloc(b, name: str, tag: str, args: dict, call):
    """``T.alloc_*`` of a vector dtype (``args``: the call's, bound to its signature): a buffer of
    its element dtype with a trailing lane axis.  None for any other allocation."""
    if tag not in ALLOCS:
        return None
    target = vector_dtype(args.get("dtype"))
    if target is None:
        return None
    base, count = target
    if tag == "alloc_var":
        shape = ()
    else:
        shape = args["shape"]
        shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
        if not all(isinstance(d, int) and d > 0 for d in shape):
            raise b.error(f"{tag} needs a static positive shape, got {shape_text(call, shape)}", call)
    buf = ir.Buffer(b.fresh_name(name), ALLOCS[tag], (*shape, count), b.dtype_arg(base, call), b.loc(call))
    _buffers(b)[buf] = VectorBuffer(count, tag == "alloc_var")
    b.emit(ir.Alloc(buf.loc, buf))
    init = args.get("init") if tag == "alloc_var" else None
    if init is not None and not isinstance(init, str):  # alloc_var(dtype, scope) form: no init
        store(b, element(b, buf, []), init, call)
    return buf


def element(b, buf: ir.Buffer, indices: list) -> Vector:
    """The vector at ``indices`` of vector buffer ``buf``: loads of its lanes."""
    count = _buffers(b)[buf].lanes
    lanes = tuple(ir.Load(buf, (*indices, const_int(k))) for k in range(count))
    return Vector(lanes, buf.dtype)


def subscript(b, buf: ir.Buffer, starts: list, extents: list, sliced: bool, node):
    """``buf[...]`` of a vector buffer, indexed by its dims without the lane axis."""
    if not sliced:
        return element(b, buf, starts)
    count = _buffers(b)[buf].lanes
    return ir.Region(buf, (*starts, const_int(0)), (*extents, count))


def gather(b, buf: ir.Buffer, indices: list, sliced: bool, node) -> Vector:
    """``buf[T.Ramp(0, 1, 4)]``: a vector index picks one element per lane."""
    if sliced or info(b, buf) is not None:
        raise b.error("a vector index (T.Ramp) indexes a buffer of scalars with one index per dim", node)
    count = next(len(x.lanes) for x in indices if isinstance(x, Vector))
    per_dim = [
        [_wrapped(b, lane, extent, node) for lane in lanes_of(b, x, count, node)] if isinstance(x, Vector)
        else lanes_of(b, x, count, node)
        for x, extent in zip(indices, buf.shape)
    ]  # fmt: skip
    lanes = tuple(ir.Load(buf, tuple(as_expr(d[k]) for d in per_dim)) for k in range(count))
    return Vector(lanes, buf.dtype)


def _wrapped(b, lane, extent, node):
    """A vector index's lane as TileLang's LegalizeNegativeIndex leaves it: a negative lane counts from
    the end of the axis (``extent + lane``), decided per lane at run time when its sign is unknown."""
    lane = as_expr(lane, b.loc(node))
    value = static(lane)
    if value is not None:
        return lane if value >= 0 else as_expr(b.binop("+", lambda x, y: x + y, extent, lane, node), b.loc(node))
    wrapped = as_expr(b.binop("+", lambda x, y: x + y, extent, lane, node), b.loc(node))
    return ir.Select(ir.Compare("<", lane, const_int(0), BOOL), wrapped, lane, lane.dtype)


def store(b, ref: Vector, value, node) -> None:
    """``buf[i] = v`` / ``var = v`` for vector buffer element ``ref`` (its lanes' loads)."""
    targets = ref.lanes
    if not all(isinstance(t, ir.Load) for t in targets):
        raise b.error("only a vector buffer's element can be assigned a vector", node)
    for t, v in zip(targets, lanes_of(b, value, len(targets), node)):
        b.emit(ir.Store(b.loc(node), t.buffer, t.indices, lane_value(b, v, t.buffer.dtype, node)))
