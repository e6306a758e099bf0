"""benchmarks/tilelang_regression.py on a tiny examples tree of its own, on the CPU: both sides are
tile2triton here (the "TileLang" site is a package that installs tile2triton's alias), the timer
is a wall clock and kernel times are not measured (CUDA only).  Checks the part file, the output
comparison (agree, differ, not exposed) and the markdown section."""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from tilelang_regression_suite import report  # noqa: E402

EXAMPLE = """
import os

import torch

import tilelang
import tilelang.language as T

TILELANG_SIDE = os.environ.get("TILELANG_REGRESSION_IMPL") == "tilelang"


@tilelang.jit(out_idx=[-1])
def add_one(N, block=64):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] + 1.0

    return main


def run_regression_perf(n=100):
    a = torch.randn(n)
    kernel = add_one(n)
    from tilelang.profiler import do_bench

    return do_bench(lambda: kernel(a))


def run_differ(n=70):
    a = torch.randn(n)
    kernel = add_one(n)
    from tilelang.profiler import do_bench

    bump = 0.5 if TILELANG_SIDE else 0.0  # the two sides compute different outputs
    return do_bench(lambda: kernel(a) + bump)


def run_inplace(n=50):
    a, b = torch.randn(n), torch.empty(n)
    from tilelang.profiler import do_bench

    def copy():  # returns nothing: its outputs are not exposed
        b.copy_(a)

    return do_bench(copy)


def run_needs_fla():
    if TILELANG_SIDE:
        import fla  # noqa: F401 - absent: the case is listed, not counted
    return 1.0
"""

REGRESSION = """
import tilelang.testing

import example_demo


def regression_demo_add():
    tilelang.testing.process_func(example_demo.run_regression_perf, n=100)


def regression_demo_differ():
    tilelang.testing.process_func(example_demo.run_differ)


def regression_demo_inplace():
    tilelang.testing.process_func(example_demo.run_inplace)


def regression_demo_fla():
    tilelang.testing.process_func(example_demo.run_needs_fla)
"""


@pytest.fixture(scope="module")
def part(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("suite")
    demo = tmp / "checkout" / "examples" / "demo"
    demo.mkdir(parents=True)
    (demo / "example_demo.py").write_text(textwrap.dedent(EXAMPLE))
    (demo / "regression_example_demo.py").write_text(textwrap.dedent(REGRESSION))
    site = tmp / "site" / "tilelang"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text(
        "from tile2triton.cli import install_tilelang_alias\n\ninstall_tilelang_alias()\n"
    )
    out = tmp / "out"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "tilelang_regression.py"), str(tmp / "checkout"), "--part", "1/1",
           "--site", f"{tmp / 'site'}{os.pathsep}{ROOT}", "--out", str(out), "--no-warm"]  # fmt: skip
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    return out, p.stdout, demo


def test_part_file_has_every_case(part):
    out, _, _ = part
    rows = {r["case"]: r for r in json.loads((out / "part_1_of_1.json").read_text())["rows"]}
    assert sorted(rows) == ["regression_demo_add", "regression_demo_differ", "regression_demo_fla",
                            "regression_demo_inplace"]  # fmt: skip
    add = rows["regression_demo_add"]
    assert add["tilelang"]["status"] == add["tile2triton"]["status"] == "ok"
    assert add["tilelang"]["latency"] > 0 and add["tile2triton"]["latency"] > 0
    assert add["outputs"] == "agree"
    assert rows["regression_demo_differ"]["outputs"].startswith("differ: call 0 output 0:")
    assert rows["regression_demo_inplace"]["outputs"] == "not exposed"
    fla = rows["regression_demo_fla"]
    assert fla["tilelang"]["status"] == "error" and "fla" in fla["tilelang"]["error"]


