"""Check: reject what TileLang rejects, at the user's line; warn where TileLang warns."""

from __future__ import annotations

import warnings

from .. import ir
from ..codegen.analysis import first_access
from ..errors import TileLangCompileError

_COLLECTIVE = (ir.Copy, ir.Gemm, ir.Reduce, ir.Fill, ir.Cumsum)


class TileLangWarning(UserWarning):
    pass


def _tile_buffers(s) -> list:
    out = []
    for attr in ("src", "dst", "a", "b", "c"):
        r = getattr(s, attr, None)
        if isinstance(r, ir.Region):
            out.append(r.buffer)
    return out


def check_collectives(stmts, private: set | None = None) -> None:
    """A collective tile op inside T.Parallel is illegal, except on a buffer allocated in
    that same T.Parallel body (it is private to each iteration)."""
    for s in stmts:
        if isinstance(s, ir.Parallel):
            inner = {a.buffer for a in s.body if isinstance(a, ir.Alloc)}
            check_collectives(s.body, inner)
            continue
        if private is not None:
            if isinstance(s, ir.Alloc):
                private.add(s.buffer)
            if isinstance(s, _COLLECTIVE) and any(b not in private for b in _tile_buffers(s)):
                name = {ir.Copy: "copy", ir.Gemm: "gemm", ir.Reduce: "reduce_*", ir.Fill: "fill / T.clear",
                        ir.Cumsum: "cumsum"}[type(s)]  # fmt: skip
                raise TileLangCompileError(
                    f"T.{name} is a collective tile operation and cannot stand inside T.Parallel",
                    s.loc,
                    "move it before or after the T.Parallel loop",
                )
        for attr in ("body", "then_body", "else_body"):
            child = getattr(s, attr, None)
            if child:
                check_collectives(child, private)


def warn_uninitialized_accumulators(kernel: ir.Kernel) -> None:
    """Seed 002's bug: T.gemm accumulating into a fragment nobody cleared."""

    def scan(stmts):
        for k, s in enumerate(stmts):
            if isinstance(s, ir.Alloc) and s.buffer.scope == ir.FRAGMENT:
                rest = stmts[k + 1 :]
                if first_access(rest, s.buffer) == "read" and _first_reader_is_gemm(rest, s.buffer):
                    warnings.warn(
                        f"{s.loc}: T.gemm accumulates into '{s.buffer.name}', which is never cleared, filled or "
                        "written first (add T.clear before the K loop, or pass clear_accum=True)",
                        TileLangWarning,
                        stacklevel=6,
                    )
            for attr in ("body", "then_body", "else_body"):
                child = getattr(s, attr, None)
                if child:
                    scan(child)

    scan(kernel.body)


def _first_reader_is_gemm(stmts, buf) -> bool:
    for s in ir.walk(stmts):
        if isinstance(s, ir.Gemm) and s.c.buffer is buf:
            return True
        if any(load.buffer is buf for load in ir.loads_in(s)):
            return False
        if isinstance(s, (ir.Copy, ir.Reduce, ir.Cumsum)) and s.src.buffer is buf:
            return False
        if isinstance(s, ir.Store) and s.buffer is buf:
            return False
    return False


def check(func: ir.PrimFunc) -> None:
    for kernel in func.kernels:
        check_collectives(kernel.body)
        warn_uninitialized_accumulators(kernel)
