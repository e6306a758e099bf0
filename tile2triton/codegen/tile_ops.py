"""Lowering rules of tile operations: ``T.copy``, ``T.fill``, ``T.gemm``.  A tile op is lowered as
TileLang's own SIMT lowering does: a T.Parallel over its extents, so one set of element rules
serves every operand combination (the element-space helpers here serve reductions and atomics too).
"""

from __future__ import annotations

import ast

from .. import ir
from ..ir import FLOAT32, INT32
from ..ir.exprs import const_int, static
from ..language.dtypes import DTYPES
from ..passes.analysis import zero_padded
from . import pyast as P
from .descriptors import descriptor_load
from .rules import close_lanes, lower_store, open_lanes
from .rules_base import lowers
from .threads import block_level, in_thread_view
from .values import Lowered, Lowerer, RegBuf, is_literal, next_pow2


# ------------------------------------------------------------------------------ tile operations
def _scope_rank(buf: ir.Buffer) -> int:
    return {ir.GLOBAL: 0, ir.SHARED: 1, ir.FRAGMENT: 2, ir.LOCAL: 2, ir.VAR: 2}[buf.scope]


def _non_unit(region: ir.Region) -> list[int]:
    return [d for d, e in enumerate(region.extents) if static(e) != 1]


def _element_space(lw: Lowerer, regions: list[ir.Region], base: ir.Region, what: str, kind: str = "lane"):
    """Synthetic T.Parallel variables (``kind`` "loop": loop variables) spanning ``base``'s
    non-unit extents, and each region's element indices in terms of them (unit dims keep their start)."""
    dims = _non_unit(base)
    extents = []
    for d in dims:
        e = static(base.extents[d])
        if e is None:
            raise lw.error(f"{what} needs static tile extents; {base.buffer.name} has a run-time extent")
        extents.append(e)
    vars_ = [ir.Var(f"i{k}", INT32, kind) for k in range(len(dims))]
    indices = []
    for r in regions:
        own = _non_unit(r)
        if len(own) != len(dims):
            raise lw.error(
                f"{what}: the regions of {r.buffer.name} and {base.buffer.name} have different numbers of non-unit "
                f"dimensions ({_fmt(r)} vs {_fmt(base)})"
            )
        idx = list(r.starts)
        for k, d in enumerate(own):
            start = r.starts[d]
            lane = ir.VarRef(vars_[k])
            idx[d] = lane if static(start) == 0 else ir.BinOp("+", start, lane, INT32)
        indices.append(tuple(idx))
    return vars_, extents, indices


def _fmt(r: ir.Region) -> str:
    return "[" + ", ".join(str(static(e)) if static(e) is not None else "?" for e in r.extents) + "]"


def _check_collective(lw: Lowerer, buffers, what: str) -> None:
    if lw.scope.lanes is None:
        return
    for b in buffers:
        rb = lw.regs.get(b)
        if rb is None or rb.lanes is not lw.scope.lanes:
            raise lw.error(
                f"{what} is a collective tile operation and cannot stand inside T.Parallel "
                f"(only buffers allocated inside the same T.Parallel body may be filled there)"
            )


def _elementwise(lw: Lowerer, regions, base, what, body_fn) -> None:
    vars_, extents, indices = _element_space(lw, regions, base, what)
    if not vars_:  # every extent is 1: a single element
        body_fn(indices)
        return
    space = open_lanes(lw, vars_, extents, None)
    try:
        body_fn(indices)
    finally:
        close_lanes(lw, space)


@lowers(ir.Copy)
def lower_copy(lw: Lowerer, s: ir.Copy) -> None:
    if _per_thread_copy(lw, s):
        # TileLang copies to or from a thread's local buffer (or at thread-dependent places) in each
        # thread, as a serial loop over the region: the same loop nest here, in the thread view
        vars_, extents, (src_idx, dst_idx) = _element_space(lw, [s.src, s.dst], _copy_base(s), "T.copy", "loop")
        value = ir.Cast(ir.Load(s.src.buffer, src_idx), s.dst.buffer.dtype)
        loop = [ir.Store(s.loc, s.dst.buffer, dst_idx, value)]
        for var, extent in reversed(list(zip(vars_, extents))):
            loop = [ir.For(s.loc, var, const_int(0), const_int(extent), const_int(1), "serial", loop)]
        rb = lw.regs.get(s.dst.buffer)
        if rb is not None and s.dst.is_whole() and not lw.scope.conds and s.dst.buffer not in lw.scratch.views:
            # T.alloc_local leaves a buffer that is wholly written first undefined (under a per-thread
            # `if` it is defined); the loop below writes it an element at a time from a start value
            lw.assign_to(rb.name, P.call("tl.zeros", P.list_(rb.shape), P.dtype(lw.storage_dtype(rb.buffer.dtype))))
        lw.lower_stmts(loop)
        return
    with block_level(lw, "a tile operation"):
        _lower_copy(lw, s)


