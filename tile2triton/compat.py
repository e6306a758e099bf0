"""TileLang compatibility matrix (the Python API beyond ``T``, and the ``T`` namespace), generated from the code.

``python -m tile2triton.compat > docs/compat.md`` prints a Markdown table with one row per
symbol of TileLang's ``T`` namespace (``import tilelang.language as T``), each marked

* **supported** — the binder has a rule for it (``tile2triton.frontend.rules.RULES``), or it is a
  name of ``tile2triton.language`` that works as in TileLang (dtypes, ``T.Tensor``, ``T.macro``...);
* **accepted (no effect)** — listed in ``NO_EFFECT_REASONS`` below with the reason results do not change;
* **refused** — listed in ``UNSUPPORTED_REASONS`` (or matched by ``UNSUPPORTED_PATTERNS``) with the reason
  (a kernel that uses one fails at the user's line with it).

The list of TileLang's ``T`` symbols is ``tile2triton/data/tilelang_T_symbols.txt``, extracted
from a TileLang wheel's Python sources without importing TileLang:
``python -m tile2triton.compat --extract path/to/tilelang-*.whl > tile2triton/data/tilelang_T_symbols.txt``.
``tests/test_compat.py`` fails when a symbol is in none of the three classes.
"""

from __future__ import annotations

import ast
import builtins
import fnmatch
import re
import sys
import zipfile
from importlib import resources

SUPPORTED = "supported"
NO_EFFECT = "accepted (no effect)"
UNSUPPORTED = "refused"

# ----------------------------------------------------------------------------- classification
# Names of tile2triton.language that are supported without a binder rule of their own
# (the binder resolves them as values: dtypes, tensor annotations, decorators, aliases).
LANGUAGE_VALUES = {
    "alloc_wgmma_desc": "a handle TileLang's WGMMA emitter binds to a shared buffer (init_wgmma_a/b_desc); "
    "the raw descriptor primitives (T.initialize_wgmma_descriptor, T.ptx_wgmma_*) are not supported",
    "Buffer": "parameter annotation (TileLang's deprecated alias of T.Tensor)",
    "type_annotation": "the dtype, as T.tvm_access_ptr's first operand",
    "Tensor": "parameter annotation: pointer + shape + strides",
    "StridedTensor": "parameter annotation with user strides (symbolic strides bound from the tensor)",
    "SharedBuffer": "T.macro parameter annotation (the macro is inlined; the argument's buffer is used)",
    "FragmentBuffer": "T.macro parameter annotation (the macro is inlined; the argument's buffer is used)",
    "LocalBuffer": "T.macro parameter annotation (the macro is inlined; the argument's buffer is used)",
    "prim_func": "the kernel function; its source is read and lowered; `.attrs` gives TileLang's attributes and "
    '`.with_attr("global_symbol", name)` a copy under that name (other attributes are refused: TileLang\'s passes read them)',
    "macro": "inlined at each call",
    "Ref": "a T.macro parameter annotation: the argument (a buffer element, its indices taken at the call, or a "
    "T.alloc_var) is passed by reference; assigning the parameter (=, +=) stores into it (T.Var as an annotation too, "
    "TileLang's deprecated spelling)",
    "dynamic": "run-time size argument; tensor shapes may be expressions of sizes (M // 128, T.ceildiv(M, 4), 2 * M): bound by the bare dims, checked at call time",
    "symbolic": "deprecated alias of T.dynamic",
    "Var": "the class of T.dynamic's symbolic sizes (isinstance checks; T.Var(name, dtype) is T.dynamic)",
    "dtype": "dtype constructor",
    "ptr": "raw-address parameter: takes a tensor or its data_ptr(); T.Tensor([G], T.ptr) is a table of int64 addresses",
    "handle": "alias of T.ptr (a raw-address parameter)",
    "cdiv": "alias of T.ceildiv",
    "Select": "tl.where (both sides evaluated, as in TVM)",
    "Serial": "alias of T.serial",
    "Unroll": "alias of T.unroll",
    "Vectorized": "alias of T.vectorized",
    "float4_e2m1fn": "packed fp4: global tensors are uint8/int8/float4_e2m1fn_x2 bytes, two values each (low "
    "nibble first; logical last dim = 2 x the bytes); loads decode e2m1, stores round to nearest even "
    "(saturating at 6) and write aligned pairs as whole bytes, single nibbles with atomic and/or; "
    "fragments/shared hold 4-bit codes; T.empty "
    "returns torch's storage dtype; gemm/reduce on fp4 buffers are refused (copy to float first)",
    "int4": 'packed sub-byte integers (also T.dtype("uint4"), which TileLang spells so): global tensors are '
    "int8/uint8 bytes, two values each (low nibble first, as TileLang's tests pack them; logical last dim = 2 x "
    "the bytes); loads sign-extend (uint4: zero-extend), arithmetic runs in 32 bits without wrapping (C's "
    "promotion of TileLang's tl_int4_packed_load), stores, casts and int4 fragments/shared keep the low 4 bits; "
    "T.empty returns int8 (uint4: uint8); T.gemm of int4/uint4 A and B into int32 is an int8 dot of the values "
    "(examples/gemm_int4); reductions and an int4 accumulator are refused (copy to int8/int32 first)",
}

