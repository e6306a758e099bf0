"""``T`` names that order or place work: warp specialization, barriers, TMA copies and stores, and
the annotations with no effect on results (swizzle, layouts, register hints).
"""

from __future__ import annotations

from ._primitive import _kernel_only


# --- warp specialization (Hopper): sections ordered by their barriers, see frontend/warp_sections.py ----
@_kernel_only("ws")
def ws(*warp_group_idx):
    """``with T.ws(k):`` statements of warp group k (threads 128k .. 128k + 127)."""


WarpSpecialize = ws


@_kernel_only("alloc_barrier")
def alloc_barrier(arrive_count):
    """mbarriers (one per entry of a list of arrive counts), indexed ``mbars[i]``."""


@_kernel_only("barrier_wait")
def barrier_wait(mbarrier, parity):
    """Wait until the barrier's phase of this parity completes."""


@_kernel_only("mbarrier_wait_parity")
def mbarrier_wait_parity(mbarrier, parity):
    """Wait until the barrier's phase of this parity completes."""


@_kernel_only("barrier_arrive")
def barrier_arrive(mbarrier):
    """Arrive at the barrier."""


@_kernel_only("mbarrier_arrive")
def mbarrier_arrive(mbarrier, cta_id=None):
    """Arrive at the barrier."""


@_kernel_only("tma_copy")
def tma_copy(src, dst, *, barrier=None, cluster_mask=None, leader_scope_threads=None, eviction_policy=None,
             annotations=None):  # fmt: skip
    """A copy whose completion a barrier signals: here, a T.copy."""


@_kernel_only("access_ptr")
def access_ptr(base, access_type="r", *extents, offset=0, extent=None, ignore_last_ndim=0):
    """The address of ``base`` (``buf[i, j]``, a region or a buffer) for T.ptx_cp_async."""


@_kernel_only("tvm_access_ptr")
def tvm_access_ptr(ptype, data, offset, extent, rw_mask):
    """TVM's address of ``extent`` elements of a buffer's memory (``buf.data``) from the flat element
    ``offset``, for T.ptx_cp_async (``ptype``: ``T.type_annotation(dtype)``; ``rw_mask``: 1 read, 2 write)."""


def type_annotation(dtype):
    """TVM's typed null of ``dtype`` (``T.tvm_access_ptr``'s first operand): here the dtype itself."""
    from .dtypes import dtype as as_dtype

    return as_dtype(dtype)


@_kernel_only("ptx_cp_async")
def ptx_cp_async(dst_access_ptr, src_access_ptr, num_elems, predicate=None):
    """cp.async of ``num_elems`` consecutive elements: here, a copy that completes at once
    (zeros where ``predicate`` is false)."""


@_kernel_only("async_copy")
def async_copy(src, dst, *, coalesced_width=None, annotations=None, loop_layout=None):
    """A global -> shared copy through cp.async, committed as a group and not waited for.  Here the copy
    is complete when issued (Triton pipelines its loads itself), so every later read sees it."""


@_kernel_only("ptx_commit_group")
def ptx_commit_group():
    """Commits the thread's cp.async copies as a group; no effect here (the copies are complete when issued)."""


@_kernel_only("ptx_wait_group")
def ptx_wait_group(num):
    """Waits until at most ``num`` cp.async groups are pending; no effect here (none ever is)."""


@_kernel_only("cp_async_barrier_noinc")
def cp_async_barrier_noinc(barrier):
    """Arrive at the barrier once this thread's cp.async copies complete (at once, here)."""


@_kernel_only("tma_store_arrive")
def tma_store_arrive():
    """Commits the outstanding TMA stores as a group; no effect here (stores complete when issued)."""


@_kernel_only("tma_store_wait")
def tma_store_wait(count=0, read=True):
    """Waits for TMA store groups; no effect here (stores complete when issued)."""


@_kernel_only("fence_proxy_async")
def fence_proxy_async():
    """Orders shared-memory writes before TMA reads them; no effect here (copies are synchronous)."""


# --- annotations with no effect on results ----------------------------------------------------
@_kernel_only("use_swizzle")
def use_swizzle(panel_size, order="row", enable=True):
    """Block rasterization; a bijection on the grid, so results do not change."""


@_kernel_only("annotate_safe_value")
def annotate_safe_value(safe_value_map):
    """``{A: value}``: loads of the global tensor ``A`` outside its bounds read ``value`` instead of 0
    (in the whole block it is in: the T.Kernel, or a ``with T.sblock(...)``)."""


@_kernel_only("While")
def While(condition):  # noqa: N802 - TIR's frame name
    """TIR's ``with T.While(condition):`` loop frame: a ``while condition:`` loop (frontend/rules_scopes.py)."""


@_kernel_only("If")
def If(condition):  # noqa: N802 - TIR's frame name
    """TIR's ``with T.If(condition):`` frame, holding a ``with T.Then():`` and maybe a ``with T.Else():``:
    the if statement it is (frontend/rules_scopes.py)."""


@_kernel_only("Then")
def Then():  # noqa: N802 - TIR's frame name
    """The statements ``with T.If(condition):`` runs where the condition holds."""


@_kernel_only("Else")
def Else():  # noqa: N802 - TIR's frame name
    """The statements ``with T.If(condition):`` runs where the condition does not hold."""


