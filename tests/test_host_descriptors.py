"""Host-made tensor descriptors encoded once per tensor (runtime/host_descriptors.py,
``EncodedDescriptors``; ``TILE2TRITON_HOST_DESCRIPTOR_CACHE``), checked on the CPU: a stand-in
driver (benchmarks/launch_cost.py's ``FakeDriver``) lets Triton compile for sm_90, and a stand-in
``CudaLauncher`` built as Triton's (its C launch wrapped by Triton's own ``wrap_handle_tensordesc``,
which expands each ``TensorDescriptor`` through ``make_tensordesc_arg``) records what reaches the
C launch.  The cached path must pass the C launch exactly what Triton's wrapper passes, encode a
tensor once, and encode again whenever anything a tensormap holds differs."""

import importlib.util
import pathlib

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.runtime.host_descriptors import EncodedDescriptors
from tile2triton.runtime.kernel import JITKernel

nvidia_driver = pytest.importorskip("triton.backends.nvidia.driver")

ROOT = pathlib.Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("launch_cost_bench", ROOT / "benchmarks" / "launch_cost.py")
launch_cost = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(launch_cost)

LAUNCHES: list = []  # what reached the C launch: its kernel arguments
ENCODED: list = []  # one entry per tensormap encoded


def _fill_tiled(ptr, swizzle, elem_size, elem_type, block, shape, strides, padding):
    """cuTensorMapEncodeTiled's stand-in: a value holding every input, so equal maps compare equal."""
    ENCODED.append(ptr)
    return ("tensormap", ptr, swizzle, elem_size, elem_type, tuple(block), tuple(shape), tuple(strides), padding)


def _c_launch(*args):
    """The C launch: its last argument is the kernel's (Triton 3.9), or all after the 13 fixed ones (3.6)."""
    LAUNCHES.append(tuple(args[-1]) if isinstance(args[-1], (tuple, list)) else tuple(args[13:]))


class _Launcher:
    """A CudaLauncher as Triton builds one: ``launch`` is its C launch wrapped for descriptors."""

    def __init__(self, src, metadata):
        signature = dict(src.signature.items())
        self.launch = nvidia_driver.wrap_handle_tensordesc(_c_launch, signature, getattr(metadata, "tensordesc_meta", None))  # fmt: skip

    def __call__(self, gx, gy, gz, stream, function, packed, launch_metadata, enter, leave, *args):
        self.launch(gx, gy, gz, stream, function, 0, 0, packed, launch_metadata, enter, leave, None, None, None, None, args)  # fmt: skip


@pytest.fixture
def driver(monkeypatch):
    LAUNCHES.clear()
    ENCODED.clear()
    with launch_cost.fake_driver() as drv:
        drv.launcher_cls = _Launcher
        monkeypatch.setattr(drv.utils, "fill_tma_descriptor_tiled", _fill_tiled, raising=False)
        monkeypatch.setattr(drv.utils, "fill_tma_descriptor", _fill_tiled, raising=False)  # Triton 3.6's name
        yield drv