# What a supported primitive's row adds to "binder rule" (semantics a user may look for)
SUPPORTED_NOTES = {
    "floormod": "of floats (as `a % b` of floats): floor modulo, the divisor's sign, as Python's and "
    "torch.remainder's (TileLang's lowering refuses floats; Triton's float % is C's fmod)",
    "fmod": "C's fmod (the dividend's sign), exact as CUDA's fmodf",
    "import_source": "None does nothing (as in TileLang); a source is refused: raw C/CUDA cannot run under Triton",
    "func_attr": "the hints (tir.noalias, tl.copy_vectorize, tl.tensor_mem_size, tl.has_tma, the entry flag, "
    "global_symbol, target) kept in the function's attrs, no effect on results; other attributes refused",
    "While": "TIR's 'with T.While(condition):' frame: the while loop it is (the condition read before each iteration)",
    "If": "TIR's 'with T.If(condition):' frame around 'with T.Then():' and an optional 'with T.Else():': the if "
    "statement it is",
    "Then": "the branch of a 'with T.If(condition):' frame run where the condition holds",
    "Else": "the branch of a 'with T.If(condition):' frame run where the condition does not hold",
    "transpose": "the last two axes swapped (dst[..., j, i] = src[..., i, j]) over buffers or regions of any rank "
    ">= 2, as TileLang lowers it: a source element outside its tensor reads 0, a destination one is not written",
    "atomic_add": "use_tma=True: the atomics are the same; a dtype TileLang's TMA bulk reduction lacks (other than "
    "float16, bfloat16, float32, int32, uint32, uint64) is an InternalError, as in TileLang's lowering",
    "sync_threads": "a block barrier; T.sync_threads(id, n) is also PTX bar.sync on named barrier id among n "
    "threads: warp-specialized sections are ordered so that n threads have arrived before it goes on",
    "named_barrier_arrive": "PTX bar.arrive: arrives at named barrier id without waiting; the sections are "
    "ordered so that each T.sync_threads(id, n) finds its n threads arrived (an order none satisfies is an error)",
    "tvm_storage_sync": 'TVM\'s storage barrier: "shared" / "shared.dyn" is T.sync_threads(), "warp" nothing '
    '(as TileLang\'s CUDA codegen), "cluster" T.cluster_sync(); "global" is an error, as in TileLang',
    "empty": "eager style: an output bound from the T.const sizes; in a @T.prim_func: an output declared before "
    "the T.Kernel blocks and returned (shapes may use scalar parameters; sub-byte dtypes come back as torch's "
    "storage dtype)",
    "assume": "a hint for the kernel (results never depend on it); its comparisons of sizes and scalar parameters "
    "are checked at every call, a RuntimeError 'Assume: ...' when one does not hold, as in TileLang",
    "thread_binding": "inside a T.Kernel: the thread index (whole axes); outside one, TIR's directly nested "
    "blockIdx / threadIdx launch loops open the kernel (grid and threads from their extents)",
    "launch_thread": "inside a T.Kernel: the thread (or block) index along that axis, whose whole extent it must be",
    "match_buffer": "A = T.match_buffer(a, shape, dtype) on a T.handle parameter: the global tensor it matches; in "
    "an eager @tilelang.jit body, on an `A: T.ptr` parameter given a tensor: its declaration, the T.const sizes "
    "in the shape bound from the tensor at each call",
    "let": "T.let(v, value) binds a v = T.int32() declaration for the statements after it (TileLang's LetStmt); "
    "T.let(v, value, body) is body's value with v bound",
    "align_up": "T.ceildiv(x, y) * y (host ints and symbolic sizes too)",
    "round": 'ties to even (TileLang emits nearbyintf); rounding_mode="ties-away-from-zero" is C\'s roundf',
    "nearbyint": "ties to even (nearbyintf)",
    **{
        f"ieee_{op}": f"rounding_mode rn / rz / ru / rd as CUDA's __{cuda}_r*: float32 operands are computed in "
        "float64 (products exact; sums keep their lost part, TwoSum) and rounded once to float32 in the mode, the "
        "same bits on the GPU and the interpreter, never contracted into an fma; float64: rn, and rz / ru / rd as "
        "PTX's .rz / .rp / .rm instruction on CUDA, elsewhere (the interpreter, AMD) the nearest result moved by "
        "its exact residual (codegen/libm.py; exact unless a product or result is subnormal); float16 / bfloat16: "
        "rn only, as in TileLang (its error message)"
        for op, cuda in (
            ("add", "fadd"),
            ("sub", "fsub"),
            ("mul", "fmul"),
            ("fmaf", "fmaf"),
            ("frcp", "frcp"),
            ("fsqrt", "fsqrt"),
            ("fdiv", "fdiv"),
        )  # fmt: skip
    },
    "ieee_frsqrt": "round to nearest (its only mode): 1 / sqrt in float64, then rounded to float32; float64 is "
    "refused with TileLang's message (CUDA has no float64 rsqrt)",
    **{
        name: "core Triton operations (codegen/libm.py; libdevice is CUDA's and the interpreter cannot call it), "
        "a few ulps of the dtype; float16/bfloat16 computed in float32"
        for name in ("sinh", "cosh", "asinh", "acosh", "atanh", "asin", "acos", "atan", "atan2", "hypot", "log1p")
    },
    **{
        name: "TileLang's packed two-lane math on float32x2 / bfloat16x2 / float16x2 values of one dtype, lane by "
        "lane (other or mixed dtypes: TileLang's ValueError message, in host code too)"
        + ("; fused: one rounding of x * y + z (16-bit lanes: the exact product in float32)" if name == "fma2" else "")
        for name in ("add2", "sub2", "mul2", "max2", "min2", "fma2", "abs2")
    },
    "copysign": "bit exact (the sign bit of the second operand)",
    "nextafter": "bit exact (the float's bits stepped)",
    "ldexp": "x1 * 2**x2 exact unless the result is subnormal; a float x2 is truncated to an int, as C's ldexpf takes it",
    "popcount": "in x's dtype; 8/16-bit integers promoted to 32 bits as C promotes them for CUDA's __popc",
    "clz": "int32; 32 (64) for 0, as CUDA's __clz; 8/16-bit integers promoted to 32 bits as C does",
    "likely": "a branch hint: the condition itself",
    "serial": "a loop hand-pipelined over a ring of shared slots (a prologue storing the first slot, the loop "
    "storing the next iteration's slot and reading its own, an epilogue reading the last) reads each slot's tile "
    "where it is used, with TILE2TRITON_FORWARD_RINGS (on by default; passes/forward_rings.py); where the loop "
    "runs no iteration (stop < start) and the epilogue reads a slot the prologue did not store, this reads the "
    "prologue's tile (TileLang: what that slot held before)",
    "unroll": "T.unroll(start, stop, step) and unroll_factor=; bounds that differ per thread (tid % 32) run to "
    "the greatest stop with each thread's iterations masked",
    "atomic_max": "float16/bfloat16 too (a compare-and-swap loop: Triton's atomic_max has no 16-bit floats)",
    "atomic_min": "float16/bfloat16 too (a compare-and-swap loop: Triton's atomic_min has no 16-bit floats)",
    "atomic_addx2": "return_prev=True: the previous values as a tuple, stored with Prev[i : i + 2] = ...",
    "atomic_addx4": "return_prev=True: the previous values as a tuple, stored with Prev[i : i + 4] = ...",
    "atomic_load": "a memory order a load cannot have is a ValueError when the prim_func is decorated",
    "atomic_store": "a memory order a store cannot have is a ValueError when the prim_func is decorated",
    "alloc_reducer": "replication= selects TileLang's legacy reducer; otherwise its epoch rules are checked "
    "(frontend/reducer_epochs.py)",
    "reshape": "shared/fragment views with extents that are not powers of two live in global scratch",
    "barrier_wait": "warp-specialized sections run in an order that satisfies every wait, their loops fused "
    "where they share an iteration space (frontend/warp_sections.py)",
    "mbarrier_wait_parity": "as T.barrier_wait",
    "ptx_cp_async": "the element copy, complete when issued; with T.access_ptr or T.tvm_access_ptr operands; "
    "with TILE2TRITON_FORWARD_SHARED (on by default) a producer section's gathers into a shared ring are made at the "
    "consumers' reads (passes/forward_shared.py), where rows the producer skips read 0 "
    "(TileLang: the slot's stale or uninitialised contents; the same results for finite inputs "
    "that the consumer masks to -inf)",
    "async_copy": "a global -> shared T.copy, complete when issued (Triton pipelines its loads itself), so every "
    "read after it sees the data; other scopes are an error, as in TileLang",
    "cp_async_barrier_noinc": "the thread's arrive (its copies are complete)",
    # barriers among blocks (language/_grid_sync.py, passes/grid_split.py)
    "sync_grid": "the kernel is split there into consecutive launches; shared/fragment buffers that cross it go "
    "through a per-block workspace; a thread's own local or a scalar read from memory that crosses it, or the "
    "barrier inside a loop or a condition, is a compile error",
    "cluster_wait": "a block barrier where the kernel reads no global buffer it writes, else split like "
    "T.sync_grid (cluster-distributed shared memory is not supported)",
    "cluster_sync": "as T.cluster_wait",
    "cluster_arrive": "no effect of its own: the matching T.cluster_wait is the barrier",
    "cluster_arrive_relaxed": "as T.cluster_arrive",
    "block_rank_in_cluster": "the block's linear rank in its T.ClusterKernel cluster (x fastest); 0 in a T.Kernel",
}

