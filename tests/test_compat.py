"""The TileLang T-namespace compatibility matrix (tile2triton/compat.py, docs/compat.md)."""

import pathlib
import subprocess
import sys

import pytest

from tile2triton import compat

ROOT = pathlib.Path(__file__).resolve().parent.parent
WHEELS = sorted((ROOT / ".whl").glob("tilelang-*.whl"))


def test_symbol_list_is_packaged_and_sorted():
    header, names = compat.load_symbols()
    assert "TileLang" in header and "produced by" in header
    assert names == sorted(names) and len(names) == len(set(names))
    for must in ("Kernel", "copy", "gemm", "Parallel", "Pipelined", "atomic_add", "cumsum", "alloc_var", "print"):
        assert must in names


def test_every_tilelang_symbol_is_classified():
    unclassified = [name for name, status, _note in compat.matrix() if status is None]
    assert not unclassified, (
        f"TileLang T symbols neither supported nor listed with a reason in tile2triton/compat.py: {unclassified}"
    )


def test_every_row_has_a_reason_or_support_note():
    for name, status, note in compat.matrix():
        assert status in (compat.SUPPORTED, compat.NO_EFFECT, compat.UNSUPPORTED), name
        assert note.strip(), f"T.{name}: no note"


def test_supported_comes_from_the_code():
    from tile2triton.frontend.rules import RULES

    rows = {name: status for name, status, _ in compat.matrix()}
    for name in ("copy", "gemm", "atomic_add", "cumsum", "reduce_sum", "exp2", "alloc_var"):
        assert name in RULES and rows[name] == compat.SUPPORTED
    for name in ("Tensor", "StridedTensor", "macro", "prim_func", "float16", "int8"):
        assert rows[name] == compat.SUPPORTED
    assert rows["annotate_layout"] == compat.NO_EFFECT


def test_classify_reports_unknown_names():
    assert compat.classify("definitely_not_a_tilelang_symbol")[0] is None


def test_generated_doc_is_current():
    doc = ROOT / "docs" / "compat.md"
    assert doc.read_text() == compat.render_markdown(), "regenerate: python -m tile2triton.compat > docs/compat.md"


def test_command_prints_the_matrix():
    out = subprocess.run(
        [sys.executable, "-m", "tile2triton.compat"], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert out.stdout.startswith("# TileLang `T` namespace")
    assert "| `T.gemm` | supported |" in out.stdout
    assert "UNCLASSIFIED" not in out.stdout


@pytest.mark.skipif(not WHEELS, reason="no TileLang wheel in .whl/")
def test_symbol_list_matches_the_wheel():
    version, names, _tir = compat.extract_symbols(str(WHEELS[-1]))
    header, packaged = compat.load_symbols()
    assert version in header
    assert names == packaged


def test_every_tagged_name_is_bound_by_the_binder():
    """compat reads a ``__t2t__`` tag as "a binder rule": each tag must be a RULES entry or a
    statement form the binder itself handles (``with T.attr(...)``)."""
    import tile2triton.language as T
    from tile2triton.frontend.rules import RULES

    statement_forms = {"attr"}
    tags = {getattr(getattr(T, n), "__t2t__", None) for n in dir(T) if not n.startswith("_")}
    missing = sorted(t for t in tags - {None} if t not in RULES and t not in statement_forms)
    assert not missing, f"T names tagged for the binder without a rule: {missing}"


def test_no_refusal_reason_is_stale():
    """A name the binder supports (or accepts) must not keep a refusal reason nobody reads."""
    supported = compat.supported_names()
    stale = sorted(n for n in compat.UNSUPPORTED_REASONS if n in supported or n in compat.NO_EFFECT_REASONS)
    assert not stale, f"UNSUPPORTED_REASONS entries of supported names: {stale}"
