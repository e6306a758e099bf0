"""``tilelang.cuda.intrinsics.macro.wgmma_macro_generator``: TileLang's Hopper WGMMA instruction
emitters and descriptor computation.  Importable; using them raises: tile2triton lowers
``T.gemm`` / ``T.wgmma_gemm`` to ``tl.dot`` and builds no WGMMA descriptors."""

from __future__ import annotations

_REASON = (
    "explicit Hopper WGMMA emitters and shared-memory descriptors are below Triton's abstraction; "
    "write the tile product as T.gemm or T.wgmma_gemm (they lower to tl.dot)"
)


class TensorCoreIntrinEmitter:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}: {_REASON}")


class WGMMATensorCoreIntrinEmitter(TensorCoreIntrinEmitter):
    pass


def compute_gmma_descriptor(*args, **kwargs):
    raise NotImplementedError(f"compute_gmma_descriptor: {_REASON}")


__all__ = ["TensorCoreIntrinEmitter", "WGMMATensorCoreIntrinEmitter", "compute_gmma_descriptor"]