# Accepted and ignored: each is a hint that never changes results (symbol -> reason).
NO_EFFECT_REASONS = {
    "annotate_layout": "layout hint; Triton picks register/shared layouts itself",
    "wait_wgmma": "waits for T.wgmma_gemm; tl.dot's result is complete when read",
    "ClusterKernel": "T.Kernel launched in clusters: the same blocks and block indices, run as a T.Kernel "
    "(cluster dims must divide the grid; cluster-distributed shared memory is not supported)",
    "tma_store_arrive": "commits TMA stores as a group; tile2triton's stores complete when issued",
    "tma_store_wait": "waits for TMA stores; tile2triton's stores complete when issued",
    "fence_proxy_async": "orders shared writes before TMA reads; tile2triton's copies are synchronous",
    "no_set_max_nreg": "register-allocation hint for warp specialization",
    "disable_warp_group_reg_alloc": "TileLang's alias of no_set_max_nreg (register-allocation hint)",
    "set_max_nreg": "setmaxnreg for a warp group (register-allocation hint; Triton allocates registers)",
    "inc_max_nreg": "set_max_nreg(n, 1) (register-allocation hint)",
    "dec_max_nreg": "set_max_nreg(n, 0) (register-allocation hint)",
    "annotate_producer_reg_dealloc": "register budget of a warp-specialized producer (hint)",
    "annotate_consumer_reg_alloc": "register budget of a warp-specialized consumer (hint)",
    "ptx_commit_group": "commits cp.async copies as a group; tile2triton's copies are complete when issued",
    "ptx_wait_group": "waits for cp.async groups; tile2triton's copies are complete when issued (none is pending)",
    "pdl_trigger": "programmatic dependent launch: kernels launch without PDL, so the next kernel starts after "
    "this one ends (the latest start the trigger allows)",
    "pdl_sync": "programmatic dependent launch: without PDL a kernel starts after the previous one has ended, "
    "so its writes are visible already",
    "annotate_l2_hit_ratio": "L2 persistence of global tensors (a CUDA stream access-policy window): a cache "
    "hint, results do not change",
    "annotate_restrict_buffers": "marks buffers that may alias so that TileLang drops their __restrict__; "
    "tile2triton's Triton kernels never declare their pointers non-aliasing",
    "annotate_min_blocks_per_sm": "occupancy hint of CUDA's __launch_bounds__; Triton picks registers for its "
    "own num_warps / num_stages",
    "use_swizzle": "block rasterization (a bijection on the grid); kept as a grouped program-id order",
    "GemmWarpPolicy": "warp partition of the C tile; Triton partitions tl.dot itself",
    "Layout": "layout objects only feed T.annotate_layout",
    "Fragment": "layout objects only feed T.annotate_layout",
    "PartialFragment": "layout objects only feed T.annotate_layout",
}
# (a symbol may be both in RULES and NO_EFFECT: the binder accepts it and it does nothing)

