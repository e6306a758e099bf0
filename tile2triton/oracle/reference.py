"""A reference executor: runs a kernel's TileIR directly with torch on the CPU — no Triton.

``run(kernel, *inputs)`` executes every ``T.Kernel`` block by block (a Python loop over the
grid) with TileLang's semantics (TILELANG_API.md §4): copies read 0 outside the source buffer
and drop writes outside the destination buffer, ``T.gemm`` accumulates into ``C`` unless
``clear_accum``, ``T.reduce_*`` with ``clear=False`` combines with the old output, ``//`` and
``%`` on integers are floor division / floor modulo, ``/`` on integers truncates.

It is an independent oracle for tile2triton's generated code and a debugging aid:
``compare(kernel, *inputs)`` runs both and reports the first output element that diverges
and the statement (file:line) that last wrote it in the reference run.

How the block view is executed:
* shared / fragment / local buffers are per-block torch tensors (floats start as NaN, so a read
  of an element nobody wrote shows up);
* ``T.Parallel`` bodies are evaluated vectorized: every loop variable is an ``arange`` along
  its own tensor dimension ("lane" dimension) and every value in the body broadcasts over the
  lane dimensions; an ``if`` on a lane-dependent condition narrows a lane mask;
* a buffer allocated inside ``T.Parallel`` (or a ``T.alloc_local`` in a thread-view kernel) is
  private to each iteration: its tensor gets the lane dimensions in front;
* thread-view kernels (``T.get_thread_binding``) run the body once with ``tx`` as a lane
  dimension of extent ``threads`` (every statement completes for all threads before the next,
  which is one valid schedule of a race-free program).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import torch

from .. import ir
from ..ir.exprs import binary_dtype
from ..language.dtypes import DTYPES, DType

__all__ = ["run", "compare", "Comparison", "ReferenceError"]

BOOL = DTYPES["bool"]
INT32 = DTYPES["int32"]
FLOAT32 = DTYPES["float32"]


class ReferenceError(RuntimeError):  # noqa: A001 - module-local name
    """The reference executor met something it cannot execute (with the statement's location)."""


def _tdt(dt: DType) -> torch.dtype:
    return dt.as_torch()


def _lift(t: torch.Tensor, rank: int) -> torch.Tensor:
    """Append unit dims so a lane value of lower rank broadcasts against ``rank`` lane dims."""
    if t.dim() == 0 or t.dim() >= rank:
        return t
    return t.reshape(tuple(t.shape) + (1,) * (rank - t.dim()))


def _lift2(a: torch.Tensor, b: torch.Tensor):
    r = max(a.dim(), b.dim())
    return _lift(a, r), _lift(b, r)


def _wide(dt: torch.dtype) -> torch.dtype:
    if dt.is_floating_point:
        return torch.float64
    if dt == torch.bool:
        return torch.int64
    return torch.int64


@dataclass
class _Storage:
    tensor: torch.Tensor
    lane_dims: tuple = ()  # lane positions the buffer is private to (prefix dims of tensor)
    is_global: bool = False
    param_index: int | None = None


@dataclass
class _Trace:
    """Which statement last wrote each element of each global tensor (for ``compare``)."""

    writers: dict = field(default_factory=dict)  # param index -> int64 tensor (stmt number, -1 = none)
    stmts: list = field(default_factory=list)  # stmt number -> Stmt
    numbers: dict = field(default_factory=dict)  # id(stmt) -> number

    def number(self, s) -> int:
        n = self.numbers.get(id(s))
        if n is None:
            n = self.numbers[id(s)] = len(self.stmts)
            self.stmts.append(s)
        return n


class _LoopState:
    """The lanes still in a sequential loop (``break``) and in its current iteration (``continue``)."""

    def __init__(self, lanes: torch.Tensor | None):
        self.running = torch.tensor(True) if lanes is None else lanes.to(torch.bool)
        self.active = self.running

    def leave(self, lanes: torch.Tensor | None, loop: bool) -> None:
        gone = torch.tensor(True) if lanes is None else lanes
        a, g = _lift2(self.active, gone)
        self.active = a & ~g
        if loop:
            r, g = _lift2(self.running, gone)
            self.running = r & ~g


class _Block:
    """Executes one kernel body for one block index."""

    def __init__(self, env: dict, globals_: dict, trace: _Trace | None, poison: bool):
        self.env = env
        self.bufs: dict = dict(globals_)
        self.lanes: list[int] = []  # extents of the lane dims
        self.lane_kinds: list[str] = []  # "thread" or "parallel"
        self.mask: torch.Tensor | None = None
        self.trace = trace
        self.poison = poison
        self.stmt: ir.Stmt | None = None
        self.loops: list[_LoopState] = []  # the sequential loops around the statement, innermost last

    # ------------------------------------------------------------------ helpers
    @property
    def L(self) -> int:  # noqa: N802
        return len(self.lanes)

    def error(self, msg: str) -> ReferenceError:
        loc = getattr(self.stmt, "loc", None)
        return ReferenceError(f"{loc}: {msg}" if loc is not None else msg)

    def lane_grid(self, d: int, rank: int) -> torch.Tensor:
        shape = [1] * rank
        shape[d] = self.lanes[d]
        return torch.arange(self.lanes[d], dtype=torch.int64).reshape(shape)

    def scalar_int(self, e) -> int:
        if isinstance(e, int):
            return e
        v = self.ev(e)
        if v.dim() != 0 and v.numel() != 1:
            raise self.error(f"expected a block-uniform value, got a tile of shape {tuple(v.shape)}")
        return int(v.reshape(()).item())

    def any_lane(self, m: torch.Tensor | None) -> bool:
        return m is None or bool(m.any())

    def and_mask(self, c: torch.Tensor) -> torch.Tensor:
        if self.mask is None:
            return c
        a, b = _lift2(self.mask, c)
        return a & b

    # ------------------------------------------------------------------ expressions
    def const(self, value, dtype: DType) -> torch.Tensor:
        return torch.tensor(value, dtype=_tdt(dtype))

    def ev_as(self, e: ir.Expr, dtype: DType) -> torch.Tensor:
        if isinstance(e, ir.Const):
            return self.const(e.value, dtype)
        return self.ev(e).to(_tdt(dtype))

    def ev(self, e) -> torch.Tensor:
        if isinstance(e, int) and not isinstance(e, bool):
            return torch.tensor(e, dtype=torch.int32)
        if isinstance(e, ir.Const):
            return self.const(e.value, e.dtype)
        if isinstance(e, ir.VarRef):
            try:
                return self.env[e.var]
            except KeyError:
                raise self.error(f"variable '{e.var.name}' has no value here") from None
        if isinstance(e, ir.Load):
            return self.load(e.buffer, [self.ev(i) for i in e.indices], self.L)
        if isinstance(e, ir.BinOp):
            return self.binop(e)
        if isinstance(e, ir.Compare):
            dt = binary_dtype(e.op, e.lhs, e.rhs)
            a, b = _lift2(self.ev_as(e.lhs, dt), self.ev_as(e.rhs, dt))
            return {"<": torch.lt, "<=": torch.le, ">": torch.gt, ">=": torch.ge, "==": torch.eq, "!=": torch.ne}[e.op](
                a, b
            )
        if isinstance(e, ir.UnaryOp):
            v = self.ev(e.operand)
            if e.op == "-":
                return torch.neg(v.to(_tdt(e.dtype)))
            if e.op == "not":
                return torch.logical_not(v.to(torch.bool))
            if e.op == "~":
                return torch.bitwise_not(v.to(_tdt(e.dtype)))
            raise self.error(f"unknown unary operator {e.op!r}")
        if isinstance(e, ir.Cast):
            return self.cast(self.ev(e.value), e.dtype)
        if isinstance(e, ir.Select):
            c = self.ev(e.cond).to(torch.bool)
            a, b = self.ev_as(e.true_value, e.dtype), self.ev_as(e.false_value, e.dtype)
            r = max(c.dim(), a.dim(), b.dim())
            return torch.where(_lift(c, r), _lift(a, r), _lift(b, r))
        if isinstance(e, ir.Call):
            return self.call(e)
        raise self.error(f"cannot evaluate {e!r}")

    def cast(self, v: torch.Tensor, dtype: DType) -> torch.Tensor:
        target = _tdt(dtype)
        if v.dtype.is_floating_point and not target.is_floating_point and target != torch.bool:
            v = torch.trunc(v)  # C conversion: toward zero (torch does this too; explicit for clarity)
        return v.to(target)

    def binop(self, e: ir.BinOp) -> torch.Tensor:
        op = e.op
        if op in ("and", "or"):
            a, b = _lift2(self.ev(e.lhs).to(torch.bool), self.ev(e.rhs).to(torch.bool))
            return torch.logical_and(a, b) if op == "and" else torch.logical_or(a, b)
        dt = e.dtype
        a, b = _lift2(self.ev_as(e.lhs, dt), self.ev_as(e.rhs, dt))
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            if dt.is_float:
                return a / b
            return torch.div(a, _nonzero(b), rounding_mode="trunc")  # TVM integer Div truncates
        if op == "//":
            if dt.is_float:
                return torch.floor(a / b)
            return torch.div(a, _nonzero(b), rounding_mode="floor")
        if op == "%":
            if dt.is_float:
                r = torch.fmod(a, b)  # floor modulo, exact as tile2triton's (the divisor's sign)
                return torch.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)
            return torch.remainder(a, _nonzero(b))
        if op == "&":
            return torch.bitwise_and(a, b)
        if op == "|":
            return torch.bitwise_or(a, b)
        if op == "^":
            return torch.bitwise_xor(a, b)
        if op == "<<":
            return torch.bitwise_left_shift(a, b)
        if op == ">>":
            return torch.bitwise_right_shift(a, b)
        if op == "**":
            return torch.pow(a.double(), b.double()).to(a.dtype)
        raise self.error(f"unknown binary operator {op!r}")

    def call(self, e: ir.Call) -> torch.Tensor:
        fn = e.fn
        out = _tdt(e.dtype)
        if fn in ("max", "min"):
            a, b = _lift2(self.ev_as(e.args[0], e.dtype), self.ev_as(e.args[1], e.dtype))
            return torch.maximum(a, b) if fn == "max" else torch.minimum(a, b)
        if fn in ("truncdiv", "truncmod"):
            a, b = _lift2(self.ev_as(e.args[0], e.dtype), self.ev_as(e.args[1], e.dtype))
            if e.dtype.is_float:
                return torch.trunc(a / b) if fn == "truncdiv" else torch.fmod(a, b)
            return torch.div(a, _nonzero(b), rounding_mode="trunc") if fn == "truncdiv" else torch.fmod(a, _nonzero(b))
        if fn in ("pow", "atan2", "fmod"):
            a, b = _lift2(self.ev(e.args[0]), self.ev(e.args[1]))
            work = torch.float64 if torch.float64 in (a.dtype, b.dtype) else torch.float32
            a, b = a.to(work), b.to(work)
            r = torch.pow(a, b) if fn == "pow" else torch.atan2(a, b) if fn == "atan2" else torch.fmod(a, b)
            return r.to(out)
        if fn == "bitcast":
            return self.ev(e.args[0]).contiguous().view(out)
        (x,) = e.args
        v = self.ev(x)
        if fn in ("isnan", "isinf", "isfinite"):
            f = v if v.dtype.is_floating_point else v.to(torch.float32)
            return {"isnan": torch.isnan, "isinf": torch.isinf, "isfinite": torch.isfinite}[fn](f)
        if fn == "abs" and not v.dtype.is_floating_point:
            return torch.abs(v).to(out)
        work = torch.float64 if v.dtype == torch.float64 or out == torch.float64 else torch.float32
        f = v.to(work)
        unary = {
            "exp": torch.exp, "exp2": torch.exp2, "log": torch.log, "log2": torch.log2, "log10": torch.log10,
            "log1p": torch.log1p, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "abs": torch.abs, "tanh": torch.tanh,
            "sigmoid": torch.sigmoid, "sin": torch.sin, "cos": torch.cos, "tan": torch.tan, "erf": torch.erf,
            "floor": torch.floor, "ceil": torch.ceil, "trunc": torch.trunc, "nearbyint": torch.round,
            "exp10": lambda t: torch.pow(torch.tensor(10.0, dtype=t.dtype), t),
            "round": torch.round,  # TileLang's T.round is nearbyintf: ties to even
            "round_away": lambda t: torch.trunc(t) + torch.where((t - torch.trunc(t)).abs() >= 0.5, torch.sign(t), 0),
        }  # fmt: skip
        if fn not in unary:
            raise self.error(f"T.{fn} is not supported by the reference executor")
        return unary[fn](f).to(out)

    # ------------------------------------------------------------------ memory
    def storage(self, buf: ir.Buffer) -> _Storage:
        st = self.bufs.get(buf)
        if st is None and buf.alias_of is not None:  # T.Tensor(shape, dtype, A.data): a view of A
            root = self.storage(buf.root)
            shape = [self.scalar_int(d) for d in buf.shape]
            st = self.bufs[buf] = _Storage(root.tensor.view(root.tensor.dtype).reshape(shape), (), True, None)
        if st is None:
            raise self.error(f"buffer '{buf.name}' is used before its allocation")
        return st

    def _full_indices(self, st: _Storage, idx: list, rank: int) -> list:
        full = [self.lane_grid(d, rank) for d in st.lane_dims] + [_lift(t.to(torch.int64), rank) for t in idx]
        if len(full) != st.tensor.dim():
            raise self.error(
                f"{len(full) - len(st.lane_dims)} indices for a {st.tensor.dim() - len(st.lane_dims)}-D buffer"
            )
        return full

    def load(self, buf: ir.Buffer, idx: list, rank: int) -> torch.Tensor:
        """Gather ``buf[idx]``; elements outside the buffer read 0 (TileLang's safe value)."""
        st = self.storage(buf)
        full = self._full_indices(st, idx, rank)
        shape = _bshape(*[t.shape for t in full])
        inb = torch.ones(shape, dtype=torch.bool)
        clamped = []
        for k, t in enumerate(full):
            n = st.tensor.shape[k]
            inb = inb & (t >= 0) & (t < n)
            clamped.append(t.clamp(0, max(n - 1, 0)).expand(shape))
        if st.tensor.numel() == 0:
            return torch.zeros(shape, dtype=st.tensor.dtype)
        vals = st.tensor[tuple(clamped)] if clamped else st.tensor
        if bool(inb.all()):
            return vals
        return torch.where(inb, vals, torch.zeros((), dtype=vals.dtype))

    def store(self, buf: ir.Buffer, idx: list, value: torch.Tensor, rank: int, mask, reduce: str | None = None):
        """Scatter ``value`` to ``buf[idx]`` where ``mask``; writes outside the buffer are dropped."""
        st = self.storage(buf)
        full = self._full_indices(st, idx, rank)
        value = _lift(value.to(st.tensor.dtype), rank)
        parts = [t.shape for t in full] + [value.shape]
        if mask is not None:
            mask = _lift(mask, rank)
            parts.append(mask.shape)
        shape = _bshape(*parts)
        keep = torch.ones(shape, dtype=torch.bool)
        for k, t in enumerate(full):
            keep = keep & (t >= 0) & (t < st.tensor.shape[k])
        if mask is not None:
            keep = keep & mask
        if bool(keep.all()):
            sel = [t.expand(shape) for t in full]
            vals = value.expand(shape)
        elif not bool(keep.any()):
            return
        else:
            sel = [t.expand(shape)[keep] for t in full]
            vals = value.expand(shape)[keep]
        if reduce is None:
            st.tensor.index_put_(tuple(sel), vals)
        else:
            lin = torch.zeros_like(sel[0]) if sel else torch.zeros((), dtype=torch.int64)
            for k, t in enumerate(sel):
                lin = lin * st.tensor.shape[k] + t
            lin, vals = lin.reshape(-1), vals.reshape(-1)
            flat = st.tensor.view(-1)
            mode = {"add": "sum", "max": "amax", "min": "amin"}[reduce]
            if flat.dtype in (torch.float16, torch.bfloat16) and mode == "sum":
                # accumulate in the element type, one add at a time, as the hardware does
                acc = flat.float()
                acc.scatter_reduce_(0, lin, vals.float(), reduce=mode, include_self=True)
                flat.copy_(acc.to(flat.dtype))
            else:
                flat.scatter_reduce_(0, lin, vals, reduce=mode, include_self=True)
        if st.is_global and self.trace is not None and self.stmt is not None:
            w = self.trace.writers.get(st.param_index)
            if w is not None:
                w[tuple(sel)] = self.trace.number(self.stmt)

    # ------------------------------------------------------------------ regions
    def region_iter(self, base_ext: list, rank0: int):
        """Index grids (one per non-1 extent of the base range) placed after ``rank0`` lane dims."""
        dims = [e for e in base_ext if e != 1]
        r = rank0 + len(dims)
        grids = []
        for k, n in enumerate(dims):
            shape = [1] * r
            shape[rank0 + k] = n
            grids.append(torch.arange(n, dtype=torch.int64).reshape(shape))
        return dims, grids, r

    def region_indices(self, region: ir.Region, ext: list, grids: list, rank: int) -> list:
        """Indices of ``region`` for the iteration grids: its non-1 dims take the grids in order."""
        starts = [_lift(self.ev(s).to(torch.int64), rank) for s in region.starts]
        non1 = [d for d, e in enumerate(ext) if e != 1]
        if len(non1) > len(grids):
            raise self.error(
                f"region of '{region.buffer.name}' has {len(non1)} non-unit extents but the copy iterates over {len(grids)}"
            )
        # fewer non-1 dims than the iteration space: map them to the trailing iteration dims
        offset = len(grids) - len(non1)
        idx = []
        for d, s in enumerate(starts):
            if d in non1:
                idx.append(s + grids[offset + non1.index(d)])
            else:
                idx.append(s)
        return idx

    def extents(self, region: ir.Region) -> list:
        return [self.scalar_int(e) for e in region.extents]

    def tile_mode(self, *buffers):
        """Lane rank and mask for a tile op: collective (0, None) unless it touches a private buffer."""
        private = any(self.storage(b).lane_dims for b in buffers)
        parallel = "parallel" in self.lane_kinds
        if private or parallel:
            return self.L, self.mask
        return 0, None

    def read_region(self, region: ir.Region, rank0: int):
        """The region as a tensor of shape (lanes..., *extents) (unit extents kept)."""
        ext = self.extents(region)
        r = rank0 + len(ext)
        grids = []
        for k, n in enumerate(ext):
            shape = [1] * r
            shape[rank0 + k] = n
            grids.append(torch.arange(n, dtype=torch.int64).reshape(shape))
        idx = [_lift(self.ev(s).to(torch.int64), r) + g for s, g in zip(region.starts, grids)]
        v = _lift(self.load(region.buffer, idx, r), r)
        if v.dim() == 0:
            v = v.reshape((1,) * r)
        return v.expand(tuple(v.shape[:rank0]) + tuple(ext)), idx, r, ext

    # ------------------------------------------------------------------ statements
    def run(self, stmts: list) -> None:
        for s in stmts:
            self.stmt = s
            method = getattr(self, "s_" + type(s).__name__, None)
            if method is None:
                raise self.error(f"statement {type(s).__name__} is not supported by the reference executor")
            live = self.loops[-1].active if self.loops else None
            if live is None or (live.dim() == 0 and bool(live)):
                method(s)
            elif live.dim() == 0 or not bool(live.any()):
                continue  # every lane has left this iteration (break / continue)
            else:
                saved = self.mask
                self.mask = live if saved is None else self.and_mask_with(saved, live)
                try:
                    method(s)
                finally:
                    self.mask = saved

    def s_Break(self, s: ir.Break) -> None:
        self.loops[-1].leave(self.mask, loop=True)

    def s_Continue(self, s: ir.Continue) -> None:
        self.loops[-1].leave(self.mask, loop=False)

    def s_Alloc(self, s: ir.Alloc) -> None:
        buf = s.buffer
        if buf.scope == ir.SHARED:
            lane_dims = ()
        elif buf.scope in (ir.LOCAL, ir.VAR):
            lane_dims = tuple(range(self.L))
        else:
            lane_dims = tuple(d for d in range(self.L) if self.lane_kinds[d] == "parallel")
        shape = tuple(self.lanes[d] for d in lane_dims) + tuple(int(x) for x in buf.shape)
        dt = _tdt(buf.dtype)
        if dt.is_floating_point and self.poison:
            t = torch.full(shape, float("nan"), dtype=dt)
        else:
            t = torch.zeros(shape, dtype=dt)
        self.bufs[buf] = _Storage(t, lane_dims)
        if s.init is not None:
            v = self.ev_as(s.init, buf.dtype)
            if v.dim() == 0:
                t.fill_(v)
            else:
                self.store(buf, [torch.tensor(0)], v, self.L, None)

    def s_Let(self, s: ir.Let) -> None:
        v = self.cast(self.ev(s.value), s.var.dtype) if s.value.dtype != s.var.dtype else self.ev(s.value)
        old = self.env.get(s.var)
        if old is not None and self.mask is not None:
            m, v2 = _lift2(self.mask, v)
            m, o2 = _lift2(m, old)
            m, v2 = _lift2(m, v2)
            v = torch.where(m, v2, o2)
        self.env[s.var] = v

    def s_Store(self, s: ir.Store) -> None:
        value = self.ev_as(s.value, s.buffer.dtype)
        idx = [self.ev(i) for i in s.indices]
        self.store(s.buffer, idx, value, self.L, self.mask)

    def s_For(self, s: ir.For) -> None:
        start, stop, step = self.ev(s.start), self.ev(s.stop), self.ev(s.step)
        if step.dim() != 0:
            raise self.error("a loop step that differs between lanes is not supported")
        st = int(step.item())
        if st == 0:
            raise self.error("loop step is 0")
        loop = _LoopState(self.mask)
        self.loops.append(loop)
        try:
            self.for_iterations(s, start, stop, st, loop)
        finally:
            self.loops.pop()

    def for_iterations(self, s: ir.For, start, stop, st: int, loop: _LoopState) -> None:
        if start.dim() == 0 and stop.dim() == 0:
            for i in range(int(start.item()), int(stop.item()), st):
                if not bool(loop.running.any()):
                    return  # every lane has left by break
                loop.active = loop.running
                self.env[s.var] = torch.tensor(i, dtype=torch.int32)
                self.run(s.body)
                self.stmt = s
            return
        # lane-dependent bounds: iterate over the union, masking lanes outside their own range
        lo, hi = int(start.min().item()), int(stop.max().item())
        saved = self.mask
        for i in range(lo, hi, st):
            iv = torch.tensor(i, dtype=torch.int32)
            active = (iv >= start) & (iv < stop) & (((iv - start) % st) == 0)
            self.mask = active if saved is None else self.and_mask_with(saved, active)
            if self.any_lane(self.mask) and bool(loop.running.any()):
                loop.active = loop.running
                self.env[s.var] = iv
                self.run(s.body)
                self.stmt = s
        self.mask = saved

    @staticmethod
    def and_mask_with(a, b):
        a, b = _lift2(a, b)
        return a & b

    def s_Parallel(self, s: ir.Parallel) -> None:
        base = self.L
        self.lanes.extend(int(e) for e in s.extents)
        self.lane_kinds.extend("parallel" for _ in s.extents)
        saved_env = dict(self.env)
        try:
            for k, v in enumerate(s.vars):
                self.env[v] = self.lane_grid(base + k, self.L).to(torch.int32)
            self.run(s.body)
        finally:
            del self.lanes[base:]
            del self.lane_kinds[base:]
            self.env = saved_env  # values bound inside the loop do not outlive it

    def s_While(self, s: ir.While) -> None:
        loop = _LoopState(self.mask)
        self.loops.append(loop)
        try:
            while True:
                c = self.ev(s.cond).to(torch.bool)
                if c.numel() == 1:
                    if not bool(c.reshape(())):
                        return
                else:  # a per-lane condition: each lane leaves where its own fails
                    r, c = _lift2(loop.running, c)
                    loop.running = r & c
                if not bool(loop.running.any()):
                    return
                loop.active = loop.running
                self.run(s.body)
                self.stmt = s
        finally:
            self.loops.pop()

    def s_If(self, s: ir.If) -> None:
        c = self.ev(s.cond).to(torch.bool)
        if c.dim() == 0:
            self.run(s.then_body if bool(c) else s.else_body)
            return
        saved = self.mask
        then_mask = self.and_mask(c)
        if s.then_body and bool(then_mask.any()):
            self.mask = then_mask
            self.run(s.then_body)
        self.mask = saved
        if s.else_body:
            else_mask = self.and_mask(torch.logical_not(c))
            if bool(else_mask.any()):
                self.mask = else_mask
                self.run(s.else_body)
        self.mask = saved
        self.stmt = s

    def s_Copy(self, s: ir.Copy) -> None:
        dst = s.dst
        if not isinstance(dst, ir.Region):
            raise self.error("T.copy destination must be a region")
        if not isinstance(s.src, ir.Region):
            self._fill(dst, s.src)
            return
        src = s.src
        rank0, mask = self.tile_mode(src.buffer, dst.buffer)
        src_ext, dst_ext = self.extents(src), self.extents(dst)
        base_ext = dst_ext if _scope_rank(dst.buffer) > _scope_rank(src.buffer) else src_ext
        _, grids, r = self.region_iter(base_ext, rank0)
        with _lane_view(self, rank0, mask):
            si = self.region_indices(src, src_ext, grids, r)
            di = self.region_indices(dst, dst_ext, grids, r)
            vals = self.load(src.buffer, si, r)
            self.store(dst.buffer, di, vals.to(_tdt(dst.buffer.dtype)), r, mask)

    def _fill(self, dst: ir.Region, value_expr) -> None:
        rank0, mask = self.tile_mode(dst.buffer)
        value = self.ev_as(value_expr, dst.buffer.dtype)
        ext = self.extents(dst)
        with _lane_view(self, rank0, mask):
            _, grids, r = self.region_iter(ext, rank0)
            di = self.region_indices(dst, ext, grids, r)
            self.store(dst.buffer, di, value, r, mask)

    def s_Fill(self, s: ir.Fill) -> None:
        self._fill(s.dst, s.value)

    def _collective(self, *regions):
        rank0, mask = self.tile_mode(*[r.buffer for r in regions])
        return rank0, mask

    def s_Gemm(self, s: ir.Gemm) -> None:
        rank0, mask = self._collective(s.a, s.b, s.c)
        with _lane_view(self, rank0, mask):
            A, _, _, ea = self.read_region(s.a, rank0)
            B, _, _, eb = self.read_region(s.b, rank0)
            C, cidx, cr, ec = self.read_region(s.c, rank0)
            a2, b2 = _last2(A, rank0, ea), _last2(B, rank0, eb)
            if s.trans_a:
                a2 = a2.transpose(-1, -2)
            if s.trans_b:
                b2 = b2.transpose(-1, -2)
            c2 = _last2(C, rank0, ec)
            if a2.shape[-1] != b2.shape[-2] or a2.shape[-2] != c2.shape[-2] or b2.shape[-1] != c2.shape[-1]:
                raise self.error(
                    f"T.gemm shapes do not agree: A {tuple(a2.shape)}, B {tuple(b2.shape)}, C {tuple(c2.shape)}"
                )
            w = _wide(C.dtype)
            prod = torch.matmul(a2.to(w), b2.to(w))
            clear = self.ev(s.clear_accum).to(torch.bool)
            old = c2.to(w)
            if clear.dim() == 0:
                acc = prod if bool(clear) else old + prod
            else:
                acc = torch.where(_lift(clear, rank0 + 2), prod, old + prod)
            self.store(s.c.buffer, cidx, acc.reshape(tuple(acc.shape[:rank0]) + tuple(ec)), cr, mask)

    def s_Reduce(self, s: ir.Reduce) -> None:
        rank0, mask = self._collective(s.src, s.dst)
        with _lane_view(self, rank0, mask):
            X, _, _, _ = self.read_region(s.src, rank0)
            D, didx, dr, edst = self.read_region(s.dst, rank0)
            w = _wide(X.dtype)
            x = X.to(w)
            axis = rank0 + s.dim
            if s.kind == "sum":
                red = x.sum(axis)
            elif s.kind == "abssum":
                red = x.abs().sum(axis)
            elif s.kind == "max":
                red = x.amax(axis)
            elif s.kind == "min":
                red = x.amin(axis)
            elif s.kind == "absmax":
                red = x.abs().amax(axis)
            else:
                raise self.error(f"reduction kind {s.kind!r} is not supported")
            red = red.reshape(tuple(red.shape[:rank0]) + tuple(edst))
            if not s.clear and s.kind != "abssum":
                old = D.to(w)
                if s.kind in ("sum",):
                    red = old + red
                elif s.kind in ("max", "absmax"):
                    red = torch.maximum(old, red)
                else:
                    red = torch.minimum(old, red)
            self.store(s.dst.buffer, didx, red, dr, mask)

    def s_Scan(self, s: ir.Scan) -> None:
        rank0, mask = self._collective(s.src, s.dst)
        with _lane_view(self, rank0, mask):
            X, _, _, _ = self.read_region(s.src, rank0)
            D, didx, dr, _ = self.read_region(s.dst, rank0)
            x = X.to(_wide(X.dtype))
            axis = rank0 + s.dim

            def scan(t):
                return torch.cummax(t, axis).values if s.op == "max" else torch.cumsum(t, axis)

            y = torch.flip(scan(torch.flip(x, [axis])), [axis]) if s.reverse else scan(x)
            self.store(s.dst.buffer, didx, y, dr, mask)

    def s_Atomic(self, s: ir.Atomic) -> None:
        if s.result is not None or s.kind not in ("add", "max", "min"):
            what = "an atomic's previous value" if s.result is not None else f"atomic kind {s.kind!r}"
            raise self.error(f"{what} is not supported by the reference executor")
        if isinstance(s.dst, ir.Load):
            value = self.ev_as(s.value, s.dst.buffer.dtype)
            idx = [self.ev(i) for i in s.dst.indices]
            self.store(s.dst.buffer, idx, value, self.L, self.mask, reduce=s.kind)
            return
        dst = s.dst
        dst_ext = self.extents(dst)
        if isinstance(s.value, ir.Region):
            src = s.value
            rank0, mask = self.tile_mode(src.buffer, dst.buffer)
            src_ext = self.extents(src)
            with _lane_view(self, rank0, mask):
                _, grids, r = self.region_iter(dst_ext, rank0)
                si = self.region_indices(src, src_ext, grids, r)
                di = self.region_indices(dst, dst_ext, grids, r)
                vals = self.load(src.buffer, si, r).to(_tdt(dst.buffer.dtype))
                self.store(dst.buffer, di, vals, r, mask, reduce=s.kind)
        else:
            rank0, mask = self.tile_mode(dst.buffer)
            value = self.ev_as(s.value, dst.buffer.dtype)
            with _lane_view(self, rank0, mask):
                _, grids, r = self.region_iter(dst_ext, rank0)
                di = self.region_indices(dst, dst_ext, grids, r)
                self.store(dst.buffer, di, value, r, mask, reduce=s.kind)

    def s_Barrier(self, s: ir.Barrier) -> None:
        pass  # statements complete for every lane before the next one starts

    def s_SafeValues(self, s: ir.SafeValues) -> None:
        pass  # T.sblock's safe values: out-of-bounds reads here read 0 whatever they are (gather)

    def s_Print(self, s: ir.Print) -> None:
        if s.value is None:
            print(s.msg)
        elif isinstance(s.value, ir.Buffer):
            print(s.msg, self.storage(s.value).tensor)
        else:
            print(s.msg, self.ev(s.value))

    def s_DeviceAssert(self, s: ir.DeviceAssert) -> None:
        pass  # a check, not a result: the generated kernel runs it (in Triton's debug mode)

    def s_Kernel(self, s: ir.Kernel) -> None:
        raise self.error("T.Kernel cannot be nested")


