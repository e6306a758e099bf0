"""``tilelang.rocm.target``: tile2triton runs kernels on NVIDIA GPUs (32-lane warps) and on the CPU
through Triton's interpreter; it never targets HIP, so the queries answer as on a machine without
ROCm."""

from __future__ import annotations


def check_hip_availability() -> bool:
    """Whether kernels run through HIP (ROCm): never with tile2triton."""
    return False


def target_is_gfx950(target=None) -> bool:
    """Whether ``target`` is an AMD gfx950: tile2triton has no HIP targets."""
    return False
