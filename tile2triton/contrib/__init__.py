"""``tilelang.contrib``: the helpers of TileLang's ``contrib`` package that scripts call (``nvcc``)."""

from . import nvcc

__all__ = ["nvcc"]
