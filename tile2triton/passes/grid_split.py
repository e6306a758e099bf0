"""Barriers among blocks (``ir.GridBarrier``: ``T.sync_grid``, ``T.cluster_wait`` / ``T.cluster_sync``).

Triton has no barrier among the programs of one launch, and a spin barrier would hang under the
interpreter, which runs programs one after another.  What a grid barrier means is that every
block's work before it happens before any block's work after it, which is what two consecutive
launches give.  So a kernel is split at each grid barrier into kernels launched in order (the
runtime already launches a prim_func's kernels in order).  Declarations (allocations,
``T.make_tensor``, scalars computed from block indices and constants alone) are repeated at the top
of each later kernel.  A block-level buffer (shared, fragment) written before the barrier and read
after it is stored at the end of the kernel into a workspace with one slot per block and loaded back
at the top of the next (``_Spills``).  A per-thread value (a local or ``T.alloc_var`` of the thread
view, a scalar read from memory) crossing the barrier is a compile error naming it.

A barrier must stand in the kernel body itself or at the top of a ``T.Parallel`` body there (that
``T.Parallel`` is split in two around it: every thread runs the statements before the barrier, then
every thread the ones after, as the barrier requires); inside a loop or a condition it is an error.

A cluster barrier (``T.cluster_wait`` / ``T.cluster_sync``) waits for the blocks of one cluster.  Blocks
can only communicate through global memory here (cluster-distributed shared memory is not supported),
so where the kernel reads no global buffer it writes, the barrier only orders the block's own threads:
a block barrier.  Otherwise it is split like a grid barrier (a barrier among all blocks includes the
one among a cluster's).
"""

from __future__ import annotations

import dataclasses

from .. import ir
from ..errors import TileLangCompileError
from ..ir import INT32
from ..ir.evaluate import row_major_strides
from ..ir.exprs import as_expr, const_int, static
from .analysis import first_access, referenced_buffers

_DIVIDES = "tile2triton splits the kernel at a barrier among blocks into consecutive launches"


def split_grid_barriers(func: ir.PrimFunc) -> None:
    """Replace every kernel that holds a ``GridBarrier`` by the kernels it splits into (in place)."""
    kernels = []
    for kernel in func.kernels:
        kernels.extend(_split_kernel(kernel, _Spills(func, kernel)) if _barriers(kernel.body) else [kernel])
    func.kernels[:] = kernels


def _barriers(stmts) -> list:
    return [s for s in ir.walk(stmts) if isinstance(s, ir.GridBarrier)]


def _name(barrier: ir.GridBarrier) -> str:
    return "T.sync_grid()" if barrier.scope == "grid" else "a cluster barrier (T.cluster_wait / T.cluster_sync)"


def _split_kernel(kernel: ir.Kernel, spills: _Spills) -> list:
    if not _global_values_cross(kernel.body):
        _cluster_to_block_barriers(kernel.body)
        if not _barriers(kernel.body):
            return [kernel]
    body = _fission(kernel.body)
    for s in body:
        if not isinstance(s, ir.GridBarrier):
            nested = _barriers([s])
            if nested:
                raise TileLangCompileError(
                    f"{_name(nested[0])} inside a loop or a condition is not supported: {_DIVIDES}, so the "
                    "barrier must stand in the T.Kernel body itself (or at the top of a T.Parallel there)",
                    nested[0].loc,
                )
    groups, barriers = [[]], []
    for s in body:
        if isinstance(s, ir.GridBarrier):
            groups.append([])
            barriers.append(s)
        else:
            groups[-1].append(s)
    # a barrier with no work before it or none after it orders nothing: drop it
    kept, kept_barriers = [groups[0]], []
    for barrier, group in zip(barriers, groups[1:]):
        if _does_work(group) and any(_does_work(g) for g in kept):
            kept.append(group)
            kept_barriers.append(barrier)
        else:
            kept[-1] = kept[-1] + group
    kernels = []
    for k, group in enumerate(kept):
        before = [s for g in kept[:k] for s in g]
        after = [s for g in kept[k:] for s in g]
        prelude = []
        if k:
            prelude, saves = _carried(before, after, kept_barriers[k - 1], spills)
            kernels[-1].body.extend(saves)
        name = kernel.name if not k else f"{kernel.name}_after_barrier{k}"
        kernels.append(dataclasses.replace(kernel, name=name, body=prelude + group))
    return kernels


