"""Lowering of ``ir.SafeValues``, the markers of a ``T.sblock`` scope (frontend/rules_scopes.py):
they change which value out-of-bounds global loads read from there on, and emit no code
(``values.safe_values`` reads them)."""

from __future__ import annotations

from .. import ir
from .rules_base import lowers
from .values import Lowerer


@lowers(ir.SafeValues)
def lower_safe_values(lw: Lowerer, s: ir.SafeValues) -> None:
    lw.scope.safe_values = s.values()
