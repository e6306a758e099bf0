"""Which kernels the Gluon attention route takes (``plan``), for codegen/gluon_attention.py.

The kernel must be one flash-attention loop: a ``T.Pipelined`` loop with two gemms, the first
``shared Q x shared K^T -> fragment S`` and the second ``fragment P x shared V -> fragment O`` ending
the loop, where K and V are whole global boxes copied in the loop (before the gemm that reads each)
and Q is copied before it, and every other statement is row-local on fragments (``T.Parallel`` over
the tile's rows, which may also read global elements the same for the whole block, row reductions,
fills, casting copies, the final store) so that two consumer warpgroups can each run it on their
own rows.  Anything else, and every kernel where the route was
not measured to pay off (``_worth_it``), raises ``NotAttention`` with the reason: it keeps the
``tl`` lowering.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import ir
from ..ir.evaluate import row_major_strides
from ..ir.exprs import int_const
from ..passes.analysis import Ranges, kernel_ranges

CONSUMERS = 2  # warpgroups running the loop body, each on its share of the rows (the column split's count)
ROWS = 64  # rows per consumer: one wgmma M tile
SHARED_BYTES = 227 * 1024  # an H100/H200 block's shared memory
HALF_FLOATS = ("float16", "bfloat16")


class NotAttention(Exception):
    """The kernel is not of the shape this module lowers (the reason, for tests and debugging)."""


@dataclass
class Plan:
    kernel: ir.Kernel
    func: ir.PrimFunc
    loop: ir.For
    q_copy: ir.Copy
    k_copy: ir.Copy
    v_copy: ir.Copy
    qk: ir.Gemm
    pv: ir.Gemm
    before: list  # kernel statements before the loop (allocations and the Q copy left out)
    loop_head: list  # loop statements before the QK gemm (the K/V copies left out)
    loop_tail: list  # loop statements between the two gemms (the K/V copies left out)
    after: list  # statements after the loop
    block_n: int
    dim: int
    dim_v: int
    stages: int
    consumers: int = CONSUMERS  # warpgroups, each on 64 of the tile's rows
    ranges: Ranges = field(default_factory=Ranges)
    schedule: str = "rotated"  # the consumers' loop: "rotated" or "serial" (``SCHEDULES``)

    @property
    def tma_sources(self) -> list:
        return [c.src.buffer for c in (self.q_copy, self.k_copy, self.v_copy)]


# How each consumer runs the loop:
# - "rotated" (FA3's): S = Q K^T of an iteration is issued with the previous iteration's P V still in
#   flight, so one warpgroup's softmax overlaps its own gemms; the first iteration is peeled (its S
#   alone) and the last P V follows the loop, so the loop must provably run at least once;
# - "serial" (TileLang's consumer): S, wait, softmax, P V, wait; the two consumer warpgroups overlap
#   each other's softmax with gemms.  No iteration is peeled: a loop that may run zero times (a
#   sliding window's ``T.max(0, ...)`` to ``T.min(...)``) is served, as long as what follows the loop
#   reads only fragments written before it.
# ``auto``: rotated where the loop provably runs, serial elsewhere.
SCHEDULES = ("auto", "rotated", "serial")


def plan(kernel: ir.Kernel, func: ir.PrimFunc, cost_model: bool = True, schedule: str = "auto") -> Plan:
    """The kernel as an attention loop, or NotAttention saying why not; ``schedule``: one of
    ``SCHEDULES`` (TILE2TRITON_GLUON_SCHEDULE; "auto" unless a sweep asks for one)."""
    # one consumer warpgroup per 128 threads, each on 64 rows (a 64-row tile of 128 threads: one)
    body, loop, at = one_pipelined_loop(kernel, func, consumer_counts=(1, 2))
    consumers = kernel.threads // 128
    gemms = [s for s in loop.body if isinstance(s, ir.Gemm)]
    if len(gemms) != 2 or ir.has_gemm(body[:at] + body[at + 1 :]):
        raise NotAttention("two gemms, both in the loop")
    qk, pv = gemms
    s_buf, p_buf, o_buf = qk.c.buffer, pv.a.buffer, pv.c.buffer
    q_sh, k_sh, v_sh = qk.a.buffer, qk.b.buffer, pv.b.buffer
    rows, block_n = s_buf.shape if len(s_buf.shape) == 2 else (0, 0)
    dim = q_sh.shape[-1]
    dim_v = v_sh.shape[-1]
    if (
        rows != ROWS * consumers
        or qk.trans_a
        or not qk.trans_b
        or pv.trans_a
        or pv.trans_b
        or q_sh.scope != ir.SHARED
        or k_sh.scope != ir.SHARED
        or v_sh.scope != ir.SHARED
        or s_buf.scope != ir.FRAGMENT
        or p_buf.scope != ir.FRAGMENT
        or o_buf.scope != ir.FRAGMENT
        or q_sh.shape != (rows, dim)
        or k_sh.shape != (block_n, dim)
        or v_sh.shape != (block_n, dim_v)
        or p_buf.shape != (rows, block_n)
        or o_buf.shape != (rows, dim_v)
        or s_buf.dtype.name != "float32"
        or o_buf.dtype.name != "float32"
        or len({q_sh.dtype.name, k_sh.dtype.name, v_sh.dtype.name, p_buf.dtype.name}) != 1
        or q_sh.dtype.name not in HALF_FLOATS
        or not all(_whole(r) for r in (qk.a, qk.b, qk.c, pv.a, pv.b, pv.c))
        or not _is_false(pv.clear_accum)
    ):
        raise NotAttention(
            "S = Q K^T (shared x shared^T) then O += P V (fragment x shared), 64 rows per 128 threads, fp16/bf16"
        )
    if not isinstance(qk.clear_accum, ir.Const):
        raise NotAttention("S = Q K^T with a constant clear_accum")
    if len({q_sh, k_sh, v_sh, s_buf, p_buf, o_buf}) != 6:
        raise NotAttention("Q, K, V, S, P and O are six distinct buffers")
    if loop.body.index(pv) != len(loop.body) - 1:
        raise NotAttention("the P V gemm ends the loop body")
    q_copy = _box_copy_into(body[:at], q_sh, "Q")
    k_copy = _box_copy_into(loop.body, k_sh, "K")
    v_copy = _box_copy_into(loop.body, v_sh, "V")
    for copy, tile in ((q_copy, (rows, dim)), (k_copy, (block_n, dim)), (v_copy, (block_n, dim_v))):
        _check_box(copy.src, tile)
        if copy.src.buffer.dtype != copy.dst.buffer.dtype:  # TMA copies bytes: no conversion on the way
            raise NotAttention("Q, K and V copied from global tensors of their shared buffers' dtype")
    if loop.body.index(k_copy) > loop.body.index(qk) or loop.body.index(v_copy) > loop.body.index(pv):
        raise NotAttention("K and V are copied in before the gemms that read them")
    loop_body = [s for s in loop.body if s is not k_copy and s is not v_copy]
    head = loop_body[: loop_body.index(qk)]
    tail = loop_body[loop_body.index(qk) + 1 : -1]
    before = [s for s in body[:at] if s is not q_copy]
    after = body[at + 1 :]
    shared_ok = {q_sh, k_sh, v_sh}
    for s in before + head + tail + after:
        _check_row_local(s, rows, shared_ok)
    inputs = {c.src.buffer for c in (q_copy, k_copy, v_copy)}
    if any(isinstance(s, ir.Copy) and s.dst.buffer in inputs for s in before + head + tail + after):
        raise NotAttention("no stores to the tensors Q, K and V are read from (the loader reads ahead)")
    touched = {o_buf, p_buf}
    if any(touches(s, touched) for s in head):
        raise NotAttention("the loop statements before S = Q K^T leave O and P alone")
    stage_bytes = block_n * (dim + dim_v) * 2
    stages = max(2, min(3, (SHARED_BYTES - rows * dim * 2 - 1024) // stage_bytes))
    out = Plan(
        kernel,
        func,
        loop,
        q_copy,
        k_copy,
        v_copy,
        qk,
        pv,
        before,
        head,
        tail,
        after,
        block_n,
        dim,
        dim_v,
        stages,
        consumers,
    )
    _check_written_before_read(out)
    out.schedule = _schedule(out, bound_the_loop(out), schedule)
    if cost_model and not _worth_it(out):
        raise NotAttention(
            "where the Gluon schedule was not measured faster: it needs two consumer warpgroups, head dim 128 "
            f"and a loop over more than {SHORT_KEYS} keys"
        )
    return out


def one_pipelined_loop(
    kernel: ir.Kernel, func: ir.PrimFunc, consumer_counts: tuple = (CONSUMERS,)
) -> tuple[list, ir.For, int]:
    """What both Gluon routes launch: the function's one block-view kernel of 128 threads per
    consumer warpgroup (``consumer_counts`` says how many the route can run), static shapes, one
    ``T.Pipelined`` loop of step 1 at its top level. Returns the kernel's statements (allocations
    left out), the loop and its place among them."""
    if len(func.kernels) != 1:
        raise NotAttention("one T.Kernel in the function (the Gluon module launches one kernel)")
    threads = [128 * c for c in consumer_counts]
    if kernel.thread_vars or kernel.swizzle or kernel.safe_values or kernel.threads not in threads:
        spelled = " or ".join(str(t) for t in threads)
        raise NotAttention(f"a block-view kernel of {spelled} threads without swizzle or safe values")
    if any(isinstance(p, ir.Buffer) and not all(isinstance(d, int) for d in p.shape) for p in func.params):
        raise NotAttention("static tensor shapes")
    body = [s for s in kernel.body if not isinstance(s, ir.Alloc)]
    loops = [s for s in body if isinstance(s, ir.For)]
    if len(loops) != 1 or loops[0].kind != "pipelined" or int_const(loops[0].step) != 1:
        raise NotAttention("one T.Pipelined loop of step 1 at the kernel's top level")
    return body, loops[0], body.index(loops[0])


SHORT_KEYS = 512  # a loop over at most this many keys keeps tl: too short for the loader to run ahead


def _worth_it(p: Plan) -> bool:
    """The cost model, from H200 sweeps of both routes (``benchmarks/gluon_route_sweep.py``, do_bench
    event time; ``gpu_logs/2026-12-04_s29_gluon_route_sweep.log``, with the descriptors made on the
    host as the tl lowering's are), two consumers at head dim 128, 128 x 64 and 128 x 128 tiles:
    - plain attention (causal or not): Gluon 0.91-1.00x of tl over 512 keys (mean 0.97), 0.91-1.14x
      over 640 (mean 1.04), 0.95-1.14x over 768, 1.02-1.14x over 1024, 1.09-1.17x over 4096;
    - attention with a sink logit per head, fast math as TileLang's example (causal): 0.96-1.06x over
      256 keys, 1.07-1.11x over 512, 1.15-1.22x over 640, 1.13-1.25x over 1000 to 4096.
    Head dim 64 (0.86-1.15x, no consistent win) and one consumer (64 rows of 128 threads: 0.58-1.08x)
    keep tl.  So: two consumers, head dim 128, and a loop over more than 512 keys.  Before the host-made
    descriptors every program built three tensormaps, and the route paid only from 1024 keys
    (``gpu_logs/2026-12-01_s9_gluon_route_sweep.log``, ``2026-12-02_s14_sink_sweep.log``).
    The serial schedule (``gpu_logs/2026-12-04_s30_gluon_schedule_sweep.log``), on loops the rotated
    one also serves, was no faster: 0.90-1.05x of tl at 256 keys with two consumers, as slow as the
    rotated one or slower on 25 of 32 shapes.  On sliding windows, which only it serves (sink
    attention, 128-row tiles): 1.03-1.14x of tl over loops of 640 to 1152 keys, 0.93-1.02x over 256
    to 384 with 128-key tiles (1.04-1.15x with 64-key ones, where tl is the slower).  The same rule
    holds for both schedules.
    The loop's length in keys is its largest trip count over the blocks (``Ranges.most_trips``: block
    by block where the bounds come from few block indices) times the keys a tile."""
    trips = _max_trips(p)
    return (
        p.consumers == 2
        and p.dim == p.dim_v == 128
        and p.block_n in (64, 128)
        and (trips is None or trips * p.block_n > SHORT_KEYS)
    )


def _max_trips(p: Plan) -> int | None:
    """The most iterations any block's loop runs, or None when the bounds are not known."""
    return p.ranges.most_trips(p.loop.start, p.loop.stop)


