"""Lowering rules of tile operations: ``T.copy``, ``T.fill``, ``T.gemm``.  A tile op is lowered as
TileLang's own SIMT lowering does: a T.Parallel over its extents, so one set of element rules
serves every operand combination (the element-space helpers here serve reductions and atomics too).
"""

from __future__ import annotations

import ast

from .. import ir
from ..ir import BOOL, FLOAT32, INT32
from ..ir.exprs import const_int, ir_key, static
from ..passes.analysis import zero_padded
from . import deferred
from . import pyast as P
from .descriptors import descriptor_load
from .fp4 import INT8
from .gemm_kinds import WGMMA_ROWS, transposed_dot
from .rules import close_lanes, lower_store, open_lanes
from .rules_base import lowers
from .threads import block_level, in_thread_view
from .values import Lowered, Lowerer, RegBuf, Tile, is_literal, next_pow2


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
    stage = _stage_key(lw, dst) if not lw.scope.conds else None
    box = None if s.disable_tma else descriptor_load(lw, src, dst, stage=stage is not None and lw.options.tma_stages)
    read = _stage_key(lw, src)
    known = lw.forwards.get(src.buffer) if read is not None else None
    forwarded = known[1] if known is not None and known[0] == read[0] else None
    written = []

    def body(indices):
        src_idx, dst_idx = indices
        if forwarded is not None:  # the tile this stage was written with, earlier in this statement list
            lanes = lw.scope.lanes
            value = Tile(P.name(forwarded), src.buffer.dtype, frozenset(range(lanes.rank)) if lanes else frozenset())
        else:
            value = box if box is not None else lw.ev(ir.Load(src.buffer, src_idx))
        if stage is not None and lw.scope.lanes is not None and value.axes == frozenset(range(lw.scope.lanes.rank)):
            value = lw.ev(ir.Cast(Lowered(value), dst.buffer.dtype))
            value = Tile(P.name(lw.assign(f"{dst.buffer.name}_stage", value.node)), value.dtype, value.axes)
            written.append(value.node.id)
        lower_store(lw, ir.Store(s.loc, dst.buffer, dst_idx, ir.Cast(Lowered(value), dst.buffer.dtype)))

    _elementwise(lw, [src, dst], base, "T.copy", body)
    if written:
        lw.forwards[dst.buffer] = (stage[0], written[0], stage[1])


def _stage_key(lw: Lowerer, region: ir.Region) -> tuple | None:
    """Where ``TILE2TRITON_FORWARD_STAGES`` applies: ``region`` is one whole stage of a register
    buffer (``K_shared[bi % 2, :, :]``: block-uniform indices on some dims, every element of the
    others): (a key of those indices, the variables they read), else None."""
    buf = region.buffer
    rb = lw.regs.get(buf)
    if (
        not lw.options.forward_stages
        or rb is None
        or rb.lanes is not None
        or rb.view_of is not None
        or buf in lw.scratch.views
        or lw.scope.inline_only
    ):
        return None
    key, uses = [], set()
    for d, (start, extent) in enumerate(zip(region.starts, region.extents)):
        if static(start) == 0 and static(extent) == buf.shape[d]:
            key.append(None)
        elif static(extent) == 1 and not lw.ev(start).axes:
            key.append(ir_key(start))
            uses |= {x.var for x in ir.iter_expr_tree(start) if isinstance(x, ir.VarRef)}
        else:
            return None
    if all(k is None for k in key):
        return None  # the whole buffer: its own tile already
    return tuple(key), frozenset(uses)


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

    dynamic = [d for d in _non_unit(region) if static(region.extents[d]) is None]
    if buf.scope == ir.GLOBAL and len(dynamic) == 1:  # T.fill(x[a:b], v): chunks of a run-time extent
        lw.lower_stmts([_chunked_fill(s, dynamic[0])])
        return

    def body(indices):
        lower_store(lw, ir.Store(s.loc, buf, indices[0], s.value))

    _elementwise(lw, [region], region, "T.fill", body)


_FILL_CHUNK = 256  # elements of a run-time extent filled per step


