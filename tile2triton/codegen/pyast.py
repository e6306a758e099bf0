"""Small builders for the Python AST of generated Triton code."""

from __future__ import annotations

import ast

_BINOPS = {
    "+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.Div, "//": ast.FloorDiv, "%": ast.Mod,
    "&": ast.BitAnd, "|": ast.BitOr, "^": ast.BitXor, "<<": ast.LShift, ">>": ast.RShift, "**": ast.Pow,
}  # fmt: skip
_CMPS = {"<": ast.Lt, "<=": ast.LtE, ">": ast.Gt, ">=": ast.GtE, "==": ast.Eq, "!=": ast.NotEq}


def name(n: str) -> ast.Name:
    return ast.Name(n, ast.Load())


def store_name(n: str) -> ast.Name:
    return ast.Name(n, ast.Store())


def const(v) -> ast.expr:
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        text = "nan" if v != v else "inf"
        call = ast.Call(name("float"), [ast.Constant(text)], [])
        return ast.UnaryOp(ast.USub(), call) if v == float("-inf") else call
    if isinstance(v, (int, float)) and v < 0:
        return ast.UnaryOp(ast.USub(), ast.Constant(-v))
    return ast.Constant(v)


def negate(node: ast.expr, dtype) -> ast.expr:
    """``-x``; a float as ``x * -1.0``: Triton 3.6 lowers unary minus to ``0 - x``, which is +0 where
    IEEE's ``-(+0)`` is -0 (3.9 emits an fneg; LLVM folds the product to one)."""
    if dtype.kind == "float" and dtype.bits >= 16 and not isinstance(node, ast.Constant):
        return binop("*", node, const(-1.0))
    return ast.UnaryOp(ast.USub(), node)


def attr(base: ast.expr | str, *names: str) -> ast.expr:
    node = name(base) if isinstance(base, str) else base
    for n in names:
        node = ast.Attribute(node, n, ast.Load())
    return node


def tl(fn: str) -> ast.expr:
    return attr("tl", fn)


def call(fn: ast.expr | str, *args, **kwargs) -> ast.Call:
    if isinstance(fn, str):
        fn = tl(fn[3:]) if fn.startswith("tl.") else name(fn)
    return ast.Call(fn, [a if isinstance(a, ast.AST) else const(a) for a in args],
                    [ast.keyword(k, v if isinstance(v, ast.AST) else const(v)) for k, v in kwargs.items()])  # fmt: skip


def binop(op: str, a: ast.expr, b: ast.expr) -> ast.expr:
    if op in _CMPS:
        return ast.Compare(a, [_CMPS[op]()], [b])
    return ast.BinOp(a, _BINOPS[op](), b)


def dtype(dt) -> ast.expr:
    return tl(dt.triton)


def to(value: ast.expr, dt) -> ast.expr:
    return call(attr(value, "to"), dtype(dt))


def is_tl_call(node: ast.expr, fn: str) -> bool:
    """``node`` is a call of ``tl.<fn>``."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == fn
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "tl"
    )


def tuple_(items) -> ast.Tuple:
    return ast.Tuple([i if isinstance(i, ast.AST) else const(i) for i in items], ast.Load())


def permute(value: ast.expr, order: list) -> ast.expr:
    """``value`` with its dims in ``order``; unchanged for the identity (``tl.trans`` for 2-D)."""
    if list(order) == list(range(len(order))):
        return value
    return call("tl.permute", value, tuple_(order)) if len(order) > 2 else call("tl.trans", value)


def list_(items) -> ast.List:
    return ast.List([i if isinstance(i, ast.AST) else const(i) for i in items], ast.Load())


def expand(value: ast.expr, axis: int, rank: int) -> ast.expr:
    """``value[:, None]``-style placement of a 1-D tile on ``axis`` of a rank-``rank`` space."""
    if rank <= 1:
        return value
    idx = [ast.Slice() if k == axis else ast.Constant(None) for k in range(rank)]
    return ast.Subscript(value, ast.Tuple(idx, ast.Load()), ast.Load())


def subscript_none(value: ast.expr, pattern: list[bool]) -> ast.expr:
    """``value[:, None, :]``: True keeps an axis, False inserts a unit axis."""
    if all(pattern):
        return value
    idx = [ast.Slice() if keep else ast.Constant(None) for keep in pattern]
    return ast.Subscript(value, ast.Tuple(idx, ast.Load()) if len(idx) > 1 else idx[0], ast.Load())


def assign(target: str, value: ast.expr) -> ast.Assign:
    return ast.Assign([store_name(target)], value, lineno=0)


def expr_stmt(value: ast.expr) -> ast.Expr:
    return ast.Expr(value)


def and_all(parts: list) -> ast.expr | None:
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    out = parts[0]
    for p in parts[1:]:
        out = binop("&", out, p)
    return out
