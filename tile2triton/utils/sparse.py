"""``tilelang.utils.sparse``: 2:4 structured-sparse operands for ``T.gemm_sp``, made on the host.

``compress`` writes the format ``T.gemm_sp`` reads (``tile2triton/cuda/intrinsics/sparse_layout.py``):
per group of 4 (32-bit: 2) consecutive elements of a row, the kept values in order and a 4-bit code
of their positions, packed little-endian into row-major metadata. It is plain torch, so it runs on
any device; TileLang's compressor kernel writes the same values."""

from __future__ import annotations

import torch

from ..cuda.intrinsics.sparse_layout import BITS_PER_GROUP, GROUP_CONFIG, get_e_factor
from ..language.dtypes import dtype


def _default_meta_dtype(values: torch.dtype) -> torch.dtype:
    return torch.int32 if values == torch.int8 else torch.int16


def compress(
    A: torch.Tensor,
    meta_dtype: torch.dtype | None = None,
    block_m: int | None = None,
    block_k: int | None = None,
    **older_arguments,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(A_sparse, E)`` of a 2-D tensor with at most 2 nonzeros in every group of 4 along its last
    dim (1 in every pair for 32-bit dtypes). ``block_m`` / ``block_k`` (tile sizes of TileLang's
    compressor kernel) do not change the result and are accepted for compatibility."""
    del block_m, block_k
    if older_arguments:
        raise TypeError(
            f"compress() got {', '.join(sorted(older_arguments))}: TileLang's older compress(A, transposed, arch) "
            "wrote metadata in CUTLASS's interleaved order; this one writes the row-major order T.gemm_sp reads "
            "(call compress(A, meta_dtype=...), and transpose A_sparse and E yourself for transpose_A)"
        )
    if A.dim() != 2:
        raise ValueError(f"compress expects a 2-D tensor, got {A.dim()}-D")
    a_dtype = dtype(A.dtype)
    if a_dtype not in GROUP_CONFIG:
        raise ValueError(f"compress: 2:4 sparsity is not defined for {A.dtype}")
    meta_dtype = meta_dtype or _default_meta_dtype(A.dtype)
    elem, group = GROUP_CONFIG[a_dtype]
    e_factor = get_e_factor(a_dtype, dtype(meta_dtype))
    rows, cols = A.shape
    if cols % e_factor:
        raise ValueError(f"compress: the last dim ({cols}) must be a multiple of {e_factor} ({A.dtype}, {meta_dtype})")
    groups = A.reshape(rows, cols // group, group)
    nonzero = groups.view(torch.int8) != 0 if A.element_size() == 1 else groups != 0
    if (nonzero.sum(-1) > elem).any():
        raise ValueError(f"compress: a group of {group} holds more than {elem} nonzeros (not 2:4 sparse)")
    # kept positions: the nonzeros first, padded with the first zero positions, in ascending order
    position = torch.arange(group, device=A.device)
    order = torch.where(nonzero, position, position + group).argsort(dim=-1, stable=True)
    kept = order[..., :elem].sort(dim=-1).values
    gather_src = groups.view(torch.int8) if A.element_size() == 1 else groups
    values = gather_src.gather(-1, kept).reshape(rows, cols * elem // group)
    values = values.view(A.dtype) if A.element_size() == 1 else values
    # position codes count 16-bit halves: a 32-bit element e covers halves 2e and 2e + 1
    halves = kept if group == 4 else torch.cat([2 * kept, 2 * kept + 1], dim=-1)
    code = halves[..., 0] | (halves[..., 1] << 2)
    per_meta = torch.iinfo(meta_dtype).bits // BITS_PER_GROUP
    shifts = BITS_PER_GROUP * torch.arange(per_meta, device=A.device)
    meta = (code.reshape(rows, -1, per_meta) << shifts).sum(-1)
    bits = torch.iinfo(meta_dtype).bits
    if torch.iinfo(meta_dtype).min < 0:  # the bit pattern as the signed type
        meta = torch.where(meta >= 1 << (bits - 1), meta - (1 << bits), meta)
    return values.contiguous(), meta.to(meta_dtype)


def decompress(A_sparse: torch.Tensor, E: torch.Tensor) -> torch.Tensor:
    """The dense matrix ``compress`` was given (zeros where values were dropped)."""
    elem, group = GROUP_CONFIG[dtype(A_sparse.dtype)]
    rows = A_sparse.shape[0]
    per_meta = E.element_size() * 8 // BITS_PER_GROUP
    words = E.to(torch.int64) & ((1 << (E.element_size() * 8)) - 1)
    shifts = BITS_PER_GROUP * torch.arange(per_meta, device=E.device)
    code = ((words[..., None] >> shifts) & 15).reshape(rows, -1)
    byte_sized = A_sparse.element_size() == 1  # fp8 has no scatter kernel: move the bytes
    values = (A_sparse.view(torch.int8) if byte_sized else A_sparse).reshape(rows, -1, elem)
    dense = torch.zeros(rows, code.shape[1], group, dtype=values.dtype, device=A_sparse.device)
    for j in reversed(range(elem)):
        slot = ((code >> (2 * j)) & 3) // (4 // group)
        dense.scatter_(-1, slot[..., None], values[..., j : j + 1])
    dense = dense.reshape(rows, -1)
    return dense.view(A_sparse.dtype) if byte_sized else dense


def _semi_sparse(dense: torch.Tensor, values: torch.dtype, transposed: bool) -> torch.Tensor:
    elem, group = GROUP_CONFIG[dtype(values)]
    rows, cols = dense.shape
    grouped = dense.view(rows, -1, group)
    grouped.scatter_(-1, grouped.float().topk(group - elem, dim=-1).indices, 0)
    dense = grouped.view(rows, cols)
    return dense.t().contiguous() if transposed else dense


def randn_semi_sparse(M: int, K: int, dtype=torch.float16, device="cuda", transposed: bool = False) -> torch.Tensor:
    """A random (M, K) tensor with 2:4 sparsity along K ((K, M) with ``transposed``)."""
    return _semi_sparse(torch.randn(M, K, device=device), dtype, transposed).to(dtype)


def randint_semi_sparse(
    M: int, K: int, low: int, high: int, dtype=torch.int32, device="cuda", transposed: bool = False
):
    """Random integers in [low, high) with 2:4 sparsity along K."""
    return _semi_sparse(torch.randint(low, high, (M, K), dtype=dtype, device=device), dtype, transposed)


def arange_semi_sparse(M: int, K: int, dtype=torch.float16, device="cuda", transposed: bool = False):
    """0 .. M*K-1 with 2:4 sparsity along K."""
    return _semi_sparse(torch.arange(M * K, dtype=dtype, device=device).view(M, K), dtype, transposed)


__all__ = ["arange_semi_sparse", "compress", "decompress", "randint_semi_sparse", "randn_semi_sparse"]
