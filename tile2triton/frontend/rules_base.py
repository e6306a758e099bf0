"""The binding-rule registry (``RULES``, the ``@rule`` decorator, ``BinderLike``) and the operand
helpers several rule modules share.

A rule is called as ``rule(binder, node, args)`` with the call's ``ast.Call`` node and its
arguments bound to the primitive's signature (``language/__init__.py``); it emits statements
through the binder and returns the call's value.  The binder is handed in: no rule module
imports ``bind.py`` (which imports them through ``rules.py``), and ``BinderLike`` names what a
rule may use.
"""

from __future__ import annotations

import ast
import functools
import inspect
from typing import Protocol

from .. import ir
from ..errors import TileLangCompileError
from ..language.dtypes import DType
from ..language.proxy import TensorType
from .regions import to_region, whole
from .vectors import element_start


class BinderLike(Protocol):
    """What a binding rule uses of the binder (``bind.Binder``; ``eager_bind.EagerBinder``)."""

    kernel: ir.Kernel | None  # the T.Kernel being bound, None outside one
    func_attrs: dict  # PrimFunc.attrs being collected
    eager: bool  # an eager-style kernel (T.const / T.empty are allowed)
    reducers: dict  # T.alloc_reducer buffer -> its op (sum, max, min)
    outer_tensors: list  # T.make_tensor buffers made before the T.Kernel blocks (made again in each)
    params: list  # the kernel's parameters (Buffer / Var), in order
    body_stack: list  # the statement lists being bound, innermost last (``emit`` appends to it)
    parallel_depth: int  # T.Parallel loops around the statement being bound
    fragment_shadows: dict  # rules_fragments.py: (local array, shape, layout) -> its block tile

    def loc(self, node: ast.AST) -> ir.Loc: ...
    def expr(self, node: ast.AST): ...
    def error(self, message: str, node: ast.AST, hint: str | None = None) -> TileLangCompileError: ...
    def emit(self, stmt: ir.Stmt) -> None: ...
    def fresh_name(self, name: str) -> str: ...
    def bind_name(self, name: str, value) -> None: ...
    def dtype_arg(self, value, node: ast.AST) -> DType: ...
    def binop(self, op: str, pyop, a, b, node: ast.AST): ...
    def select(self, cond, a, b) -> ir.Select: ...
    def global_buffer(self, name: str, ttype: TensorType, loc: ir.Loc) -> ir.Buffer: ...
    def declare_const(self, names, dtype, node: ast.AST): ...  # eager binders only
    def barrier_event(self, kind: str, ref, parity, node: ast.AST, name: str, count=None, pair=None) -> None: ...
    def check_reducer_update(self, buffer: ir.Buffer, node: ast.AST) -> None: ...
    def loop_exit(self, node_type, node: ast.AST) -> None: ...
    def inline_macro(self, macro, node: ast.AST, args=None, kwargs=None): ...


RULES: dict = {}


class DeclaredVar(ir.VarRef):
    """``v = T.int32()`` in a kernel: a scalar variable without a value yet, bound by ``T.let(v, value)``
    (TVM's unbound Var); it reads as the variable."""


def rule(*names):
    """Register ``fn(b, node, args)`` for primitives ``names``; a rule serving several names takes a
    fourth parameter, ``name``: the primitive called (not the call's spelling: ``op = T.cumsum; op(x)``)."""

    def register(fn):
        takes_name = "name" in inspect.signature(fn).parameters
        for n in names:
            RULES[n] = functools.partial(fn, name=n) if takes_name else fn
        return fn

    return register


def _operand(b: BinderLike, value, node, what: str):
    value = element_start(value) or value  # an element of a vector buffer: the region starting there
    if isinstance(value, (ir.Buffer, ir.Region, ir.Load)):
        return value
    raise b.error(f"{what} must be a buffer, a buffer region or a buffer element, got {value!r}", node)


def _fill_region(b: BinderLike, target, node) -> ir.Region:
    if isinstance(target, ir.Buffer):
        return whole(target)
    if isinstance(target, ir.Region):
        return target
    if isinstance(target, ir.Load):
        return to_region(target, [1] * target.buffer.ndim)
    raise b.error("T.fill / T.clear take a buffer or a region", node)


def _staged(b: BinderLike, region: ir.Region, node, read: bool = True, matrix: bool = False) -> tuple[ir.Region, list]:
    """A tile op's operand that is a sub-region of a shared/fragment buffer (``A_s[:, k0:k1]``,
    ``A_s[b, :, :]``): staged through a register tile of the region's shape, copied in (``read``)
    and, by the statements returned, copied back after the op writes it.  ``matrix``: a gemm's
    operand, whose leading unit extents (one stage of a ring, ``K_s[bi % 2, :, :]``) the tile drops:
    a 2-D tile, not a 3-D one the gemm reshapes (which Triton 3.6 compiles as a shared-memory copy)."""
    buf = region.buffer
    if region.is_whole() or buf.scope not in (ir.SHARED, ir.FRAGMENT):
        return region, []
    if not all(isinstance(e, int) for e in region.extents):
        raise b.error(f"a sub-region of '{buf.name}' used by a tile operation needs static extents", node)
    loc = b.loc(node)
    shape = tuple(region.extents)
    if matrix and len(shape) > 2 and all(e == 1 for e in shape[:-2]):
        shape = shape[-2:]
    part = ir.Buffer(b.fresh_name(f"{buf.name}_part"), ir.FRAGMENT, shape, buf.dtype, loc)
    b.emit(ir.Alloc(loc, part))
    if read:
        b.emit(ir.Copy(loc, region, whole(part)))
    return whole(part), [ir.Copy(loc, whole(part), region)]


def _product(shape) -> int:
    count = 1
    for d in shape:
        count *= d
    return count
