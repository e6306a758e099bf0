"""``tilelang.cuda.intrinsics`` (see ``tile2triton/cuda/__init__.py``)."""

from . import layout, macro
from .layout.mma_layout import get_swizzle_layout, make_mma_swizzle_layout
from .layout.utils import get_mma_micro_size
from .macro.mma_macro_generator import (
    INT4TensorCoreIntrinEmitter,
    TensorCoreIntrinEmitter,
    TensorCoreIntrinEmitterWithLadderTransform,
)

__all__ = [
    "INT4TensorCoreIntrinEmitter",
    "TensorCoreIntrinEmitter",
    "TensorCoreIntrinEmitterWithLadderTransform",
    "get_mma_micro_size",
    "get_swizzle_layout",
    "layout",
    "macro",
    "make_mma_swizzle_layout",
]
