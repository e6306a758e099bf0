"""The values the lowering passes around, and the lowerer's interface as its helpers see it.

Every codegen module depends on this one (and on ``ir``); none of the helpers (rules, scratch,
threads, descriptors, intrinsics, ptx) imports ``lower.py``.  They are handed the lowerer as an
argument, typed with the ``Lowerer`` protocol below.
"""

from __future__ import annotations

import ast
import copy
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, fields
from typing import Protocol

from .. import ir
from ..errors import TileLangCompileError
from ..language.dtypes import DType
from ..passes.analysis import Ranges, launch_warps, next_pow2  # noqa: F401 (next_pow2: codegen imports it from here)
from . import e8m0
from . import pyast as P


def lanes_fill_threads(lw) -> bool:
    """Does the lane space have at least as many elements as the launch has threads?  Triton's
    layouts then give each element of a lane tile one thread; a smaller tile is replicated over
    several, which inline PTX with a side effect per element (an atomic) would perform twice."""
    lanes = lw.scope.lanes
    return (
        lanes is not None and prod(lanes.padded) >= launch_warps(lw.options, lw.kernel.threads) * lw.options.warp_size
    )


def lanes_are_threads(lw) -> bool:
    """Is each lane of the thread view one hardware thread, in every statement alike?  So where the
    lanes are one axis exactly as long as the launch's threads: every blocked layout Triton gives
    such a tile has one element a thread (its coalescing keeps elements per thread at numel /
    threads) in the one order a 1-D tile has, lane i on thread i, as TileLang's thread i."""
    lanes = lw.scope.lanes
    if lanes is None or not isinstance(lanes.owner, ir.Kernel) or lanes.rank != 1:
        return False
    threads = launch_warps(lw.options, lw.kernel.threads) * lw.options.warp_size
    return lanes.extents[0] == lanes.padded[0] == threads


def prod(items) -> int:
    out = 1
    for i in items:
        out *= i
    return out


@dataclass(frozen=True)
class Tile:
    """A lowered value: Triton AST, TileLang dtype, and the lane axes it varies along."""

    node: ast.expr
    dtype: DType
    axes: frozenset = frozenset()


@dataclass
class LaneSpace:
    vars: list
    extents: list
    padded: list
    names: list
    owner: object = None  # the Parallel statement (or Kernel, in the thread view)

    @property
    def rank(self) -> int:
        return len(self.vars)


@dataclass
class RegBuf:
    """Where a register-resident buffer lives: a Triton variable of a padded shape."""

    buffer: ir.Buffer
    name: str
    shape: tuple  # Triton storage shape; () for one-element buffers
    lanes: LaneSpace | None = None  # set for per-iteration locals allocated inside T.Parallel
    view_of: RegBuf | None = None  # T.reshape of another buffer: same elements, another shape

    @property
    def local_shape(self) -> tuple:
        return self.shape[self.lanes.rank :] if self.lanes is not None else self.shape


