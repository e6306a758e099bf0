"""The ``T`` namespace: ``import tile2triton.language as T`` in place of ``tilelang.language``.

Kernel bodies are never executed as Python: tile2triton reads their source and lowers it.
The functions here carry TileLang's signatures (the binder uses them to normalise arguments)
and a ``__t2t__`` tag naming the primitive.  Called outside a kernel they raise, except the
few that TileLang also lets host code use on plain numbers (``T.ceildiv``, ``T.max``, ...).
"""

from __future__ import annotations

import builtins
import inspect as _inspect
import math

from ..layout import Fragment, Layout
from . import _sources
from .dtypes import DTYPES, DType, TypedLiteral, lookup_dtype, to_dtype
from .dtypes import POINTER as _POINTER
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
dtype = to_dtype
# raw pointers: ``a_ptr: T.ptr`` takes a tensor or its data_ptr(); T.make_tensor views memory through it
ptr = _POINTER
handle = _POINTER


class KernelOnlyError(RuntimeError):
    pass


def _kernel_only(name: str):
    def mark(fn):
        fn.__t2t__ = name

        def outside(*args, **kwargs):
            raise KernelOnlyError(f"T.{name} can only be used inside a @T.prim_func or @tilelang.jit kernel body")

        outside.__t2t__ = name
        outside.__signature_source__ = fn
        outside.__name__ = fn.__name__
        outside.__doc__ = fn.__doc__
        outside.__wrapped__ = fn
        return outside

    return mark


def _host_ok(name: str):
    """Primitives that also work on plain Python numbers in host code."""

    def mark(fn):
        fn.__t2t__ = name
        return fn

    return mark


# --- kernel launch, threads ---------------------------------------------------------------
@_kernel_only("Kernel")
def Kernel(*blocks, threads=None, prelude=None, is_cpu=False):  # noqa: N802
    """Open one device kernel with grid ``blocks``; ``as bx`` / ``as (bx, by, bz)``."""


@_kernel_only("ClusterKernel")
def ClusterKernel(*blocks, cluster_dims, threads=None, prelude=None):  # noqa: N802
    """T.Kernel launched in thread-block clusters of ``cluster_dims``: the same blocks and block
    indices (cluster-distributed shared memory is not supported), so here an ordinary T.Kernel."""


@_kernel_only("get_thread_binding")
def get_thread_binding(dim=0):
    """threadIdx of the current kernel (thread view)."""


@_kernel_only("get_thread_bindings")
def get_thread_bindings():
    """[tx, ty, tz] of the current kernel."""


@_kernel_only("thread_binding")
def thread_binding(start, stop=None, thread=None, *, annotations=None):
    """TIR's thread binding: ``kr = T.thread_binding(0, n, thread="threadIdx.x")`` (or a ``for``
    over it) names threadIdx.x, as ``T.get_thread_binding(0)`` does."""


@_kernel_only("attr")
def attr(node, attr_key, value):
    """``with T.attr(T.comm_reducer(...), "reduce_scope", ...):`` opens the scope of a
    ``T.tvm_thread_allreduce``; other attributes are scheduling hints."""


@_kernel_only("comm_reducer")
def comm_reducer(combiner, identity):
    """The combiner (``lambda x, y: x + y``) and identity of a thread all-reduce."""


@_kernel_only("tvm_thread_allreduce")
def tvm_thread_allreduce(*freduce_args, dtype=None):
    """``(count, value, cond, dest, *reduce_threads)``: ``dest`` gets the reduction of ``value``
    over the threads that differ only in ``reduce_threads``, in each of them."""


@_kernel_only("any_of")
def any_of(buffer):
    """Whether any element of ``buffer`` (a 1-D buffer, or a region spanning its last dim) is true."""


@_kernel_only("all_of")
def all_of(buffer):
    """Whether every element of ``buffer`` (a 1-D buffer, or a region spanning its last dim) is true."""


@_kernel_only("evaluate")
def evaluate(value):
    """Evaluate an expression for its effect (``T.evaluate(T.tvm_thread_allreduce(...))``)."""


@_kernel_only("get_block_binding")
def get_block_binding(dim=0):
    """blockIdx of the current kernel."""


@_kernel_only("sync_threads")
def sync_threads(barrier_id=None, arrive_count=None):
    """__syncthreads(): order shared-memory writes before reads by other threads."""


@_kernel_only("loop_break")
def loop_break():
    """Leave the innermost sequential loop (Python's ``break``)."""


