"""Where a kernel runs (runtime/target.py) and how argument errors describe a wrong value
(runtime/validate.py): ``target=`` values, the CUDA-less fallback, the launch device, devices
that do not mix, and values described by type and shape, never by their contents."""

import numpy as np
import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import KernelCallError
from tile2triton.runtime import target as target_mod
from tile2triton.runtime.launcher import generate_launcher
from tile2triton.runtime.validate import describe, one_device

pytestmark = pytest.mark.poison_empty  # outputs the runtime allocates start as NaN

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="the fallback is for machines without CUDA")


def _scale_factory(target):
    @tilelang.jit(out_idx=[-1], target=target)
    def scale(M, N, block=32):
        @T.prim_func
        def main(A: T.Tensor((M, N), T.float32), s: T.float32, B: T.Tensor((M, N), T.float32)):
            with T.Kernel(T.ceildiv(N, block), M, threads=32) as (bx, by):
                for j in T.Parallel(block):
                    B[by, bx * block + j] = A[by, bx * block + j] * s + 1.0

        return main

    return scale


def _eager_factory(target):
    @tilelang.jit(target=target)
    def shift(A):
        N = T.const("N")
        A: T.Tensor((N,), T.float32)
        B = T.empty((N,), T.float32)
        with T.Kernel(T.ceildiv(N, 32), threads=32) as bx:
            for i in T.Parallel(32):
                B[bx * 32 + i] = A[bx * 32 + i] - 2.0
        return B

    return shift


def _expected(a, s):
    return (a.double() * s + 1.0).float()


# ---------------------------------------------------------------------------- target=


@no_cuda
def test_cuda_target_without_cuda_warns_once_and_runs_on_the_interpreter(monkeypatch, capsys):
    monkeypatch.setattr(target_mod, "_warned_fallback", False)
    a = torch.randn(5, 70)
    out = _scale_factory("cuda")(5, 70)(a, 1.5)
    assert_close(out, _expected(a, 1.5), rtol=1e-6, atol=1e-6)
    b = torch.randn(45)
    assert_close(_eager_factory("cuda -arch=sm_90")(b), (b.double() - 2.0).float(), rtol=1e-6, atol=1e-6)
    err = capsys.readouterr().err
    assert err.count("warning") == 1, err
    assert "target 'cuda' asks for CUDA, but this machine has no CUDA device" in err
    assert "Triton's interpreter" in err


@pytest.mark.parametrize("target", [None, "auto", "cpu", {"kind": "cpu"}])
def test_targets_that_run_here(target):
    a = torch.randn(3, 33)
    out = _scale_factory(target)(3, 33)(a, -0.5)
    assert_close(out, _expected(a, -0.5), rtol=1e-6, atol=1e-6)


def test_target_object_with_a_kind_name():
    class Kind:
        name = "cuda"

    class Target:
        kind = Kind()

    assert target_mod.target_kind(Target()) == "cuda"
    assert target_mod.target_kind("cuda -arch=sm_90") == "cuda"
    assert target_mod.target_kind("auto") is None


@pytest.mark.parametrize("target", ["webgpu", "metal", "vulkan", "tpu"])
def test_targets_tile2triton_cannot_honour_are_errors(target):
    with pytest.raises(ValueError, match=rf"unknown target '{target}': tile2triton runs on 'cuda'"):
        _scale_factory(target)
    with pytest.raises(ValueError, match=rf"unknown target '{target}'"):
        _eager_factory(target)


