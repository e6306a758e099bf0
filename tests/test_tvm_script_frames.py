"""The TVM names TileLang's front-end tests import (issue 12): ``tvm.script.ir_builder.base
.IRBuilderFrame`` with ``T.serial(...)`` called in host code, ``tvm.tirx.expr`` (``IntImm``, ``Var``,
``Not``, ``And``, ``Or``) and ``tilelang.language.dtypes._all_dtypes``."""

import importlib
import importlib.util
import sys

import pytest
import torch
from t2t_util import assert_close, poison
from tile2triton.tvm.tirx.expr import And, IntImm, Not, Or, Var  # noqa: F401 - the import is the test

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import tvm
from tile2triton.language import KernelOnlyError
from tile2triton.language.dtypes import _all_dtypes
from tile2triton.tvm.script.ir_builder.base import IRBuilderFrame

N = 93  # not a multiple of the block, not a power of two
BLOCK = 32


def test_serial_in_host_code_is_a_frame_only_for_a_unit_step():
    assert isinstance(T.serial(1, 10, 1), IRBuilderFrame)
    assert isinstance(T.serial(7), IRBuilderFrame)
    assert isinstance(T.serial(1, 10, IntImm(T.int32, 1)), IRBuilderFrame)
    assert isinstance(T.serial(1, 10, T.int32(1)), IRBuilderFrame)
    assert not isinstance(T.serial(1, 10, Var("tmp", T.int32)), IRBuilderFrame)
    assert not isinstance(T.serial(10, -1, -1), IRBuilderFrame)
    assert not isinstance(T.serial(0, 10, 2), IRBuilderFrame)
    with pytest.raises(KernelOnlyError, match="inside a @T.prim_func"):
        for _ in T.serial(3):
            pass
    with pytest.raises(KernelOnlyError):
        list(T.serial(0, 10, 2))


def test_all_dtypes_lists_every_name():
    for name in ("float16", "bfloat16", "float", "half", "int8", "float8_e4m3fn", "float4_e2m1fn", "float16x2"):
        assert name in _all_dtypes, name
    assert len(set(_all_dtypes)) == len(_all_dtypes)
    for name in _all_dtypes:
        assert getattr(T, name) is not None, name


def test_tvm_expr_names_resolve_through_the_alias(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tvm" else real(name, *a))
    saved = {k: v for k, v in sys.modules.items() if k == "tvm" or k.startswith("tvm.")}
    for k in saved:
        del sys.modules[k]
    try:
        assert tvm.install_as_tvm() is True
        from tvm import tirx
        from tvm.script.ir_builder.base import IRBuilderFrame as Frame
        from tvm.tirx.expr import IntImm as Imm
        from tvm.tirx.expr import Not as NotOp

        assert Frame is IRBuilderFrame and Imm is IntImm and NotOp is Not and tirx.expr.Or is Or
        with pytest.raises(ModuleNotFoundError, match="light subset of TVM"):
            importlib.import_module("tvm.script.parser")
    finally:
        for k in [k for k in sys.modules if k == "tvm" or k.startswith("tvm.")]:
            del sys.modules[k]
        sys.modules.update(saved)


@tilelang.jit(out_idx=[-1])
def logical_select(n, block):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                a = A[bx * block + i]
                b = B[bx * block + i]
                keep = Or(Not(a < b), And(a > 0.0, b > 1.0))
                C[bx * block + i] = T.if_then_else(keep, a * 2.0, b - a)

    return main


def test_tvm_logical_operators_in_a_kernel(dev):
    a = torch.randn(N, device=dev)
    b = torch.randn(N, device=dev) + 0.5
    ref = torch.where(~(a < b) | ((a > 0) & (b > 1)), a.double() * 2, b.double() - a.double())
    assert_close(logical_select(N, BLOCK)(a, b), ref, atol=1e-6, rtol=1e-6)


@tilelang.jit
def stepped_loops(A, steps: int):
    A: T.Tensor[(N,), T.int32]
    with T.Kernel(1, threads=1):
        for i in range(0, N, steps):
            A[i] = i * 3
        for i in T.serial(N - 1, 0, -steps):
            A[i] = A[i] + 1


def test_stepped_and_negative_step_loops(dev):
    out = poison((N,), torch.int32, dev)
    stepped_loops(out, 4)
    ref = torch.full((N,), -123456789, dtype=torch.int64)
    ref[0:N:4] = torch.arange(0, N, 4) * 3
    down = torch.arange(N - 1, 0, -4)
    ref[down] = ref[down] + 1
    assert torch.equal(out.cpu().long(), ref)
