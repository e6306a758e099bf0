"""The ``T`` namespace: ``import tile2triton.language as T`` in place of ``tilelang.language``.

Kernel bodies are never executed as Python: tile2triton reads their source and lowers it.
The functions here carry TileLang's signatures (the binder uses them to normalise arguments)
and a ``__t2t__`` tag naming the primitive.  Called outside a kernel they raise, except the
few that TileLang also lets host code use on plain numbers (``T.ceildiv``, ``T.max``, ...).

The names are defined by topic in private submodules and re-exported here (``__init__.pyi``
declares them all): ``_structure`` (kernel, threads, allocation, loops, ``T.prim_func``),
``_tile_ops`` (copy, gemm, reductions, atomics, views), ``_scheduling`` (barriers, warp
specialization, annotations), ``_math`` (element-wise), ``_device`` (RNG, packed loads/stores,
print/assert, PTX), ``_warp`` (warp-level primitives), ``_sizes`` (symbolic sizes) and
``_primitive`` (how a primitive behaves outside a kernel).
"""

from __future__ import annotations

import math

from ..layout import Fragment, Layout
from . import _sources
from ._device import (
    __ldg,
    device_assert,
    inline_asm,
    ldg32,
    ldg64,
    ldg128,
    ldg256,
    lds32,
    lds64,
    lds128,
    print,
    ptx_clock64,
    ptx_ex2,
    ptx_globaltimer,
    ptx_laneid,
    ptx_rcp,
    ptx_rsqrt,
    ptx_smid,
    ptx_tanh,
    ptx_warpid,
    rng_init,
    rng_rand,
    rng_rand_float,
    stg32,
    stg64,
    stg128,
    stg256,
    sts32,
    sts64,
    sts128,
)
from ._math import (
    And,
    Broadcast,
    Cast,
    Not,
    Or,
    Ramp,
    Select,
    Shuffle,
    __cos,
    __exp,
    __exp10,
    __log,
    __log2,
    __log10,
    __sin,
    __tan,
    abs,
    abs2,
    acos,
    acosh,
    add2,
    align_up,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    cast,
    cdiv,
    ceil,
    ceildiv,
    clamp,
    clz,
    copysign,
    cos,
    cosh,
    erf,
    exp,
    exp2,
    exp10,
    extract_lane,
    fabs,
    fast_rcp,
    floor,
    floordiv,
    floormod,
    fma2,
    fmod,
    hypot,
    ieee_add,
    ieee_fdiv,
    ieee_fmaf,
    ieee_frcp,
    ieee_frsqrt,
    ieee_fsqrt,
    ieee_mul,
    ieee_sub,
    if_then_else,
    infinity,
    isfinite,
    isinf,
    isnan,
    ldexp,
    likely,
    log,
    log1p,
    log2,
    log10,
    max,
    max2,
    max_value,
    min,
    min2,
    min_value,
    mul2,
    nearbyint,
    nextafter,
    popcount,
    pow,
    reinterpret,
    round,
    rsqrt,
    shift_left,
    shift_right,
    sigmoid,
    sin,
    sinh,
    sqrt,
    sub2,
    tan,
    tanh,
    trunc,
    truncdiv,
    truncmod,
)
from ._primitive import KernelOnlyError
from ._scheduling import (
    Else,
    If,
    Then,
    WarpSpecialize,
    While,
    access_ptr,
    alloc_barrier,
    annotate_compile_flags,
    annotate_consumer_reg_alloc,
    annotate_l2_hit_ratio,
    annotate_layout,
    annotate_min_blocks_per_sm,
    annotate_pass_configs,
    annotate_producer_reg_dealloc,
    annotate_restrict_buffers,
    annotate_safe_value,
    assume,
    async_copy,
    barrier_arrive,
    barrier_wait,
    cp_async_barrier_noinc,
    dec_max_nreg,
    disable_warp_group_reg_alloc,
    fence_proxy_async,
    func_attr,
    import_source,
    inc_max_nreg,
    mbarrier_arrive,
    mbarrier_wait_parity,
    named_barrier_arrive,
    no_set_max_nreg,
    pdl_sync,
    pdl_trigger,
    ptx_commit_group,
    ptx_cp_async,
    ptx_wait_group,
    reads,
    sblock,
    set_max_nreg,
    tma_copy,
    tma_store_arrive,
    tma_store_wait,
    tvm_access_ptr,
    tvm_storage_sync,
    type_annotation,
    use_swizzle,
    wait_wgmma,
    writes,
    ws,
)
from ._sizes import Dynamic, SizeExpr, Var, dynamic, symbolic
from ._structure import (
    ClusterKernel,
    Kernel,
    Parallel,
    Persistent,
    Pipelined,
    Ref,
    Serial,
    Unroll,
    Vectorized,
    all_of,
    alloc_fragment,
    alloc_global,
    alloc_local,
    alloc_reducer,
    alloc_shared,
    alloc_var,
    any_of,
    attr,
    break_loop,
    comm_reducer,
    const,
    continue_loop,
    empty,
    evaluate,
    get_block_binding,
    get_thread_binding,
    get_thread_bindings,
    grid,
    launch_thread,
    let,
    loop_break,
    macro,
    prim_func,
    serial,
    sync_threads,
    thread_binding,
    tvm_thread_allreduce,
    unroll,
    vectorized,
)
from ._tile_ops import (
    GemmWarpPolicy,
    atomic_add,
    atomic_addx2,
    atomic_addx4,
    atomic_load,
    atomic_max,
    atomic_min,
    atomic_or,
    atomic_store,
    c2d_im2col,
    clear,
    copy,
    cummax,
    cumsum,
    dp4a,
    fill,
    finalize_reducer,
    gemm,
    gemm_sp,
    gemm_sp_v2,
    im2col,
    make_tensor,
    make_tensor_from_addr,
    match_buffer,
    reduce,
    reduce_absmax,
    reduce_abssum,
    reduce_bitand,
    reduce_bitor,
    reduce_bitxor,
    reduce_max,
    reduce_min,
    reduce_sum,
    reducer_init,
    reducer_update,
    reshape,
    transpose,
    view,
    wgmma_gemm,
)
from ._warp import (
    __ffs,
    __fns,
    activemask,
    all_sync,
    any_sync,
    ballot,
    ballot_sync,
    get_lane_idx,
    get_warp_group_idx,
    get_warp_idx,
    get_warp_idx_sync,
    match_all_sync,
    match_any_sync,
    shfl_down,
    shfl_sync,
    shfl_up,
    shfl_xor,
    shuffle_elect,
    sync_warp,
    syncthreads_and,
    syncthreads_count,
    syncthreads_or,
    tvm_warp_shuffle,
    tvm_warp_shuffle_down,
    tvm_warp_shuffle_up,
    warp_reduce_bitand,
    warp_reduce_bitor,
    warp_reduce_max,
    warp_reduce_min,
    warp_reduce_sum,
)
from .dtypes import DTYPES, DType, TypedLiteral, lookup_dtype, to_dtype
from .dtypes import POINTER as _POINTER
from .dtypes import tensor_dtype as _tensor_dtype
from .proxy import (
    Buffer,
    FragmentBuffer,
    FragmentTensor,
    LocalBuffer,
    LocalTensor,
    SharedBuffer,
    SharedTensor,
    StridedTensor,
    Tensor,
    TensorType,
)

