"""``T`` tile operations: copies, fills, gemms, reductions and scans, atomics and reducers,
transpose, im2col, reshapes and views, ``T.make_tensor``, ``T.match_buffer``.
"""

from __future__ import annotations

from ._primitive import _kernel_only


# --- tile operations ------------------------------------------------------------------------
@_kernel_only("copy")
def copy(
    src,
    dst,
    *,
    coalesced_width=None,
    disable_tma=False,
    eviction_policy=None,
    prefer_instruction=None,
    annotations=None,
    loop_layout=None,
):
    """Copy a region between any two scopes, casting to dst's dtype, masking out-of-bounds."""


@_kernel_only("reducer_init")
def reducer_init(reducer, init=None):
    """Open a reducer epoch: the reduction starts from ``init`` (default: the op's identity)."""


@_kernel_only("reducer_update")
def reducer_update(target, value):
    """Contribute ``value`` to ``acc[indices]`` (``target``) of a reducer."""


@_kernel_only("finalize_reducer")
def finalize_reducer(reducer, dst=None, batch=1, annotations=None):
    """Close a reducer epoch; with ``dst``, copy the result there (else the reducer holds it)."""


@_kernel_only("fill")
def fill(buffer, value, annotations=None):
    """Set a buffer or region to ``value``."""


@_kernel_only("clear")
def clear(buffer, annotations=None):
    """``T.fill(buffer, 0)``."""


@_kernel_only("gemm")
def gemm(
    A,
    B,
    C,
    transpose_A=False,
    transpose_B=False,
    policy=None,
    clear_accum=False,
    k_pack=1,
    wg_wait=0,
    mbar=None,
    annotations=None,
):  # noqa: N803
    """``C (+)= op(A) @ op(B)``, accumulating in C's dtype."""


@_kernel_only("wgmma_gemm")
def wgmma_gemm(
    A,
    B,
    C,
    transpose_A=False,
    transpose_B=False,
    policy=None,
    clear_accum=False,
    annotations=None,
):  # noqa: N803
    """TileLang's explicit Hopper WGMMA ``T.gemm`` (no implicit wait): the same product here, since
    ``tl.dot``'s result is complete when it is read (``T.wait_wgmma`` has nothing to wait for)."""


@_kernel_only("dp4a")
def dp4a(A, B, C):  # noqa: N803
    """``C[0] += sum(A[k] * B[k] for k < 4)``: four int8 products accumulated in int32, from the
    element of ``A`` / ``B`` / ``C`` given (or a buffer's first) and the three after it."""


@_kernel_only("gemm_sp")
def gemm_sp(
    A_sparse,
    E,
    B,
    C,
    transpose_A=False,
    transpose_E=False,
    transpose_B=False,
    policy=None,
    clear_accum=False,
    k_pack=1,
    wg_wait=0,
    annotations=None,
):  # noqa: N803
    """``C (+)= op(decompress(A_sparse, E)) @ op(B)``: 2:4 structured-sparse A with its metadata E."""


gemm_sp_v2 = gemm_sp  # TileLang's older name


@_kernel_only("reduce")
def reduce(buffer, out, reduce_type, dim=-1, clear=True, batch=1, nan_propagate=False, annotations=None):
    """Reduce ``buffer`` along ``dim`` into ``out``."""


@_kernel_only("reduce_sum")
def reduce_sum(buffer, out, dim=-1, clear=True, batch=1, annotations=None):
    """Sum along ``dim``; ``clear=False`` adds to the old ``out``."""


@_kernel_only("reduce_max")
def reduce_max(buffer, out, dim=-1, clear=True, batch=1, nan_propagate=False, annotations=None):
    """Max along ``dim``; ``clear=False`` combines with the old ``out``."""


@_kernel_only("reduce_min")
def reduce_min(buffer, out, dim=-1, clear=True, batch=1, nan_propagate=False, annotations=None):
    """Min along ``dim``."""


@_kernel_only("reduce_bitand")
def reduce_bitand(buffer, out, dim=-1, clear=True, batch=1, annotations=None):
    """Bitwise and along ``dim`` (integers); ``clear=False`` combines with the old ``out``."""


