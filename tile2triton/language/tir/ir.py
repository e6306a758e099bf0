"""``tilelang.language.tir.ir``: ``T.cast``'s rounding options and their checks (TileLang's messages).

tile2triton lowers a cast to ``tl.cast`` / ``.to()``, which rounds to nearest and, for fp8, saturates
to the finite range: ``round`` ``""`` / ``"rn"`` with ``sat=True`` (the defaults).  The other modes
(``rz``, ``rp``, ``rm``, stochastic ``rs``) and ``sat=False`` on an fp8/fp4 target are rejected with
``CastOptionUnsupported`` rather than silently rounded another way, except on a number the target
holds exactly (every mode gives the number itself)."""

from __future__ import annotations

_VALID_CAST_ROUNDING_MODES = {"", "rn", "rz", "rp", "rm", "rs"}
SUPPORTED_ROUNDING = ("", "rn")


class CastOptionUnsupported(NotImplementedError):
    pass


def check_cast_options(round: str, sat, rbits) -> None:  # noqa: A002
    """TileLang's validation of ``T.cast(..., round=, sat=, rbits=)``: ``ValueError`` when invalid."""
    if not isinstance(round, str) or round not in _VALID_CAST_ROUNDING_MODES:
        raise ValueError(f"Invalid round '{round}'. Must be one of: {sorted(_VALID_CAST_ROUNDING_MODES)}")
    if not isinstance(sat, bool):
        raise ValueError(f"Invalid sat '{sat}'. Must be a bool (True for satfinite, False for no saturation)")
    if round == "rs" and rbits is None:
        raise ValueError("rbits is required when round='rs' (stochastic rounding)")
    if round != "rs" and rbits is not None:
        raise ValueError("rbits is only valid with round='rs' (stochastic rounding)")


def unsupported_cast_option(round: str, sat: bool, dtype_name: str) -> str | None:  # noqa: A002
    """Why tile2triton cannot honour these (valid) options for a cast to ``dtype_name``; None if it can."""
    if round == "rs":  # TileLang's own message on a target without it, so the same checks match
        short = {"float16": "FP16", "bfloat16": "BF16"}.get(dtype_name) or dtype_name[:6].replace("float", "FP")
        return (
            f"Stochastic rounding f32-to-{short} requires sm_100a: T.cast(round='rs') is Blackwell's cvt.rs, "
            "which tile2triton does not emit (Triton has no stochastic-rounding cast)"
        )
    if round not in SUPPORTED_ROUNDING:
        return (
            f"T.cast(round={round!r}) is not supported by tile2triton: casts round to nearest even (round='' or 'rn')"
        )
    if not sat and dtype_name.startswith(("float8", "float4", "float6")):
        return (
            "T.cast(sat=False) to an fp8 type is not supported by tile2triton: fp8 casts saturate to the finite range"
        )
    return None


def cast(value, dtype, round: str = "", sat: bool = True, rbits=None):  # noqa: A002
    """``T.cast`` (the same object as ``tilelang.language.cast``)."""
    from .. import cast as t_cast

    return t_cast(value, dtype, round=round, sat=sat, rbits=rbits)


__all__ = ["cast"]
