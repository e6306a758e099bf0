"""``tilelang.tileop``: where TileLang's own scripts import the gemm warp policy from
(``from tilelang.tileop.base import GemmWarpPolicy``, its AMD examples); the same class as
``T.GemmWarpPolicy``."""

from .base import GemmWarpPolicy

__all__ = ["GemmWarpPolicy"]
