"""``tilelang.intrinsics.utils`` (TileLang 0.1.x path of ``tile2triton/cuda/intrinsics/layout/utils.py``)."""

from ..cuda.intrinsics.layout.utils import *  # noqa: F403
from ..cuda.intrinsics.layout.utils import get_mma_micro_size  # noqa: F401
