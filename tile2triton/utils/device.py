"""``tilelang.utils.device``: where TileLang's helpers place tensors (a CUDA device, Apple's MPS, else None:
torch's default, the CPU, where tile2triton runs kernels through Triton's interpreter)."""

from __future__ import annotations

import os

import torch

IS_CUDA = torch.cuda.is_available()
IS_MPS = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())


def get_current_device():
    """The current CUDA device's index, ``"mps:0"``, or None (the CPU)."""
    if IS_CUDA:
        return torch.cuda.current_device()
    return "mps:0" if IS_MPS else None


def get_available_cpu_count() -> int:
    """CPU cores available to this process (its affinity where the OS has one), at least 1."""
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:
        count = os.cpu_count()
    return max(1, count or 1)