def test_markdown_section(part):
    out, stdout, _ = part
    md = report.markdown(report.load([str(out)]))
    assert md in stdout  # a part prints its own section
    lines = md.splitlines()
    assert lines[0] == "## TileLang's performance-regression suite (same source)"
    header = next(ln for ln in lines if ln.startswith("| case |"))
    assert header.rstrip(" |").split(" | ")[-2:] == ["event ratio", "kernel ratio"]
    rows = [ln for ln in lines if ln.startswith("| `")]
    assert [r.split(" | ")[0] for r in rows] == ["| `demo_add`", "| `demo_differ`", "| `demo_inplace`"]
    for r in rows:
        event = r.rstrip(" |").split(" | ")[-2]
        assert event.endswith("×") and float(event[:-1]) > 0
        assert r.rstrip(" |").split(" | ")[-1] == "-"  # no CUDA: no kernel time
    assert any(ln.startswith("Geometric means") and "over 3 cases" in ln for ln in lines)
    assert any("`demo_fla`" in ln and "needs `fla`" in ln for ln in lines)


def test_warm_phase_child(part, tmp_path):
    """The warm phase (every case once, in parallel on the GPU machine) records each case's status
    and times nothing."""
    demo = part[2]
    out = tmp_path / "warm.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "tilelang_regression_suite" / "child.py"), "tile2triton",
           str(demo / "regression_example_demo.py"), "warm", str(out), "regression_demo_add"]  # fmt: skip
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert p.returncode == 0, p.stderr[-2000:]
    cases = json.loads(out.read_text())["cases"]
    assert list(cases) == ["regression_demo_add"] and cases["regression_demo_add"]["status"] == "ok"
    assert cases["regression_demo_add"]["bench"] == [{"ms": 1.0}]
    assert not (tmp_path / "warm.samples.pt").exists()


def test_summary_merges_parts_and_formats_ratios(tmp_path):
    ok = lambda ms, k: {"status": "ok", "latency": ms, "bench": [{"ms": ms, "kernel_ms": k}]}
    rows_a = [{"file": "a/regression_a.py", "case": "regression_x", "tilelang": ok(1.02, 0.5),
               "tile2triton": ok(1.0, 1.0), "outputs": "agree"}]  # fmt: skip
    rows_b = [{"file": "b/regression_b.py", "case": "regression_y", "tilelang": ok(2.0, 2.0),
               "tile2triton": {"status": "error", "error": "TileLangCompileError: T.import_source is CUDA C\\nmore"}}]  # fmt: skip
    for k, rows in ((1, rows_a), (2, rows_b)):
        (tmp_path / f"part_{k}_of_2.json").write_text(json.dumps({"rows": rows}))
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "tilelang_regression.py"), "--summary", str(tmp_path)],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert "| agree | 1.02× | 0.50× |" in p.stdout
    assert "event ratio 1.02× over 1 cases, kernel ratio 0.50× over 1 cases" in p.stdout
    assert "- `y` (b/regression_b.py): TileLangCompileError: T.import_source is CUDA C" in p.stdout
    assert "per kernel" not in p.stdout  # one kernel a side (and runs before the split was recorded)


def test_summary_lists_the_kernels_of_multi_kernel_cases(tmp_path):
    """A case whose call launches several kernels gets a line of device ms per kernel for each side,
    taken from the bench call whose event time the case reported."""

    def ok(ms, kernels, other=None):
        calls = [{"ms": ms, "kernel_ms": sum(kernels.values()), "kernels": kernels}]
        if other:  # a second bench call, farther from the reported latency: not the one listed
            calls.append({"ms": ms * 3, "kernel_ms": 9.0, "kernels": other})
        return {"status": "ok", "latency": ms, "bench": calls}

    rows = [{"file": "f/regression_f.py", "case": "regression_split", "outputs": "agree",
             "tilelang": ok(0.034, {"split_kernel": 0.0215, "combine_kernel": 0.008}, {"stale": 9.0}),
             "tile2triton": ok(0.036, {"split": 0.0241, "combine": 0.0073})},
            {"file": "f/regression_f.py", "case": "regression_one", "outputs": "agree",
             "tilelang": ok(0.01, {"main": 0.009}), "tile2triton": ok(0.01, {"main": 0.0091})}]  # fmt: skip
    (tmp_path / "part_1_of_1.json").write_text(json.dumps({"rows": rows}))
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "tilelang_regression.py"), "--summary", str(tmp_path)],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert p.returncode == 0, p.stderr
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("- `split`")]
    assert lines == [
        "- `split`: TileLang `split_kernel` 0.0215, `combine_kernel` 0.0080; tile2triton `split` 0.0241, `combine` 0.0073"
    ]
    assert "stale" not in p.stdout and "- `one`" not in p.stdout


