"""``tilelang.engine.param``: ``KernelParam``, the items of ``kernel.params``."""

from ..runtime.params import KernelParam

__all__ = ["KernelParam"]
