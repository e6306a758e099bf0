"""Annotation proxies for kernel parameters: ``T.Tensor``, ``T.Buffer``, ``T.StridedTensor``."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from .dtypes import DType, global_dtype


@dataclass(frozen=True)
class TensorType:
    """A global tensor parameter: shape (ints, or names bound later) and dtype."""

    shape: tuple
    dtype: DType
    strides: tuple | None = None

    def __repr__(self) -> str:
        return f"T.Tensor({self.shape}, {self.dtype.name})"


def _shape_tuple(shape) -> tuple:
    if isinstance(shape, (list, tuple)):
        return tuple(shape)
    return (shape,)


class _TensorProxy:
    """``T.Tensor(shape, dtype)`` and ``T.Tensor[shape, dtype]``."""

    def __call__(self, shape, dtype="float32", data=None, scope=None) -> TensorType:
        return TensorType(_shape_tuple(shape), global_dtype(dtype))

    def __getitem__(self, key) -> TensorType:
        shape, dtype = key if isinstance(key, tuple) and len(key) == 2 else (key, "float32")
        return self(shape, dtype)


class _BufferProxy(_TensorProxy):
    """``T.Buffer``: TileLang's deprecated alias of ``T.Tensor``."""

    def __call__(self, shape, dtype="float32", data=None, strides=None, *args, **kwargs) -> TensorType:
        warnings.warn("T.Buffer is deprecated in TileLang; use T.Tensor", DeprecationWarning, stacklevel=2)
        return super().__call__(shape, dtype)


class _StridedTensorProxy:
    def __call__(self, shape, strides, dtype="float32", scope=None) -> TensorType:
        return TensorType(_shape_tuple(shape), global_dtype(dtype), _shape_tuple(strides))

    def __getitem__(self, key) -> TensorType:
        return self(*key)


Tensor = _TensorProxy()
Buffer = _BufferProxy()
StridedTensor = _StridedTensorProxy()


# Annotation proxies TileLang uses for @T.macro parameters; a macro's arguments are bound by
# position, so the annotations only document the expected scope.
SharedBuffer = SharedTensor = Tensor
FragmentBuffer = FragmentTensor = Tensor
LocalBuffer = LocalTensor = Tensor
