"""``tilelang.language.eager``: TileLang's eager frontend (it rewrites a kernel's Python AST into calls
on an IR builder).  tile2triton binds kernels with its own frontend (tile2triton/frontend/), so only the
module names exist: ``ast.mutate`` and ``ast.BaseBuilder`` raise ``NotImplementedError`` saying so."""

from __future__ import annotations

from . import ast

__all__ = ["ast"]