# Unsupported: symbol -> reason.
UNSUPPORTED_REASONS = {
    # tile ops not implemented yet
    "gemm_blockscaled": "block-scaled MMA (Blackwell) has no portable Triton equivalent here",
    "allocate": "raw TVM allocation",
    "index_to_coordinates": "not implemented yet",
    # thread/warp level primitives below Triton's block abstraction
    "get_thread_extent": "not implemented yet",
    "get_thread_extents": "not implemented yet",
    "get_block_bindings": "not implemented yet (use the T.Kernel 'as' targets)",
    "get_block_extent": "not implemented yet",
    "get_block_extents": "not implemented yet",
    "call_extern": "external CUDA device functions cannot be called from Triton",
    "call_pure_extern": "external CUDA device functions cannot be called from Triton",
    "inline": "meta-classes (JIT-time tile schedulers) not implemented yet",
    "meta_class": "meta-classes (JIT-time tile schedulers) not implemented yet",
    "BaseTileScheduler": "tile schedulers not implemented yet",
    "PersistentTileScheduler": "tile schedulers not implemented yet",
    "fma": "not implemented yet (write a * b + c)",
    "fmul": "not implemented yet (write a * b)",
    "Any": "TVM expression class (type annotations of TIR code)",
    "PrimExpr": "TVM expression class (type annotations of TIR code)",
    "AnyDType": "type alias for annotations of TileLang's own code",
    "PrimFunc": "TVM function class; tile2triton's @T.prim_func returns its own kernel source object",
    "JITFunc": "TileLang's @tilelang.jit object class; use tile2triton.jit",
    "get_let_value": "TileLang frontend internals (let-bound regions)",
    "has_let_value": "TileLang frontend internals (let-bound regions)",
    "get_tvm_dtype": "host-side TVM dtype helper",
    "is_f8f6f4_family": "host-side dtype predicate of TileLang's gemm checks",
    "is_float4": "host-side dtype predicate of TileLang's gemm checks",
    "is_float4_e2m1_unpacked": "host-side dtype predicate of TileLang's gemm checks",
    "is_float4_e2m1fn": "host-side dtype predicate of TileLang's gemm checks",
    "validate_gemm_ab_dtypes": "host-side dtype check of TileLang's gemm",
    "get_ldmatrix_offset": "MMA fragment layout helper (CUDA codegen internals)",
    "get_swizzle_layout": "shared-memory swizzle helper (CUDA codegen internals)",
    "make_blockscaled_gemm_layout": "block-scaled MMA layout helper (Blackwell)",
    "alloc_cluster_barrier": "an mbarrier the blocks of a thread-block cluster arrive at in each other's shared "
    "memory (Hopper's distributed shared memory): Triton's tl cannot address another block's shared memory, and "
    "tile2triton runs a cluster's blocks as independent programs (T.cluster_sync / T.cluster_wait are supported)",
    "copy_cluster": "a copy into another block's shared memory (Hopper's distributed shared memory: st.async / "
    "cp.async.bulk to shared::cluster, or a TMA multicast into several blocks' shared memory): Triton's tl cannot "
    "address another block's shared memory, and tile2triton runs a cluster's blocks as independent programs",
    "float4_e2m1_unpacked": "Blackwell-only (sm_100) shared-memory layout of tcgen05 fp4 operands (one value per "
    "byte slot, filled by T.tma_copy from packed fp4); TileLang allows no element access, casts or SIMT copies on it "
    "either; use T.float4_e2m1fn buffers",
    "alloc_tmem": "Blackwell-only (sm_100) tensor memory for tcgen05 MMA: no such memory on Hopper, and Triton's "
    "tl language has no TMEM buffers (keep the accumulator in a T.alloc_fragment)",
}

# Families, matched with fnmatch when a symbol is in none of the tables above.
UNSUPPORTED_PATTERNS = [
    ("*x[0-9]*", "vector dtypes (lanes > 1) have no Triton equivalent; Triton vectorizes tiles itself"),
    ("float8_*", "fp8 formats other than e4m3fn/e5m2 are not Triton dtypes"),
    ("float6_*", "fp6 formats are not Triton dtypes"),
    ("float4_*", "fp4 formats are not Triton dtypes"),
    ("ptx_*", "raw PTX intrinsics: use T.gemm / T.copy, Triton emits the instructions"),
    ("tvm_*", "TVM-internal intrinsics below the tile level"),
    ("mbarrier_*", "mbarriers (TMA pipelines) are managed by Triton"),
    ("barrier_*", "mbarriers (TMA pipelines) are managed by Triton"),
    ("*barrier*", "barrier objects (TMA / cluster pipelines) are managed by Triton"),
    ("tma_*", "explicit TMA is managed by Triton (tensor descriptors)"),
    (
        "*tmem*",
        "Blackwell-only (sm_100) tensor memory: no such memory on Hopper, and Triton's tl language has no TMEM buffers",
    ),
    ("tcgen05*", "Blackwell-only (sm_100) tcgen05 MMA: T.gemm lowers to tl.dot (wgmma on Hopper)"),
    ("wgmma*", "explicit Hopper wgmma is below Triton's abstraction (T.gemm lowers to tl.dot)"),
    ("*wgmma*", "explicit Hopper wgmma is below Triton's abstraction (T.gemm lowers to tl.dot)"),
    ("*cluster*", "thread-block clusters are not exposed portably by Triton"),
    ("*_max_nreg", "register-allocation hints (warp specialization)"),
    ("*reg_alloc*", "register-allocation hints (warp specialization)"),
    ("*reg_dealloc*", "register-allocation hints (warp specialization)"),
    ("WS*", "manual warp-specialization schedules are below Triton's abstraction"),
    ("ws*", "manual warp-specialization schedules are below Triton's abstraction"),
    ("annotate_ws_*", "manual warp-specialization schedules are below Triton's abstraction"),
    ("annotate_*", "CUDA launch/cache/aliasing hints not implemented"),
    ("pdl_*", "programmatic dependent launch not implemented"),
    ("fast_rcp", "not implemented yet"),
    ("call_*", "calls to external/LLVM/packed functions cannot run under Triton"),
    ("*mma*", "explicit MMA instructions: T.gemm lowers to tl.dot"),
    ("fence_*", "memory fences of TMA pipelines are managed by Triton"),
    ("named_barrier_*", "named barriers are managed by Triton"),
    ("*descriptor*", "TMA/MMA descriptors are managed by Triton"),
    ("*Emitter*", "TensorCore instruction emitters (CUDA codegen internals)"),
    ("*DescriptorParams", "TMA/MMA descriptors are managed by Triton"),
    ("WarpSpecialize*", "manual warp specialization is below Triton's abstraction"),
    ("*tcgen05*", "Blackwell-only (sm_100) tcgen05 MMA: T.gemm lowers to tl.dot (wgmma on Hopper)"),
    ("clc_*", "cluster launch control (Blackwell) is not exposed by Triton"),
    ("warpgroup_*", "explicit Hopper warpgroup synchronization (wgmma) is managed by Triton"),
    ("CUDASourceCodeKernel", "hand-written CUDA kernels cannot run under Triton"),
    ("KernelLaunchFrame", "frame object of T.Kernel; not a user construct here"),
]