def _does_work(stmts) -> bool:
    """Whether ``stmts`` do more than declare (allocations, tensors over addresses, scalars that
    read no memory)."""
    for s in stmts:
        if isinstance(s, ir.Let) and _pure(s.value, {}, set()):
            continue
        if not isinstance(s, (ir.Alloc, ir.MakeTensor)):
            return True
    return False


def _fission(body: list) -> list:
    """A T.Parallel whose body holds a barrier at its top level becomes one T.Parallel per stretch
    between barriers, with the barriers between them."""
    out = []
    for s in body:
        if isinstance(s, ir.Parallel) and any(isinstance(t, ir.GridBarrier) for t in s.body):
            stretch = []
            for t in s.body:
                if isinstance(t, ir.GridBarrier):
                    if stretch:
                        out.append(dataclasses.replace(s, body=stretch))
                    out.append(t)
                    stretch = []
                else:
                    stretch.append(t)
            if stretch:
                out.append(dataclasses.replace(s, body=stretch))
        else:
            out.append(s)
    return out


def _carried(before: list, after: list, barrier: ir.GridBarrier, spills: _Spills) -> tuple[list, list]:
    """What the next kernel repeats at its top (declarations, and reloads of spilled buffers), and
    what the kernel before it stores at its end (the spills); an error where a value that cannot be
    spilled crosses the barrier."""
    what = _name(barrier)
    prelude = [s for s in before if isinstance(s, (ir.Alloc, ir.MakeTensor))]
    used_after = _vars_used(after)
    pure = _pure_lets(before)
    for s in before:
        if isinstance(s, ir.Let) and s.var in used_after:
            if s.var not in pure:
                raise TileLangCompileError(
                    f"'{s.var.name}' is computed before {what} (at {barrier.loc.line}) and used after it: {_DIVIDES}, "
                    "so only values in global memory (or computed from block indices and constants) can cross it",
                    s.loc,
                )
            prelude.append(s)
    for s in ir.walk(before):
        result = getattr(s, "result", None)
        if isinstance(s, ir.Atomic) and result is not None and result in used_after:
            raise TileLangCompileError(
                f"'{result.name}' is set before {what} (at {barrier.loc.line}) and used after it: {_DIVIDES}, "
                "so only values in global memory can cross it",
                s.loc,
            )
    saves, reloads = [], []
    for s in before:
        if not isinstance(s, ir.Alloc) or s.buffer.scope == ir.GLOBAL:
            continue
        buf = s.buffer
        written = any(buf in referenced_buffers(t) for t in before if t is not s)
        if not written or first_access(after, buf) != "read":
            continue
        if not spills.can_spill(buf):
            raise TileLangCompileError(
                f"'{buf.name}' ({buf.scope}) holds a value across {what}: {_DIVIDES}, and a per-thread value "
                f"cannot be carried across (keep '{buf.name}' in a T.alloc_global workspace or a global tensor)",
                barrier.loc,
            )
        saves.append(spills.move(buf, to_global=True, loc=barrier.loc))
        reloads.append(spills.move(buf, to_global=False, loc=barrier.loc))
    return prelude + reloads, saves