@_kernel_only("break_loop")
def break_loop():
    """Leave the innermost sequential loop (TIR's spelling of ``break``)."""


@_kernel_only("continue_loop")
def continue_loop():
    """Go on with the next iteration of the innermost sequential loop (``continue``)."""


# --- allocation -----------------------------------------------------------------------------
@_kernel_only("alloc_shared")
def alloc_shared(shape, dtype, scope="shared.dyn"):
    """A block-shared tile."""


@_kernel_only("alloc_fragment")
def alloc_fragment(shape, dtype, scope="local.fragment"):
    """A block-level register tile."""


@_kernel_only("alloc_local")
def alloc_local(shape, dtype, scope="local"):
    """A per-thread (per-iteration inside T.Parallel) private array."""


@_kernel_only("alloc_global")
def alloc_global(shape, dtype, scope="global"):
    """A global-memory workspace the runtime allocates for each call (uninitialised, as in
    TileLang), shared by the prim_func's T.Kernel blocks; allocated before the first of them."""


@_kernel_only("alloc_var")
def alloc_var(dtype, init=None, scope="local.var"):
    """A mutable per-thread scalar."""


@_kernel_only("alloc_reducer")
def alloc_reducer(shape, dtype, op="sum", replication=None):
    """A reduction target: ``acc[i] += v`` (or ``T.reducer_update``) from every iteration of a
    T.Parallel combines all their contributions (op: "sum", "max" or "min")."""


@_kernel_only("empty")
def empty(shape, dtype="float32"):
    """Eager style: declare an output tensor, allocated by the runtime and returned."""


# --- loops ------------------------------------------------------------------------------------
@_kernel_only("Parallel")
def Parallel(*extents, coalesced_width=None, loop_layout=None, prefer_async=None, annotations=None):  # noqa: N802
    """Independent element-wise iterations over the whole block."""


@_host_ok("serial")
def serial(start, stop=None, step=None, *, annotations=None):
    """A sequential loop.  Outside a kernel body: the loop's frame (``language/_frames.py``), as
    TileLang's ``T.serial`` returns one there."""
    from ._frames import serial_frame

    return serial_frame(start, stop, step, annotations)


@_kernel_only("grid")
def grid(*extents):
    """Nested sequential loops over ``extents``: ``for i, j in T.grid(M, N)``."""


@_kernel_only("unroll")
def unroll(start, stop=None, step=None, *, explicit=False, unroll_factor=None, annotations=None):
    """A sequential loop, unrolled."""


@_kernel_only("vectorized")
def vectorized(start, stop=None, *, annotations=None):
    """A per-thread vector loop (semantically sequential)."""


@_kernel_only("Pipelined")
def Pipelined(start, stop=None, num_stages=0, order=None, stage=None, sync=None, group=None, annotations=None):  # noqa: N802
    """A sequential loop whose copies and compute Triton software-pipelines (``num_stages``)."""


Serial = serial
Unroll = unroll
Vectorized = vectorized


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


# --- warp specialization (Hopper): run in program order, see frontend/barriers.py -------------------
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
    (for the whole T.Kernel)."""


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


@_kernel_only("assume")
def assume(cond):
    """A fact the compiler may rely on (``T.assume(cta_id < 2)``); results do not depend on it."""


@_kernel_only("annotate_compile_flags")
def annotate_compile_flags(flags):
    """Extra nvcc flags of TileLang's CUDA build: kept in the function's attrs; there is no nvcc build here."""


@_kernel_only("annotate_pass_configs")
def annotate_pass_configs(configs):
    """The kernel's own pass configs (``{PassConfigKey.TL_ENABLE_FAST_MATH: True}``), as if given to compile."""


# --- element-wise math ------------------------------------------------------------------------
def _unary(name: str, host=None):
    def fn(x):
        if host is not None and isinstance(x, (builtins.int, builtins.float)):
            return host(x)
        if name.startswith("__") and isinstance(x, Dynamic):
            return _fastmath_on_symbol(name, x)
        raise KernelOnlyError(f"T.{name} can only be used inside a kernel body")

    fn.__name__ = name
    fn.__t2t__ = name
    fn.__doc__ = f"Element-wise {name}."
    return fn


# The class of a call expression built in host code (``tvm/tirx.py``'s ``Call`` registers itself
# here when imported; a symbol such as ``tirx.Var`` comes from that module, so it is set by then).
_host_call_class: type | None = None