def _is_false(e) -> bool:
    return isinstance(e, ir.Const) and e.value == 0  # False or 0


def is_const(e, value) -> bool:
    return isinstance(e, ir.Const) and not isinstance(e.value, bool) and e.value == value


def _whole(r) -> bool:
    return (
        isinstance(r, ir.Region)
        and all(isinstance(s, ir.Const) and s.value == 0 for s in r.starts)
        and tuple(r.extents) == tuple(r.buffer.shape)
    )


def _box_copy_into(stmts: list, shared: ir.Buffer, what: str) -> ir.Copy:
    writes = [s for s in ir.walk(stmts) if writes_of(s) is shared]
    if len(writes) != 1 or not isinstance(writes[0], ir.Copy) or writes[0] not in stmts:
        raise NotAttention(f"{what} is written once, by a T.copy from global memory")
    copy = writes[0]
    if not isinstance(copy.src, ir.Region) or copy.src.buffer.scope != ir.GLOBAL or not _whole(copy.dst):
        raise NotAttention(f"{what} is written once, by a T.copy from global memory")
    return copy


def _check_box(src: ir.Region, tile: tuple) -> None:
    """A TMA box: every extent 1 but a row dim and the last, which is the whole (contiguous) dim."""
    buf = src.buffer
    rank = len(buf.shape)
    wide = [d for d, e in enumerate(src.extents) if e != 1]
    if (
        rank > 5
        or buf.alias_of is not None
        or buf.address is not None
        or (buf.strides is not None and tuple(buf.strides) != row_major_strides(buf.shape))
        or buf.dtype.name not in HALF_FLOATS
        or len(wide) != 2
        or wide[1] != rank - 1
        or tuple(src.extents[d] for d in wide) != tile
        or buf.shape[-1] != tile[1]
        or not (isinstance(src.starts[-1], ir.Const) and src.starts[-1].value == 0)
        or any(isinstance(x, ir.Load) for e in src.starts for x in ir.iter_expr_tree(e))
    ):
        raise NotAttention("global boxes [.., rows, .., whole last dim] of a contiguous fp16/bf16 tensor")


