"""tile2triton: run TileLang kernels on Triton.  ``import tile2triton as tilelang``."""

from __future__ import annotations

from . import env, language, tvm, utils
from . import math as math  # tilelang.math (kept out of __all__: a star import must not shadow math)
from .autotuner import autotune
from .compiler import compile, par_compile
from .config import PassConfigKey, disable_cache, enable_cache, is_cache_enabled, set_log_level
from .errors import KernelCallError, Tile2TritonError, TileLangCompileError
from .jit import JITImpl, jit
from .math import cdiv, next_power_of_2  # tilelang.cdiv / next_power_of_2: TileLang's root star-imports its math
from .profiler import TensorSupplyType
from .runtime.kernel import JITKernel
from .torch_ops import register_op
from .tvm import DataType
from .wiring import connect as _connect  # noqa: F401 - fills the hooks the stages declare

__version__ = "0.1.0"

__all__ = [
    "PassConfigKey",
    "autotune",
    "disable_cache",
    "enable_cache",
    "is_cache_enabled",
    "set_log_level",
    "JITImpl",
    "JITKernel",
    "KernelCallError",
    "TensorSupplyType",
    "Tile2TritonError",
    "TileLangCompileError",
    "compile",
    "par_compile",
    "jit",
    "env",
    "language",
    "tvm",
    "DataType",
    "utils",
    "register_op",
    "cdiv",
    "next_power_of_2",
    "__version__",
]
