"""``T`` warp-level primitives (codegen/warp.py): lane/warp indices, warp reductions, shuffles,
matches and votes.
"""

from __future__ import annotations

from ._primitive import _kernel_only, _vote

# --- warp-level primitives (codegen/warp.py): threads grouped by their linear index ---------------
# ``tx + ty * X + tz * X * Y``, 32 to a warp, as on NVIDIA GPUs
_FULL_WARP_MASK = 0xFFFFFFFF


@_kernel_only("get_lane_idx")
def get_lane_idx(warp_size=None):
    """The current thread's lane: its linear thread index % ``warp_size`` (32)."""


@_kernel_only("get_warp_idx")
def get_warp_idx(warp_size=None):
    """The current thread's warp: its linear thread index // ``warp_size`` (32)."""


get_warp_idx_sync = get_warp_idx


@_kernel_only("get_warp_group_idx")
def get_warp_group_idx(warp_size=None, warps_per_group=None):
    """The current thread's warp group: linear thread index // (``warp_size`` * ``warps_per_group``), 32 * 4."""


@_kernel_only("shuffle_elect")
def shuffle_elect(thread_extent):
    """True in one thread (the first) of each group of ``thread_extent`` threads; 0: of the whole block."""


@_kernel_only("sync_warp")
def sync_warp(mask=None):
    """``__syncwarp``: lowered as T.sync_threads() (a block barrier orders at least what a warp's does)."""


def _warp_reduce(name: str):
    @_kernel_only(name)
    def fn(value):
        pass

    fn.__name__ = name
    fn.__doc__ = f"Every thread gets the {name[len('warp_reduce_') :]} of ``value`` over the threads of its warp."
    return fn


for _name in ("warp_reduce_sum", "warp_reduce_max", "warp_reduce_min", "warp_reduce_bitand", "warp_reduce_bitor"):
    globals()[_name] = _warp_reduce(_name)


@_kernel_only("shfl_sync")
def shfl_sync(value, srcLane, width=32, mask=_FULL_WARP_MASK):  # noqa: N803
    """``__shfl_sync``: ``value`` of lane ``srcLane % width`` of the thread's ``width``-lane segment."""


@_kernel_only("shfl_xor")
def shfl_xor(value, delta, width=32, mask=_FULL_WARP_MASK):
    """``__shfl_xor_sync``: ``value`` of lane ``lane ^ delta`` (own value if that lies in a later segment)."""


@_kernel_only("shfl_down")
def shfl_down(value, delta, width=32, mask=_FULL_WARP_MASK):
    """``__shfl_down_sync``: ``value`` of lane ``lane + delta`` (own value past the segment's end)."""


@_kernel_only("shfl_up")
def shfl_up(value, delta, width=32, mask=_FULL_WARP_MASK):
    """``__shfl_up_sync``: ``value`` of lane ``lane - delta`` (own value before the segment's start)."""


# TIR's builtins (TileLang re-exports them): ``lane`` is the source lane (``tvm_warp_shuffle``) or the delta
@_kernel_only("tvm_warp_shuffle")
def tvm_warp_shuffle(mask, value, lane, width, warp_size):
    """``__shfl_sync(mask, value, lane, width)``: ``value`` of lane ``lane % width`` of the ``width``-lane segment."""


@_kernel_only("tvm_warp_shuffle_up")
def tvm_warp_shuffle_up(mask, value, lane, width, warp_size):
    """``__shfl_up_sync(mask, value, delta, width)``: ``value`` of lane ``lane - delta`` (own value before the segment)."""


@_kernel_only("tvm_warp_shuffle_down")
def tvm_warp_shuffle_down(mask, value, lane, width, warp_size):
    """``__shfl_down_sync(mask, value, delta, width)``: ``value`` of lane ``lane + delta`` (own value past the segment)."""


@_kernel_only("match_any_sync")
def match_any_sync(value, mask=_FULL_WARP_MASK):
    """``__match_any_sync``: uint32 mask of the lanes of the warp (in ``mask``) whose ``value`` equals the thread's."""


@_kernel_only("match_all_sync")
def match_all_sync(value, mask=_FULL_WARP_MASK):
    """``__match_all_sync``: ``mask`` when all lanes in it hold the same ``value``, else 0 (uint32)."""


@_kernel_only("activemask")
def activemask():
    """``__activemask``: uint64 mask of the warp's lanes executing the call (under the active conditions)."""


@_vote("any_sync", "int32")
def any_sync(predicate, mask=_FULL_WARP_MASK):
    """``__any_sync``: 1 if ``predicate`` is non-zero in any lane of the warp (in ``mask``), else 0."""


@_vote("all_sync", "int32")
def all_sync(predicate, mask=_FULL_WARP_MASK):
    """``__all_sync``: 1 if ``predicate`` is non-zero in every lane of the warp (in ``mask``), else 0."""


@_vote("ballot_sync", "uint64")
def ballot_sync(predicate, mask=_FULL_WARP_MASK):
    """``__ballot_sync``: uint64 with bit N set when lane N of the warp (in ``mask``) has a non-zero ``predicate``."""


@_vote("ballot", "uint64")
def ballot(predicate):
    """``ballot_sync`` with the full warp mask."""


@_vote("syncthreads_count", "int32")
def syncthreads_count(predicate):
    """``__syncthreads_count``: the number of threads of the block with a non-zero ``predicate``."""


@_vote("syncthreads_and", "int32")
def syncthreads_and(predicate):
    """``__syncthreads_and``: 1 if ``predicate`` is non-zero in every thread of the block, else 0."""


@_vote("syncthreads_or", "int32")
def syncthreads_or(predicate):
    """``__syncthreads_or``: 1 if ``predicate`` is non-zero in any thread of the block, else 0."""


@_kernel_only("__ffs")
def __ffs(value):
    """``__ffs`` / ``__ffsll``: one-based position of the lowest set bit of ``value``, 0 when it is 0 (int32)."""


@_kernel_only("__fns")
def __fns(mask, base, offset):
    """``__fns``: position of the ``offset``-th set bit of ``mask`` counted from bit ``base`` (upward for
    offset > 0, downward for offset < 0), 0xFFFFFFFF when there is none (uint32)."""
