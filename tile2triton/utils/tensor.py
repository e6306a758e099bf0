"""``tilelang.utils.tensor``."""

from ..profiler import TensorSupplyType
from ..testing import torch_assert_close

__all__ = ["TensorSupplyType", "torch_assert_close"]
