"""TileLang's runtime knobs that tile2triton accepts: ``tilelang.PassConfigKey`` and the cache switches."""

from __future__ import annotations

import os


class PassConfigKey:
    """TileLang's pass-configuration keys.  ``TL_ENABLE_FAST_MATH`` changes the generated code
    (approximate tanh/sin/cos/log, ``codegen/intrinsics.py``); the others tune TileLang's own
    compiler passes, and since Triton compiles tile2triton's output they are accepted and have no
    effect."""

    TL_DISABLE_WARP_SPECIALIZED = "tl.disable_warp_specialized"
    TL_DISABLE_TMA_LOWER = "tl.disable_tma_lower"
    TL_ENABLE_FAST_MATH = "tl.enable_fast_math"
    TL_DISABLE_SAFE_MEMORY_ACCESS = "tl.disable_safe_memory_legalize"
    TL_DISABLE_DATA_RACE_CHECK = "tl.disable_data_race_check"
    TL_DISABLE_BUFFER_INIT_CHECK = "tl.disable_buffer_init_check"
    TL_DISABLE_VECTORIZE_256 = "tl.disable_vectorize_256"
    TL_ENABLE_ASYNC_COPY = "tl.enable_async_copy"
    TL_DISABLE_WGMMA = "tl.disable_wgmma"
    TL_CONFIG_INDEX_BITWIDTH = "tl.config_index_bitwidth"
    TL_ENABLE_DUMP_IR = "tl.enable_dump_ir"
    TL_LAYOUT_COST_MODEL = "tl.layout_cost_model"
    TL_PASS_PROFILE = "tl.pass_profile"
    TL_DISABLE_DYNAMIC_TAIL_SPLIT = "tl.disable_dynamic_tail_split"
    TL_DYNAMIC_ALIGNMENT = "tl.dynamic_alignment"
    TL_ENABLE_AGGRESSIVE_SHARED_MEMORY_MERGE = "tl.enable_aggressive_shared_memory_merge"
    TL_DISABLE_THREAD_STORAGE_SYNC = "tl.disable_thread_storage_sync"
    TL_ENABLE_PTXAS_VERBOSE_OUTPUT = "tl.enable_ptxas_verbose_output"
    TIR_DISABLE_VECTORIZE = "tir.disable_vectorize"
    TIR_MERGE_STATIC_SMEM = "tir.merge_static_smem"
    TIR_USE_ASYNC_COPY = "tir.use_async_copy"

    def __class_getitem__(cls, name):
        return getattr(cls, name)


def disable_cache() -> None:
    """``tilelang.disable_cache()``: generated source goes to a private temporary directory."""
    os.environ["TILE2TRITON_DISABLE_CACHE"] = "1"


def enable_cache() -> None:
    """``tilelang.enable_cache()``."""
    os.environ.pop("TILE2TRITON_DISABLE_CACHE", None)


def is_cache_enabled() -> bool:
    return os.environ.get("TILE2TRITON_DISABLE_CACHE", "") in ("", "0")


def set_log_level(level) -> None:
    """``tilelang.set_log_level``: accepted (tile2triton logs nothing by default)."""
