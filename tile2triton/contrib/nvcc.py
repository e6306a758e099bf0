"""``tilelang.contrib.nvcc``: the GPU-capability queries scripts use to pick a kernel variant.

tile2triton never runs nvcc (Triton compiles its output); only the queries are provided."""

from __future__ import annotations

import torch


def get_target_compute_version(target=None) -> str:
    """``"9.0"`` on an H100/H200: the compute capability of the current CUDA device (or of ``target``'s
    ``-arch=sm_XY``).  Raises ``ValueError`` when neither names one, as TileLang does."""
    arch = getattr(target, "arch", None) if target is not None else None
    if isinstance(arch, str) and arch.startswith("sm_"):
        digits = arch[3:].rstrip("af")
        return f"{digits[:-1]}.{digits[-1]}"
    if torch.cuda.is_available() and torch.version.hip is None:
        major, minor = torch.cuda.get_device_capability()
        return f"{major}.{minor}"
    raise ValueError("no CUDA GPU found: cannot determine the target compute version")


def parse_compute_version(compute_version) -> tuple[int, int]:
    """``"8.6"`` -> ``(8, 6)``."""
    parts = str(compute_version).split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        raise ValueError(f"compute version must be 'major.minor', got {compute_version!r}") from None


def get_target_arch(compute_version) -> str:
    """``"9.0"`` or ``(9, 0)`` -> ``"sm_90"`` (``"sm_90a"`` for Hopper, as TileLang names it)."""
    major, minor = compute_version if isinstance(compute_version, tuple) else parse_compute_version(compute_version)
    return f"sm_{major}{minor}" + ("a" if (major, minor) == (9, 0) else "")


def _version(compute_version=None, target=None) -> tuple[int, int]:
    if compute_version is None:
        compute_version = get_target_compute_version(target)
    return parse_compute_version(compute_version) if not isinstance(compute_version, tuple) else compute_version


def have_fp16(compute_version) -> bool:
    return _version(compute_version) >= (5, 3)


def have_int8(compute_version) -> bool:
    return _version(compute_version) >= (6, 1)


def have_bf16(compute_version) -> bool:
    return _version(compute_version) >= (8, 0)


def have_fp8(compute_version) -> bool:
    return _version(compute_version) >= (8, 9)


def have_tensorcore(compute_version=None, target=None) -> bool:
    return _version(compute_version, target) >= (7, 0)


def have_tma(target=None) -> bool:
    return _version(None, target) >= (9, 0)


def is_hopper(target=None) -> bool:
    return _version(None, target) == (9, 0)


def get_cuda_version(cuda_path=None) -> str | None:
    """The CUDA version torch was built with (``None`` for a CPU build)."""
    return torch.version.cuda


__all__ = [
    "get_cuda_version",
    "get_target_arch",
    "get_target_compute_version",
    "have_bf16",
    "have_fp16",
    "have_fp8",
    "have_int8",
    "have_tensorcore",
    "have_tma",
    "is_hopper",
    "parse_compute_version",
]
