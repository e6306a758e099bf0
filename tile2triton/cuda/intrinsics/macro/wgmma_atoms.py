"""TileLang's Hopper warpgroup MMA emitter (``WGMMATensorCoreIntrinEmitter``: descriptors,
``wgmma_ss_atom`` / ``wgmma_rs_atom``, ``wgmma``), as kernel code tile2triton binds.

A WGMMA atom multiplies a 64-row slice of A (shared, or a register fragment) by an ``inst_n``-column
slice of B (shared) over one k step into the same slice of the accumulator fragment, for every
warpgroup of the block.  That is a tile-level product, so an atom is a ``T.gemm`` (it lowers to
``tl.dot``) of A restricted to the k step by B, added to C where the atom's rows and columns are
(``warpgroup_products``: whole tiles and masks, as the atom indices are loop variables); a descriptor (``T.alloc_wgmma_desc``, ``language/_descriptors.py``) is
the handle naming the shared buffer it was initialised with.  Fences, arrive, commit and wait order
asynchronous WGMMA instructions; ``tl.dot``'s result is complete when it is read, so they do nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

from .... import language as T
from .mma_atoms import TensorCoreIntrinEmitter, _macro_method


def select_wgmma_inst_n(warp_col_tiles: int) -> int:
    """TileLang's WGMMA ``N``: the widest multiple of 16 up to 256 that tiles ``warp_col_tiles``
    (else their gcd with 256)."""
    fallback = gcd(warp_col_tiles, 256)
    if warp_col_tiles % 16:
        return fallback
    for cand in range(256, fallback, -16):
        if warp_col_tiles % cand == 0:
            return cand
    return fallback


@dataclass(frozen=True)
class WGMMADescriptorParams:
    """What ``compute_wgmma_*_desc_params`` knows of an operand: its shared buffer and whether it is
    stored K-major (TileLang also derives the hardware descriptor's byte offsets, unused here)."""

    buffer: object
    is_k_major: bool
    micro_size_k: int


class WGMMATensorCoreIntrinEmitter(TensorCoreIntrinEmitter):
    """TileLang's WGMMA emitter: the same constructor and sizes (``wgmma_inst_m`` 64, ``wgmma_inst_n``,
    ``wgmma_num_inst_m/n``, ``wgmma_num_k_atoms``); four warps along M form a warpgroup."""

    a_shared_layout = None
    b_shared_layout = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.block_row_warps % 4:
            raise ValueError(
                f"WGMMA: block_row_warps must be a multiple of 4 (a warpgroup), got {self.block_row_warps}"
            )
        inst_n = select_wgmma_inst_n(self.warp_col_tiles)
        if inst_n % 8 or not 8 <= inst_n <= 256:
            raise ValueError(f"WGMMA: no instruction width tiles warp_col_tiles={self.warp_col_tiles}")
        if (4 * self.warp_row_tiles) % 64:
            raise ValueError(f"WGMMA: a warpgroup's {4 * self.warp_row_tiles} rows are not a multiple of 64")
        self.wgmma_inst_m, self.wgmma_inst_n = 64, inst_n
        self.wgmma_prefix = f"m64n{inst_n}k{256 // self.a_dtype.bits}"

    def _assign_a_shared_layout(self, layout):
        self.a_shared_layout = layout
        return self

    def _assign_b_shared_layout(self, layout):
        self.b_shared_layout = layout
        return self

    # ---- sizes
    @property
    def wgmma_num_inst_m(self) -> int:
        return 4 * self.warp_row_tiles // self.wgmma_inst_m

    @property
    def wgmma_num_inst_n(self) -> int:
        return self.warp_col_tiles // self.wgmma_inst_n

    @property
    def wgmma_num_k_atoms(self) -> int:
        return self.chunk // self.micro_size_k

    @property
    def wgmma_a_regs(self) -> int:
        bits = self.a_dtype.bits
        return (self.warp_rows * self.local_size_a * (self.chunk // self.micro_size_k) * bits + 31) // 32

    @property
    def wgmma_accum_regs(self) -> int:
        m_dim = self.block_row_warps * self.warp_row_tiles
        return ((m_dim // 64) * self.warp_cols * self.local_size_out * self.accum_dtype.bits + 31) // 32

    # ---- descriptors (host code run while the kernel is bound)
    def compute_wgmma_a_desc_params(self, A_region) -> WGMMADescriptorParams:  # noqa: N803 - TileLang's names
        return WGMMADescriptorParams(A_region, not self.a_transposed, self.micro_size_k)

    def compute_wgmma_b_desc_params(self, B_region) -> WGMMADescriptorParams:  # noqa: N803
        return WGMMADescriptorParams(B_region, self.b_transposed, self.micro_size_k)

    def init_wgmma_a_desc(self, desc_a, A_region, a_params=None) -> None:  # noqa: N803
        desc_a.bind(A_region)

    def init_wgmma_b_desc(self, desc_b, B_region, b_params=None) -> None:  # noqa: N803
        desc_b.bind(B_region)

    # ---- ordering of asynchronous WGMMA: nothing to order here (see the module docstring)
    def wgmma_fence_a(self, A_buf) -> None:  # noqa: N803
        return None

    def wgmma_fence_c(self, C_buf) -> None:  # noqa: N803
        return None

    def wgmma_arrive(self) -> None:
        return None

    def wgmma_commit(self) -> None:
        return None

    def wgmma_wait(self, n: int = 0) -> None:
        return None

    # ---- atoms
    @_macro_method
    def wgmma_ss_atom(self, desc_a, desc_b, C_buf, inst_m_idx, inst_n_idx, ki, a_params=None, b_params=None,  # noqa: N803
                      clear_accum=False):  # fmt: skip
        """C[64 rows, inst_n cols] (=, or +=) A[rows, k step ki] x B[k step ki, cols], per warpgroup."""
        self.warpgroup_products(desc_a.buffer, desc_b.buffer, C_buf, inst_m_idx, inst_n_idx, ki, clear_accum)

    @_macro_method
    def wgmma_rs_atom(self, A_buf, desc_b, C_buf, inst_m_idx, inst_n_idx, ki, b_params=None, clear_accum=False):  # noqa: N803
        """As ``wgmma_ss_atom``, with A from a register fragment."""
        self.warpgroup_products(A_buf, desc_b.buffer, C_buf, inst_m_idx, inst_n_idx, ki, clear_accum)

    @_macro_method
    def warpgroup_products(self, A, B, C, inst_m_idx, inst_n_idx, ki, clear_accum):  # noqa: N803
        """Every warpgroup's atom at once, with whole-tile operations (no sub-tile at a loop-dependent
        offset): A with the k columns outside step ``ki`` zeroed, times B, is every row and column's
        product over that step; it goes into the atom's rows and columns of C (row block
        ``inst_m_idx`` of each warpgroup's rows, column block ``inst_n_idx`` of its columns)."""
        mk = self.micro_size_k
        a_step = T.alloc_fragment(A.shape, A.dtype)
        step_product = T.alloc_fragment(C.shape, self.accum_dtype)
        if self.a_transposed:
            for k, i in T.Parallel(A.shape[0], A.shape[1]):
                a_step[k, i] = T.if_then_else(k // mk == ki, A[k, i], T.cast(0, A.dtype))
        else:
            for i, k in T.Parallel(A.shape[0], A.shape[1]):
                a_step[i, k] = T.if_then_else(k // mk == ki, A[i, k], T.cast(0, A.dtype))
        T.gemm(a_step, B, step_product, transpose_A=self.a_transposed, transpose_B=self.b_transposed,
               clear_accum=True)  # fmt: skip
        for i, j in T.Parallel(C.shape[0], C.shape[1]):
            if (i // 64) % self.wgmma_num_inst_m == inst_m_idx and (
                j // self.wgmma_inst_n
            ) % self.wgmma_num_inst_n == inst_n_idx:
                if clear_accum and ki == 0:
                    C[i, j] = step_product[i, j]
                else:
                    C[i, j] = C[i, j] + step_product[i, j]

    @_macro_method
    def wgmma(self, A_region, B_region, C_region, clear_accum=False, wg_wait=0):  # noqa: N803
        """The whole product (TileLang's ``wgmma``: every atom)."""
        T.gemm(A_region, B_region, C_region, transpose_A=self.a_transposed, transpose_B=self.b_transposed,
               clear_accum=clear_accum)  # fmt: skip

    @_macro_method
    def wgmma_rs(self, A_region, B_region, C_region, clear_accum=False, wg_wait=0):  # noqa: N803
        T.gemm(A_region, B_region, C_region, transpose_A=self.a_transposed, transpose_B=self.b_transposed,
               clear_accum=clear_accum)  # fmt: skip
