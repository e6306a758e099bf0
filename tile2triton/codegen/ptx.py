"""Inline PTX: ``T.inline_asm`` and the ready helpers, lowered to ``tl.inline_asm_elementwise``.

Inline PTX reaches only CUDA targets.  Triton's interpreter cannot run inline assembly, and an
AMD target (``LoweringOptions.backend == "hip"``) assembles AMDGCN, not PTX: there each helper
becomes a pure-Triton equivalent (documented in ``tile2triton.language``; lane and warp ids from
the thread's index, in the 32-thread warps of codegen/warp.py), the special registers no portable
Triton operation reads (``%smid``, ``%clock64``, ``%globaltimer``) are zero under the interpreter
and a compile error on AMD, and raw ``T.inline_asm`` is a compile error at the user's line.
"""

from __future__ import annotations

from .. import ir
from ..ir import FLOAT32, INT32
from ..language.dtypes import DTYPES
from . import pyast as P
from .values import Tile, convert

INT64 = DTYPES["int64"]

# the ready T.ptx_* helpers: name -> (PTX, constraints, result dtype, pure).  Not to be confused
# with emit.JIT_HELPER_SOURCES, the @triton.jit functions printed into a generated module.
PTX_HELPERS = {
    "ptx_ex2": ("ex2.approx.f32 $0, $1;", "=r,r", FLOAT32, True),
    "ptx_tanh": ("tanh.approx.f32 $0, $1;", "=r,r", FLOAT32, True),
    "ptx_rcp": ("rcp.approx.ftz.f32 $0, $1;", "=r,r", FLOAT32, True),
    "ptx_rsqrt": ("rsqrt.approx.ftz.f32 $0, $1;", "=r,r", FLOAT32, True),
    "ptx_laneid": ("mov.u32 $0, %laneid;", "=r,r", INT32, False),
    "ptx_warpid": ("mov.u32 $0, %warpid;", "=r,r", INT32, False),
    "ptx_smid": ("mov.u32 $0, %smid;", "=r,r", INT32, False),
    "ptx_clock64": ("mov.u64 $0, %clock64;", "=l,r", INT64, False),
    "ptx_globaltimer": ("mov.u64 $0, %globaltimer;", "=l,r", INT64, False),
}


def inline_asm(asm: str, constraints: str, args: list, dtype, is_pure: bool, pack: int):
    return P.call(
        "tl.inline_asm_elementwise",
        P.const(asm),
        P.const(constraints),
        P.list_(args),
        dtype=P.dtype(dtype),
        is_pure=P.const(is_pure),
        pack=P.const(pack),
    )


def ptx_allowed(options) -> bool:
    """Inline PTX compiles only for CUDA targets (not the interpreter, not AMD)."""
    return not options.interpret and options.backend == "cuda"


def target_label(options) -> str:
    return f"{options.backend} target {options.arch}" if options.arch else f"{options.backend} target"


def lower_inline_asm(lw, e: ir.InlineAsm) -> Tile:
    if lw.options.interpret:
        raise lw.error(
            "T.inline_asm cannot run under Triton's interpreter (CPU tensors, or no GPU): run it on CUDA "
            "tensors, or use a helper with an interpreter fallback (T.ptx_ex2, T.ptx_rcp, ...)",
            e.loc,
        )
    if not ptx_allowed(lw.options):
        raise lw.error(
            f"T.inline_asm holds PTX, which the {target_label(lw.options)} cannot assemble: compile it for "
            "an NVIDIA card, or use a helper with a portable lowering (T.ptx_ex2, T.ptx_rcp, ...)",
            e.loc,
        )
    args = [lw.ev(a) for a in e.args]
    axes = frozenset().union(*(a.axes for a in args))
    node = inline_asm(e.asm, e.constraints, [a.node for a in args], e.dtype, e.is_pure, e.pack)
    return Tile(node, e.dtype, axes)


def _shape_source(lw) -> Tile:
    """Special registers take no operand; the element-wise call needs one to shape its result."""
    if lw.scope.lanes is None:
        return Tile(P.const(0), INT32)
    flat = None
    for k in range(lw.scope.lanes.rank):
        ar = P.name(lw.scope.lanes.names[k])
        stride = 1
        for j in range(k + 1, lw.scope.lanes.rank):
            stride *= lw.scope.lanes.padded[j]
        term = ar if stride == 1 else P.binop("*", ar, P.const(stride))
        flat = term if flat is None else P.binop("+", flat, term)
    return Tile(flat, INT32, frozenset(range(lw.scope.lanes.rank)))


def lower_helper(lw, e: ir.Call) -> Tile:
    asm, constraints, dtype, pure = PTX_HELPERS[e.fn]
    if e.args:
        x = lw.ev(e.args[0])
        x = Tile(convert(x.node, FLOAT32, x.axes), FLOAT32, x.axes) if x.dtype != FLOAT32 else x
    else:
        x = _shape_source(lw)
    if lw.options.interpret:
        return Tile(_fallback(lw, e.fn, x), dtype, x.axes)
    if not ptx_allowed(lw.options):
        if e.fn in _NO_PORTABLE_FORM:
            raise lw.error(
                f"T.{e.fn} reads {_NO_PORTABLE_FORM[e.fn]}, which no portable Triton operation gives on the "
                f"{target_label(lw.options)}: it needs inline PTX (NVIDIA cards only)",
                getattr(e, "loc", None),
            )
        return Tile(_fallback(lw, e.fn, x), dtype, x.axes)
    operand = x.node if e.args or lw.scope.lanes is not None else P.call("tl.full", P.list_([]), 0, P.dtype(INT32))
    return Tile(inline_asm(asm, constraints, [operand], dtype, pure, 1), dtype, x.axes)


# special registers read only through PTX: zero under the interpreter, an error on AMD
_NO_PORTABLE_FORM = {"ptx_smid": "the SM id", "ptx_clock64": "the clock", "ptx_globaltimer": "the global timer"}


def _fallback(lw, fn: str, x: Tile):
    v = x.node
    if fn == "ptx_ex2":
        return P.call("tl.exp2", v)
    if fn == "ptx_tanh":
        return P.binop(
            "-", P.binop("*", P.const(2.0), P.call("tl.sigmoid", P.binop("*", P.const(2.0), v))), P.const(1.0)
        )
    if fn == "ptx_rcp":
        return P.binop("/", P.const(1.0), v)
    if fn == "ptx_rsqrt":
        return P.call("tl.rsqrt", v)
    if fn == "ptx_laneid":
        return P.binop("%", v, P.const(32))
    if fn == "ptx_warpid":
        return P.binop("//", v, P.const(32))
    zero = INT32 if fn == "ptx_smid" else INT64
    return P.binop("+", P.binop("*", v, P.const(0)), P.call("tl.full", P.list_([]), 0, P.dtype(zero)))