# TVM script (tirx) names TileLang re-exports: low-level TIR construction, not tile programs.
TIR_REASON = "low-level TVM TIR construction (tvm.tirx.script); tile2triton lowers tile programs, not TIR"


# TileLang's Python API beyond T (issue 12): module or name -> (status, what tile2triton provides).
# tools/tilelang_suite.py runs TileLang's own examples and tests against these; docs/tilelang_suite.md
# lists what remains.
BEYOND_T = [
    ("tilelang.tvm (from tilelang import tvm)", SUPPORTED,
     "light subset (tile2triton/tvm/): DataType, target.Target, transform.PassContext, error.*, TVMError, "
     "tirx/tir const, reinterpret, Cast, Select, Not/And/Or and the expression class names (also as "
     "tirx.expr), script.ir_builder.base.IRBuilderFrame (T.serial(...) in host code is a ForFrame for a unit "
     "step, else a SerialForWithStep, as in TileLang); a bare `import tvm` resolves to it under the tilelang "
     "alias only when no real TVM is installed"),
    ("tvm.IRModule, tvm.ir, tvm.arith, tvm.script (but IRBuilderFrame), tirx.decl_buffer/stmt_functor, TVM passes",
     UNSUPPORTED,
     "building or transforming TVM IR: tile2triton has its own IR; accessing them raises AttributeError "
     "(importing a tvm submodule: ModuleNotFoundError) saying so"),
    ("tvm_ffi (import tvm_ffi)", SUPPORTED,
     "Map and Array as dict and list; `import tvm_ffi` resolves to tile2triton/tvm/ffi.py under the tilelang "
     "alias only when no real tvm_ffi is installed; the FFI function registry is not provided"),
    ("dtypes as str (getattr(torch, T.float16))", SUPPORTED, "T.* dtypes are str subclasses, as in TileLang"),
    ("T.tfloat32", SUPPORTED, "float32 storage; tl.dot multiplies float32 at TF32 precision on the GPU by default"),
    ("T.float8_e8m0fnu", SUPPORTED,
     "uint8 in memory, float32 in registers (codegen/e8m0.py): global tensors, shared/fragment/local buffers, "
     "tile copies and casts both ways (a cast to it rounds up to a power of two, as CUDA's satfinite "
     "conversion, from a double by its own bits); atomics and T.gemm operands of it are an error"),
    ("T.float8_e4m3fnuz, T.float6_*, T.float4_e2m1_unpacked (Blackwell tcgen05 shared layout)", UNSUPPORTED,
     "names exist for host code; a kernel that uses one fails at the user's line with the reason"),
    ("tilelang.math", SUPPORTED, "next_power_of_2, cdiv (host helpers)"),
    ("tilelang.lower", SUPPORTED,
     "binds, checks and lowers a kernel for a target without launching it; the artifact's kernel_source is "
     "the generated Triton, params the parameters; host_mod / device_mod / rt_mod (TVM modules) raise "
     "AttributeError saying so"),
    ("None for a tensor argument", SUPPORTED,
     "TileLang's nullptr: accepted for a tensor parameter no kernel names (an optional input compiled out); "
     "for a tensor a kernel uses, a KernelCallError naming the parameter"),
    ("tilelang.testing", SUPPORTED,
     "requires_* marks (compute-version ge/gt/eq/lt/le), main, set_random_seed, torch_assert_close, "
     "process_func, regression"),
    ("tilelang.utils.tensor", SUPPORTED, "get_tensor_supply, TensorSupplyType, map_torch_type, torch_assert_close"),
    ("tilelang.utils.device", SUPPORTED, "IS_CUDA, IS_MPS, get_current_device, get_available_cpu_count"),
    ("tilelang.utils.sparse", SUPPORTED,
     "compress / decompress (2:4 values and row-major 4-bit position metadata: the format T.gemm_sp reads), "
     "randn/randint/arange_semi_sparse; plain torch"),
    ("tilelang.cuda.intrinsics.sparse_layout", SUPPORTED, "GROUP_CONFIG, get_e_factor, get_e_replicate_factor"),
    ("T.gemm_sp (T.gemm_sp_v2)", SUPPORTED,
     "bound as what it means: a T.Parallel rebuilds the dense A tile from A_sparse and E, then a dense T.gemm "
     "(tl.dot) multiplies it; no sparse tensor-core speedup"),
    ("tilelang.layout.make_cutlass_metadata_layout / make_metadata_layout", NO_EFFECT,
     "on a shared metadata tile: placement only; on the global E: refused at the user's line (E's bytes would "
     "be stored permuted, which changes what they mean)"),
    ("tilelang.language.dtypes tables", SUPPORTED,
     "_TORCH_DTYPE_TO_STR, _STR_TO_TORCH_DTYPE, _all_dtypes, dtype(x), dtypes.<name>"),
    ("T.device_assert", SUPPORTED, "tl.device_assert: checked when Triton compiles in debug mode (TRITON_DEBUG=1)"),
    ("tilelang.autotuner", SUPPORTED,
     "autotune, AutoTuner.from_kernel(...).set_compile_args(...).set_profile_args(...).run(), "
     "set_autotune_inputs, get_autotune_inputs"),
    ("tilelang.contrib.nvcc", SUPPORTED,
     "capability queries (get_target_compute_version, parse_compute_version, get_target_arch, have_*); "
     "no nvcc compilation"),
    ("tilelang.carver.arch", SUPPORTED, "driver.get_num_sms() and the other device queries, CUDA(target); CDNA raises"),
    ("tilelang.carver.template / roller", UNSUPPORTED,
     "importable; building a template raises (no configurations derived from a device model)"),
    ("tilelang.tools (Analyzer, plot_layout)", UNSUPPORTED, "importable; calling them raises (they analyse TVM IR)"),
    ("tilelang.transform", SUPPORTED,
     "PassConfigKey; simplify_prim_func / apply_simplify drop unused tensor parameters from the signature, "
     "as TileLang's Simplify does (expressions are simplified while lowering anyway)"),
    ("tilelang.PassConfigKey", SUPPORTED, "every member of TileLang's PassConfigKey (accepted, no effect)"),
    ("tilelang.backend.target", SUPPORTED,
     "determine_target (the enclosing Target, else the device torch sees: cuda, hip, or cpu for the interpreter; "
     "explicit targets checked as TileLang checks them), auto_detect_target, register_target_detector / "
     "normalizer; the rest of tilelang.backend (pass pipelines, codegens) is TileLang's compiler, not provided"),
    ("tilelang.engine.lower", SUPPORTED, "lower: tilelang.lower (the TVM module splitting and device codegen "
     "around it in TileLang are not provided)"),
    ("tilelang.engine.callback", NO_EFFECT,
     "register_*_postproc_callback: kept, never called (no CUDA source); registering warns"),
    ("tilelang.env", SUPPORTED, "TILELANG_CACHE_DIR (tile2triton's cache), TILELANG_TMP_DIR, CUDA_HOME, cache switches"),
    ("tilelang.language.fp8", SUPPORTED, "determine_fp8_type (e4m3fn / e5m2)"),
    ("tilelang.rocm.target", SUPPORTED,
     "check_hip_availability / target_is_gfx950 answer False: tile2triton targets NVIDIA GPUs (32-lane warps) "
     "and the CPU interpreter, never HIP"),
    ("tilelang.language.kernel", SUPPORTED, "Kernel, _normalize_threads (TileLang's thread-extent check)"),
    ("tilelang.language.dtypes.resolve_torch_storage_dtype", SUPPORTED,
     "the dtype of torch's storage (int4 -> int8, float4_e2m1fn -> float4_e2m1fnx2)"),
    ("tilelang.language.tir.ir (T.cast round= / sat= / rbits=)", SUPPORTED,
     "TileLang's option checks and messages; round '' / 'rn' with saturating fp8 casts lower to tl.cast; "
     "rz / rp / rm / rs and sat=False to fp8 are compile errors at the user's line (except on a number the "
     "target holds exactly, which every mode leaves unchanged)"),
    ("tilelang.language.eager.ast (mutate, BaseBuilder)", UNSUPPORTED,
     "TileLang's AST rewriter (frontend internals); importable, calling them raises"),
    ("tilelang.language.common, tilelang.language.tir.op/exports, tilelang.{cuda,rocm,metal,cpu,webgpu}.language",
     UNSUPPORTED, "TileLang's per-backend dialect modules; tile2triton has one T namespace"),
    ("tilelang.ir (spans, IR node helpers)", UNSUPPORTED,
     "TileLang's IR over TVM; importing it raises ModuleNotFoundError saying so (tile2triton.ir is its own IR)"),
    ("tilelang.layout", NO_EFFECT,
     "Layout, Fragment (.repeat/.replicate/...) and every make_*_layout / make_gemm_fragment_8x8* helper: "
     "T.annotate_layout hints; querying a layout raises; SwizzleMode with its descriptor numbers"),
    ("tilelang.transform.simplify", SUPPORTED, "apply_simplify / simplify_prim_func (as tilelang.transform)"),
    ("tilelang.cuda.intrinsics (make_mma_swizzle_layout, get_mma_micro_size)", NO_EFFECT,
     "swizzle layouts are T.annotate_layout hints (Triton picks shared layouts); get_mma_micro_size works"),
    ("tilelang.cuda.intrinsics / tilelang.cuda.language.intrinsics TensorCoreIntrinEmitter", SUPPORTED,
     "ldmatrix_a/b into per-thread fragments in the tensor-core layouts, mma_atom / mma, stmatrix (2-D, 4-D "
     "shared or global), 16/8/32-bit operands (m16n8k16/k32/k8); an atom is a tile-level product: the warps' "
     "fragments staged in shared tiles, multiplied by T.gemm (cuda/intrinsics/macro/mma_atoms.py); fp64 "
     "atoms and reduce_k > 1 raise"),
    ("tilelang.cuda.intrinsics.layout.mma_layout.get_swizzle_layout", SUPPORTED,
     "TileLang's 16-byte XOR swizzle as host arithmetic (for layout functions; layouts are hints here)"),
    ("tilelang.cuda.intrinsics ladder/int4 emitters, MMA fragment layout helpers, TCGEN05 emitter", UNSUPPORTED,
     "importable; building one raises"),
    ("tilelang.utils.language.to_buffer_region", UNSUPPORTED,
     "importable; calling it raises (tile2triton's operations take buffers and slices directly)"),
    ("functions defined inside kernel code (a layout function in a helper)", SUPPORTED,
     "Python functions over the names visible there, as TileLang runs them; handed kernel values they inline"),
    ("tilelang.cuda.intrinsics.macro.wgmma_macro_generator / tilelang.cuda.language.intrinsics "
     "WGMMATensorCoreIntrinEmitter", SUPPORTED,
     "sizes (wgmma_inst_n, wgmma_num_inst_m/n, wgmma_num_k_atoms), descriptors (T.alloc_wgmma_desc handles bound "
     "by init_wgmma_a/b_desc), wgmma_ss_atom / wgmma_rs_atom / wgmma: each atom is a T.gemm of A restricted to "
     "its k step, added where the atom's rows and columns are (cuda/intrinsics/macro/wgmma_atoms.py); fences, "
     "arrive, commit and wait do nothing (tl.dot is synchronous)"),
    ("tilelang.cuda.intrinsics.macro.wgmma_macro_generator.compute_gmma_descriptor", UNSUPPORTED,
     "importable; calling it raises (hardware descriptor bits come from TVM layouts)"),
    ("break / continue (and T.loop_break) in kernel loops", SUPPORTED,
     "in T.serial, T.unroll, range and while loops, also under per-thread conditions in the thread view "
     "(loop-carried flags: Triton has no break); in T.Parallel / T.Pipelined an error at the line"),
    ("while loops with a per-thread condition (thread view)", SUPPORTED,
     "each thread leaves where its own condition fails; the loop runs while any thread is in it"),
    ("vector dtypes (T.float16x2, T.int8x4, ...), T.extract_lane / Broadcast / Ramp / Shuffle", SUPPORTED,
     "vector values are taken apart lane by lane when binding (arithmetic, comparisons, casts act per lane); "
     "T.alloc_* of a vector dtype is a buffer of the element dtype with a trailing lane axis, indexed "
     "without it; a tensor parameter of a vector dtype is an error (no torch dtype holds one)"),
    ("with T.sblock(name) (T.reads / T.writes)", SUPPORTED,
     "a lexical scope: statements run in place; T.annotate_safe_value in it holds for its block and nested "
     "ones (an inner value overrides), and the enclosing values return after it"),
    ("fn.compile / fn.get_tir with T.Tensor[shape, dtype] arguments; tilelang.par_compile", SUPPORTED,
     "an annotation in place of a tensor binds the eager kernel's T.const sizes (its shape checked against the "
     "declaration; another dtype warned about, the declaration's compiled, as TileLang does); "
     "fn.parse_cache_key(*args) gives the key a call is cached under; get_tir gives the @T.prim_func (lazy) or the bound TileIR (eager), which tilelang.compile "
     "and par_compile take; par_compile compiles one by one (Triton compiles at the first launch)"),
]  # fmt: skip


