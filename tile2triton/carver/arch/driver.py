"""``tilelang.carver.arch.driver``: CUDA device properties (through torch)."""

from __future__ import annotations

import torch

from ... import settings

# tools/tilelang_suite.py --cuda-as-cpu runs CUDA-only scripts on Triton's interpreter; there a
# persistent kernel's grid (one program per SM) gets this many programs.
INTERPRETER_SMS = 8


def _props(device_id: int = 0):
    if torch.cuda.is_available():
        return torch.cuda.get_device_properties(device_id)
    if settings.current().cuda_as_cpu:
        return None
    raise RuntimeError("no CUDA device: the carver's device queries need a GPU")


def get_cuda_device_properties(device_id: int = 0):
    return _props(device_id)


def get_device_name(device_id: int = 0) -> str:
    p = _props(device_id)
    return "Triton interpreter" if p is None else p.name


def get_num_sms(device_id: int = 0) -> int:
    p = _props(device_id)
    return INTERPRETER_SMS if p is None else p.multi_processor_count


def get_shared_memory_per_block(device_id: int = 0, format: str = "bytes") -> int:  # noqa: A002
    p = _props(device_id)
    size = 228 * 1024 if p is None else getattr(p, "shared_memory_per_block_optin", 48 * 1024)
    return {"bytes": size, "kb": size // 1024, "mb": size // (1024 * 1024)}[format]


def get_max_dynamic_shared_size_bytes(device_id: int = 0, format: str = "bytes") -> int:  # noqa: A002
    return get_shared_memory_per_block(device_id, format)


def get_registers_per_block(device_id: int = 0) -> int:
    p = _props(device_id)
    return 65536 if p is None else getattr(p, "regs_per_multiprocessor", 65536)


def get_persisting_l2_cache_max_size(device_id: int = 0) -> int:
    p = _props(device_id)
    return 0 if p is None else getattr(p, "L2_cache_size", 0)
