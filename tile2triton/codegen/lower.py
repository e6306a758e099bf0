"""Lower one TileIR kernel to a Triton function AST.

Model: shared, fragment and local buffers live in registers as Triton tiles whose extents
are padded to powers of two (padded lanes hold junk and are masked where they could be
observed: reductions, dot products, stores).  ``T.Parallel`` opens a *lane space*: its loop
variables become broadcast ``tl.arange`` tiles and the body is evaluated once, as tile
expressions.  Global memory is reached through masked pointer arithmetic.

``KernelLowerer.lower_stmts`` drives the statement rules (rules.py, one per TileIR statement);
they, and the helpers for scratch, threads, descriptors, intrinsics and PTX, are handed the
lowerer and see it through ``values.Lowerer``: none of them imports this module.
"""

from __future__ import annotations

import ast
import contextlib
import keyword
import operator
import os
import struct
from dataclasses import dataclass, field

from .. import ir
from ..errors import TileLangCompileError
from ..ir import BOOL, FLOAT32, INT32
from ..ir.exprs import binary_dtype
from ..language.dtypes import DType
from . import e8m0, exits, fp4, scratch
from . import pyast as P
from .descriptors import DescriptorState
from .intrinsics import lower_call
from .ptx import lower_inline_asm
from .rules import LOWERINGS
from .scopes import lower_safe_values  # noqa: F401 - registers the T.sblock markers' lowering
from .scratch import ScratchState
from .values import (
    AtDim,
    DimIndex,
    IrregularDim,
    LaneDim,
    Lowered,
    RegBuf,
    Scope,
    Tile,
    convert,
    ir_expr,
    is_bool_literal,
    is_fp8,
    is_literal,
    literal_value,
    load_other,
    prod,
    safe_values,
)
from .warp import lower_warp_op

E8M0 = "float8_e8m0fnu"  # uint8 in memory, float32 in registers (emit.py's _e8m0_* helpers)
RESERVED = {"tl", "triton", "range", "float", "int", "min", "max", "abs", "len", "print"}


class Names:
    def __init__(self):
        self.taken: set[str] = set(RESERVED)

    def fresh(self, hint: str) -> str:
        base = hint if hint.isidentifier() and not keyword.iskeyword(hint) else "v"
        candidate, n = base, 1
        while candidate in self.taken:
            candidate = f"{base}_{n}"
            n += 1
        self.taken.add(candidate)
        return candidate


def _env_flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    return default if value is None else value not in ("0", "", "false", "no")


@dataclass
class LoweringOptions:
    interpret: bool = False  # generating for Triton's interpreter (bf16 arithmetic upcast)
    # sequential loops without carried dependences become tile axes (TILE2TRITON_VECTORIZE_LOOPS=0: keep them)
    vectorize_loops: bool = field(default_factory=lambda: _env_flag("TILE2TRITON_VECTORIZE_LOOPS", True))
    # global boxes copied inside loops load through tensor descriptors (TMA); the runtime sets it
    # for cards and Triton versions that have them
    tensor_descriptors: bool = False
    # every shared buffer in per-program global scratch (TILE2TRITON_SHARED_SCRATCH=1; see scratch.py)
    shared_scratch: bool = field(default_factory=lambda: _env_flag("TILE2TRITON_SHARED_SCRATCH", False))
    # launch parameters chosen for speed (runtime/tuning.py): None keeps threads / 32 warps and
    # T.Pipelined's own stage count; warp_specialize asks Triton to warp-specialize pipelined loops
    num_warps: int | None = None
    num_stages: int | None = None
    warp_specialize: bool = False
    # at most this many pipeline stages for every loop (T.Pipelined's and Triton's launch default for
    # the others): the runtime's retry of a kernel that does not fit in shared memory (runtime/kernel.py)
    max_stages: int | None = None
    # pass_configs' TL_ENABLE_FAST_MATH: approximate PTX for the functions Triton computes accurately
    fast_math: bool = False

    def pipeline_kwargs(self, source_stages: int) -> dict:
        """``tl.range`` keywords of a ``T.Pipelined`` loop: its stage count, unless one was chosen."""
        stages = self.num_stages or source_stages
        kwargs = {"num_stages": min(stages, self.max_stages) if self.max_stages else stages}
        if self.warp_specialize and not self.interpret:
            kwargs["warp_specialize"] = True
        return kwargs


