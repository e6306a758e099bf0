"""What ``@T.prim_func`` and ``@T.macro`` make of a function is the frontend's business: it reads
the function's source and scope (``frontend/source.py``).  The frontend registers its readers
here when it is imported (``tile2triton/__init__.py`` imports it), so ``language/`` imports
nothing of the pipeline."""

from __future__ import annotations

from collections.abc import Callable

_READERS: dict[str, Callable] = {}


def register_reader(kind: str, reader: Callable) -> None:
    """``kind`` is "prim_func" or "macro"; ``reader(func)`` returns what the decorator returns."""
    _READERS[kind] = reader


def read(kind: str, func):
    reader = _READERS.get(kind)
    if reader is None:  # a deferred ``import tile2triton`` (the command's --help): load it now
        import importlib

        importlib.import_module("tile2triton")._load_all()
        reader = _READERS[kind]
    return reader(func)
