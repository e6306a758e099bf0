"""``tilelang.intrinsics.mma_layout`` (TileLang 0.1.x path of ``tile2triton/cuda/intrinsics/layout/mma_layout.py``)."""

from ..cuda.intrinsics.layout.mma_layout import *  # noqa: F403
from ..cuda.intrinsics.layout.mma_layout import __getattr__, get_swizzle_layout, make_mma_swizzle_layout  # noqa: F401
