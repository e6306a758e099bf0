"""Binding rules of data movement and buffer views: ``T.copy``, ``T.fill``/``T.clear``,
``T.im2col``, ``T.reshape``/``T.view``/``T.transpose``, ``T.make_tensor``, ``T.match_buffer``.
"""

from __future__ import annotations

import operator

from .. import ir
from ..ir import BOOL, INT32
from ..ir.exprs import as_expr, const_int, is_python_value, static
from ..language.proxy import TensorType
from .regions import extent_of, legalize_pairwise_extents, to_region
from .rules_base import BinderLike, _fill_region, _operand, _product, rule

_ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod}


@rule("copy")
def bind_copy(b: BinderLike, node, args):
    src = _operand(b, args["src"], node, "T.copy source")
    dst = _operand(b, args["dst"], node, "T.copy destination")
    src_ext, dst_ext = extent_of(src), extent_of(dst)
    if src_ext is None and dst_ext is None:
        b.emit(ir.Store(b.loc(node), dst.buffer, dst.indices, ir.Cast(src, dst.buffer.dtype)))
        return None
    if isinstance(src, ir.Buffer) and isinstance(dst, ir.Buffer) and tuple(src.shape) != tuple(dst.shape):
        raise b.error(f"T.copy between whole buffers needs equal shapes: {src.shape} vs {dst.shape}", node)
    src_ext = src_ext if src_ext is not None else [1] * len(dst_ext)
    dst_ext = dst_ext if dst_ext is not None else [1] * len(src_ext)
    src_ext, dst_ext = legalize_pairwise_extents(src_ext, dst_ext)
    src, dst = to_region(src, src_ext), to_region(dst, dst_ext)
    if not _copy_with_run_time_extents(b, src, dst, node):
        b.emit(ir.Copy(b.loc(node), src, dst, disable_tma=args.get("disable_tma") is True))
    return None


def _copy_with_run_time_extents(b: BinderLike, src: ir.Region, dst: ir.Region, node) -> bool:
    """A copy whose extent along an axis is a run-time value on both sides (a loop's tail tile:
    ``T.copy(x[i * bc : i * bc + cur, :], s[:cur, :])`` with ``cur = T.min(bc, n - i * bc)``), bound as
    the T.Parallel TileLang lowers it to: lanes over the most elements the buffers allow (a buffer's
    static extent past a static start), guarded by the extent; a source element outside its buffer
    reads 0, a destination element outside its buffer is not written.  False (nothing emitted) where
    every axis has a static extent on one side, which the tile lowering copies as it is."""
    axes = list(zip(_moving_axes(src), _moving_axes(dst)))
    if len(_moving_axes(src)) != len(_moving_axes(dst)):
        return False  # the tile lowering reports the mismatch
    if all(static(src.extents[a]) is not None or static(dst.extents[d]) is not None for a, d in axes):
        return False
    lanes, guards, extents = [], [], []
    for k, (a, d) in enumerate(axes):
        room = [static(src.extents[a]), static(dst.extents[d]), _room(src, a), _room(dst, d)]
        room = [r for r in room if r is not None]
        if not room:
            raise b.error(f"T.copy: the extent of axis {d} of {dst.buffer.name} is a run-time value and neither "
                          "buffer bounds it; copy into an on-chip buffer of static shape", node)  # fmt: skip
        lane = ir.Var(f"t{k}", INT32, "lane")
        lanes.append(lane)
        extents.append(min(room))
        extent = dst.extents[d] if static(dst.extents[d]) is None else src.extents[a]
        if static(extent) is None or static(extent) < min(room):
            guards.append(ir.Compare("<", ir.VarRef(lane), as_expr(extent), BOOL))

    def at(region, axis_lanes):
        return tuple(
            ir.BinOp("+", as_expr(start), ir.VarRef(axis_lanes[a]), INT32) if a in axis_lanes else start
            for a, start in enumerate(region.starts)
        )

    src_idx = at(src, {a: lane for (a, _), lane in zip(axes, lanes)})
    dst_idx = at(dst, {d: lane for (_, d), lane in zip(axes, lanes)})
    value = ir.Cast(ir.Load(src.buffer, src_idx), dst.buffer.dtype)
    if src.buffer.scope == ir.GLOBAL:
        zero = ir.Cast(const_int(0), dst.buffer.dtype)
        value = ir.Select(_inside(src.buffer, src_idx), value, zero, dst.buffer.dtype)
    if dst.buffer.scope == ir.GLOBAL:
        guards.append(_inside(dst.buffer, dst_idx))
    loc = b.loc(node)
    body = [ir.Store(loc, dst.buffer, dst_idx, value)]
    if guards:
        body = [ir.If(loc, _all(guards), body, [])]
    b.emit(ir.Parallel(loc, lanes, extents, body))
    return True


