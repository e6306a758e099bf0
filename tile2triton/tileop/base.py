"""``tilelang.tileop.base``: ``GemmWarpPolicy`` (``T.GemmWarpPolicy``)."""

from ..language._tile_ops import GemmWarpPolicy

__all__ = ["GemmWarpPolicy"]
