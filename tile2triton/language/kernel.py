"""``tilelang.language.kernel``: ``T.Kernel`` and the normalization of its thread extents (TileLang's
``_normalize_threads``)."""

from __future__ import annotations

from . import Kernel

DEFAULT_THREADS = 128


def _normalize_threads(threads) -> list:
    """``threads`` of ``T.Kernel`` as ``[x, y, z]``, missing dims 1 (``None`` is 128 threads).
    Raises ``ValueError`` for another type or a non-positive extent (an empty block writes nothing)."""
    if threads is None:
        threads = DEFAULT_THREADS
    if isinstance(threads, int):
        normalized = [threads, 1, 1]
    elif isinstance(threads, (list, tuple)):
        normalized = list(threads) + [1] * (3 - len(threads))
    else:
        raise ValueError("threads must be an integer or a list of integers")
    if any(isinstance(extent, int) and extent <= 0 for extent in normalized):
        raise ValueError(f"threads must be positive, got {threads}")
    return normalized


__all__ = ["Kernel"]
