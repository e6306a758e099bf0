"""``tilelang.layout``: layout annotations.  Triton chooses its own layouts, so these are
accepted and carry no meaning for the generated code (TileLang's results do not depend on them)."""

from __future__ import annotations


class Layout:
    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


class Fragment(Layout):
    pass


def make_swizzled_layout(buffer, *args, **kwargs) -> Layout:
    return Layout(buffer, *args, **kwargs)


def make_full_bank_swizzled_layout(buffer, *args, **kwargs) -> Layout:
    return Layout(buffer, *args, **kwargs)


def make_half_bank_swizzled_layout(buffer, *args, **kwargs) -> Layout:
    return Layout(buffer, *args, **kwargs)
