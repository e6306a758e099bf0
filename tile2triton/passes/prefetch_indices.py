"""A loop's per-iteration index, loaded one iteration ahead (``TILE2TRITON_PREFETCH_INDICES``).

Sparse kernels walk a list of block indices: ``for bi in T.serial(block_count): k =
block_offset[bi]`` and then copy the tiles at ``k`` (MInference's vertical-slash attention, block
sparse attention, paged KV).  Each iteration's tile loads need that scalar first; loaded where it
is used, every iteration starts by waiting a global-memory latency for it, which Triton's
pipeliner does not hide (it pipelines tile loads, not a scalar their addresses depend on: on the
H200 the vertical-slash loop stalled 11% of its samples on that one load).  TileLang's producer
warps read it from shared memory while the consumers compute.  Here the scalar of the next
iteration is loaded at the top of each iteration into a register the loop carries::

    next_k = block_offset[clamp(start, 0, n - 1)]
    for bi in T.serial(start, stop):
        k_now = next_k
        next_k = block_offset[clamp(bi + 1, 0, n - 1)]
        ... k_now wherever the body read block_offset[bi] ...

so its latency runs under a whole iteration.  The index is clamped to the buffer's extent along
that dim: the extra load of the last iteration (and the first one of a loop that runs no
iteration) reads an element that exists, and is not used.

Taken when (checked; otherwise nothing changes) a ``T.serial`` / ``T.Pipelined`` loop of constant
step outside any ``T.Parallel`` reads an element ``buf[i0, ..., v + c, ...]`` of a global or shared
buffer with a static extent along the loop variable's dim, where:

- the loop variable ``v`` appears in that one index, as ``v`` plus or minus terms without it;
- the other indices and that term name only block indices, sizes, scalar parameters and names the
  kernel binds once at its top level from those (no thread index: the value is the block's);
- nothing in the loop writes ``buf`` (nor inline asm, which may write anything), and nothing in it
  orders memory between blocks (an atomic stronger than relaxed, a grid barrier);
- the element takes part in an address in the loop (an index, a tile operand's start), itself or
  through names bound from it: what the tile loads wait for.  An element that only decides a branch
  or a mask (block-sparse GEMM's ``if BlockMask[by, bx, k]``) is left in place: on the H200 that
  kernel went 12.5 -> 13.0 us prefetched.
"""

from __future__ import annotations

import dataclasses

from .. import ir
from ..ir.dtypes import INT32
from ..ir.exprs import ir_key, map_children, mentions, static, static_difference, substitute
from .forward_shared import written_roots
from .ir_edits import _map_exprs, _rebuild
from .uniform import uniform_buffers


