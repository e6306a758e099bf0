"""A kernel is built from its own source, never from another function's that compiles to equal
bytecode. Python's code objects compare equal without their file and without the annotations of
locals or of an inner function's parameters (``A: T.Tensor((M, N), "float16")``), so two kernels
that differ only in a declared dtype (two files, or one file edited and reloaded) have equal code
objects; tile2triton's parsed-source cache must tell them apart.

Found by the fuzzer (seed 7325737 of a long run): an eager kernel declaring ``A`` float32 was
built from an earlier program's tree that declared it float16."""

import importlib
import importlib.util
import os

import pytest
import torch

LAZY = """
import tile2triton as tilelang
import tile2triton.language as T


@tilelang.jit(out_idx=[-1])
def make(M):
    @T.prim_func
    def main(A: T.Tensor((M,), "{dtype}"), B: T.Tensor((M,), "{dtype}")):
        with T.Kernel(T.ceildiv(M, 32), threads=32) as bx:
            for i in T.Parallel(32):
                if bx * 32 + i < M:
                    B[bx * 32 + i] = A[bx * 32 + i] * 3 - 1

    return main
"""

EAGER = """
import tile2triton as tilelang
import tile2triton.language as T


@tilelang.jit
def make(A):
    M = T.const("M")
    A: T.Tensor((M,), "{dtype}")
    B = T.empty((M,), "float32")
    with T.Kernel(T.ceildiv(M, 32), threads=32) as bx:
        for i in T.Parallel(32):
            if bx * 32 + i < M:
                B[bx * 32 + i] = A[bx * 32 + i] * 3 - 1
    return B
"""


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(module, style, dtype, dev):
    a = torch.randn(77, dtype=torch.float64).to(dtype).to(dev)
    out = module.make(77)(a) if style == "lazy" else module.make(a)
    assert out.dtype == (dtype if style == "lazy" else torch.float32)
    torch.testing.assert_close(out.double().cpu(), a.double().cpu() * 3 - 1, atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize("style", ["lazy", "eager"])
def test_two_files_with_equal_bytecode(tmp_path, dev, style):
    template = LAZY if style == "lazy" else EAGER
    modules = []
    for k, name in enumerate(["float16", "float32"]):
        path = tmp_path / f"kernel_{k}.py"
        path.write_text(template.format(dtype=name))
        modules.append((_load(path, f"t2t_identity_{style}_{k}_{os.getpid()}"), name))
    for module, name in modules:
        _run(module, style, getattr(torch, name), dev)


@pytest.mark.parametrize("style", ["lazy", "eager"])
def test_a_file_edited_and_reloaded(tmp_path, dev, monkeypatch, style):
    template = LAZY if style == "lazy" else EAGER
    path = tmp_path / f"edited_{style}.py"
    path.write_text(template.format(dtype="float16"))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module(f"edited_{style}")
    _run(module, style, torch.float16, dev)
    path.write_text(template.format(dtype="float32"))  # the same length: linecache goes by the time
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
    module = importlib.reload(module)
    _run(module, style, torch.float32, dev)
