"""``tilelang.cuda.intrinsics.macro.mma_macro_generator``: TileLang's explicit tensor-core emitters.

``TensorCoreIntrinEmitter`` (ldmatrix / per-warp MMA atoms / stmatrix) is provided, its atoms written
as tile-level products (``mma_atoms.py``).  The ladder-transform and int4 variants are importable;
building one raises."""

from __future__ import annotations

from .mma_atoms import TensorCoreIntrinEmitter

_REASON = (
    "the ladder-transform and int4 tensor-core emitters are not provided by tile2triton; "
    "write the tile product as T.gemm (it lowers to tl.dot)"
)


class TensorCoreIntrinEmitterWithLadderTransform(TensorCoreIntrinEmitter):
    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}: {_REASON}")


class INT4TensorCoreIntrinEmitter(TensorCoreIntrinEmitterWithLadderTransform):
    pass


class INT4TensorCoreIntrinEmitterWithLadderTransform(TensorCoreIntrinEmitterWithLadderTransform):
    pass


__all__ = [
    "INT4TensorCoreIntrinEmitter",
    "INT4TensorCoreIntrinEmitterWithLadderTransform",
    "TensorCoreIntrinEmitter",
    "TensorCoreIntrinEmitterWithLadderTransform",
]
