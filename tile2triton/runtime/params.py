"""``kernel.params``: TileLang's ``KernelParam`` (``tilelang.engine.param``), one per parameter of
the prim_func, with its dtype and shape; scripts read them to make inputs
(``torch.randn(p.shape, dtype=p.torch_dtype())``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .. import ir
from ..language.dtypes import DType


@dataclass
class KernelParam:
    """A tensor parameter (``shape`` its dims: ints, or a ``T.dynamic`` size's variable) or a
    scalar one (``shape == []``).  ``dtype`` compares equal to its name (``p.dtype == "float16"``).
    ``name`` is tile2triton's addition: the parameter's name in the prim_func."""

    dtype: DType
    shape: list = field(default_factory=list)
    name: str = ""

    @classmethod
    def from_buffer(cls, buffer: ir.Buffer) -> KernelParam:
        return cls(buffer.dtype, list(buffer.shape), buffer.name)

    @classmethod
    def from_var(cls, var: ir.Var) -> KernelParam:
        return cls(var.dtype, [], var.name)

    @classmethod
    def of(cls, param) -> KernelParam:
        return cls.from_buffer(param) if isinstance(param, ir.Buffer) else cls.from_var(param)

    def is_scalar(self) -> bool:
        return len(self.shape) == 0

    def is_unsigned(self) -> bool:
        return str(self.dtype).startswith("uint")

    def is_float8(self) -> bool:
        return str(self.dtype).startswith("float8")

    def is_float4(self) -> bool:
        return str(self.dtype).startswith("float4")

    def is_boolean(self) -> bool:
        return str(self.dtype).startswith("bool")

    def torch_dtype(self) -> torch.dtype:
        return self.dtype.as_torch()

    def tilelang_dtype(self) -> DType:
        return self.dtype