def writes_of(s):
    """The buffer a statement writes (a copy's or fill's destination, a store's, a reduction's, a
    gemm's accumulator), or None."""
    if isinstance(s, (ir.Copy, ir.Fill)) and isinstance(s.dst, ir.Region):
        return s.dst.buffer
    if isinstance(s, ir.Store):
        return s.buffer
    if isinstance(s, ir.Reduce):
        return s.dst.buffer
    if isinstance(s, ir.Gemm):
        return s.c.buffer
    return None


def writes_whole(s):
    """The buffer a statement overwrites whole (a fill, or a T.Parallel storing all of it)."""
    if isinstance(s, ir.Fill):
        return s.dst.buffer
    if isinstance(s, ir.Parallel) and len(s.body) >= 1 and isinstance(s.body[-1], ir.Store):
        stores = [x for x in s.body if isinstance(x, ir.Store)]
        if len({x.buffer for x in stores}) == 1:
            return stores[0].buffer
    return None


def touches(s, bufs: set) -> bool:
    """Does ``s`` (or a statement nested in it) read or write one of ``bufs``?"""
    return any((ir.operand_buffers(x) | {load.buffer for load in ir.loads_in(x)}) & bufs for x in ir.walk([s]))


def _check_row_local(s, rows: int, shared_ok: set) -> None:
    """Statements each consumer can run on its own rows."""
    if isinstance(s, ir.Parallel):
        if s.extents[0] != rows or len(s.extents) > 2:
            raise NotAttention("T.Parallel over the tile's rows (and one more dim)")
        for inner in s.body:
            if not isinstance(inner, (ir.Let, ir.Store)):
                raise NotAttention("T.Parallel bodies of element assignments")
            if isinstance(inner, ir.Store):
                if inner.buffer.scope not in (ir.FRAGMENT, ir.LOCAL) or not _lane_indices(inner.indices, s.vars):
                    raise NotAttention("T.Parallel stores every element of a fragment, indexed by its lanes")
                if tuple(inner.buffer.shape) != tuple(s.extents):
                    raise NotAttention("T.Parallel stores every element of a fragment, indexed by its lanes")
        body_lets = {inner.var for inner in s.body if isinstance(inner, ir.Let)}
        for load in (x for inner in s.body for x in ir.loads_in(inner)):
            if load.buffer.scope == ir.GLOBAL and _block_uniform(load, set(s.vars) | body_lets):
                continue  # one element for the whole block (an attention sink's Sinks[by]): a scalar load
            if load.buffer.scope not in (ir.FRAGMENT, ir.LOCAL) or load.buffer.shape[0] != rows:
                raise NotAttention("T.Parallel reads row-major fragments")
            if not _lane_indices(load.indices, s.vars[: len(load.indices)]) or len(load.indices) > len(s.vars):
                raise NotAttention("T.Parallel reads fragments at its own lanes")
            if tuple(load.buffer.shape) != tuple(s.extents[: len(load.buffer.shape)]):
                raise NotAttention("T.Parallel reads whole fragments of its own shape (or its rows)")
        return
    if isinstance(s, ir.Let):
        if any(isinstance(x, ir.Load) for x in ir.iter_expr_tree(s.value)):
            raise NotAttention("scalar lets of block indices and sizes")
        return
    if isinstance(s, ir.Fill):
        if not _whole(s.dst) or s.dst.buffer.scope not in (ir.FRAGMENT, ir.LOCAL) or s.dst.buffer.shape[0] != rows:
            raise NotAttention("fills of whole row-major fragments")
        return
    if isinstance(s, ir.Reduce):
        src, dst = s.src.buffer, s.dst.buffer
        if {src, dst} & shared_ok or ir.GLOBAL in (src.scope, dst.scope):
            raise NotAttention("reductions of fragments (Q, K and V live in the TMA ring, not in registers)")
        if (
            s.kind not in ("max", "sum")
            or s.nan_propagate
            or not (_whole(s.src) and _whole(s.dst))
            or len(src.shape) != 2
            or src.shape[0] != rows
            or tuple(dst.shape) != (rows,)
            or s.dim not in (1, -1)
        ):
            raise NotAttention("row max / sum reductions of whole fragments")
        return
    if isinstance(s, ir.Copy):
        if not (isinstance(s.src, ir.Region) and isinstance(s.dst, ir.Region)):
            raise NotAttention("region copies")
        src, dst = s.src.buffer, s.dst.buffer
        if dst.scope == ir.GLOBAL:
            if src in shared_ok or not _whole(s.src) or src.shape[0] != rows or len(src.shape) != 2:
                raise NotAttention("stores of whole row-major tiles to global memory")
            _check_box(s.dst, tuple(src.shape))
            return
        if src.scope == ir.GLOBAL or src in shared_ok or dst in shared_ok:
            raise NotAttention("no other copies of global memory or of Q, K, V")
        if not (_whole(s.src) and _whole(s.dst)) or tuple(src.shape) != tuple(dst.shape) or src.shape[0] != rows:
            raise NotAttention("copies of whole row-major tiles")
        return
    raise NotAttention(f"T.{type(s).__name__} outside the supported attention statements")


