"""``tilelang.language.tir``: TileLang's TIR-level operations.  Only ``tir.ir``'s ``cast`` and its
option checks are provided; the TIR builders themselves are TVM IR, which tile2triton does not build."""

from __future__ import annotations

from . import ir

__all__ = ["ir"]
