"""Tensor-core fragment operations (``TensorCoreIntrinEmitter``'s ``ldmatrix_a/b``, ``mma``,
``mma_atom``, ``stmatrix``; ``cuda/intrinsics/macro/mma_atoms.py``): the ``tensor_core_fragments``
rule, and the rewrite that picks, at the kernel's end, which of their two forms each one keeps.

A fragment operation reads or writes per-thread local arrays in the tensor-core layouts.  The rule
binds two forms of it into a ``FragmentOp`` statement:

* the exact form: the emitter's per-element code on the thread's local arrays;
* the tile form: the same operation on the block tiles the fragments of all threads stand for
  (``emitter.fragment_tile``), one shadow tile per local array: ldmatrix copies the k step's slice
  of the shared tile, mma is a ``T.gemm``, stmatrix copies the C tile out.

``resolve_fragment_ops`` runs when the kernel's body is bound.  First a loop nest of ``mma_atom``
over every atom row and column is bound again as ``mma``.  The local arrays that fragment
operations name are grouped (an mma joins its A, B and C); a group keeps the tile form when no other
statement reads or writes its arrays (a whole-array ``T.fill`` / ``T.clear`` is allowed: it fills the
shadow), every operation of the group has a tile form (the kernel's threads are the emitter's, none
runs under a per-thread condition or in ``T.Parallel``) and each array stands for one tile.  The
group's arrays are then replaced by their shadows.  Otherwise the exact form stays: other code sees
the fragments as TileLang lays them out.

Then a sequential loop whose body is ``ldmatrix_a(ki); ldmatrix_b(ki); mma`` on shadows used nowhere
else (copies of k slices that advance by their width with the loop, and a gemm of them) is one gemm
over the loop's whole k range: the sum over the steps of the slices' products is the product of the
union.  ``FragmentOp`` statements never leave the binder.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import ir
from ..errors import TileLangCompileError
from ..ir import INT32
from ..ir.exprs import const_int, mentions, static, static_difference, substitute
from .regions import whole
from .rules_base import BinderLike, rule


@dataclass(eq=False)
class FragmentOp(ir.Stmt):
    """A fragment operation with both forms (removed before the IR leaves the binder)."""

    op: str  # the emitter method
    call: object  # the emitter's mma_atoms.FragmentCall
    values: dict  # its arguments by parameter name
    node: object  # the call's AST node
    arrays: tuple  # the local arrays it names as fragments
    fragments: dict  # local array -> its shadow tile (empty when there is no tile form)
    body: list  # the exact form
    tile: list | None  # the tile form, or None


@rule("tensor_core_fragments")
def bind_fragment_op(b: BinderLike, node, args):
    """``emitter.<op>(...)`` (``mma_atoms.FragmentCall``): both forms of the operation."""
    call = args["_op"]
    pos, kw = list(args["args"]), dict(args["kwargs"])
    try:
        bound = call.signature.bind(*pos, **kw)
    except TypeError as exc:
        raise b.error(f"{call.name}{call.signature}: {exc}", node) from None
    bound.apply_defaults()
    values = dict(bound.arguments)
    arrays = tuple(values[p] for p in call.fragments if isinstance(values[p], ir.Buffer))
    exact = _bound(b, call.exact, node, pos, kw)
    fragments, tile = {}, None
    if call.tile is not None and _tile_allowed(b, call):
        for param, role in call.fragments.items():
            shadow = _shadow(b, call.emitter, values[param], role, node)
            if shadow is None:
                fragments = {}
                break
            fragments[values[param]] = values[param] = shadow
        else:
            try:
                tile = _bound(b, call.tile, node, list(values.values()), {})  # same order as the method
            except TileLangCompileError:
                tile, fragments = None, {}
    op = FragmentOp(b.loc(node), call.name, call, dict(bound.arguments), node, arrays, fragments, exact, tile)
    if tile is None:
        op.fragments = {}
    b.emit(op)


def _bound(b: BinderLike, macro, node, pos, kw) -> list:
    body: list = []
    b.body_stack.append(body)
    try:
        b.inline_macro(macro, node, pos, kw)
    finally:
        b.body_stack.pop()
    return body


def _tile_allowed(b: BinderLike, call) -> bool:
    """The tile form stands for every thread's fragments: all the emitter's threads run it alike."""
    emitter = call.emitter
    return (
        b.kernel is not None
        and emitter.thread_var is None
        and b.kernel.threads == emitter.threads
        and len(b.kernel.thread_extents) == 1  # the emitter numbers threads by threadIdx.x alone
        and b.parallel_depth == 0
        and getattr(b, "ws_threads", None) is None
    )


_LAYOUT = ("block_row_warps", "block_col_warps", "warp_row_tiles", "warp_col_tiles", "n_dim", "k_dim",
           "is_m_first", "a_transposed", "b_transposed")  # fmt: skip


def _shadow(b: BinderLike, emitter, buf, role: str, node) -> ir.Buffer | None:
    """The block tile standing for local array ``buf`` in ``role`` (one per array and shape)."""
    shape, dtype, per_thread = emitter.fragment_tile(role)
    if not isinstance(buf, ir.Buffer) or buf.scope != ir.LOCAL or buf.ndim != 1 or buf.dtype != dtype:
        return None
    if not isinstance(buf.shape[0], int) or buf.shape[0] < per_thread:
        return None
    shadows = b.fragment_shadows
    # emitters that lay fragments out differently give different tiles (the group then stays exact)
    layout = tuple(getattr(emitter, a) for a in _LAYOUT)
    key = (buf, tuple(shape), layout)
    if key not in shadows:
        shadows[key] = ir.Buffer(b.fresh_name(f"{buf.name}_tile"), ir.FRAGMENT, tuple(shape), buf.dtype, buf.loc)
    return shadows[key]


# ====================================================================== the kernel's end
def resolve_fragment_ops(b: BinderLike, kernel: ir.Kernel) -> None:
    """Give every ``FragmentOp`` of ``kernel`` its form (see the module docstring)."""
    if not any(isinstance(s, FragmentOp) for s in ir.walk(kernel.body)):
        return  # no emitter here: the kernel is left as bound
    kernel.body = _collapse_atom_loops(b, kernel.body)
    ops: list[tuple[FragmentOp, bool]] = []
    _collect(kernel.body, True, ops)
    if not ops:
        return
    parent: dict = {}

    def find(x):
        while parent.setdefault(x, x) is not x:
            x = parent[x]
        return x

    shadows: dict = {}  # local array -> set of shadows
    refused: set = set()
    for op, uniform in ops:
        arrays = list(op.arrays)
        for a in arrays:
            find(a)
            shadows.setdefault(a, set())
            if a in op.fragments:
                shadows[a].add(op.fragments[a])
        for a in arrays[1:]:
            parent[find(a)] = find(arrays[0])
        # a lone mma_atom (one not collapsed into mma above) keeps the exact form: its tile form (the
        # whole product added under an atom mask) gave wrong results on the H200 (Triton 3.6)
        if op.tile is None or op.call.atoms is not None or not uniform:
            refused.update(arrays)
    refused |= _escaped(kernel.body, set(shadows), True)
    refused |= {a for a, s in shadows.items() if len(s) != 1}
    bad_groups = {find(a) for a in refused}
    tiled = {a: next(iter(s)) for a, s in shadows.items() if find(a) not in bad_groups}
    kernel.body = _rewrite(kernel.body, tiled)
    if tiled:
        kernel.body = _fuse_k_loops(b, kernel.body, set(tiled.values()))
    if kernel.thread_vars and not _mentions(kernel.body, set(kernel.thread_vars)):
        kernel.thread_vars.clear()  # only the exact forms left out used the thread view


def _collapse_atom_loops(b: BinderLike, body: list) -> list:
    """``for i, j in T.grid(warp_rows, warp_cols): emitter.mma_atom(A, B, C, i, j)`` -> ``emitter.mma(A,
    B, C)`` (both loop orders), bound again at the call (``FragmentCall.atoms`` names the method)."""
    out: list = []
    for s in body:
        for attr in ("then_body", "else_body") if isinstance(s, ir.If) else ("body",):
            child = getattr(s, attr, None)
            if child and not isinstance(s, FragmentOp):
                setattr(s, attr, _collapse_atom_loops(b, child))
        whole_op = _atom_loop_nest(s)
        if whole_op is None:
            out.append(s)
            continue
        op, method = whole_op
        call = getattr(op.call.emitter, method)
        rest = [v for p, v in op.values.items() if p not in op.call.atoms[:2]]
        stmts = _bound_rule(b, op.node, call, rest[: len(call.signature.parameters)])
        out.extend(stmts)
    return out


def _atom_loop_nest(s) -> tuple | None:
    """(the FragmentOp, the method it stands for) when ``s`` is a loop nest over all its atoms."""
    if not isinstance(s, ir.For) or len(s.body) != 1 or not isinstance(s.body[0], ir.For):
        return None
    inner = s.body[0]
    if len(inner.body) != 1 or not isinstance(inner.body[0], FragmentOp):
        return None
    op = inner.body[0]
    if op.call.atoms is None or op.tile is None:
        return None
    m_param, n_param, method = op.call.atoms
    emitter = op.call.emitter
    extents = {}
    for loop in (s, inner):
        if static(loop.start) != 0 or static(loop.step) != 1 or static(loop.stop) is None or loop.kind == "vectorized":
            return None
        extents[loop.var] = static(loop.stop)
    m, n = op.values.get(m_param), op.values.get(n_param)
    if not (isinstance(m, ir.VarRef) and isinstance(n, ir.VarRef)) or {m.var, n.var} != set(extents):
        return None
    if m.var is n.var or extents[m.var] != emitter.warp_rows or extents[n.var] != emitter.warp_cols:
        return None
    others = [v for p, v in op.values.items() if p not in (m_param, n_param)]
    if any(mentions(v, var) for v in others for var in extents):
        return None
    return op, method


def _bound_rule(b: BinderLike, node, call, pos: list) -> list:
    body: list = []
    b.body_stack.append(body)
    try:
        bind_fragment_op(b, node, {"_op": call, "args": tuple(pos), "kwargs": {}})
    finally:
        b.body_stack.pop()
    return body


def _collect(body: list, uniform: bool, out: list) -> None:
    """Every FragmentOp, with whether every thread reaches it alike (no per-thread control flow)."""
    for s in body:
        if isinstance(s, FragmentOp):
            out.append((s, uniform))
            continue
        if isinstance(s, ir.For):
            _collect(s.body, uniform and s.kind != "vectorized" and not ir.loop_exits(s.body), out)
        elif isinstance(s, ir.If):
            ok = uniform and not _per_thread(s.cond)
            _collect(s.then_body, ok, out)
            _collect(s.else_body, ok, out)
        elif isinstance(s, (ir.Parallel, ir.While)):
            _collect(s.body, False, out)
        elif getattr(s, "body", None):
            _collect(s.body, uniform, out)


def _per_thread(e: ir.Expr) -> bool:
    """Whether a condition may differ among threads (conservatively: it reads a thread, lane or let
    variable, or a buffer)."""
    for sub in ir.iter_expr_tree(e):
        if isinstance(sub, ir.Load):
            return True
        if isinstance(sub, ir.VarRef) and sub.var.kind in ("thread", "lane", "let"):
            return True
    return False


def _escaped(body: list, arrays: set, uniform: bool) -> set:
    """The fragment arrays some statement other than a fragment operation, an allocation or a
    whole-array fill that every thread reaches alike reads or writes."""
    found: set = set()
    for s in body:
        if isinstance(s, FragmentOp):
            continue
        if isinstance(s, ir.Fill) and s.dst.buffer in arrays and s.dst.is_whole() and uniform:
            found |= {ld.buffer for ld in ir.loads_in(s)} & arrays
            continue
        if not isinstance(s, ir.Alloc):
            touched = {ld.buffer for ld in ir.loads_in(s)} | ir.operand_buffers(s)
            if isinstance(s, ir.Store):
                touched.add(s.buffer)
            if isinstance(s, ir.Atomic) and isinstance(s.dst, ir.Load):
                touched.add(s.dst.buffer)
            if isinstance(s, ir.ThreadAllReduce):
                touched.add(s.dst.buffer)
            found |= touched & arrays
        inner = uniform
        if isinstance(s, ir.If):
            inner = uniform and not _per_thread(s.cond)
        elif isinstance(s, (ir.Parallel, ir.While)):
            inner = False
        elif isinstance(s, ir.For):
            inner = uniform and s.kind != "vectorized" and not ir.loop_exits(s.body)
        for attr in ("body", "then_body", "else_body"):
            child = getattr(s, attr, None)
            if child:
                found |= _escaped(child, arrays, inner)
    return found


def _rewrite(body: list, tiled: dict) -> list:
    out: list = []
    for s in body:
        if isinstance(s, FragmentOp):
            if s.tile is not None and all(a in tiled for a in s.arrays):
                out.extend(_rewrite(s.tile, tiled))
            else:
                out.extend(_rewrite(s.body, tiled))
            continue
        if isinstance(s, ir.Alloc) and s.buffer in tiled:
            out.append(ir.Alloc(s.loc, tiled[s.buffer]))
            continue
        if isinstance(s, ir.Fill) and s.dst.buffer in tiled:
            out.append(ir.Fill(s.loc, whole(tiled[s.dst.buffer]), s.value))
            continue
        for attr in ("body", "then_body", "else_body"):
            child = getattr(s, attr, None)
            if child:
                setattr(s, attr, _rewrite(child, tiled))
        out.append(s)
    return out


def _mentions(body: list, variables: set) -> bool:
    """Whether a statement names one of ``variables`` (or is a thread collective, which needs the
    thread view without naming a thread)."""
    for s in ir.walk(body):
        if isinstance(s, ir.ThreadAllReduce):
            return True
        exprs = list(ir.stmt_exprs(s))
        if isinstance(s, ir.Let):
            exprs.append(ir.VarRef(s.var))
        for e in exprs:
            for sub in ir.iter_expr_tree(e):
                if isinstance(sub, ir.WarpOp) or (isinstance(sub, ir.VarRef) and sub.var in variables):
                    return True
    return False


# ---------------------------------------------------------------------- k loops
def _fuse_k_loops(b: BinderLike, body: list, shadows: set) -> list:
    counts: dict = {}
    for s in ir.walk(body):
        if isinstance(s, ir.Alloc):
            continue
        for buf in ir.operand_buffers(s) | {ld.buffer for ld in ir.loads_in(s)}:
            if buf in shadows:
                counts[buf] = counts.get(buf, 0) + 1
    return _fuse(b, body, shadows, counts)


def _fuse(b: BinderLike, body: list, shadows: set, counts: dict) -> list:
    out: list = []
    for s in body:
        for attr in ("body", "then_body", "else_body"):
            child = getattr(s, attr, None)
            if child:
                setattr(s, attr, _fuse(b, child, shadows, counts))
        fused = _k_loop_gemm(b, s, shadows, counts) if isinstance(s, ir.For) else None
        out.extend(fused if fused is not None else [s])
    return out


def _k_loop_gemm(b: BinderLike, loop: ir.For, shadows: set, counts: dict) -> list | None:
    """``for ki in range(lo, hi): A_t = A[.., ki-th k slice]; B_t = B[..]; C += A_t B_t`` -> one gemm
    of the slices' union, when A_t and B_t are shadows nothing else uses.  None if it is not that."""
    lo, hi, step = static(loop.start), static(loop.stop), static(loop.step)
    if lo is None or hi is None or step != 1 or hi <= lo or len(loop.body) != 3:
        return None
    *copies, gemm = loop.body
    if not isinstance(gemm, ir.Gemm) or not all(isinstance(c, ir.Copy) for c in copies):
        return None
    if not (isinstance(gemm.clear_accum, ir.Const) and not gemm.clear_accum.value):
        return None
    sources = {c.dst.buffer: c for c in copies if isinstance(c.dst, ir.Region) and c.dst.is_whole()}
    a_t, b_t = gemm.a.buffer, gemm.b.buffer
    if a_t is b_t or set(sources) != {a_t, b_t} or not {a_t, b_t} <= shadows:
        return None
    if not (gemm.a.is_whole() and gemm.b.is_whole()) or counts.get(a_t) != 2 or counts.get(b_t) != 2:
        return None
    var = loop.var
    if any(mentions(e, var) for e in ir.region_exprs(gemm.c)):
        return None
    regions = []
    for tile, k_dim in ((a_t, 0 if gemm.trans_a else 1), (b_t, 1 if gemm.trans_b else 0)):
        region = _k_range(sources[tile].src, tile, k_dim, var, lo, hi)
        if region is None:
            return None
        regions.append(region)
    stmts: list = []
    operands = []
    for region in regions:
        if region.is_whole() or region.buffer.scope not in (ir.SHARED, ir.FRAGMENT):
            operands.append(region)
            continue
        part = ir.Buffer(b.fresh_name(f"{region.buffer.name}_k"), ir.FRAGMENT, tuple(region.extents),
                         region.buffer.dtype, loop.loc)  # fmt: skip
        stmts += [ir.Alloc(loop.loc, part), ir.Copy(loop.loc, region, whole(part))]
        operands.append(whole(part))
    stmts.append(ir.Gemm(gemm.loc, operands[0], operands[1], gemm.c, gemm.trans_a, gemm.trans_b, gemm.clear_accum))
    return stmts