def _block_uniform(load: ir.Load, lane_vars: set) -> bool:
    """Is ``load`` one element of a plain global tensor, at indices no lane changes (block indices,
    lets of them, constants)?"""
    buf = load.buffer
    return (
        buf.alias_of is None
        and buf.address is None
        and all(isinstance(d, int) for d in buf.shape)
        and (buf.strides is None or tuple(buf.strides) == row_major_strides(buf.shape))
        and not any(
            isinstance(x, ir.Load) or isinstance(x, ir.VarRef) and x.var in lane_vars
            for e in load.indices
            for x in ir.iter_expr_tree(e)
        )
    )


def _lane_indices(indices, lane_vars) -> bool:
    return len(indices) == len(lane_vars) and all(
        isinstance(e, ir.VarRef) and e.var is v for e, v in zip(indices, lane_vars)
    )


def _check_written_before_read(p: Plan) -> None:
    written = {p.q_copy.dst.buffer, p.k_copy.dst.buffer, p.v_copy.dst.buffer}
    check_written_before_read(written, p.before + p.loop_head + [p.qk] + p.loop_tail + [p.pv] + p.after)


def check_written_before_read(written: set, steps: list) -> None:
    """Each partition keeps a fragment as a Python variable assigned where the kernel writes it: one
    read before any write (an uninitialized value in TileLang) would be an undefined name.  The
    loop's first iteration is the one that matters (a value carried from the previous iteration is
    written in it first), so ``steps`` are the kernel's statements in that order; ``written``: the
    buffers the loader fills."""
    written = set(written)

    def read(buf) -> None:
        if buf.scope != ir.GLOBAL and buf not in written:
            raise NotAttention(f"fragments written before they are read ({buf.name} is read first)")

    for s in steps:
        if isinstance(s, ir.Parallel):
            for inner in s.body:
                for load in ir.loads_in(inner):
                    read(load.buffer)
                if isinstance(inner, ir.Store):
                    written.add(inner.buffer)
            continue
        if isinstance(s, ir.Gemm):
            read(s.a.buffer)
            read(s.b.buffer)
            if not (isinstance(s.clear_accum, ir.Const) and s.clear_accum.value):
                read(s.c.buffer)
        elif isinstance(s, ir.Reduce):
            read(s.src.buffer)
            if not s.clear:
                read(s.dst.buffer)
        elif isinstance(s, ir.Copy):
            read(s.src.buffer)
        for load in ir.loads_in(s):
            read(load.buffer)
        target = writes_of(s)
        if target is not None:
            written.add(target)


