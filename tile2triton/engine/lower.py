"""``tilelang.engine.lower``: ``lower`` (the function ``tilelang.lower`` is): bind, check and lower a
kernel for a target without launching it (tile2triton/compiler.py).  TileLang's other functions of
this module split and compile TVM IR modules, which tile2triton does not build."""

from ..compiler import lower

__all__ = ["lower"]
