"""Binding rules of the thread view and warp-level primitives: ``T.get_thread_binding``, TIR's
``T.thread_binding``, ``T.get_block_binding``, lane/warp indices, warp reductions, shuffles, votes
and matches.
"""

from __future__ import annotations

from .. import ir
from ..ir import BOOL, INT32
from ..ir.exprs import as_expr, const_int, is_python_value, static
from ..language.dtypes import DTYPES, DType
from .rules_base import BinderLike, rule


def _thread_var(b: BinderLike, dim: int, node):
    if b.kernel is None:
        raise b.error("thread bindings exist only inside T.Kernel", node)
    extents = b.kernel.thread_extents
    if not isinstance(dim, int) or not 0 <= dim < 3:
        raise b.error(f"thread binding dim must be 0, 1 or 2, got {dim!r}", node)
    if dim >= len(extents):
        return 0  # threadIdx.y/z of a kernel with fewer thread dims
    if not b.kernel.thread_vars:
        b.kernel.thread_vars.extend(ir.Var(n, INT32, "thread") for n in ("tx", "ty", "tz")[: len(extents)])
    return ir.VarRef(b.kernel.thread_vars[dim])


@rule("get_thread_binding")
def bind_thread_binding(b: BinderLike, node, args):
    return _thread_var(b, args["dim"], node)


@rule("get_thread_bindings")
def bind_thread_bindings(b: BinderLike, node, args):
    return [_thread_var(b, d, node) for d in range(3)]


_THREAD_AXES = {"threadIdx.x": 0, "threadIdx.y": 1, "threadIdx.z": 2}
_BLOCK_AXES = {"blockIdx.x": 0, "blockIdx.y": 1, "blockIdx.z": 2}


@rule("thread_binding")
def bind_tir_thread_binding(b: BinderLike, node, args):
    """TIR's ``T.thread_binding(0, n, thread="threadIdx.x")``: the thread index itself, so the
    range must be the kernel's whole extent along that axis."""
    start, stop, thread = args["start"], args["stop"], args["thread"]
    if stop is None:
        start, stop = 0, start
    if b.kernel is None:
        raise b.error("T.thread_binding exists only inside T.Kernel", node)
    if thread in _BLOCK_AXES and start == 0 and _BLOCK_AXES[thread] < len(b.kernel.block_vars):
        return ir.VarRef(b.kernel.block_vars[_BLOCK_AXES[thread]])
    if thread not in _THREAD_AXES:
        raise b.error(f"T.thread_binding binds threadIdx.x/y/z (or a blockIdx at 0), got thread={thread!r}", node)
    dim = _THREAD_AXES[thread]
    extents = b.kernel.thread_extents
    extent = extents[dim] if dim < len(extents) else 1
    if not isinstance(start, int) or not isinstance(stop, int) or stop - start != extent:
        raise b.error(
            f"T.thread_binding({start}, {stop}, thread={thread!r}) must span the kernel's {extent} threads "
            f"along {thread} (tile2triton binds whole thread axes)",
            node,
        )
    var = _thread_var(b, dim, node)
    return var if start == 0 else ir.BinOp("+", as_expr(var), as_expr(start), INT32)


@rule("launch_thread")
def bind_launch_thread(b: BinderLike, node, args):
    """TIR's ``tx = T.launch_thread("threadIdx.x", n)`` inside a T.Kernel: the kernel's thread (or
    block) index along that axis, whose extent it must be."""
    thread, extent = args["thread"], args["extent"]
    if b.kernel is None:
        raise b.error("T.launch_thread stands inside a T.Kernel here (the kernel launches the blocks and threads)",
                      node)  # fmt: skip
    if thread in _BLOCK_AXES:
        axis = _BLOCK_AXES[thread]
        grid = b.kernel.grid[axis] if axis < len(b.kernel.grid) else ir.Const(1, INT32)
        if static(grid) is not None and static(as_expr(extent)) != static(grid):
            raise b.error(f"T.launch_thread({thread!r}, {extent}) must span the kernel's grid along {thread}", node)
        return ir.VarRef(b.kernel.block_vars[axis]) if axis < len(b.kernel.block_vars) else ir.Const(0, INT32)
    return bind_tir_thread_binding(b, node, {"start": 0, "stop": extent, "thread": thread})


