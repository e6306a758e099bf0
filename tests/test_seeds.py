"""The block-view seed kernels of seed 001 (examples/*.py, copied as written there), run at
sizes that are not multiples of their tiles; and the generated source of the seed matmul."""

import re

import pytest
import torch
from t2t_util import assert_close, load_example

pytestmark = pytest.mark.poison_empty

EXAMPLES = ["elementwise", "conditional_elementwise", "reduction", "layer_norm", "matmul", "gemv"]


def test_elementwise(dev):
    ex = load_example("elementwise")
    M, N = 150, 200
    k = ex.elementwise_op(M, N, 32, 64, 128)
    a = torch.randn(M, N, device=dev)
    b = torch.randn(M, N, device=dev)
    c = k(a, b)
    assert_close(c, a.double() + b.double(), 1e-6, 1e-6)


def test_conditional_elementwise(dev):
    ex = load_example("conditional_elementwise")
    N = 300
    k = ex.conditional_elementwise(N, 128)
    a = torch.randn(N, device=dev)
    b = torch.randn(N, device=dev)
    c = k(a, b)
    ad, bd = a.double(), b.double()
    assert_close(c, torch.where(ad > 0, ad + bd, ad - bd), 1e-6, 1e-6)


def test_reduction(dev):
    ex = load_example("reduction")
    M, N = 50, 300
    k = ex.reduction_op(M, N, 128)
    a = torch.randn(M, N, device=dev)
    c = k(a)
    assert_close(c, a.double().sum(1), 1e-4, 1e-5)


def test_layer_norm(dev):
    ex = load_example("layer_norm")
    M, N = 40, 200
    k = ex.layer_norm(M, N, 128)
    x = torch.randn(M, N, device=dev) * 2.0 + 0.5
    y = k(x)
    assert_close(y, ex.reference(x), 1e-4, 1e-4)


def test_matmul(dev):
    ex = load_example("matmul")
    M, N, K = 200, 136, 120
    k = ex.matmul(M, N, K, 64, 64, 32)
    a = torch.randn(M, K, device=dev).half()
    b = torch.randn(K, N, device=dev).half()
    c = k(a, b)
    assert c.dtype == torch.float16 and c.shape == (M, N)
    assert_close(c, a.double() @ b.double(), 1e-2, 1e-2)


def test_gemv(dev):
    ex = load_example("gemv")
    N, K = 150, 200
    k = ex.gemv(N, K, 32, 64)
    a = torch.randn(K, device=dev).half()
    b = torch.randn(N, K, device=dev).half()
    c = k(a, b)
    assert c.dtype == torch.float16 and c.shape == (N,)
    assert_close(c, b.double() @ a.double(), 1e-2, 1e-2)


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_main_runs(name, capsys):
    ex = load_example(name)
    ex.main()
    out = capsys.readouterr().out
    assert re.search(r"^ok\b", out, re.M), out[-2000:]


def test_matmul_generated_source():
    ex = load_example("matmul")
    k = ex.matmul(200, 136, 120, 64, 64, 32)
    src = k.get_kernel_source()
    # the K loop is a tl.range(..., num_stages=3) and tl.dot sits inside it
    m = re.search(r"for\s+\w+\s+in\s+tl\.range\(([^\n]*)\)\s*:", src)
    assert m, "no `for ... in tl.range(...)` loop in:\n" + src
    assert re.search(r"num_stages\s*=\s*3\b", m.group(1)), m.group(0)
    loop_indent = len(src[: m.start()].rsplit("\n", 1)[-1])
    body = []
    for line in src[m.end() :].split("\n")[1:]:
        if line.strip() and len(line) - len(line.lstrip()) <= loop_indent:
            break
        body.append(line)
    assert "tl.dot(" in "\n".join(body), "tl.dot is not inside the tl.range loop:\n" + src
    # launches with num_warps = threads / 32 = 4
    assert k.num_warps == 4
