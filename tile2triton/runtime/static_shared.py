"""Kernels that declare a static ``.shared`` array themselves (codegen/scratch.py's on-chip scratch
area), beside the dynamic shared memory Triton allocates for them.

A launch may use at most 48 KiB of static and dynamic shared memory together unless the function's
``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`` allows more; Triton raises it only when its own
(dynamic) part passes 48 KiB, and then to the card's opt-in limit less the static part.  Here every
such kernel gets that same value when Triton loads it (``knobs.runtime.kernel_load_end_hook``), so
a static array and Triton's dynamic memory fit together up to the card's limit.
"""

from __future__ import annotations

import ctypes

from triton import knobs

_KERNELS: set[str] = set()  # names of the generated kernels that declare a static array
_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
_driver = None


def register(name: str) -> None:
    """The kernel ``name`` declares a static shared array: let its launches use the card's limit."""
    if not _KERNELS:
        knobs.runtime.kernel_load_end_hook.add(_on_load)
    _KERNELS.add(name)


def _cuda():
    """The CUDA driver library; None where there is none (a test's stand-in for a GPU launch)."""
    global _driver
    if _driver is None:
        try:
            _driver = ctypes.CDLL("libcuda.so.1")
        except OSError:
            _driver = False
    return _driver or None


def _check(status: int, what: str) -> None:
    if status != 0:
        raise RuntimeError(f"tile2triton: {what} failed (CUDA driver error {status})")


def _real_driver() -> bool:
    """Is Triton's active driver its CUDA driver (not a stand-in that loads nothing, as the launch
    tests' and benchmarks/launch_cost.py's: its "functions" are no driver handles)?"""
    from triton.runtime.driver import driver

    return type(driver.active).__name__ == "CudaDriver"


def _on_load(module, function, name, metadata_group, hash) -> None:  # noqa: A002 - Triton's hook signature
    if name not in _KERNELS or not function or not _real_driver():
        return
    cuda = _cuda()
    if cuda is None:
        return
    fn = ctypes.c_void_p(function)
    static, limit, device = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    _check(
        cuda.cuFuncGetAttribute(ctypes.byref(static), _CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn), "cuFuncGetAttribute"
    )
    _check(cuda.cuCtxGetDevice(ctypes.byref(device)), "cuCtxGetDevice")
    _check(
        cuda.cuDeviceGetAttribute(ctypes.byref(limit), _CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device),
        "cuDeviceGetAttribute",
    )
    dynamic = limit.value - static.value
    _check(cuda.cuFuncSetAttribute(fn, _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic), "cuFuncSetAttribute")
