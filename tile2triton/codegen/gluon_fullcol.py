"""Column-split attention loops on Hopper as Gluon: DeepSeek's MLA decode and kernels like it.

When an attention tile has 64 rows (one ``wgmma`` M tile) and its output is too wide for one
warpgroup's registers (MLA: 64 x 512 fp32), TileLang's ``GemmWarpPolicy.FullCol`` splits the
*columns* of the score tile S and of the output O between its two warpgroups.  The ``tl`` lowering
gets the same split from Triton (8 warps, ``warps_per_cta [4, 2]``), but Triton 3.6 synchronises
all eight warps several times an iteration and measured 0.99 ms against TileLang's 0.68
(``BENCHMARKS.md``).  This module writes the schedule by hand, as ``gluon_attention.py`` does for
the row split:

- one *loader* warp copies the Q-side tiles once and, every iteration, every tile the loop copies,
  into a ring of shared-memory stages (TMA boxes at most 256 columns wide; one mbarrier per stage);
- two *consumer* warpgroups run the loop body, each on half of S's columns and half of O's:
  ``S_c = sum_i A_i B_i[c-th half of the rows]^T``; a row reduction of a split tile reduces the
  consumer's half, then trades it with the other consumer through shared memory (``_exchange``);
  P's halves go to one shared tile (``_publish``) that both then read whole for ``O_c += P V_c``.

Which kernels take the route is ``plan``: one ``T.Pipelined`` loop whose body copies its K/V tiles,
accumulates S with gemms of loop-invariant shared tiles (Q) by the copied ones (K^T), runs
row-local statements, stores P (to a shared tile, or keeps it a fragment), and ends with
``O += P V``; 256 threads, 64 rows, fp16/bf16, static shapes, and only the shape measured faster
(``_worth_it``).  Anything else raises ``NotAttention`` and keeps the ``tl`` lowering.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import ir
from ..passes.analysis import Ranges
from .gluon_attention import RESERVED, _Emitter
from .gluon_plan import (
    HALF_FLOATS,
    ROWS,
    SHARED_BYTES,
    NotAttention,
    _box_copy_into,
    _check_box,
    _check_row_local,
    _is_false,
    _lane_indices,
    _whole,
    bound_the_loop,
    check_written_before_read,
    is_const,
    one_pipelined_loop,
    touches,
    writes_of,
)

__all__ = ["IMPORTS", "ColumnPlan", "emit", "plan"]

MAX_BOX = 256  # a TMA box's widest dimension
FLOATS = ("float32", *HALF_FLOATS)  # what a row reduction's halves may be traded as
IMPORTS = (
    "from triton.experimental import gluon\n"
    "from triton.experimental.gluon import language as gl\n"
    "from triton.experimental.gluon.language.nvidia.hopper import (\n"
    "    fence_async_shared, mbarrier, tma, warpgroup_mma, warpgroup_mma_wait,\n"
    ")\n"
)
NAMES = RESERVED | {"part", "parity", "fence_async_shared", "p_smem", "p_ready", "p_free", "kv_ready"}


@dataclass
class ColumnPlan:
    kernel: ir.Kernel
    func: ir.PrimFunc
    loop: ir.For
    pre_copies: list  # global -> shared before the loop: the score gemms' A tiles
    ring_copies: list  # global -> shared in the loop, before the first score gemm
    scores: list  # S (+)= A_i B_i^T, in order
    pv: ir.Gemm  # O += P V, the loop's last statement
    p_copy: ir.Copy | None  # fragment -> P's shared tile (None: P is a fragment)
    before: list
    loop_head: list  # before the first score gemm (the ring copies left out)
    loop_tail: list  # between the last score gemm and P V (the ring copies left out)
    after: list
    block_n: int
    dim_v: int
    stages: int
    widths: dict  # shared buffer -> the column width of its TMA boxes
    deferred: dict = field(default_factory=dict)  # row sum -> the accumulator its partials are traded through
    ranges: Ranges = field(default_factory=Ranges)

    @property
    def qk(self) -> ir.Gemm:  # the gemm that starts S (the row-split emitter's name for it)
        return self.scores[0]

    @property
    def tma_sources(self) -> list:
        return [c.src.buffer for c in self.pre_copies + self.ring_copies]


def plan(kernel: ir.Kernel, func: ir.PrimFunc, cost_model: bool = True, schedule: str = "auto") -> ColumnPlan:
    """The kernel as a column-split attention loop, or NotAttention saying why not. Its consumers
    have the rotated schedule only (``gluon_plan.SCHEDULES``)."""
    if schedule == "serial":
        raise NotAttention("the rotated schedule (the column split has no serial one)")
    body, loop, at = one_pipelined_loop(kernel, func)
    gemms = [s for s in loop.body if isinstance(s, ir.Gemm)]
    if len(gemms) < 2 or ir.has_gemm(body[:at] + body[at + 1 :]):
        raise NotAttention("the gemms in the loop: S = Q K^T (one or more), then O += P V")
    *scores, pv = gemms
    if loop.body.index(pv) != len(loop.body) - 1:
        raise NotAttention("the P V gemm ends the loop body")
    s_buf, p_buf, o_buf, v_sh = scores[0].c.buffer, pv.a.buffer, pv.c.buffer, pv.b.buffer
    if len(s_buf.shape) != 2 or len(o_buf.shape) != 2:
        raise NotAttention("2-D score and output tiles")
    (rows, block_n), dim_v = s_buf.shape, o_buf.shape[1]
    half = v_sh.dtype.name
    for g in scores:
        a, b = g.a.buffer, g.b.buffer
        if (
            g.c.buffer is not s_buf
            or g.trans_a
            or not g.trans_b
            or a.scope != ir.SHARED
            or b.scope != ir.SHARED
            or len(a.shape) != 2
            or a.shape[0] != rows
            or tuple(b.shape) != (block_n, a.shape[1])
            or {a.dtype.name, b.dtype.name} != {half}
            or not (_whole(g.a) and _whole(g.b) and _whole(g.c))
            or not isinstance(g.clear_accum, ir.Const)
            or (g is not scores[0] and not _is_false(g.clear_accum))
        ):
            raise NotAttention("S (+)= Q K^T: gemms of whole shared tiles (Q x K^T) into one fragment")
    if (
        rows != ROWS
        or s_buf.scope != ir.FRAGMENT
        or o_buf.scope != ir.FRAGMENT
        or s_buf.dtype.name != "float32"
        or o_buf.dtype.name != "float32"
        or p_buf.scope not in (ir.SHARED, ir.FRAGMENT)
        or tuple(p_buf.shape) != (rows, block_n)
        or v_sh.scope != ir.SHARED
        or tuple(v_sh.shape) != (block_n, dim_v)
        or p_buf.dtype.name != half
        or half not in HALF_FLOATS
        or pv.trans_a
        or pv.trans_b
        or not all(_whole(r) for r in (pv.a, pv.b, pv.c))
        or not _is_false(pv.clear_accum)
    ):
        raise NotAttention("64 rows: S in fp32, then O (fp32) += P V with P and V fp16/bf16 tiles")
    q_side = [g.a.buffer for g in scores]
    k_side = [g.b.buffer for g in scores]
    ring = list(dict.fromkeys(k_side + [v_sh]))  # V may be one of the K tiles (MLA's latent KV)
    if len(set(q_side)) != len(q_side) or len(set(k_side)) != len(k_side):
        raise NotAttention("each score gemm reads its own Q and K tiles")
    if {s_buf, p_buf, o_buf} & set(q_side + ring) or len({s_buf, p_buf, o_buf}) != 3:
        raise NotAttention("S, P and O are fragments (or P a shared tile) of their own")
    if cost_model and not _worth_it(block_n, dim_v):
        raise NotAttention(
            "where the column split was not measured faster: it needs 512 output columns, 32 or 64 keys a tile"
        )
    pre_copies = [_box_copy_into(body[:at], b, "a Q tile") for b in q_side]
    ring_copies = [_box_copy_into(loop.body, b, "a K/V tile") for b in ring]
    for copy in pre_copies + ring_copies:
        _check_box(copy.src, tuple(copy.dst.buffer.shape))
        if copy.src.buffer.dtype != copy.dst.buffer.dtype:  # TMA copies bytes: no conversion on the way
            raise NotAttention("Q, K and V copied from global tensors of their shared buffers' dtype")
    first, last = loop.body.index(scores[0]), loop.body.index(scores[-1])
    if any(loop.body.index(c) > first for c in ring_copies):
        raise NotAttention("every K/V tile is copied in before the first score gemm")
    between = [s for s in loop.body[first : last + 1] if s not in scores and s not in ring_copies]
    if between:
        raise NotAttention("the score gemms follow one another")
    loop_body = [s for s in loop.body if s not in ring_copies]
    head = loop_body[: loop_body.index(scores[0])]
    tail = loop_body[loop_body.index(scores[-1]) + 1 : -1]
    before = [s for s in body[:at] if s not in pre_copies]
    after = body[at + 1 :]
    p_copy = None
    if p_buf.scope == ir.SHARED:
        writes = [s for s in ir.walk(before + loop.body + after) if touches(s, {p_buf}) and s is not pv]
        if (
            len(writes) != 1
            or writes[0] not in tail
            or not isinstance(writes[0], ir.Copy)
            or writes[0].dst.buffer is not p_buf
            or not (_whole(writes[0].src) and _whole(writes[0].dst))
            or writes[0].src.buffer.scope != ir.FRAGMENT
            or tuple(writes[0].src.buffer.shape) != (rows, block_n)
        ):
            raise NotAttention("P's shared tile is written once, by a T.copy of a whole fragment, and read by P V only")
        p_copy = writes[0]
    shared_ok = set(q_side + ring)
    for s in before + head + tail + after:
        if s is not p_copy:
            _check_row_local(s, rows, shared_ok)
    if any(
        isinstance(s, ir.Reduce) and s.src.buffer.dtype.name not in FLOATS
        for s in ir.walk(before + head + tail + after)
    ):
        raise NotAttention("row reductions of float tiles (their halves are traded through shared memory)")
    inputs = {c.src.buffer for c in pre_copies + ring_copies}
    if any(isinstance(s, ir.Copy) and s.dst.buffer in inputs for s in before + head + tail + after):
        raise NotAttention("no stores to the tensors Q, K and V are read from (the loader reads ahead)")
    if any(touches(s, {o_buf, p_buf}) for s in head):
        raise NotAttention("the loop statements before S = Q K^T leave O and P alone")
    fixed = (
        sum(2 * b.shape[0] * b.shape[1] for b in q_side)
        + 2 * rows * block_n
        + 1024 * (1 + _reductions(before + head + tail + after))
    )
    stage_bytes = sum(2 * b.shape[0] * b.shape[1] for b in ring)
    stages = min(3, (SHARED_BYTES - fixed) // stage_bytes)
    if stages < 2:
        raise NotAttention("two K/V stages that fit in shared memory")
    widths = _box_widths(scores, v_sh, dim_v)
    out = ColumnPlan(
        kernel, func, loop, pre_copies, ring_copies, scores, pv, p_copy, before, head, tail, after,
        block_n, dim_v, stages, widths,
    )  # fmt: skip
    written = {c.dst.buffer for c in pre_copies + ring_copies}
    check_written_before_read(written, before + head + scores + tail + [pv] + after)
    if not bound_the_loop(out):  # the consumers peel the first iteration
        raise NotAttention("a loop that provably runs at least once")
    out.deferred = _deferred_sums(out)
    return out


def _deferred_sums(p: ColumnPlan) -> dict:
    """Row sums whose partials can be traded once, after the loop, instead of every iteration.

    ``T.reduce_sum(x, d)`` whose result only feeds ``acc[i] = acc[i] * f[i] + d[i]`` (or
    ``acc[i] + d[i]``), ``x``, ``d`` and ``acc`` fp32, with ``acc`` zeroed before the loop and
    neither read nor written elsewhere in it: the recurrence is linear in ``d``, so each consumer
    can run it on its own half's sums and the two accumulators add up to the whole one
    (FlashAttention's running denominator)."""
    loop_stmts = list(p.loop.body)  # touches() looks inside each
    out = {}
    for r in (s for s in p.loop_tail if isinstance(s, ir.Reduce) and s.kind == "sum" and s.clear):
        d = r.dst.buffer
        if d.dtype.name != "float32" or r.src.buffer.dtype != d.dtype:  # a 16-bit sum is rounded whole, per row
            continue
        users = [s for s in loop_stmts if s is not r and touches(s, {d})]
        outside = [s for s in p.before + p.after if touches(s, {d})]
        if len(users) != 1 or outside or not isinstance(users[0], ir.Parallel):
            continue
        acc = _linear_update(users[0], d)
        if acc is None or acc.dtype != d.dtype or any(s is not users[0] and touches(s, {acc}) for s in loop_stmts):
            continue
        zeroed = [s for s in p.before if touches(s, {acc})]
        if len(zeroed) != 1 or not (isinstance(zeroed[0], ir.Fill) and is_const(zeroed[0].value, 0)):
            continue
        out[r] = acc
    return out


def _linear_update(s: ir.Parallel, d: ir.Buffer):
    """``acc`` where ``s`` is ``acc[i] = acc[i] * f + d[i]`` (``f`` reading neither), else None."""
    if len(s.vars) != 1 or len(s.body) != 1 or not isinstance(s.body[0], ir.Store):
        return None
    store, lane = s.body[0], s.vars[0]
    acc = store.buffer

    def at_lane(e, buf) -> bool:
        return isinstance(e, ir.Load) and e.buffer is buf and _lane_indices(e.indices, [lane])

    if not _lane_indices(store.indices, [lane]) or acc is d:
        return None
    value = store.value
    if not (isinstance(value, ir.BinOp) and value.op == "+"):
        return None
    for carried, added in ((value.lhs, value.rhs), (value.rhs, value.lhs)):
        if not at_lane(added, d):
            continue
        if at_lane(carried, acc):
            return acc
        if isinstance(carried, ir.BinOp) and carried.op == "*":
            for kept, factor in ((carried.lhs, carried.rhs), (carried.rhs, carried.lhs)):
                reads = {x.buffer for x in ir.iter_expr_tree(factor) if isinstance(x, ir.Load)}
                if at_lane(kept, acc) and not reads & {acc, d}:
                    return acc
    return None


def _worth_it(block_n: int, dim_v: int) -> bool:
    """The cost model, from an H200 sweep of both routes (``benchmarks/gluon_route_sweep.py``,
    ``gpu_logs/2026-12-01_s9_gluon_route_sweep.log``: MLA decode, latent 256 or 512 + rope 64, key
    tiles of 32 and 64, batch 32 x 1024 keys and 128 x 8192): at 512 output columns the column
    split is 1.24-1.46x faster than the tl lowering at both tiles and both sizes; at 256 columns it
    is slower on 3 of 4 (0.58-0.78x; 1.52x at 64-key tiles, batch 32). So: 512 columns, and key
    tiles of 32 to 64 (the measured ones).  Re-measured with the descriptors made on the host
    (``gpu_logs/2026-12-04_s29_gluon_route_sweep.log``): 512 columns 1.28-1.47x, 256 columns
    0.58-0.79x on all four."""
    return dim_v == 512 and block_n in (32, 64)


def _reductions(stmts: list) -> int:
    return sum(isinstance(s, ir.Reduce) for s in ir.walk(stmts))


def _box_widths(scores: list, v_sh: ir.Buffer, dim_v: int) -> dict:
    """The column width of each shared tile's TMA boxes: V in its consumers' halves, a K tile (and
    its Q) as V where it is V, else the widest power of two dividing it, up to 256 columns (a
    shared layout's shape is a power of two: 192 columns are three boxes of 64)."""
    widths = {v_sh: dim_v // 2}
    for g in scores:
        b, width = g.b.buffer, g.b.buffer.shape[1]
        w = widths.get(b, min(MAX_BOX, width & -width))
        if width % w or w < 16:  # wgmma's K step is 16 (fp16/bf16)
            raise NotAttention("K tiles whose width splits into TMA boxes of 16 to 256 columns")
        widths[b] = widths[g.a.buffer] = w
    if (dim_v // 2) % 64 or dim_v // 2 > MAX_BOX:
        raise NotAttention("an output whose halves are 64 to 256 columns")
    return widths


# ----------------------------------------------------------------------------------------- emission
class _ColumnEmitter(_Emitter):
    """The row-split emitter's statements, on this consumer's half of every tile's columns."""

    def __init__(self, p: ColumnPlan, fast_math: bool = False, host_descriptors: bool = False):
        super().__init__(p, fast_math, host_descriptors)
        self.used |= NAMES | {f"{p.kernel.name}_{part}" for part in ("exchange", "publish")}
        self.sites: dict = {}  # Reduce -> (buffer name, barrier name) of its exchange
        self.slot_dtypes: dict = {}  # exchange buffer name -> the Triton dtype of what it trades
        self.smem: dict = {}  # shared Buffer -> the name of its Gluon allocation
        self.pieces = {b: b.shape[1] // w for b, w in p.widths.items()}

    def fresh(self, name: str, also: str = "") -> str:
        """An unused name (and, with ``also``, the name plus that suffix unused too: both taken)."""
        out, n = name, 0
        while out in self.used or also and out + also in self.used:
            n += 1
            out = f"{name}_{n}"
        self.used |= {out, out + also}
        return out

    # this consumer's half of every tile's columns; all 64 rows
    def shape(self, buf: ir.Buffer) -> str:
        return "[" + ", ".join(str(d) for d in (ROWS, *(x // 2 for x in buf.shape[1:]))) + "]"

    def cols(self, width: int, layout: str) -> str:
        return f"(part * {width // 2} + gl.arange(0, {width // 2}, layout=gl.SliceLayout(0, {layout})))"

    def lane_extreme(self, axis: int, extent: int, largest: bool) -> str:
        if axis == 0:
            return repr(ROWS - 1) if largest else "0"
        return f"(part * {extent // 2} + {extent // 2 - 1})" if largest else f"(part * {extent // 2})"

    def first_row(self) -> str:
        return ""

    def statement(self, s) -> None:
        if s is self.p.p_copy:
            self.src.origin(s.loc)
            self.publish(self.name(s.src.buffer))
            return
        super().statement(s)

    def reduce(self, s: ir.Reduce) -> None:
        """This half's reduction, combined with the other consumer's (``_exchange``)."""
        src, dst = s.src.buffer, s.dst.buffer
        name = self.p.kernel.name
        fn = "gl.max" if s.kind == "max" else "gl.sum"
        part = f"{fn}({self.name(src)}, axis=1)"
        if self.layout_of(src) != "s_layout":
            part = f"gl.convert_layout({part}, row_layout)"
        out = self.src
        if s in self.p.deferred:  # this half's sums: the accumulator they feed is traded after the loop
            out.line(f"{self.bind(dst)} = {part}  # this half's columns (traded after the loop)")
            return
        buf, bar = self.sites[s]
        it = "it" if any(s is x for x in ir.walk(self.p.loop.body)) else "0"
        mine = self.fresh(f"{dst.name}_part")
        out.line(f"{mine} = {part}")
        other = f"{name}_exchange({mine}, {buf}, {bar}, {it}, part, row_layout)"
        value = f"gl.maximum({mine}, {other})" if s.kind == "max" else f"{mine} + {other}"
        if not s.clear:
            value = f"gl.maximum({self.name(dst)}, {value})" if s.kind == "max" else f"{self.name(dst)} + {value}"
        if src.dtype != dst.dtype:
            value = f"({value}).to(gl.{dst.dtype.triton})"
        out.line(f"{self.bind(dst)} = {value}")

    def publish(self, value: str) -> None:
        self.src.line(f"{self.p.kernel.name}_publish({value}.to({self.half}), p_smem, p_ready, p_free, it, part)")

    # ------------------------------------------------------------ the functions
    def module(self) -> str:
        p = self.p
        name = p.kernel.name
        for s in ir.walk(p.before + p.loop_head + p.loop_tail + p.after):
            if isinstance(s, ir.Reduce):
                traded = p.deferred.get(s, s.dst.buffer).name  # a deferred sum trades its accumulator
                self.sites[s] = (self.fresh(f"{traded}_slots"), self.fresh(f"{traded}_ready"))
                # the partials' dtype: the reduced tile's (gl.max / gl.sum keep a float's dtype)
                self.slot_dtypes[self.sites[s][0]] = p.deferred.get(s, s.src.buffer).dtype.triton
        for copy in p.pre_copies + p.ring_copies:
            self.smem[copy.dst.buffer] = self.fresh(f"{copy.dst.buffer.name}_smem", also="_desc")
        params = [self.param_name(x) for x in list(p.func.params) + list(p.func.sizes)]
        block = [self.name(v) for v in p.kernel.block_vars]
        sites = [n for pair in self.sites.values() for n in pair]
        shared = list(self.smem.values()) + ["q_ready", "kv_ready", "kv_free"]
        consumer, consumer_args = self.consumer(
            f"{name}_consumer", params + block + shared + ["p_smem", "p_ready", "p_free"] + sites
        )
        loader, loader_args = self.loader(f"{name}_loader", params + block + self._descs() + shared)
        entry = self.entry(f"{name}_kernel", params, consumer_args, loader_args)
        return "\n\n\n".join((self.helpers(), consumer, loader, entry))

    def helpers(self) -> str:
        name = self.p.kernel.name
        barrier = "gl.barrier()" if _has_barrier() else "gl.thread_barrier()"
        return f'''@gluon.jit
def {name}_exchange(value, slots, ready, it, part: gl.constexpr, layout: gl.constexpr):
    """This consumer's row partials out, the other's in (two slots a consumer, by iteration parity)."""
    slot = (it % 2) * 2
    slots.index(slot + part).store(value)
    {barrier}
    mbarrier.arrive(ready.index(it % 2), count=1)
    mbarrier.wait(ready.index(it % 2), (it // 2) & 1)
    return slots.index(slot + 1 - part).load(layout)


@gluon.jit
def {name}_publish(p, p_smem, p_ready, p_free, it, part: gl.constexpr):
    """This consumer's half of P into the shared tile both read, once both are done with the last."""
    mbarrier.wait(p_free, (it & 1) ^ 1)
    p_smem.index(part).store(p)
    fence_async_shared()
    {barrier}
    mbarrier.arrive(p_ready, count=1)'''

    def _descs(self) -> list:
        return [f"{self.smem[c.dst.buffer]}_desc" for c in self.p.pre_copies + self.p.ring_copies]

    def _slot(self, buf: ir.Buffer, piece: int | str, ring: bool) -> str:
        """Which allocation of a shared tile holds ``piece`` (of this iteration's stage, in the ring)."""
        n = self.pieces[buf]
        if not ring:
            return str(piece)
        stage = "stage" if n == 1 else f"stage * {n}"
        return stage if piece == 0 else f"{stage} + {piece}"

    def _tile(self, buf: ir.Buffer, index: str) -> str:
        """Piece ``index`` of a shared tile as a 2-D memory descriptor."""
        return f"{self.smem[buf]}.index({index}).reshape([{buf.shape[0]}, {self.p.widths[buf]}])"

    def loader(self, fn: str, args: list) -> str:
        p = self.p
        self._header(fn)
        out = self.src
        starts = [e for c in p.pre_copies + p.ring_copies for e in c.src.starts]
        needed = self._lets_needed([p.loop.start, p.loop.stop, *starts])
        self._scalar_lets(p.before, needed)
        out.line(f"mbarrier.expect(q_ready, {self._bytes(p.pre_copies)})")
        for copy in p.pre_copies:
            self._copy(copy, "q_ready", False)
        self.open_loop(self.expr(p.loop.start, None))
        self._scalar_lets(p.loop.body, needed)
        out.line("mbarrier.wait(kv_free.index(stage), phase ^ 1)  # the consumers are done with this stage")
        out.line(f"mbarrier.expect(kv_ready.index(stage), {self._bytes(p.ring_copies)})")
        for copy in p.ring_copies:
            self._copy(copy, "kv_ready.index(stage)", True)
        return self._finish(args, [])

    def _bytes(self, copies: list) -> str:
        """What the TMA boxes of ``copies`` bring in, for the barrier that waits for them."""
        terms = []
        for c in copies:
            n, desc = self.pieces[c.dst.buffer], f"{self.smem[c.dst.buffer]}_desc.block_type.nbytes"
            terms.append(desc if n == 1 else f"{n} * {desc}")
        return " + ".join(terms)

    def _copy(self, copy: ir.Copy, barrier: str, ring: bool) -> None:
        self.src.origin(copy.loc)
        buf = copy.dst.buffer
        width = self.p.widths[buf]
        for piece in range(self.pieces[buf]):
            starts = [self.expr(e, None) for e in copy.src.starts]
            starts[-1] = str(piece * width)
            self.src.line(
                f"{self.tma_load}({self.smem[buf]}_desc, [{', '.join(starts)}], {barrier}, {self.smem[buf]}.index({self._slot(buf, piece, ring)}))"
            )

    def consumer(self, fn: str, args: list) -> str:
        p = self.p
        self._header(fn)
        out = self.src
        for layout, width in (("s_layout", p.block_n), ("o_layout", p.dim_v)):
            out.line(
                f"{layout}: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, {width // 2}, 16])"
            )
        out.line("row_layout: gl.constexpr = gl.SliceLayout(1, s_layout)")
        out.line(f"row_index = gl.arange(0, {ROWS}, layout=row_layout)")
        self.statements(p.before)
        # S zeroed before the loop is zero in its first iteration only: the score gemms, emitted once
        # for every iteration, accumulate unless the loop's own statements zero it (_loop_head)
        self.zero.discard(p.qk.c.buffer)
        for buf in self._first_written_in_loop():
            out.line(f"{self.name(buf)} = {self.full(buf, '0')}  # assigned in the loop, read after it")
        out.line("mbarrier.wait(q_ready, 0)")
        self.open_loop(self.expr(p.loop.start, None))
        self._loop_head()
        out.line("mbarrier.wait(kv_ready.index(stage), phase)")
        self._scores()
        self.statements(p.loop_tail)
        if p.p_copy is None:
            self.publish(self.name(p.pv.a.buffer))
        self._pv()
        out.depth -= 1
        for r, acc in p.deferred.items():
            buf, bar = self.sites[r]
            name = self.name(acc)
            out.line(f"{name} = {name} + {p.kernel.name}_exchange({name}, {buf}, {bar}, 0, part, row_layout)")
        self.statements(p.after)
        return self._finish(args, ["part: gl.constexpr"])

    def _first_written_in_loop(self) -> list:
        """Fragments the loop assigns and the statements after it read, but no statement before it
        writes: a Gluon loop only carries out names that exist before it."""
        p = self.p
        before = {writes_of(s) for s in ir.walk(p.before)}
        assigned = dict.fromkeys(writes_of(s) for s in ir.walk(p.loop_head + p.scores + p.loop_tail))
        return [b for b in assigned if b is not None and b not in before and any(touches(s, {b}) for s in p.after)]

    def _scores(self) -> None:
        p = self.p
        out = self.src
        s = self.name(p.qk.c.buffer)
        half = p.block_n // 2
        use_acc = (
            not (isinstance(p.qk.clear_accum, ir.Const) and p.qk.clear_accum.value) and p.qk.c.buffer not in self.zero
        )
        for g in p.scores:
            out.origin(g.loc)
            a, b = g.a.buffer, g.b.buffer
            for piece in range(self.pieces[b]):
                q_tile = self._tile(a, self._slot(a, piece, False))
                k_tile = self._tile(b, self._slot(b, piece, True))
                k_tile = f"{k_tile}.slice(part * {half}, {half}, dim=0).permute((1, 0))"
                if use_acc:
                    out.line(f"{s} = warpgroup_mma({q_tile}, {k_tile}, {s}, is_async=True)")
                else:
                    zeros = f"gl.zeros([{ROWS}, {half}], gl.float32, s_layout)"
                    out.line(f"{s} = warpgroup_mma({q_tile}, {k_tile}, {zeros}, use_acc=False, is_async=True)")
                    use_acc = True
        out.line(f"{s} = warpgroup_mma_wait(0, deps=({s},))")
        self.zero.discard(p.qk.c.buffer)

    def _pv(self) -> None:
        p = self.p
        out = self.src
        out.origin(p.pv.loc)
        o = self.name(p.pv.c.buffer)
        v, half = p.pv.b.buffer, p.block_n // 2
        v_tile = self._tile(v, self._slot(v, "part", True))
        out.line("mbarrier.wait(p_ready, it & 1)  # both halves of P are in")
        for piece in range(2):
            out.line(
                f"{o} = warpgroup_mma(p_smem.index({piece}), {v_tile}.slice({piece * half}, {half}, dim=0), {o}, is_async=True)"
            )
        out.line(f"{o} = warpgroup_mma_wait(0, deps=({o},))")
        out.line("mbarrier.arrive(kv_free.index(stage), count=1)")
        out.line("mbarrier.arrive(p_free, count=1)")

    def entry(self, fn: str, params: list, consumer_args: list, loader_args: list) -> str:
        p = self.p
        descriptors = [
            (
                f"{self.smem[c.dst.buffer]}_desc",
                c.src.buffer,
                self._box(c.src, c.dst.buffer.shape[0], p.widths[c.dst.buffer]),
            )
            for c in p.pre_copies + p.ring_copies
        ]
        out = self.entry_head(fn, params, descriptors)
        for copy in p.pre_copies + p.ring_copies:
            shared = copy.dst.buffer
            count = self.pieces[shared] * (p.stages if copy in p.ring_copies else 1)
            box = self._box(copy.src, shared.shape[0], p.widths[shared])
            out.line(
                f"{self.smem[shared]} = gl.allocate_shared_memory({self.half}, [{count}] + {box}, {self.smem[shared]}_desc.layout)"
            )
        half = p.block_n // 2
        out.line(
            f"p_smem = gl.allocate_shared_memory({self.half}, [2, {ROWS}, {half}], "
            f"gl.NVMMASharedLayout.get_default_for([{ROWS}, {half}], {self.half}))"
        )
        for buf, _ in self.sites.values():
            out.line(
                f"{buf} = gl.allocate_shared_memory(gl.{self.slot_dtypes[buf]}, [4, {ROWS}], gl.SwizzledSharedLayout(1, 1, 1, [0]))"
            )
        for bar, count in (("q_ready", 1), ("p_ready", 2), ("p_free", 2)):
            out.line(f"{bar} = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())")
            out.line(f"mbarrier.init({bar}, count={count})")
        traded = [bar for _, bar in self.sites.values()]
        for bar in ["kv_ready", "kv_free"] + traded:
            n = 2 if bar in traded else p.stages
            out.line(f"{bar} = gl.allocate_shared_memory(gl.int64, [{n}, 1], mbarrier.MBarrierLayout())")
        out.line(f"for stage in gl.static_range({p.stages}):")
        out.line("    mbarrier.init(kv_ready.index(stage), count=1)")
        out.line("    mbarrier.init(kv_free.index(stage), count=2)")
        if traded:
            out.line("for parity in gl.static_range(2):")
            for bar in traded:
                out.line(f"    mbarrier.init({bar}.index(parity), count=2)")
        name = p.kernel.name
        c_args = ", ".join(consumer_args)
        out.line("gl.warp_specialize(")
        out.line("    [")
        for part in range(2):
            out.line(f"        ({name}_consumer, ({c_args}, {part})),")
        out.line(f"        ({name}_loader, ({', '.join(loader_args)})),")
        out.line("    ],")
        out.line("    [4, 1],")
        out.line("    [240, 24],")
        out.line(")")
        return "\n".join(out.lines)


def _has_barrier() -> bool:
    """Triton 3.6 calls the partition barrier ``gl.thread_barrier``; later versions ``gl.barrier``."""
    from triton.experimental.gluon import language as gl

    return hasattr(gl, "barrier")


def emit(p: ColumnPlan, fast_math: bool = False, host_descriptors: bool = False) -> tuple[str, str, list]:
    """The Gluon source of the planned kernel, the entry's name and the descriptors the host makes
    for it (gluon_attention.emit); ``fast_math``: the kernel's TL_ENABLE_FAST_MATH."""
    emitter = _ColumnEmitter(p, fast_math, host_descriptors)
    return emitter.module(), f"{p.kernel.name}_kernel", emitter.on_host
