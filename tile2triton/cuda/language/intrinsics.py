"""``tilelang.cuda.language.intrinsics``: TileLang's tensor-core instruction emitters under the names
this module gives them.  ``TensorCoreIntrinEmitter`` is provided (``cuda/intrinsics/macro/mma_atoms.py``);
the Hopper WGMMA and Blackwell TCGEN05 emitters are importable and raise when built."""

from __future__ import annotations

from ..intrinsics import get_mma_micro_size, get_swizzle_layout, make_mma_swizzle_layout
from ..intrinsics.macro.mma_macro_generator import TensorCoreIntrinEmitter, TensorCoreIntrinEmitterWithLadderTransform
from ..intrinsics.macro.wgmma_macro_generator import WGMMATensorCoreIntrinEmitter, compute_gmma_descriptor

_TCGEN05 = "Blackwell tcgen05 MMA emitters are below Triton's abstraction; write the tile product as T.gemm"


class TCGEN05TensorCoreIntrinEmitter:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"TCGEN05TensorCoreIntrinEmitter: {_TCGEN05}")


__all__ = [
    "TCGEN05TensorCoreIntrinEmitter",
    "TensorCoreIntrinEmitter",
    "TensorCoreIntrinEmitterWithLadderTransform",
    "WGMMATensorCoreIntrinEmitter",
    "compute_gmma_descriptor",
    "get_mma_micro_size",
    "get_swizzle_layout",
    "make_mma_swizzle_layout",
]
