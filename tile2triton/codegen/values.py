"""The values the lowering passes around, and the lowerer's interface as its helpers see it.

Every codegen module depends on this one (and on ``ir``); none of the helpers (rules, scratch,
threads, descriptors, intrinsics, ptx) imports ``lower.py``.  They are handed the lowerer as an
argument, typed with the ``Lowerer`` protocol below.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Protocol

from .. import ir
from ..errors import TileLangCompileError
from ..language.dtypes import DType
from . import pyast as P


def next_pow2(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


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


def convert(node: ast.expr, dt: DType, axes) -> ast.expr:
    """``x.to(dt)``; ``tl.cast`` for scalars, which may be plain ints under the interpreter."""
    return P.to(node, dt) if axes else P.call("tl.cast", node, P.dtype(dt))


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
    env: dict
    regs: dict
    pointers: dict
    lanes: LaneSpace | None
    conds: list
    ranges: object  # analysis.Ranges
    origin: ir.Loc | None
    helpers: set
    following: list
    loop_axes: int

    def error(self, message: str, loc: ir.Loc | None = None) -> TileLangCompileError: ...
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
    def global_load(self, buf: ir.Buffer, idx: list, idx_ir: list) -> Tile: ...
    def global_store(self, buf: ir.Buffer, idx: list, idx_ir: list, value: Tile) -> None: ...
    def reg(self, buf: ir.Buffer) -> RegBuf: ...
