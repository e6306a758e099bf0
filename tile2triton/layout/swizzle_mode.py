"""``tilelang.layout.SwizzleMode``: the shared-memory swizzle modes and the numbers TileLang's
descriptors encode for them (host-side values; tile2triton builds no descriptors itself)."""

from __future__ import annotations

import enum


class SwizzleMode(enum.Enum):
    NONE = 0
    SWIZZLE_32B = 32
    SWIZZLE_64B = 64
    SWIZZLE_128B = 128

    def is_none(self) -> bool:
        return self is SwizzleMode.NONE

    def is_swizzle_32b(self) -> bool:
        return self is SwizzleMode.SWIZZLE_32B

    def is_swizzle_64b(self) -> bool:
        return self is SwizzleMode.SWIZZLE_64B

    def is_swizzle_128b(self) -> bool:
        return self is SwizzleMode.SWIZZLE_128B

    def wgmma_layout_type(self) -> int:
        """WGMMA descriptor ``layout_type`` field (none 0, 128B 1, 64B 2, 32B 3)."""
        return {0: 0, 128: 1, 64: 2, 32: 3}[self.value]

    def tcgen05_layout_type(self) -> int:
        """tcgen05 descriptor swizzle field (none 0, 128B 2, 64B 4, 32B 6)."""
        return {0: 0, 128: 2, 64: 4, 32: 6}[self.value]

    def swizzle_byte_size(self) -> int:
        """Swizzle size in bytes (none 1)."""
        return self.value or 1

    def swizzle_atom_size(self) -> int:
        """Swizzle size in 16-byte vectors (none 1)."""
        return self.value // 16 if self.value else 1

    def smem_alignment(self) -> int:
        """Shared-memory base alignment in bytes (none 128, else 8x the swizzle size)."""
        return self.value * 8 if self.value else 128

    @staticmethod
    def from_ordinal(ordinal: int) -> SwizzleMode:
        return list(SwizzleMode)[int(ordinal)]
