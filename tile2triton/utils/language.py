"""``tilelang.utils.language``: TileLang's buffer-region helpers over TVM IR.  Importable;
``to_buffer_region`` builds a TVM ``BufferRegion``, which tile2triton has no use for (its T.* operations
take buffers and slices directly), so calling it raises."""

from __future__ import annotations


def to_buffer_region(obj, access_type: str = "rw", extents=None):
    raise NotImplementedError(
        "tilelang.utils.language.to_buffer_region builds TVM buffer regions; tile2triton's operations take "
        "buffers and slices (A[0:64, k:k + 32]) directly"
    )


__all__ = ["to_buffer_region"]
