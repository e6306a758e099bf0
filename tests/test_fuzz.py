"""Differential fuzzing (tile2triton/oracle/fuzz.py): random TileLang programs run through tile2triton
(Triton's interpreter) and through the reference executor must agree.

The bounded run below is deterministic (fixed seeds) and part of the suite.  Longer runs are
documented in docs/fuzz.md, e.g. ``python -m tile2triton.oracle.fuzz --count 300``.
Bugs the fuzzer found are in tests/test_fuzz_regressions.py.
"""

import os
import pathlib
import subprocess
import sys
import time

import pytest
import torch

from tile2triton.oracle import fuzz

ROOT = pathlib.Path(__file__).resolve().parent.parent
COUNT = int(os.environ.get("TILE2TRITON_FUZZ_EXAMPLES", "120"))
SEED = int(os.environ.get("TILE2TRITON_FUZZ_SEED", "20261130"))


def test_fuzz_bounded_run(capsys):
    """A fixed sequence of programs: every one agrees with the reference."""
    result = fuzz.run(COUNT, SEED)
    with capsys.disabled():
        print(f"\n{result.line()} in {result.seconds:.1f}s")
    assert result.checked == COUNT
    assert sum(result.known.values()) <= COUNT // 10, result.known  # replaced programs stay rare
    assert not result.failures, "\n\n".join(f"seed {s}: {m}" for s, m in result.failures[:3])
    assert len(result.by_kind) >= 8, result.by_kind


@pytest.mark.parametrize("family", fuzz.FAMILIES)
def test_each_family_checks(family):
    """One program that starts with each family goes through check() end to end."""
    prog = fuzz.generate(7, family=family)
    assert prog.kinds[0] == family
    assert fuzz.check(prog).ok


def test_programs_are_deterministic_tilelang_source():
    a, b = fuzz.generate(123), fuzz.generate(123)
    assert a.source == b.source and a.kinds == b.kinds
    assert a.source.startswith(fuzz.TILELANG_HEADER)  # the same text runs on real TileLang
    t2t = a.source_for("tile2triton")
    assert "import tile2triton as tilelang" in t2t and "import tilelang\n" not in t2t
    assert "@T.prim_func" in a.source or a.style == "eager"


def test_every_kind_is_drawn():
    """Over 300 seeds the grammar produces every family and feature."""
    seen = {k for s in range(300) for k in fuzz.generate(s).kinds}
    assert seen == set(fuzz.KINDS)


@pytest.mark.parametrize("issue", [i for i in fuzz.KNOWN_ISSUES if i.predicate], ids=lambda i: i.name)
def test_known_issues_are_redrawn_only_in_their_mode(issue):
    seed = next((s for s in range(20000) if issue.predicate(fuzz.generate(s, mode=None))), None)
    if seed is None:
        pytest.skip(f"no program in 20000 seeds has {issue.name}")
    for mode in ("cpu", "cuda", "tilelang"):
        assert issue.predicate(fuzz.generate(seed, mode=mode)) == (mode not in issue.modes)


def test_a_wrong_result_is_a_divergence(monkeypatch):
    """The oracle can fail: a kernel whose output is off by 0.01 is reported, with the program."""
    prog = fuzz.generate(3, family="scan")
    kernel = prog.build()

    def off_by_a_bit(*args):
        return kernel(*args) + 1e-2

    off_by_a_bit.prim_func = kernel.prim_func
    monkeypatch.setattr(fuzz.Program, "build", lambda self, device="cpu": off_by_a_bit)
    with pytest.raises(fuzz.Divergence, match="diverges at") as err:
        fuzz.check(prog)
    assert "T.cum" in str(err.value)  # the program's source is in the message


def test_fuzz_module_does_not_need_hypothesis():
    """hypothesis is a test extra: importing and running the fuzzer must not import it."""
    code = (
        "import sys; sys.modules['hypothesis'] = None\n"
        "from tile2triton.oracle import fuzz\n"
        "print(fuzz.generate(1).kind)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() in fuzz.FAMILIES


def test_hypothesis_adapter():
    pytest.importorskip("hypothesis")
    from hypothesis import given, settings

    seen = []

    @settings(max_examples=3, derandomize=True, database=None, deadline=None)
    @given(fuzz.hypothesis_programs(family="scan"))
    def one(program):
        seen.append(program.kind)

    one()
    assert seen == ["scan"] * 3


def test_inputs_are_random_and_seeded():
    prog = fuzz.generate(11, family="gemm")
    x, y = prog.make_inputs(), prog.make_inputs()
    assert all(torch.equal(a, b) for a, b in zip(x, y))
    assert all(a.float().abs().sum() > 0 for a in x)


def test_cli_show_and_run(tmp_path):
    start = time.time()
    out = subprocess.run(
        [sys.executable, "-m", "tile2triton.oracle.fuzz", "--count", "2", "--seed", "5"],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("[fuzz] checked 2 programs (")
    show = subprocess.run([sys.executable, "-m", "tile2triton.oracle.fuzz", "--show", "5"], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)  # fmt: skip
    assert show.stdout.startswith("# fuzz seed 5:") and "import tilelang" in show.stdout
    assert time.time() - start < 600


def _fuzz_gpu():
    import importlib.util

    path = ROOT / "tools" / "fuzz_gpu.py"
    spec = importlib.util.spec_from_file_location("fuzz_gpu", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fuzz_gpu_classifies_disagreements(monkeypatch):
    tool = _fuzz_gpu()
    # an open issue of the interpreter alone, recognised by its symptom (a stand-in: the real list changes)
    issue = fuzz.Issue("interpreter_mask", ("cpu",), None, r"mask has unsupported dtype")
    monkeypatch.setattr(fuzz, "KNOWN_ISSUES", [issue])
    prog = fuzz.generate(1)

    def rec(t2t, tl, detail=""):
        return {"t2t": t2t, "tilelang": tl, "detail": {"t2t": detail}}

    assert tool.classify(rec("agree", None), prog, "cuda") is None
    assert tool.classify(rec("agree", "agree"), prog, "tilelang") is None
    assert tool.classify(rec("differ", None), prog, "cuda") == "tile2triton bug"
    assert tool.classify(rec("differ", "agree"), prog, "tilelang") == "tile2triton bug"
    assert tool.classify(rec("agree", "differ"), prog, "tilelang") == "TileLang bug"
    assert tool.classify(rec("differ", "differ"), prog, "tilelang") == "both differ"
    assert tool.classify(rec("agree", "rejects"), prog, "tilelang") == "TileLang rejects"
    assert tool.classify(rec("crash", None), prog, "cuda") == "tile2triton crash"
    assert tool.classify(rec("crash", None), prog, "tilelang") == "crash"
    assert tool.classify(rec("error", "ran"), prog, "tilelang") == "tile2triton bug"
    assert tool.classify(rec("reference error", "agree"), prog, "tilelang") == "reference error"
    known = rec("error", None, "GeneratedCodeError: ... ValueError: mask has unsupported dtype")
    assert tool.classify(known, prog, "cpu") == "known issue (interpreter_mask)"
    assert tool.classify(known, prog, "cuda") == "tile2triton error"  # that issue is the interpreter's only


def test_fuzz_gpu_runs_on_the_interpreter(tmp_path):
    """The GPU tool's workers, results and summary, with the interpreter standing in for the GPU."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "fuzz_gpu.py"), "--device", "cpu", "--count", "3", "--seed", "11", "--jobs", "1",
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    assert "[fuzz] checked 3 programs (" in out.stdout
    assert '"agree": 3' in out.stdout
    assert (tmp_path / "summary.json").exists()