def bound_the_loop(p: Plan) -> bool:
    """The value ranges of the block indices, the lets before the loop and the loop variable (for the
    cost model's trip count); whether the loop provably runs at least once."""
    r = kernel_ranges(p.kernel, p.before, p.ranges)
    start, stop = r.of(p.loop.start), r.of(p.loop.stop)
    if start is not None and stop is not None:
        r.set(p.loop.var, start[0], stop[1] - 1)  # inside the loop, whether or not it runs
    return bool(r.compare("<", p.loop.start, p.loop.stop))


def _schedule(p: Plan, runs_once: bool, asked: str) -> str:
    """The consumers' schedule (``SCHEDULES``): the one asked for, where it can serve the loop."""
    if asked == "rotated" or (asked == "auto" and runs_once):
        if not runs_once:
            raise NotAttention("a loop that provably runs at least once (the rotated schedule peels the first)")
        return "rotated"
    # an empty loop leaves what the loop body writes unwritten: after it, the names are undefined
    written = {p.q_copy.dst.buffer, p.k_copy.dst.buffer, p.v_copy.dst.buffer}
    try:
        check_written_before_read(written, p.before + p.after)
    except NotAttention:
        raise NotAttention(
            "a loop that provably runs at least once, or statements after it that read only fragments written before it"
        ) from None
    return "serial"