def _per_thread_copy(lw: Lowerer, s: ir.Copy) -> bool:
    if not in_thread_view(lw):
        return False
    for region in (s.src, s.dst):
        rb = lw.regs.get(region.buffer)
        if rb is not None and rb.lanes is lw.scope.lanes:  # a thread-private local
            return True
        if any(lw.ev(start).axes for start in region.starts):  # A[tx, ...]: each thread's own piece
            return True
    return False


def _copy_base(s: ir.Copy) -> ir.Region:
    return s.dst if _scope_rank(s.dst.buffer) > _scope_rank(s.src.buffer) else s.src


def _lower_copy(lw: Lowerer, s: ir.Copy) -> None:
    src, dst = s.src, s.dst
    _check_collective(lw, [src.buffer, dst.buffer], "T.copy")
    base = dst if _scope_rank(dst.buffer) > _scope_rank(src.buffer) else src
    box = descriptor_load(lw, src, dst)

    def body(indices):
        src_idx, dst_idx = indices
        value = box if box is not None else lw.ev(ir.Load(src.buffer, src_idx))
        lower_store(lw, ir.Store(s.loc, dst.buffer, dst_idx, ir.Cast(Lowered(value), dst.buffer.dtype)))

    _elementwise(lw, [src, dst], base, "T.copy", body)


@lowers(ir.Fill)
def lower_fill(lw: Lowerer, s: ir.Fill) -> None:
    rb = lw.regs.get(s.dst.buffer)
    if in_thread_view(lw) and (rb is None or rb.lanes is not lw.scope.lanes):
        with block_level(lw, "T.fill of a block-level buffer"):  # not a per-thread local: the whole block
            _lower_fill(lw, s)
        return
    _lower_fill(lw, s)


def _lower_fill(lw: Lowerer, s: ir.Fill) -> None:
    region = s.dst
    buf = region.buffer
    _check_collective(lw, [buf], "T.fill / T.clear")
    value = lw.ev(s.value)
    if buf.scope != ir.GLOBAL and region.is_whole() and not value.axes:
        rb = lw.reg(buf)
        dt = P.dtype(lw.storage_dtype(buf.dtype))
        if isinstance(value.node, ast.Constant) and value.node.value == 0:
            node = P.call("tl.zeros", P.list_(rb.shape), dt) if rb.shape else P.call("tl.full", P.list_([]), 0, dt)
        elif is_literal(value):
            node = P.call("tl.full", P.list_(rb.shape), lw.cast(value, buf.dtype).node, dt)
        else:  # a run-time value (``T.reducer_init(acc, running_max[0])``): tl.full takes constants only
            cast = lw.cast(value, buf.dtype)
            node = lw.broadcast(cast, rb.shape) if rb.shape else cast.node
        if lw.scope.conds:
            node = P.call("tl.where", lw.lane_mask(frozenset()), node, P.name(rb.name))
        lw.assign_to(rb.name, node)
        return

    def body(indices):
        lower_store(lw, ir.Store(s.loc, buf, indices[0], s.value))

    _elementwise(lw, [region], region, "T.fill", body)


def _whole_value(lw: Lowerer, region: ir.Region, what: str) -> tuple[ast.expr, list[int], RegBuf]:
    """A register buffer used whole by a tile op: its tile, with unit dims dropped."""
    buf = region.buffer
    if buf.scope == ir.GLOBAL:
        raise lw.error(f"{what} operands must be shared or fragment buffers, not the global tensor '{buf.name}'")
    if not region.is_whole():
        raise lw.error(f"{what} on a sub-region of '{buf.name}' is not supported yet; use the whole buffer")
    rb = lw.reg(buf)
    if rb.lanes is not None:
        raise lw.error(f"{what} cannot use the per-iteration local '{buf.name}'")
    dims = [d for d in range(buf.ndim) if buf.shape[d] != 1]
    node = P.name(rb.name)
    if rb.shape and len(dims) != buf.ndim:
        node = P.call("tl.reshape", node, P.tuple_([rb.shape[d] for d in dims]))
    return node, dims, rb


