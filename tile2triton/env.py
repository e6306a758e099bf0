"""``tilelang.env``: the environment settings TileLang scripts read (``tilelang.env.TILELANG_CACHE_DIR``).

Values come from the same variables as in TileLang where tile2triton has the same notion; the
cache directory is tile2triton's (generated Triton sources, see tile2triton/runtime/cache.py)."""

from __future__ import annotations

import os

from . import settings
from .config import disable_cache, enable_cache, is_cache_enabled


class Environment:
    @property
    def TILELANG_CACHE_DIR(self) -> str:  # noqa: N802
        from .runtime.cache import cache_dir

        return str(cache_dir())

    @property
    def TILELANG_TMP_DIR(self) -> str:  # noqa: N802
        return settings.current().tilelang_tmp_dir or os.path.join(self.TILELANG_CACHE_DIR, "tmp")

    @property
    def CUDA_HOME(self) -> str | None:  # noqa: N802
        return settings.current().cuda_home

    @property
    def TILELANG_DEFAULT_TARGET(self) -> str:  # noqa: N802
        return settings.current().tilelang_default_target

    def get_default_target(self) -> str:
        return self.TILELANG_DEFAULT_TARGET

    is_cache_enabled = staticmethod(is_cache_enabled)
    enable_cache = staticmethod(enable_cache)
    disable_cache = staticmethod(disable_cache)


env = Environment()


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(env, name)
