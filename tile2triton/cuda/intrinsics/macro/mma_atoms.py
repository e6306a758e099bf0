"""TileLang's warp-level tensor-core emitter (``TensorCoreIntrinEmitter``: ``ldmatrix_a/b``,
``mma_atom``, ``mma``, ``stmatrix``), as kernel code tile2triton binds.

A warp's MMA operands live in per-thread local arrays in the tensor-core fragment layouts (lane
``l``, element ``e`` holds the matrix element at ``*_layout(l, e)``, the layouts of
``cuda/intrinsics/layout/mma_layout.py``), so code that reads the locals sees what TileLang gives it.
Triton has no per-warp MMA instruction; what an atom computes is a tile-level product, so
``mma_atom`` is written as one: every warp's A and B fragments are put in shared staging tiles (one
16-row block per warp row / column), ``T.gemm`` multiplies them (it lowers to ``tl.dot``), and each
thread adds the elements of the product its C fragment holds.  Every method is a ``T.macro`` bound to
the emitter (``_macro_method``), inlined where the kernel calls it.

That per-element form is exact but slow (every fragment element a one-hot select, a tiny product per
atom).  So ``ldmatrix_a/b``, ``mma``, ``mma_atom`` and ``stmatrix`` are *fragment operations*
(``_fragment_op``): the binder (``frontend/rules_fragments.py``) binds both that exact form and a tile
form on block-level tiles the per-thread fragments stand for (``fragment_tile``: A's ``block_m x k``
step, B's, C's ``block_m x block_n``), and keeps the tile form for every group of fragments no other
code reads or writes: ldmatrix is a copy of the k step's slice, mma one ``T.gemm``, stmatrix a copy,
and a k loop of ldmatrix + mma one ``T.gemm`` over the loop's k range.
"""

from __future__ import annotations

import collections
import dataclasses
import inspect
import types

from .... import language as T
from ....language.dtypes import to_dtype

_FP64 = "fp64 MMA (m8n8k4) atoms are not supported by tile2triton; use T.gemm"


class _macro_method:  # noqa: N801 - used as a decorator, like T.macro
    """A ``T.macro`` that is a method: ``emitter.ldmatrix_a(...)`` in a kernel inlines the macro with
    the emitter bound to its first parameter."""

    def __init__(self, func):
        self.func = func
        self.macro = None
        self.self_name = next(iter(inspect.signature(func).parameters))

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        if self.macro is None:
            self.macro = T.macro(self.func)
        scope = collections.ChainMap({self.self_name: obj}, self.macro.scope)
        return dataclasses.replace(self.macro, func=types.MethodType(self.func, obj), scope=scope)


class _fragment_op(_macro_method):  # noqa: N801 - used as a decorator
    """An emitter method that reads or writes per-thread MMA fragments (``fragments``: parameter ->
    role A, B or C): in a kernel, ``emitter.ldmatrix_a(...)`` is the primitive
    ``tensor_core_fragments`` (frontend/rules_fragments.py), handed the exact macro and the method's
    tile form (``tile``: the method of the same signature on block tiles, or None).  ``atoms``
    (``(m_param, n_param, method)``): loops over every atom row and column around this operation alone
    are ``method`` with its other arguments (``mma_atom`` over all atoms is ``mma``)."""

    def __init__(self, fragments: dict, tile: str | None = None, atoms: tuple | None = None):
        self.fragments, self.tile, self.atoms = fragments, tile, atoms

    def __call__(self, func):
        super().__init__(func)
        return self

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        call = obj.__dict__.get(self.name)  # one call object per emitter and method
        if call is None:
            call = obj.__dict__[self.name] = FragmentCall(self, obj)
        return call


class FragmentCall:
    """``emitter.<fragment op>`` as a kernel value: bound by the ``tensor_core_fragments`` rule."""

    __t2t__ = "tensor_core_fragments"

    def __init__(self, op: _fragment_op, emitter):
        self.name, self.fragments, self.emitter, self.atoms = op.name, op.fragments, emitter, op.atoms
        self.exact = _macro_method.__get__(op, emitter)
        self.tile = getattr(emitter, op.tile) if op.tile is not None else None
        self.signature = inspect.signature(types.MethodType(op.func, emitter))

        def call(*args, _op=self, **kwargs):  # the binder hands the rule these three
            raise T.KernelOnlyError(f"{self.name} can only be called inside a kernel body")

        self.__wrapped__ = call

    def __call__(self, *args, **kwargs):
        raise T.KernelOnlyError(
            f"TensorCoreIntrinEmitter.{self.name} can only be used inside a @T.prim_func or @tilelang.jit kernel body"
        )


