"""float8_e8m0fnu (``2 ** (bits - 127)``, 0xFF NaN; the scales of block-scaled formats): uint8 in
memory, float32 in registers, on every path.  Global loads and stores decode and encode it
(lower.py), so do the whole-tile loads and stores of a shared buffer kept in scratch
(scratch.py), and a cast to it rounds up to a power of two as CUDA's ``__nv_cvt_*_to_e8m0``
(satfinite, round toward +inf) that TileLang's casts call: emit.py's ``_round_to_e8m0`` at run
time, ``round_literal`` for a constant."""

from __future__ import annotations

import ast
import math

from . import pyast as P

E8M0 = "float8_e8m0fnu"


def is_e8m0(dt) -> bool:
    return getattr(dt, "name", None) == E8M0


def round_literal(value) -> float:
    """A constant cast to e8m0, as ``_round_to_e8m0`` rounds it: ``2 ** ceil(log2 |x|)`` clamped
    to ``[2 ** -127, 2 ** 127]`` (0 gives ``2 ** -127``), NaN stays NaN."""
    x = abs(float(value))
    if math.isnan(x):
        return math.nan
    if x == 0.0:
        return 2.0**-127
    if math.isinf(x):
        return 2.0**127
    mantissa, exponent = math.frexp(x)  # x = mantissa * 2 ** exponent, 0.5 <= mantissa < 1
    e = exponent - 1 if mantissa == 0.5 else exponent
    return 2.0 ** min(max(e, -127), 127)


def code(value) -> int:
    """The byte a constant cast to e8m0 is stored as (``T.annotate_safe_value`` of an e8m0 tensor)."""
    rounded = round_literal(value)
    return 255 if math.isnan(rounded) else math.frexp(rounded)[1] - 1 + 127


def decode(lw, node: ast.expr) -> ast.expr:
    """Bytes of e8m0 read from memory as their float32 values."""
    lw.helpers.add("_e8m0_to_float")
    return P.call("_e8m0_to_float", node)


def encode(lw, node: ast.expr) -> ast.expr:
    """float32 values as the e8m0 bytes stored in memory (rounded up to its grid first)."""
    lw.helpers.update(("_e8m0_bits", "_round_to_e8m0"))
    return P.call("_e8m0_bits", node)
