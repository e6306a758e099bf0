"""Binding rules of matrix products: ``T.gemm`` (and ``T.wgmma_gemm``), the 2:4 sparse
``T.gemm_sp``, and ``T.dp4a``.
"""

from __future__ import annotations

import operator

from .. import ir
from ..ir import BOOL, INT32
from ..ir.exprs import as_expr
from ..language.dtypes import DTYPES
from .regions import whole
from .rules_base import BinderLike, _staged, rule


def _gemm_operand(b: BinderLike, value, node, what) -> ir.Region:
    if isinstance(value, ir.Buffer):
        return whole(value)
    if isinstance(value, ir.Region):
        return value
    raise b.error(f"T.gemm operand {what} must be a shared or fragment buffer (or a region of one)", node)


@rule("gemm", "wgmma_gemm")
def bind_gemm(b: BinderLike, node, args):
    a, _ = _staged(b, _gemm_operand(b, args["A"], node, "A"), node, matrix=True)
    bb, _ = _staged(b, _gemm_operand(b, args["B"], node, "B"), node, matrix=True)
    c, write_back = _staged(b, _gemm_operand(b, args["C"], node, "C"), node, matrix=True)
    ta, tb = args["transpose_A"], args["transpose_B"]
    if not isinstance(ta, bool) or not isinstance(tb, bool):
        raise b.error("transpose_A / transpose_B must be compile-time bools", node)
    b.emit(ir.Gemm(b.loc(node), a, bb, c, ta, tb, as_expr(args["clear_accum"])))
    for stmt in write_back:
        b.emit(stmt)


# 2:4 structured sparsity (tile2triton/cuda/intrinsics/sparse_layout.py has the format):
# A's dtype width -> (values kept per group, group size along K).
_SPARSE_GROUPS = {8: (2, 4), 16: (2, 4), 32: (1, 2)}


