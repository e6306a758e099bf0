"""Call-time validation: every bad call gets one KernelCallError that names the parameter,
what was expected and what was given (never a traceback from inside Triton)."""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import KernelCallError


@tilelang.jit(out_idx=[-1])
def axpy(M=6, block=32):
    N = T.dynamic("N")

    @T.prim_func
    def main(X: T.Tensor((M, N), T.float16), Y: T.Tensor((M, N), T.float16), a: T.float32, n: T.int32,
             Z: T.Tensor((M, N), T.float16)):  # fmt: skip
        with T.Kernel(T.ceildiv(N, block), M, threads=32) as (bx, by):
            for j in T.Parallel(block):
                Z[by, bx * block + j] = X[by, bx * block + j] * a + Y[by, bx * block + j] + n

    return main


def _xy(n=40, dtype=torch.float16, device="cpu"):
    return torch.randn(6, n, dtype=dtype, device=device), torch.randn(6, n, dtype=dtype, device=device)


def test_good_call_runs(dev):
    x, y = _xy(device=dev)
    z = axpy()(x, y, 2.0, 3)
    assert_close(z, x.double() * 2 + y.double() + 3, 2e-2, 2e-2)


def test_wrong_argument_count():
    x, y = _xy()
    with pytest.raises(KernelCallError, match=r"main expects 4 argument\(s\) \(X, Y, a, n\), got 3"):
        axpy()(x, y, 2.0)


def test_wrong_dtype():
    x, y = _xy()
    with pytest.raises(KernelCallError, match=r"main: parameter 'Y' expects dtype torch.float16, got torch.float32"):
        axpy()(x, y.float(), 2.0, 1)


def test_wrong_rank():
    x, _ = _xy()
    with pytest.raises(KernelCallError, match=r"parameter 'Y' expects a 2-D tensor of shape \(6, N\), "
                                              r"got a 1-D tensor of shape \(40,\)"):  # fmt: skip
        axpy()(x, torch.randn(40, dtype=torch.float16), 2.0, 1)


def test_shape_contradicts_declaration():
    _, y = _xy()
    with pytest.raises(
        KernelCallError, match=r"parameter 'X' expects shape \(6, N\), got \(5, 40\) \(dim 0 should be 6\)"
    ):
        axpy()(torch.randn(5, 40, dtype=torch.float16), y, 2.0, 1)


def test_shape_contradicts_another_argument():
    x, _ = _xy()
    with pytest.raises(KernelCallError, match=r"parameter 'Y' has shape \(6, 41\): dim 1 gives N=41, "
                                              r"but 'X' dim 1 gave N=40"):  # fmt: skip
        axpy()(x, torch.randn(6, 41, dtype=torch.float16), 2.0, 1)


def test_not_a_tensor():
    _, y = _xy()
    with pytest.raises(KernelCallError, match=r"parameter 'X' expects a torch.Tensor T.Tensor\(\(6, N\), float16\), "
                                              r"got list of length 2$"):  # fmt: skip
        axpy()([1, 2], y, 2.0, 1)


def test_non_contiguous_is_rejected_with_a_fix():
    x, y = _xy(n=6)
    with pytest.raises(KernelCallError, match=r"parameter 'X' must be contiguous \(row-major strides \(6, 1\)\), "
                                              r"got strides \(1, 6\); pass .contiguous\(\), or declare it with "
                                              r"T.StridedTensor"):  # fmt: skip
        axpy()(x.t(), y, 2.0, 1)
    with pytest.raises(KernelCallError, match=r"parameter 'Y' must be contiguous .* got strides \(0, 1\)"):
        axpy()(x, torch.randn(6, dtype=torch.float16).expand(6, 6), 2.0, 1)