class _Spills:
    """A block-level buffer (shared, fragment, or a local outside the thread view) whose value
    crosses a split is stored at the end of one kernel into a workspace, one slot per block (a
    hidden T.alloc_global parameter the runtime allocates per call), and loaded back at the top of
    the next."""

    def __init__(self, func: ir.PrimFunc, kernel: ir.Kernel):
        self.func, self.kernel = func, kernel
        self.workspaces: dict = {}  # buffer -> its workspace

    def can_spill(self, buf: ir.Buffer) -> bool:
        if buf.scope in (ir.SHARED, ir.FRAGMENT):
            return True
        return buf.scope == ir.LOCAL and not self.kernel.thread_vars  # a thread's own locals: no

    def _block_index(self) -> ir.Expr:
        index, scale = None, None
        for var, extent in zip(self.kernel.block_vars, self.kernel.grid):
            term = ir.VarRef(var) if scale is None else ir.BinOp("*", ir.VarRef(var), scale, INT32)
            index = term if index is None else ir.BinOp("+", index, term, INT32)
            scale = extent if scale is None else _product(scale, extent)
        return index if index is not None else const_int(0)

    def _workspace(self, buf: ir.Buffer) -> ir.Buffer:
        ws = self.workspaces.get(buf)
        if ws is None:
            blocks = const_int(1)
            for extent in self.kernel.grid:
                blocks = _product(blocks, extent)
            count = static(blocks)
            shape = (count if count is not None else blocks, *buf.shape)
            ws = ir.Buffer(f"{buf.name}_across_barrier", ir.GLOBAL, shape, buf.dtype, buf.loc, row_major_strides(shape))
            self.func.workspaces.append(len(self.func.params))
            self.func.params.append(ws)
            self.workspaces[buf] = ws
        return ws

    def move(self, buf: ir.Buffer, to_global: bool, loc: ir.Loc) -> ir.Parallel:
        """``for i... in T.Parallel(shape): ws[block, i...] = buf[i...]`` (or back)."""
        ws = self._workspace(buf)
        lanes = [ir.Var(f"i{d}", INT32, "lane") for d in range(buf.ndim)]
        at = tuple(ir.VarRef(v) for v in lanes)
        slot = (self._block_index(), *at)
        if to_global:
            store = ir.Store(loc, ws, slot, ir.Load(buf, at, loc))
        else:
            store = ir.Store(loc, buf, at, ir.Load(ws, slot, loc))
        return ir.Parallel(loc, lanes, list(buf.shape), [store])


def _product(a, b):
    sa, sb = static(a), static(b)
    if sa is not None and sb is not None:
        return const_int(sa * sb)
    return ir.BinOp("*", as_expr(a), as_expr(b), INT32)


def _vars_used(stmts) -> set:
    used = set()
    for s in ir.walk(stmts):
        for e in ir.stmt_exprs(s):
            for sub in ir.iter_expr_tree(e):
                if isinstance(sub, ir.VarRef):
                    used.add(sub.var)
    return used


def _pure_lets(before: list) -> set:
    """Scalars bound once, at the top level of ``before``, from block/thread indices, parameters and
    constants alone: evaluating them again after the barrier gives the same value."""
    bound = {}
    for s in ir.walk(before):
        if isinstance(s, ir.Let):
            bound[s.var] = bound.get(s.var, 0) + 1
    pure = set()
    for s in before:
        if isinstance(s, ir.Let) and bound[s.var] == 1 and _pure(s.value, bound, pure):
            pure.add(s.var)
    return pure


def _pure(e, bound: dict, pure: set) -> bool:
    for sub in ir.iter_expr_tree(e):
        if isinstance(sub, (ir.Load, ir.WarpOp, ir.InlineAsm)):
            return False
        if isinstance(sub, ir.VarRef) and sub.var in bound and sub.var not in pure:
            return False
    return True


def _global_values_cross(stmts) -> bool:
    """Whether a block may read a global buffer that some block writes (the only way values pass
    between blocks here)."""
    written, read = set(), set()
    for s in ir.walk(stmts):
        for load in ir.loads_in(s):
            read.add(load.buffer.root)
        if isinstance(s, ir.Store):
            written.add(s.buffer.root)
        for field, value in vars(s).items():
            target = value.buffer if isinstance(value, (ir.Region, ir.Load)) else None
            if target is None:
                continue
            if field in ("dst", "c"):
                written.add(target.root)
            if field in ("src", "a", "b", "value") or isinstance(s, (ir.Atomic, ir.Gemm)):
                read.add(target.root)
    return any(b.scope == "global" for b in written & read)


def _cluster_to_block_barriers(stmts) -> None:
    for i, s in enumerate(stmts):
        if isinstance(s, ir.GridBarrier) and s.scope == "cluster":
            stmts[i] = ir.Barrier(s.loc)
        for attr in ("body", "then_body", "else_body"):
            child = getattr(s, attr, None)
            if child:
                _cluster_to_block_barriers(child)
