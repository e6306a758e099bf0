"""``tilelang.cuda``: only ``intrinsics``, so scripts that import TileLang's MMA helpers load.

Swizzle-layout constructors return layout hints (no effect: Triton picks shared-memory layouts);
the explicit MMA/WGMMA instruction emitters are below Triton's abstraction and raise when built."""

from . import intrinsics

__all__ = ["intrinsics"]
