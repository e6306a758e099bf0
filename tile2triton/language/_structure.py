"""``T`` names of a kernel's structure: ``T.Kernel`` and the thread view, allocation, loops,
``T.prim_func`` / ``T.macro``, the eager ``T.const``.
"""

from __future__ import annotations

from . import _sources
from ._primitive import _host_ok, _kernel_only


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


@_kernel_only("Persistent")
def Persistent(domain, wave_size, index, group_size=8):  # noqa: N802
    """A persistent kernel's loop over the tiles of ``domain``: block ``index`` of ``wave_size`` visits every
    ``wave_size``-th tile, ``group_size`` tiles of the last axis grouped together (frontend/persistent.py)."""


@_kernel_only("launch_thread")
def launch_thread(thread, extent):
    """TIR's thread launch: ``tx = T.launch_thread("threadIdx.x", 256)`` is the thread index along that
    axis (the kernel's whole extent there)."""


@_kernel_only("let")
def let(v, value, body=None):
    """Bind ``v`` (declared with ``v = T.int32()``) to ``value`` for the statements after it; with
    ``body``, the value of ``body`` with ``v`` bound (TVM's Let expression)."""


Serial = serial
Unroll = unroll
Vectorized = vectorized


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


class Ref:
    """``x: T.Ref``, a ``T.macro`` parameter's annotation: the argument (a buffer element, its indices
    taken at the call, or a ``T.alloc_var``) is passed by reference, so assigning the parameter stores
    into it, as a C++ reference (TileLang's eager builder, ``macro_arg``)."""

    def __init__(self, *args, **kwargs):
        raise TypeError("T.Ref is an annotation of T.macro parameters (x: T.Ref), not a value")


@_kernel_only("const")
def const(name, dtype="int32"):
    """Eager style: a compile-time constant bound from tensor shapes or keyword arguments."""
