"""Binding rules of TileLang's vector primitives (``T.extract_lane``, ``T.Broadcast``, ``T.Ramp``,
``T.Shuffle``); vector values and buffers themselves are in vectors.py."""

from __future__ import annotations

from . import vectors
from .packed import Vector
from .rules_base import BinderLike, rule


@rule("extract_lane")
def bind_extract_lane(b: BinderLike, node, args):
    return vectors.extract_lane(b, args["vector"], args["lane"], node)


@rule("Broadcast")
def bind_broadcast(b: BinderLike, node, args):
    return vectors.broadcast(b, args["value"], args["lanes"], node)


@rule("Ramp")
def bind_ramp(b: BinderLike, node, args):
    return vectors.ramp(b, args["base"], args["stride"], args["lanes"], node)


@rule("Shuffle")
def bind_shuffle(b: BinderLike, node, args):
    """``T.Shuffle([v, w, ...], [i, j, ...])``: lanes ``i, j, ...`` of the vectors' lanes laid end to end."""
    sources = args["vectors"]
    sources = list(sources) if isinstance(sources, (list, tuple)) else [sources]
    lanes = [x for v in sources for x in (v.lanes if isinstance(v, Vector) else (v,))]
    picked = []
    for i in args["indices"] if isinstance(args["indices"], (list, tuple)) else [args["indices"]]:
        i = getattr(i, "value", i)
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(lanes):
            raise b.error(f"T.Shuffle index {i!r} is not a compile-time lane below {len(lanes)}", node)
        picked.append(lanes[i])
    if len(picked) == 1:
        return picked[0]
    return vectors.construct(b, f"{vectors.lane_dtype(picked[0]).name}x{len(picked)}", picked, node)
