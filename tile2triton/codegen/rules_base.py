"""The lowering registry: ``LOWERINGS`` (TileIR statement type -> rule) and the ``@lowers``
decorator.  The rule modules (``rules.py``, ``tile_ops.py``, ``reductions.py``, ``atomics.py``)
register into it when ``lower.py`` imports them.
"""

from __future__ import annotations

LOWERINGS: dict = {}


def lowers(node_type):
    def register(fn):
        LOWERINGS[node_type] = fn
        return fn

    return register
