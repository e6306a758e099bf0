"""Warp-aggregated atomics (``TILE2TRITON_WARP_AGGREGATED_ATOMICS``): an integer ``T.atomic_add``
into a shared buffer kept in global scratch (scratch.py), with a value the same in every lane,
as one atomic per distinct address in each warp instead of one per lane.

TileLang adds into shared memory, where a histogram's lanes that hit the same bin cost little;
the scratch copy is in L2, where the atomics of a block serialise on the few bins most lanes hit
(topk_selector: random-normal input on ~25 of 256 bins).  Per element, inline PTX groups the
32 lanes of the warp by address (``match.any.sync``, key = the element's position in the buffer,
-1 where the lane is inactive) and

- fire-and-forget (``T.atomic_add(S[bin], v)``): hands its group's size to the group's lowest
  lane (the leader; 0 elsewhere), and one ``tl.atomic_add`` of ``size * v`` where that is not 0
  keeps Triton's own atomic (memory order, scope, vectorisation) as before;
- a slot claim (``pos = T.atomic_add(S[bin], v, return_prev=True)``): the leader's atomic of
  ``size * v`` runs in the PTX, its previous value is broadcast to the group (``shfl.sync``) and
  each lane's own is that plus ``v`` times the group's lanes below it: one order the lanes' own
  atomics could have taken.

Correct only where every asm instance runs with the warp's 32 lanes converged, each holding a
different element of the tile: a tile of at least as many elements as the launch has threads,
which Triton's layouts spread over the threads without replicating an element (a smaller tile is
replicated over several lanes, which ``match.any`` would count twice).  Triton's straight-line
code (masks, not branches, for the lanes' conditions) keeps the warp converged.  Inline PTX only
on CUDA targets (ptx.ptx_allowed): the interpreter and AMD keep one atomic per lane.
"""

from __future__ import annotations

import re

from .. import ir
from ..ir import INT32
from . import pyast as P
from .ptx import ptx_allowed
from .values import Lowerer, Tile, is_literal, lanes_fill_threads

# @triton.jit helpers of the generated module (they join emit.JIT_HELPER_SOURCES): the inline PTX
# named once, not repeated at every atomic
HELPERS = {
    "_warp_aggregated_count": """
@triton.jit
def _warp_aggregated_count(key):
    # per element: the number of the warp's lanes with this key on the lowest of them (the group's
    # leader), 0 on the others and where the key is -1 (an inactive lane)
    return tl.inline_asm_elementwise(
        \"\"\"{
        .reg .b32 peers, below;
        .reg .pred lead;
        match.any.sync.b32 peers, $1, -1;
        mov.b32 below, %lanemask_lt;
        and.b32 below, below, peers;
        setp.eq.b32 lead, below, 0;
        setp.ne.and.b32 lead, $1, -1, lead;
        popc.b32 $0, peers;
        selp.b32 $0, $0, 0, lead;
        }\"\"\",
        "=r,r", [key], dtype=tl.int32, is_pure=False, pack=1)
""",
    "_warp_aggregated_claim": """
@triton.jit
def _warp_aggregated_claim(key, ptr, value):
    # per element: the group of lanes with this key (not -1) claims group size x value at ptr with
    # one relaxed block-scoped atomic of its leader; each lane gets the previous value plus value
    # times the group's lanes below it
    return tl.inline_asm_elementwise(
        \"\"\"{
        .reg .b32 peers, below, rank, size, old, first;
        .reg .pred lead;
        match.any.sync.b32 peers, $1, -1;
        mov.b32 below, %lanemask_lt;
        and.b32 below, below, peers;
        popc.b32 rank, below;
        popc.b32 size, peers;
        setp.eq.b32 lead, rank, 0;
        setp.ne.and.b32 lead, $1, -1, lead;
        mul.lo.u32 size, size, $3;
        mov.b32 old, 0;
        @lead atom.relaxed.cta.global.add.u32 old, [$2], size;
        brev.b32 first, peers;
        bfind.shiftamt.u32 first, first;
        shfl.sync.idx.b32 old, old, first, 31, -1;
        mad.lo.u32 $0, rank, $3, old;
        }\"\"\",
        "=r,r,l,r", [key, ptr.to(tl.int64), value], dtype=tl.int32, is_pure=False, pack=1)
""",
}