def _fastmath_on_symbol(name: str, x: Dynamic):
    """``T.__exp(tirx.Var("v", "float16"))`` in host code: TileLang checks the dtype and builds a
    call expression; tile2triton records the call (only a kernel body lowers it)."""
    if not (x.dtype.is_float and x.dtype.bits >= 16):  # float16/bfloat16/float32/float64, not fp8
        raise TypeError(f"T.{name} only supports floating-point inputs, but got {x.dtype}")
    if _host_call_class is None:
        raise KernelOnlyError(f"T.{name} can only be used inside a kernel body")
    return _host_call_class(str(x.dtype), f"tl.{name}", [x])


_UNARY_HOST = {
    "exp": math.exp,
    "exp2": lambda x: 2.0**x,
    "log": math.log,
    "log2": math.log2,
    "log10": math.log10,
    "log1p": math.log1p,
    "sqrt": math.sqrt,
    "rsqrt": lambda x: 1.0 / math.sqrt(x),
    "abs": builtins.abs,
    "tanh": math.tanh,
    "sigmoid": lambda x: 1.0 / (1.0 + math.exp(-x)),
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "erf": math.erf,
    "floor": math.floor,
    "ceil": math.ceil,
    "round": builtins.round,
    "nearbyint": builtins.round,
    "trunc": math.trunc,
    "isnan": math.isnan,
    "isinf": math.isinf,
    "isfinite": math.isfinite,
}
for _name, _host in _UNARY_HOST.items():
    globals()[_name] = _unary(_name, _host)
for _name in ("__exp", "__exp10", "__log", "__log2", "__log10", "__sin", "__cos", "__tan"):
    globals()[_name] = _unary(_name)


def _symbolic_sizes(*args) -> builtins.bool:
    """Integer arguments of which at least one is a symbolic size (host-side size arithmetic)."""
    sizes = [a for a in args if not isinstance(a, builtins.bool) and isinstance(a, (builtins.int, _SizeArith))]
    return len(sizes) == len(args) and any(isinstance(a, _SizeArith) for a in args)


@_host_ok("max")
def max(a, b):  # noqa: A001
    """Binary maximum."""
    if isinstance(a, (builtins.int, builtins.float)) and isinstance(b, (builtins.int, builtins.float)):
        return builtins.max(a, b)
    if _symbolic_sizes(a, b):
        return SizeExpr("max", a, b)
    raise KernelOnlyError("T.max can only be used inside a kernel body")


@_host_ok("min")
def min(a, b):  # noqa: A001
    """Binary minimum."""
    if isinstance(a, (builtins.int, builtins.float)) and isinstance(b, (builtins.int, builtins.float)):
        return builtins.min(a, b)
    if _symbolic_sizes(a, b):
        return SizeExpr("min", a, b)
    raise KernelOnlyError("T.min can only be used inside a kernel body")


@_host_ok("pow")
def pow(a, b):  # noqa: A001
    """``a ** b``."""
    if isinstance(a, (builtins.int, builtins.float)) and isinstance(b, (builtins.int, builtins.float)):
        return a**b
    raise KernelOnlyError("T.pow can only be used inside a kernel body")


