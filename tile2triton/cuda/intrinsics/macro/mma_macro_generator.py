"""``tilelang.cuda.intrinsics.macro.mma_macro_generator``: TileLang's explicit tensor-core
instruction emitters (ldmatrix / mma.sync per warp).  Importable; building one raises: tile2triton
lowers whole-tile ``T.gemm`` to ``tl.dot`` and has no warp-level MMA instructions."""

from __future__ import annotations

_REASON = (
    "explicit tensor-core instruction emitters (ldmatrix / mma per warp) are below Triton's abstraction; "
    "write the tile product as T.gemm (it lowers to tl.dot)"
)


class TensorCoreIntrinEmitter:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}: {_REASON}")


class TensorCoreIntrinEmitterWithLadderTransform(TensorCoreIntrinEmitter):
    pass


class INT4TensorCoreIntrinEmitter(TensorCoreIntrinEmitter):
    pass


class INT4TensorCoreIntrinEmitterWithLadderTransform(TensorCoreIntrinEmitter):
    pass


__all__ = [
    "INT4TensorCoreIntrinEmitter",
    "INT4TensorCoreIntrinEmitterWithLadderTransform",
    "TensorCoreIntrinEmitter",
    "TensorCoreIntrinEmitterWithLadderTransform",
]
