"""``tilelang.tools``: importable so scripts that import it load; the tools themselves analyse
TileLang's TVM IR and layouts, which tile2triton does not build, so calling them raises."""

from __future__ import annotations


class Analyzer:
    """TileLang's static FLOP / memory-traffic estimator of a TIR function."""

    @classmethod
    def analysis(cls, fn, device):
        raise NotImplementedError(
            "tilelang.tools.Analyzer is not provided by tile2triton (it analyses TileLang's TVM IR); "
            "count FLOPs from the problem sizes instead"
        )


def plot_layout(layout, save_directory="./tmp", name="layout", colormap=None, verbose=False, formats="png"):
    raise NotImplementedError(
        "tilelang.tools.plot_layout is not provided by tile2triton: T.Layout / T.Fragment are accepted as "
        "hints only (Triton chooses register layouts itself), so there is no layout to draw"
    )


__all__ = ["Analyzer", "plot_layout"]