@_host_ok("ceildiv")
def ceildiv(a, b):
    """Integer ceil division (host ints too)."""
    if isinstance(a, builtins.int) and isinstance(b, builtins.int):
        return -(-a // b)
    if _symbolic_sizes(a, b):
        return SizeExpr("ceildiv", a, b)
    raise KernelOnlyError("T.ceildiv on kernel values can only be used inside a kernel body")


cdiv = ceildiv


@_host_ok("floordiv")
def floordiv(a, b):
    """Floor division."""
    if isinstance(a, builtins.int) and isinstance(b, builtins.int):
        return a // b
    if _symbolic_sizes(a, b):
        return SizeExpr("//", a, b)
    raise KernelOnlyError("T.floordiv can only be used inside a kernel body")


@_host_ok("floormod")
def floormod(a, b):
    """Floor modulo."""
    if isinstance(a, builtins.int) and isinstance(b, builtins.int):
        return a % b
    raise KernelOnlyError("T.floormod can only be used inside a kernel body")


@_kernel_only("truncdiv")
def truncdiv(a, b):
    """Division rounding toward zero."""


@_kernel_only("truncmod")
def truncmod(a, b):
    """Remainder with the dividend's sign."""


@_kernel_only("fmod")
def fmod(a, b):
    """Float remainder with the dividend's sign."""


@_kernel_only("atan2")
def atan2(a, b):
    """Element-wise atan2."""


@_kernel_only("if_then_else")
def if_then_else(cond, true_value, false_value):
    """Select; only the taken side's memory access happens."""


Select = if_then_else


@_kernel_only("clamp")
def clamp(dst, min_val, max_val):
    """``min(max(dst, min_val), max_val)`` (TileLang's parameter names)."""


@_host_ok("cast")
def cast(value, dtype, round="", sat=True, rbits=None):  # noqa: A002
    """Convert ``value`` to ``dtype`` (``round`` / ``sat`` / ``rbits``: see tile2triton/language/tir/ir.py).
    On a Python number it gives a typed literal, like ``T.float32(1.0)``."""
    from .tir.ir import CastOptionUnsupported, check_cast_options, unsupported_cast_option

    check_cast_options(round, sat, rbits)
    target = to_dtype(dtype)
    if isinstance(value, TypedLiteral):
        value = value.value
    number = isinstance(value, (builtins.bool, builtins.int, builtins.float))
    why = unsupported_cast_option(round, sat, target.name)
    # a number the target holds exactly converts to itself under every rounding and saturation mode
    if why is not None and not (number and _exact_in(value, target)):
        raise CastOptionUnsupported(why)
    if number:
        return TypedLiteral(target, value)
    raise KernelOnlyError(
        "T.cast of a run-time value can only be used inside a @T.prim_func or @tilelang.jit kernel body"
    )


@_kernel_only("Cast")
def Cast(dtype, value):  # noqa: N802
    """TVM's ``Cast(dtype, value)`` (dtype first)."""


@_kernel_only("reinterpret")
def reinterpret(value, dtype):
    """Bit cast."""


def _exact_in(value, dtype: DType) -> bool:
    import math

    import torch

    if not math.isfinite(value):
        return False
    try:
        converted = torch.tensor(value, dtype=torch.float64).to(dtype.as_torch()).double().item()
    except (TypeError, RuntimeError):
        return False
    return converted == value


@_host_ok("infinity")
def infinity(dtype):
    """+inf of ``dtype``."""
    return TypedLiteral(to_dtype(dtype), builtins.float("inf"))


@_host_ok("max_value")
def max_value(dtype):
    """Largest finite value of ``dtype``."""
    return TypedLiteral(to_dtype(dtype), "max")


@_host_ok("min_value")
def min_value(dtype):
    """Smallest finite value of ``dtype``."""
    return TypedLiteral(to_dtype(dtype), "min")


def _binary_op(name: str):
    def fn(a, b):
        raise KernelOnlyError(f"T.{name} can only be used inside a kernel body")

    fn.__name__ = name
    fn.__t2t__ = name
    fn.__doc__ = f"Element-wise {name}."
    return fn


for _name in ("bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right"):
    globals()[_name] = _binary_op(_name)


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


@_kernel_only("rng_init")
def rng_init(seed, seq=None, off=0, generator="curandStatePhilox4_32_10_t"):
    """Start the kernel's random stream: Philox keyed by ``seed`` and ``seq``, from counter ``off``."""


@_kernel_only("rng_rand")
def rng_rand():
    """The next uint32 of the stream started by ``T.rng_init`` (one per T.Parallel element)."""


@_kernel_only("rng_rand_float")
def rng_rand_float(bit=32, dist="uniform"):
    """The next float32/float64 of the stream: uniform in [0, 1) or standard normal."""


def _packed_load(name: str, bits: int, predicated: bool):
    if predicated:

        def fn(src, pred=None):
            pass

    else:

        def fn(src):
            pass

    fn.__name__ = name
    fn.__doc__ = f"The {bits} bits at ``src`` (x[i] or x[i:i+n]): a plain load of the elements they cover."
    return _kernel_only(name)(fn)


def _packed_store(name: str, bits: int, predicated: bool):
    if predicated:

        def fn(dst, value, pred=None):
            pass

    else:

        def fn(dst, value):
            pass

    fn.__name__ = name
    fn.__doc__ = f"Store the {bits} bits of ``value`` at ``dst``: a plain store of the elements they cover."
    return _kernel_only(name)(fn)


for _bits in (32, 64, 128, 256):
    globals()[f"ldg{_bits}"] = _packed_load(f"ldg{_bits}", _bits, True)
    globals()[f"stg{_bits}"] = _packed_store(f"stg{_bits}", _bits, True)
for _bits in (32, 64, 128):
    globals()[f"lds{_bits}"] = _packed_load(f"lds{_bits}", _bits, False)
    globals()[f"sts{_bits}"] = _packed_store(f"sts{_bits}", _bits, False)


@_kernel_only("__ldg")
def __ldg(load_or_buf, index=None):
    """``x[i]`` through the read-only data cache: a plain load (Triton picks the cache path)."""


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


@_kernel_only("bitwise_not")
def bitwise_not(x):
    """``~x``."""


@_kernel_only("print")
def print(obj=None, msg="", warp_group_id=0, warp_id=0):  # noqa: A001
    """Device print."""


@_kernel_only("device_assert")
def device_assert(condition, msg="", no_stack_info=False):
    """Check ``condition`` on the device (Triton checks it in debug mode: ``TRITON_DEBUG=1``)."""


# --- inline PTX: the escape hatch for what Triton cannot say portably (tile2triton extension) ------
@_kernel_only("inline_asm")
def inline_asm(asm, constraints, *args, dtype="float32", is_pure=True, pack=1):
    """Element-wise inline PTX, lowered to ``tl.inline_asm_elementwise(asm, constraints, args,
    dtype, is_pure, pack)``: ``$0`` is the result, ``$1...`` the arguments (``"=r,r"``: one 32-bit
    result, one 32-bit argument).  GPU only: under Triton's interpreter it is a compile error."""


@_kernel_only("ptx_ex2")
def ptx_ex2(x):
    """``ex2.approx.f32``: fast 2**x (max relative error ~2**-22). Interpreter: ``tl.exp2``."""


@_kernel_only("ptx_tanh")
def ptx_tanh(x):
    """``tanh.approx.f32``: fast tanh (max abs error ~2**-10.9). Interpreter: exact-enough fp32 tanh."""


@_kernel_only("ptx_rcp")
def ptx_rcp(x):
    """``rcp.approx.ftz.f32``: fast 1/x (denormals flushed). Interpreter: ``1.0 / x``."""


@_kernel_only("ptx_rsqrt")
def ptx_rsqrt(x):
    """``rsqrt.approx.ftz.f32``: fast 1/sqrt(x). Interpreter: ``tl.rsqrt``."""


@_kernel_only("ptx_laneid")
def ptx_laneid():
    """``%laneid`` of the hardware thread computing each element (int32).  Interpreter: the
    element's logical thread index modulo 32."""


@_kernel_only("ptx_warpid")
def ptx_warpid():
    """``%warpid`` of the hardware thread computing each element (int32; PTX documents it as
    volatile).  Interpreter: the element's logical thread index // 32."""


@_kernel_only("ptx_smid")
def ptx_smid():
    """``%smid``: the SM running this program (int32).  Interpreter: 0."""


@_kernel_only("ptx_clock64")
def ptx_clock64():
    """``%clock64``: the SM's cycle counter (int64).  Interpreter: 0."""


@_kernel_only("ptx_globaltimer")
def ptx_globaltimer():
    """``%globaltimer``: nanoseconds, a global clock (int64).  Interpreter: 0."""


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


@_kernel_only("match_any_sync")
def match_any_sync(value, mask=_FULL_WARP_MASK):
    """``__match_any_sync``: uint32 mask of the lanes of the warp (in ``mask``) whose ``value`` equals the thread's."""


@_kernel_only("match_all_sync")
def match_all_sync(value, mask=_FULL_WARP_MASK):
    """``__match_all_sync``: ``mask`` when all lanes in it hold the same ``value``, else 0 (uint32)."""


@_kernel_only("activemask")
def activemask():
    """``__activemask``: uint64 mask of the warp's lanes executing the call (under the active conditions)."""


def _predicate_dtype(value) -> str | None:
    """The dtype TVM's ``tirx.convert`` gives a predicate (None when host code cannot tell)."""
    if isinstance(value, builtins.bool):
        return "bool"
    if isinstance(value, builtins.int):
        return "int32"
    if isinstance(value, builtins.float):
        return "float32"
    dtype = getattr(value, "dtype", None)
    return None if dtype is None else str(dtype)


def _vote(name: str, result_dtype: str):
    """A vote primitive.  In host code (as in TileLang) it checks its predicate and builds a call
    expression that only a kernel body lowers; in a kernel the binder's rule lowers it."""

    def mark(fn):
        fn.__t2t__ = name

        def outside(*args, **kwargs):
            bound = _inspect.signature(fn).bind(*args, **kwargs)
            bound.apply_defaults()
            dtype = _predicate_dtype(bound.arguments["predicate"])
            if dtype is not None and to_dtype(dtype).is_float:
                raise TypeError(f"T.{name} requires an integer or boolean predicate, but got {dtype}.")
            if _host_call_class is None:
                raise KernelOnlyError(f"T.{name} can only be used inside a kernel body")
            return _host_call_class(result_dtype, f"tl.{name}", list(bound.arguments.values()))

        outside.__t2t__ = name
        outside.__signature_source__ = fn
        outside.__name__ = fn.__name__
        outside.__doc__ = fn.__doc__
        outside.__wrapped__ = fn
        return outside

    return mark


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


@_kernel_only("fast_rcp")
def fast_rcp(x):
    """TileLang's fast reciprocal: ``rcp.approx`` on the GPU."""


# --- function definition -----------------------------------------------------------------------
def prim_func(func=None, *, eager_jit=False):
    """Mark a kernel function; tile2triton reads its source when it is compiled."""
    if func is None:
        return lambda f: _sources.read("prim_func", f)
    return _sources.read("prim_func", func)


def macro(func=None):
    """A helper inlined at each call inside a kernel body."""
    if func is None:
        return lambda f: _sources.read("macro", f)
    return _sources.read("macro", func)


class _SizeArith:
    """Integer arithmetic on symbolic sizes in host code: ``T.Tensor((M // 128, 2 * N), ...)``
    builds a ``SizeExpr`` the binder turns into a kernel expression (evaluated at call time)."""

    def _op(self, op, other, swap=False):
        if isinstance(other, builtins.bool) or not isinstance(other, (builtins.int, _SizeArith)):
            return NotImplemented
        return SizeExpr(op, other, self) if swap else SizeExpr(op, self, other)

    def __add__(self, other):
        return self._op("+", other)

    def __radd__(self, other):
        return self._op("+", other, True)

    def __sub__(self, other):
        return self._op("-", other)

    def __rsub__(self, other):
        return self._op("-", other, True)

    def __mul__(self, other):
        return self._op("*", other)

    def __rmul__(self, other):
        return self._op("*", other, True)

    def __floordiv__(self, other):
        return self._op("//", other)

    def __rfloordiv__(self, other):
        return self._op("//", other, True)

    def __mod__(self, other):
        return self._op("%", other)

    def __rmod__(self, other):
        return self._op("%", other, True)


class SizeExpr(_SizeArith):
    """An integer expression of symbolic sizes (``op`` is + - * // % ceildiv max min)."""

    def __init__(self, op: str, lhs, rhs):
        self.op, self.lhs, self.rhs = op, lhs, rhs

    def __repr__(self) -> str:
        if self.op in ("ceildiv", "max", "min"):
            return f"T.{self.op}({self.lhs!r}, {self.rhs!r})"
        return f"({self.lhs!r} {self.op} {self.rhs!r})"


class Dynamic(_SizeArith):
    """A symbolic size bound at call time from tensor shapes (one kernel serves every size)."""

    def __init__(self, name: str, dtype="int32"):
        self.name = name
        self.dtype = to_dtype(dtype)

    def __repr__(self) -> str:
        return f"T.dynamic({self.name!r})"


def dynamic(name: str, dtype="int32"):
    """``T.dynamic("N")`` or ``T.dynamic("M, N")``."""
    names = [n for n in name.replace(",", " ").split() if n]
    if len(names) == 1:
        return Dynamic(names[0], dtype)
    return tuple(Dynamic(n, dtype) for n in names)


symbolic = dynamic
Var = Dynamic  # TileLang's T.dynamic returns a TVM Var: `isinstance(n, T.Var)` tells a symbolic size from an int


@_kernel_only("const")
def const(name, dtype="int32"):
    """Eager style: a compile-time constant bound from tensor shapes or keyword arguments."""


__all__ = [n for n in globals() if not n.startswith("_")]

# --- TileLang names beyond the primitives above (issue 12) ------------------------------------
parallel = Parallel  # TileLang exports the lower-case alias too
tfloat32 = DTYPES["float32"]  # TF32 storage is float32 (see tile2triton/language/dtypes.py)
float8_e4m3 = DTYPES["float8_e4m3fn"]  # TileLang maps it to e4m3fn on NVIDIA GPUs
# fp8/fp6/fp4/int4 formats with no Triton dtype: names for host code; a kernel using one gets a clear error
from .dtypes import UNSUPPORTED as _UNSUPPORTED_DTYPES  # noqa: E402

globals().update(_UNSUPPORTED_DTYPES)
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
