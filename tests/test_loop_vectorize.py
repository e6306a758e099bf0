"""Sequential loops without carried dependences become tile axes (DESIGN.md's worked examples).
Both paths are tested: the rewrite and the exact scalar-loop fallback it replaces."""

import importlib

import pytest
import torch

import examples.gemv as seed_gemv


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
