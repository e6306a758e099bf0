"""``tilelang.tvm``: the light subset of TVM's Python API that TileLang scripts use around kernels.

Reachable only as ``tilelang.tvm`` / ``from tilelang import tvm`` (or ``tile2triton.tvm``); a real
``tvm`` package the user has installed is never shadowed.  Provided: ``DataType``,
``target.Target``, ``transform.PassContext``, ``error.*`` (and ``TVMError``), ``tirx`` / ``tir``
with ``const``, ``reinterpret``, ``Cast``, ``Select`` and the expression classes scripts name in
annotations.  Whatever builds or transforms TVM IR (``IRModule``, passes, ``arith``, ``script``,
``ir.assert_structural_equal``...) is out of scope: accessing it raises an ``AttributeError`` that
says so.
"""

from __future__ import annotations

from . import error, target, tirx, transform
from .datatype import DataType
from .error import TVMError

tir = tirx  # TVM's former name of the same module

__all__ = ["DataType", "TVMError", "error", "target", "tir", "tirx", "transform"]

OUT_OF_SCOPE = (
    "tile2triton provides only the light subset of TVM that scripts use around TileLang kernels "
    "(DataType, target.Target, transform.PassContext, error, tirx.const/reinterpret/Cast/Select); "
    "building or transforming TVM IR is not supported"
)


def install_as_tvm() -> bool:
    """Let ``import tvm`` / ``from tvm import tirx`` find this module, but only when no real ``tvm``
    package is importable (called when TileLang scripts run with ``tilelang`` resolved to
    tile2triton: TileLang itself puts its bundled TVM on ``sys.path``).  True if installed."""
    import importlib.util
    import sys

    if "tvm" in sys.modules:
        return sys.modules["tvm"] is sys.modules[__name__]
    try:
        if importlib.util.find_spec("tvm") is not None:
            return False
    except (ImportError, ValueError):
        return False
    sys.modules["tvm"] = sys.modules[__name__]
    for sub in ("error", "target", "tirx", "transform"):
        sys.modules[f"tvm.{sub}"] = sys.modules[f"{__name__}.{sub}"]
    sys.modules["tvm.tir"] = sys.modules[f"{__name__}.tirx"]
    return True


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"tilelang.tvm.{name}: {OUT_OF_SCOPE}")
