"""Binding rules of TVM's block scope inside a kernel: ``with T.sblock(name):`` with its
``T.reads(...)`` / ``T.writes(...)`` signature.

A block is a lexical scope for annotations: its statements run where they stand, in order, and
a ``T.annotate_safe_value`` in it holds for the global loads of the whole block (statements
before the annotation too) and of the blocks nested in it, an inner block's value overriding
an outer one's; leaving the block restores the enclosing values (TileLang's ``LowerTileOp``
keeps the safe-value map per block this way).  The scope reaches the lowering as a pair of
``ir.SafeValues`` markers around the block's statements (codegen/scopes.py).

``WITH_RULES`` (tag -> rule) holds the ``with`` statements bound here; ``bind.Binder.stmt_With``
dispatches to them.
"""

from __future__ import annotations

import ast

from .. import ir
from .rules_base import BinderLike, rule

WITH_RULES: dict = {}


def with_rule(*names: str):
    def register(fn):
        for name in names:
            WITH_RULES[name] = fn
        return fn

    return register


def safe_value_layers(b: BinderLike) -> list:
    """The safe-value maps in force at this point, outermost (the kernel's) first; the last is the
    one a ``T.annotate_safe_value`` here adds to."""
    return [b.kernel.safe_values, *getattr(b, "sblock_safe_values", [])]


@with_rule("sblock")
def bind_sblock(b: BinderLike, node: ast.With, call: ast.Call) -> None:
    """``with T.sblock("name"):`` (TVM's block): the body in place, with its own safe values."""
    if node.items[0].optional_vars is not None:
        raise b.error("'with T.sblock(...)' binds no name ('as ...' is not supported)", node)
    for arg in [*call.args, *(k.value for k in call.keywords)]:
        b.expr(arg)  # the name hint and no_realize: checked as values, no effect
    if b.kernel is None:  # a block around T.Kernel blocks: nothing of it reaches a kernel's loads
        for s in node.body:
            b.stmt(s)
        return
    outer = safe_value_layers(b)
    own: dict = {}
    b.emit(ir.SafeValues(b.loc(node), (*outer, own)))
    stack = getattr(b, "sblock_safe_values", [])
    b.sblock_safe_values = [*stack, own]
    try:
        for s in node.body:
            b.stmt(s)
    finally:
        b.sblock_safe_values = stack
    b.emit(ir.SafeValues(b.loc(node.body[-1]), tuple(outer)))


@with_rule("While")
def bind_while_frame(b: BinderLike, node: ast.With, call: ast.Call) -> None:
    """TIR's ``with T.While(cond):`` frame: the Python ``while cond:`` loop it is (the condition read
    again before each iteration)."""
    if node.items[0].optional_vars is not None or len(call.args) != 1 or call.keywords:
        raise b.error("'with T.While(condition):' takes one condition and binds no name", node)
    b.stmt(ast.copy_location(ast.While(test=call.args[0], body=node.body, orelse=[]), node))


@with_rule("If")
def bind_if_frame(b: BinderLike, node: ast.With, call: ast.Call) -> None:
    """TIR's ``with T.If(cond):`` frame around ``with T.Then():`` and an optional ``with T.Else():``: the
    ``if cond: ... else: ...`` statement it is."""
    if node.items[0].optional_vars is not None or len(call.args) != 1 or call.keywords:
        raise b.error("'with T.If(condition):' takes one condition and binds no name", node)
    branches: dict = {}
    for s in node.body:
        tag = _frame_tag(b, s)
        if tag not in ("Then", "Else") or tag in branches or (tag == "Else" and "Then" not in branches):
            raise b.error(
                "'with T.If(condition):' holds a 'with T.Then():' and then, optionally, a 'with T.Else():'", s
            )
        branches[tag] = s.body
    if "Then" not in branches:
        raise b.error("'with T.If(condition):' needs a 'with T.Then():'", node)
    b.stmt(ast.copy_location(ast.If(test=call.args[0], body=branches["Then"], orelse=branches.get("Else", [])), node))


def _frame_tag(b: BinderLike, s: ast.stmt) -> str | None:
    """The primitive a one-item ``with`` statement opens (``Then`` for ``with T.Then():``)."""
    if not isinstance(s, ast.With) or len(s.items) != 1 or not isinstance(s.items[0].context_expr, ast.Call):
        return None
    return getattr(b.expr(s.items[0].context_expr.func), "__t2t__", None)


@with_rule("Then", "Else")
def bind_misplaced_branch(b: BinderLike, node: ast.With, call: ast.Call) -> None:
    raise b.error("T.Then and T.Else stand directly inside 'with T.If(condition):'", node)


@rule("If", "Then", "Else")
def bind_misplaced_if(b: BinderLike, node, args, name):
    raise b.error(f"T.{name} opens a frame: write 'with T.{name}(...):'", node)


@rule("While")
def bind_misplaced_while(b: BinderLike, node, args):
    raise b.error("T.While opens a loop: write 'with T.While(condition):'", node)


@rule("sblock")
def bind_misplaced_sblock(b: BinderLike, node, args):
    raise b.error("T.sblock opens a block: write 'with T.sblock(...):'", node)


@rule("reads", "writes")
def bind_block_signature(b: BinderLike, node, args) -> None:
    """``T.reads(...)`` / ``T.writes(...)``: a block's declared accesses, which TVM's analyses use;
    the regions are evaluated (so a wrong name is still an error) and have no effect here."""
    if b.kernel is None:
        raise b.error("T.reads / T.writes belong in a 'with T.sblock(...)' inside a T.Kernel", node)


def python_with(b: BinderLike, node: ast.With) -> None:
    """``with ctx [as name]:`` around kernel statements, ``ctx`` a plain Python context manager
    (``contextlib.nullcontext()``, a tracing group): entered before its body is bound and exited
    after, as TileLang's builder runs the body inside it."""
    item = node.items[0]
    ctx = b.expr(item.context_expr)
    if getattr(ctx, "__t2t__", None) is not None or not (hasattr(ctx, "__enter__") and hasattr(ctx, "__exit__")):
        raise b.error(
            "a 'with' in a kernel takes a T frame (T.Kernel, T.sblock, T.ws, ...) or a Python context manager", node
        )
    entered = ctx.__enter__()
    try:
        if item.optional_vars is not None:
            b.assign_target(item.optional_vars, entered, node)
        for s in node.body:
            b.stmt(s)
    except BaseException as exc:
        if not ctx.__exit__(type(exc), exc, exc.__traceback__):
            raise
    else:
        ctx.__exit__(None, None, None)