# dtype objects: T.float16, T.float32, T.float, ...
for _name, _dt in DTYPES.items():
    globals()[_name] = _dt
float = DTYPES["float32"]  # noqa: A001  (TileLang exports T.float)
half = DTYPES["float16"]
double = DTYPES["float64"]
int = DTYPES["int32"]  # noqa: A001
long = DTYPES["int64"]
short = DTYPES["int16"]
uint = DTYPES["uint32"]
dtype = _tensor_dtype  # a kernel dtype, or a packed 4-bit one (T.dtype("uint4"): TileLang has no T.uint4)
# raw pointers: ``a_ptr: T.ptr`` takes a tensor or its data_ptr(); T.make_tensor views memory through it
ptr = _POINTER
handle = _POINTER


__all__ = [n for n in globals() if not n.startswith("_")]

# --- TileLang names beyond the primitives above (issue 12) ------------------------------------
parallel = Parallel  # TileLang exports the lower-case alias too
tfloat32 = DTYPES["float32"]  # TF32 storage is float32 (see tile2triton/language/dtypes.py)
float8_e4m3 = DTYPES["float8_e4m3fn"]  # TileLang maps it to e4m3fn on NVIDIA GPUs
# fp8/fp6/fp4/int4 formats with no Triton dtype: names for host code; a kernel using one gets a clear error
from .dtypes import UNSUPPORTED as _UNSUPPORTED_DTYPES  # noqa: E402

# (uint4 is T.dtype("uint4") only: TileLang has no T.uint4)
globals().update({k: v for k, v in _UNSUPPORTED_DTYPES.items() if not k.startswith("uint4")})
# WGMMA descriptor handles of TileLang's WGMMA emitter: language/_descriptors.py
from ._descriptors import alloc_wgmma_desc  # noqa: E402

# barriers among blocks (T.sync_grid, thread-block clusters): language/_grid_sync.py
from ._grid_sync import (  # noqa: E402
    block_rank_in_cluster,
    cluster_arrive,
    cluster_arrive_relaxed,
    cluster_sync,
    cluster_wait,
    sync_grid,
)

__all__ = [n for n in globals() if not n.startswith("_")]

# T.builtin (tilelang.language.builtin's names), once every name it takes from T is defined
from . import builtin  # noqa: E402

__all__.append("builtin")
