"""Check: reject what TileLang rejects, at the user's line; warn where TileLang warns."""

from __future__ import annotations

import warnings

from .. import ir
from ..errors import SemanticCheckError, TileLangCompileError
from ..language.dtypes import is_packed, is_packed_fp4
from .analysis import first_access

_COLLECTIVE = (ir.Copy, ir.Gemm, ir.Reduce, ir.Fill, ir.Scan)


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
                        ir.Scan: "cumsum"}[type(s)]  # fmt: skip
                raise SemanticCheckError(
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
                gemm = _first_reader_is_gemm(rest, s.buffer) if first_access(rest, s.buffer) == "read" else None
                if gemm is not None:
                    # attributed to the user's T.gemm line (file:line in the warning itself)
                    warnings.warn_explicit(
                        f"T.gemm accumulates into '{s.buffer.name}' (allocated at line {s.loc.line}), "
                        "which is never cleared, filled or written first (add T.clear before the K loop, or pass "
                        "clear_accum=True)",
                        TileLangWarning,
                        gemm.loc.file,
                        gemm.loc.line,
                    )
            for attr in ("body", "then_body", "else_body"):
                child = getattr(s, attr, None)
                if child:
                    scan(child)

    scan(kernel.body)


def _first_reader_is_gemm(stmts, buf):
    """The T.gemm that first reads ``buf`` (as its accumulator), or None."""
    for s in ir.walk(stmts):
        if isinstance(s, ir.Gemm) and s.c.buffer is buf:
            clear = s.clear_accum
            return None if isinstance(clear, ir.Const) and clear.value else s
        if any(load.buffer is buf for load in ir.loads_in(s)):
            return None
        if isinstance(s, (ir.Copy, ir.Reduce, ir.Scan)) and s.src.buffer is buf:
            return None
        if isinstance(s, ir.Store) and s.buffer is buf:
            return None
        if (
            isinstance(s, (ir.Fill, ir.Copy, ir.Reduce, ir.Scan))
            and isinstance(s.dst, ir.Region)
            and s.dst.buffer is buf
        ):
            return None  # cleared, filled or written (perhaps under a loop or branch) before the gemm
    return None


def _dims(region: ir.Region):
    """The last two extents of a gemm operand, or None when not static / leading dims are not 1."""
    ext = tuple(region.extents)
    if len(ext) < 2 or not all(isinstance(e, int) for e in ext):
        return None
    if any(e != 1 for e in ext[:-2]):
        return None
    return ext[-2], ext[-1]


def check_gemms(stmts) -> None:
    """T.gemm operands must agree: C is [M, N], op(A) is [M, K], op(B) is [K, N]; A and B share a dtype;
    the accumulator is a float for float inputs and an int for int inputs (TileLang checks this at trace time)."""
    for s in ir.walk(stmts):
        if not isinstance(s, ir.Gemm):
            continue
        a, b, c = s.a.buffer, s.b.buffer, s.c.buffer
        for buf in (a, b, c):
            # fp4 registers hold 4-bit codes (codegen/fp4.py); int4 A and B hold int8 values, an int8 dot
            if is_packed(buf.dtype) and (buf is c or is_packed_fp4(buf.dtype)):
                kind, into = ("fp4", "float16/bfloat16") if is_packed_fp4(buf.dtype) else (buf.dtype.name, "int8")
                raise TileLangCompileError(
                    f"T.gemm on {kind} buffer '{buf.name}': tile2triton multiplies no {kind}; "
                    f"T.copy it into a {into} buffer first",
                    s.loc,
                )
        if a.dtype != b.dtype and not ("float8" in a.dtype.name and "float8" in b.dtype.name):
            raise TileLangCompileError(
                f"T.gemm operands have different dtypes: A '{a.name}' is {a.dtype.name}, B '{b.name}' is {b.dtype.name}",
                s.loc,
                "copy one operand into a buffer of the other's dtype first",
            )
        if a.dtype.is_float != c.dtype.is_float:
            want = "a float type (e.g. float32)" if a.dtype.is_float else "an int type (int32)"
            raise TileLangCompileError(
                f"T.gemm accumulator '{c.name}' is {c.dtype.name}, but {a.dtype.name} inputs need {want}",
                s.loc,
            )
        da, db, dc = _dims(s.a), _dims(s.b), _dims(s.c)
        if da is None or db is None or dc is None:
            continue
        m_a, k_a = (da[1], da[0]) if s.trans_a else da
        k_b, n_b = (db[1], db[0]) if s.trans_b else db
        m, n = dc
        problems = []
        if k_a != k_b:
            problems.append(f"K differs: {k_a} from A, {k_b} from B")
        if m_a != m:
            problems.append(f"M differs: {m_a} from A, {m} from C")
        if n_b != n:
            problems.append(f"N differs: {n_b} from B, {n} from C")
        if problems:
            shape_a = f"{da}{' transposed' if s.trans_a else ''}"
            shape_b = f"{db}{' transposed' if s.trans_b else ''}"
            raise TileLangCompileError(
                f"T.gemm shapes do not match ({'; '.join(problems)}): A '{a.name}' is {shape_a}, "
                f"B '{b.name}' is {shape_b}, C '{c.name}' is {dc}",
                s.loc,
                "C must be [M, N], A [M, K] (or [K, M] with transpose_A=True), B [K, N] (or [N, K] with transpose_B=True)",
            )


def check_e8m0(stmts) -> None:
    """float8_e8m0fnu (a uint8 in memory, float32 in registers: codegen/e8m0.py) is a scale format:
    it is loaded, stored, cast and computed with like any float, but no atomic updates it and no
    tensor-core gemm takes it (TileLang has neither for it)."""
    for s in ir.walk(stmts):
        if isinstance(s, ir.Atomic):
            operands = [("an atomic", s.dst)]
        elif isinstance(s, ir.Gemm):
            operands = [("T.gemm", s.a), ("T.gemm", s.b), ("T.gemm", s.c)]
        else:
            continue
        for what, operand in operands:
            buf = operand.buffer if isinstance(operand, (ir.Region, ir.Load)) else operand
            if isinstance(buf, ir.Buffer) and buf.dtype.name == "float8_e8m0fnu":
                raise TileLangCompileError(
                    f"'{buf.name}' is float8_e8m0fnu, which {what} does not take (it holds scales: cast "
                    "them to float32 and multiply)",
                    s.loc,
                )


def check(func: ir.PrimFunc) -> None:
    for kernel in func.kernels:
        check_e8m0(kernel.body)
        check_collectives(kernel.body)
        check_gemms(kernel.body)
        warn_uninitialized_accumulators(kernel)
