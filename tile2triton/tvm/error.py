"""``tvm.error``: TVM's exception classes (tile2triton raises its own errors; these let
``except tvm.error.X`` / ``pytest.raises(tvm.TVMError)`` in scripts resolve)."""

from __future__ import annotations

from ..errors import InternalError as InternalError  # tile2triton's LoweringCheckError is one
from ..errors import TVMError as TVMError


class RPCError(TVMError):
    pass


class RPCSessionTimeoutError(RPCError, TimeoutError):
    pass


class OpError(TVMError):
    pass


class OpNotImplemented(OpError, NotImplementedError):
    pass


class OpAttributeRequired(OpError, AttributeError):
    pass


class OpAttributeInvalid(OpError, AttributeError):
    pass


class OpAttributeUnImplemented(OpError, NotImplementedError):
    pass


class DiagnosticError(TVMError):
    pass


__all__ = [
    "TVMError",
    "InternalError",
    "RPCError",
    "RPCSessionTimeoutError",
    "OpError",
    "OpNotImplemented",
    "OpAttributeRequired",
    "OpAttributeInvalid",
    "OpAttributeUnImplemented",
    "DiagnosticError",
]
