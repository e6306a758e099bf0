"""The package's public API (torch, Triton and the whole pipeline behind it), in one list:
``tile2triton/__init__.py`` re-exports it at import, or on first use in the command's quick answers."""

# every name as itself: re-exported by tile2triton/__init__.py (a star import of this module)
from . import env as env
from . import language as language
from . import math as math
from . import tvm as tvm
from . import utils as utils
from .autotuner import autotune as autotune
from .compiler import compile as compile
from .compiler import lower as lower
from .compiler import par_compile as par_compile
from .config import PassConfigKey as PassConfigKey
from .config import disable_cache as disable_cache
from .config import enable_cache as enable_cache
from .config import is_cache_enabled as is_cache_enabled
from .config import set_log_level as set_log_level
from .errors import KernelCallError as KernelCallError
from .errors import Tile2TritonError as Tile2TritonError
from .errors import TileLangCompileError as TileLangCompileError
from .jit import JITImpl as JITImpl
from .jit import jit as jit
from .math import cdiv as cdiv
from .math import next_power_of_2 as next_power_of_2
from .profiler import TensorSupplyType as TensorSupplyType
from .runtime.kernel import JITKernel as JITKernel
from .torch_ops import register_op as register_op
from .tvm import DataType as DataType
from .wiring import connect as _connect  # noqa: F401 - fills the hooks the stages declare
