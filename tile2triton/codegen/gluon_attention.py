"""Flash-attention-shaped kernels on Hopper as Gluon (Triton's explicit-layout dialect).

Triton 3.6 waits for every ``tl.dot`` of a loop body before the next statement runs: in an
attention loop the softmax never overlaps a tensor-core group, and TileLang's warp-specialized
schedule is faster (``BENCHMARKS.md``).  Gluon (``triton.experimental.gluon``, Triton >= 3.6)
exposes Hopper's asynchronous ``wgmma`` and TMA, so this module writes the schedule TileLang and
FlashAttention-3 use:

- one *loader* warp streams the loop's K and V tiles through a ring of shared-memory stages (TMA,
  one mbarrier per stage and tile, one "free" mbarrier per stage);
- two *consumer* warpgroups, each owning half of the Q tile's rows, run the loop body; in
  iteration ``k`` a consumer issues ``S = Q K_k^T``, then ``O += P_{k-1} V_{k-1}``, waits for S
  only, and runs the softmax while that second ``wgmma`` is in flight; it waits for it before the
  first statement that touches O (the *rotated* schedule).  A loop not proven to run (a sliding
  window's) takes the *serial* one instead, TileLang's consumer: S, softmax, P V, each waited for
  (``gluon_plan.SCHEDULES``).

Which kernels take the route, and why the others do not, is codegen/gluon_plan.py's ``plan``; this
module writes the Gluon source of a planned kernel (``emit``).
"""

from __future__ import annotations

import linecache
import math
import os
import re
from dataclasses import dataclass

from .. import ir
from ..ir.evaluate import row_major_strides
from ..ir.exprs import int_const
from .gluon_plan import ROWS, NotAttention, Plan, is_const, plan, touches, writes_of, writes_whole

__all__ = ["IMPORTS", "NotAttention", "Plan", "emit", "plan"]

LOADER_REGS, CONSUMER_REGS = 24, 240  # setmaxnreg per partition (the loader only issues TMA)
FUNCTIONS = {
    "exp": "gl.exp", "exp2": "gl.exp2", "log": "gl.log", "log2": "gl.log2", "sqrt": "gl.sqrt",
    "rsqrt": "gl.rsqrt", "abs": "gl.abs", "max": "gl.maximum", "min": "gl.minimum", "floor": "gl.floor",
    "ceil": "gl.ceil",
}  # fmt: skip
# names the generated functions use for themselves
RESERVED = {
    "gl", "gluon", "mbarrier", "tma", "warpgroup_mma", "warpgroup_mma_wait", "float", "range", "it", "stage",
    "phase", "previous", "previous_phase", "last", "last_phase", "p_tile", "q_tile", "q_smem",
    "q_ready", "q_desc", "k_desc", "v_desc", "k_ring", "v_ring", "k_ready", "v_ready", "kv_free", "row_base",
    "row_index", "out_rows", "s_layout", "o_layout", "row_layout", "p_operand",
}  # fmt: skip
IMPORTS = (
    "from triton.experimental import gluon\n"
    "from triton.experimental.gluon import language as gl\n"
    "from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait\n"
)


# ----------------------------------------------------------------------------------------- emission
class _Source:
    def __init__(self):
        self.lines: list[str] = []
        self.depth = 0
        self.last_origin = None

    def line(self, text: str = "") -> None:
        self.lines.append("    " * self.depth + text if text else "")

    def origin(self, loc: ir.Loc) -> None:
        if loc is None or not loc.line or loc == self.last_origin:
            return
        self.last_origin = loc
        text = linecache.getline(loc.file, loc.line).strip()
        if text:
            self.line(f"# {os.path.basename(loc.file)}:{loc.line}: {text}")


@dataclass
class _Frame:
    """Where a T.Parallel body's values live: its lane variables' names and its layout."""

    lanes: dict  # lane Var -> Python expression of its index tile
    layout: str  # the layout constexpr's name
    width: int | None  # the second extent (None: a 1-D loop over rows)


