"""``tilelang.language.eager.ast``: TileLang's AST rewriter and IR-builder base class.  Not provided:
tile2triton reads kernel source with its own binder (tile2triton/frontend/bind.py), so there is no
generated builder code to inspect or run."""

from __future__ import annotations

_REASON = (
    "TileLang's eager AST rewriter (mutate / BaseBuilder) is TileLang's frontend internals; tile2triton "
    "binds @T.prim_func and @tilelang.jit kernels with its own frontend and does not provide it"
)


def mutate(func, *args, **kwargs):
    raise NotImplementedError(f"tilelang.language.eager.ast.mutate: {_REASON}")


class BaseBuilder:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"tilelang.language.eager.ast.BaseBuilder: {_REASON}")


__all__ = ["BaseBuilder", "mutate"]
