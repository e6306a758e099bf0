"""``tilelang.engine``: the compiler-hook registry scripts import (``engine.callback``)."""

from . import callback

__all__ = ["callback"]