@rule("get_block_binding")
def bind_block_binding(b: BinderLike, node, args):
    return ir.VarRef(b.kernel.block_vars[args["dim"]])


# ------------------------------------------------------------------ warp-level primitives
# Threads are grouped by TileLang's linear thread index, 32 to a warp (codegen/warp.py lowers the
# collectives over the lanes of the thread view).
WARP_SIZE = 32


def _linear_thread(b: BinderLike, node) -> ir.Expr:
    """``tx + ty * X + tz * X * Y``: the thread's index in the block, as TileLang linearises it."""
    _thread_var(b, 0, node)
    index, stride = None, 1
    for var, extent in zip(b.kernel.thread_vars, b.kernel.thread_extents):
        term = ir.VarRef(var) if stride == 1 else ir.BinOp("*", ir.VarRef(var), const_int(stride), INT32)
        index = term if index is None else ir.BinOp("+", index, term, INT32)
        stride *= static(extent)
    return index


def _warp_size(b: BinderLike, value, node, what: str = "warp_size") -> ir.Expr:
    size = WARP_SIZE if value is None else value
    if is_python_value(size) and not (isinstance(size, int) and size > 0):
        raise b.error(f"{what} must be a positive int, got {size!r}", node)
    return as_expr(size, b.loc(node))


@rule("get_lane_idx", "get_warp_idx")
def bind_lane_warp_idx(b: BinderLike, node, args, name):
    op = "%" if name == "get_lane_idx" else "//"
    return ir.BinOp(op, _linear_thread(b, node), _warp_size(b, args["warp_size"], node), INT32)


@rule("get_warp_group_idx")
def bind_warp_group_idx(b: BinderLike, node, args):
    if args["warps_per_group"] is not None and args["warp_size"] is None:
        raise b.error("T.get_warp_group_idx expects `warp_size` when specifying `warps_per_group`", node)
    size = _warp_size(b, args["warp_size"], node)
    per_group = _warp_size(b, 4 if args["warps_per_group"] is None else args["warps_per_group"], node,
                           "warps_per_group")  # fmt: skip
    return ir.BinOp("//", _linear_thread(b, node), ir.BinOp("*", size, per_group, INT32), INT32)


@rule("shuffle_elect")
def bind_shuffle_elect(b: BinderLike, node, args):
    extent = args["thread_extent"]
    if not isinstance(extent, int) or extent < 0:
        raise b.error(f"T.shuffle_elect takes a compile-time thread count >= 0, got {extent!r}", node)
    index = _linear_thread(b, node)
    if extent == 0:  # one thread of the whole block
        return ir.Compare("==", index, const_int(0), BOOL)
    return ir.Compare("==", ir.BinOp("%", index, const_int(extent), INT32), const_int(0), BOOL)


@rule("sync_warp")
def bind_sync_warp(b: BinderLike, node, args):
    b.emit(ir.Barrier(b.loc(node)))  # a block barrier orders at least what the warp's does


def _warp_operand(b: BinderLike, value, node, name: str) -> ir.Expr:
    if isinstance(value, ir.Buffer):
        raise b.error(f"T.{name} takes a value (an element such as buf[0]), not a buffer", node)
    return as_expr(value, b.loc(node))


def _warp_op(b: BinderLike, node, op: str, args: tuple, dtype: DType, group: int = WARP_SIZE, mask=None):
    _thread_var(b, 0, node)  # the collective runs over the lanes of the thread view
    if mask is not None:
        mask = as_expr(mask, b.loc(node))
        if isinstance(mask, ir.Const) and isinstance(mask.value, int) and mask.value & 0xFFFFFFFF == 0xFFFFFFFF:
            mask = None  # the full warp
    return ir.WarpOp(op, args, dtype, group, mask)


@rule("warp_reduce_sum", "warp_reduce_max", "warp_reduce_min", "warp_reduce_bitand", "warp_reduce_bitor")
def bind_warp_reduce(b: BinderLike, node, args, name):
    value = _warp_operand(b, args["value"], node, name)
    op = name[len("warp_reduce_") :]
    if op in ("bitand", "bitor") and value.dtype.is_float:
        raise b.error(f"T.{name} needs an integer value, got {value.dtype.name}", node)
    return _warp_op(b, node, op, (value,), value.dtype)


