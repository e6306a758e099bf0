"""``tilelang.transform``: ``PassConfigKey`` and the IR-simplification entry points scripts wrap
kernel factories with.  tile2triton folds and simplifies while it lowers; of TileLang's Simplify
these keep what a caller sees, the signature without unused tensor parameters.  TileLang's IR
passes themselves are not provided."""

from __future__ import annotations

import dataclasses
import functools

from ..config import PassConfigKey


def simplify_prim_func(func):
    """Decorator of a factory returning a ``@T.prim_func``: ``apply_simplify`` of what it returns."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return apply_simplify(func(*args, **kwargs))

    return wrapper


def apply_simplify(func, inline_let: bool = False):
    """TileLang's ``Simplify(simplify_arguments=True)`` of a ``@T.prim_func``: the expressions are
    simplified while lowering anyway; what changes for the caller is the signature, as in TileLang:
    tensor parameters the kernel never uses are dropped (``tile2triton/compiler.py``,
    ``drop_unused_buffers``).  Anything else is returned unchanged."""
    from ..frontend.source import KernelSource

    if not isinstance(func, KernelSource):
        return func
    simplified = dataclasses.replace(func)
    simplified.simplify_arguments = True
    return simplified


__all__ = ["PassConfigKey", "apply_simplify", "simplify_prim_func"]
