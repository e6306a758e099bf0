"""``tilelang.utils.tensor``: input generation and comparison helpers of TileLang's test code."""

from __future__ import annotations

import torch

from ..language.dtypes import to_dtype
from ..profiler import TensorSupplyType, _default_device, supply_tensor
from ..testing import torch_assert_close

__all__ = ["TensorSupplyType", "get_tensor_supply", "is_float8_dtype", "map_torch_type", "torch_assert_close"]


def map_torch_type(dtype) -> torch.dtype:
    """A TileLang dtype (``"float16"``, ``T.float16``, a torch dtype) as a torch dtype."""
    if isinstance(dtype, torch.dtype):
        return dtype
    return to_dtype(dtype).as_torch()


def is_float8_dtype(dtype: torch.dtype) -> bool:
    return "float8" in str(dtype)


def get_tensor_supply(supply_type: TensorSupplyType = TensorSupplyType.Integer):
    """A function making one input tensor for a kernel parameter, filled as ``supply_type`` says.

    The parameter is any object with ``shape`` and ``dtype`` (or ``torch_dtype()``), such as the
    entries of ``kernel.params``."""

    def get_tensor(param) -> torch.Tensor:
        if hasattr(param, "torch_dtype"):
            dtype = param.torch_dtype()
        else:
            dtype = map_torch_type(param.dtype)
        shape = tuple(param.shape)
        if not shape or not all(isinstance(s, int) for s in shape):
            raise ValueError(f"get_tensor_supply needs a static shape, got {shape} (a dynamic size?)")
        name = "" if isinstance(param.dtype, torch.dtype) else str(param.dtype)  # fp4's name; its storage is bytes
        return supply_tensor(shape, dtype, supply_type, _default_device(), name)

    return get_tensor
