"""``tilelang.carver.roller.rasterization``: the block orders a roller hint can carry.  tile2triton
accepts them as values; a kernel's own ``T.use_swizzle`` decides its block order."""

from __future__ import annotations


class Rasterization:
    panel_width_ = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class NoRasterization(Rasterization):
    pass


class Rasterization2DRow(Rasterization):
    def __init__(self, panel_width=8):
        self.panel_width_ = panel_width


class Rasterization2DColumn(Rasterization):
    def __init__(self, panel_width=8):
        self.panel_width_ = panel_width


__all__ = ["NoRasterization", "Rasterization", "Rasterization2DColumn", "Rasterization2DRow"]