@lowers(ir.Gemm)
def lower_gemm(lw: Lowerer, s: ir.Gemm) -> None:
    with block_level(lw, "a tile operation"):
        _lower_gemm(lw, s)


def _lower_gemm(lw: Lowerer, s: ir.Gemm) -> None:
    _check_collective(lw, [s.a.buffer, s.b.buffer, s.c.buffer], "T.gemm")
    a, a_dims, ra = _whole_value(lw, s.a, "T.gemm")
    b, b_dims, rbb = _whole_value(lw, s.b, "T.gemm")
    c_buf = s.c.buffer
    rc = lw.reg(c_buf)
    if len(a_dims) != 2 or len(b_dims) != 2 or len([d for d in c_buf.shape if d != 1]) > 2:
        raise lw.error("T.gemm operands must be 2-D tiles (leading unit dims are allowed)")
    a_shape = [s.a.buffer.shape[d] for d in a_dims]
    b_shape = [s.b.buffer.shape[d] for d in b_dims]
    m, k = a_shape[::-1] if s.trans_a else a_shape
    k2, n = b_shape[::-1] if s.trans_b else b_shape
    c_shape = list(c_buf.shape[-2:])
    if k != k2 or [m, n] != c_shape:
        raise lw.error(
            f"T.gemm shapes do not match: A is {'transposed ' if s.trans_a else ''}{a_shape}, "
            f"B is {'transposed ' if s.trans_b else ''}{b_shape}, C is {list(c_buf.shape)}"
        )
    if s.trans_a:
        a = P.call("tl.trans", a)
    if s.trans_b:
        b = P.call("tl.trans", b)
    kp = next_pow2(k)
    if kp != k:  # padded K lanes hold junk: zero them in both operands, unless they hold zeros
        zeros = zero_padded(lw.kernel) - set(lw.scratch.views)
        if s.a.buffer not in zeros:
            a = P.call("tl.where", P.binop("<", P.expand(P.call("tl.arange", 0, kp), 1, 2), P.const(k)), a, P.const(0))
        if s.b.buffer not in zeros:
            b = P.call("tl.where", P.binop("<", P.expand(P.call("tl.arange", 0, kp), 0, 2), P.const(k)), b, P.const(0))
    a_dt, b_dt = lw.storage_dtype(s.a.buffer.dtype), lw.storage_dtype(s.b.buffer.dtype)
    acc_dt = lw.storage_dtype(c_buf.dtype)
    if a_dt != b_dt:
        common = a_dt if a_dt.bits >= b_dt.bits else b_dt
        a, b = (P.to(a, common) if a_dt != common else a), (P.to(b, common) if b_dt != common else b)
        a_dt = b_dt = common
    acc = P.name(rc.name)
    if len(rc.shape) != 2:
        acc = P.call("tl.reshape", acc, P.tuple_([next_pow2(m), next_pow2(n)]))
    clear = s.clear_accum
    if isinstance(clear, ir.Const):
        acc_in = None if clear.value else acc
    else:
        cond = lw.scalar(clear, "clear_accum")
        acc_in = P.call("tl.where", cond.node, P.const(0), acc)
    small = min(next_pow2(m), next_pow2(n), kp) < 16
    least_k = 32 if max(s.a.buffer.dtype.bits, s.b.buffer.dtype.bits) == 8 else 16
    if not small and kp < least_k:  # tl.dot's K must be >= 32 for 8-bit operands on the GPU
        a, b = _zero_padded_k(a, b, next_pow2(m), next_pow2(n), kp, least_k)
        a, b = lw.named(a, "a_wide_k"), lw.named(b, "b_wide_k")
    if small:  # tl.dot needs every dim >= 16 on the GPU: multiply and reduce instead
        prod = P.binop("*", P.to(P.subscript_none(a, [True, True, False]), acc_dt),
                       P.to(P.subscript_none(b, [False, True, True]), acc_dt))  # fmt: skip
        out = P.call("tl.sum", prod, axis=1)
        result = out if acc_in is None else P.binop("+", acc_in, out)
    else:
        kwargs = {}
        native_acc = acc_dt in (FLOAT32, INT32) or (acc_dt == DTYPES["float16"] and a_dt == acc_dt)
        if (acc_dt == DTYPES["float16"] and a_dt == acc_dt) or acc_dt.is_int:
            kwargs["out_dtype"] = P.dtype(acc_dt)  # Triton wants it spelled out for these accumulators
        if native_acc and _transposed_product(lw, s, m, n):
            # C^T = B^T A^T: wgmma's M is at least 64, so the wide side goes there
            args = [_trans(b), _trans(a)] + ([_trans(acc_in)] if acc_in is not None else [])
            result = P.call("tl.trans", P.call("tl.dot", *args, **kwargs))
        elif native_acc:
            result = (
                P.call("tl.dot", a, b, acc_in, **kwargs) if acc_in is not None else P.call("tl.dot", a, b, **kwargs)
            )
            if acc_in is None and not kwargs and acc_dt != FLOAT32 and not a_dt.is_int:
                result = P.to(result, acc_dt)
        else:
            product = P.call("tl.dot", a, b)
            result = P.to(product if acc_in is None else P.binop("+", P.to(acc_in, FLOAT32), product), acc_dt)
    if len(rc.shape) != 2:
        result = P.call("tl.reshape", result, P.tuple_(rc.shape))
    lw.assign_to(rc.name, result)


