"""What to tell a user who writes a ``T.*`` name tile2triton does not have.

Three cases, in this order:

* a feature tile2triton knows it does not support and for which there is a real alternative
  (``KNOWN_UNSUPPORTED``): name the feature as unsupported and say what to write instead;
* another TileLang name tile2triton does not support: the reason from the compatibility matrix
  (``tile2triton/compat.py``, rendered in ``docs/compat.md``);
* a name TileLang does not have either, most likely a typo: the supported names within a small
  edit distance (a transposed, missing, extra or wrong letter or two), else no suggestion.
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Iterable

# pattern (fnmatch) -> (what is unsupported, what to use instead); first match wins
KNOWN_UNSUPPORTED: list[tuple[str, str, str]] = [
    (
        "*tcgen05*",
        "tcgen05 requires Blackwell TCGEN5MMA (sm_100), which tile2triton does not target (Hopper "
        "and older; Triton's tl language does not expose tcgen05)",
        "T.gemm (it becomes tl.dot: wgmma on Hopper)",
    ),
    (
        "*tmem*",
        "tensor memory (TMEM) requires Blackwell TCGEN5MMA (sm_100), which tile2triton does not target "
        "(Hopper and older; Triton's tl language has no TMEM buffers)",
        "keep the accumulator in a T.alloc_fragment",
    ),
    ("alloc_reducer", "reducers are not supported", "accumulate in a T.alloc_fragment and reduce with T.reduce_*"),
    ("*reducer*", "reducers are not supported", "accumulate in a T.alloc_fragment and reduce with T.reduce_*"),
    ("call_extern", "external CUDA device functions are not supported", "write the computation with T.* math"),
    ("call_pure_extern", "external CUDA device functions are not supported", "write the computation with T.* math"),
    ("import_source", "raw CUDA/C source is not supported", "write the computation with T.* math"),
    ("*mbarrier*", "mbarriers are not supported", "T.Pipelined(n, num_stages=s) lets Triton pipeline the copies"),
    ("*barrier_*", "mbarriers are not supported", "T.Pipelined(n, num_stages=s) lets Triton pipeline the copies"),
    ("tma_*", "explicit TMA is not supported", "T.copy into a shared buffer inside T.Pipelined (Triton uses TMA)"),
    ("*wgmma*", "explicit wgmma is not supported", "T.gemm (it becomes tl.dot)"),
    ("*mma*", "explicit MMA instructions are not supported", "T.gemm (it becomes tl.dot)"),
    ("atomic_addx[24]", "vector atomics are not supported", "T.atomic_add (element or tile form)"),
    ("fma", "fused multiply-add is not mapped", "write a * b + c (Triton fuses it)"),
]


def _osa_distance(a: str, b: str) -> int:
    """Edit distance counting a swap of two neighbouring letters as one edit."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[len(b)]


def close_names(name: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Candidates a typo of ``name`` could have meant: within one edit per four letters (at least
    one), closest first.  ``T.short`` is no suggestion for ``T.shfl_xor``."""
    limit = max(1, len(name) // 4)
    scored = []
    for c in set(candidates):
        d = _osa_distance(name.lower(), c.lower())
        if d <= limit:
            scored.append((d, _osa_distance(name, c), c))
    seen, close = set(), []
    for _, _, c in sorted(scored):
        if c.lower() not in seen:  # one of an alias pair that differs only in case (T.parallel, T.Parallel)
            seen.add(c.lower())
            close.append(c)
    return close[:n]


@functools.lru_cache(maxsize=1)
def _tilelang_names() -> frozenset[str]:
    from .compat import load_symbols

    try:
        return frozenset(load_symbols()[1])
    except OSError:  # the symbol list is package data; a broken install only loses the reasons
        return frozenset()


# refusals for a hardware reason: raised as a LoweringCheckError (a tvm.error.InternalError, as TileLang's)
HARDWARE_REFUSALS = ("*tcgen05*", "*tmem*")


def is_hardware_refusal(name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in HARDWARE_REFUSALS)


def unknown_T_name(name: str, supported: Iterable[str]) -> tuple[str, str | None]:  # noqa: N802
    """(message, hint) for ``T.<name>``, which the ``T`` namespace does not have."""
    for pattern, feature, instead in KNOWN_UNSUPPORTED:
        if fnmatch.fnmatchcase(name, pattern):
            return f"T.{name} is not supported by tile2triton: {feature}", f"instead, {instead}"
    if name in _tilelang_names():
        from .compat import UNSUPPORTED, classify

        status, reason = classify(name)
        if status == UNSUPPORTED and reason:
            return (
                f"T.{name} is not supported by tile2triton ({reason})",
                "docs/compat.md lists every TileLang T name and whether tile2triton supports it",
            )
    close = close_names(name, supported)
    hint = f"closest supported names: {', '.join('T.' + c for c in close)}" if close else None
    return f"T.{name} is not supported by tile2triton", hint