@rule("gemm_sp")
def bind_gemm_sp(b: BinderLike, node, args):
    """``T.gemm_sp(A_sparse, E, B, C)``: C (+)= decompress(A_sparse, E) @ op(B).  Bound as what it
    means: a T.Parallel rebuilds the dense A tile from the kept values and their 4-bit position codes
    in E, then a dense T.gemm multiplies it (the same sums the sparse tensor-core MMA computes)."""
    a_sp, _ = _staged(b, _gemm_operand(b, args["A_sparse"], node, "A_sparse"), node, matrix=True)
    meta, _ = _staged(b, _gemm_operand(b, args["E"], node, "E"), node, matrix=True)
    ta, te, tb = args["transpose_A"], args["transpose_E"], args["transpose_B"]
    if not all(isinstance(t, bool) for t in (ta, te, tb)):
        raise b.error("transpose_A / transpose_E / transpose_B must be compile-time bools", node)
    for region, what in ((a_sp, "A_sparse"), (meta, "E")):
        if region.buffer.scope not in (ir.SHARED, ir.FRAGMENT) or region.buffer.ndim != 2:
            raise b.error(f"T.gemm_sp operand {what} must be a 2-D shared or fragment buffer", node)
    a_dtype, e_dtype = a_sp.buffer.dtype, meta.buffer.dtype
    if a_dtype.bits not in _SPARSE_GROUPS or not a_dtype.supported:
        raise b.error(f"T.gemm_sp: 2:4 sparsity is defined for 8-, 16- and 32-bit A, not {a_dtype}", node)
    if not e_dtype.is_int or e_dtype.bits not in (8, 16, 32):
        raise b.error(f"T.gemm_sp: the metadata E must be int8/16/32 (or unsigned), not {e_dtype}", node)
    elem, group = _SPARSE_GROUPS[a_dtype.bits]
    codes_per_meta = e_dtype.bits // 4  # one 4-bit position code per group
    e_factor = codes_per_meta * group  # dense K columns described by one metadata element
    a_rows, a_cols = a_sp.buffer.shape
    block_m, half_k = (a_cols, a_rows) if ta else (a_rows, a_cols)
    block_k = half_k * group // elem
    e_rows, e_cols = meta.buffer.shape
    e_m, e_k = (e_cols, e_rows) if te else (e_rows, e_cols)
    if (e_m, e_k * e_factor) != (block_m, block_k):
        want = (block_k // e_factor, block_m) if te else (block_m, block_k // e_factor)
        raise b.error(
            f"T.gemm_sp: E has shape {tuple(meta.buffer.shape)}, but an A_sparse tile of {tuple(a_sp.buffer.shape)} "
            f"({a_dtype}, {e_dtype} metadata: {e_factor} columns of K per element) needs {want}",
            node,
        )
    loc = b.loc(node)
    dense = ir.Buffer(b.fresh_name(f"{a_sp.buffer.name}_dense"), ir.FRAGMENT, (block_m, block_k), a_dtype, loc)
    b.emit(ir.Alloc(loc, dense))
    i, k = ir.Var("i", INT32, "lane"), ir.Var("k", INT32, "lane")

    def arith(op, x, y):
        return ir.BinOp(op, as_expr(x), as_expr(y), INT32)

    grp = arith("//", ir.VarRef(k), group)
    meta_col = arith("//", grp, codes_per_meta)
    word = ir.Cast(ir.Load(meta.buffer, (meta_col, ir.VarRef(i)) if te else (ir.VarRef(i), meta_col)), INT32)
    code = ir.Var("code", INT32, "let")  # the group's 4-bit position code
    body = [ir.Let(loc, code, arith("&", arith(">>", word, arith("*", arith("%", grp, codes_per_meta), 4)), 15))]
    position = arith("%", ir.VarRef(k), group)
    value = as_expr(0)
    for j in reversed(range(elem)):  # kept value j: its position is code bits [2j+1:2j]
        kept = arith("+", arith("*", grp, elem), j) if elem > 1 else grp
        load = ir.Load(a_sp.buffer, (kept, ir.VarRef(i)) if ta else (ir.VarRef(i), kept))
        slot = arith("&", arith(">>", ir.VarRef(code), 2 * j) if j else ir.VarRef(code), 3)
        if group == 2:  # 32-bit values: positions count 16-bit halves (half 2 is element 1)
            slot = arith(">>", slot, 1)
        value = b.select(ir.Compare("==", slot, position, BOOL), load, value)
    body.append(ir.Store(loc, dense, (ir.VarRef(i), ir.VarRef(k)), ir.Cast(as_expr(value), a_dtype)))
    b.emit(ir.Parallel(loc, [i, k], [block_m, block_k], body))
    bind_gemm(b, node, {**args, "A": dense, "transpose_A": False})


@rule("dp4a")
def bind_dp4a(b: BinderLike, node, args):
    """CUDA's ``__dp4a`` on four consecutive int8 elements of A and B (from the element given, along
    the last dim) into the int32 element of C, written out as its sum of products."""
    loads = []
    for what, want in (("A", DTYPES["int8"]), ("B", DTYPES["int8"]), ("C", INT32)):
        value = args[what]
        if isinstance(value, ir.Buffer):
            value = ir.Load(value, tuple(as_expr(0) for _ in value.shape))
        if not isinstance(value, ir.Load):
            raise b.error(f"T.dp4a operand {what} must be a buffer element (A_local[k]) or a buffer", node)
        if value.buffer.dtype != want:
            kind = "inputs" if what != "C" else "an int32 accumulator"
            raise b.error(f"dp4a requires {kind}, got {what}.dtype='{value.buffer.dtype.name}'", node)
        loads.append(value)
    a, bb, c = loads
    total = c
    for k in range(4):
        at = [
            ir.Load(x.buffer, (*x.indices[:-1], as_expr(b.binop("+", operator.add, x.indices[-1], k, node))))
            for x in (a, bb)
        ]
        product = ir.BinOp("*", ir.Cast(at[0], INT32), ir.Cast(at[1], INT32), INT32)
        total = ir.BinOp("+", total, product, INT32)
    b.emit(ir.Store(b.loc(node), c.buffer, c.indices, total))