def _moving_axes(region: ir.Region) -> list:
    return [a for a, e in enumerate(region.extents) if static(e) != 1]


def _room(region: ir.Region, axis: int) -> int | None:
    """The most elements ``region`` can span along ``axis``: its buffer's static extent past a static start."""
    size, start = static(region.buffer.shape[axis]), static(region.starts[axis])
    return None if size is None or start is None else size - start


def _all(conds: list) -> ir.Expr:
    cond = conds[0]
    for c in conds[1:]:
        cond = ir.BinOp("and", cond, c, BOOL)
    return cond


def _inside(buf: ir.Buffer, indices) -> ir.Expr:
    """``indices`` lie inside ``buf``'s shape."""
    return _all([c for i, n in zip(indices, buf.shape)
                 for c in (ir.Compare(">=", as_expr(i), const_int(0), BOOL), ir.Compare("<", as_expr(i), as_expr(n), BOOL))])  # fmt: skip


@rule("fill")
def bind_fill(b: BinderLike, node, args):
    region = _fill_region(b, args["buffer"], node)
    b.emit(ir.Fill(b.loc(node), region, as_expr(args["value"], b.loc(node))))


@rule("clear")
def bind_clear(b: BinderLike, node, args):
    region = _fill_region(b, args["buffer"], node)
    b.emit(ir.Fill(b.loc(node), region, const_int(0)))


@rule("im2col")
def bind_im2col(b: BinderLike, node, args):
    """TileLang's im2col (NHWC image, square kernel), bound as the T.Parallel it means: tile element
    (i, j) is ``img[n, h, w, c]`` of output pixel ``m = nhw_step * block_m + i`` and patch column
    ``k = c_step * block_k + j``, or 0 in the padding."""
    img, col = args["img"], _fill_region(b, args["col"], node)
    if not isinstance(img, ir.Buffer) or img.ndim != 4:
        raise b.error("T.im2col takes an NHWC image tensor (4-D)", node)
    if not col.is_whole() or col.buffer.ndim != 2:
        raise b.error("T.im2col writes a whole 2-D tile", node)
    K, s, d, p = (args[k] for k in ("kernel", "stride", "dilation", "pad"))
    if not all(isinstance(v, int) for v in (K, s, d, p)):
        raise b.error("T.im2col's kernel, stride, dilation and pad must be compile-time ints", node)
    _, H, W, C = img.shape
    block_m, block_k = col.buffer.shape

    def op(o, x, y):
        return b.binop(o, _ARITH[o], x, y, node)

    OH = op("+", op("//", op("-", op("-", op("+", H, 2 * p), (K - 1) * d), 1), s), 1)
    OW = op("+", op("//", op("-", op("-", op("+", W, 2 * p), (K - 1) * d), 1), s), 1)
    i, j = ir.Var("i", INT32, "lane"), ir.Var("j", INT32, "lane")
    m = op("+", op("*", args["nhw_step"], block_m), ir.VarRef(i))
    k = op("+", op("*", args["c_step"], block_k), ir.VarRef(j))
    n, oh, ow = op("//", m, op("*", OH, OW)), op("//", op("%", m, op("*", OH, OW)), OW), op("%", m, OW)
    kh, kw, c = op("//", k, K * C), op("%", op("//", k, C), K), op("%", k, C)
    h = op("-", op("+", op("*", oh, s), op("*", kh, d)), p)
    w = op("-", op("+", op("*", ow, s), op("*", kw, d)), p)
    inside = [ir.Compare(cmp, as_expr(x), as_expr(lim), BOOL) for x in (h, w) for cmp, lim in ((">=", 0),)]
    inside += [ir.Compare("<", as_expr(h), as_expr(H), BOOL), ir.Compare("<", as_expr(w), as_expr(W), BOOL)]
    cond = inside[0]
    for part in inside[1:]:
        cond = ir.BinOp("and", cond, part, BOOL)
    value = b.select(cond, ir.Load(img, tuple(as_expr(x) for x in (n, h, w, c))), 0)
    store = ir.Store(b.loc(node), col.buffer, (ir.VarRef(i), ir.VarRef(j)), value)
    b.emit(ir.Parallel(b.loc(node), [i, j], [block_m, block_k], [store]))


