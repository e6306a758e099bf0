"""``tilelang.language.fp8``: which fp8 dtype names this platform uses."""

from __future__ import annotations

import torch

from .dtypes import DTYPES


def determine_fp8_type(fp8_format: str = "e4m3") -> str:
    """``T.float8_e4m3fn`` or ``T.float8_e5m2`` (the NVIDIA formats; Triton's interpreter uses them too)."""
    if fp8_format not in ("e4m3", "e5m2"):
        raise ValueError(f"fp8_format must be 'e4m3' or 'e5m2', got {fp8_format!r}")
    return DTYPES["float8_e4m3fn"] if fp8_format == "e4m3" else DTYPES["float8_e5m2"]


def determine_torch_fp8_type(fp8_format: str = "e4m3") -> torch.dtype:
    return determine_fp8_type(fp8_format).as_torch()


__all__ = ["determine_fp8_type", "determine_torch_fp8_type"]
