"""``tilelang.transform``: ``PassConfigKey`` and the IR-simplification entry points scripts wrap
kernel factories with.  tile2triton folds and simplifies while it lowers, so these return the
kernel unchanged; TileLang's IR passes themselves are not provided."""

from __future__ import annotations

import functools

from ..config import PassConfigKey


def simplify_prim_func(func):
    """Decorator of a factory returning a ``@T.prim_func``: the factory, unchanged."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper


def apply_simplify(func, inline_let: bool = False):
    return func


__all__ = ["PassConfigKey", "apply_simplify", "simplify_prim_func"]
