"""Differential fuzzing: random valid TileLang programs (tile2triton/fuzz.py) run through
tile2triton (Triton's interpreter) and through the reference executor must agree.

The bounded run below is deterministic (``derandomize=True``) and part of the suite; it prints
how many programs it checked.  A longer, randomized run::

    TILE2TRITON_FUZZ_EXAMPLES=500 TILE2TRITON_FUZZ_RANDOM=1 python -m pytest tests/test_fuzz.py -s

(``TILE2TRITON_FUZZ_EXAMPLES`` sets the number of programs; ``TILE2TRITON_FUZZ_RANDOM=1`` draws
fresh programs instead of the fixed CI sequence.)  A divergence fails with the program's source
and the first diverging output element; bugs found so far are in tests/test_regressions.py and
in ``tile2triton.fuzz.KNOWN_ISSUES``.
"""

import os
import time
import warnings

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from tile2triton import fuzz

EXAMPLES = int(os.environ.get("TILE2TRITON_FUZZ_EXAMPLES", "120"))
RANDOM = os.environ.get("TILE2TRITON_FUZZ_RANDOM", "") not in ("", "0")

_count = {"programs": 0, "by_kind": {}}


@settings(
    max_examples=EXAMPLES,
    derandomize=not RANDOM,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.generate, Phase.shrink] if RANDOM else [Phase.explicit, Phase.generate],
)
@given(fuzz.programs())
def _fuzz_one(program):
    _count["programs"] += 1
    _count["by_kind"][program.kind] = _count["by_kind"].get(program.kind, 0) + 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fuzz.check(program)


def test_fuzz_tile2triton_against_reference(capsys):
    start = time.time()
    try:
        _fuzz_one()
    finally:
        with capsys.disabled():
            kinds = ", ".join(f"{k}: {v}" for k, v in sorted(_count["by_kind"].items()))
            print(f"\n[fuzz] checked {_count['programs']} programs ({kinds}) in {time.time() - start:.1f}s")


def test_generated_source_is_tilelang_text():
    """Programs are plain TileLang source (importable as a file), with shapes not multiples of tiles."""
    from hypothesis import find

    prog = find(
        fuzz.gemm_program(),
        lambda p: p.features["M"] % p.features["bm"] != 0,
        settings=settings(database=None, derandomize=True),
    )
    assert "@T.prim_func" in prog.source and "T.gemm(" in prog.source
    kernel = prog.build()
    assert kernel.prim_func.name == "main"


@pytest.mark.parametrize("strategy", ["elementwise_program", "reduction_program", "gemm_program"])
def test_each_template_checks(strategy):
    """One fixed program per template goes through check() end to end."""
    from hypothesis import find

    def open_bug(p):
        return any(pred(p) for pred, _ in fuzz.KNOWN_ISSUES)

    prog = find(
        getattr(fuzz, strategy)(), lambda p: not open_bug(p), settings=settings(database=None, derandomize=True)
    )
    prog.seed = 1
    assert fuzz.check(prog).ok