@_kernel_only("reduce_bitor")
def reduce_bitor(buffer, out, dim=-1, clear=True, batch=1, annotations=None):
    """Bitwise or along ``dim`` (integers); ``clear=False`` combines with the old ``out``."""


@_kernel_only("reduce_bitxor")
def reduce_bitxor(buffer, out, dim=-1, clear=True, batch=1, annotations=None):
    """Bitwise xor along ``dim`` (integers); ``clear=False`` combines with the old ``out``."""


@_kernel_only("reduce_absmax")
def reduce_absmax(buffer, out, dim=-1, clear=True, batch=1, nan_propagate=False, annotations=None):
    """Max of absolute values along ``dim``."""


@_kernel_only("reduce_abssum")
def reduce_abssum(buffer, out, dim=-1, batch=1, annotations=None):
    """Sum of absolute values along ``dim`` (always clears)."""


@_kernel_only("cumsum")
def cumsum(src, dst=None, dim=0, reverse=False, annotations=None):
    """Inclusive prefix sum along ``dim``."""


@_kernel_only("atomic_add")
def atomic_add(dst, value, memory_order=None, return_prev=False, use_tma=False, annotations=None):
    """Atomic ``dst += value`` (element or tile form)."""


@_kernel_only("atomic_max")
def atomic_max(dst, value, memory_order=None, return_prev=False, annotations=None):
    """Atomic ``dst = max(dst, value)``."""


@_kernel_only("atomic_min")
def atomic_min(dst, value, memory_order=None, return_prev=False, annotations=None):
    """Atomic ``dst = min(dst, value)``."""


@_kernel_only("atomic_addx2")
def atomic_addx2(dst, value, return_prev=False):
    """Atomic add of two consecutive elements (``dst[..., j:j+2] += value[..., j:j+2]``)."""


@_kernel_only("atomic_addx4")
def atomic_addx4(dst, value, return_prev=False):
    """Atomic add of four consecutive elements."""


@_kernel_only("atomic_or")
def atomic_or(dst, value, memory_order=None):
    """Atomic ``dst |= value``; returns the previous value."""


@_kernel_only("atomic_load")
def atomic_load(src, memory_order="seq_cst"):
    """Read ``src`` (one element) atomically."""


@_kernel_only("atomic_store")
def atomic_store(dst, src, memory_order="seq_cst"):
    """Write ``src`` to ``dst`` (one element) atomically."""


class GemmWarpPolicy:
    """TileLang's warp partition of a gemm's C tile: performance only, no effect under Triton."""

    Square, FullRow, FullCol = 0, 1, 2


@_kernel_only("transpose")
def transpose(src, dst, annotations=None):
    """``dst[j, i] = src[i, j]`` for 2-D shared/fragment tiles."""


@_kernel_only("im2col")
def im2col(img, col, nhw_step, c_step, kernel, stride, dilation, pad, eviction_policy=None, annotations=None):
    """One ``(block_m, block_k)`` tile of the NHWC im2col matrix of ``img`` (square kernel)."""


c2d_im2col = im2col


@_kernel_only("reshape")
def reshape(src, shape):
    """A same-storage view of a global tensor with another shape."""


@_kernel_only("view")
def view(src, shape=None, dtype=None):
    """A same-storage view of a buffer with another shape and/or dtype of the same total bits."""


@_kernel_only("make_tensor")
def make_tensor(ptr, shape, dtype="float32", strides=None):
    """A global tensor over a raw address: a ``T.ptr`` parameter, or an int64 address read in the
    kernel (an element of a ``T.Tensor([G], T.ptr)`` table)."""


@_kernel_only("make_tensor_from_addr")
def make_tensor_from_addr(addr, shape, dtype="float32", strides=None, storage_scope="global"):
    """``T.make_tensor`` of an address expression (TileLang's spelling for computed addresses)."""


@_kernel_only("match_buffer")
def match_buffer(param, shape=None, dtype="float32", data=None, strides=None, elem_offset=None, scope="global",
                 align=-1, offset_factor=0, buffer_type="default", axis_separators=None):  # fmt: skip
    """Bind a ``T.handle`` parameter to a tensor of this shape and dtype (checked at each call)."""


@_kernel_only("cummax")
def cummax(src, dst=None, dim=0, reverse=False, annotations=None):
    """Inclusive running maximum along ``dim``."""
