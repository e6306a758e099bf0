"""``tilelang.carver.template``: the roller's kernel templates.  Importing works; building one
raises, because tile2triton does not derive tile configurations from a device model (give the
autotuner an explicit list of configurations instead)."""

from __future__ import annotations

ROLLER_UNSUPPORTED = (
    "tile2triton does not provide TileLang's carver roller (configurations derived from a device model); "
    "give the autotuner an explicit list of configurations"
)


class BaseTemplate:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}: {ROLLER_UNSUPPORTED}")


class MatmulTemplate(BaseTemplate):
    pass


class GEMVTemplate(BaseTemplate):
    pass


class ElementwiseTemplate(BaseTemplate):
    pass


class GeneralReductionTemplate(BaseTemplate):
    pass


class FlashAttentionTemplate(BaseTemplate):
    pass


class ConvTemplate(BaseTemplate):
    pass


__all__ = ["BaseTemplate", "ConvTemplate", "ElementwiseTemplate", "FlashAttentionTemplate", "GEMVTemplate",
           "GeneralReductionTemplate", "MatmulTemplate"]  # fmt: skip
