"""``tilelang.utils``: the helpers TileLang scripts import from it."""

from ..testing import torch_assert_close
from . import tensor

__all__ = ["tensor", "torch_assert_close"]
