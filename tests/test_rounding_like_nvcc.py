"""float32 arithmetic rounded as TileLang's CUDA (nvcc's defaults) rounds it: ``/`` and ``T.sqrt``
correctly rounded (``tl.math.div_rn`` / ``tl.sqrt_rn``; Triton's own are the approximate
``div.full.f32`` / ``sqrt.approx.f32``), the approximate forms under ``TL_ENABLE_FAST_MATH``, and
``-x`` of +0.0 is -0.0 (Triton 3.6 lowers ``-x`` to ``0 - x``)."""

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


@tilelang.jit(out_idx=[-1])
def quotients(n, block, fast=False):
    configs = {tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: fast}

    @T.prim_func
    def main(X: T.Tensor((n,), T.float32), Y: T.Tensor((n,), T.float32), Q: T.Tensor((4, n), T.float32)):
        T.annotate_pass_configs(configs)
        with T.Kernel(T.ceildiv(n, block), threads=64) as bx:
            for i in T.Parallel(block):
                k = bx * block + i
                if k < n:
                    Q[0, k] = X[k] / Y[k]
                    Q[1, k] = X[k] / 448.0
                    Q[2, k] = T.sqrt(T.abs(X[k]))
                    Q[3, k] = -X[k]

    return main


def test_division_and_sqrt_round_correctly(dev):
    """Each result is the float64 value rounded once to float32 (exact for / and sqrt of float32
    operands), bit for bit; on the GPU, Triton's approximate forms miss some of these."""
    n = 3001
    g = torch.Generator().manual_seed(3)
    x = torch.randn(n, generator=g) * torch.pow(10.0, torch.randint(-3, 4, (n,), generator=g))
    y = torch.randn(n, generator=g) * torch.pow(10.0, torch.randint(-3, 4, (n,), generator=g))
    x[:4] = torch.tensor([0.0, -0.0, 1.0, -3.0])
    q = quotients(n, 128)(x.to(dev), y.to(dev)).cpu()
    want = [
        (x.double() / y.double()).float(),
        (x.double() / 448.0).float(),
        x.double().abs().sqrt().float(),
        -x,
    ]
    for row, expected in enumerate(want):
        bad = (q[row].view(torch.int32) != expected.view(torch.int32)).nonzero().flatten()
        assert bad.numel() == 0, f"row {row}: {bad.numel()} of {n} differ, e.g. {q[row, bad[:3]]} vs {expected[bad[:3]]}"
    assert torch.signbit(q[3, 0]) and not torch.signbit(q[3, 1])  # -(+0) is -0, -(-0) is +0


@pytest.mark.parametrize("fast", [False, True])
def test_fast_math_keeps_the_approximate_forms(fast):
    source = quotients.compile(n=3001, block=128, fast=fast).lowered_for("sm_90").source
    body = source[source.index("def main_kernel") :]
    assert ("tl.math.div_rn(" in body) == (not fast) and ("tl.sqrt_rn(" in body) == (not fast)
    assert ("tl.sqrt(" in body) == fast
    assert "* -1.0" in body  # the negation, either way
