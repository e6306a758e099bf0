"""tile2triton.register_op: eager, torch.compile(fullgraph=True), opcheck, autograd, decorator form."""

import itertools

import pytest
import torch

import tile2triton
import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.torch_ops import RegisterOpError

_ids = itertools.count()


def _name(base):
    return f"t2t_test::{base}_{next(_ids)}"


def _op(name):
    ns, n = name.split("::")
    return getattr(getattr(torch.ops, ns), n)


N = T.dynamic("N")


@tilelang.jit(out_idx=[-1])
def axpy(alpha=2.0, block=32):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32"), Z: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            for i in T.Parallel(block):
                Z[bx * block + i] = X[bx * block + i] * alpha + Y[bx * block + i]

    return main


@tilelang.jit(out_idx=[2, 3])
def sum_diff(M, N_, dtype="float16"):
    @T.prim_func
    def main(
        A: T.Tensor((M, N_), dtype),
        B: T.Tensor((M, N_), dtype),
        S: T.Tensor((M, N_), "float32"),
        D: T.Tensor((M, N_), dtype),
    ):
        with T.Kernel(T.ceildiv(M, 16), threads=64) as bx:
            for i, j in T.Parallel(16, N_):
                S[bx * 16 + i, j] = A[bx * 16 + i, j].astype("float32") + B[bx * 16 + i, j].astype("float32")
                D[bx * 16 + i, j] = A[bx * 16 + i, j] - B[bx * 16 + i, j]

    return main


@tilelang.jit(out_idx=[-1])
def scaled(M):
    @T.prim_func
    def main(A: T.Tensor((M,), "float32"), s: T.float32, B: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, 32), threads=32) as bx:
            for i in T.Parallel(32):
                B[bx * 32 + i] = A[bx * 32 + i] * s

    return main


@pytest.fixture(scope="module")
def axpy_op():
    name = _name("axpy")

    def backward(ctx, grad):
        return grad * 2.0, grad

    tile2triton.register_op(name, axpy(), backward=backward)
    return _op(name)


def test_schema(axpy_op):
    assert str(axpy_op.default._schema).endswith("(Tensor X, Tensor Y) -> Tensor")


def test_eager(axpy_op, dev):
    x, y = torch.randn(45, device=dev), torch.randn(45, device=dev)
    torch.testing.assert_close(axpy_op(x, y), 2 * x + y)


def test_eager_noncontiguous_input(axpy_op):
    x = torch.randn(45, 2)[:, 0]
    y = torch.randn(45)
    torch.testing.assert_close(axpy_op(x, y), 2 * x + y)


def test_torch_compile_fullgraph(axpy_op, dev):
    x, y = torch.randn(45, device=dev), torch.randn(45, device=dev)

    @torch.compile(fullgraph=True)
    def f(a, b):
        return torch.relu(axpy_op(a * 3, b)) + 1

    torch.testing.assert_close(f(x, y), torch.relu(2 * (x * 3) + y) + 1)


def test_opcheck(axpy_op, dev):
    x, y = torch.randn(45, device=dev), torch.randn(45, device=dev)
    torch.library.opcheck(axpy_op.default, (x, y))
    xg, yg = torch.randn(33, device=dev, requires_grad=True), torch.randn(33, device=dev, requires_grad=True)
    torch.library.opcheck(axpy_op.default, (xg, yg))


def test_backward(axpy_op):
    x = torch.randn(40, requires_grad=True)
    y = torch.randn(40, requires_grad=True)
    axpy_op(x, y).sum().backward()
    torch.testing.assert_close(x.grad, torch.full((40,), 2.0))
    torch.testing.assert_close(y.grad, torch.ones(40))


def test_fake_impl_shapes_and_dtypes(dev):
    name = _name("sum_diff")
    tile2triton.register_op(name, sum_diff(20, 24))
    op = _op(name)
    assert str(op.default._schema).endswith("(Tensor A, Tensor B) -> (Tensor, Tensor)")
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a = torch.empty(20, 24, dtype=torch.float16, device=dev)
        s, d = op(a, a)
        assert s.shape == (20, 24) and s.dtype == torch.float32
        assert d.shape == (20, 24) and d.dtype == torch.float16
    a = torch.randn(20, 24, device=dev).half()
    b = torch.randn(20, 24, device=dev).half()
    s, d = op(a, b)
    torch.testing.assert_close(s, a.float() + b.float())
    torch.testing.assert_close(d, a - b)
    torch.library.opcheck(op.default, (a, b), test_utils=("test_schema", "test_faketensor"))


def test_scalar_parameter_in_schema(dev):
    name = _name("scaled")
    tile2triton.register_op(name, scaled(50))
    op = _op(name)
    assert str(op.default._schema).endswith("(Tensor A, float s) -> Tensor")
    a = torch.randn(50, device=dev)
    torch.testing.assert_close(op(a, 1.5), a * 1.5)
    torch.library.opcheck(op.default, (a, 0.5), test_utils=("test_schema", "test_faketensor"))


def test_decorator_form_with_factory_args(dev):
    name = _name("deco")

    @tile2triton.register_op(name, factory_kwargs={"alpha": -1.0})
    @tilelang.jit(out_idx=[-1])
    def neg_axpy(alpha, block=32):
        @T.prim_func
        def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32"), Z: T.Tensor((N,), "float32")):
            with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
                for i in T.Parallel(block):
                    Z[bx * block + i] = X[bx * block + i] * alpha + Y[bx * block + i]

        return main

    x, y = torch.randn(10, device=dev), torch.randn(10, device=dev)
    torch.testing.assert_close(neg_axpy.torch_op(x, y), y - x)  # neg_axpy stays the factory
    torch.testing.assert_close(neg_axpy(alpha=3.0)(x, y), y + 3 * x)
    torch.testing.assert_close(_op(name)(x, y), y - x)


def test_bad_name_and_kernel():
    with pytest.raises(RegisterOpError, match="namespace::name"):
        tile2triton.register_op("no_namespace", axpy())
    with pytest.raises(RegisterOpError, match="compiled kernel"):
        tile2triton.register_op(_name("bad"), lambda x: x)


def test_triton_op_form_with_cpu_tensors():
    """The CUDA registration (triton_op) also serves CPU tensors, eagerly, compiled and in opcheck."""
    name = _name("axpy_tritonop")
    tile2triton.register_op(name, axpy(alpha=3.0), use_triton_op=True)
    op = _op(name)
    x, y = torch.randn(45), torch.randn(45)
    torch.testing.assert_close(op(x, y), 3 * x + y)
    f = torch.compile(lambda a, b: op(a, b) * 2, fullgraph=True)
    torch.testing.assert_close(f(x, y), (3 * x + y) * 2)
    torch.library.opcheck(op.default, (x, y))