@dataclass
class Scope:
    """What the statement being lowered sees: bound values, the lane space, the active masks and
    the facts known about them.  Lane spaces, loop axes and split loops change it and put it back
    whole (``snapshot`` / ``restore``); a single field is changed for a while with
    ``KernelLowerer.scoped``.  Scratch barrier state is not part of it: it follows the generated
    code's order (scratch.py), not the TileLang program's nesting."""

    env: dict = field(default_factory=dict)  # ir.Var -> Tile
    lanes: LaneSpace | None = None
    conds: list = field(default_factory=list)  # active `if` masks (Tile) inside a lane space
    range_conds: set = field(default_factory=set)  # ast.dump of the masks that pick a range of threads
    cond_facts: dict = field(default_factory=dict)  # ast.dump of an `if` mask -> ir.Compare terms true under it
    thread_spans: dict = field(default_factory=dict)  # ast.dump of such a mask -> [(lane axis, lo, hi)] it keeps
    let_depth: dict = field(default_factory=dict)  # let Var -> number of `if` masks where it was bound
    ranges: Ranges = field(default_factory=Ranges)  # proven value ranges of the variables bound here
    known: dict = field(default_factory=dict)  # ir.Compare node -> its value for every lane here (passes/split.py)
    loop_axes: int = 0  # sequential loops evaluated as leading lane axes (rules._LoopAxis) around it
    loop_depth: int = 0  # sequential loops (emitted as loops) around the statement being lowered
    loop_trips: int | None = 1  # iterations of those loops together (at most), where known when compiling
    loop_tma: bool = False  # TMA loads pay off in the innermost of them (rules._tma_pays; TMA_PIPELINED_ONLY)
    inline_only: bool = False  # an expression re-evaluated in place (a while condition): name nothing
    exits: object = None  # the innermost loop's break/continue flags (exits.LoopExits), if it has any
    safe_values: dict | None = None  # a T.sblock's safe values (codegen/scopes.py); None: the kernel's
    load_guard: ast.expr | None = None  # a block-uniform condition every global load is masked by (speculate.py)
    deferrals: object = None  # the innermost emitted loop's deferred accumulations (deferred.LoopDeferrals)

    def decided(self, cmp: ir.Compare) -> bool | None:
        """The value of a comparison for every lane here, where a split loop or the value ranges decide it."""
        known = self.known.get(cmp)
        return known if known is not None else self.ranges.compare(cmp.op, cmp.lhs, cmp.rhs)

    def snapshot(self) -> Scope:
        """A copy to ``restore`` later (containers copied; the values in them are immutable)."""
        return Scope(**{f.name: _copied(getattr(self, f.name)) for f in fields(self)})

    def restore(self, snapshot: Scope) -> None:
        """Back to ``snapshot``, in place (the snapshot stays usable for another restore)."""
        for f in fields(self):
            setattr(self, f.name, _copied(getattr(snapshot, f.name)))


def safe_values(lw: Lowerer) -> dict:
    """Global Buffer -> the value its out-of-bounds loads read here (T.annotate_safe_value)."""
    return lw.kernel.safe_values if lw.scope.safe_values is None else lw.scope.safe_values


def _copied(value):
    if isinstance(value, Ranges):
        return value.copy()
    return copy.copy(value) if isinstance(value, (dict, list, set)) else value


class Lowered(ir.Expr):
    """An already-lowered value placed back into a TileIR expression (a tile op lowered through
    the element rules: the copied value, a loop's sum)."""

    def __init__(self, tile: Tile):
        self.tile = tile
        self.dtype = tile.dtype


# How a buffer access indexes each dim of a register buffer inside a lane space
# (``KernelLowerer.classify`` / ``one_irregular_dim``).
@dataclass(frozen=True)
class LaneDim:
    """Indexed by the lane variable of lane axis ``axis``, which spans the dim."""

    axis: int


@dataclass(frozen=True)
class AtDim:
    """Indexed by ``index``, the same for every lane; ``size`` is the dim's storage extent."""

    index: Tile
    size: int


@dataclass(frozen=True)
class LaneField:
    """Indexed by a digit field of the lane variable of axis ``axis``: ``(k // low) % size``
    (``k // 2``, ``k % 4``, ``k >> 2 & 3``), for a lane of a power-of-two extent, unpadded."""

    axis: int
    low: int
    size: int


@dataclass(frozen=True)
class IrregularDim:
    """Indexed by ``index``, which varies with the lanes but is not a lane variable (a gather/scatter)."""

    index: Tile


DimIndex = LaneDim | AtDim | IrregularDim


def convert(node: ast.expr, dt: DType, axes) -> ast.expr:
    """``x.to(dt)``; ``tl.cast`` for scalars, which may be plain ints under the interpreter."""
    return P.to(node, dt) if axes else P.call("tl.cast", node, P.dtype(dt))