class _lane_view:
    """Run a tile op with only the first ``rank0`` lane dims visible (0 = collective)."""

    def __init__(self, blk: _Block, rank0: int, mask):
        self.blk, self.rank0, self.mask = blk, rank0, mask

    def __enter__(self):
        b = self.blk
        self.saved = (b.lanes, b.lane_kinds, b.mask)
        if self.rank0 != b.L:
            b.lanes, b.lane_kinds = b.lanes[: self.rank0], b.lane_kinds[: self.rank0]
            b.mask = self.mask

    def __exit__(self, *exc):
        self.blk.lanes, self.blk.lane_kinds, self.blk.mask = self.saved


def _bshape(*shapes) -> tuple:
    """numpy broadcasting of shapes (torch.broadcast_shapes is slow for this many small calls)."""
    r = max((len(x) for x in shapes), default=0)
    out = [1] * r
    for sh in shapes:
        off = r - len(sh)
        for k, n in enumerate(sh):
            if n != 1:
                if out[off + k] not in (1, n):
                    raise ReferenceError(f"shapes {shapes} do not broadcast")
                out[off + k] = n
    return tuple(out)


def _nonzero(b: torch.Tensor) -> torch.Tensor:
    """Integer division by zero is undefined in TileLang; avoid torch's exception (result: garbage)."""
    if b.is_floating_point():
        return b
    return torch.where(b == 0, torch.ones((), dtype=b.dtype), b)


