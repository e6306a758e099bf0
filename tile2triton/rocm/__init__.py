"""``tilelang.rocm``: the ROCm target queries TileLang's tests import (``rocm.target``)."""

from . import target

__all__ = ["target"]
