"""Issue 7 item 4: the generated-source cache survives faults and concurrency.

* a truncated or corrupted file in the cache directory is detected and regenerated, never
  executed and never crashed on;
* two threads calling the same kernel factory at once compile it once and both get right results;
* a cache directory that cannot be written falls back to a temporary one, with a warning.

The corruption and read-only tests run a fresh Python process (no in-memory module cache),
pointed at the cache directory with ``TILE2TRITON_CACHE_DIR``.
"""

import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import torch
from t2t_util import ROOT

import tile2triton as tilelang
import tile2triton.language as T

TESTS = ROOT / "tests"

_SCRIPT = textwrap.dedent(
    """
    import json, sys, warnings
    sys.path.insert(0, {tests!r}); sys.path.insert(0, {root!r})
    import torch
    from t2t_util import load_example
    warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as caught:
        ex = load_example("elementwise")
        k = ex.elementwise_op(33, 47, 16, 32, 128)
        a, b = torch.randn(33, 47), torch.randn(33, 47)
        c = k(a, b)
        ok = bool(torch.equal(c, a + b))
    print("RESULT" + json.dumps({{"ok": ok, "warnings": [str(w.message) for w in caught]}}))
    """
).format(tests=str(TESTS), root=str(ROOT))


def _run_fresh(cache_dir, extra_env=None):
    env = dict(os.environ)
    env["TILE2TRITON_CACHE_DIR"] = str(cache_dir)
    env.pop("TRITON_INTERPRET", None)
    env.update(extra_env or {})
    proc = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")]
    return proc, (json.loads(lines[-1][len("RESULT") :]) if lines else None)


def _generated_files(cache_dir):
    return sorted(p for p in cache_dir.rglob("*.py") if "__pycache__" not in p.parts)


def _corruptions(marker):
    return {
        "truncated": lambda text: text[: len(text) // 2],
        "garbage_bytes": lambda text: b"\x00\xff\xfe garbage \x80\x81",
        "hostile_python": lambda text: f"import pathlib\npathlib.Path({str(marker)!r}).write_text('executed')\n" + text,
        "wrong_kernel": lambda text: text.replace("+", "-"),
    }


@pytest.fixture(scope="module")
def pristine_cache(tmp_path_factory):
    """A cache directory filled by one fresh process (shared by the corruption cases)."""
    cache = tmp_path_factory.mktemp("pristine") / "cache"
    proc, first = _run_fresh(cache)
    assert first is not None and first["ok"], proc.stderr[-3000:]
    return cache


@pytest.mark.parametrize("how", ["truncated", "garbage_bytes", "hostile_python", "wrong_kernel"])
def test_corrupted_cache_file_is_regenerated_not_executed(tmp_path, how, pristine_cache):
    import shutil

    cache = tmp_path / "cache"
    shutil.copytree(pristine_cache, cache)
    marker = tmp_path / "executed.txt"
    files = _generated_files(cache)
    assert files, f"no generated source in {cache}"
    originals = {}
    for path in files:
        originals[path] = path.read_bytes()
        new = _corruptions(marker)[how](path.read_text())
        if isinstance(new, bytes):
            path.write_bytes(new)
        else:
            path.write_text(new)
        # keep size/mtime different from any stale bytecode
        os.utime(path, (time.time() + 5, time.time() + 5))
    proc, second = _run_fresh(cache)
    assert second is not None, f"the kernel crashed on a corrupted cache file:\n{proc.stderr[-3000:]}"
    assert second["ok"], "a corrupted cache file produced wrong results"
    assert not marker.exists(), "code from a corrupted cache file was executed"
    for path, content in originals.items():
        if path.exists():
            assert path.read_bytes() == content, f"{path.name} was not regenerated"


# ---------------------------------------------------------------------------- concurrency
_factory_calls = []


@tilelang.jit(out_idx=[-1])
def _threaded_scale(N, blk):
    _factory_calls.append((N, blk))

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, blk)) as bx:
            for i in T.Parallel(blk):
                B[bx * blk + i] = A[bx * blk + i] * 3.0 + 1.0

    return main


def test_two_threads_compile_once(monkeypatch, tmp_path):
    from tile2triton.codegen import emit
    from tile2triton.runtime import kernel as kernel_mod

    monkeypatch.setenv("TILE2TRITON_CACHE_DIR", str(tmp_path / "cache"))
    emits = []
    real_emit = emit.emit_module

    def slow_emit(*args, **kwargs):
        emits.append(threading.get_ident())
        time.sleep(0.3)  # widen the race window
        return real_emit(*args, **kwargs)

    monkeypatch.setattr(emit, "emit_module", slow_emit)
    if hasattr(kernel_mod, "emit_module"):
        monkeypatch.setattr(kernel_mod, "emit_module", slow_emit)
    _factory_calls.clear()
    barrier = threading.Barrier(2)
    results, errors = {}, []

    def worker(n):
        try:
            a = torch.randn(301) + n
            barrier.wait()
            k = _threaded_scale(301, 64)
            results[n] = (a, k(a))
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    for a, out in results.values():
        torch.testing.assert_close(out, a * 3.0 + 1.0)
    assert len(_factory_calls) == 1, f"the factory ran {len(_factory_calls)} times"
    assert len(emits) == 1, f"the kernel was lowered {len(emits)} times for one (factory, args, device)"


# ---------------------------------------------------------------------------- read-only cache dir
def _unwritable_dir(tmp_path):
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        # root ignores permission bits: use a path below a regular file, which nobody can create
        blocker = tmp_path / "not_a_dir"
        blocker.write_text("")
        return blocker / "cache"
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    return ro / "cache"


def test_unwritable_cache_dir_falls_back_with_warning(tmp_path):
    cache = _unwritable_dir(tmp_path)
    (tmp_path / "tmp").mkdir()
    proc, res = _run_fresh(cache, {"TMPDIR": str(tmp_path / "tmp")})
    assert res is not None, f"the kernel failed with an unwritable cache dir:\n{proc.stderr[-3000:]}"
    assert res["ok"]
    assert any(str(cache) in w or "writable" in w for w in res["warnings"]), res["warnings"]


def test_read_only_existing_cache_dir_falls_back(tmp_path):
    """A read-only directory that exists (permission bits; skipped as root, who ignores them)."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        pytest.skip("root ignores permission bits")
    cache = tmp_path / "ro_cache"
    cache.mkdir()
    cache.chmod(0o500)
    try:
        proc, res = _run_fresh(cache)
        assert res is not None and res["ok"], proc.stderr[-3000:]
        assert any(str(cache) in w or "writable" in w for w in res["warnings"]), res["warnings"]
    finally:
        cache.chmod(0o700)
