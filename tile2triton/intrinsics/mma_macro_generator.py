"""``tilelang.intrinsics.mma_macro_generator`` (TileLang 0.1.x path of
``tile2triton/cuda/intrinsics/macro/mma_macro_generator.py``)."""

from ..cuda.intrinsics.macro.mma_macro_generator import *  # noqa: F403
from ..cuda.intrinsics.macro.mma_macro_generator import __all__  # noqa: F401