def _transposed_product(lw: Lowerer, s: ir.Gemm, m: int, n: int) -> bool:
    """Whether a gemm of ``m`` x ``n`` is written as its transposed product (TILE2TRITON_TRANSPOSED_GEMMS).

    On sm_90 Triton runs ``tl.dot`` as wgmma only where M is at least 64 (per warpgroup); below
    that it takes mma.sync, which loads the whole B operand into registers in its operand layout
    and keeps a second shared copy of an operand also used by a wgmma.  Writing ``C^T = B^T A^T``
    puts the wide side in M: both operands stay in shared memory (16-bit ones may be read
    transposed there), the accumulator keeps the same registers.  Only where A is a shared buffer
    in the source: it becomes wgmma's B, which is read from shared memory; a fragment A (P of a
    softmax) is better left in registers as mma.sync's A."""
    a, b = s.a.buffer, s.b.buffer
    return (
        a.scope == ir.SHARED
        and a.dtype.bits == b.dtype.bits == 16
        and next_pow2(m) < 64 <= next_pow2(n)
        and _wgmma_target(lw)
    )


def _wgmma_target(lw: Lowerer) -> bool:
    """The kernel compiles for sm_90 with at least a warpgroup, and the switch is on."""
    opts = lw.options
    warps = opts.num_warps or next_pow2(max(1, lw.kernel.threads // opts.warp_size))
    return opts.transposed_gemms and opts.backend == "cuda" and opts.arch.startswith("sm_90") and warps >= 4


def _trans(node: ast.expr) -> ast.expr:
    """``tl.trans(node)``, or the operand of ``node`` where it is itself a ``tl.trans``."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "trans"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "tl"
        and len(node.args) == 1
        and not node.keywords
    ):
        return node.args[0]
    return P.call("tl.trans", node)


def _zero_padded_k(a: ast.expr, b: ast.expr, mp: int, np_: int, kp: int, least_k: int) -> tuple:
    """``a`` (mp x kp) and ``b`` (kp x np_) with K widened to ``least_k`` by interleaving zeros:
    ``a'[:, 2k] = a[:, k]``, ``b'[2k, :] = b[k, :]`` and zeros at odd K, so the product is exact."""
    while kp < least_k:
        a = P.call("tl.reshape", P.call("tl.join", a, P.call("tl.zeros_like", a)), P.tuple_([mp, 2 * kp]))
        joined = P.call("tl.join", b, P.call("tl.zeros_like", b))
        b = P.call("tl.reshape", P.call("tl.permute", joined, P.tuple_([0, 2, 1])), P.tuple_([2 * kp, np_]))
        kp *= 2
    return a, b