def prefetch_indices(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with each such loop's index loads carried one iteration ahead (a new kernel), or
    ``kernel`` itself when no loop qualifies."""
    uniform = _uniform_names(kernel)
    allocs: list = []
    body = _body(kernel.body, uniform, allocs)
    if not allocs:
        return kernel
    # allocated at the kernel's top level, a one-element var that every thread writes alike is one
    # scalar for the block in a thread-view kernel (passes/uniform.py); where one is not (a loop
    # under an ``if`` on the thread index), it would be a value per thread: nothing is carried
    rewritten = dataclasses.replace(kernel, body=allocs + body)
    if kernel.thread_vars and not {a.buffer for a in allocs} <= uniform_buffers(rewritten):
        return kernel
    return rewritten


def _uniform_names(kernel: ir.Kernel) -> set:
    """Vars the whole block agrees on that a prefetched index may name: block indices, and names
    bound exactly once, at the kernel's top level, from such vars and constants."""
    names = set(kernel.block_vars)
    bound: dict = {}
    for s in ir.walk(kernel.body):
        if isinstance(s, ir.Let):
            bound[s.var] = bound.get(s.var, 0) + 1
    for s in kernel.body:
        if isinstance(s, ir.Let) and bound[s.var] == 1 and _names_only(s.value, names):
            names.add(s.var)
    return names


def _names_only(e, names: set, loop_var: ir.Var | None = None) -> bool:
    """``e`` is integer arithmetic on ``names``, sizes, scalar parameters, constants and ``loop_var``."""
    for sub in ir.iter_expr_tree(e):
        if isinstance(sub, ir.VarRef):
            if not (sub.var in names or sub.var is loop_var or sub.var.kind in ("size", "param")):
                return False
        elif not isinstance(sub, (ir.Const, ir.BinOp, ir.UnaryOp, ir.Cast)):
            return False
    return True


def _body(stmts: list, uniform: set, allocs: list) -> list:
    """``stmts`` with the loops in them (not in a ``T.Parallel``) prefetching; the registers they
    carry are appended to ``allocs``."""
    out = []
    for s in stmts:
        if isinstance(s, ir.For):
            s = dataclasses.replace(s, body=_body(s.body, uniform, allocs))
            before, s = _prefetch(s, uniform, allocs)
            out.extend(before)
        elif isinstance(s, ir.If):
            s = dataclasses.replace(
                s, then_body=_body(s.then_body, uniform, allocs), else_body=_body(s.else_body, uniform, allocs)
            )
        out.append(s)
    return out


def _prefetch(loop: ir.For, uniform: set, allocs: list) -> tuple[list, ir.For]:
    """(statements to put before the loop, the loop) with its index loads carried; the registers
    carrying them appended to ``allocs``."""
    step = static(loop.step)
    if loop.kind not in ("serial", "pipelined") or not isinstance(step, int) or step <= 0:
        return [], loop
    written = written_roots(loop.body)
    if None in written or any(_orders_memory(s) for s in ir.walk(loop.body)):
        return [], loop
    found: dict = {}  # ir_key of a load -> (load, dim of the loop variable)
    for s in ir.walk(loop.body):
        for e in ir.stmt_exprs(s):
            for sub in ir.iter_expr_tree(e):
                if isinstance(sub, ir.Load) and ir_key(sub) not in found:
                    dim = _index_dim(sub, loop.var, uniform)
                    if dim is not None and sub.buffer.root not in written:
                        found[ir_key(sub)] = (sub, dim)
    addressing = _address_keys(loop.body)
    found = {key: v for key, v in found.items() if key in addressing}
    if not found:
        return [], loop
    before, head, carried = [], [], {}
    for key, (load, dim) in found.items():
        name = f"next_{load.buffer.name}"
        reg = ir.Buffer(name, ir.VAR, (1,), load.buffer.dtype, load.loc)
        now = ir.Var(f"{load.buffer.name}_now", load.buffer.dtype, "let")
        allocs.append(ir.Alloc(loop.loc, reg))
        before.append(ir.Store(loop.loc, reg, (ir.Const(0, INT32),), _shifted(load, dim, loop.var, loop.start)))
        nxt = ir.BinOp("+", ir.VarRef(loop.var), ir.Const(step, INT32), INT32)
        head.append(ir.Let(loop.loc, now, ir.Load(reg, (ir.Const(0, INT32),), load.loc)))
        head.append(ir.Store(loop.loc, reg, (ir.Const(0, INT32),), _shifted(load, dim, loop.var, nxt)))
        carried[key] = ir.VarRef(now)

    def swap(e):
        if isinstance(e, ir.Load) and ir_key(e) in carried:
            return carried[ir_key(e)]
        return map_children(e, swap)

    return before, dataclasses.replace(loop, body=head + _map_all(loop.body, swap))


def _orders_memory(s) -> bool:
    """An atomic stronger than relaxed or a grid barrier: it may order the loop's reads after other
    blocks' writes, which a read moved an iteration earlier would escape."""
    return (isinstance(s, ir.Atomic) and s.order != "relaxed") or isinstance(s, ir.GridBarrier)


def _address_keys(body: list) -> set:
    """ir_keys of the loads whose values take part in a memory address in ``body``: in the index of
    an element access or the start of a tile operand, directly or through names bound in ``body``."""
    addresses = []
    for s in ir.walk(body):
        if isinstance(s, ir.Store):
            addresses.extend(s.indices)
        for value in vars(s).values():
            for v in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(v, ir.Region):
                    addresses.extend(x for x in v.starts if isinstance(x, ir.Expr))
        for e in ir.stmt_exprs(s):
            for sub in ir.iter_expr_tree(e):
                if isinstance(sub, ir.Load):
                    addresses.extend(sub.indices)
    lets = {s.var: s.value for s in ir.walk(body) if isinstance(s, ir.Let)}
    keys, names, todo = set(), set(), list(addresses)
    while todo:
        for sub in ir.iter_expr_tree(todo.pop()):
            if isinstance(sub, ir.Load):
                keys.add(ir_key(sub))
            elif isinstance(sub, ir.VarRef) and sub.var in lets and sub.var not in names:
                names.add(sub.var)
                todo.append(lets[sub.var])
    return keys


def _index_dim(load: ir.Load, var: ir.Var, uniform: set) -> int | None:
    """The dim whose index is ``var`` plus or minus terms without it, in a read of a global or shared buffer
    with a static extent there whose other indices name only ``uniform`` vars; else None."""
    if load.buffer.scope not in (ir.GLOBAL, ir.SHARED):
        return None
    dims = [d for d, i in enumerate(load.indices) if mentions(i, var)]
    if len(dims) != 1 or not isinstance(load.buffer.shape[dims[0]], int):
        return None
    if not _unit_step(load.indices[dims[0]], var) or not all(_names_only(i, uniform, var) for i in load.indices):
        return None
    return dims[0]


def _unit_step(e, var: ir.Var) -> bool:
    """``e`` is ``var`` plus or minus terms without it (it moves by one with ``var``)."""
    if isinstance(e, ir.VarRef):
        return e.var is var
    if isinstance(e, ir.BinOp) and e.op in ("+", "-"):
        if mentions(e.rhs, var):
            return e.op == "+" and not mentions(e.lhs, var) and _unit_step(e.rhs, var)
        return _unit_step(e.lhs, var)
    return False


def _shifted(load: ir.Load, dim: int, var: ir.Var, at: ir.Expr) -> ir.Load:
    """``load`` at iteration ``at``, its index along ``dim`` clamped to the buffer's extent."""
    index = substitute(load.indices[dim], var, at)
    last = load.buffer.shape[dim] - 1
    known = static_difference(index)
    if known is not None:
        clamped = ir.Const(min(max(known, 0), last), INT32)
    else:
        clamped = ir.Call("min", (ir.Call("max", (index, ir.Const(0, INT32)), INT32), ir.Const(last, INT32)), INT32)
    return ir.Load(load.buffer, (*load.indices[:dim], clamped, *load.indices[dim + 1 :]), load.loc)


def _map_all(stmts: list, fn) -> list:
    """``stmts`` with ``fn`` applied to every expression, nested statements included."""
    return [_rebuild(_map_exprs(s, fn)[0], lambda body: _map_all(body, fn)) for s in stmts]
