"""The compile cache: in-process (per function, constants and device kind), the on-disk files of
generated source (content-addressed, atomic writes, TILE2TRITON_CACHE_DIR,
TILE2TRITON_DISABLE_CACHE=1), and two processes compiling the same kernel at once."""

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.runtime import cache
from tile2triton.runtime.cache import stats

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _copy_kernel():
    @tilelang.jit
    def copy_plus(A, block=32):
        N = T.const("N")
        A: T.Tensor((N,), T.float32)
        B = T.empty((N,), T.float32)
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] + 2.0
        return B

    return copy_plus


def test_cache_dir_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("TILE2TRITON_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv("TILE2TRITON_DISABLE_CACHE", raising=False)
    fn = _copy_kernel()
    a = torch.randn(45)
    assert torch.equal(fn(a), a + 2)
    files = list((tmp_path / "c").glob("copy_plus_*.py"))
    assert len(files) == 1
    assert files[0].read_text() == fn._eager.compile(a).lowered(True).source
    assert not list((tmp_path / "c").glob("*.tmp"))


def test_same_source_is_a_disk_hit(tmp_path, monkeypatch):
    monkeypatch.setenv("TILE2TRITON_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TILE2TRITON_DISABLE_CACHE", raising=False)
    before = stats.snapshot()
    p1 = cache.source_path("x = 1\n", "k")
    p2 = cache.source_path("x = 1\n", "k")
    p3 = cache.source_path("x = 2\n", "k")
    assert p1 == p2 != p3
    assert stats.disk_writes - before["disk_writes"] == 2
    assert stats.disk_hits - before["disk_hits"] == 1


def test_corrupt_file_is_rewritten(tmp_path, monkeypatch):
    monkeypatch.setenv("TILE2TRITON_CACHE_DIR", str(tmp_path))
    path = cache.source_path("y = 1\n", "k")
    path.write_text("y = 1")  # truncated by something else
    assert cache.source_path("y = 1\n", "k").read_text() == "y = 1\n"


def test_disable_cache_leaves_nothing_in_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TILE2TRITON_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("TILE2TRITON_DISABLE_CACHE", "1")
    fn = _copy_kernel()
    a = torch.randn(33)
    assert torch.equal(fn(a), a + 2)
    assert not (tmp_path / "c").exists() or not list((tmp_path / "c").iterdir())
    path = cache.source_path("z = 1\n", "k")
    assert path.parent != tmp_path / "c" and path.exists()


def test_in_process_cache_keys():
    fn = _copy_kernel()
    a, b = torch.randn(20), torch.randn(21)
    k1 = fn._eager.compile(a)
    assert fn._eager.compile(torch.randn(20)) is k1  # same constants: same kernel
    assert fn._eager.compile(b) is not k1  # another N
    assert fn._eager.compile(a, block=64) is not k1  # another compile-time argument
    before = stats.compiles
    fn(a)
    fn(a)
    assert stats.compiles - before <= 1  # one lowering for the CPU device kind, then hits
    assert fn._eager.cache_info() == {"plans": 2, "kernels": 3}


def test_atomic_write_never_leaves_partial_file(tmp_path):
    path = tmp_path / "f.py"
    cache.atomic_write(path, "a" * 100000)
    assert path.read_text() == "a" * 100000
    assert [p.name for p in tmp_path.iterdir()] == ["f.py"]


_WORKER = textwrap.dedent(
    """
    import os, sys, time
    sys.path.insert(0, {root!r})
    import torch
    import tile2triton as tilelang
    import tile2triton.language as T
    from tile2triton.runtime import cache

    @tilelang.jit
    def racy(A, block=32):
        N = T.const("N")
        A: T.Tensor((N,), T.float32)
        B = T.empty((N,), T.float32)
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] * 5.0
        return B

    go = float(sys.argv[1])
    while time.time() < go:
        pass
    for n in range(40, 46):  # six kernels, each compiled by both processes at about the same time
        a = torch.randn(n)
        assert torch.equal(racy(a), a * 5.0), n
    for i in range(200):  # and hammer one file
        cache.source_path("# shared\\n" + "x = 1\\n" * 2000, "hammer")
    print("ok", cache.stats.disk_writes, cache.stats.disk_hits)
    """
)


def test_two_processes_compile_the_same_kernel(tmp_path):
    import time

    script = tmp_path / "worker.py"
    script.write_text(_WORKER.format(root=str(ROOT)))
    env = dict(os.environ, TILE2TRITON_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("TILE2TRITON_DISABLE_CACHE", None)
    go = str(time.time() + 4.0)
    procs = [subprocess.Popen([sys.executable, str(script), go], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]  # fmt: skip
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
        assert out.startswith("ok")
    files = sorted((tmp_path / "cache").iterdir())
    names = [f.name for f in files]
    assert not [n for n in names if n.endswith(".tmp")], names
    assert len([n for n in names if n.startswith("racy_")]) == 6
    assert len([n for n in names if n.startswith("hammer_")]) == 1
    hammer = next(f for f in files if f.name.startswith("hammer_"))
    assert hammer.read_text() == "# shared\n" + "x = 1\n" * 2000


def test_compile_count_is_exposed():
    assert cache.compile_count() == stats.compiles
    snap = stats.snapshot()
    assert set(snap) == {"binds", "compiles", "loads", "disk_hits", "disk_writes"}


@pytest.mark.parametrize("value", ["1", "true", "YES"])
def test_disable_flag_spellings(monkeypatch, value):
    monkeypatch.setenv("TILE2TRITON_DISABLE_CACHE", value)
    assert cache.cache_disabled()
    monkeypatch.setenv("TILE2TRITON_DISABLE_CACHE", "0")
    assert not cache.cache_disabled()
