"""Where a kernel runs: the ``target`` option, the device of a launch, and the device-side
features (tensor descriptors) a lowering may use.

CUDA tensors run through Triton's compiler on their own GPU; CPU tensors through Triton's
interpreter.  ``target`` pins one of the two (``"cuda"``, ``"cpu"``) or follows the tensors
(``None``, ``"auto"``).
"""

from __future__ import annotations

import contextlib
import sys

import torch
import triton
import triton.language as tl

from .. import settings

try:
    from triton.runtime import _allocation
except ImportError:  # a Triton without device-side allocations has no tensor descriptors either
    _allocation = None

NULL_CONTEXT = contextlib.nullcontext()

_AUTO = ("auto", "none")
_CUDA = ("cuda",)
_CPU = ("cpu", "interpreter", "interpret", "llvm", "c")  # TVM names its CPU targets llvm and c


def target_kind(target) -> str | None:
    """``None`` (follow the tensors), ``"cuda"`` or ``"cpu"`` (Triton's interpreter), for a
    target given as TileLang takes it: a string such as ``"cuda -arch=sm_90"``, a dict with a
    ``"kind"``, or an object with a ``kind``.  A target tile2triton cannot run on is an error."""
    if target is None:
        return None
    if isinstance(target, dict):
        target = target.get("kind")
    kind = getattr(target, "kind", target)
    kind = getattr(kind, "name", kind)  # TVM's Target.kind is a TargetKind with a name
    kind = str(kind).split()[0].lower() if kind else "auto"
    if kind in _AUTO:
        return None
    if kind in _CUDA:
        return "cuda"
    if kind in _CPU:
        return "cpu"
    raise ValueError(
        f"unknown target {target!r}: tile2triton runs on 'cuda' (Triton on an NVIDIA GPU) or 'cpu' "
        "(Triton's interpreter); 'auto' follows the tensors' device"
    )


_warned_fallback = False


def resolve_target(target) -> str | None:
    """``target_kind``, except that ``"cuda"`` on a machine without CUDA follows the tensors
    (Triton's interpreter runs CPU tensors), with a warning on stderr the first time."""
    kind = target_kind(target)
    if kind == "cuda" and not torch.cuda.is_available():
        global _warned_fallback
        if not _warned_fallback:
            _warned_fallback = True
            print(
                f"tile2triton: warning: target {target!r} asks for CUDA, but this machine has no CUDA device; "
                "kernels run on CPU tensors through Triton's interpreter instead (slow: for testing)",
                file=sys.stderr,
            )
        return None
    return kind


def default_interpret() -> bool:
    return not torch.cuda.is_available()


def tensor_descriptors_supported(interpret: bool) -> bool:
    """Tensor-descriptor (TMA) loads: on Hopper and newer with a Triton that has them.
    ``TILE2TRITON_TENSOR_DESCRIPTORS=0`` turns them off, ``=1`` on (the interpreter runs them too)."""
    forced = settings.current().tensor_descriptors
    if forced is not None:
        return forced
    if interpret or not hasattr(tl, "make_tensor_descriptor") or not torch.cuda.is_available():
        return False
    return torch.cuda.get_device_capability()[0] >= 9


def gluon_attention_supported(interpret: bool) -> bool:
    """Attention loops as Gluon (codegen/gluon_attention.py): on Hopper (sm_90, whose wgmma and TMA
    the generated code uses) with a Triton that has Gluon's Hopper module.
    ``TILE2TRITON_GLUON=0`` keeps every kernel on the ``tl`` lowering; ``=log`` reports on stderr
    which kernels take the Gluon route and why the others do not."""
    if interpret or settings.current().gluon == "off":
        return False
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        return False
    try:
        from triton.experimental.gluon.language.nvidia.hopper import tma, warpgroup_mma  # noqa: F401
    except ImportError:
        return False
    return hasattr(tma, "make_tensor_descriptor")


def cuda_device_guard(index: int):
    """Triton launches on the current CUDA device: a context making ``index`` current for the
    launch, or a no-op context when it already is (the common case costs one device query)."""
    if index == torch.cuda.current_device():
        return NULL_CONTEXT
    return torch.cuda.device(index)


def _cuda_workspace(size: int, alignment: int, stream):
    return torch.empty(size, dtype=torch.int8, device="cuda")  # the current device: the launch's


def ensure_allocator() -> None:
    """Device-side tensor descriptors live in a workspace Triton asks an allocator for; install
    one unless the user did (the setting is per thread: a context variable)."""
    if _allocation is not None and _allocation._allocator.get() is _allocation._NULL_ALLOCATOR:
        triton.set_allocator(_cuda_workspace)


def interpret_env_on() -> bool:
    """Is TRITON_INTERPRET=1 set now (a warm interpreted launch then needs no mode switch)?"""
    return settings.current().interpret_env