def _k_range(src, tile: ir.Buffer, k_dim: int, var: ir.Var, lo: int, hi: int) -> ir.Region | None:
    """The region ``src`` covers over iterations ``lo..hi-1`` of ``var``: its k start advances by its
    k extent each iteration (the slices tile a range); its other starts do not move."""
    if not isinstance(src, ir.Region) or src.buffer.ndim != 2 or tile.ndim != 2:
        return None
    extents = [static(e) for e in src.extents]
    if extents != list(tile.shape):
        return None
    starts = list(src.starts)
    if any(mentions(e, var) for d, e in enumerate(starts) if d != k_dim):
        return None
    width = extents[k_dim]
    k_start = starts[k_dim]
    nxt = substitute(k_start, var, ir.BinOp("+", ir.VarRef(var), const_int(1), INT32))
    if static_difference(ir.BinOp("-", nxt, k_start, INT32)) != width:
        return None
    first = substitute(k_start, var, const_int(lo))
    begin = static_difference(first)
    total = width * (hi - lo)
    if begin is not None and (begin < 0 or begin + total > src.buffer.shape[k_dim]):
        return None
    starts[k_dim] = const_int(begin) if begin is not None else first
    extents[k_dim] = total
    return ir.Region(src.buffer, tuple(starts), tuple(extents))