@rule("reshape")
def bind_reshape(b: BinderLike, node, args):
    src, shape = args["src"], args["shape"]
    shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
    if isinstance(src, ir.Buffer) and src.scope in (ir.SHARED, ir.FRAGMENT):
        count = 1
        for d in src.shape:
            count *= d
        new = 1
        for d in shape:
            new *= d if isinstance(d, int) else 0
        if new != count:
            raise b.error(f"T.reshape of '{src.name}' {tuple(src.shape)} to {shape} changes its size", node)
        view = ir.Buffer(b.fresh_name(f"{src.name}_view"), src.scope, shape, src.dtype, b.loc(node))
        view.alias_of = src
        b.emit(ir.Alloc(b.loc(node), view))
        return view
    if not isinstance(src, ir.Buffer) or src.scope != ir.GLOBAL:
        raise b.error("T.reshape takes a global tensor or a shared/fragment buffer", node)
    if all(isinstance(d, int) for d in (*src.shape, *shape)) and _product(src.shape) != _product(shape):
        # the view would reach past the tensor's storage
        raise b.error(f"T.reshape of '{src.name}' {tuple(src.shape)} to {shape} changes its size", node)
    view = b.global_buffer(
        b.fresh_name(f"{src.name}_view"),
        TensorType(tuple(shape) if isinstance(shape, (list, tuple)) else (shape,), src.dtype),
        b.loc(node),
    )
    view.alias_of = src
    return view


@rule("view")
def bind_view(b: BinderLike, node, args):
    """``T.view(src, shape, dtype)``: ``src``'s memory seen with another shape and/or dtype of the same
    total bits (a reshape, or a bit reinterpretation of the same bytes)."""
    src = args["src"]
    if not isinstance(src, ir.Buffer):
        raise b.error("T.view takes a global tensor or a shared/fragment buffer", node)
    shape = args["shape"] if args["shape"] is not None else src.shape
    shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
    dtype = b.dtype_arg(args["dtype"], node) if args["dtype"] is not None else src.dtype
    if dtype.bits < 8 or src.dtype.bits < 8:
        raise b.error(f"T.view between {src.dtype.name} and {dtype.name}: sub-byte dtypes are not supported", node)
    if all(isinstance(d, int) for d in (*src.shape, *shape)):
        if _product(src.shape) * src.dtype.bits != _product(shape) * dtype.bits:
            raise b.error(
                f"T.view of '{src.name}' {tuple(src.shape)} {src.dtype.name} as {shape} {dtype.name} "
                "changes its size in bits",
                node,
            )
    if src.scope in (ir.SHARED, ir.FRAGMENT):
        if not all(isinstance(d, int) for d in shape):
            raise b.error("T.view of a shared/fragment buffer needs a constant shape", node)
        view = ir.Buffer(b.fresh_name(f"{src.name}_view"), src.scope, shape, dtype, b.loc(node))
        view.alias_of = src
        b.emit(ir.Alloc(b.loc(node), view))
        return view
    if src.scope != ir.GLOBAL:
        raise b.error("T.view takes a global tensor or a shared/fragment buffer", node)
    view = b.global_buffer(b.fresh_name(f"{src.name}_view"), TensorType(shape, dtype), b.loc(node))
    view.alias_of = src
    return view


@rule("make_tensor", "make_tensor_from_addr")
def bind_make_tensor(b: BinderLike, node, args):
    return make_tensor(b, node, args, "tensor")


def make_tensor(b: BinderLike, node, args, name: str) -> ir.Buffer:
    """``T.make_tensor(ptr, shape, dtype, strides)``: a global tensor over a raw address (a ``T.ptr``
    parameter, or an int64 address read in the kernel: ``T.make_tensor(ptrs[g], ...)``).  Inside a
    T.Kernel the address is taken where the call stands; before the kernels, at the top of each."""
    address = args["ptr"] if "ptr" in args else args["addr"]
    what = f"T.{'make_tensor' if 'ptr' in args else 'make_tensor_from_addr'}"
    if isinstance(address, (ir.Buffer, ir.Region)):
        tensor = address.buffer if isinstance(address, ir.Region) else address
        raise b.error(
            f"{what} takes a T.ptr parameter or an int64 address, got the tensor '{tensor.name}'", node,
            "index a table of pointers (ptrs[g]), or view a tensor with T.Tensor(shape, dtype, A.data)",
        )  # fmt: skip
    if not isinstance(address, ir.Expr) or is_python_value(address):
        raise b.error(
            f"{what} takes a T.ptr parameter or an int64 address, got {address!r}", node,
            "declare a parameter 'p: T.ptr' and pass the tensor (or tensor.data_ptr()) when calling the kernel",
        )  # fmt: skip
    if not (address.dtype.kind == "ptr" or (address.dtype.is_int and address.dtype.bits == 64)):
        raise b.error(f"{what}: an address is 64 bits wide, got a value of dtype {address.dtype.name}", node)
    if args.get("storage_scope", "global") != "global":
        raise b.error(f"{what} makes global tensors, got storage_scope={args['storage_scope']!r}", node)
    shape, strides = args["shape"], args["strides"]
    shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
    if strides is not None:
        strides = tuple(strides) if isinstance(strides, (list, tuple)) else (strides,)
        if len(strides) != len(shape):
            raise b.error(f"{what}: {len(strides)} strides for a {len(shape)}-D shape", node)
    buf = b.global_buffer(b.fresh_name(name), TensorType(shape, b.dtype_arg(args["dtype"], node), strides), b.loc(node))
    buf.address = address
    if b.kernel is None:
        b.outer_tensors.append(buf)
    else:
        b.emit(ir.MakeTensor(b.loc(node), buf))
    return buf


