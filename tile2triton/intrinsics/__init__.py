"""``tilelang.intrinsics``: where TileLang 0.1.x keeps its MMA helpers (newer TileLang moved them to
``tilelang.cuda.intrinsics``, ``tile2triton/cuda/intrinsics``); the same objects under the old path."""

from ..cuda.intrinsics import (
    INT4TensorCoreIntrinEmitter,
    TensorCoreIntrinEmitter,
    TensorCoreIntrinEmitterWithLadderTransform,
    get_mma_micro_size,
    get_swizzle_layout,
    make_mma_swizzle_layout,
)
from . import mma_layout, mma_macro_generator, utils

__all__ = [
    "INT4TensorCoreIntrinEmitter",
    "TensorCoreIntrinEmitter",
    "TensorCoreIntrinEmitterWithLadderTransform",
    "get_mma_micro_size",
    "get_swizzle_layout",
    "make_mma_swizzle_layout",
    "mma_layout",
    "mma_macro_generator",
    "utils",
]
