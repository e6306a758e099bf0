"""``T.builtin``: TileLang's ``tilelang.language.builtin`` module (barriers, warp and synchronisation
intrinsics, packed loads and stores), reached as an attribute of ``T`` as in TileLang
(``T.builtin.sync_threads()``).  Its names are the same objects as ``T``'s; one ``T`` lacks is
absent here too."""

import sys

_T = sys.modules[__name__.rpartition(".")[0]]

# tilelang/language/builtin.py's public functions
_NAMES = (
    "access_ptr all_sync any_sync ballot ballot_sync activemask barrier_arrive barrier_wait cp_async_barrier_noinc "
    "create_tma_descriptor dec_max_nreg disable_warp_group_reg_alloc fence_proxy_async get_lane_idx "
    "get_warp_group_idx get_warp_idx get_warp_idx_sync inc_max_nreg increase_descriptor_offset "
    "initialize_wgmma_descriptor ldg32 ldg64 ldg128 ldg256 lds32 lds64 lds128 loop_break match_all_sync "
    "match_any_sync mbarrier_arrive mbarrier_arrive_expect_tx mbarrier_expect_tx mbarrier_wait_parity "
    "named_barrier_arrive no_set_max_nreg set_max_nreg shfl_down shfl_sync shfl_up shfl_xor shuffle_elect "
    "stg32 stg64 stg128 stg256 sts32 sts64 sts128 sync_global sync_grid sync_threads sync_warp syncthreads_and "
    "syncthreads_count syncthreads_or tma_load tma_store_arrive tma_store_wait wait_wgmma warpgroup_arrive "
    "warpgroup_commit_batch warpgroup_fence_operand warpgroup_wait __ldg"
).split()
globals().update({name: getattr(_T, name) for name in _NAMES if hasattr(_T, name)})
__all__ = [name for name in _NAMES if name in globals()]