class _Emitter:
    def __init__(self, p: Plan, fast_math: bool = False, host_descriptors: bool = False):
        self.p = p
        self.fast_math = fast_math  # TL_ENABLE_FAST_MATH: float32 `/` may be approximate
        # TILE2TRITON_HOST_DESCRIPTORS: the TMA descriptors of kernel parameters are entry parameters
        # the host makes per call; ``on_host`` lists them (name, tensor, box) for the launch
        self.host_descriptors = host_descriptors
        self.on_host: list = []
        self.src = _Source()
        self.names: dict = {}  # ir.Var / ir.Buffer -> Python name
        self.used: set = set(RESERVED) | {f"{p.kernel.name}_{part}" for part in ("consumer", "loader", "kernel")}
        self.zero: set = set()  # fragments known to hold zeros (S's initial value: use_acc=False)
        # the score tile's layout, and O's (the same one when the widths agree)
        self.o_layout = "s_layout" if p.dim_v == p.block_n else "o_layout"
        self.layouts = {p.dim_v: self.o_layout, p.block_n: "s_layout"}
        self.tma_load = _tma_load_name()
        dtype = p.pv.b.buffer.dtype.triton
        self.half = f"gl.{dtype}"

    # ------------------------------------------------------------ expressions
    def name(self, v) -> str:
        """The Python name of a variable or buffer: its own, unless the generated code already uses it."""
        if v not in self.names:
            name, n = v.name, 0
            while name in self.used:
                n += 1
                name = f"{v.name}_{n}"
            self.used.add(name)
            self.names[v] = name
        return self.names[v]

    def expr(self, e, frame: _Frame | None) -> str:
        if isinstance(e, ir.Const):
            if isinstance(e.value, bool):
                return str(e.value)
            if isinstance(e.value, float) and math.isinf(e.value):
                return "float('inf')" if e.value > 0 else "-float('inf')"
            return repr(e.value)
        if isinstance(e, ir.VarRef):
            if frame is not None and e.var in frame.lanes:
                return frame.lanes[e.var]
            return self.name(e.var)
        if isinstance(e, ir.Load):
            return self.load(e, frame)
        if isinstance(e, ir.BinOp):
            # ``past_len = 0`` in a source: no ``+ 0`` in the code (where the other side has the result's dtype)
            if (
                e.op in ("+", "-") and is_const(e.rhs, 0) or e.op == "*" and is_const(e.rhs, 1)
            ) and e.lhs.dtype == e.dtype:
                return self.expr(e.lhs, frame)
            if (e.op == "+" and is_const(e.lhs, 0) or e.op == "*" and is_const(e.lhs, 1)) and e.rhs.dtype == e.dtype:
                return self.expr(e.rhs, frame)
            lhs, rhs = self.expr(e.lhs, frame), self.expr(e.rhs, frame)
            op = e.op
            nonneg = e.dtype.is_int and self.p.ranges.nonneg(e.lhs) and self.p.ranges.nonneg(e.rhs)
            if op == "/" and e.dtype.is_int:
                if not nonneg:  # a size argument of 1 is a constexpr: Python's `//` would floor it
                    raise NotAttention("integer divisions `/` of values that cannot be negative")
                op = "//"  # TileLang's integer `/` divides to an integer
            elif op in ("//", "%") and e.dtype.is_int and not nonneg:
                # TVM's floordiv / floormod round toward -inf, Triton's toward zero (Python's, for
                # constexprs, toward -inf): by a positive divisor, the remainder taken into [0, divisor)
                # is the floor one either way, and what it leaves divides exactly
                if not self.p.ranges.nonneg(e.rhs):
                    raise NotAttention("integer floor divisions by values that cannot be negative")
                remainder = f"(({lhs}) % {rhs} + {rhs}) % {rhs}"
                return remainder if op == "%" else f"((({lhs}) - {remainder}) // {rhs})"
            elif op == "//" and not e.dtype.is_int:
                return f"gl.floor({lhs} / {rhs})"  # a float floor division
            elif op == "/" and e.dtype.name in ("float16", "bfloat16"):
                # the tl lowering rounds a 16-bit quotient to its type (CUDA's __hdiv): kept there
                raise NotAttention("division of 16-bit floats")
            elif op == "/" and e.dtype.name == "float32" and not self.fast_math:
                # as the tl lowering: Triton's float32 `/` is approximate, TileLang's (no fast math) rounds correctly
                lhs, rhs = (self.as_float32(x, text) for x, text in ((e.lhs, lhs), (e.rhs, rhs)))
                return f"gl.div_rn({lhs}, {rhs})"
            if op in ("and", "or"):  # of conditions (a window's two bounds): element-wise on tiles
                absorbing, neutral = ("False", "True") if op == "and" else ("True", "False")
                if absorbing in (lhs, rhs):
                    return absorbing
                if neutral in (lhs, rhs):
                    return rhs if lhs == neutral else lhs
                op = "&" if op == "and" else "|"
            if op not in ("+", "-", "*", "/", "//", "%", "&", "|", "^", "<<", ">>"):
                raise NotAttention(f"operator {op}")
            return f"({lhs} {op} {rhs})"
        if isinstance(e, ir.Compare):
            decided = self.p.ranges.compare(e.op, e.lhs, e.rhs)
            if decided is not None:
                return str(decided)
            return f"({self.expr(e.lhs, frame)} {e.op} {self.expr(e.rhs, frame)})"
        if isinstance(e, ir.UnaryOp):
            if e.op != "-":
                raise NotAttention(f"unary {e.op}")
            return f"(-{self.expr(e.operand, frame)})"
        if isinstance(e, ir.Cast):
            return f"{self.expr(e.value, frame)}.to(gl.{e.dtype.triton})"
        if isinstance(e, ir.Select):
            decided = self._decided(e.cond)
            if decided is not None:
                return self.expr(e.true_value if decided else e.false_value, frame)
            return (
                f"gl.where({self.expr(e.cond, frame)}, {self.expr(e.true_value, frame)}, "
                f"{self.expr(e.false_value, frame)})"
            )
        if isinstance(e, ir.Call) and e.fn in FUNCTIONS:
            return f"{FUNCTIONS[e.fn]}({', '.join(self.expr(a, frame) for a in e.args)})"
        raise NotAttention(f"expression {type(e).__name__} {getattr(e, 'fn', '')}")

    @staticmethod
    def as_float32(e, text: str) -> str:
        """``text`` (the code of ``e``) as a float32 operand of ``gl.div_rn``, which takes no mixed dtypes."""
        if isinstance(e, ir.Const):
            return repr(float(e.value))
        return text if e.dtype.name == "float32" else f"{text}.to(gl.float32)"

    def _decided(self, cond) -> bool | None:
        if isinstance(cond, ir.Compare):
            return self.p.ranges.compare(cond.op, cond.lhs, cond.rhs)
        if isinstance(cond, ir.Const) and isinstance(cond.value, bool):
            return cond.value
        return None

    def _static(self, e):
        """The value of ``e`` where constants and the ranges decide it, else None."""
        if isinstance(e, ir.Const):
            return e.value
        if isinstance(e, ir.Select):
            decided = self._decided(e.cond)
            return None if decided is None else self._static(e.true_value if decided else e.false_value)
        return None

    def _axes(self, e, lanes: dict) -> set:
        """The lane axes ``e`` varies along (after folding what the ranges decide); ``lanes``: lane
        and let variables -> their axes."""
        if isinstance(e, ir.Load):
            # a global read in a T.Parallel is the block's one element (the plan's rule)
            return set() if e.buffer.scope == ir.GLOBAL else set(range(len(e.buffer.shape)))
        if isinstance(e, ir.VarRef):
            return set(lanes.get(e.var, ()))
        if isinstance(e, ir.Compare) and self._decided(e) is not None:
            return set()
        if isinstance(e, ir.Select):
            decided = self._decided(e.cond)
            if decided is not None:
                return self._axes(e.true_value if decided else e.false_value, lanes)
        return set().union(*(self._axes(c, lanes) for c in ir.child_exprs(e)))

    def load(self, e: ir.Load, frame: _Frame | None) -> str:
        buf = e.buffer
        if buf.scope == ir.GLOBAL:
            return self.global_element(e)
        if frame is None:
            raise NotAttention("fragment reads outside T.Parallel")
        name = self.name(buf)
        if len(buf.shape) == 1:
            value = name
            if frame.width is not None and frame.layout != "s_layout":
                value = f"gl.convert_layout({name}, gl.SliceLayout(1, {frame.layout}))"
            return f"{value}[:, None]" if frame.width is not None else value
        return name

    def global_index(self, buf: ir.Buffer, e) -> str:
        """The code of index ``e`` into the global tensor ``buf``: int64 where ``buf`` has 2**31
        elements or more, whose int32 offsets would wrap (the tl lowering's rule too)."""
        code = self.expr(e, None)
        return f"{code}.to(gl.int64)" if math.prod(buf.shape) >= 2**31 and not isinstance(e, ir.Const) else code

    def global_element(self, e: ir.Load) -> str:
        """One element of a global tensor, the same for the whole block (``Sinks[by]``): a scalar load."""
        buf = e.buffer
        terms = []
        for index, stride in zip(e.indices, row_major_strides(buf.shape)):
            term = self.global_index(buf, index)
            terms.append(term if stride == 1 else f"{term} * {stride}")
        return f"gl.load({self.name(buf)} + {' + '.join(terms)})"

    # ------------------------------------------------------------ statements
    def statements(self, stmts: list) -> None:
        for s in stmts:
            self.statement(s)

    def statement(self, s) -> None:
        out = self.src
        out.origin(s.loc)
        if isinstance(s, ir.Let):
            out.line(f"{self.bind(s.var)} = {self.expr(s.value, None)}")
        elif isinstance(s, ir.Fill):
            buf = s.dst.buffer
            out.line(f"{self.bind(buf)} = {self.full(buf, self.expr(s.value, None))}")
            self._mark_zero(buf, s.value)
        elif isinstance(s, ir.Parallel):
            self.parallel(s)
        elif isinstance(s, ir.Reduce):
            self.reduce(s)
        elif isinstance(s, ir.Copy) and s.dst.buffer.scope == ir.GLOBAL:
            self.store_global(s)
        elif isinstance(s, ir.Copy):
            src, dst = s.src.buffer, s.dst.buffer
            value = self.name(src)
            if src.dtype != dst.dtype:
                value = f"{value}.to(gl.{dst.dtype.triton})"
            out.line(f"{self.bind(dst)} = {value}")
            self.zero.discard(dst)
        else:
            raise NotAttention(f"T.{type(s).__name__}")

    def bind(self, v) -> str:
        """The name of ``v``, about to be (re)assigned."""
        if isinstance(v, ir.Buffer):
            self.zero.discard(v)
        return self.name(v)

    def _mark_zero(self, buf, value) -> None:
        if isinstance(value, ir.Const) and value.value == 0:
            self.zero.add(buf)

    def layout_of(self, buf: ir.Buffer) -> str:
        if len(buf.shape) == 1:
            return "row_layout"
        layout = self.layouts.get(buf.shape[1])
        if layout is None:
            raise NotAttention(f"a fragment of width {buf.shape[1]} (neither the K tile's nor V's)")
        return layout

    def shape(self, buf: ir.Buffer) -> str:
        return "[" + ", ".join(str(d) for d in (ROWS, *buf.shape[1:])) + "]"

    # where this consumer's share of a tile lies (the row split: its rows, every column)
    def cols(self, width: int, layout: str) -> str:
        """The column indices of a tile of ``width`` columns this consumer holds."""
        return f"gl.arange(0, {width}, layout=gl.SliceLayout(0, {layout}))"

    def lane_extreme(self, axis: int, extent: int, largest: bool) -> str:
        """The largest (or smallest) index of lane ``axis`` (of ``extent``) this consumer runs."""
        if axis == 0:
            return f"(row_base + {ROWS - 1})" if largest else "row_base"
        return repr(extent - 1) if largest else "0"

    def first_row(self) -> str:
        return " + row_base"

    def full(self, buf: ir.Buffer, value: str) -> str:
        return f"gl.full({self.shape(buf)}, {value}, gl.{buf.dtype.triton}, {self.layout_of(buf)})"

    def parallel(self, s: ir.Parallel) -> None:
        width = s.extents[1] if len(s.extents) == 2 else None
        if width is None:
            frame = _Frame({s.vars[0]: "row_index"}, "row_layout", None)
        else:
            layout = self.layouts.get(width)
            if layout is None:
                raise NotAttention(f"a T.Parallel of width {width}")
            rows = "row_index" if layout == "s_layout" else f"gl.convert_layout(row_index, gl.SliceLayout(1, {layout}))"
            cols = self.cols(width, layout)
            frame = _Frame({s.vars[0]: f"{rows}[:, None]", s.vars[1]: f"{cols}[None, :]"}, layout, width)
        lanes = {var: {axis} for axis, var in enumerate(s.vars)}
        lets = {}  # the body's let variables -> their values
        for var, extent in zip(s.vars, s.extents):
            self.p.ranges.set(var, 0, extent - 1)
        for inner in s.body:
            self.src.origin(inner.loc)
            if isinstance(inner, ir.Let):
                value = self.expr(inner.value, frame)
                bounds = self.p.ranges.of(inner.value)
                if bounds is not None:
                    self.p.ranges.set(inner.var, *bounds)
                lanes[inner.var] = self._axes(inner.value, lanes)
                lets[inner.var] = inner.value
                frame.lanes[inner.var] = self.bind(inner.var)
                self.src.line(f"{frame.lanes[inner.var]} = {value}")
                continue
            buf = inner.buffer
            tests = self._uniform_tests(inner.value, s, lets)
            if tests is None:
                self.src.line(f"{self.bind(buf)} = {self._stored(buf, inner.value, frame, lanes, s)}")
            else:  # a mask: on the tiles where its condition is the same everywhere, no per-element select
                all_true, all_false = tests
                name = self.bind(buf)
                out = self.src
                out.line(f"if {all_true}:  # the condition holds on this whole tile")
                out.line(f"    {name} = {self._stored(buf, inner.value.true_value, frame, lanes, s)}")
                out.line(f"elif {all_false}:  # it fails on this whole tile")
                out.line(f"    {name} = {self._stored(buf, inner.value.false_value, frame, lanes, s)}")
                out.line("else:")
                out.line(f"    {name} = {self._stored(buf, inner.value, frame, lanes, s)}")
            if self._static(inner.value) == 0:
                self.zero.add(buf)

    def _stored(self, buf: ir.Buffer, e, frame: _Frame, lanes: dict, s: ir.Parallel) -> str:
        """``e`` as the whole new value of ``buf`` (a tile of its shape and dtype)."""
        value = self.expr(e, frame)
        axes = self._axes(e, lanes)
        if not axes:
            return self.full(buf, value)
        if buf.dtype != e.dtype:
            value = f"({value}).to(gl.{buf.dtype.triton})"
        if len(axes) < len(s.vars):  # a value along one axis, stored over both
            value = f"({value}).broadcast_to({self.shape(buf)})"
        return value

    def _uniform_tests(self, e, s: ir.Parallel, lets: dict) -> tuple[str, str] | None:
        """For ``T.if_then_else(a OP b, x, y)`` with ``a`` and ``b`` sums of lane indices and scalars:
        scalar tests that the condition holds, or fails, on the whole of this consumer's tile
        (from the extremes of ``a`` and ``b`` over the lanes), else None."""
        if not isinstance(e, ir.Select) or not isinstance(e.cond, ir.Compare) or self._decided(e.cond) is not None:
            return None
        cond = e.cond
        if cond.op not in ("<", "<=", ">", ">=") or not (cond.lhs.dtype.is_int and cond.rhs.dtype.is_int):
            return None
        extremes = {}
        for side, expr in (("lhs", cond.lhs), ("rhs", cond.rhs)):
            for end in ("min", "max"):
                extremes[side, end] = self._extreme(expr, end == "max", s, lets)
        if None in extremes.values():
            return None
        if len(s.vars) != 2:
            return None
        op = cond.op
        if op in (">", ">="):  # a > b is b < a
            op = {">": "<", ">=": "<="}[op]
            extremes = {("lhs" if k[0] == "rhs" else "rhs", k[1]): v for k, v in extremes.items()}
        never = "<=" if op == "<" else "<"  # not (a < b) is b <= a
        true = f"{extremes['lhs', 'max']} {op} {extremes['rhs', 'min']}"
        false = f"{extremes['rhs', 'max']} {never} {extremes['lhs', 'min']}"
        return true, false

    def _extreme(self, e, largest: bool, s: ir.Parallel, lets: dict) -> str | None:
        """The smallest (or largest) value of an integer expression over this consumer's lanes,
        where it is a sum of lane indices (times constants) and scalars; else None."""
        if isinstance(e, ir.Const) and isinstance(e.value, int):
            return repr(e.value)
        if isinstance(e, ir.VarRef):
            if e.var in s.vars:
                axis = s.vars.index(e.var)
                return self.lane_extreme(axis, s.extents[axis], largest)
            if e.var in lets:
                return self._extreme(lets[e.var], largest, s, lets)
            return self.expr(e, None)
        if isinstance(e, ir.BinOp) and e.op in ("+", "-"):
            a = self._extreme(e.lhs, largest, s, lets)
            b = self._extreme(e.rhs, largest if e.op == "+" else not largest, s, lets)
            if a is None or b is None:
                return None
            if b == "0":
                return a
            return b if a == "0" and e.op == "+" else f"({a} {e.op} {b})"
        if isinstance(e, ir.BinOp) and e.op == "*":
            for scale, x in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
                if isinstance(scale, ir.Const) and isinstance(scale.value, int):
                    inner = self._extreme(x, largest if scale.value >= 0 else not largest, s, lets)
                    return None if inner is None else f"({scale.value} * {inner})"
            if not self._varies(e, s, lets):  # a product of scalars
                return self.expr(e, None)
        return None

    def _varies(self, e, s: ir.Parallel, lets: dict) -> bool:
        """Does ``e`` read memory or a lane index (directly or through the body's lets)?"""
        for x in ir.iter_expr_tree(e):
            if isinstance(x, ir.Load):
                return True
            if isinstance(x, ir.VarRef) and (x.var in s.vars or (x.var in lets and self._varies(lets[x.var], s, lets))):
                return True
        return False

    def reduce(self, s: ir.Reduce) -> None:
        src, dst = s.src.buffer, s.dst.buffer
        fn = "gl.max" if s.kind == "max" else "gl.sum"
        value = f"{fn}({self.name(src)}, axis=1)"
        if self.layout_of(src) != "s_layout":
            value = f"gl.convert_layout({value}, row_layout)"
        if not s.clear:
            value = f"gl.maximum({self.name(dst)}, {value})" if s.kind == "max" else f"{self.name(dst)} + {value}"
        if src.dtype != dst.dtype:  # as the tl lowering: reduced in the source's dtype, stored as dst's
            value = f"({value}).to(gl.{dst.dtype.triton})"
        self.src.line(f"{self.bind(dst)} = {value}")

    def store_global(self, s: ir.Copy) -> None:
        src, region = s.src.buffer, s.dst
        buf = region.buffer
        strides = row_major_strides(buf.shape)
        wide = [d for d, e in enumerate(region.extents) if e != 1]
        row_dim = wide[0]
        layout = self.layout_of(src)

        def index(d: int) -> str:
            return self.global_index(buf, region.starts[d])

        rows = f"{index(row_dim)}{self.first_row()} + gl.arange(0, {ROWS}, layout=gl.SliceLayout(1, {layout}))"
        cols = self.cols(buf.shape[-1], layout)
        offset = " + ".join(f"{index(d)} * {strides[d]}" for d in range(len(buf.shape) - 1) if d != row_dim)
        out = self.src
        out.line(f"out_rows = {rows}")
        base = self.name(buf) + (f" + ({offset})" if offset else "")
        pointers = f"{base} + out_rows[:, None] * {strides[row_dim]} + {cols}[None, :]"
        mask = f"(out_rows < {buf.shape[row_dim]})[:, None]"
        out.line(f"gl.store({pointers}, {self.name(src)}.to(gl.{buf.dtype.triton}), mask={mask})")

    # ------------------------------------------------------------ the three functions
    def module(self) -> str:
        p = self.p
        name = p.kernel.name
        params = [self.param_name(x) for x in list(p.func.params) + list(p.func.sizes)]
        block = [self.name(v) for v in p.kernel.block_vars]
        shared = ["k_ring", "v_ring", "k_ready", "v_ready", "kv_free"]
        consumer, consumer_args = self.consumer(f"{name}_consumer", params + block + ["q_desc"] + shared)
        loader, loader_args = self.loader(f"{name}_loader", params + block + ["k_desc", "v_desc"] + shared)
        entry = self.entry(f"{name}_kernel", params, consumer_args, loader_args)
        return "\n\n\n".join((consumer, loader, entry))

    def _finish(self, candidates: list, tail: list) -> tuple[str, list]:
        """The function's text, taking of ``candidates`` the arguments its body uses (and ``tail``)."""
        body = "\n".join(line.split("#")[0] for line in self.src.lines[2:])
        args = [a for a in candidates if re.search(rf"\b{re.escape(a)}\b", body)]
        self.src.lines[1] = self.src.lines[1].replace("(ARGS)", "(" + ", ".join(args + tail) + ")")
        return "\n".join(self.src.lines), args

    def param_name(self, x) -> str:
        return self.name(x)

    def _header(self, fn: str) -> None:
        self.src = _Source()
        self.src.line("@gluon.jit")
        self.src.line(f"def {fn}(ARGS):")
        self.src.depth = 1

    def _scalar_lets(self, stmts: list, needed: set) -> None:
        """The top-level scalar lets (``loop_range = ...``) a partition needs, recomputed there."""
        for s in stmts:
            if isinstance(s, ir.Let) and s.var in needed:
                self.statement(s)

    def _lets_needed(self, exprs) -> set:
        """The scalar lets (before the loop or in its body) ``exprs`` use, directly or through others."""
        found = {x.var for e in exprs for x in ir.iter_expr_tree(e) if isinstance(x, ir.VarRef)}
        lets = {s.var: s for s in self.p.before + self.p.loop.body if isinstance(s, ir.Let)}
        frontier = [v for v in found if v in lets]
        needed = set()
        while frontier:
            v = frontier.pop()
            if v in needed:
                continue
            needed.add(v)
            frontier += [x.var for x in ir.iter_expr_tree(lets[v].value) if isinstance(x, ir.VarRef) and x.var in lets]
        return needed

    def _iteration(self, k: str) -> None:
        """``it``, the iteration's number from 0 (the loop may start elsewhere), and its ring stage."""
        p = self.p
        start = self.expr(p.loop.start, None)
        self.src.line(f"it = {k}" if start == "0" else f"it = {k} - {start}")
        self.src.line(f"stage = it % {p.stages}")
        self.src.line(f"phase = (it // {p.stages}) & 1")

    def loader(self, fn: str, args: list) -> str:
        p = self.p
        self._header(fn)
        out = self.src
        needed = self._lets_needed([p.loop.start, p.loop.stop, *p.k_copy.src.starts, *p.v_copy.src.starts])
        self._scalar_lets(p.before, needed)
        self.open_loop(self.expr(p.loop.start, None))
        self._scalar_lets(p.loop.body, needed)  # the loop's own lets the K/V boxes use
        out.line("mbarrier.wait(kv_free.index(stage), phase ^ 1)  # the consumers are done with this stage")
        for copy, desc, ring, ready in (
            (p.k_copy, "k_desc", "k_ring", "k_ready"),
            (p.v_copy, "v_desc", "v_ring", "v_ready"),
        ):
            out.origin(copy.loc)
            starts = ", ".join(self.expr(e, None) for e in copy.src.starts)
            out.line(f"mbarrier.expect({ready}.index(stage), {desc}.block_type.nbytes)")
            out.line(f"{self.tma_load}({desc}, [{starts}], {ready}.index(stage), {ring}.index(stage))")
        return self._finish(args, [])

    def consumer(self, fn: str, args: list) -> str:
        p = self.p
        self._header(fn)
        out = self.src
        out.line(
            f"s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, {p.block_n}, 16])"
        )
        if p.dim_v != p.block_n:
            out.line(
                f"o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, {p.dim_v}, 16])"
            )
        out.line("row_layout: gl.constexpr = gl.SliceLayout(1, s_layout)")
        out.line(f"p_operand: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent={self.o_layout}, k_width=2)")
        out.line(f"row_index = row_base + gl.arange(0, {ROWS}, layout=row_layout)")
        # Q: this consumer's rows, once (after the lets its box uses)
        q_lets = self._lets_needed(p.q_copy.src.starts)
        self._scalar_lets(p.before, q_lets)
        out.origin(p.q_copy.loc)
        q_box = self._box(p.q_copy.src, ROWS)
        out.line(f"q_smem = gl.allocate_shared_memory({self.half}, {q_box}, q_desc.layout)")
        out.line("q_ready = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())")
        out.line("mbarrier.init(q_ready, count=1)")
        out.line("mbarrier.expect(q_ready, q_desc.block_type.nbytes)")
        starts = list(p.q_copy.src.starts)
        row_dim = [d for d, e in enumerate(p.q_copy.src.extents) if e != 1][0]
        coords = [self.expr(e, None) + (" + row_base" if d == row_dim else "") for d, e in enumerate(starts)]
        out.line(f"{self.tma_load}(q_desc, [{', '.join(coords)}], q_ready, q_smem)")
        out.line("mbarrier.wait(q_ready, 0)")
        out.line(f"q_tile = q_smem.reshape([{ROWS}, {p.dim}])")
        for s in p.before:
            if not (isinstance(s, ir.Let) and s.var in q_lets):
                self.statement(s)
        if p.schedule == "serial":
            self._serial_loop()
        else:
            self._rotated_loop()
        self.statements(p.after)
        return self._finish(args, ["row_base"])

    def _rotated_loop(self) -> None:
        """FA3's schedule (``gluon_plan.SCHEDULES``): the first iteration peeled, then each iteration
        issues its S = Q K^T and the previous one's P V before waiting for S; the last P V after."""
        p = self.p
        out = self.src
        k = self.bind(p.loop.var)
        start = self.expr(p.loop.start, None)
        # the first iteration, peeled: no P V gemm of a previous one
        out.origin(p.loop.loc)
        out.line(f"{k} = {start}")
        self._loop_head()
        self._issue_qk("0")
        self.wait_s(0)
        self.statements(p.loop_tail)
        self.open_loop(str(int_const(p.loop.start) + 1) if int_const(p.loop.start) is not None else f"{start} + 1")
        out.line(f"previous = (it - 1) % {p.stages}")
        out.line(f"previous_phase = ((it - 1) // {p.stages}) & 1")
        self._loop_head()
        self._issue_qk("stage")
        self._issue_pv("previous", "previous_phase")
        self.wait_s(1, "  # S only: P V stays in flight")
        waited = False
        for s in p.loop_tail:
            if not waited and touches(s, {p.pv.c.buffer}):
                self._wait_pv("previous")
                waited = True
            self.statement(s)
        if not waited:
            self._wait_pv("previous")
        out.depth -= 1
        # the last iteration's P V
        stop = self.expr(p.loop.stop, None)
        if int_const(p.loop.start) is not None and int_const(p.loop.stop) is not None:
            last = str(p.loop.stop.value - 1 - p.loop.start.value)
        else:
            last = f"({stop} - 1)" if start == "0" else f"({stop} - 1 - {start})"
        out.line(f"last = {last} % {p.stages}")
        out.line(f"last_phase = ({last} // {p.stages}) & 1")
        self._issue_pv("last", "last_phase")
        self._wait_pv("last")

    def _serial_loop(self) -> None:
        """TileLang's consumer (``gluon_plan.SCHEDULES``): each iteration waits for its S, runs the
        softmax, then waits for its P V before freeing the stage. Nothing is peeled: the loop may run
        zero times."""
        p = self.p
        out = self.src
        # a fragment the body writes may hold something else than it held before the loop
        self.zero -= {buf for s in ir.walk(p.loop.body) if (buf := writes_of(s)) is not None}
        self.open_loop(self.expr(p.loop.start, None))
        self._loop_head()
        self._issue_qk("stage")
        self.wait_s(0)
        self.statements(p.loop_tail)
        self._issue_pv("stage", "phase")
        self._wait_pv("stage")
        out.depth -= 1

    def open_loop(self, start: str) -> None:
        """``for k in range(start, stop):`` of the kernel's loop, its iteration's number, ring stage and
        phase; the lines that follow are its body."""
        p = self.p
        k = self.bind(p.loop.var)
        self.src.origin(p.loop.loc)
        self.src.line(f"for {k} in range({start}, {self.expr(p.loop.stop, None)}):")
        self.src.depth += 1
        self._iteration(k)

    def wait_s(self, in_flight: int, note: str = "") -> None:
        """Wait for S = Q K^T, ``in_flight`` later wgmma groups left running."""
        s_name = self.name(self.p.qk.c.buffer)
        self.src.line(f"{s_name} = warpgroup_mma_wait({in_flight}, deps=({s_name},)){note}")
        self.zero.discard(self.p.qk.c.buffer)

    def _loop_head(self) -> None:
        """The loop statements before S = Q K^T.  Where they only zero S, which is the gemm's
        accumulator, ``use_acc=False`` says it and their code is left out."""
        s_buf = self.p.qk.c.buffer
        out = self.src
        for at, s in enumerate(self.p.loop_head):
            start = len(out.lines)
            self.statement(s)
            later = self.p.loop_head[at + 1 :]
            if writes_whole(s) is s_buf and s_buf in self.zero and not any(touches(x, {s_buf}) for x in later):
                del out.lines[start:]
                out.last_origin = None

    def _box(self, src: ir.Region, rows: int, width: int | None = None) -> list:
        """The TMA box of a global region: ``rows`` of its row dim, ``width`` (else all) of the last."""
        wide = [d for d, e in enumerate(src.extents) if e != 1]
        box = [1] * len(src.extents)
        box[wide[0]] = rows
        box[-1] = src.extents[-1] if width is None else width
        return box

    def _issue_qk(self, stage: str) -> None:
        p = self.p
        out = self.src
        out.origin(p.qk.loc)
        s_buf = p.qk.c.buffer
        phase = "0" if stage == "0" else "phase"
        out.line(f"mbarrier.wait(k_ready.index({stage}), {phase})")
        k_tile = f"k_ring.index({stage}).reshape([{p.block_n}, {p.dim}]).permute((1, 0))"
        clear = isinstance(p.qk.clear_accum, ir.Const) and bool(p.qk.clear_accum.value)
        if clear or s_buf in self.zero:
            acc = f"gl.zeros([{ROWS}, {p.block_n}], gl.float32, s_layout)"
            out.line(f"{self.name(s_buf)} = warpgroup_mma(q_tile, {k_tile}, {acc}, use_acc=False, is_async=True)")
        else:
            out.line(f"{self.name(s_buf)} = warpgroup_mma(q_tile, {k_tile}, {self.name(s_buf)}, is_async=True)")

    def _issue_pv(self, stage: str, phase: str) -> None:
        p = self.p
        out = self.src
        out.origin(p.pv.loc)
        out.line(f"mbarrier.wait(v_ready.index({stage}), {phase})")
        out.line(f"p_tile = gl.convert_layout({self.name(p.pv.a.buffer)}, p_operand)")
        v_tile = f"v_ring.index({stage}).reshape([{p.block_n}, {p.dim_v}])"
        o = self.name(p.pv.c.buffer)
        out.line(f"{o} = warpgroup_mma(p_tile, {v_tile}, {o}, is_async=True)")

    def _wait_pv(self, stage: str) -> None:
        o = self.name(self.p.pv.c.buffer)
        self.src.line(f"{o}, p_tile = warpgroup_mma_wait(0, deps=({o}, p_tile))")
        self.src.line(f"mbarrier.arrive(kv_free.index({stage}), count=1)")

    def entry_head(self, fn: str, params: list, descriptors: list = ()) -> _Source:
        """The entry's signature, its tensor descriptors (``descriptors``: name, global buffer, box) and
        block indices (the partitions recompute what they need from these).

        A descriptor of a kernel parameter is, with host descriptors, a parameter of the entry: the
        host builds it per call (a ``CUtensorMap`` kernel argument, as TileLang passes them).  Else
        every program builds it (``tma.make_tensor_descriptor``: a tensormap written to global memory
        and fenced before its first use), which a short loop does not repay (H200, the attention-sink
        forward through this route: 13.8 -> 10.7 us at 256 keys, 103.3 -> 90.7 us at 2048)."""
        self.on_host = [d for d in descriptors if self.host_descriptors and any(d[1] is x for x in self.p.func.params)]
        host_names = [name for name, _, _ in self.on_host]
        self.src = out = _Source()
        out.line("@gluon.jit")
        out.line(f"def {fn}({', '.join(params + host_names)}):")
        out.depth = 1
        out.origin(self.p.kernel.loc)
        for axis, var in enumerate(self.p.kernel.block_vars):
            out.line(f"{self.name(var)} = gl.program_id({axis})")
        for name, buf, box in descriptors:
            if name not in host_names:
                out.line(
                    f"{name} = tma.make_tensor_descriptor({self.name(buf)}, {list(buf.shape)}, "
                    f"{list(row_major_strides(buf.shape))}, {box}, gl.NVMMASharedLayout.get_default_for({box}, {self.half}))"
                )
        return out

    def entry(self, fn: str, params: list, consumer_args: list, loader_args: list) -> str:
        p = self.p
        descriptors = [
            (desc, copy.src.buffer, self._box(copy.src, rows))
            for desc, copy, rows in (
                ("q_desc", p.q_copy, ROWS),
                ("k_desc", p.k_copy, p.block_n),
                ("v_desc", p.v_copy, p.block_n),
            )
        ]
        out = self.entry_head(fn, params, descriptors)
        k_box = self._box(p.k_copy.src, p.block_n)
        v_box = self._box(p.v_copy.src, p.block_n)
        out.line(f"k_ring = gl.allocate_shared_memory({self.half}, [{p.stages}] + {k_box}, k_desc.layout)")
        out.line(f"v_ring = gl.allocate_shared_memory({self.half}, [{p.stages}] + {v_box}, v_desc.layout)")
        for bar in ("k_ready", "v_ready", "kv_free"):
            out.line(f"{bar} = gl.allocate_shared_memory(gl.int64, [{p.stages}, 1], mbarrier.MBarrierLayout())")
        out.line(f"for stage in gl.static_range({p.stages}):")
        out.line("    mbarrier.init(k_ready.index(stage), count=1)")
        out.line("    mbarrier.init(v_ready.index(stage), count=1)")
        out.line(f"    mbarrier.init(kv_free.index(stage), count={p.consumers})")
        name = p.kernel.name
        c_args = ", ".join(consumer_args)
        l_args = ", ".join(loader_args)
        out.line("gl.warp_specialize(")
        out.line("    [")
        for c in range(p.consumers):
            out.line(f"        ({name}_consumer, ({c_args}, {c * ROWS})),")
        out.line(f"        ({name}_loader, ({l_args})),")
        out.line("    ],")
        out.line(f"    {[4] * (p.consumers - 1) + [1]},")
        out.line(f"    {[CONSUMER_REGS] * (p.consumers - 1) + [LOADER_REGS]},")
        out.line(")")
        return "\n".join(out.lines)


def _tma_load_name() -> str:
    """Triton 3.6 calls the TMA load ``async_copy_global_to_shared``; later versions ``async_load``."""
    from triton.experimental.gluon.language.nvidia.hopper import tma

    return "tma.async_load" if hasattr(tma, "async_load") else "tma.async_copy_global_to_shared"


def emit(p: Plan, fast_math: bool = False, host_descriptors: bool = False) -> tuple[str, str, list]:
    """The Gluon source of the planned kernel (its three functions), the entry's name and the
    descriptors the host makes for it (name, global buffer, box: the entry's last parameters);
    ``fast_math``: the kernel's TL_ENABLE_FAST_MATH; ``host_descriptors``: TILE2TRITON_HOST_DESCRIPTORS."""
    emitter = _Emitter(p, fast_math, host_descriptors)
    return emitter.module(), f"{p.kernel.name}_kernel", emitter.on_host