def applies(lw: Lowerer, s: ir.Atomic, view: ir.Buffer, value: Tile | None) -> bool:
    """Where the rule may take the atomic (before looking at its index)."""
    lanes = lw.scope.lanes
    if not lw.options.warp_aggregated_atomics or not ptx_allowed(lw.options) or not _has_match(lw.options.arch):
        return False
    if s.kind != "add" or value is None or value.axes or lanes is None:
        return False
    if view.dtype.kind not in ("int", "uint") or value.dtype.kind not in ("int", "uint"):
        return False
    storage = lw.storage_dtype(view.dtype)
    if storage.bits != 32 and (s.result is not None or storage.bits != 64):
        return False  # the claim's PTX adds 32-bit words; Triton's atomic takes 32 and 64 bits
    return lw.options.warp_size == 32 and lanes_fill_threads(lw)  # no element replicated over lanes


def aggregated_add(lw: Lowerer, s: ir.Atomic, view: ir.Buffer, indices, value: Tile | None, order: dict) -> bool:
    """``T.atomic_add(S[k], v)`` (``pos = ...`` too) on a scratch-backed shared buffer, warp-aggregated
    (the module's docstring); False where it does not apply."""
    if not applies(lw, s, view, value):
        return False
    if s.result is not None and _order(order) != ("relaxed", "cta"):
        return False  # the claim's PTX is relaxed and block-scoped; stronger orders keep Triton's atomics
    lanes = lw.scope.lanes
    everywhere = frozenset(range(lanes.rank))
    idx = [lw.ev(i) for i in indices]
    # every lane its own key, the element's position (-1 where the lane is inactive or out of
    # bounds), at the lane space's full rank: an element a lane, none replicated
    offs, mask, axes = lw.global_address(view, idx, list(indices), everywhere)
    if any(t.dtype != INT32 for t in idx):
        offs = P.to(offs, INT32)
    key = offs if mask is None else P.call("tl.where", mask, offs, P.const(-1))
    known = frozenset().union(*(t.axes for t in idx))
    if mask is not None:  # the mask varies along the conditions' axes and the padded ones
        known |= lw.cond_axes() | {k for k in everywhere if lanes.padded[k] != lanes.extents[k]}
    if known != everywhere:  # (a lower-rank operand of the sum broadcasts)
        key = P.binop("+", key, P.call("tl.zeros", P.list_(list(lanes.padded)), P.dtype(INT32)))
    key = P.name(lw.assign(f"{view.name}_key", key))
    ptr = lw.named_offsets(view, key)
    added = lw.cast(value, view.dtype)
    unit = is_literal(added) and added.node.value == 1
    if s.result is None:
        lw.helpers.add("_warp_aggregated_count")
        count = P.name(lw.assign(f"{view.name}_count", P.call("_warp_aggregated_count", key)))
        storage = lw.storage_dtype(view.dtype)
        amount = count if storage == INT32 else P.to(count, storage)
        if not unit:
            amount = P.binop("*", amount, added.node)
        mask = P.binop(">", count, P.const(0))
        lw.emit(P.expr_stmt(P.call("tl.atomic_add", ptr, amount, mask=mask, **order)))
        return True
    lw.helpers.add("_warp_aggregated_claim")
    step = added.node if is_literal(added) or added.dtype == INT32 else P.to(added.node, INT32)
    claimed = P.call("_warp_aggregated_claim", key, ptr, step)
    if lw.storage_dtype(view.dtype) != INT32:
        claimed = P.call(P.attr(claimed, "to"), P.dtype(lw.storage_dtype(view.dtype)), bitcast=True)
    lw.scope.env[s.result] = Tile(P.name(lw.assign(s.result.name, claimed)), view.dtype, everywhere)
    return True


def _order(order: dict) -> tuple:
    return tuple(getattr(order.get(k), "value", None) for k in ("sem", "scope"))


def _has_match(arch: str) -> bool:
    """``match.any.sync`` needs sm_70 (Volta) or later; an unnamed CUDA card is taken to have it."""
    digits = re.sub(r"\D", "", arch or "")
    return not digits or int(digits) >= 70