def _chunked_fill(s: ir.Fill, dim: int) -> ir.Stmt:
    """``T.fill`` of a global region whose extent along ``dim`` is known only at run time: a loop over
    chunks of that extent, each a T.Parallel over the chunk (and the static dims) with a bound check."""
    region, loc = s.dst, s.loc
    chunk = ir.Var("chunk", INT32, "loop")
    extent = region.extents[dim]
    size = ir.Const(_FILL_CHUNK, INT32)
    lanes, extents, index = [], [], list(region.starts)
    cond = None
    for d in _non_unit(region):
        lane = ir.Var(f"i{d}", INT32, "lane")
        lanes.append(lane)
        if d == dim:
            offset = ir.BinOp("+", ir.BinOp("*", ir.VarRef(chunk), size, INT32), ir.VarRef(lane), INT32)
            cond = ir.Compare("<", offset, extent, BOOL)
            index[d] = ir.BinOp("+", region.starts[d], offset, INT32)
            extents.append(_FILL_CHUNK)
        else:
            index[d] = ir.BinOp("+", region.starts[d], ir.VarRef(lane), INT32)
            extents.append(static(region.extents[d]))
    store = ir.If(loc, cond, [ir.Store(loc, region.buffer, tuple(index), s.value)], [])
    chunks = ir.BinOp("//", ir.BinOp("+", extent, ir.Const(_FILL_CHUNK - 1, INT32), INT32), size, INT32)
    return ir.For(loc, chunk, ir.Const(0, INT32), chunks, ir.Const(1, INT32), "serial",
                  [ir.Parallel(loc, lanes, extents, [store])])  # fmt: skip


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
    if s.a.buffer.dtype.name == "uint4":  # registers hold 0..15 as uint8: an int8 dot multiplies them
        a, a_dt = P.to(a, INT8), INT8
    if s.b.buffer.dtype.name == "uint4":
        b, b_dt = P.to(b, INT8), INT8
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
    least_k = 32 if max(a_dt.bits, b_dt.bits) == 8 else 16  # int4 tiles are int8 in registers
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
        # a float16 accumulator takes the float32 product, rounded once per T.gemm: Triton 3.6's
        # out_dtype=tl.float16 dot gave wrong values on the H200 (TileLang's atom-MMA test, session 10)
        native_acc = acc_dt in (FLOAT32, INT32)
        if acc_dt.is_int:
            kwargs["out_dtype"] = P.dtype(acc_dt)  # Triton wants it spelled out for these accumulators
        if native_acc and transposed_dot(lw, s, next_pow2(m), next_pow2(n)):
            # C^T = B^T A^T: fewer rows than a warpgroup's 64 would be an mma.sync dot (see transposed_dot)
            args = [_trans(b), _trans(a)] + ([_trans(acc_in)] if acc_in is not None else [])
            result = P.call("tl.trans", P.call("tl.dot", *args, **kwargs))
        elif native_acc and acc_in is not None and _gemm_parts(lw, s, a, b, next_pow2(m), next_pow2(n), k, kwargs):
            return
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


MMA_TILE = (16, 8)  # rows and columns of one mma.sync instruction's accumulator tile
MMA_K_BITS = 256  # an mma.sync instruction's K, in operand bits: 8 tf32, 16 fp16/bf16, 32 8-bit values
# GEMM_PARTS: a warp with fewer accumulator tiles than this runs its mma chains mostly waiting; K is
# split until each warp has at least CHAINS_PER_WARP independent chains, while each part's chain
# stays at least PART_STEPS instructions long (a shorter one does not repay the parts' reduction)
CHAINS_PER_WARP = 8
PART_STEPS = 8
MAX_PARTS = 8


