"""tile2triton: run TileLang kernels on Triton.  ``import tile2triton as tilelang``."""

from __future__ import annotations

from . import language
from .compiler import compile
from .errors import KernelCallError, Tile2TritonError, TileLangCompileError
from .jit import JITImpl, jit
from .runtime.kernel import JITKernel
from .torch_ops import register_op

__version__ = "0.1.0"

__all__ = [
    "JITImpl",
    "JITKernel",
    "KernelCallError",
    "Tile2TritonError",
    "TileLangCompileError",
    "compile",
    "jit",
    "language",
    "__version__",
]


def cdiv(a: int, b: int) -> int:
    return -(-a // b)
