"""``tilelang.cuda.language``: the CUDA-specific helpers scripts import from it (``intrinsics``)."""

from . import intrinsics

__all__ = ["intrinsics"]