@rule("shfl_sync", "shfl_xor", "shfl_down", "shfl_up")
def bind_shuffle(b: BinderLike, node, args, name):
    lane = args["srcLane"] if name == "shfl_sync" else args["delta"]
    return _shuffle(b, node, name, name, args["value"], lane, args["width"], args["mask"])


_TVM_SHUFFLES = {
    "tvm_warp_shuffle": "shfl_sync",
    "tvm_warp_shuffle_up": "shfl_up",
    "tvm_warp_shuffle_down": "shfl_down",
}


@rule(*_TVM_SHUFFLES)
def bind_tvm_warp_shuffle(b: BinderLike, node, args, name):
    """TIR's builtins, as TVM's CUDA codegen lowers them: ``__shfl{,_up,_down}_sync(mask, value, lane_or_delta,
    width)``; ``warp_size`` (the hardware warp's, 32) does not enter the call."""
    return _shuffle(b, node, _TVM_SHUFFLES[name], name, args["value"], args["lane"], args["width"], args["mask"])


def _shuffle(b: BinderLike, node, op: str, name: str, value, lane, width, mask):
    value = _warp_operand(b, value, node, name)
    if not (isinstance(width, int) and 1 <= width <= WARP_SIZE and width & (width - 1) == 0):
        raise b.error(f"T.{name}: width must be a compile-time power of two from 1 to 32, got {width!r}", node)
    if not as_expr(lane).dtype.is_int:
        raise b.error(f"T.{name}: the lane {'index' if op == 'shfl_sync' else 'delta'} must be an integer", node)
    return _warp_op(b, node, op, (value, as_expr(lane, b.loc(node)), const_int(width)), value.dtype, mask=mask)


def _predicate(b: BinderLike, value, node, name: str) -> ir.Expr:
    pred = _warp_operand(b, value, node, name)
    if pred.dtype.is_float:
        raise b.error(f"T.{name} requires an integer or boolean predicate, but got {pred.dtype.name}", node)
    return pred


_VOTES = {  # name -> (op, result dtype, group)
    "any_sync": ("any", INT32, WARP_SIZE),
    "all_sync": ("all", INT32, WARP_SIZE),
    "ballot_sync": ("ballot", DTYPES["uint64"], WARP_SIZE),
    "ballot": ("ballot", DTYPES["uint64"], WARP_SIZE),
    "syncthreads_count": ("count", INT32, 0),
    "syncthreads_and": ("all", INT32, 0),
    "syncthreads_or": ("any", INT32, 0),
}


@rule(*_VOTES)
def bind_vote(b: BinderLike, node, args, name):
    op, dtype, group = _VOTES[name]
    pred = _predicate(b, args["predicate"], node, name)
    return _warp_op(b, node, op, (pred,), dtype, group, args.get("mask"))


@rule("activemask")
def bind_activemask(b: BinderLike, node, args):
    return _warp_op(b, node, "ballot", (const_int(1),), DTYPES["uint64"])


@rule("match_any_sync", "match_all_sync")
def bind_match(b: BinderLike, node, args, name):
    value = _warp_operand(b, args["value"], node, name)
    mask = as_expr(args["mask"], b.loc(node))
    op = "match_any" if name == "match_any_sync" else "match_all"
    return _warp_op(b, node, op, (value, ir.Cast(mask, DTYPES["uint32"])), DTYPES["uint32"], mask=mask)


@rule("__ffs")
def bind_ffs(b: BinderLike, node, args):
    value = as_expr(args["value"], b.loc(node))
    if not value.dtype.is_int:
        raise b.error(f"T.__ffs takes an integer, got {value.dtype.name}", node)
    return ir.Call("ffs", (value,), INT32)


@rule("__fns")
def bind_fns(b: BinderLike, node, args):
    operands = tuple(as_expr(args[k], b.loc(node)) for k in ("mask", "base", "offset"))
    return ir.Call("fns", operands, DTYPES["uint32"])
