"""Binding rules of TVM's logical operators (``tvm.tirx.Not`` / ``And`` / ``Or``, ``tvm/tir_expr.py``):
the same IR as Python's ``not``, ``and`` and ``or`` on kernel values."""

from __future__ import annotations

from .. import ir
from ..ir import BOOL
from ..ir.exprs import as_expr, is_python_value
from .rules_base import BinderLike, rule


@rule("Not")
def bind_not(b: BinderLike, node, args):
    value = args["a"]
    if is_python_value(value):
        return not value
    return ir.UnaryOp("not", as_expr(value), BOOL)


@rule("And", "Or")
def bind_and_or(b: BinderLike, node, args, name):
    a, c = args["a"], args["b"]
    if is_python_value(a) and is_python_value(c):
        return (a and c) if name == "And" else (a or c)
    return ir.BinOp(name.lower(), as_expr(a), as_expr(c), BOOL)
