"""``T.alloc_wgmma_desc()``: a WGMMA shared-memory descriptor, as TileLang's WGMMA emitter uses it.

In TileLang it is a 64-bit register the emitter fills with a shared buffer's address and layout
(``init_wgmma_a_desc``), read by each ``wgmma_ss_atom``.  Here the emitter
(``cuda/intrinsics/macro/wgmma_atoms.py``) multiplies shared sub-tiles with ``T.gemm``, so a descriptor
is a compile-time handle naming the shared buffer it was initialised with.  The raw descriptor
primitives (``T.initialize_wgmma_descriptor``, ``T.ptx_wgmma_ss``) are not supported.
"""

from __future__ import annotations


class WGMMADescriptor:
    """A WGMMA descriptor: the shared buffer ``init_wgmma_a_desc`` / ``init_wgmma_b_desc`` bound it to."""

    def __init__(self, dtype="uint64"):
        self.dtype = dtype
        self.buffer = None

    def bind(self, buffer) -> None:
        self.buffer = buffer

    def __repr__(self) -> str:
        return f"WGMMADescriptor({getattr(self.buffer, 'name', None)!r})"


def alloc_wgmma_desc(dtype="uint64") -> WGMMADescriptor:
    """A WGMMA descriptor handle (see the module docstring)."""
    return WGMMADescriptor(dtype)