class TensorCoreIntrinEmitter:
    """TileLang's per-warp MMA emitter (``tilelang.cuda.intrinsics.TensorCoreIntrinEmitter``): the
    same constructor, sizes and methods.  The block's warps form ``block_row_warps x
    block_col_warps``; each warp's tile is ``warp_row_tiles x warp_col_tiles``, made of
    ``warp_rows x warp_cols`` atoms of ``16 x n_dim`` (n_dim is 16, or 8 when warp_col_tiles is not a
    multiple of 16), over k steps of ``micro_size_k`` (256 / operand bits, at most ``chunk``)."""

    M_DIM = 16
    n_dim = 16
    WARP_SIZE = 32
    is_m_first = False

    def __init__(
        self,
        a_dtype="float16",
        b_dtype="float16",
        accum_dtype="float16",
        a_transposed: bool = False,
        b_transposed: bool = False,
        block_row_warps: int = 2,
        block_col_warps: int = 2,
        warp_row_tiles: int = 8,
        warp_col_tiles: int = 8,
        chunk: int = 16,
        reduce_k: int = 1,
        num_elems_per_byte: int = 1,
        is_m_first: bool | None = False,
        thread_var=None,
    ):
        self.a_dtype, self.b_dtype, self.accum_dtype = to_dtype(a_dtype), to_dtype(b_dtype), to_dtype(accum_dtype)
        self.a_transposed, self.b_transposed = a_transposed, b_transposed
        self.block_row_warps, self.block_col_warps = block_row_warps, block_col_warps
        self.warp_row_tiles, self.warp_col_tiles = warp_row_tiles, warp_col_tiles
        self.chunk = chunk
        bits = self.a_dtype.bits
        if bits == 64:
            raise NotImplementedError(f"TensorCoreIntrinEmitter: {_FP64}")
        self.k_dim = min(256 // bits, chunk)
        if self.k_dim not in (8, 16, 32):
            raise ValueError(f"TensorCoreIntrinEmitter: unsupported k step {self.k_dim} for {self.a_dtype}")
        if warp_row_tiles < 16 or warp_row_tiles % 16:
            raise ValueError(f"warp_row_tiles must be a multiple of 16, got {warp_row_tiles}")
        if warp_col_tiles < 8 or warp_col_tiles % 8:
            raise ValueError(f"warp_col_tiles must be a multiple of 8, got {warp_col_tiles}")
        self.warp_rows = warp_row_tiles // self.M_DIM
        self.n_dim = 16 if warp_col_tiles % 16 == 0 else 8
        self.warp_cols = warp_col_tiles // self.n_dim
        self.micro_size_x, self.micro_size_y, self.micro_size_k = self.M_DIM, self.n_dim, self.k_dim
        self.local_size_a = self.M_DIM * self.k_dim // self.WARP_SIZE
        self.local_size_b = self.n_dim * self.k_dim // self.WARP_SIZE
        self.local_size_out = self.M_DIM * self.n_dim // self.WARP_SIZE
        self.mma_prefix = f"m16n8k{self.k_dim}"
        if is_m_first is not None:
            self.is_m_first = is_m_first
        if reduce_k != 1:
            raise NotImplementedError("TensorCoreIntrinEmitter: reduce_k > 1 is not supported by tile2triton")
        self.reduce_k = reduce_k
        self.threads = self.WARP_SIZE * block_row_warps * block_col_warps * reduce_k
        self.num_elems_per_byte = num_elems_per_byte
        self.thread_var = thread_var

    # ---- sizes
    @property
    def mma_num_inst_m(self) -> int:
        """Atoms along M in one warp's tile."""
        return self.warp_rows

    @property
    def mma_num_inst_n(self) -> int:
        """Atoms along N in one warp's tile."""
        return self.warp_cols

    # ---- fragment layouts: (lane, element) -> (row, col) in the 16 x k tile of an atom's operand
    # (row: m for A, n for B; col: k), and in the 16 x n_dim tile of its accumulator
    @_macro_method
    def a_layout(self, lane, e):
        if self.k_dim == 8:  # 32-bit operands (tf32): m16n8k8
            return 8 * (e % 2) + lane // 4, 4 * (e // 2) + lane % 4
        if self.k_dim == 16:  # 16-bit operands: m16n8k16
            return lane // 4 + 8 * (e % 4 // 2), (lane % 4) * 2 + e % 2 + 8 * (e // 4)
        return 8 * (e % 8 // 4) + lane // 4, 16 * (e // 8) + (lane % 4) * 4 + e % 4  # 8-bit: m16n8k32

    @_macro_method
    def b_layout(self, lane, e):
        if self.k_dim == 8:
            return 8 * (e // 2) + lane // 4, 4 * (e % 2) + lane % 4
        if self.k_dim == 16:
            return lane // 4 + 8 * (e // 4), (lane % 4) * 2 + e % 2 + 8 * (e % 4 // 2)
        return 8 * (e // 8) + lane // 4, 16 * (e % 8 // 4) + (lane % 4) * 4 + e % 4

    @_macro_method
    def c_layout(self, lane, e):
        """m16n8's four accumulator elements, or two such atoms side by side (eight, n_dim 16)."""
        return 8 * (e % 4 // 2) + lane // 4, 8 * (e // 4) + (lane % 4) * 2 + e % 2

    # ---- thread binding
    @_macro_method
    def get_thread_binding(self):
        if self.thread_var is None:
            return T.get_thread_binding()
        return self.thread_var

    @_macro_method
    def extract_thread_binding(self, thread_id, is_m_first=None):
        """(lane, warp_n, warp_m) of a thread, warps numbered M first or N first."""
        m_first = self.is_m_first if is_m_first is None else is_m_first
        if m_first:
            return (
                thread_id % 32,
                (thread_id // 32) % self.block_col_warps,
                (thread_id // (32 * self.block_col_warps)) % self.block_row_warps,
            )
        return (
            thread_id % 32,
            (thread_id // (32 * self.block_row_warps)) % self.block_col_warps,
            (thread_id // 32) % self.block_row_warps,
        )

    # ---- shared -> fragments
    @_fragment_op({"A_local_buf": "A"}, tile="_tile_ldmatrix_a")
    def ldmatrix_a(self, A_local_buf, A_shared_buf, ki, rk=0):  # noqa: N803 - TileLang's names
        """This thread's A fragments of k step ``ki``, one per atom row of its warp's tile."""
        tx = self.get_thread_binding()
        lane, _, warp_m = self.extract_thread_binding(tx)
        for i in T.unroll(self.warp_rows):
            for e in T.unroll(self.local_size_a):
                row, col = self.a_layout(lane, e)
                m = warp_m * self.warp_row_tiles + i * 16 + row
                k = rk * self.chunk + ki * self.k_dim + col
                if self.a_transposed:
                    A_local_buf[i * self.local_size_a + e] = A_shared_buf[k, m]
                else:
                    A_local_buf[i * self.local_size_a + e] = A_shared_buf[m, k]

    @_fragment_op({"B_local_buf": "B"}, tile="_tile_ldmatrix_b")
    def ldmatrix_b(self, B_local_buf, B_shared_buf, ki, rk=0):  # noqa: N803
        """This thread's B fragments of k step ``ki``, one per atom column of its warp's tile."""
        tx = self.get_thread_binding()
        lane, warp_n, _ = self.extract_thread_binding(tx)
        for j in T.unroll(self.warp_cols):
            for e in T.unroll(self.local_size_b):
                row, col = self.b_layout(lane, e)
                n = warp_n * self.warp_col_tiles + j * self.n_dim + row
                k = rk * self.chunk + ki * self.k_dim + col
                if self.b_transposed:
                    B_local_buf[j * self.local_size_b + e] = B_shared_buf[n, k]
                else:
                    B_local_buf[j * self.local_size_b + e] = B_shared_buf[k, n]

    # ---- the product
    @_fragment_op({"A_local_buf": "A", "B_local_buf": "B", "C_local_buf": "C"}, tile="_tile_mma_atom",
                  atoms=("inst_m_idx", "inst_n_idx", "mma"))  # fmt: skip
    def mma_atom(self, A_local_buf, B_local_buf, C_local_buf, inst_m_idx, inst_n_idx, k_inner=0):  # noqa: N803
        """C atom (inst_m_idx, inst_n_idx) += A atom row inst_m_idx x B atom column inst_n_idx, in
        every warp."""
        self._atom_product(A_local_buf, B_local_buf, C_local_buf, inst_m_idx, inst_n_idx)

    @_macro_method
    def _atom_product(self, A_local_buf, B_local_buf, C_local_buf, inst_m_idx, inst_n_idx):  # noqa: N803
        """One atom in every warp: the fragments are staged in shared tiles and multiplied with T.gemm."""
        tx = self.get_thread_binding()
        lane, warp_n, warp_m = self.extract_thread_binding(tx)
        a_stage = T.alloc_shared((self.block_row_warps * 16, self.k_dim), self.a_dtype)
        b_stage = T.alloc_shared((self.block_col_warps * self.n_dim, self.k_dim), self.b_dtype)
        c_atoms = T.alloc_fragment((self.block_row_warps * 16, self.block_col_warps * self.n_dim), self.accum_dtype)
        c_stage = T.alloc_shared((self.block_row_warps * 16, self.block_col_warps * self.n_dim), self.accum_dtype)
        for e in T.unroll(self.local_size_a):
            row, col = self.a_layout(lane, e)
            a_stage[warp_m * 16 + row, col] = A_local_buf[inst_m_idx * self.local_size_a + e]
        for e in T.unroll(self.local_size_b):
            row, col = self.b_layout(lane, e)
            b_stage[warp_n * self.n_dim + row, col] = B_local_buf[inst_n_idx * self.local_size_b + e]
        T.sync_threads()
        T.gemm(a_stage, b_stage, c_atoms, transpose_B=True, clear_accum=True)
        T.copy(c_atoms, c_stage)
        T.sync_threads()
        for e in T.unroll(self.local_size_out):
            row, col = self.c_layout(lane, e)
            C_local_buf[(inst_m_idx * self.warp_cols + inst_n_idx) * self.local_size_out + e] += c_stage[
                warp_m * 16 + row, warp_n * self.n_dim + col
            ]
        T.sync_threads()  # the next atom overwrites the staging tiles

    @_fragment_op({"A_local_buf": "A", "B_local_buf": "B", "C_local_buf": "C"}, tile="_tile_mma")
    def mma(self, A_local_buf, B_local_buf, C_local_buf, k_inner=0):  # noqa: N803
        """Every atom of the warp's tile (TileLang's ``mma``)."""
        for i, j in T.grid(self.warp_rows, self.warp_cols):
            self._atom_product(A_local_buf, B_local_buf, C_local_buf, i, j)

    # ---- fragments -> shared or global
    @_fragment_op({"C_local_buf": "C"}, tile="_tile_stmatrix")
    def stmatrix(self, C_local_buf, C_buf, pid_m=None, pid_n=None):  # noqa: N803
        """This thread's C elements into ``C_buf``: a 2-D tile of the block, its 4-D form
        ``[atom row, atom column, 16, n_dim]``, or (``pid_m``/``pid_n`` given) global memory at
        block (pid_m, pid_n)."""
        tx = self.get_thread_binding()
        lane, warp_n, warp_m = self.extract_thread_binding(tx)
        for i, j in T.grid(self.warp_rows, self.warp_cols):
            for e in T.unroll(self.local_size_out):
                row, col = self.c_layout(lane, e)
                value = C_local_buf[(i * self.warp_cols + j) * self.local_size_out + e]
                atom_m = warp_m * self.warp_rows + i
                atom_n = warp_n * self.warp_cols + j
                if pid_m is not None:
                    block_m = self.block_row_warps * self.warp_rows
                    block_n = self.block_col_warps * self.warp_cols
                    C_buf[(pid_m * block_m + atom_m) * 16 + row, (pid_n * block_n + atom_n) * self.n_dim + col] = value
                elif len(C_buf.shape) == 4:
                    C_buf[atom_m, atom_n, row, col] = value
                else:
                    C_buf[atom_m * 16 + row, atom_n * self.n_dim + col] = value

    # ---- tile forms: the same operations on the block tiles the fragments stand for
    @property
    def block_m(self) -> int:
        return self.block_row_warps * self.warp_row_tiles

    @property
    def block_n(self) -> int:
        return self.block_col_warps * self.warp_col_tiles

    def fragment_tile(self, role: str) -> tuple[tuple, object, int]:
        """(shape, dtype, elements per thread) of the block tile that role ``A``, ``B`` or ``C``'s
        per-thread fragments together hold: A's k step as shared holds it (``block_m x k``, or
        ``k x block_m`` transposed), B's (``k x block_n``, or ``block_n x k`` transposed), C's
        ``block_m x block_n``.  The A (B) fragments of warps in one warp row (column) are copies."""
        k = self.k_dim
        if role == "A":
            shape = (k, self.block_m) if self.a_transposed else (self.block_m, k)
            return shape, self.a_dtype, self.warp_rows * self.local_size_a
        if role == "B":
            shape = (self.block_n, k) if self.b_transposed else (k, self.block_n)
            return shape, self.b_dtype, self.warp_cols * self.local_size_b
        return (self.block_m, self.block_n), self.accum_dtype, self.warp_rows * self.warp_cols * self.local_size_out

    @_macro_method
    def _tile_ldmatrix_a(self, A_tile, A_shared_buf, ki, rk=0):  # noqa: N803
        """k step ``ki``'s slice of A (its bounds written out, not bound to a name: the k-loop
        rewrite of frontend/rules_fragments.py reads how they move with the loop)."""
        if self.a_transposed:
            T.copy(A_shared_buf[rk * self.chunk + ki * self.k_dim : rk * self.chunk + (ki + 1) * self.k_dim,
                                0 : self.block_m], A_tile)  # fmt: skip
        else:
            T.copy(A_shared_buf[0 : self.block_m,
                                rk * self.chunk + ki * self.k_dim : rk * self.chunk + (ki + 1) * self.k_dim], A_tile)  # fmt: skip

    @_macro_method
    def _tile_ldmatrix_b(self, B_tile, B_shared_buf, ki, rk=0):  # noqa: N803
        if self.b_transposed:
            T.copy(B_shared_buf[0 : self.block_n,
                                rk * self.chunk + ki * self.k_dim : rk * self.chunk + (ki + 1) * self.k_dim], B_tile)  # fmt: skip
        else:
            T.copy(B_shared_buf[rk * self.chunk + ki * self.k_dim : rk * self.chunk + (ki + 1) * self.k_dim,
                                0 : self.block_n], B_tile)  # fmt: skip

    @_macro_method
    def _tile_mma(self, A_tile, B_tile, C_tile, k_inner=0):  # noqa: N803
        T.gemm(A_tile, B_tile, C_tile, transpose_A=self.a_transposed, transpose_B=self.b_transposed)

    @_macro_method
    def _tile_mma_atom(self, A_tile, B_tile, C_tile, inst_m_idx, inst_n_idx, k_inner=0):  # noqa: N803
        """One atom of every warp's tile, with whole tiles (the atom is at a run-time offset): the
        product of the whole tiles added where C's rows and columns are that atom's."""
        product = T.alloc_fragment(C_tile.shape, C_tile.dtype)
        T.gemm(A_tile, B_tile, product, transpose_A=self.a_transposed, transpose_B=self.b_transposed,
               clear_accum=True)  # fmt: skip
        for i, j in T.Parallel(self.block_m, self.block_n):
            if (i % self.warp_row_tiles) // 16 == inst_m_idx and (j % self.warp_col_tiles) // self.n_dim == inst_n_idx:
                C_tile[i, j] = C_tile[i, j] + product[i, j]

    @_macro_method
    def _tile_stmatrix(self, C_tile, C_buf, pid_m=None, pid_n=None):  # noqa: N803
        bm, bn = self.block_m, self.block_n
        if pid_m is not None:
            T.copy(C_tile, C_buf[pid_m * bm : pid_m * bm + bm, pid_n * bn : pid_n * bn + bn])
        elif len(C_buf.shape) == 4:
            for i, j in T.Parallel(bm, bn):
                C_buf[i // 16, j // self.n_dim, i % 16, j % self.n_dim] = C_tile[i, j]
        else:
            T.copy(C_tile, C_buf[0:bm, 0:bn])

    # ---- layout hints (T.annotate_layout): Triton chooses register layouts itself
    def make_mma_load_layout(self, local_buf, matrix="A"):
        from ....layout import Fragment

        return Fragment(local_buf, matrix)

    def make_mma_store_layout(self, local_buf):
        from ....layout import Fragment

        return Fragment(local_buf)