def _last2(t: torch.Tensor, rank0: int, ext: list) -> torch.Tensor:
    """Drop the unit leading dims of a gemm operand region (keeping lane dims in front)."""
    if len(ext) < 2:
        raise ReferenceError(f"T.gemm operands must be 2-D regions, got extents {ext}")
    if any(e != 1 for e in ext[:-2]):
        raise ReferenceError(f"T.gemm operand leading dims must be 1, got extents {ext}")
    return t.reshape(tuple(t.shape[:rank0]) + tuple(ext[-2:]))


def _scope_rank(buf: ir.Buffer) -> int:
    return {ir.GLOBAL: 0, ir.SHARED: 1, ir.FRAGMENT: 2, ir.LOCAL: 2, ir.VAR: 2}[buf.scope]


# ====================================================================== entry points
def _prim_func(kernel) -> ir.PrimFunc:
    func = getattr(kernel, "prim_func", kernel)
    if not isinstance(func, ir.PrimFunc):
        raise TypeError(f"expected a compiled kernel (JITKernel) or an ir.PrimFunc, got {type(kernel).__name__}")
    return func


def _bind_args(func: ir.PrimFunc, args, poison: bool):
    inputs = [i for i in range(len(func.params)) if i not in func.out_idx and i not in func.workspaces]
    if len(args) != len(inputs):
        names = ", ".join(func.params[i].name for i in inputs)
        raise TypeError(f"{func.name} expects {len(inputs)} argument(s) ({names}), got {len(args)}")
    env: dict = {}
    tensors: dict = {}
    for i, a in zip(inputs, args):
        p = func.params[i]
        if isinstance(p, ir.Buffer):
            if not isinstance(a, torch.Tensor):
                raise TypeError(f"'{p.name}' expects a tensor")
            for dim, actual in zip(p.shape, a.shape):
                if isinstance(dim, ir.VarRef):
                    env.setdefault(dim.var, torch.tensor(int(actual), dtype=_tdt(dim.var.dtype)))
            tensors[i] = a
        else:
            env[p] = torch.tensor(a, dtype=_tdt(p.dtype))
    scratch = _Block(env, {}, None, poison)
    for i in [*func.out_idx, *func.workspaces]:  # T.alloc_global workspaces: allocated like outputs
        p = func.params[i]
        shape = [scratch.scalar_int(d) for d in p.shape]
        dt = _tdt(p.dtype)
        if dt.is_floating_point and poison:
            tensors[i] = torch.full(shape, float("nan"), dtype=dt)
        else:
            tensors[i] = torch.zeros(shape, dtype=dt)
    return env, tensors