@tilelang.jit(out_idx=[-1])
def row_sums(M, N, block=16):
    @T.prim_func
    def main(A: T.Tensor((M, N), T.float16), W: T.Tensor((M, N), T.float16), B: T.Tensor((block, N), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((block, N), T.float16)
            R = T.alloc_shared((block, N), T.float16)
            acc = T.alloc_fragment((block, N), T.float32)
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(M, block), num_stages=2):
                T.copy(A[k * block, 0], S)
                T.copy(W[k * block, 0], R)
                for i, j in T.Parallel(block, N):
                    acc[i, j] += S[i, j] * R[i, j]
            T.copy(acc, B[bx * block, 0])

    return main


def _direct(monkeypatch, cache: str):
    monkeypatch.setenv("TILE2TRITON_TENSOR_DESCRIPTORS", "1")
    monkeypatch.setenv("TILE2TRITON_HOST_DESCRIPTORS", "1")
    monkeypatch.setenv("TILE2TRITON_TMA_MIN_TRIPS", "0")
    monkeypatch.setenv("TILE2TRITON_HOST_DESCRIPTOR_CACHE", cache)
    lowered = JITKernel(row_sums(80, 32).prim_func)._compile(False)  # a fresh kernel under these settings
    d = lowered.direct[0]
    assert d is not None and d.descriptors == ((0, (16, 32)), (1, (16, 32)))
    return d


def _tensors(n=3):
    return [torch.randn(80, 32).half() for _ in range(n)]


def test_cached_launch_passes_what_tritons_wrapper_passes(driver, monkeypatch):
    d = _direct(monkeypatch, "0")
    a, w, b = _tensors()
    key = (0, True, True, True)
    for _ in range(2):  # a miss (JITFunction.run), then a hit: TensorDescriptor objects expanded by Triton
        d((1, 1, 1), key, (a, w, b))
    assert not d.encoded
    by_triton = LAUNCHES[-1]
    assert by_triton[:3] == (a, w, b) and by_triton[3][0] == "tensormap"
    d = _direct(monkeypatch, "1")
    for _ in range(3):
        d((1, 1, 1), key, (a, w, b))
    assert isinstance(d.encoded[key], EncodedDescriptors)
    assert LAUNCHES[-1] == by_triton and LAUNCHES[-2] == by_triton
    # the first launch (JITFunction.run) and the first hit encode; later hits reuse the maps
    assert ENCODED[-2:] == [a.data_ptr(), w.data_ptr()] and len(ENCODED) == 2 * 2 + 2 * 2


def test_each_tensor_gets_its_own_maps(driver, monkeypatch):
    """Another tensor, the same tensors swapped, a strided view: new maps, equal to Triton's."""
    d = _direct(monkeypatch, "1")
    a, w, b = _tensors()
    key = (0, True, True, True)
    d((1, 1, 1), key, (a, w, b))
    wide = torch.randn(80, 64).half()
    calls = [(a, w, b), (w, a, b), (wide[:, :32], w, b), (a, w, b)]
    for args in calls:
        d((1, 1, 1), key, args)
    got = LAUNCHES[-len(calls) :]
    # what Triton's own expansion gives for the same calls
    plain = _direct(monkeypatch, "0")
    for args in calls:
        plain((1, 1, 1), key, args)
    assert got == LAUNCHES[-len(calls) :]
    view = got[2][3]
    assert view[1] == wide.data_ptr() and view[6:8] == ((80, 32), (64, 1))  # address, shape, row stride
    assert got[2][3] != got[0][3]  # the view's map differs from a's (address and row stride)
    assert len(d.encoded[key].cache) == 3  # (a, w), (w, a), (view, w); the last call reused (a, w)


def test_the_cache_is_bounded(driver, monkeypatch):
    d = _direct(monkeypatch, "1")
    key = (0, True, True, True)
    b = torch.empty(16, 32)
    tensors = [torch.randn(80, 32).half() for _ in range(EncodedDescriptors.LIMIT + 6)]
    for t in tensors:
        d((1, 1, 1), key, (t, t, b))
        assert LAUNCHES[-1][3][1] == t.data_ptr()
    assert 0 < len(d.encoded[key].cache) <= EncodedDescriptors.LIMIT


def test_a_launcher_of_another_make_keeps_descriptor_objects(monkeypatch):
    """A CompiledKernel whose launcher is not Triton's wrapped C launch: no cached path."""
    from types import SimpleNamespace

    kernel = SimpleNamespace(run=launch_cost._NoLaunch(None, None), metadata=SimpleNamespace(tensordesc_meta=[{}]))
    assert EncodedDescriptors.of(kernel, ((0, (16, 32)),)) is None


@pytest.mark.parametrize("host, made", [("1", ["A_desc", "W_desc"]), ("0", [])])
def test_short_loops_keep_host_made_descriptors(monkeypatch, host, made):
    """TILE2TRITON_TMA_MIN_TRIPS sends copies in short loops through pointers because a descriptor
    built in the kernel costs every program a tensormap write and fence; a host-made one costs the
    program nothing, so a 5-iteration loop under a minimum of 17 keeps its host descriptors."""
    monkeypatch.setenv("TILE2TRITON_HOST_DESCRIPTORS", host)
    monkeypatch.setenv("TILE2TRITON_TMA_MIN_TRIPS", "17")
    module = JITKernel(row_sums(80, 32).prim_func).lowered_for("sm_90")
    assert [name for name, _, _ in module.launches[0].host_descriptors] == made
    assert "make_tensor_descriptor" not in module.source  # in-kernel descriptors stay behind the minimum