def symbols_path():
    return resources.files("tile2triton") / "data" / "tilelang_T_symbols.txt"


def load_symbols() -> tuple[str, list[str]]:
    """(header, sorted symbol names) of TileLang's T namespace."""
    lines = symbols_path().read_text().splitlines()
    header = " ".join(line.lstrip("# ").strip() for line in lines if line.startswith("#"))
    names = [line.split()[0] for line in lines if line.strip() and not line.startswith("#")]
    return header, names


_VECTOR_DTYPE = re.compile(r"^(\w+?)x(\d+)$")  # float16x2: element dtype float16, 2 lanes


def supported_names() -> dict:
    """name -> how it is supported (a binder rule, or a language value).  A ``__t2t__`` tag is the
    binder's name for the primitive (tests/test_compat.py checks that the binder has each one)."""
    from . import language as T
    from .language.dtypes import vector_parts

    out = {}
    names = set(getattr(T, "__all__", ())) | {n for n in dir(T) if n.startswith("__") and not n.endswith("__")}
    for name in sorted(names):
        obj = getattr(T, name, None)
        tag = getattr(obj, "__t2t__", None)
        if tag is not None:
            out[name] = "binder rule" if tag == name else f"binder rule ({tag})"
            if name in SUPPORTED_NOTES:
                out[name] += f"; {SUPPORTED_NOTES[name]}"
        elif name in LANGUAGE_VALUES:
            out[name] = LANGUAGE_VALUES[name]
        elif isinstance(obj, T.DType) and obj.supported:
            out[name] = f"dtype ({obj.name})" if obj.name == name else f"dtype (alias of {obj.name})"
        elif (
            isinstance(obj, T.DType) and _VECTOR_DTYPE.match(obj.name) and _VECTOR_DTYPE.match(obj.name)[1] in T.DTYPES
        ):
            out[name] = (
                "vector dtype: values lane by lane; on-chip buffers and global tensors with a trailing lane axis "
                "(a tensor of the element dtype: T.Tensor((M, N), T.float32x2) takes float32 (M, N, 2))"
            )
        elif isinstance(obj, T.DType) and vector_parts(obj) is not None:
            out[name] = (
                "vector of packed 4-bit values: the dtype of global tensors (a trailing lane axis of packed bytes)"
            )
    return out