def _execute(func: ir.PrimFunc, env: dict, tensors: dict, trace: _Trace | None, poison: bool) -> None:
    originals = {}
    globals_ = {}
    for i, p in enumerate(func.params):
        if isinstance(p, ir.Buffer):
            t = tensors[i]
            work = t.detach().cpu().contiguous()
            originals[i] = (t, work)
            globals_[p] = _Storage(work, (), True, i)
            if trace is not None:
                trace.writers[i] = torch.full(tuple(work.shape), -1, dtype=torch.int64)
    for kernel in func.kernels:
        scratch = _Block(dict(env), globals_, None, poison)
        grid = [scratch.scalar_int(g) for g in kernel.grid]
        for block in itertools.product(*[range(g) for g in grid]):
            benv = dict(env)
            for v, b in zip(kernel.block_vars, block):
                benv[v] = torch.tensor(b, dtype=torch.int32)
            blk = _Block(benv, globals_, trace, poison)
            if kernel.thread_vars:  # one lane per thread dimension, threadIdx.x last
                dims = list(reversed(range(len(kernel.thread_vars))))
                for d in dims:
                    blk.lanes.append(int(kernel.thread_extents[d]))
                    blk.lane_kinds.append("thread")
                for axis, d in enumerate(dims):
                    blk.env[kernel.thread_vars[d]] = blk.lane_grid(axis, len(dims)).to(torch.int32)
            blk.run(kernel.body)
    for t, work in originals.values():
        if work is not t:
            with torch.no_grad():
                t.copy_(work.to(t.device))