@dataclass
class KernelLowerer:
    kernel: ir.Kernel
    params: list  # Buffer / Var of the PrimFunc, in order
    options: LoweringOptions
    let_count: dict = field(default_factory=dict)  # let Var -> how many times it is bound (the whole kernel)
    # what the statement being lowered sees (values, lane space, masks); saved and restored whole
    scope: Scope = field(default_factory=Scope)
    # where values live
    regs: dict = field(default_factory=dict)  # ir.Buffer -> RegBuf
    pointers: dict = field(default_factory=dict)  # global ir.Buffer -> Triton name
    scratch: ScratchState = field(default_factory=ScratchState)  # shared buffers in global scratch
    descriptors: DescriptorState = field(default_factory=DescriptorState)  # tensor descriptors (TMA)
    # the code being generated
    names: Names = field(default_factory=Names)
    out: list = field(default_factory=list)  # statements of the body being lowered
    origin: ir.Loc | None = None  # the TileLang statement being lowered
    helpers: set = field(default_factory=set)  # module-level @triton.jit helpers used
    uniform_vars: frozenset = frozenset()  # thread view: private scalars the same in every thread (one scalar)
    following: list = field(default_factory=list)  # statements after the one being lowered
    statement_names: dict = field(default_factory=dict)  # named offsets/masks of the statement being lowered
    statement_serial: int = 0  # counts the TileLang statements lowered so far

    # ------------------------------------------------------------------ plumbing
    def error(self, message: str, loc: ir.Loc | None = None) -> TileLangCompileError:
        return TileLangCompileError(message, loc or self.origin)

    def emit(self, stmt: ast.stmt) -> None:
        stmt.t2t_origin = self.origin
        self.out.append(stmt)

    @contextlib.contextmanager
    def scoped(self, **changes):
        """Lower something with these ``Scope`` fields changed; they are put back after."""
        saved = {name: getattr(self.scope, name) for name in changes}
        for name, value in changes.items():
            setattr(self.scope, name, value)
        try:
            yield
        finally:
            for name, value in saved.items():
                setattr(self.scope, name, value)

    def assign(self, hint: str, value: ast.expr) -> str:
        n = self.names.fresh(hint)
        self.emit(P.assign(n, value))
        return n

    def block(self, stmts, fn=None) -> list:
        """Lower ``stmts`` into a fresh statement list (a loop or branch body)."""
        saved, self.out = self.out, []
        try:
            with scratch.body(self, stmts if fn is None else None):
                if fn is not None:
                    fn()
                else:
                    self.lower_stmts(stmts)
            return self.out or [ast.Pass()]
        finally:
            self.out = saved

    def lower_stmts(self, stmts) -> None:
        for position, s in enumerate(stmts):
            self.following = stmts[position + 1 :]
            self.statement_names = {}
            self.statement_serial += 1
            rule = LOWERINGS.get(type(s))
            if rule is None:
                raise self.error(f"{type(s).__name__} is not supported by tile2triton yet", s.loc)
            saved = self.origin
            self.origin = s.loc
            try:
                fp4.check_stmt(s, self.error)
                rule(self, s)
                if self.scope.exits is not None and exits.leaves(s):  # the rest runs unless it left
                    if exits.guard_rest(self, stmts[position + 1 :]):
                        return
            finally:
                self.origin = saved

    def storage_dtype(self, dt: DType) -> DType:
        """The dtype a register tile is kept in (bf16 arithmetic is wrong in the interpreter)."""
        if (self.options.interpret and dt.name == "bfloat16") or dt.name == E8M0:
            return FLOAT32
        if fp4.is_packed_fp4(dt):  # an fp4 value in registers is its 4-bit code
            return fp4.UINT8
        return dt

    def narrowed(self, node: ast.expr, dt: DType) -> ast.expr:
        """``node``, a ``tl.max``/``tl.min`` over values of ``dt``, back in ``dt``'s storage dtype:
        those widen 8- and 16-bit values to 32 bits, and a register tile assigned in a loop must keep
        its type on the GPU (Triton rejects a loop-carried fp16 tile re-assigned as fp32)."""
        storage = self.storage_dtype(dt)
        return P.to(node, storage) if storage.bits < 32 else node

    def cast(self, t: Tile, dt: DType) -> Tile:
        """``t`` converted to ``dt`` (kept in ``dt``'s storage dtype)."""
        if t.dtype == dt:
            return t
        if fp4.is_packed_fp4(t.dtype):  # an fp4 code: decode, then convert the float
            return self.cast(fp4.decode(self, t), dt)
        if fp4.is_packed_fp4(dt):
            return Tile(fp4.encode(self, t).node, dt, t.axes)
        if is_literal(t):
            value = literal_value(t.node)
            if e8m0.is_e8m0(dt) and not isinstance(value, bool):  # a constant rounds here, as at run time
                return Tile(P.const(e8m0.round_literal(value)), dt, t.axes)
            if dt.is_float or (dt.is_int and isinstance(value, int)):
                return Tile(t.node, dt, t.axes)  # Triton literals adopt their operand's type
            return Tile(P.call("tl.full", P.list_([]), t.node, P.dtype(self.storage_dtype(dt))), dt, t.axes)
        if self.options.interpret and dt.name == "bfloat16":
            self.helpers.add("_round_to_bf16")
            return Tile(P.call("_round_to_bf16", t.node), dt, t.axes)
        if dt.name == E8M0:  # held as float32 on its grid (its uint8 bits only in memory)
            self.helpers.add("_round_to_e8m0")
            return Tile(P.call("_round_to_e8m0", t.node), dt, t.axes)
        if self.options.interpret and dt.name in ("float8_e4m3fn", "float8_e5m2"):
            helper = "_round_to_e4m3" if dt.name == "float8_e4m3fn" else "_round_to_e5m2"
            self.helpers.add(helper)
            return Tile(convert(P.call(helper, t.node), dt, t.axes), dt, t.axes)
        want, have = self.storage_dtype(dt), self.storage_dtype(t.dtype)
        if have == want:
            return Tile(t.node, dt, t.axes)
        node = t.node
        if (is_fp8(want) and not have.is_float) or (is_fp8(have) and not want.is_float):
            node = convert(node, FLOAT32, t.axes)  # Triton casts integers to and from fp8 only through a float
        return Tile(convert(node, want, t.axes), dt, t.axes)

    # ------------------------------------------------------------------ lane spaces
    def lane_mask(self, axes, within: bool = False) -> ast.expr | None:
        """Padding masks of ``axes`` and the active ``if`` conditions (with ``within``, only the
        conditions that vary along ``axes`` alone: enough to keep a load in bounds)."""
        parts = []
        if self.scope.lanes is not None:
            for k in sorted(axes):
                if self.scope.lanes.padded[k] != self.scope.lanes.extents[k]:
                    parts.append(P.binop("<", P.name(self.scope.lanes.names[k]), P.const(self.scope.lanes.extents[k])))
        parts += [c.node for c in self.scope.conds if not within or c.axes <= frozenset(axes)]
        return P.and_all(parts)

    def cond_axes(self) -> frozenset:
        axes = frozenset()
        for c in self.scope.conds:
            axes |= c.axes
        return axes

    # ------------------------------------------------------------------ expressions
    def ev(self, e) -> Tile:
        if isinstance(e, Lowered):  # a value the rule already lowered
            return e.tile
        if isinstance(e, ir.Const):
            if fp4.is_packed_fp4(e.dtype):  # T.float4_e2m1fn(1.5): its code
                return fp4.literal(e.value, e.dtype)
            if e8m0.is_e8m0(e.dtype) and not isinstance(e.value, bool):  # T.cast(3, e8m0): 4.0
                return Tile(P.const(e8m0.round_literal(e.value)), e.dtype)
            return Tile(P.const(e.value), e.dtype)
        if isinstance(e, ir.VarRef):
            if e.var not in self.scope.env:
                raise self.error(f"'{e.var.name}' is used outside the region where it is defined")
            return self.scope.env[e.var]
        if isinstance(e, ir.Load):
            if e.buffer.scope == ir.GLOBAL:
                return self.global_load(e.buffer, [self.ev(i) for i in e.indices], e.indices)
            if e.buffer in self.scratch.views:
                return scratch.load(self, e.buffer, e.indices)
            with scratch.register_path(self, e.buffer):
                return self.reg_read(e.buffer, e.indices)
        if fp4.touches(e):  # arithmetic on fp4 values: on their floats, not their codes
            return self.ev(fp4.in_float32(e, self.error))
        if isinstance(e, ir.BinOp):
            return self.rounded(self.ev_binop(e))
        if isinstance(e, ir.Compare):
            known = True if e in self.scope.known_true else self.scope.ranges.compare(e.op, e.lhs, e.rhs)
            if known is not None:  # e.g. a key index that never reaches the sequence's end
                return Tile(P.const(known), BOOL)
            a, b = self.ev(e.lhs), self.ev(e.rhs)
            dt = binary_dtype("+", e.lhs, e.rhs)  # the dtype the operands are compared in
            a, b = _literal_in(a, dt), _literal_in(b, dt)
            return Tile(P.binop(e.op, a.node, b.node), BOOL, a.axes | b.axes)
        if isinstance(e, ir.UnaryOp):
            a = self.ev(e.operand)
            if is_bool_literal(a) and e.op != "-":  # ~True is -2 in Python: fold the negation here
                return Tile(P.const(not a.node.value), BOOL)
            if e.op == "-":
                return Tile(ast.UnaryOp(ast.USub(), a.node), e.dtype, a.axes)
            if e.op == "~":
                return Tile(ast.UnaryOp(ast.Invert(), a.node), e.dtype, a.axes)
            return Tile(P.binop("==", a.node, P.const(0)), BOOL, a.axes)
        if isinstance(e, ir.Cast):
            return self.cast(self.ev(e.value), e.dtype)
        if isinstance(e, ir.Select):
            c = self.ev(e.cond)
            if is_bool_literal(c):
                return self.cast(self.ev(e.true_value if c.node.value else e.false_value), e.dtype)
            a, b = self.ev(e.true_value), self.ev(e.false_value)
            a, b = self.cast(a, e.dtype), self.cast(b, e.dtype)
            return Tile(P.call("tl.where", c.node, a.node, b.node), e.dtype, c.axes | a.axes | b.axes)
        if isinstance(e, ir.Call):
            return self.rounded(lower_call(self, e))
        if isinstance(e, ir.InlineAsm):
            return lower_inline_asm(self, e)
        if isinstance(e, ir.WarpOp):
            return lower_warp_op(self, e)
        raise self.error(f"cannot lower expression {e!r}")

    def rounded(self, t: Tile) -> Tile:
        """Under the interpreter bf16 values are kept in fp32: round each bf16 result, as the GPU's
        bf16 arithmetic does, so that comparisons of intermediate values agree with it."""
        if t.dtype.name == E8M0 and not is_literal(t):  # held as float32: back on its grid
            self.helpers.add("_round_to_e8m0")
            return Tile(P.call("_round_to_e8m0", t.node), t.dtype, t.axes)
        if not (self.options.interpret and t.dtype.name == "bfloat16") or is_literal(t):
            return t
        self.helpers.add("_round_to_bf16")
        return Tile(P.call("_round_to_bf16", t.node), t.dtype, t.axes)

    def ev_binop(self, e: ir.BinOp) -> Tile:
        a, b = self.ev(e.lhs), self.ev(e.rhs)
        axes = a.axes | b.axes
        op = e.op
        x, y = literal_value(a.node), literal_value(b.node)
        if e.dtype.kind == "int" and type(x) is int and type(y) is int and op in _HOST_INT_OPS and (y or op in "+-*"):
            return Tile(P.const(_HOST_INT_OPS[op](x, y)), e.dtype)  # e.g. a split bound of constants
        if op in ("and", "or") or (op in ("&", "|") and a.dtype == b.dtype == BOOL):
            conjunction = op in ("and", "&")
            for known, other in ((a, b), (b, a)):
                if is_bool_literal(known):  # x & True is x, x & False is False (and dually for |)
                    return other if known.node.value == conjunction else known
            node = P.binop("&" if conjunction else "|", a.node, b.node)
            if bool(a.axes) != bool(b.axes):  # a 0-d operand: the interpreter's `&` yields int data
                node = self.scalar_mask(node)
            return Tile(node, BOOL, axes)
        if op in ("+", "-") and e.dtype.is_int and literal_value(b.node) == 0 and a.dtype == e.dtype:
            return a  # ``i + past_len`` with past_len = 0
        if op in ("//", "%") and e.dtype.is_int:
            if not (self.scope.ranges.nonneg(e.lhs) and self.scope.ranges.nonneg(e.rhs)):
                helper = "_floordiv" if op == "//" else "_floormod"
                self.helpers.add(helper)
                return Tile(P.call(helper, a.node, b.node), e.dtype, axes)
            return Tile(P.binop(op, a.node, b.node), e.dtype, axes)
        if op == "/" and e.dtype.is_int:
            return Tile(P.binop("//", a.node, b.node), e.dtype, axes)  # TVM int division truncates
        if op == "//" and e.dtype.is_float:
            return Tile(P.call("tl.floor", P.binop("/", a.node, b.node)), e.dtype, axes)
        if e.dtype.is_float and a.dtype != b.dtype and not (is_literal(a) or is_literal(b)):
            a, b = self.cast(a, e.dtype), self.cast(b, e.dtype)
        if e.dtype.is_int and a.dtype.is_int and b.dtype.is_int and a.dtype.kind != b.dtype.kind:
            # uint32 with int32: TVM computes in the signed type, Triton would in the unsigned one
            if a.dtype.bits == b.dtype.bits and not (is_literal(a) or is_literal(b)):
                a, b = self.cast(a, e.dtype), self.cast(b, e.dtype)
        return Tile(P.binop(op, a.node, b.node), e.dtype, axes)

    def scalar(self, e, what: str) -> Tile:
        t = self.ev(e)
        if t.axes:
            raise self.error(f"{what} must be the same for every T.Parallel iteration / thread")
        return t

    # ------------------------------------------------------------------ global memory
    def pointer(self, buf: ir.Buffer) -> str:
        return self.pointers[buf.root]

    def global_address(self, buf: ir.Buffer, idx: list[Tile], idx_ir: list, extra_axes=frozenset(), load=False):
        """Offsets and mask of ``buf[idx]``: bounds per dimension unless provable.  A load needs only
        the conditions of its own lanes (its value is used under all of them anyway)."""
        offs = None
        axes = frozenset(extra_axes)
        mask_parts = []
        scalar_parts = False
        for d, (t, e) in enumerate(zip(idx, idx_ir)):
            axes |= t.axes
            if _loads(t.node):  # a data-dependent index (``H[A[i] % n]``): loaded once, named
                t = Tile(self.named(t.node, "idx"), t.dtype, t.axes)
            stride = buf.strides[d]
            term = t.node
            if not (isinstance(stride, int) and stride == 1):
                term = P.binop("*", t.node, self.ev(ir_expr(stride)).node)
            offs = term if offs is None else P.binop("+", offs, term)
            in_bounds = []
            if e is None or not self.scope.ranges.below(e, buf.shape[d]):
                in_bounds.append(P.binop("<", t.node, self.ev(ir_expr(buf.shape[d])).node))
            if e is None or not self.scope.ranges.nonneg(e):
                in_bounds.append(P.binop(">=", t.node, P.const(0)))
            mask_parts += in_bounds
            scalar_parts = scalar_parts or (bool(in_bounds) and not t.axes)
        lane = self.lane_mask(axes, within=load)
        # a block-uniform `if` (0-d) joined with per-lane parts: the interpreter's `&` yields int data
        scalar_parts = scalar_parts or (lane is not None and any(not c.axes for c in self.scope.conds))
        mask = P.and_all(mask_parts + ([lane] if lane is not None else []))
        if scalar_parts and mask is not None:
            mask = self.scalar_mask(mask, block=bool(axes))
        return self.named(offs, "offs") if offs is not None else P.const(0), self.named(mask, "mask"), axes

    def named(self, node: ast.expr | None, hint: str) -> ast.expr | None:
        """Give an offset or mask expression a name, once per TileLang statement (the same mask
        serves a statement's loads and its store), as a person writing Triton would."""
        if node is None or isinstance(node, (ast.Name, ast.Constant)) or self.scope.inline_only:
            return node
        key = ast.dump(node)
        if key not in self.statement_names:
            self.statement_names[key] = self.assign(hint, node)
        return P.name(self.statement_names[key])

    def global_load(self, buf: ir.Buffer, idx: list[Tile], idx_ir: list) -> Tile:
        offs, mask, axes = self.global_address(buf, idx, idx_ir, load=True)
        if fp4.is_packed_fp4(buf.dtype):
            return fp4.load(self, buf, offs, mask, axes)
        ptr = self.named_offsets(buf, offs)
        kwargs = {}
        if mask is not None:  # out of bounds reads 0, or the tensor's T.annotate_safe_value
            kwargs = {"mask": mask, "other": load_other(buf.dtype, safe_values(self).get(buf.root, 0))}
        node = P.call("tl.load", ptr, **kwargs)
        if buf.dtype.name == E8M0:
            self.helpers.add("_e8m0_to_float")
            node = P.call("_e8m0_to_float", node)
        elif self.storage_dtype(buf.dtype) != buf.dtype:
            node = P.to(node, self.storage_dtype(buf.dtype))
        return Tile(node, buf.dtype, axes)

    def named_offsets(self, buf: ir.Buffer, offs: ast.expr) -> ast.expr:
        ptr = P.name(self.pointer(buf))
        if buf.dtype != buf.root.dtype:  # T.view with another dtype: the same bytes, reinterpreted
            ptr = P.call(P.attr(ptr, "to"), P.call("tl.pointer_type", P.dtype(buf.dtype)), bitcast=True)
        if isinstance(offs, ast.Constant) and offs.value == 0:
            return ptr
        if isinstance(offs, ast.Name):
            return P.binop("+", ptr, offs)
        return P.binop("+", ptr, offs)

    def global_store(self, buf: ir.Buffer, idx: list[Tile], idx_ir: list, value: Tile) -> None:
        offs, mask, axes = self.global_address(buf, idx, idx_ir, value.axes | self.cond_axes())
        if (value.axes | self.cond_axes()) - frozenset().union(*(t.axes for t in idx)):
            # several iterations write one element (TileLang leaves the winner unspecified)
            spread = [self.scope.lanes.padded[k] if k in axes else 1 for k in range(self.scope.lanes.rank)]
            offs = P.binop("+", offs, P.call("tl.zeros", P.list_(spread), P.dtype(INT32)))
        if fp4.is_packed_fp4(buf.dtype):
            fp4.store(self, buf, offs, self.cast(value, buf.dtype), mask, axes)
            return
        ptr = self.named_offsets(buf, offs)
        node = self.cast(value, buf.dtype).node
        if buf.dtype.name == E8M0:
            node = e8m0.encode(self, node)
        kwargs = {"mask": mask} if mask is not None else {}
        self.emit(P.expr_stmt(P.call("tl.store", ptr, node, **kwargs)))

    # ------------------------------------------------------------------ register buffers
    def scalar_mask(self, node: ast.expr, block: bool = False) -> ast.expr:
        """A condition with lane-independent parts.  Under the interpreter loop counters are Python
        ints and a comparison of a program id keeps int32 data under its int1 type; either breaks
        ``mask=`` ('mask has unsupported dtype'), and ``tl.where`` rebuilds it as true booleans."""
        if self.options.interpret:
            return P.call("tl.where", node, P.const(True), P.const(False))
        return node

    def broadcast(self, t: Tile, shape) -> ast.expr:
        """``t`` as a tile of ``shape`` (scalars may be plain ints under the interpreter)."""
        if not t.axes:
            dtype = P.dtype(self.storage_dtype(t.dtype))
            if is_literal(t):
                if literal_value(t.node) == 0:
                    return P.call("tl.zeros", P.list_(shape), dtype)
                return P.call("tl.full", P.list_(shape), t.node, dtype)
            return P.binop("+", _typed(self, t), P.call("tl.zeros", P.list_(shape), dtype))
        return self.broadcast_lanes(t.node, t.axes, shape, t.dtype)

    def full_rank_mask(self, mask: ast.expr | None) -> ast.expr | None:
        """A lane mask at the lane space's full rank (see ``broadcast_lanes``), to index with None."""
        if mask is None or not self.scope.loop_axes:
            return mask
        return self.broadcast_lanes(mask, frozenset(), self.scope.lanes.padded, BOOL)

    def broadcast_lanes(self, node: ast.expr, axes, shape, dtype) -> ast.expr:
        """``tl.broadcast_to(node, shape)`` for a lane-space tile.  Inside a loop evaluated as a
        leading lane axis (rules._LoopAxis), a value from outside the loop keeps its lower rank
        (Triton's arithmetic broadcasts it); tl.broadcast_to needs the full rank, an addition not."""
        if self.scope.loop_axes and 0 not in axes:
            zeros = P.call("tl.zeros", P.list_(shape), P.dtype(self.storage_dtype(dtype)))
            return P.binop("|" if dtype == BOOL else "+", node, zeros)
        return P.call("tl.broadcast_to", node, P.tuple_(shape))

    def reg(self, buf: ir.Buffer) -> RegBuf:
        if buf in self.scratch.views:  # a tile operation's operand: the whole buffer as a tile
            return scratch.tile(self, buf)
        if buf not in self.regs:
            raise self.error(f"buffer '{buf.name}' is used before it is allocated")
        rb = self.regs[buf]
        if rb.view_of is not None:  # a T.reshape view: refresh it from the buffer it reshapes
            refresh = P.assign(rb.name, P.call("tl.reshape", P.name(rb.view_of.name), P.tuple_(rb.shape or (1,))))
            if not (self.out and ast.dump(self.out[-1]) == ast.dump(refresh)):
                self.emit(refresh)
        return rb

    def assign_to(self, target: str, value: ast.expr) -> None:
        self.emit(P.assign(target, value))
        if target in self.scratch.tiles:  # a tile operation's result: back to its scratch buffer
            scratch.write_back(self, target)
        for rb in self.regs.values():  # writing a view writes the buffer it reshapes
            if rb.view_of is not None and rb.name == target:
                self.emit(
                    P.assign(rb.view_of.name, P.call("tl.reshape", P.name(target), P.tuple_(rb.view_of.shape or (1,))))
                )

    def classify(self, rb: RegBuf, indices) -> list[LaneDim | AtDim] | None:
        """Per buffer dim: ``LaneDim`` when indexed by a lane variable spanning it, ``AtDim`` when the
        index is the same for every lane; None when some index varies otherwise (a gather or
        scatter: see ``flat_read`` / ``flat_write``)."""
        kinds = []
        dims = rb.local_shape if rb.lanes is not None else rb.buffer.shape
        used_axes = set()
        for d, e in enumerate(indices):
            t = self.ev(e)
            if rb.lanes is None and self.scope.lanes is not None and isinstance(t.node, ast.Name):
                k = self.scope.lanes.names.index(t.node.id) if t.node.id in self.scope.lanes.names else None
                if k is not None and self.scope.lanes.extents[k] == rb.buffer.shape[d] and k not in used_axes:
                    used_axes.add(k)
                    kinds.append(LaneDim(k))
                    continue
            if t.axes:
                return None
            kinds.append(AtDim(t, dims[d] if d < len(dims) else 1))
        return kinds

    # A buffer read or written at lane-dependent positions that are not a lane variable itself
    # (``S[tx + 1]``, ``S[n - 1 - tx]``): flatten it and select by one-hot comparison. Exact, and
    # O(lanes x buffer size) per access.
    def flat_index(self, rb: RegBuf, indices) -> Tile:
        dims = rb.local_shape
        lin, axes = None, frozenset()
        stride = 1
        for d in reversed(range(len(indices))):
            t = self.ev(indices[d])
            axes |= t.axes
            if d < len(dims):
                term = t.node if stride == 1 else P.binop("*", t.node, P.const(stride))
                lin = term if lin is None else P.binop("+", term, lin)
                stride *= dims[d]
        return Tile(lin if lin is not None else P.const(0), INT32, axes)

    def one_irregular_dim(self, rb: RegBuf, indices) -> tuple[list[DimIndex], int] | None:
        """Kinds per dim as ``classify`` gives them, and the position of the one dim indexed by a
        lane-dependent expression (an ``IrregularDim``); None for any other shape."""
        if rb.lanes is not None or self.scope.lanes is None:
            return None
        kinds, irregular, used = [], None, set()
        for d, e in enumerate(indices):
            t = self.ev(e)
            names = self.scope.lanes.names
            k = names.index(t.node.id) if isinstance(t.node, ast.Name) and t.node.id in names else None
            if k is not None and k not in used and self.scope.lanes.extents[k] == rb.buffer.shape[d]:
                used.add(k)
                kinds.append(LaneDim(k))
            elif not t.axes:
                kinds.append(AtDim(t, rb.shape[d]))
            elif irregular is None:
                irregular = d
                kinds.append(IrregularDim(t))
            else:
                return None
        return (kinds, irregular) if irregular is not None else None

    def gather_read(self, rb: RegBuf, indices) -> Tile | None:
        """``F[i, j // 2]``: one dim indexed by a lane-dependent expression, the others by lane
        variables or fixed positions.  Select along that dim only: O(lanes x its extent)."""
        split = self.one_irregular_dim(rb, indices)
        if split is None:
            return None
        kinds, gather = split
        kept = [k for k in kinds if not isinstance(k, AtDim)]
        lane_dims = [k.axis for k in kept if isinstance(k, LaneDim)]
        extra = sorted(kinds[gather].index.axes - set(lane_dims))
        # tl.gather only where the one-hot select would be large: Triton 3.6's gather layout pass
        # asserts (isWarpLocal) when the index is much longer than a small source along the axis
        # (under a loop made a lane axis the index tiles are not at full rank: always tl.gather)
        use_gather = (
            len(extra) == 1
            and rb.buffer.dtype != BOOL
            and (self.scope.loop_axes or prod(self.scope.lanes.padded) * rb.shape[gather] > scratch.ONE_HOT_LIMIT)
        )
        if not use_gather:
            scratch.check_one_hot(self, rb, rb.shape[gather])
        rank = self.scope.lanes.rank
        value = P.name(rb.name)
        storage_rank = len(rb.shape)
        for d in reversed(range(len(kinds))):
            if isinstance(kinds[d], AtDim):
                value = self.select_at(value, d, storage_rank, kinds[d].index, rb.shape[d])
                storage_rank -= 1
        if use_gather:
            return self.gather_along(value, kept, kinds[gather].index, extra[0], rb.shape[gather], rb.buffer.dtype)
        order = sorted(
            range(len(kept)),
            key=lambda i: (isinstance(kept[i], IrregularDim), kept[i].axis if isinstance(kept[i], LaneDim) else 0),
        )
        value = P.permute(value, order)
        value = P.subscript_none(value, [k in lane_dims for k in range(rank)] + [True])
        index = kinds[gather].index
        size = rb.shape[gather]
        positions = P.subscript_none(P.call("tl.arange", 0, size), [False] * rank + [True])
        hit = P.binop("==", positions, P.subscript_none(index.node, [True] * rank + [False]))
        picked = P.call("tl.sum", P.call("tl.where", hit, value, P.const(0)), axis=rank)
        if rb.buffer.dtype == BOOL:
            picked = P.binop("!=", picked, P.const(0))
        else:  # tl.sum widens 8-bit integers: keep the buffer's type (a tl.dot operand, say)
            picked = self.narrowed(picked, rb.buffer.dtype)
        return Tile(picked, rb.buffer.dtype, frozenset(lane_dims) | index.axes)

    def gather_along(self, value: ast.expr, kept: list, index: Tile, extra: int, size: int, dtype) -> Tile:
        """``tl.gather`` along the irregular dim: ``value`` holds the buffer's dims indexed by lane
        variables and the irregular one (buffer order); the index varies along those lanes and one
        more, ``extra``, whose extent becomes the gathered axis's.  Exact, and no one-hot tile."""
        rank = self.scope.lanes.rank
        axis = next(p for p, k in enumerate(kept) if isinstance(k, IrregularDim))
        order = [extra if isinstance(k, IrregularDim) else k.axis for k in kept]  # the lane of each result dim
        union = sorted(order)
        # padded lanes may compute positions past the buffer: keep every read inside it
        idx = P.call("tl.minimum", P.call("tl.maximum", index.node, P.const(0)), P.const(size - 1))
        full = [self.scope.lanes.padded[k] if k in union else 1 for k in range(rank)]
        idx = self.broadcast_lanes(idx, index.axes, full, INT32)
        if len(union) != rank:
            idx = P.call("tl.reshape", idx, P.list_([self.scope.lanes.padded[k] for k in union]))
        idx = P.permute(idx, [union.index(k) for k in order])
        out = P.call("tl.gather", value, self.named(idx, "index"), axis)
        out = P.permute(out, [order.index(k) for k in union])  # result dims in lane order
        if len(union) != rank:
            out = P.subscript_none(out, [k in union for k in range(rank)])
        return Tile(out, dtype, frozenset(union))

    def scatter_write(self, rb: RegBuf, indices, value: Tile) -> bool:
        """``D[i, 2 * j] = v``: one dim written at a lane-dependent position, the others at lane
        variables or fixed positions.  Scatter along that dim only (O(lanes x its extent)), combining
        the lanes that are not buffer dims.  False when the access has another shape."""
        split = self.one_irregular_dim(rb, indices)
        if split is None:
            return False
        kinds, scatter = split
        scratch.check_one_hot(self, rb, rb.shape[scatter])
        used = {k.axis for k in kinds if isinstance(k, LaneDim)}
        rank = self.scope.lanes.rank
        size = rb.shape[scatter]
        value = self.cast(value, rb.buffer.dtype)
        index = kinds[scatter].index
        positions = P.subscript_none(P.call("tl.arange", 0, size), [False] * rank + [True])
        hit = P.binop(
            "==", P.subscript_none(self.broadcast(index, self.scope.lanes.padded), [True] * rank + [False]), positions
        )
        active = self.full_rank_mask(self.lane_mask(frozenset(range(rank))))
        if active is not None:
            hit = P.binop("&", hit, P.subscript_none(active, [True] * rank + [False]))
        hit_name = self.assign(f"{rb.name}_hit", hit)
        vals = P.subscript_none(self.broadcast(value, self.scope.lanes.padded), [True] * rank + [False])
        written = P.call("tl.where", P.name(hit_name), vals, P.const(_lowest(self.storage_dtype(rb.buffer.dtype))))
        touched = P.to(P.name(hit_name), INT32)
        # combine the lanes that are not a dim of the buffer (several writers of one position agree)
        combined = sorted(set(range(rank)) - used, reverse=True)
        for k in combined:
            written = P.call("tl.max", written, axis=k)
            touched = P.call("tl.max", touched, axis=k)
        if combined:
            written = self.narrowed(written, rb.buffer.dtype)
        # now: the buffer's lane dims in lane order, then the scattered dim; put them in buffer order
        mapped = sorted(k.axis for k in kinds if isinstance(k, LaneDim))
        order = [
            mapped.index(k.axis) if isinstance(k, LaneDim) else len(mapped) for k in kinds if not isinstance(k, AtDim)
        ]
        written, touched = P.permute(written, order), P.permute(touched, order)
        pattern = [not isinstance(k, AtDim) for k in kinds]
        mask = P.subscript_none(P.binop(">", touched, P.const(0)), pattern)
        written = P.subscript_none(written, pattern)
        for d, k in enumerate(kinds):
            if isinstance(k, AtDim) and rb.shape[d] > 1:
                mask = P.binop(
                    "&", mask, P.binop("==", P.expand(P.call("tl.arange", 0, rb.shape[d]), d, len(kinds)), k.index.node)
                )
        self.assign_to(rb.name, P.call("tl.where", mask, written, P.name(rb.name)))
        return True

    def flat_read(self, rb: RegBuf, indices) -> Tile:
        scratch.check_one_hot(self, rb, prod(rb.local_shape))
        lin = self.flat_index(rb, indices)
        rank = self.scope.lanes.rank
        size = prod(rb.local_shape)
        storage = P.name(rb.name)
        if rb.lanes is None:
            flat = P.call("tl.reshape", storage, P.tuple_([size])) if len(rb.shape) > 1 else storage
            flat = P.subscript_none(flat, [False] * rank + [True])
            axes = lin.axes
        else:
            flat = P.call("tl.reshape", storage, P.tuple_(list(self.scope.lanes.padded) + [size]))
            axes = frozenset(range(rank))
        positions = P.subscript_none(P.call("tl.arange", 0, size), [False] * rank + [True])
        hit = P.binop("==", positions, P.subscript_none(lin.node, [True] * rank + [False]))
        picked = P.call("tl.sum", P.call("tl.where", hit, flat, P.const(0)), axis=rank)
        if rb.buffer.dtype == BOOL:
            picked = P.binop("!=", picked, P.const(0))
        return Tile(picked, rb.buffer.dtype, axes)

    def separable(self, rb: RegBuf, indices) -> tuple[list[Tile], list[int]] | None:
        """The index tiles and, per buffer dim, the one lane axis its index varies along (a
        different axis for every dim, all of them used); None for any other access."""
        lanes = self.scope.lanes
        if rb.lanes is not None or lanes is None or self.scope.loop_axes or rb.buffer.dtype == BOOL:
            return None
        tiles = [self.ev(e) for e in indices]
        axes = [min(t.axes) if len(t.axes) == 1 else None for t in tiles]
        if len(tiles) != len(rb.shape) or None in axes or sorted(axes) != list(range(lanes.rank)):
            return None
        return tiles, axes

    def lane_index(self, index: Tile, axis: int) -> ast.expr:
        """An index that varies along lane axis ``axis`` only, as a 1-D tile."""
        if self.scope.lanes.rank == 1:
            return index.node
        return P.call("tl.reshape", index.node, P.tuple_([self.scope.lanes.padded[axis]]))

    def separable_read(self, rb: RegBuf, indices) -> Tile | None:
        """``X[i + 2, j + 2]``: the read of ``separable_write``'s shape.  Select one dim at a time,
        each step replacing the dim by its lane axis: O(buffer size x lanes along that axis)."""
        split = self.separable(rb, indices)
        if split is None:
            return None
        tiles, axes = split
        rank = self.scope.lanes.rank
        scratch.check_one_hot(self, rb, max(self.scope.lanes.padded))
        value = P.name(rb.name)
        layout = [("dim", d) for d in range(rank)]  # what each axis of ``value`` holds
        for d, (index, axis) in enumerate(zip(tiles, axes)):
            at = layout.index(("dim", d))
            positions = P.expand(P.call("tl.arange", 0, rb.shape[d]), at, rank + 1)
            hit = P.binop("==", positions, P.expand(self.lane_index(index, axis), rank, rank + 1))
            picked = P.call("tl.where", hit, P.subscript_none(value, [True] * rank + [False]), P.const(0))
            value = P.name(self.assign(f"{rb.name}_cols", P.call("tl.sum", picked, axis=at)))
            layout = layout[:at] + layout[at + 1 :] + [axis]
        return Tile(P.permute(value, [layout.index(k) for k in range(rank)]), rb.buffer.dtype, frozenset(range(rank)))

    def separable_write(self, rb: RegBuf, indices, value: Tile) -> bool:
        """``X[i + 2, j + 2] = v`` (a copy into an offset region): every dim written at a position
        that depends on one lane axis of its own.  Scatter one dim at a time, each step replacing a
        lane axis by the dim's positions: O(lanes x extent) per dim, where ``flat_write`` builds
        lanes x buffer size (past Triton's 2**20 elements per tile for tiles of a few hundred).
        False when the access has another shape."""
        split = self.separable(rb, indices)
        if split is None:
            return False
        tiles, axes = split
        lanes, rank = self.scope.lanes, self.scope.lanes.rank
        scratch.check_one_hot(self, rb, max(rb.shape))
        value = self.cast(value, rb.buffer.dtype)
        low = _lowest(self.storage_dtype(rb.buffer.dtype))
        written = self.broadcast(value, lanes.padded)
        touched = P.call("tl.full", P.list_(lanes.padded), P.const(1), P.dtype(INT32))
        active = self.lane_mask(frozenset(range(rank)))
        if active is not None:  # padded and inactive lanes write nothing
            written = P.call("tl.where", active, written, P.const(low))
            touched = P.call("tl.where", active, touched, P.const(0))
        layout = list(range(rank))  # what each axis of the tiles holds: a lane axis, or ("dim", d)
        for d, (index, axis) in enumerate(zip(tiles, axes)):
            at = layout.index(axis)
            lane_index = self.lane_index(index, axis)
            positions = P.expand(P.call("tl.arange", 0, rb.shape[d]), rank, rank + 1)
            hit = P.binop("==", P.expand(lane_index, at, rank + 1), positions)
            hit = self.assign(f"{rb.name}_hit", hit)
            grown = [True] * rank + [False]
            written = P.call(
                "tl.max", P.call("tl.where", P.name(hit), P.subscript_none(written, grown), P.const(low)), axis=at
            )
            touched = P.call(
                "tl.max", P.call("tl.where", P.name(hit), P.subscript_none(touched, grown), P.const(0)), axis=at
            )
            written, touched = self.assign(f"{rb.name}_rows", written), self.assign(f"{rb.name}_touched", touched)
            written, touched = P.name(written), P.name(touched)
            layout = layout[:at] + layout[at + 1 :] + [("dim", d)]
        written = self.narrowed(written, rb.buffer.dtype)
        self.assign_to(rb.name, P.call("tl.where", P.binop(">", touched, P.const(0)), written, P.name(rb.name)))
        return True

    def flat_write(self, rb: RegBuf, indices, value: Tile) -> None:
        scratch.check_one_hot(self, rb, prod(rb.local_shape))
        lin = self.flat_index(rb, indices)
        lanes = self.scope.lanes
        rank = lanes.rank
        size = prod(rb.local_shape)
        value = self.cast(value, rb.buffer.dtype)
        active = self.lane_mask(frozenset(range(rank)))
        positions = P.call("tl.arange", 0, size)
        if rb.lanes is not None:  # per-lane local array: each lane writes its own copy
            active = self.full_rank_mask(active)
            if value.axes and self.scope.loop_axes:
                value = Tile(self.broadcast(value, lanes.padded), value.dtype, frozenset(range(rank)))
            hit = P.binop("==", P.subscript_none(positions, [False] * rank + [True]),
                          P.subscript_none(lin.node, [True] * rank + [False]))  # fmt: skip
            if active is not None:
                hit = P.binop("&", hit, P.subscript_none(active, [True] * rank + [False]))
            flat = P.call("tl.reshape", P.name(rb.name), P.tuple_(list(lanes.padded) + [size]))
            node = P.subscript_none(value.node, [True] * rank + [False]) if value.axes else _typed(self, value)
            new = P.call("tl.where", hit, node, flat)
            self.assign_to(rb.name, P.call("tl.reshape", new, P.tuple_(rb.shape)))
            return
        # shared/fragment buffer written by many lanes: a scatter (lanes flattened to one axis)
        n_lanes = prod(lanes.padded)

        def lanes_1d(t: Tile):
            return P.call("tl.reshape", self.broadcast(t, lanes.padded), P.tuple_([n_lanes]))

        lin_1d = lanes_1d(lin)
        hit = P.binop("==", P.subscript_none(lin_1d, [True, False]),
                      P.subscript_none(positions, [False, True]))  # fmt: skip
        if active is not None:
            hit = P.binop("&", hit, P.subscript_none(lanes_1d(Tile(active, BOOL, self.cond_axes())), [True, False]))
        hit_name = self.assign(f"{rb.name}_hit", hit)
        low = _lowest(self.storage_dtype(rb.buffer.dtype))
        vals = P.subscript_none(lanes_1d(value), [True, False])
        # any writer of a position wins (all writers of one position agree in a race-free program)
        written = P.call("tl.max", P.call("tl.where", P.name(hit_name), vals, P.const(low)), axis=0)
        written = self.narrowed(written, rb.buffer.dtype)
        touched = P.call("tl.max", P.to(P.name(hit_name), INT32), axis=0)
        storage = P.name(rb.name)
        flat = P.call("tl.reshape", storage, P.tuple_([size])) if len(rb.shape) > 1 else storage
        new = P.call("tl.where", P.binop(">", touched, P.const(0)), written, flat)
        self.assign_to(rb.name, P.call("tl.reshape", new, P.tuple_(rb.shape)) if len(rb.shape) > 1 else new)

    def reg_read(self, buf: ir.Buffer, indices) -> Tile:
        rb = self.reg(buf)
        if not rb.shape:  # a one-element buffer is a scalar, whatever the (necessarily zero) index
            return Tile(P.name(rb.name), buf.dtype)
        if rb.lanes is not None and rb.lanes is self.scope.lanes and len(rb.shape) == rb.lanes.rank:
            # each lane's (thread's) one element, whatever the (necessarily zero) index: nz_idx[count]
            return Tile(P.name(rb.name), buf.dtype, frozenset(range(rb.lanes.rank)))
        kinds = self.classify(rb, indices)
        if kinds is None:
            return self.gather_read(rb, indices) or self.separable_read(rb, indices) or self.flat_read(rb, indices)
        value = P.name(rb.name)
        lead = rb.lanes.rank if rb.lanes is not None else 0
        storage_rank = len(rb.shape)
        # select fixed positions, last dim first so earlier dim numbers stay valid
        has_local_dims = len(rb.shape) > lead  # one-element buffers are stored without their unit dims
        for d in reversed(range(len(kinds))):
            if isinstance(kinds[d], AtDim) and has_local_dims:
                value = self.select_at(value, lead + d, storage_rank, kinds[d].index, rb.shape[lead + d])
                storage_rank -= 1
        axes = frozenset(range(rb.lanes.rank)) if rb.lanes is not None else frozenset()
        lane_dims = [k.axis for k in kinds if isinstance(k, LaneDim)]
        if lane_dims:
            order = sorted(range(len(lane_dims)), key=lambda i: lane_dims[i])
            value = P.permute(value, order)
            present = sorted(lane_dims)
            value = P.subscript_none(value, [k in present for k in range(self.scope.lanes.rank)])
            axes = frozenset(lane_dims)
        dt = buf.dtype
        return Tile(value, dt, axes)

    def select_at(self, value: ast.expr, dim: int, rank: int, index: Tile, size: int) -> ast.expr:
        """``value`` with ``dim`` removed, keeping position ``index`` (one-hot select, exact)."""
        if size == 1:
            return P.call("tl.sum", value, axis=dim) if rank > 1 else P.call("tl.sum", value, axis=0)
        positions = P.expand(P.call("tl.arange", 0, size), dim, rank)
        picked = P.call("tl.where", P.binop("==", positions, index.node), value, P.const(0))
        return P.call("tl.sum", picked, axis=dim)

    def reg_write(self, buf: ir.Buffer, indices, value: Tile) -> None:
        rb = self.reg(buf)
        lead = rb.lanes.rank if rb.lanes is not None else 0
        if len(rb.shape) == lead:  # one element (per iteration, for locals allocated in T.Parallel)
            if (
                rb.lanes is None
                and self.scope.lanes is not None
                and all(self.scope.lanes.padded[k] == 1 for k in value.axes | self.cond_axes())
            ):
                if value.axes:  # T.Parallel(1, 1): the single iteration's value
                    value = Tile(P.call("tl.sum", P.call("tl.reshape", value.node, P.tuple_([1])), axis=0), value.dtype)
                mask = self.lane_mask(frozenset()) if self.scope.conds else None
                if mask is not None and self.cond_axes():  # and its condition, a scalar like the element
                    one = P.call("tl.sum", P.call("tl.reshape", P.to(mask, INT32), P.tuple_([1])), axis=0)
                    mask = P.binop("!=", one, P.const(0))
                self.assign_whole(rb, value, mask)
                return
            if rb.lanes is None and (value.axes or self.cond_axes()):
                raise self.error(
                    f"different T.Parallel iterations write the one element of '{buf.name}'; "
                    "allocate it inside the T.Parallel body or give it the loop's shape"
                )
            self.assign_whole(rb, value, self.lane_mask(frozenset()) if self.scope.conds else None)
            return
        kinds = self.classify(rb, indices)
        if kinds is None:
            if not self.scatter_write(rb, indices, value) and not self.separable_write(rb, indices, value):
                self.flat_write(rb, indices, value)
            return
        rank = len(rb.shape)
        value = self.cast(value, buf.dtype)
        conds = self.lane_mask(frozenset()) if self.scope.conds else None
        cond_axes = self.cond_axes()
        if rb.lanes is not None:
            node, mask = _typed(self, value), conds
            pattern = [True] * lead + [False] * (rank - lead)
            node = P.subscript_none(node, pattern) if rank > lead and value.axes else node
            if mask is not None:
                mask = P.subscript_none(mask, pattern) if rank > lead else mask
        else:
            lane_axes = [k.axis for k in kinds if isinstance(k, LaneDim)]
            if any(self.scope.lanes.padded[k] != 1 for k in (value.axes | cond_axes) - set(lane_axes)):
                # the written element is chosen per lane (``if tx == 0: S[0] = v``): a scatter
                # (a lane axis of extent 1, as in ``T.Parallel(1, D)``, has one iteration: no choice)
                self.flat_write(rb, indices, value)
                return
            node = self.to_buffer_layout(value.node, value.axes, kinds, rank, value.dtype)
            mask = self.to_buffer_layout(conds, cond_axes, kinds, rank, BOOL) if conds is not None else None
        for d, k in enumerate(kinds):
            if isinstance(k, AtDim) and rb.shape[lead + d] > 1:  # a unit dim has only the one position
                hit = P.binop("==", P.expand(P.call("tl.arange", 0, rb.shape[lead + d]), lead + d, rank), k.index.node)
                mask = hit if mask is None else P.binop("&", mask, hit)
        if mask is None:
            if _needs_bcast(value, rb, kinds):
                node = self.broadcast(Tile(node, value.dtype, value.axes), rb.shape)
            self.assign_to(rb.name, node)
        else:
            self.assign_to(rb.name, P.call("tl.where", mask, node, P.name(rb.name)))

    def to_buffer_layout(self, node, axes, kinds, rank, dtype=INT32) -> ast.expr:
        """Re-lay a lane-space tile (axes ⊆ the buffer's lane-indexed dims) in buffer dim order."""
        lane_axes = [k.axis for k in kinds if isinstance(k, LaneDim)]
        if not lane_axes:
            return node
        lanes = self.scope.lanes
        if axes:
            # drop lane axes the buffer is not indexed by (the value is constant along them)
            keep = sorted(lane_axes)
            if set(range(lanes.rank)) - set(keep):
                full = [lanes.padded[k] if k in axes else 1 for k in range(lanes.rank)]
                node = P.call("tl.reshape", node, P.tuple_([full[k] for k in keep]))
                if set(keep) - set(axes):
                    node = P.call("tl.broadcast_to", node, P.tuple_([lanes.padded[k] for k in keep]))
            elif set(axes) != set(keep):
                node = self.broadcast_lanes(node, axes, [lanes.padded[k] for k in keep], dtype)
            order = [sorted(lane_axes).index(k) for k in lane_axes]
            node = P.permute(node, order)
        pattern = [isinstance(k, LaneDim) for k in kinds]
        return P.subscript_none(node, pattern) if axes else node

    def assign_whole(self, rb: RegBuf, value: Tile, mask) -> None:
        value = self.cast(value, rb.buffer.dtype)
        node = value.node
        if rb.lanes is not None and value.axes != frozenset(range(rb.lanes.rank)) and mask is None:
            node = self.broadcast_lanes(_typed(self, value), value.axes, rb.shape, value.dtype)
        elif not rb.shape and not value.axes and is_literal(value):
            node = P.call("tl.full", P.list_([]), node, P.dtype(self.storage_dtype(rb.buffer.dtype)))
        if mask is not None:
            node = P.call("tl.where", mask, node, P.name(rb.name))
        self.assign_to(rb.name, node)