def test_sliced_contiguous_view_is_accepted(dev):
    base = torch.randn(10, 40, dtype=torch.float16, device=dev)
    x = base[2:8]  # contiguous, with a storage offset
    y = torch.randn(6, 40, dtype=torch.float16, device=dev)
    z = axpy()(x, y, 1.0, 0)
    assert_close(z, x.double() + y.double(), 2e-2, 2e-2)


def test_scalar_errors():
    x, y = _xy()
    with pytest.raises(KernelCallError, match=r"parameter 'n' expects a int32 scalar, got float 1.5"):
        axpy()(x, y, 2.0, 1.5)
    with pytest.raises(
        KernelCallError, match=r"parameter 'a' expects a float32 scalar, got a torch.Tensor of shape \(\)"
    ):
        axpy()(x, y, torch.tensor(2.0), 1)
    with pytest.raises(KernelCallError, match=r"parameter 'n' expects a int32 scalar, got 4294967296 \(out of range\)"):
        axpy()(x, y, 2.0, 2**32)


def test_unsupported_device():
    x, y = _xy()
    with pytest.raises(KernelCallError, match=r"parameter 'Y' is on meta; tile2triton runs on cuda tensors"):
        axpy()(x, y.to("meta"), 2.0, 1)


@pytest.mark.gpu
def test_tensors_on_different_devices():
    x, y = _xy()
    with pytest.raises(
        KernelCallError, match=r"parameter 'Y' is on cuda:0, but 'X' is on cpu; all tensors must be on one device"
    ):
        axpy()(x, y.cuda(), 2.0, 1)


@tilelang.jit(target="cuda")
def cuda_only(A):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    B = T.empty((N,), T.float32)
    with T.Kernel(T.ceildiv(N, 32), threads=32) as bx:
        for i in T.Parallel(32):
            B[bx * 32 + i] = A[bx * 32 + i]
    return B


@tilelang.jit(target="cpu")
def cpu_only(A):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    B = T.empty((N,), T.float32)
    with T.Kernel(T.ceildiv(N, 32), threads=32) as bx:
        for i in T.Parallel(32):
            B[bx * 32 + i] = A[bx * 32 + i]
    return B


@pytest.mark.gpu  # without CUDA, target='cuda' falls back to the interpreter (tests/test_targets.py)
def test_cpu_tensor_for_a_cuda_target():
    with pytest.raises(KernelCallError, match=r"compiled for target 'cuda', but parameter 'A' is on cpu; "
                                              r"move the tensors to the GPU"):  # fmt: skip
        cuda_only(torch.randn(8))


@pytest.mark.gpu
def test_cuda_tensor_for_a_cpu_target():
    with pytest.raises(KernelCallError, match=r"compiled for target 'cpu', but parameter 'A' is on cuda:0"):
        cpu_only(torch.randn(8, device="cuda"))


def test_cpu_target_runs_on_the_interpreter():
    a = torch.randn(40)
    assert torch.equal(cpu_only(a), a)


def test_unknown_target():
    with pytest.raises(ValueError, match=r"unknown target 'tpu'"):

        @tilelang.jit(target="tpu")
        def f(A):
            N = T.const("N")
            A: T.Tensor((N,), T.float32)
            with T.Kernel(1) as bx:
                A[0] = 1.0

        f.compile(N=4)


@tilelang.jit(out_idx=[-1])
def needs_size():
    N = T.dynamic("N")

    @T.prim_func
    def main(B: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, 32), threads=32) as bx:
            for i in T.Parallel(32):
                B[bx * 32 + i] = 1.0

    return main


def test_dynamic_size_that_no_input_gives():
    with pytest.raises(KernelCallError, match=r"size 'N' is not given by any input tensor's shape"):
        needs_size()()


def test_errors_leave_the_kernel_usable(dev):
    k = axpy()
    x, y = _xy(device=dev)
    with pytest.raises(KernelCallError):
        k(x, y.float(), 2.0, 1)
    assert_close(k(x, y, 1.0, 0), x.double() + y.double(), 2e-2, 2e-2)
