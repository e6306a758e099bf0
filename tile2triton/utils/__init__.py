"""``tilelang.utils``: the helpers TileLang scripts import from it."""

from ..testing import torch_assert_close
from . import language, tensor

__all__ = ["language", "tensor", "torch_assert_close"]
