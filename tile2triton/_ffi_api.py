"""``tilelang._ffi_api``: TileLang's C++ functions reached through TVM's FFI.  tile2triton has no C++
side; the module exists so that scripts importing it load, and each function raises when called."""

from __future__ import annotations


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)

    def unavailable(*args, **kwargs):
        raise NotImplementedError(
            f"tilelang._ffi_api.{name} is a TileLang C++ function (CUDA code generation internals); "
            "tile2triton does not provide it"
        )

    return unavailable
