"""``tilelang.cuda``: ``intrinsics`` and ``language``, so scripts that import TileLang's MMA helpers load.

Swizzle-layout constructors return layout hints (no effect: Triton picks shared-memory layouts);
``TensorCoreIntrinEmitter`` (per-warp MMA atoms) is provided as tile-level products
(``intrinsics/macro/mma_atoms.py``); the WGMMA/TCGEN05 instruction emitters raise when built."""

from . import intrinsics, language

__all__ = ["intrinsics", "language"]