def test_compile_takes_a_target():
    @T.prim_func
    def main(A: T.Tensor((40,), T.float32), B: T.Tensor((40,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(40):
                B[i] = A[i] * 3.0

    with pytest.raises(ValueError, match=r"unknown target 'metal'"):
        tilelang.compile(main, out_idx=[-1], target="metal")
    kernel = tilelang.compile(main, out_idx=[-1], target="cpu")
    a = torch.randn(40)
    assert_close(kernel(a), (a.double() * 3.0).float(), rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------------------- devices


def test_tensors_on_two_devices_name_both_parameters():
    devices = [("A", torch.device("cuda", 0)), ("B", torch.device("cuda", 0)), ("C", torch.device("cuda", 1))]
    with pytest.raises(KernelCallError, match=r"k: parameter 'C' is on cuda:1, but 'A' is on cuda:0; all tensors "
                                              r"must be on one device"):  # fmt: skip
        one_device("k", devices)
    assert one_device("k", devices[:2]) == torch.device("cuda", 0)
    assert one_device("k", []) is None


def test_meta_tensor_is_named():
    kernel = _scale_factory(None)(2, 40)
    with pytest.raises(KernelCallError, match=r"parameter 'A' is on meta; tile2triton runs on cuda tensors"):
        kernel(torch.randn(2, 40, device="meta"), 1.0)


def test_launch_device_guard(monkeypatch):
    """Triton launches on the current device: a no-op when the tensors' device is current, else a
    context that makes it current (torch.cuda.device, not entered here: no GPU needed)."""
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    assert target_mod.cuda_device_guard(0) is target_mod.NULL_CONTEXT
    guard = target_mod.cuda_device_guard(1)
    assert isinstance(guard, torch.cuda.device) and guard.idx == 1


def test_generated_gpu_launcher_enters_the_tensors_device():
    """The fast path for CUDA tensors checks the current device and switches when it differs
    (generated here from the GPU lowering; running it needs a GPU: tests/test_multi_gpu.py)."""
    kernel = _scale_factory(None)(4, 50)
    lowered = kernel._compile(False)  # noqa: SLF001 - the GPU lowering, loaded but not launched
    lowered.warm = True
    launch = generate_launcher(kernel._plan, {False: lowered}, kernel._call)  # noqa: SLF001
    assert "dev = a0.get_device()" in launch.source
    lines = [line.strip() for line in launch.source.splitlines()]
    current, other = lines.index("if dev == current_device():"), lines.index("with device_guard(dev):")
    launches = [i for i, line in enumerate(lines) if line.startswith("direct")]
    assert [i > current for i in launches] == [True, True] and current < launches[0] < other < launches[1]


# ---------------------------------------------------------------------------- describing values


def test_numpy_array_is_described_by_type_and_shape():
    kernel = _scale_factory(None)(6, 40)
    arr = np.random.rand(6, 40).astype(np.float32)
    with pytest.raises(KernelCallError) as info:
        kernel(arr, 1.0)
    msg = str(info.value)
    assert msg.endswith(
        "parameter 'A' expects a torch.Tensor T.Tensor((6, 40), float32), got a numpy.ndarray of shape (6, 40) "
        "and dtype float32 (convert it with torch.from_numpy(...))"
    ), msg
    assert len(msg) < 300 and repr(float(arr[0, 0]))[:6] not in msg


def test_numpy_array_to_an_eager_kernel():
    arr = np.random.rand(1000).astype(np.float32)
    with pytest.raises(KernelCallError) as info:
        _eager_factory(None)(arr)
    msg = str(info.value)
    assert "got a numpy.ndarray of shape (1000,) and dtype float32" in msg, msg
    assert len(msg) < 300


def test_scalar_parameter_given_an_array():
    kernel = _scale_factory(None)(6, 40)
    with pytest.raises(KernelCallError, match=r"parameter 's' expects a float32 scalar, got a numpy.ndarray of "
                                              r"shape \(3,\) and dtype float64"):  # fmt: skip
        kernel(torch.randn(6, 40), np.ones(3))


@pytest.mark.parametrize(
    "value, text",
    [
        (5, "int 5"),
        (2.5, "float 2.5"),
        (None, "NoneType None"),
        ("x", "str 'x'"),
        ("y" * 500, "str of length 500"),
        (list(range(1000)), "list of length 1000"),
        ({"a": 1}, "dict of length 1"),
        (torch.zeros(3, 4, dtype=torch.int8), "a torch.Tensor of shape (3, 4) and dtype torch.int8"),
        (torch.zeros(2, device="meta"), "a torch.Tensor of shape (2,) and dtype torch.float32 on meta"),
        (object(), "a value of type object"),
    ],
)
def test_describe(value, text):
    assert describe(value) == text
