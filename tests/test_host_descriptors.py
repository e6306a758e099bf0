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
    assert d is not None and d.descriptors == ((0, (16, 32), None), (1, (16, 32), None))
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


# ---------------------------------------------------------------- the generated launcher's keys
# Calls through JITKernel with CUDA faked (benchmarks/launch_cost.py's fake_cuda): the generated
# launcher hands DirectLaunch a key of what its checks leave open (launcher._descriptor_parts), so
# a cached tensormap must be found again exactly when Triton's own expansion would give the same.


@tilelang.jit(out_idx=[-1])
def dyn_sums(N, block=16):
    M = T.dynamic("M")

    @T.prim_func
    def main(A: T.Tensor((M, 1, N), T.float16), B: T.Tensor((block, N), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((block, N), T.float16)
            acc = T.alloc_fragment((block, N), T.float32)
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(M, block), num_stages=2):
                T.copy(A[k * block : (k + 1) * block, 0, :], S)
                for i, j in T.Parallel(block, N):
                    acc[i, j] += S[i, j]
            T.copy(acc, B[bx * block, 0])

    return main


@tilelang.jit(out_idx=[-1])
def static_sums(M, N, block=16):
    @T.prim_func
    def main(A: T.Tensor((M, 1, N), T.float16), W: T.Tensor((M, N), T.float16), B: T.Tensor((block, N), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((block, N), T.float16)
            R = T.alloc_shared((block, N), T.float16)
            acc = T.alloc_fragment((block, N), T.float32)
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(M, block), num_stages=2):
                T.copy(A[k * block : (k + 1) * block, 0, :], S)
                T.copy(W[k * block, 0], R)
                for i, j in T.Parallel(block, N):
                    acc[i, j] += S[i, j] * R[i, j]
            T.copy(acc, B[bx * block, 0])

    return main


def _through_launcher(monkeypatch, cache: str, make, calls):
    """Each call's kernel arguments at the C launch, through the generated launcher of a fresh kernel."""
    monkeypatch.setenv("TILE2TRITON_HOST_DESCRIPTORS", "1")
    monkeypatch.setenv("TILE2TRITON_TMA_MIN_TRIPS", "0")
    monkeypatch.setenv("TILE2TRITON_HOST_DESCRIPTOR_CACHE", cache)
    got = []
    with launch_cost.fake_cuda():
        kernel = JITKernel(make().prim_func)
        launch_cost._WrappedLaunch.calls = got
        try:
            for args in calls:
                kernel(*args)
        finally:
            launch_cost._WrappedLaunch.calls = None
        direct = kernel._compile(False).direct[0]
        assert hasattr(kernel._entry, "source") and direct.descriptors, "the generated launcher's GPU branch"
        encoded = list(direct.encoded.values())
    return got, kernel._entry.source, encoded


def _same_launches(cached: list, plain: list, calls: list) -> None:
    """The cached descriptors' launches (tensors passed by address) against the same calls with descriptors
    made per call (tensors passed): the same arguments, an input's address its tensor's, a fresh output's
    an aligned address (the first launch, which compiles, passes the tensors)."""
    assert len(cached) == len(plain) == len(calls)
    for c, p, args in zip(cached, plain, calls):
        assert len(c) == len(p)
        for got, want in zip(c, p):
            if not isinstance(want, torch.Tensor):
                assert got == want
            elif isinstance(got, torch.Tensor):  # the first launch, through JITFunction.run
                assert (got.shape, got.stride(), got.dtype) == (want.shape, want.stride(), want.dtype)
            elif any(want is a for a in args):
                assert got == want.data_ptr()
            else:
                assert isinstance(got, int) and got % 16 == 0


def _maps(launch: tuple) -> list:
    return [a for a in launch if isinstance(a, tuple) and a and a[0] == "tensormap"]


def test_launcher_key_follows_address_and_shape(monkeypatch):
    """T.dynamic M: one address seen with two shapes (views of one storage, as a freed tensor's
    memory reused for another shape would be), another tensor, a size-1 dim with another stride:
    every call gets the maps Triton's expansion gives it; repeats reuse them."""
    base = torch.randn(80 * 32 + 8).half()
    a80 = base[: 80 * 32].view(80, 1, 32)
    a48 = base[: 48 * 32].view(48, 1, 32)  # the same address, fewer rows
    odd = base.as_strided((80, 1, 32), (32, 8, 1))  # the same address and shape; contiguous to torch
    other = torch.randn(80, 1, 32).half()
    calls = [(a80,), (a80,), (a48,), (a80,), (other,), (odd,), (a80,), (odd,)]
    assert odd.is_contiguous() and odd.data_ptr() == a80.data_ptr() == a48.data_ptr()
    cached, source, encoded = _through_launcher(monkeypatch, "1", lambda: dyn_sums(32), calls)
    plain, _, _ = _through_launcher(monkeypatch, "0", lambda: dyn_sums(32), calls)
    _same_launches(cached, plain, calls)
    assert not any(isinstance(a, torch.Tensor) for a in cached[-1])  # a repeated call: by address
    assert ", (p0, s0, a0.stride(), ), (p0, p1, v0, ))" in source  # the dynamic shape and the strides are in the key
    assert _maps(cached[2])[0][6] == (48, 1, 32) and _maps(cached[5])[0][7] == (32, 8, 1)
    (enc,) = encoded
    assert len(enc.checked) == 4  # a80, a48, other, odd


def test_launcher_reads_no_address_it_does_not_use(monkeypatch):
    """A launch through host descriptors: the generated launcher reads an address only where the
    launch (its tensors by address), the key (an input's alignment) or a descriptor's key uses it."""
    import re

    base = torch.randn(80 * 32).half()
    _, source, _ = _through_launcher(monkeypatch, "1", lambda: dyn_sums(32), [(base.view(80, 1, 32),)] * 2)
    assigned = set(re.findall(r"\b(p\d+) (?:=|:=) ", source))
    assert assigned, source
    for name in assigned:
        uses = len(re.findall(rf"\b{name}\b", source)) - len(re.findall(rf"\b{name} (?:=|:=) ", source))
        assert uses > 0, f"{name} is read and never used:\n{source}"


def test_launcher_key_of_static_shapes(monkeypatch):
    """Static shapes: the key is the addresses, plus the strides of a tensor with a dim of extent 1
    (``is_contiguous`` leaves its stride free); W's swapped-in tensors and A's odd stride still get
    their own maps."""
    base = torch.randn(80 * 32 + 8).half()
    a = base[: 80 * 32].view(80, 1, 32)
    odd = base.as_strided((80, 1, 32), (32, 16, 1))
    w1, w2 = torch.randn(80, 32).half(), torch.randn(80, 32).half()
    calls = [(a, w1), (a, w1), (a, w2), (odd, w2), (a, w1), (odd, w1)]
    cached, source, encoded = _through_launcher(monkeypatch, "1", lambda: static_sums(80, 32), calls)
    plain, _, _ = _through_launcher(monkeypatch, "0", lambda: static_sums(80, 32), calls)
    _same_launches(cached, plain, calls)
    assert ", (p0, a0.stride(), p1, ), (p0, p1, p2, ))" in source  # W: (80, 32), contiguous: its address decides
    (enc,) = encoded
    assert len(enc.checked) == 4


@pytest.mark.parametrize("cache", ["1", "0"])
def test_a_stride_tensormaps_refuse_fails_alike(monkeypatch, cache):
    """A size-1 dim's stride of 7 halves (not 16-byte aligned): Triton's TensorDescriptor refuses
    it, and a map cached for the same address and shape must not hide that."""
    base = torch.randn(80 * 32 + 8).half()
    a = base[: 80 * 32].view(80, 1, 32)
    bad = base.as_strided((80, 1, 32), (32, 7, 1))
    with pytest.raises(AssertionError, match="16-byte aligned"):
        # the first call takes the generic path, the second Triton's run (a new key), the third the cached maps
        _through_launcher(monkeypatch, cache, lambda: static_sums(80, 32), [(a, a[:, 0])] * 3 + [(bad, a[:, 0])])


def test_launcher_key_cache_is_bounded(monkeypatch):
    tensors = [torch.randn(20, 1, 32).half() for _ in range(EncodedDescriptors.LIMIT + 5)]
    cached, _, encoded = _through_launcher(monkeypatch, "1", lambda: dyn_sums(32), [(t,) for t in tensors])
    assert [_maps(c)[0][1] for c in cached] == [t.data_ptr() for t in tensors]
    (enc,) = encoded
    assert 0 < len(enc.checked) <= EncodedDescriptors.LIMIT
