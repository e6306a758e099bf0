"""``T.alloc_global`` workspaces kept between calls (``TILE2TRITON_KEEP_WORKSPACES``).

A prim_func's ``T.alloc_global`` buffer lives for one call: a launch writes it, a later launch of
the same call reads it, and it is never returned.  The generated launcher made it with
``torch.empty`` per call: from Python that cost 5.7 us a tensor on the H200 host (session 28), a
fifth of ``example_mha_inference``'s whole call.  TileLang allocates it in C++, from TVM's
workspace pool, which keeps its pages.

Here each workspace of a launcher keeps its last buffer per thread and per (device, stream).  A
later call on the same stream is ordered after every launch that used the buffer, so it may take
it over, as the caching allocator hands a freed block to the next allocation on its stream.
Another thread or stream gets its own buffer; a new shape replaces it.  During CUDA graph capture
each call gets a fresh buffer from the graph's pool, as before: a graph must not share a buffer
with eager calls.  The memory kept: one buffer a workspace per thread and stream, the last one's
size.
"""

from __future__ import annotations

import threading

import torch
from triton.runtime.driver import driver

# torch's own check (False without a CUDA context); a build without CUDA has no graphs to capture
_capturing = torch._C._cuda_isCurrentStreamCapturing if torch.version.cuda else (lambda: False)


class KeptWorkspace:
    """One workspace of a generated launcher, or a direct launch's scratch area (runtime/scratch.py):
    ``workspace(device, shape)`` -> a tensor of its dtype, kept for the calling thread and the device's
    current stream (a CUDA device or its index)."""

    __slots__ = ("dtype", "local", "stream")

    def __init__(self, dtype: torch.dtype):
        self.dtype = dtype
        self.local = threading.local()
        self.stream = None  # Triton driver's current-stream function, as DirectLaunch launches on

    def __call__(self, device: torch.device | int, shape: tuple) -> torch.Tensor:
        if _capturing():
            return torch.empty(size=shape, dtype=self.dtype, device=device)
        kept = getattr(self.local, "kept", None)
        if kept is None:
            kept = self.local.kept = {}
        if self.stream is None:
            self.stream = driver.active.get_current_stream
        index = device if device.__class__ is int else device.index
        where = (index, self.stream(index))
        buffer = kept.get(where)
        if buffer is None or buffer.shape != shape:
            buffer = kept[where] = torch.empty(size=shape, dtype=self.dtype, device=device)
        return buffer
