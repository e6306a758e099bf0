"""``tvm.tirx.expr`` (``tvm.tir.expr``): the expression classes of ``tirx`` and the logical
operators ``Not``, ``And``, ``Or``.

Inside a kernel ``Not(a)``, ``And(a, b)`` and ``Or(a, b)`` are ``not a``, ``a and b`` and ``a or b``
on boolean kernel values (``frontend/rules_tvm.py``); like the other ``tirx`` helpers they build no
TVM IR in host code.
"""

from __future__ import annotations

from .tirx import And, BufferLoad, Call, FloatImm, IntImm, Not, Or, PrimExpr, Var

__all__ = ["And", "BufferLoad", "Call", "FloatImm", "IntImm", "Not", "Or", "PrimExpr", "Var"]


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    from . import OUT_OF_SCOPE

    raise AttributeError(f"tilelang.tvm.tirx.expr.{name}: {OUT_OF_SCOPE}")