# --- TVM's block scope: a lexical scope for annotations (frontend/rules_scopes.py) -----------
@_kernel_only("sblock")
def sblock(name_hint="", no_realize=False):
    """``with T.sblock("name"):`` statements run in place; annotations in it hold for the block."""


@_kernel_only("reads")
def reads(*buffer_slices):
    """A block's declared reads (TVM's analyses use them; no effect on results)."""


@_kernel_only("writes")
def writes(*buffer_slices):
    """A block's declared writes (TVM's analyses use them; no effect on results)."""


@_kernel_only("annotate_layout")
def annotate_layout(layout_map):
    """Shared/fragment layout hint; no effect on results."""


@_kernel_only("wait_wgmma")
def wait_wgmma(id):  # noqa: A002
    """Wait for outstanding WGMMA groups; no effect here (``T.wgmma_gemm`` lowers to ``tl.dot``,
    whose result is ready when used)."""


@_kernel_only("no_set_max_nreg")
def no_set_max_nreg():
    """Register-allocation hint; no effect on results."""


@_kernel_only("disable_warp_group_reg_alloc")
def disable_warp_group_reg_alloc():
    """TileLang's alias of T.no_set_max_nreg(); no effect on results."""


@_kernel_only("set_max_nreg")
def set_max_nreg(reg_count, is_inc):
    """``setmaxnreg`` for a warp group (warp specialization); no effect on results (Triton
    allocates registers itself)."""


@_kernel_only("inc_max_nreg")
def inc_max_nreg(reg_count):
    """T.set_max_nreg(reg_count, 1); no effect on results."""


@_kernel_only("dec_max_nreg")
def dec_max_nreg(reg_count):
    """T.set_max_nreg(reg_count, 0); no effect on results."""


@_kernel_only("annotate_producer_reg_dealloc")
def annotate_producer_reg_dealloc(reg_count=24):
    """Register budget of a warp-specialized producer; no effect on results."""


@_kernel_only("annotate_consumer_reg_alloc")
def annotate_consumer_reg_alloc(reg_count=240):
    """Register budget of a warp-specialized consumer; no effect on results."""


@_kernel_only("named_barrier_arrive")
def named_barrier_arrive(barrier_id, thread_count):
    """PTX ``bar.arrive``: the calling threads arrive at named barrier ``barrier_id`` (0-15), whose phase
    completes when ``thread_count`` threads have arrived, and go on without waiting; the waiting side
    calls ``T.sync_threads(barrier_id, thread_count)`` (``bar.sync``)."""


@_kernel_only("tvm_storage_sync")
def tvm_storage_sync(storage_scope):
    """TVM's storage barrier: ``"shared"`` (or ``"shared.dyn"``) is ``__syncthreads()``, ``"warp"`` nothing,
    ``"cluster"`` the cluster barrier."""


@_kernel_only("annotate_restrict_buffers")
def annotate_restrict_buffers(*buffers):
    """Marks buffers that may alias (TileLang drops their ``__restrict__``); no effect here: tile2triton's
    kernels never declare their pointers non-aliasing."""


@_kernel_only("pdl_trigger")
def pdl_trigger():
    """Programmatic dependent launch: lets the next kernel start early.  No effect: tile2triton launches
    without PDL, so the next kernel starts after this one ends (what the trigger at the latest allows)."""


@_kernel_only("pdl_sync")
def pdl_sync():
    """Programmatic dependent launch: waits for the previous kernel's writes.  No effect: without PDL a
    kernel starts after the previous one has ended, so its writes are visible already."""


@_kernel_only("annotate_l2_hit_ratio")
def annotate_l2_hit_ratio(l2_hit_ratio_map):
    """The share of a global tensor's accesses to keep persistent in L2 (a CUDA stream access-policy
    window); no effect on results (a cache hint)."""


@_kernel_only("annotate_min_blocks_per_sm")
def annotate_min_blocks_per_sm(n):
    """The ``minBlocksPerMultiprocessor`` of CUDA's ``__launch_bounds__`` (an occupancy hint); no effect
    on results (Triton chooses registers for its own num_warps / num_stages)."""


@_kernel_only("assume")
def assume(cond):
    """A fact the compiler may rely on (``T.assume(cta_id < 2)``); results do not depend on it."""


@_kernel_only("annotate_compile_flags")
def annotate_compile_flags(flags):
    """Extra nvcc flags of TileLang's CUDA build: kept in the function's attrs; there is no nvcc build here."""


@_kernel_only("import_source")
def import_source(source=None):
    """CUDA C source for ``T.call_extern``: ``None`` (a kernel whose fast path is off) does nothing, as in
    TileLang; a source is refused at the line (raw C/CUDA cannot run under Triton)."""


@_kernel_only("func_attr")
def func_attr(attrs):
    """TIR's function attributes (``T.func_attr({"tir.noalias": True})``): the hints that change no
    result (no aliasing, the vector width of copies, the function's name and target) are kept in the
    function's attrs; others (cluster shapes) are refused at the line."""


@_kernel_only("annotate_pass_configs")
def annotate_pass_configs(configs):
    """The kernel's own pass configs (``{PassConfigKey.TL_ENABLE_FAST_MATH: True}``), as if given to compile."""
