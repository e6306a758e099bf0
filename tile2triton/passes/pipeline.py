"""The passes a kernel goes through before lowering, named in order, in two lists:

- ``PASSES`` run on every bound PrimFunc, on every path that binds a kernel (``tilelang.compile``,
  the lazy ``@tilelang.jit`` factory, eager-style kernels): what TileLang rejects, and the one
  rewrite every route needs (a kernel split at its grid barriers);
- ``KERNEL_PASSES`` are the rewrites the ``tl`` lowering applies to each kernel of the function
  (codegen/emit.py calls ``run_kernel_passes``), each taken when one of its ``LoweringOptions``
  switches is on (settings.py names them), or always where it has none; a Gluon route plans on the
  kernel as bound."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import ir
from .analysis import launch_warps
from .branch_copies import merge_branch_copies
from .check import check
from .column_chunks import chunk_columns
from .column_split import split_columns
from .compact_guarded import compact_guarded_loops
from .dead_parts import drop_dead_parts
from .forward_rings import forward_rings
from .forward_shared import forward_shared
from .global_copy_chunks import chunk_global_copies
from .grid_split import split_grid_barriers
from .order_global import order_global_accesses
from .parallel_updates import accumulate_parallel_updates
from .parallel_vars import privatize_parallel_vars
from .pow2_split import split_pow2_dims
from .prefetch_indices import prefetch_indices
from .row_once import load_rows_once
from .row_split import split_rows_for
from .staged_atomics import stage_atomics
from .thread_copies import rewrite_thread_copies

# (name, pass): each pass takes the function, may rewrite it in place, and raises TileLangCompileError
# at the user's line for what TileLang rejects
PASSES = (
    ("split-grid-barriers", split_grid_barriers),  # T.sync_grid / cluster barriers: consecutive launches
    ("privatize-parallel-vars", privatize_parallel_vars),  # a scalar each T.Parallel iteration writes: a copy each
    ("accumulate-parallel-updates", accumulate_parallel_updates),  # C[i] += A[i, k] over T.Parallel(M, K): a sum
    ("check", check),  # what TileLang rejects or warns about
)


def run_passes(func: ir.PrimFunc) -> ir.PrimFunc:
    for _name, run in PASSES:
        run(func)
    return func


@dataclass(frozen=True)
class KernelRewrite:
    """What a kernel pass hands on: the kernel (the same object when nothing applied) and the shared
    buffers its new block-level copies store, which the lowering may keep in global scratch."""

    kernel: ir.Kernel
    stored: frozenset = frozenset()


def _split_rows(kernel: ir.Kernel, options: Any) -> KernelRewrite:
    # an attention forward on a grid under half a wave: each block's query rows as two blocks
    return KernelRewrite(
        split_rows_for(kernel, options.row_split, options.arch, options.sms, options.row_split_backward)
    )


def _drop_dead_parts(kernel: ir.Kernel, options: Any) -> KernelRewrite:
    # a 256-column tile over a tensor of 128 columns computed 128 wide: the half every store masks goes
    return KernelRewrite(drop_dead_parts(kernel))


def _split_pow2_dims(kernel: ir.Kernel, options: Any) -> KernelRewrite:
    # a 192-wide tile as 128 + 64, not 256 with padding
    return KernelRewrite(split_pow2_dims(kernel) or kernel)


def _split_columns(kernel: ir.Kernel, options: Any) -> KernelRewrite:
    # MLA's Q_shared[:, :512] / [:, 512:] as two buffers, not one 576-column buffer padded to 1024
    return KernelRewrite(split_columns(kernel)[0])


def _staged_atomics(kernel: ir.Kernel, options: Any) -> KernelRewrite:
    # atomics that read a staging buffer read the stored values (sparse MLA bwd's dKV epilogue)
    return KernelRewrite(stage_atomics(kernel))


def _chunk_columns(kernel: ir.Kernel, options: Any) -> KernelRewrite:
    # past the register budget: 512 head dims as four 128-column chunks, the gemms of a chunk side by side
    return KernelRewrite(chunk_columns(kernel, launch_warps(options, kernel.threads)))


def _thread_copies(kernel: ir.Kernel, options: Any) -> KernelRewrite:
    """A warp-specialized producer's per-thread copy nests as block copies (THREAD_COPY_TILES), and
    its shared ring forwarded into the consumers' reads (FORWARD_SHARED), which needs those copies
    first; under FORWARD_SHARED alone, where nothing is forwarded the nests stay as written."""
    if not kernel.thread_vars:
        return KernelRewrite(kernel)
    stored: set = set()
    copies = rewrite_thread_copies(kernel, stored)
    if options.forward_shared:
        forwarded = forward_shared(copies)
        if forwarded is not copies:
            return KernelRewrite(forwarded)  # the producer's buffers are gone
    if options.thread_copy_tiles:
        return KernelRewrite(copies, frozenset(stored))
    return KernelRewrite(kernel)


def _forward_rings(kernel: ir.Kernel, options: Any) -> KernelRewrite:
    # a loop pipelined by hand over a ring of shared slots reads each slot's tile where it is made
    return KernelRewrite(forward_rings(kernel))


def _merge_branch_copies(kernel: ir.Kernel, options: Any) -> KernelRewrite:
    # if/else branches copying one tensor's tiles into one buffer from two places: one copy, its start picked
    return KernelRewrite(merge_branch_copies(kernel))


def _load_rows_once(kernel: ir.Kernel, options: Any) -> KernelRewrite:
    # a row of an index list that several T.Parallel statements read: one load into a fragment
    return KernelRewrite(load_rows_once(kernel, launch_warps(options, kernel.threads)))


def _compact_guarded_loops(kernel: ir.Kernel, options: Any) -> KernelRewrite:
    # a pipelined loop whose body is one masked branch: over its active iterations, unguarded
    return KernelRewrite(compact_guarded_loops(kernel))


def _prefetch_indices(kernel: ir.Kernel, options: Any) -> KernelRewrite:
    # a loop's index element (k = block_offset[bi]) loaded an iteration ahead, carried in a register
    return KernelRewrite(prefetch_indices(kernel))


def _global_copy_chunks(kernel: ir.Kernel, options: Any) -> KernelRewrite:
    # a global-to-global copy larger than the registers hold: a loop of exact parts, not one padded tile
    return KernelRewrite(chunk_global_copies(kernel, launch_warps(options, kernel.threads), options.warp_size))


def _order_global_accesses(kernel: ir.Kernel, options: Any) -> KernelRewrite:
    # a barrier where a statement could overtake another's access to one global buffer
    return KernelRewrite(order_global_accesses(kernel))


# (name, the LoweringOptions switches any of which turns it on (none: always), pass)
KERNEL_PASSES: tuple[tuple[str, tuple[str, ...], Callable[[ir.Kernel, Any], KernelRewrite]], ...] = (
    ("drop-dead-parts", ("dead_parts",), _drop_dead_parts),
    ("split-rows", (), _split_rows),
    ("split-pow2-dims", ("split_dims",), _split_pow2_dims),
    ("split-columns", ("column_split",), _split_columns),
    ("staged-atomics", ("staged_atomics",), _staged_atomics),
    ("column-chunks", ("column_chunks",), _chunk_columns),
    ("thread-copies", ("thread_copy_tiles", "forward_shared"), _thread_copies),
    ("forward-rings", ("forward_rings",), _forward_rings),
    ("merge-branch-copies", ("branch_copies",), _merge_branch_copies),
    ("row-once", ("row_once",), _load_rows_once),
    ("compact-guarded-loops", ("compact_guarded_loops",), _compact_guarded_loops),
    ("prefetch-indices", ("prefetch_indices",), _prefetch_indices),
    ("global-copy-chunks", ("global_copy_chunks",), _global_copy_chunks),
    ("order-global-accesses", (), _order_global_accesses),
)


def run_kernel_passes(kernel: ir.Kernel, options: Any) -> KernelRewrite:
    """``kernel`` through every kernel pass ``options`` turns on; the buffers the passes stored are
    gathered (a later pass that replaces the kernel keeps the earlier ones' list)."""
    stored: frozenset = frozenset()
    for _name, switches, run in KERNEL_PASSES:
        if not switches or any(getattr(options, s) for s in switches):
            rewrite = run(kernel, options)
            kernel, stored = rewrite.kernel, stored | rewrite.stored
    return KernelRewrite(kernel, stored)
