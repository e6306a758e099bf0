"""``tilelang.carver.roller``: names only (see ``tile2triton/carver/template.py``)."""

from . import rasterization

__all__ = ["rasterization"]
