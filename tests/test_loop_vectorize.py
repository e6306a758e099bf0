"""Sequential loops without carried dependences become tile axes (DESIGN.md's worked examples).
Both paths are tested: the rewrite and the exact scalar-loop fallback it replaces."""

import importlib

import pytest
import torch
from t2t_util import assert_close

import examples.gemv as seed_gemv
import tile2triton as tilelang
import tile2triton.language as T


@pytest.fixture(params=["vectorized", "scalar loops"])
def gemv_factory(request, monkeypatch):
    if request.param == "scalar loops":
        monkeypatch.setenv("TILE2TRITON_VECTORIZE_LOOPS", "0")
    module = importlib.reload(seed_gemv)  # a fresh factory: its kernels are cached per argument set
    return request.param, module.gemv


def test_seed_gemv_both_lowerings(dev, gemv_factory):
    mode, gemv = gemv_factory
    N, K = 150, 200
    kernel = gemv(N, K, 32, 64)
    a = torch.randn(K, device=dev).half()
    b = torch.randn(N, K, device=dev).half()
    out = kernel(a, b)
    torch.testing.assert_close(out.cpu().double(), (b.double() @ a.double()).cpu(), rtol=1e-2, atol=1e-2)
    src = kernel.get_kernel_source(interpret=False)
    code = "\n".join(line for line in src.splitlines() if not line.strip().startswith("#"))
    if mode == "vectorized":
        # one masked (BLOCK_K,) and one (BLOCK_N, BLOCK_K) load per K step, and the accumulation as a sum
        assert "for tk" not in code and "tk = tl.arange(0, 64)[:, None]" in code
        assert "C_reg = C_reg + tl.sum(" in code
    else:
        assert "for tk in range(64)" in code


@tilelang.jit(out_idx=[-1])
def overlapping_row_writes(n):
    # iteration t writes A[t - 2 .. t + 1]: iterations overlap, so the last writer of each element
    # must be the latest t (the loop stays a loop); negative lanes of a T.Ramp index wrap to the
    # end of the axis, as TileLang's LegalizeNegativeIndex makes them
    @T.prim_func
    def main(B: T.Tensor((5, 4), "float32"), A: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(n):
                A[i] = -1.0
            for t in T.serial(5):
                A[T.Ramp(t - 2, 1, 4)] = B[t, T.Ramp(0, 1, 4)]

    return main


def test_serial_loop_keeps_the_last_writer(dev):
    n = 37
    b = torch.randn(5, 4, device=dev)
    a = overlapping_row_writes(n)(b)
    want = torch.full((n,), -1.0, dtype=torch.float64)
    for t in range(5):
        for k in range(4):
            want[(t - 2 + k) % n] = b[t, k].double()
    assert_close(a, want.to(a.device), 0, 0)


@tilelang.jit(out_idx=[-1])
def ramp_gather_wraps(n):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((4, 4), "float32")):
        with T.Kernel(1, threads=1):
            for t in T.serial(4):
                B[t, T.Ramp(0, 1, 4)] = A[T.Ramp(t - 2, 1, 4)]

    return main


def test_ramp_index_lanes_below_zero_count_from_the_end(dev):
    n = 29
    a = torch.randn(n, device=dev)
    b = ramp_gather_wraps(n)(a)
    idx = torch.tensor([[(t - 2 + k) % n for k in range(4)] for t in range(4)])
    assert_close(b, a.double().cpu()[idx].to(b.device), 0, 0)
