"""``tilelang.lower``: the kernel bound, checked and lowered for a target without a launch; the
artifact holds the generated Triton, and the TVM modules TileLang's holds are named as absent."""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T


def _scale(n, block):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=64) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    B[bx * block + i] = A[bx * block + i] * 3.0

    return main


@pytest.mark.parametrize("target", ["cuda", "auto", {"kind": "cuda", "arch": "sm_80"}, "sm_90"])
def test_lower_gives_the_triton_source_for_the_target(target):
    artifact = tilelang.lower(_scale(100, 32), target=target)
    assert "@triton.jit" in artifact.kernel_source
    assert "A[bx * block + i] * 3.0" in artifact.kernel_source  # origin comments name the source line
    assert [p.name for p in artifact.params] == ["A", "B"]
    with pytest.raises(AttributeError, match="no TVM IRModule"):
        _ = artifact.device_mod


def test_lowered_kernel_still_runs(dev):
    # the artifact's kernel is the compiled kernel: lowering did not launch it, calling it does
    artifact = tilelang.lower(_scale(100, 32))
    a = torch.randn(100, device=dev)
    b = torch.full((100,), float("nan"), device=dev)
    artifact.kernel(a, b)
    assert_close(b, a.double() * 3.0, 1e-6, 1e-6)


def test_lower_reports_the_users_line():
    @T.prim_func
    def bad(A: T.Tensor((8,), "float16"), B: T.Tensor((8,), "float16")):
        with T.Kernel(1, threads=32):
            S0 = T.alloc_shared((8,), "float16")
            S1 = T.alloc_shared((8,), "float16")
            T.copy(A, S0)
            T.async_copy(S0, S1)  # shared -> shared: no cp.async; TileLang's ICHECK, an InternalError
            T.copy(S1, B)

    with pytest.raises(tilelang.tvm.error.InternalError, match="global->shared") as info:
        tilelang.lower(bad)
    assert "test_lower_api.py" in str(info.value)
