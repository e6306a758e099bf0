"""``tilelang.tvm``: the light subset of TVM's Python API that TileLang scripts use around kernels.

Reachable only as ``tilelang.tvm`` / ``from tilelang import tvm`` (or ``tile2triton.tvm``); a real
``tvm`` package the user has installed is never shadowed.  Provided: ``DataType``,
``target.Target``, ``transform.PassContext``, ``error.*`` (and ``TVMError``), ``tirx`` / ``tir``
with ``const``, ``reinterpret``, ``Cast``, ``Select``, ``Not``/``And``/``Or`` and the expression
classes scripts name in annotations (also as ``tirx.expr``), ``script.ir_builder.base.IRBuilderFrame``
(the class of ``T.serial(...)`` called in host code).  Whatever builds or transforms TVM IR
(``IRModule``, passes, ``arith``, the rest of ``script``, ``ir.assert_structural_equal``...) is out of
scope: accessing it raises an ``AttributeError`` that says so.
"""

from __future__ import annotations

import sys as _sys

from . import error, script, target, tir_expr, tirx, transform
from .datatype import DataType
from .error import TVMError

tir = tirx  # TVM's former name of the same module
# ``tirx.expr`` is a module of its own (tir_expr.py); make ``tirx.expr`` and ``import tile2triton.tvm.tirx.expr`` find it
tirx.expr = tir_expr
_sys.modules.setdefault(f"{__name__}.tirx.expr", tir_expr)

__all__ = ["DataType", "TVMError", "error", "script", "target", "tir", "tirx", "transform"]

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
    for sub in ("error", "target", "tirx", "transform", "script", "script.ir_builder", "script.ir_builder.base"):
        sys.modules[f"tvm.{sub}"] = sys.modules[f"{__name__}.{sub}"]
    sys.modules["tvm.tir"] = sys.modules[f"{__name__}.tirx"]
    sys.modules["tvm.tirx.expr"] = sys.modules["tvm.tir.expr"] = tirx.expr
    if not any(isinstance(f, _OutOfScopeFinder) for f in sys.meta_path):
        sys.meta_path.append(_OutOfScopeFinder())  # last: consulted only for what does not exist
    return True


def install_as_tvm_ffi() -> bool:
    """Let ``import tvm_ffi`` find ``tile2triton.tvm.ffi`` (Map, Array), only when no real ``tvm_ffi``
    is importable.  True if installed."""
    import importlib.util
    import sys

    from . import ffi

    if "tvm_ffi" in sys.modules:
        return sys.modules["tvm_ffi"] is ffi
    try:
        if importlib.util.find_spec("tvm_ffi") is not None:
            return False
    except (ImportError, ValueError):
        return False
    sys.modules["tvm_ffi"] = ffi
    return True


class _OutOfScopeFinder:
    """``import tvm.arith`` / ``from tvm.script import ...`` while ``tvm`` is this light subset: a
    ModuleNotFoundError that says why (instead of Python's bare 'No module named')."""

    def find_spec(self, fullname, path=None, target=None):
        import sys

        if sys.modules.get("tvm") is not sys.modules[__name__]:
            return None
        if not fullname.startswith(("tvm.", f"{__name__}.")):
            return None
        fullname = "tvm." + fullname.split(".tvm.", 1)[-1] if fullname.startswith(__name__) else fullname
        # no ``name=``: ``from tvm import arith`` then reports this message, not "cannot import name"
        raise ModuleNotFoundError(f"No module named '{fullname}': {OUT_OF_SCOPE}")

    def find_module(self, fullname, path=None):  # pragma: no cover - legacy protocol
        return None


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"tilelang.tvm.{name}: {OUT_OF_SCOPE}")