# --- the shape-variant mode (--variants): the interception in the child, the table's check, the section ---

SUITE = ROOT / "benchmarks" / "tilelang_regression_suite"
VARIANT_CHILD = f"""
import sys

sys.path.insert(0, {str(SUITE)!r})
import child
import variants

variants.VARIANTS.update(
    regression_demo_add=variants.Variant("kwargs over the suite's", kwargs={{"n": 37}}),
    regression_demo_differ=variants.Variant("a run() of the example's own function", run=lambda example: example.run_differ(n=29)),
    regression_demo_inplace=variants.NoVariant("none"),
)
variants.VARIANTS_2.update(
    regression_demo_add=variants.Variant("set 2", kwargs={{"n": 53}}),
    regression_demo_differ=variants.NoVariant("none in set 2"),
)
sys.exit(child.main(sys.argv[1:]))
"""


def test_variant_child_intercepts_process_func(part, tmp_path):
    """In the variant mode the child runs each case at its table entry's shape: kwargs merged over the
    suite's (n=100 -> 37), or the entry's run() handed the example module; cases with no variant, or
    none in the table, are not run."""
    demo = part[2]
    script = tmp_path / "variant_child.py"
    script.write_text(VARIANT_CHILD)
    shapes = {}
    for mode in ([], ["--variants", "1"], ["--variants", "2"]):
        out = tmp_path / f"time{''.join(mode)}.json"
        cmd = [
            sys.executable,
            str(script),
            *mode,
            "tile2triton",
            str(demo / "regression_example_demo.py"),
            "time",
            str(out),
        ]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        assert p.returncode == 0, p.stderr[-2000:]
        cases = json.loads(out.read_text())["cases"]
        import torch

        samples = torch.load(str(out)[: -len(".json")] + ".samples.pt")
        shapes[mode[-1] if mode else None] = {c: samples[c][0]["shape"] if samples[c] and samples[c][0] else None for c in cases}
        assert all(cases[c]["status"] == "ok" and cases[c]["latency"] > 0 for c in cases)
    assert shapes[None] == {"regression_demo_add": [100], "regression_demo_differ": [70],
                            "regression_demo_fla": None, "regression_demo_inplace": None}  # fmt: skip
    assert shapes["1"] == {"regression_demo_add": [37], "regression_demo_differ": [29]}
    assert shapes["2"] == {"regression_demo_add": [53]}


def test_variant_call_sets_argv_for_its_call_only(monkeypatch):
    sys.path.insert(0, str(SUITE))
    import variants

    monkeypatch.setattr(sys, "argv", ["child.py"])
    seen = []
    v = variants.Variant("argv", kwargs={"b": 2}, argv=("--m", "30"))
    assert v.call(lambda a=0, b=0: seen.append((list(sys.argv), a, b)) or 1.5, {"a": 1, "b": 9}) == 1.5
    assert seen == [(["child.py", "--m", "30"], 1, 2)] and sys.argv == ["child.py"]
    assert v.describe() == "b=2, --m 30"