def is_fp8(dt: DType) -> bool:
    return dt.is_float and dt.bits == 8


def load_other(dt: DType, value=0) -> ast.expr:
    """The ``other=`` of a masked ``tl.load`` of ``dt`` elements: ``value`` (0, or the tensor's
    ``T.annotate_safe_value``) as a literal Triton can cast to ``dt`` (it casts an int literal as
    int32, and casts no integer to or from an fp8 type)."""
    if e8m0.is_e8m0(dt):  # its bytes are loaded: the byte of the value
        return P.const(e8m0.code(value))
    return P.const(float(value) if is_fp8(dt) else value)


def literal_value(node):
    """The Python value of a constant node (``-c`` included), else None."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return -node.operand.value
    return None


def is_bool_literal(t: Tile) -> bool:
    return isinstance(t.node, ast.Constant) and type(t.node.value) is bool


def is_literal(t: Tile) -> bool:
    """A Python literal in the generated code (it adopts the type of the operand it meets)."""
    n = t.node
    if isinstance(n, ast.Constant):
        return True
    if isinstance(n, ast.UnaryOp) and isinstance(n.operand, (ast.Constant, ast.Call)):
        return is_literal(Tile(n.operand, t.dtype))
    return isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "float"


def ir_expr(v) -> ir.Expr:
    """A shape or stride (an int or an IR expression) as an IR expression."""
    if isinstance(v, ir.Expr):
        return v
    return ir.Const(v, ir.INT32, weak=True)


class Lowerer(Protocol):
    """What the statement rules and the helper modules use of ``lower.KernelLowerer``."""

    kernel: ir.Kernel
    options: object  # lower.LoweringOptions
    names: object  # lower.Names
    scope: Scope
    regs: dict
    pointers: dict
    origin: ir.Loc | None
    helpers: set
    following: list
    let_count: dict
    once_lets: dict
    statement_serial: int
    scratch: object  # scratch.ScratchState
    descriptors: object  # descriptors.DescriptorState
    uniform_vars: frozenset
    private_fragments: frozenset
    block_tests: dict
    forwards: dict

    def error(self, message: str, loc: ir.Loc | None = None) -> TileLangCompileError: ...
    def scoped(self, **changes) -> AbstractContextManager: ...
    def emit(self, stmt: ast.stmt) -> None: ...
    def assign(self, hint: str, value: ast.expr) -> str: ...
    def assign_to(self, target: str, value: ast.expr) -> None: ...
    def block(self, stmts, fn=None) -> list: ...
    def lower_stmts(self, stmts) -> None: ...
    def storage_dtype(self, dt: DType) -> DType: ...
    def cast(self, t: Tile, dt: DType) -> Tile: ...
    def ev(self, e) -> Tile: ...
    def scalar(self, e, what: str) -> Tile: ...
    def lane_mask(self, axes, within: bool = False) -> ast.expr | None: ...
    def cond_axes(self) -> frozenset: ...
    def full_rank_mask(self, mask: ast.expr | None) -> ast.expr | None: ...
    def broadcast(self, t: Tile, shape) -> ast.expr: ...
    def named(self, node: ast.expr | None, hint: str) -> ast.expr | None: ...
    def pointer(self, buf: ir.Buffer) -> str: ...
    def scalar_mask(self, node: ast.expr, block: bool = False) -> ast.expr: ...
    def global_address(self, buf: ir.Buffer, idx: list, idx_ir: list, extra_axes=frozenset(), load=False): ...
    def named_offsets(self, buf: ir.Buffer, offs: ast.expr) -> ast.expr: ...
    def global_load(self, buf: ir.Buffer, idx: list, idx_ir: list) -> Tile: ...
    def global_store(self, buf: ir.Buffer, idx: list, idx_ir: list, value: Tile) -> None: ...
    def reg(self, buf: ir.Buffer) -> RegBuf: ...
    def reg_write(self, buf: ir.Buffer, indices, value: Tile) -> None: ...
