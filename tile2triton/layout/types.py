"""Layout hint objects (``tilelang.layout.Layout`` / ``Fragment``)."""

from __future__ import annotations

_QUERY = (
    "tile2triton keeps TileLang layouts only as T.annotate_layout hints (Triton chooses its own layouts); "
    "evaluating or transforming one needs TileLang's TVM index maps and is not supported"
)


class Layout:
    """A layout hint; its arguments are kept for display only."""

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs

    def _derived(self, how: str, *args, **kwargs) -> Layout:
        return type(self)(self, how, *args, **kwargs)

    # Layout algebra whose result is again a hint (TileLang code builds annotations this way).
    def repeat(self, *args, **kwargs) -> Layout:
        return self._derived("repeat", *args, **kwargs)

    def expand(self, *args, **kwargs) -> Layout:
        return self._derived("expand", *args, **kwargs)

    def reshape(self, *args, **kwargs) -> Layout:
        return self._derived("reshape", *args, **kwargs)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotImplementedError(f"{type(self).__name__}.{name}: {_QUERY}")

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(f"calling a {type(self).__name__}: {_QUERY}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(hint)"


class Fragment(Layout):
    """A register-fragment layout hint."""

    def replicate(self, *args, **kwargs) -> Fragment:
        return self._derived("replicate", *args, **kwargs)

    def condense_rep_var(self) -> Fragment:
        return self._derived("condense_rep_var")