def _accepted(name: str) -> bool:
    """A no-effect symbol counts as accepted only when tile2triton.language defines it."""
    from . import language as T

    return hasattr(T, name)


def _tir_names(all_symbols) -> set:
    return {n for n in all_symbols if n in _TIR_NAMES}


def classify(name: str, supported: dict | None = None, tir: set | None = None):
    """(status, note) for one TileLang T symbol; status None when unclassified."""
    supported = supported_names() if supported is None else supported
    if name in NO_EFFECT_REASONS:
        if _accepted(name):
            return NO_EFFECT, NO_EFFECT_REASONS[name]
        return UNSUPPORTED, f"not accepted yet (it would have no effect: {NO_EFFECT_REASONS[name]})"
    if name in supported:
        return SUPPORTED, supported[name]
    if name in UNSUPPORTED_REASONS:
        return UNSUPPORTED, UNSUPPORTED_REASONS[name]
    for pattern, reason in UNSUPPORTED_PATTERNS:
        if fnmatch.fnmatchcase(name, pattern):
            return UNSUPPORTED, reason
    if tir is not None and name in tir:
        return UNSUPPORTED, TIR_REASON
    return None, ""


def matrix() -> list[tuple[str, str, str]]:
    _header, names = load_symbols()
    supported = supported_names()
    tir = _tir_names(names)
    return [(n, *classify(n, supported, tir)) for n in names]


def render_markdown() -> str:
    header, _names = load_symbols()
    rows = matrix()
    counts: dict = {}
    for _n, status, _note in rows:
        counts[status or "UNCLASSIFIED"] = counts.get(status or "UNCLASSIFIED", 0) + 1
    out = [
        "# TileLang `T` namespace and the Python API beyond it: compatibility matrix",
        "",
        "Generated by `python -m tile2triton.compat > docs/compat.md`; do not edit by hand.",
        f"Symbol list: `tile2triton/data/tilelang_T_symbols.txt` ({header}).",
        "Every name is *supported* (a binding rule in `tile2triton.frontend.rules.RULES` or a value of",
        "`tile2triton.language`), *accepted (no effect)* (a hint Triton has no use for; why results do not change)",
        "or *refused* (why; a kernel that uses it fails at the user's line with that reason). The reasons are kept",
        "in `tile2triton/compat.py`.",
        "",
        "## TileLang's Python API beyond `T`",
        "",
        "| module / name | status | note |",
        "|---|---|---|",
        *(f"| `{name}` | {status} | {note.replace('|', '/')} |" for name, status, note in BEYOND_T),
        "",
        "## The `T` namespace",
        "",
        " · ".join(f"{k}: {v}" for k, v in sorted(counts.items())),
        "",
        "| symbol | status | note |",
        "|---|---|---|",
    ]
    for name, status, note in rows:
        out.append(f"| `T.{name}` | {status or '**UNCLASSIFIED**'} | {note.replace('|', '/')} |")
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------- extraction
# Statically evaluate ``__all__`` of ``tilelang.language`` from a wheel's sources: module-level
# literal assignments, ``+``/``*``-unpacking, ``tuple(dict.fromkeys(...))``, comprehensions, and
# ``from M import __all__ as X`` / ``import M as X`` (X.__all__) are followed; nothing is imported.
_SAFE_CALLS = {"tuple", "list", "set", "frozenset", "sorted", "dict", "fromkeys", "range", "str", "len"}


