# Type stub of the ``T`` namespace's reductions and scans (re-exported by __init__.pyi, which holds
# the rest of the namespace; no module of this name exists at run time).

import builtins
from typing import Any

from . import _Region

def reduce(
    buffer: _Region,
    out: _Region,
    reduce_type: str,
    dim: builtins.int = -1,
    clear: builtins.bool = True,
    batch: builtins.int = 1,
    nan_propagate: builtins.bool = False,
    annotations: Any = None,
) -> None: ...
def reduce_sum(
    buffer: _Region,
    out: _Region,
    dim: builtins.int = -1,
    clear: builtins.bool = True,
    batch: builtins.int = 1,
    annotations: Any = None,
) -> None: ...
def reduce_max(
    buffer: _Region,
    out: _Region,
    dim: builtins.int = -1,
    clear: builtins.bool = True,
    batch: builtins.int = 1,
    nan_propagate: builtins.bool = False,
    annotations: Any = None,
) -> None: ...
def reduce_min(
    buffer: _Region,
    out: _Region,
    dim: builtins.int = -1,
    clear: builtins.bool = True,
    batch: builtins.int = 1,
    nan_propagate: builtins.bool = False,
    annotations: Any = None,
) -> None: ...
def reduce_bitand(
    buffer: _Region,
    out: _Region,
    dim: builtins.int = -1,
    clear: builtins.bool = True,
    batch: builtins.int = 1,
    annotations: Any = None,
) -> None: ...
def reduce_bitor(
    buffer: _Region,
    out: _Region,
    dim: builtins.int = -1,
    clear: builtins.bool = True,
    batch: builtins.int = 1,
    annotations: Any = None,
) -> None: ...
def reduce_bitxor(
    buffer: _Region,
    out: _Region,
    dim: builtins.int = -1,
    clear: builtins.bool = True,
    batch: builtins.int = 1,
    annotations: Any = None,
) -> None: ...
def reduce_absmax(
    buffer: _Region,
    out: _Region,
    dim: builtins.int = -1,
    clear: builtins.bool = True,
    batch: builtins.int = 1,
    nan_propagate: builtins.bool = False,
    annotations: Any = None,
) -> None: ...
def reduce_abssum(
    buffer: _Region, out: _Region, dim: builtins.int = -1, batch: builtins.int = 1, annotations: Any = None
) -> None: ...
def cumsum(
    src: _Region,
    dst: _Region | None = None,
    dim: builtins.int = 0,
    reverse: builtins.bool = False,
    annotations: Any = None,
) -> None: ...
def cummax(
    src: _Region,
    dst: _Region | None = None,
    dim: builtins.int = 0,
    reverse: builtins.bool = False,
    annotations: Any = None,
) -> None: ...