@rule("match_buffer")
def bind_match_buffer(b: BinderLike, node, args):
    """``A = T.match_buffer(a, shape, dtype)`` on a ``T.handle`` parameter ``a`` (TileLang's buffer
    map): ``a`` becomes a tensor parameter of that shape and dtype, checked at every call."""
    param = args["param"]
    var = param.var if isinstance(param, ir.VarRef) else None
    if b.kernel is not None or b.eager or var is None or var.dtype.kind != "ptr" or var not in b.params:
        raise b.error(
            "T.match_buffer binds a T.handle parameter of a @T.prim_func to a tensor, before the T.Kernel blocks",
            node, "declare the parameter as T.Tensor(shape, dtype) instead, or view memory with T.make_tensor",
        )  # fmt: skip
    buf = b.global_buffer(var.name, matched_type(b, var.name, args, node), b.loc(node))
    b.params[b.params.index(var)] = buf
    b.bind_name(var.name, buf)  # the handle's name now is the tensor too
    return buf


def matched_type(b: BinderLike, name: str, args: dict, node) -> TensorType:
    """The tensor type ``T.match_buffer(name, shape, dtype, strides=...)`` declares (a @T.prim_func's
    T.handle parameter here; an eager kernel's ``T.ptr`` parameter in eager_bind.py)."""
    if args["shape"] is None:
        raise b.error(f"T.match_buffer of parameter '{name}' needs its shape", node)
    if args["elem_offset"] not in (None, 0) or args["data"] is not None or args["scope"] != "global":
        raise b.error("T.match_buffer with data=, elem_offset= or a scope other than global is not supported", node)
    shape, strides = args["shape"], args["strides"]
    shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
    strides = None if strides is None else tuple(strides) if isinstance(strides, (list, tuple)) else (strides,)
    return TensorType(shape, b.dtype_arg(args["dtype"], node), strides)


@rule("transpose")
def bind_transpose(b: BinderLike, node, args):
    """``T.transpose(src, dst)``: the last two axes swapped, ``dst[..., j, i] = src[..., i, j]``, over
    buffers or regions of any rank >= 2, bound as the T.Parallel TileLang lowers it to: one lane axis
    per source axis of extent > 1; a source element outside its buffer reads 0, a destination element
    outside its buffer is not written."""
    src, dst = _fill_region(b, args["src"], node), _fill_region(b, args["dst"], node)
    rank = len(src.extents)
    if rank < 2 or len(dst.extents) != rank:
        raise b.error(f"T.transpose takes a source and a destination of one rank >= 2, got {rank} and "
                      f"{len(dst.extents)}", node)  # fmt: skip
    extents = [static(e) for e in src.extents]
    if any(e is None for e in extents):
        raise b.error("T.transpose needs static source extents", node)
    lanes = {a: ir.Var(f"t{a}", INT32, "lane") for a, e in enumerate(extents) if e != 1}

    def at(start, axis):  # the element of an axis: its start, plus the source axis's lane
        return start if axis not in lanes else ir.BinOp("+", as_expr(start), ir.VarRef(lanes[axis]), INT32)

    swap = {rank - 2: rank - 1, rank - 1: rank - 2}
    src_idx = tuple(at(src.starts[a], a) for a in range(rank))
    dst_idx = tuple(at(dst.starts[k], swap.get(k, k)) for k in range(rank))
    value = ir.Cast(ir.Load(src.buffer, src_idx), dst.buffer.dtype)
    value = ir.Select(_inside(src.buffer, src_idx), value, ir.Cast(const_int(0), dst.buffer.dtype), dst.buffer.dtype)
    loc = b.loc(node)
    body = [ir.If(loc, _inside(dst.buffer, dst_idx), [ir.Store(loc, dst.buffer, dst_idx, value)], [])]
    if not lanes:  # every extent 1: one element
        lanes = {None: ir.Var("t", INT32, "lane")}
    b.emit(ir.Parallel(loc, list(lanes.values()), [e for e in extents if e != 1] or [1], body))