def run(kernel, *inputs, poison: bool = True):
    """Execute ``kernel`` (a JITKernel or ir.PrimFunc) on ``inputs`` with torch; return what it returns.

    Input tensors the kernel writes are updated in place (as the kernel would); outputs named by
    ``out_idx`` are allocated (NaN-filled when ``poison``, so unwritten elements show) and returned:
    one tensor, a list, or None.  Tensors are computed on the CPU and moved to the inputs' device.
    """
    func = _prim_func(kernel)
    env, tensors = _bind_args(func, inputs, poison)
    _execute(func, env, tensors, None, poison)
    return _outputs(func, tensors, inputs)


def _outputs(func, tensors, inputs):
    device = next((a.device for a in inputs if isinstance(a, torch.Tensor)), torch.device("cpu"))
    outs = [tensors[i].to(device) for i in func.out_idx]
    if not outs:
        return None
    return outs[0] if len(outs) == 1 else outs


def default_tolerance(dtype: torch.dtype) -> tuple[float, float]:
    """(atol, rtol) for comparing a result of this dtype with the reference."""
    if dtype in (torch.float16,):
        return 1e-2, 1e-2
    if dtype == torch.bfloat16:
        return 5e-2, 5e-2
    if dtype == torch.float32:
        return 1e-4, 1e-4
    if dtype == torch.float64:
        return 1e-8, 1e-8
    return 0.0, 0.0