def _gemm_parts(lw: Lowerer, s: ir.Gemm, a: ast.expr, b: ast.expr, m: int, n: int, k: int, kwargs: dict) -> bool:
    """TILE2TRITON_GEMM_PARTS (deferred.py): a gemm that Triton runs as mma.sync (fewer rows than a
    warpgroup's wgmma) with fewer than CHAINS_PER_WARP accumulator tiles a warp and a K of at least
    2 x PART_STEPS mma instructions, accumulating in a loop that touches its accumulator nowhere else,
    splits K into parts with an accumulator each:
    ``parts = tl.dot(A[parts, m, k/parts], B[parts, k/parts, n], parts)`` in the loop, the parts
    summed into C once after it.  Each part's mma chain is independent of the others'.  Returns
    whether it did."""
    c_buf = s.c.buffer
    rc = lw.reg(c_buf)
    if not lw.options.gemm_parts or m >= WGMMA_ROWS or len(rc.shape) != 2 or k != next_pow2(k):
        return False
    if not deferred.reassociable(c_buf.dtype) or c_buf.root in (s.a.buffer.root, s.b.buffer.root):
        return False
    if not (isinstance(s.clear_accum, ir.Const) and not s.clear_accum.value):
        return False  # cleared in some iterations: each one's sum starts from its own zero
    warps = lw.options.num_warps or max(1, lw.kernel.threads // lw.options.warp_size)
    tiles = max(1, (m // MMA_TILE[0]) * (n // MMA_TILE[1]) // warps)
    bits = max(8, s.a.buffer.dtype.bits, s.b.buffer.dtype.bits)  # the dtype the dot runs in (declared: as on the GPU)
    least_k = PART_STEPS * (MMA_K_BITS // bits)
    parts = 1
    while tiles * parts < CHAINS_PER_WARP and parts < MAX_PARTS and k // (2 * parts) >= least_k:
        parts *= 2
    if parts == 1 or not deferred.fits(lw, parts * m * n):
        return False
    loop = deferred.enclosing(lw, s, c_buf)
    if loop is None:
        return False
    part_k = k // parts
    # A (m x k) -> (parts, m, k/parts); B (k x n) -> (parts, k/parts, n), from B^T's rows (n x k) where
    # B is a transpose (T.gemm's transpose_B): the parts split the dim the buffer holds contiguously
    a3 = P.call("tl.permute", P.call("tl.reshape", a, P.tuple_([m, parts, part_k])), P.tuple_([1, 0, 2]))
    if s.trans_b:
        b3 = P.call("tl.permute", P.call("tl.reshape", _trans(b), P.tuple_([n, parts, part_k])), P.tuple_([1, 2, 0]))
    else:
        b3 = P.call("tl.reshape", b, P.tuple_([parts, part_k, n]))
    wide = deferred.start(lw, loop, f"{c_buf.name}_parts", [parts, m, n], lw.storage_dtype(c_buf.dtype))
    lw.assign_to(wide, P.call("tl.dot", lw.named(a3, "a_parts"), lw.named(b3, "b_parts"), P.name(wide), **kwargs))

    def finish() -> None:
        lw.assign_to(rc.name, P.binop("+", P.name(rc.name), deferred.summed(wide)))

    loop.finishes.append((lw.origin, finish))
    return True


def _trans(x: ast.expr) -> ast.expr:
    """``tl.trans(x)``, or ``y`` where ``x`` is ``tl.trans(y)``."""
    if isinstance(x, ast.Call) and isinstance(x.func, ast.Attribute) and x.func.attr == "trans" and len(x.args) == 1:
        if isinstance(x.func.value, ast.Name) and x.func.value.id == "tl" and not x.keywords:
            return x.args[0]
    return P.call("tl.trans", x)


def _zero_padded_k(a: ast.expr, b: ast.expr, mp: int, np_: int, kp: int, least_k: int) -> tuple:
    """``a`` (mp x kp) and ``b`` (kp x np_) with K widened to ``least_k`` by interleaving zeros:
    ``a'[:, 2k] = a[:, k]``, ``b'[2k, :] = b[k, :]`` and zeros at odd K, so the product is exact."""
    while kp < least_k:
        a = P.call("tl.reshape", P.call("tl.join", a, P.call("tl.zeros_like", a)), P.tuple_([mp, 2 * kp]))
        joined = P.call("tl.join", b, P.call("tl.zeros_like", b))
        b = P.call("tl.reshape", P.call("tl.permute", joined, P.tuple_([0, 2, 1])), P.tuple_([2 * kp, np_]))
        kp *= 2
    return a, b
