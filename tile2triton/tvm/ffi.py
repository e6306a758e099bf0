"""``tvm_ffi`` (TVM's FFI package, which TileLang installs): the containers scripts build on the host,
``Map`` and ``Array``, as their Python equivalents.  Registered as ``tvm_ffi`` only while TileLang scripts
run with ``tilelang`` resolved to tile2triton and no real ``tvm_ffi`` is installed (see ``install_as_tvm``);
functions of the FFI registry (``register_global_func``, ``get_global_func``...) are not provided."""

from __future__ import annotations


class Map(dict):
    """``tvm_ffi.Map``: a dict (a missing key raises ``KeyError``)."""


class Array(list):
    """``tvm_ffi.Array``: a list."""


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(
        f"tvm_ffi.{name}: tile2triton provides only tvm_ffi.Map and tvm_ffi.Array (host containers); "
        "TVM's FFI function registry and objects are not available without TVM"
    )


__all__ = ["Array", "Map"]