def test_variants_check_names_bad_entries(part):
    demo = part[2]
    import variants

    good = {
        "regression_demo_add": variants.Variant("n", kwargs={"n": 37}),
        "regression_demo_differ": variants.Variant("r", run=_demo_run),
        "regression_demo_inplace": variants.NoVariant("none"),
        "regression_demo_fla": variants.NoVariant("none"),
    }
    assert variants.check(str(demo.parent), good) == []
    bad = dict(
        good,
        regression_demo_add=variants.Variant("typo", kwargs={"size": 3}),
        regression_gone=good["regression_demo_fla"],
    )
    del bad["regression_demo_fla"]
    bad["regression_demo_differ"] = variants.Variant("r", run=_demo_run_bad)
    assert sorted(variants.check(str(demo.parent), bad)) == [
        "demo/regression_example_demo.py::regression_demo_add: run_regression_perf has no parameter size",
        "demo/regression_example_demo.py::regression_demo_differ: add_one has no parameter blocks",
        "demo/regression_example_demo.py::regression_demo_differ: the example has no missing_kernel",
        "demo/regression_example_demo.py::regression_demo_fla: no entry in variants.py",
        "regression_gone: in variants.py but no such case",
    ]


def _demo_run(example):
    return example.add_one(40, block=32)


def _demo_run_bad(example):
    example.missing_kernel()
    return example.add_one(40, blocks=32)


@pytest.mark.skipif(not (pathlib.Path(os.environ.get("TILELANG_CHECKOUT", "/tmp/tl")) / "examples").is_dir(),
                    reason="no TileLang checkout (TILELANG_CHECKOUT)")  # fmt: skip
def test_variants_table_matches_tilelang_examples():
    """Every regression case of the checkout has an entry in both sets, and every override names a
    parameter of the function it reaches (read from the examples' source)."""
    import variants

    examples = pathlib.Path(os.environ.get("TILELANG_CHECKOUT", "/tmp/tl")) / "examples"
    for table in variants.VARIANT_SETS.values():
        assert variants.check(str(examples), table) == []


def test_variants_summary_section(tmp_path):
    ok = lambda ms: {"status": "ok", "latency": ms, "bench": [{"ms": ms}]}
    rows = [{"file": "a/regression_a.py", "case": "regression_x", "tilelang": ok(2.0), "tile2triton": ok(1.0),
             "outputs": "agree", "variant": "n=37"},
            {"file": "a/regression_a.py", "case": "regression_y", "skipped": "no variant: sizes hard-coded"}]  # fmt: skip
    (tmp_path / "variants_part_1_of_1.json").write_text(json.dumps({"variants": True, "rows": rows}))
    md = report.markdown(report.load([str(tmp_path)]))
    assert md.startswith("## TileLang's regression suite at other shapes\n")
    assert "| `x` | a/regression_a.py | 2.0000 | 1.0000 | - | - | agree | 2.00× | - |" in md
    assert "event ratio 2.00× over 1 cases" in md
    assert "- `y` (a/regression_a.py): no variant: sizes hard-coded" in md
    assert md.rstrip().endswith("- `x`: n=37")
    (tmp_path / "part_1_of_1.json").write_text(json.dumps({"rows": rows[:1]}))
    with pytest.raises(SystemExit, match="mixed"):
        report.load([str(tmp_path)])


def test_a_stopped_part_keeps_the_files_it_timed(tmp_path, monkeypatch):
    """The part file is rewritten before each file is timed: a run killed from outside (a device call's
    time limit) leaves the rows it timed and lists the rest as not reached."""
    from tilelang_regression_suite import run

    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        (tmp_path / name / f"regression_{name}.py").write_text(f"def regression_{name}_case():\n    pass\n")

    def child(self, impl, path, phase, case=None, timeout=None):
        if "second" in path:
            raise KeyboardInterrupt  # the run stopped while timing the second file
        return {"cases": {"regression_first_case": {"status": "ok", "latency": 0.5 if impl == "tilelang" else 0.25}}}

    monkeypatch.setattr(run.Runner, "child", child)
    with pytest.raises(KeyboardInterrupt):
        run.run_part(str(tmp_path), "1/1", "", str(tmp_path / "out"), 1, [], deadline=600, warm=False)
    rows = {r["case"]: r for r in json.loads((tmp_path / "out" / "part_1_of_1.json").read_text())["rows"]}
    assert rows["regression_first_case"]["tile2triton"]["latency"] == 0.25
    assert rows["regression_second_case"]["skipped"] == "not reached (run stopped)"
    assert "not reached" in report.markdown(report.load([str(tmp_path / "out")]))