@dataclass
class Comparison:
    """The outcome of ``compare``: ``ok`` is True when every output agrees."""

    ok: bool
    output: str | None = None  # the name of the first diverging output
    index: tuple | None = None  # its first diverging element
    triton_value: float | None = None
    reference_value: float | None = None
    mismatches: int = 0
    statement: ir.Stmt | None = None  # the statement that last wrote that element (reference run)
    message: str = ""

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        return self.message


def compare(kernel, *inputs, atol: float | None = None, rtol: float | None = None, raise_on_mismatch: bool = False):
    """Run ``kernel`` (tile2triton) and the reference on copies of ``inputs``; report the first divergence.

    Compares every output in ``out_idx`` and every input tensor the kernel may write.  Returns a
    :class:`Comparison` (truthy when everything agrees).  Elements that are NaN in both agree.
    """
    func = _prim_func(kernel)
    if not callable(kernel) or isinstance(kernel, ir.PrimFunc):
        raise TypeError("compare needs the compiled kernel (JITKernel), not a bare PrimFunc")
    clone = lambda xs: [x.clone() if isinstance(x, torch.Tensor) else x for x in xs]  # noqa: E731
    t_in, r_in = clone(inputs), clone(inputs)
    got = kernel(*t_in)
    env, tensors = _bind_args(func, r_in, True)
    trace = _Trace()
    _execute(func, env, tensors, trace, True)
    inputs_idx = [i for i in range(len(func.params)) if i not in func.out_idx]
    got_list = [] if got is None else [got] if isinstance(got, torch.Tensor) else list(got)
    pairs = []  # (param index, triton tensor, reference tensor)
    for i, g in zip(func.out_idx, got_list):
        pairs.append((i, g, tensors[i]))
    for pos, i in enumerate(inputs_idx):
        if isinstance(func.params[i], ir.Buffer):
            pairs.append((i, t_in[pos], tensors[i]))
    for i, g, r in pairs:
        g = g.detach().cpu()
        a_tol, r_tol = default_tolerance(r.dtype)
        a_tol = a_tol if atol is None else atol
        r_tol = r_tol if rtol is None else rtol
        if g.shape != r.shape:
            res = Comparison(
                False,
                func.params[i].name,
                message=f"output '{func.params[i].name}' has shape {tuple(g.shape)}, reference {tuple(r.shape)}",
            )
            break
        gd, rd = g.to(torch.float64), r.to(torch.float64)
        close = torch.isclose(gd, rd, atol=a_tol, rtol=r_tol, equal_nan=True)
        if bool(close.all()):
            continue
        bad = (~close).nonzero()
        first = tuple(int(x) for x in bad[0])
        writer = trace.writers[i][first].item() if i in trace.writers else -1
        stmt = trace.stmts[writer] if writer >= 0 else None
        where = (
            f"; the reference last wrote it in {type(stmt).__name__} at {stmt.loc}"
            if stmt is not None
            else "; the reference never wrote it"
        )
        msg = (
            f"output '{func.params[i].name}' diverges at {first}: tile2triton {gd[first].item()!r}, "
            f"reference {rd[first].item()!r} ({bad.shape[0]} of {close.numel()} elements differ, "
            f"atol={a_tol}, rtol={r_tol}){where}"
        )
        res = Comparison(False, func.params[i].name, first, gd[first].item(), rd[first].item(), bad.shape[0], stmt, msg)
        break
    else:
        res = Comparison(True, message="all outputs agree")
    if raise_on_mismatch and not res.ok:
        raise AssertionError(res.message)
    return res