def _needs_bcast(value: Tile, rb: RegBuf, kinds) -> bool:
    lane_dims = [k for k in kinds if isinstance(k, LaneDim)]
    return len(lane_dims) != len(rb.shape) or not {k.axis for k in lane_dims} <= value.axes


def _loads(node: ast.expr) -> bool:
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "load"
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id == "tl"
        for n in ast.walk(node)
    )


def _typed(lowerer: KernelLowerer, value: Tile) -> ast.expr:
    if is_literal(value):
        return P.call("tl.full", P.list_([]), value.node, P.dtype(lowerer.storage_dtype(value.dtype)))
    return value.node


def _literal_in(t: Tile, dt: DType) -> Tile:
    """A float literal compared with a 16-bit float is that dtype's value (TVM's typing): round it
    here, as Triton compares a literal with the other operand's full value (kept in fp32 under the
    interpreter for bf16), so ``0.8776 >= a`` differs from TileLang's ``bfloat16(0.8776) >= a``."""
    value = literal_value(t.node) if is_literal(t) else None
    if not isinstance(value, float) or not dt.is_float or dt.bits != 16 or value != value or abs(value) == float("inf"):
        return t
    try:
        if dt.name == "bfloat16":  # round the fp32 bits to nearest even
            single = struct.unpack("<I", struct.pack("<f", value))[0]
            single = (single + 0x7FFF + ((single >> 16) & 1)) & 0xFFFF0000
            rounded = struct.unpack("<f", struct.pack("<I", single))[0]
        else:
            rounded = struct.unpack("<e", struct.pack("<e", value))[0]
    except OverflowError:  # beyond the dtype's range
        rounded = float("inf") if value > 0 else float("-inf")
    return t if rounded == value else Tile(P.const(rounded), t.dtype, t.axes)


def _lowest(dt: DType):
    if dt.is_float:
        return float("-inf")
    if dt == BOOL:
        return 0
    return -(2 ** (dt.bits - 1)) if dt.kind == "int" else 0


_HOST_INT_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod}
