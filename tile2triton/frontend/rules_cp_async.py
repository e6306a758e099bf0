"""Binder rules for hand-written cp.async copies: ``T.ptx_cp_async(T.access_ptr(dst[...], "w", n),
T.access_ptr(src[...], "r", n), n)`` and ``T.cp_async_barrier_noinc(bar)``.

A cp.async copies ``n`` consecutive elements per thread and completes later; the thread's
``T.cp_async_barrier_noinc`` arrives at a barrier once its copies complete.  Statements run one
after another here, so the copy is the element loop it performs, complete when it is issued,
and the barrier sees the thread's arrive (frontend/warp_sections.py orders it).  Registered into
``rules.RULES``; imported for that by bind.py.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

from .. import ir
from ..errors import LoweringCheckError
from ..ir import INT32
from ..ir.exprs import as_expr, const_int
from .rules_base import RULES, BinderLike, rule
from .rules_sync import _barrier


@dataclass
class AccessPtr:
    """``T.access_ptr(base, access_type, extent)``: where a raw access starts."""

    buffer: ir.Buffer
    indices: tuple
    extent: object  # elements the access covers (None: not given)


@rule("access_ptr")
def bind_access_ptr(b: BinderLike, node, args):
    base = args["base"]
    if isinstance(base, ir.Load):
        buffer, indices = base.buffer, tuple(base.indices)
    elif isinstance(base, ir.Region):
        buffer, indices = base.buffer, tuple(base.starts)
    elif isinstance(base, ir.Buffer):
        buffer, indices = base, tuple(const_int(0) for _ in base.shape)
    else:
        raise b.error("T.access_ptr takes a buffer, a region or one element (buf[i, j])", node)
    offset = args["offset"]
    if not (isinstance(offset, int) and offset == 0):  # elements past the base, along the last dim
        indices = (*indices[:-1], as_expr(b.binop("+", operator.add, indices[-1], offset, node)))
    extents = args["extents"]
    extent = extents[0] if extents else args["extent"]
    return AccessPtr(buffer, indices, extent)


@rule("tvm_access_ptr")
def bind_tvm_access_ptr(b: BinderLike, node, args):
    """TVM's ``T.tvm_access_ptr(T.type_annotation(dt), buf.data, offset, extent, rw_mask)``: the flat
    element ``offset`` of ``buf`` (row-major), as the indices ``T.access_ptr`` would take."""
    buffer = getattr(args["data"], "buffer", None)
    if not isinstance(buffer, ir.Buffer):
        raise b.error("T.tvm_access_ptr takes a buffer's memory, buf.data, as its second operand", node)
    indices, rest = [], as_expr(args["offset"])
    for d in reversed(range(buffer.ndim)):
        extent = buffer.shape[d]
        if d == 0:
            indices.append(rest)
        else:
            indices.append(as_expr(b.binop("%", operator.mod, rest, extent, node)))
            rest = as_expr(b.binop("//", operator.floordiv, rest, extent, node))
    return AccessPtr(buffer, tuple(reversed(indices)), args["extent"])


@rule("ptx_cp_async")
def bind_ptx_cp_async(b: BinderLike, node, args):
    dst, src, count = args["dst_access_ptr"], args["src_access_ptr"], args["num_elems"]
    if not isinstance(dst, AccessPtr) or not isinstance(src, AccessPtr):
        raise b.error("T.ptx_cp_async takes T.access_ptr(...) destination and source", node)
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
        raise b.error(f"T.ptx_cp_async: num_elems must be a positive compile-time int, got {count!r}", node)
    if dst.buffer.dtype != src.buffer.dtype:
        raise b.error(
            f"T.ptx_cp_async copies bytes: source dtype {src.buffer.dtype.name} and destination dtype "
            f"{dst.buffer.dtype.name} must match",
            node,
        )
    loc = b.loc(node)
    k = ir.Var(b.fresh_name("v"), INT32, "loop")

    def at(ptr: AccessPtr) -> tuple:
        if count == 1:
            return ptr.indices
        return (*ptr.indices[:-1], as_expr(b.binop("+", operator.add, ptr.indices[-1], ir.VarRef(k), node)))

    value = ir.Load(src.buffer, at(src), loc)
    predicate = args["predicate"]
    if predicate is not None:  # a false predicate zero-fills the destination, as cp.async does
        value = ir.Select(as_expr(predicate, loc), value, ir.Const(0, value.dtype), value.dtype)
    store = ir.Store(loc, dst.buffer, at(dst), value)
    if count == 1:
        b.emit(store)
    else:
        b.emit(ir.For(loc, k, const_int(0), const_int(count), const_int(1), "vectorized", [store], None))


@rule("cp_async_barrier_noinc")
def bind_cp_async_barrier_noinc(b: BinderLike, node, args):
    b.barrier_event("arrive", _barrier(b, args["barrier"], node), None, node, "cp_async_barrier_noinc")


@rule("async_copy")
def bind_async_copy(b: BinderLike, node, args):
    """``T.async_copy(src, dst)``: TileLang's cp.async copy of a global region into shared memory, not
    waited for.  The copy is complete when issued here (a ``T.copy``; Triton pipelines loads on its own),
    which is one of the executions the program allows, and every read after it sees the data."""
    src, dst = args["src"], args["dst"]
    scopes = [getattr(x.buffer if isinstance(x, (ir.Region, ir.Load)) else x, "scope", None) for x in (src, dst)]
    if scopes != [ir.GLOBAL, ir.SHARED]:
        raise LoweringCheckError("T.async_copy only supports global->shared/shared.dyn copies (cp.async)", b.loc(node))
    return RULES["copy"](b, node, {"src": src, "dst": dst})


@rule("ptx_commit_group", "ptx_wait_group")
def bind_cp_async_group(b: BinderLike, node, args):
    """cp.async groups: every copy is complete when issued, so there is nothing to commit or wait for."""
    return None