class _ModuleView:
    def __init__(self, ns):
        self.__dict__.update(ns)


class WheelReader:
    def __init__(self, wheel_path: str):
        self.zip = zipfile.ZipFile(wheel_path)
        self.files = set(self.zip.namelist())
        self.cache: dict = {}
        self.roots = {"tilelang": "", "tvm": "tilelang/3rdparty/tvm/python/"}

    def module_file(self, dotted: str):
        root = dotted.split(".")[0]
        prefix = self.roots.get(root)
        if prefix is None:
            return None
        base = prefix + dotted.replace(".", "/")
        for cand in (base + ".py", base + "/__init__.py"):
            if cand in self.files:
                return cand
        return None

    def resolve(self, current: str, is_pkg: bool, module: str | None, level: int) -> str:
        if level == 0:
            return module or ""
        parts = current.split(".")
        if not is_pkg:
            parts = parts[:-1]
        parts = parts[: len(parts) - (level - 1)] if level > 1 else parts
        return ".".join(parts + ([module] if module else []))

    def namespace(self, dotted: str) -> dict:
        if dotted in self.cache:
            return self.cache[dotted]
        ns: dict = {}
        self.cache[dotted] = ns
        path = self.module_file(dotted)
        if path is None:
            return ns
        is_pkg = path.endswith("__init__.py")
        tree = ast.parse(self.zip.read(path).decode())
        self._run(tree.body, ns, dotted, is_pkg)
        return ns

    def exports(self, dotted: str) -> list:
        ns = self.namespace(dotted)
        if "__all__" in ns and isinstance(ns["__all__"], (list, tuple)):
            return list(ns["__all__"])
        return [k for k in ns if not k.startswith("_")]

    def _run(self, body, ns, dotted, is_pkg):
        for stmt in body:
            if isinstance(stmt, ast.ImportFrom) and stmt.module != "__future__":
                mod = self.resolve(dotted, is_pkg, stmt.module, stmt.level)
                for alias in stmt.names:
                    if alias.name == "*":
                        src = self.namespace(mod)
                        for k in self.exports(mod):
                            ns[k] = src.get(k, k)
                    elif alias.name == "__all__":
                        ns[alias.asname or "__all__"] = tuple(self.exports(mod))
                    else:
                        src = self.namespace(mod)
                        sub = self.module_file(mod + "." + alias.name)
                        value = _ModuleView(self.namespace(mod + "." + alias.name)) if sub else src.get(alias.name)
                        ns[alias.asname or alias.name] = value if value is not None else alias.name
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname:
                        ns[alias.asname] = _ModuleView(self.namespace(alias.name))
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                ns[stmt.name] = stmt.name
            elif isinstance(stmt, ast.If):
                test = ast.unparse(stmt.test)
                if "TYPE_CHECKING" in test:
                    self._run(stmt.orelse if not test.startswith("not") else stmt.body, ns, dotted, is_pkg)
                else:
                    self._run(stmt.body, ns, dotted, is_pkg)
            elif isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For)):
                self._exec(stmt, ns)
            elif isinstance(stmt, ast.Try):
                self._run(stmt.body, ns, dotted, is_pkg)

    def _exec(self, stmt, ns):
        calls_ok = all(
            not isinstance(n, ast.Call)
            or (isinstance(n.func, ast.Name) and n.func.id in _SAFE_CALLS)
            or (isinstance(n.func, ast.Attribute) and n.func.attr in _SAFE_CALLS)
            for n in ast.walk(stmt)
        )
        if calls_ok:
            try:
                code = compile(ast.Module([stmt], []), "<tilelang>", "exec")
                ns["__builtins__"] = {k: getattr(builtins, k) for k in _SAFE_CALLS if hasattr(builtins, k)}
                try:
                    exec(code, ns)  # noqa: S102  (literal list arithmetic only: calls are whitelisted)
                finally:
                    del ns["__builtins__"]
                return
            except Exception:  # noqa: BLE001
                pass
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name) and n.id not in ns:
                    ns[n.id] = n.id


def extract_symbols(wheel_path: str) -> tuple[str, list[str], list[str]]:
    """(version, sorted T names, sorted names that come from TVM's tirx script parser)."""
    reader = WheelReader(wheel_path)
    names = sorted(set(reader.exports("tilelang.language")))
    tir = set(reader.exports("tvm.tirx.script.parser"))
    m = re.search(r"tilelang-([0-9][^-]*)-", wheel_path)
    version = m.group(1) if m else "unknown"
    return version, names, sorted(tir & set(names))


# Names TileLang takes from TVM's TIR script parser (recorded by --extract, see the data file).
def _load_tir_names() -> set:
    try:
        lines = symbols_path().read_text().splitlines()
    except FileNotFoundError:
        return set()
    return {
        line.split()[0]
        for line in lines
        if line.strip() and not line.startswith("#") and line.rstrip().endswith(" tir")
    }


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--extract"]:
        wheel = argv[1]
        version, names, tir = extract_symbols(wheel)
        tirset = set(tir)
        print(f"# TileLang {version} T namespace (import tilelang.language as T): {len(names)} names")
        print(f"# produced by: python -m tile2triton.compat --extract {wheel.rsplit('/', 1)[-1]}")
        print(
            "# (static evaluation of tilelang.language.__all__ and the modules it star-imports; 'tir' = from tvm.tirx)"
        )
        for n in names:
            print(f"{n} tir" if n in tirset else n)
        return 0
    sys.stdout.write(render_markdown())
    return 0


_TIR_NAMES = _load_tir_names()

if __name__ == "__main__":
    raise SystemExit(main())
