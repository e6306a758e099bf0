"""``tilelang.cuda.intrinsics.macro.wgmma_macro_generator``: TileLang's Hopper WGMMA emitter.

``WGMMATensorCoreIntrinEmitter`` (``TensorCoreIntrinEmitter`` here, as in TileLang's module) is
provided, its atoms written as ``T.gemm`` on sub-tiles (``wgmma_atoms.py``).  ``compute_gmma_descriptor``
computes hardware descriptor bits from TVM layouts and raises."""

from __future__ import annotations

from .wgmma_atoms import WGMMADescriptorParams, WGMMATensorCoreIntrinEmitter, select_wgmma_inst_n

TensorCoreIntrinEmitter = WGMMATensorCoreIntrinEmitter

_REASON = (
    "WGMMA descriptor bits (byte offsets, swizzle modes) come from TVM layouts, which tile2triton does not "
    "have; its WGMMA emitter needs only the shared buffers (wgmma_atoms.py)"
)


def compute_gmma_descriptor(*args, **kwargs):
    raise NotImplementedError(f"compute_gmma_descriptor: {_REASON}")


__all__ = [
    "TensorCoreIntrinEmitter",
    "WGMMADescriptorParams",
    "WGMMATensorCoreIntrinEmitter",
    "compute_gmma_descriptor",
    "select_wgmma_inst_n",
]
