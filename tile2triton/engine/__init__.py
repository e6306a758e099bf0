"""``tilelang.engine``: the compiler-hook registry scripts import (``engine.callback``) and ``lower``
(``engine.lower``, the function ``tilelang.lower`` is)."""

from . import callback
from .lower import lower

__all__ = ["callback", "lower"]
