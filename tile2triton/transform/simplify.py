"""``tilelang.transform.simplify``: the simplification entry points (see ``tilelang.transform``)."""

from __future__ import annotations

from . import apply_simplify, simplify_prim_func

__all__ = ["apply_simplify", "simplify_prim_func"]
