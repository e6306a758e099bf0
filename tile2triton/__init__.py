"""tile2triton: run TileLang kernels on Triton.  ``import tile2triton as tilelang``."""

# ruff: noqa: F405 - __all__ names what the star import of _api.py binds

from __future__ import annotations

import importlib as _importlib
import os as _os
import sys as _sys
from typing import TYPE_CHECKING

from ._version import __version__

_loading = False


def _load_all() -> None:
    """Import the package's API (tile2triton/_api.py): ``import tile2triton`` does this at once,
    except in the command's answers that need none of it (below)."""
    global _loading
    _loading = True  # ``from . import env`` asks this module for ``env`` first: not __getattr__'s business
    try:
        api = _importlib.import_module(f"{__name__}._api")
    finally:
        _loading = False
    globals().update({name: value for name, value in vars(api).items() if not name.startswith("_")})


def __getattr__(name: str):
    # a deferred import (the command's --help): the API loads on first use
    if name.startswith("__") or _loading:
        raise AttributeError(name)
    _load_all()
    try:
        return globals()[name]
    except KeyError:
        raise AttributeError(f"module 'tile2triton' has no attribute {name!r}") from None


# ``tile2triton --help`` / ``--version`` / ``fix-annotations`` answer without torch (seconds of
# imports): only in that process is the import deferred; every other import loads the API now.
_QUICK = {"-h", "--help", "--version", "fix-annotations"}


def _quick_command() -> bool:
    """Is this process the tile2triton command (or ``python -m tile2triton``) answering a _QUICK request?"""
    prog = _os.path.basename(_sys.argv[0]) if _sys.argv else ""
    if prog == "-m":  # ``python -m X`` while X is found: the module name is in orig_argv
        orig = list(getattr(_sys, "orig_argv", ()))
        if "-m" not in orig or orig[orig.index("-m") + 1 :][:1] != ["tile2triton"]:
            return False
        args = orig[orig.index("-m") + 2 :]
    elif prog == "tile2triton":
        args = _sys.argv[1:]
    else:
        return False
    return not args or bool(_QUICK & set(args[:2]))


_DEFERRED = _quick_command()
if TYPE_CHECKING or not _DEFERRED:  # the API now (type checkers read it here)
    from ._api import *  # noqa: F403 - every public name of _api.py

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
    "lower",
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