def test_a_time_child_ends_by_the_deadline(tmp_path, monkeypatch):
    """A file timed near the part's deadline gets the time left (at least 30 s), not the phase's whole
    timeout: a child that hangs does not run the part past its deadline."""
    from tilelang_regression_suite import run

    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "regression_one.py").write_text("def regression_one_case():\n    pass\n")
    given = []

    def child(self, impl, path, phase, case=None, timeout=None):
        given.append(timeout)
        return {"cases": {"regression_one_case": {"status": "ok", "latency": 0.5}}}

    monkeypatch.setattr(run.Runner, "child", child)
    run.run_part(str(tmp_path), "1/1", "", str(tmp_path / "out"), 1, [], deadline=100, warm=False, time_timeout=240)
    assert len(given) == 2 and all(90 <= t <= 100 for t in given), given
    given.clear()
    run.run_part(str(tmp_path), "1/1", "", str(tmp_path / "out"), 1, [], deadline=5, warm=False, time_timeout=240)
    assert given == [30.0, 30.0]


def test_beyond_suite_cases_pair_up():
    """benchmarks/beyond_suite: every regression_X calls process_func(run_X), and every run_X has SMALL sizes
    (check_small.py's CPU run); read without importing (the files need a TileLang checkout)."""
    import ast

    files = sorted((ROOT / "benchmarks" / "beyond_suite").glob("*/regression_*.py"))
    assert files
    for path in files:
        tree = ast.parse(path.read_text())
        funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        small = next(
            n.value for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "SMALL"
        )
        small_keys = {k.value for k in small.keys} if isinstance(small, ast.Dict) else None
        cases = [name for name in funcs if name.startswith("regression_")]
        assert cases, path
        for name in cases:
            run = "run_" + name[len("regression_") :]
            calls = [c for c in ast.walk(funcs[name]) if isinstance(c, ast.Call)]
            assert any(getattr(a, "id", None) == run for c in calls for a in c.args), (path.name, name)
            assert run in funcs, (path.name, run)
            assert small_keys is None or run in small_keys, (path.name, run)


def test_env_variants_runs_a_case_at_a_variant_shape(tmp_path, monkeypatch, capsys):
    """benchmarks/env_variants.py's ``CASE@SET`` (and source_edits.py's, through it): the case's
    ``process_func`` call at the set's shape, its keyword arguments merged over the suite's; a case
    with no shape in the set says so."""
    import env_variants
    from tilelang_regression_suite import variants

    import tile2triton.testing

    monkeypatch.setattr(tile2triton.testing, "process_func", tile2triton.testing.process_func)  # the child patches it
    monkeypatch.setattr(sys, "path", list(sys.path))
    regression = tmp_path / "regression_demo_shapes.py"
    regression.write_text(
        textwrap.dedent(
            """
            import tilelang.testing


            def run_regression_perf(n=100, scale=2):
                return float(n * scale)


            def regression_demo_shape():
                tilelang.testing.process_func(run_regression_perf, n=100)
            """
        )
    )
    monkeypatch.setitem(variants.VARIANT_SETS[2], "regression_demo_shape", variants.Variant("n 37", kwargs={"n": 37}))
    env_variants.child(str(regression), "regression_demo_shape")
    env_variants.child(str(regression), "regression_demo_shape@2")
    results = [line.split()[1] for line in capsys.readouterr().out.splitlines() if line.startswith("RESULT")]
    assert results == ["200.0000", "74.0000"]
    with pytest.raises(SystemExit, match="no shape in variant set 1"):
        env_variants.child(str(regression), "regression_demo_shape@1")
