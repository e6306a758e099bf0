"""The generated per-kernel launcher (runtime/kernel.py, ``_generate_launcher``).

After a lowering's first launch, calls run Python generated for the kernel's signature; when
one of its checks fails the call goes to the generic path.  So every bad call must raise the
same error on a warm kernel (generated launcher) as on a cold one (generic path only), and
every good call must give the generic path's result.
"""

import pytest
import torch
from t2t_util import assert_close, assert_equal

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import KernelCallError
from tile2triton.runtime.kernel import JITKernel


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


@tilelang.jit
def halves(A, B, block=16):
    N = T.dynamic("N")
    A: T.Tensor((N,), T.float32)
    B: T.Tensor((N * 2,), T.float32)
    C = T.empty((N,), T.float32)
    D = T.empty((N * 2,), T.float32)
    with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
        for i in T.Parallel(block):
            C[bx * block + i] = A[bx * block + i] + B[2 * (bx * block + i)]
        for i in T.Parallel(2 * block):
            D[2 * bx * block + i] = B[2 * bx * block + i] + 1.0
    return C, D


@tilelang.jit(out_idx=[-1])
def strided_copy(M, N, sM, bm=16, bn=16):
    @T.prim_func
    def main(A: T.StridedTensor((M, N), (sM, 1), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm)) as (bx, by):
            tile = T.alloc_fragment((bm, bn), "float32")
            T.copy(A[by * bm, bx * bn], tile)
            T.copy(tile, B[by * bm, bx * bn])

    return main


@tilelang.jit(out_idx=[-1])
def strided_dynamic(M, N, bm=16, bn=16):
    sM, sN = T.dynamic("sM, sN")

    @T.prim_func
    def main(A: T.StridedTensor((M, N), (sM, sN), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm)) as (bx, by):
            tile = T.alloc_fragment((bm, bn), "float32")
            T.copy(A[by * bm, bx * bn], tile)
            T.copy(tile, B[by * bm, bx * bn])

    return main


def _cold(kernel: JITKernel) -> JITKernel:
    """Another kernel of the same program that has never launched: calls take the generic path."""
    return JITKernel(kernel.prim_func, kernel.target)


def _error(kernel, args) -> str:
    with pytest.raises(KernelCallError) as info:
        kernel(*args)
    return str(info.value)


def _xy(n=40, device="cpu"):
    return torch.randn(6, n, dtype=torch.float16, device=device), torch.randn(6, n, dtype=torch.float16, device=device)


def test_first_launch_generates_the_launcher(dev):
    k = _cold(axpy())
    assert not hasattr(k.__call__, "source")  # the generic path
    x, y = _xy(device=dev)
    k(x, y, 1.0, 0)
    assert "def launch(" in k.__call__.source
    assert_close(k(x, y, 2.0, 3), x.double() * 2 + y.double() + 3, 2e-2, 2e-2)


def _bad_calls():
    x, y = _xy()
    strided = torch.randn(40, dtype=torch.float16).expand(6, 40)
    return {
        "too few": (x, y, 2.0),
        "too many": (x, y, 2.0, 1, 5),
        "dtype": (x, y.float(), 2.0, 1),
        "rank": (x, torch.randn(40, dtype=torch.float16), 2.0, 1),
        "static dim": (torch.randn(5, 40, dtype=torch.float16), y, 2.0, 1),
        "size disagrees": (x, torch.randn(6, 41, dtype=torch.float16), 2.0, 1),
        "not a tensor": ([1, 2], y, 2.0, 1),
        "transposed": (torch.randn(40, 6, dtype=torch.float16).t(), y, 2.0, 1),
        "stride 0": (x, strided, 2.0, 1),
        "float for int": (x, y, 2.0, 1.5),
        "tensor for scalar": (x, y, torch.tensor(2.0), 1),
        "out of range": (x, y, 2.0, 2**32),
        "meta": (x, y.to("meta"), 2.0, 1),
        "none": (None, y, 2.0, 1),
    }


@pytest.mark.parametrize("case", sorted(_bad_calls()))
def test_warm_kernel_raises_the_generic_error(case):
    args = _bad_calls()[case]
    warm = _cold(axpy())
    x, y = _xy()
    warm(x, y, 1.0, 0)
    assert hasattr(warm.__call__, "source")
    assert _error(warm, args) == _error(_cold(axpy()), args)
    assert_close(warm(x, y, 1.0, 0), x.double() + y.double(), 2e-2, 2e-2)  # still usable


def test_sizes_change_between_calls(dev):
    k = axpy()
    for n in (40, 7, 64, 1):
        x, y = _xy(n, device=dev)
        assert_close(k(x, y, 0.5, -2), x.double() * 0.5 + y.double() - 2, 2e-2, 2e-2)


def test_zero_size_launches_nothing(dev):
    k = axpy()
    x, y = _xy(device=dev)
    k(x, y, 1.0, 0)
    z = k(*_xy(0, device=dev), 1.0, 0)
    assert z.shape == (6, 0)


def test_expression_dims_and_two_outputs(dev):
    k = halves.compile(torch.randn(4), torch.randn(8))
    for n in (16, 20, 3):
        a, b = torch.randn(n, device=dev), torch.randn(2 * n, device=dev)
        c, d = k(a, b)
        assert_close(c, a.double() + b[::2].double(), 1e-6, 1e-6)
        assert_close(d, b.double() + 1, 1e-6, 1e-6)
    assert "def launch(" in k.__call__.source
    bad = (torch.randn(3), torch.randn(7))  # 7 is not 2 * N
    assert _error(k, bad) == _error(_cold(k), bad)
    assert "dim 0 should be 6" in _error(k, bad)


def test_declared_strides_checked_like_the_generic_path(dev):
    k = strided_copy(6, 20, 32)
    base = torch.randn(6, 32, device=dev)
    assert_equal(k(base[:, :20]), base[:, :20])
    assert_equal(k(base[:, 5:25]), base[:, 5:25])  # an offset view with the declared strides
    bad = (torch.randn(6, 20),)  # row stride 20, declared 32
    assert _error(k, bad) == _error(_cold(k), bad)
    assert "expects stride 32 in dim 0" in _error(k, bad)


def test_symbolic_strides_bound_per_call(dev):
    k = strided_dynamic(20, 30)
    base = torch.randn(40, 70, device=dev)
    for a in (base[::2, 5:35], base[:30, :20].t(), base[:20, :30].contiguous(), base[::2, 5:35]):
        assert_equal(k(a), a)


def test_tensor_subclass_takes_the_generic_path(dev):
    k = axpy()
    x, y = _xy(device=dev)
    k(x, y, 1.0, 0)
    p = torch.nn.Parameter(x, requires_grad=False)
    assert_close(k(p, y, 1.0, 0), x.double() + y.double(), 2e-2, 2e-2)


def test_outputs_come_from_torch_empty_at_call_time(monkeypatch):
    k = axpy()
    x, y = _xy()
    k(x, y, 1.0, 0)
    calls = []
    real_empty = torch.empty

    def counting_empty(*args, **kwargs):
        calls.append(kwargs.get("size", args))
        return real_empty(*args, **kwargs)

    monkeypatch.setattr(torch, "empty", counting_empty)
    k(x, y, 1.0, 0)
    assert calls == [(6, 40)]


@pytest.mark.parametrize("env", [None, "1"])
def test_interpreted_launch_with_and_without_triton_interpret(monkeypatch, env):
    k = axpy()
    x, y = _xy()
    k(x, y, 1.0, 0)
    if env is None:
        monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    else:
        monkeypatch.setenv("TRITON_INTERPRET", env)
    assert_close(k(x, y, 3.0, 1), x.double() * 3 + y.double() + 1, 2e-2, 2e-2)


@pytest.mark.gpu
def test_cpu_and_cuda_calls_share_one_kernel():
    k = _cold(axpy())
    for device in ("cpu", "cuda", "cpu", "cuda"):
        x, y = _xy(device=device)
        z = k(x, y, 1.0, 2)
        assert z.device == x.device
        assert_close(z, x.double() + y.double() + 2, 2e-2, 2e-2)
    source = k.__call__.source
    assert ".is_cpu" in source and ".is_cuda" in source
    args = (torch.randn(6, 40, dtype=torch.float16), torch.randn(6, 40, dtype=torch.float16, device="cuda"), 1.0, 0)
    assert _error(k, args) == _error(_cold(k), args)


# ---------------------------------------------------------------- eager style: the generated entry


@tilelang.jit
def scale_add(A, B, block_M=16, block_N=32, alpha: T.float32 = 2.0):
    M, N = T.const("M, N")
    A: T.Tensor((M, N), T.float32)
    B: T.Tensor((M, N), T.float32)
    C = T.empty((M, N), T.float32)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        for i, j in T.Parallel(block_M, block_N):
            C[by * block_M + i, bx * block_N + j] = (
                A[by * block_M + i, bx * block_N + j] * alpha + B[by * block_M + i, bx * block_N + j]
            )
    return C


@tilelang.jit
def add_dyn(X, block=32):
    N = T.dynamic("N")
    X: T.Tensor((N,), T.float32)
    Y = T.empty((N,), T.float32)
    with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
        for i in T.Parallel(block):
            Y[bx * block + i] = X[bx * block + i] + 1.0
    return Y


@tilelang.jit
def rows_plus_one(A, block=32):
    M, N, sM = T.const("M, N, sM")
    A: T.StridedTensor((M, N), (sM, 1), T.float32)
    B = T.empty((M, N), T.float32)
    with T.Kernel(T.ceildiv(N, block), M, threads=32) as (bx, by):
        for j in T.Parallel(block):
            B[by, bx * block + j] = A[by, bx * block + j] + 1.0
    return B


def test_eager_repeat_calls_are_remembered(dev):
    a, b = torch.randn(9, 40, device=dev), torch.randn(9, 40, device=dev)
    calls = scale_add._eager._calls
    for args, alpha in (((a, b), 2.0), ((a, b, 16, 32), 2.0), ((a, b, 8, 8, -1.5), -1.5)):
        for _ in range(3):  # the first call binds, the next ones hit the remembered key
            assert_close(scale_add(*args), a.double() * alpha + b.double(), 1e-5, 1e-5)
    assert len(calls) >= 3
    # a run-time scalar is not part of the key: another value, same entry, new result
    assert_close(scale_add(a, b, 8, 8, 0.25), a.double() * 0.25 + b.double(), 1e-5, 1e-5)
    n = len(calls)
    assert_close(scale_add(a, b, 8, 8, 4.0), a.double() * 4 + b.double(), 1e-5, 1e-5)
    assert len(calls) == n


def test_eager_remembered_key_still_validates(dev):
    a, b = torch.randn(9, 40, device=dev), torch.randn(9, 40, device=dev)
    scale_add(a, b)
    scale_add(a, b)
    with pytest.raises(KernelCallError, match=r"parameter 'B' expects dtype torch.float32, got torch.float16"):
        scale_add(a, b.half())
    with pytest.raises(KernelCallError, match=r"parameter 'A' must be contiguous"):
        scale_add(torch.randn(40, 9, device=dev).t(), b)
    with pytest.raises(KernelCallError, match=r"T.const 'N' is bound twice with different values"):
        scale_add(a, torch.randn(9, 41, device=dev))
    with pytest.raises(KernelCallError, match=r"parameter 'alpha' expects a float32 scalar, got str 'x'"):
        scale_add(a, b, 16, 32, "x")


def test_eager_dynamic_sizes_share_one_kernel(dev, monkeypatch):
    import tile2triton.eager as eager

    monkeypatch.setattr(eager, "_MAX_CALLS", 3)  # past the cap, calls take the second tier
    for n in (5, 40, 33, 64, 5, 100, 40):
        x = torch.randn(n, device=dev)
        assert_close(add_dyn(x), x.double() + 1, 1e-6, 1e-6)
        assert_close(add_dyn(x, 16), x.double() + 1, 1e-6, 1e-6)
    assert len(add_dyn._eager._calls) <= 3
    assert add_dyn._eager.cache_info()["kernels"] == 2  # one per block size


def test_eager_stride_constants_are_not_keyed_by_shape(dev):
    base50, base60 = torch.randn(11, 50, device=dev), torch.randn(11, 60, device=dev)
    for view in (base50[:, 3:40], base60[:, 3:40], base50[:, 3:40]):
        assert_close(rows_plus_one(view), view.double() + 1, 1e-6, 1e-6)
    assert not rows_plus_one._eager._calls


def test_eager_unusual_arguments_take_the_full_path(dev):
    a, b = torch.randn(9, 40, device=dev), torch.randn(9, 40, device=dev)
    p = torch.nn.Parameter(a.clone(), requires_grad=False)
    calls = scale_add._eager._calls
    calls.clear()
    assert_close(scale_add(p, b), a.double() * 2 + b.double(), 1e-5, 1e-5)
    assert_close(scale_add(p, b), a.double() * 2 + b.double(), 1e-5, 1e-5)
    assert not calls  # a tensor subclass would be keyed by identity
    keyword_calls = scale_add._eager._keyword_calls
    keyword_calls.clear()
    assert_close(scale_add(a, b, alpha=3.0), a.double() * 3 + b.double(), 1e-5, 1e-5)
    assert not calls and not keyword_calls  # a run-time scalar by keyword: the picker reads positions only
    assert_close(scale_add(A=a, B=b), a.double() * 2 + b.double(), 1e-5, 1e-5)
    assert not keyword_calls  # tensors by keyword
    with pytest.raises(KernelCallError, match=r"scale_add takes 5 positional argument"):
        scale_add(a, b, 16, 32, 2.0, 7)


def test_eager_keyword_calls_are_remembered(dev):
    """TileLang's spelling ``kernel(A, B, block_M=8, block_N=8)``: compile-time keywords are part of
    the key (name, class, value), so a remembered call is one lookup, and any change of a shape, a
    keyword's value or its order is a new key bound by the full path."""
    a, b = torch.randn(9, 40, device=dev), torch.randn(9, 40, device=dev)
    keyword_calls = scale_add._eager._keyword_calls
    keyword_calls.clear()
    for _ in range(3):
        assert_close(scale_add(a, b, block_M=8, block_N=8), a.double() * 2 + b.double(), 1e-5, 1e-5)
    assert len(keyword_calls) == 1
    # the same call with the keywords in the other order, another block size, another shape
    c, d = torch.randn(13, 27, device=dev), torch.randn(13, 27, device=dev)
    assert_close(scale_add(a, b, block_N=8, block_M=8), a.double() * 2 + b.double(), 1e-5, 1e-5)
    assert_close(scale_add(a, b, block_M=16, block_N=8), a.double() * 2 + b.double(), 1e-5, 1e-5)
    assert_close(scale_add(c, d, block_M=8, block_N=8), c.double() * 2 + d.double(), 1e-5, 1e-5)
    assert len(keyword_calls) == 4
    kernels = {id(k) for k, _ in keyword_calls.values()}
    assert len(kernels) == 3  # the two spellings of one call share its kernel
    # a remembered key still validates: dtype, contiguity
    with pytest.raises(KernelCallError, match=r"parameter 'B' expects dtype torch.float32, got torch.float16"):
        scale_add(a, b.half(), block_M=8, block_N=8)
    with pytest.raises(KernelCallError, match=r"parameter 'A' must be contiguous"):
        scale_add(torch.randn(40, 9, device=dev).t(), b, block_M=8, block_N=8)
    # positional run-time scalar with keywords: not in the key, its value reaches the kernel
    assert_close(scale_add(a, b, 8, alpha=-1.5), a.double() * -1.5 + b.double(), 1e-5, 1e-5)
    assert_close(scale_add(a, b, 8, block_N=8), a.double() * 2 + b.double(), 1e-5, 1e-5)
    assert_close(scale_add(a, b, 8, 8, 0.5), a.double() * 0.5 + b.double(), 1e-5, 1e-5)


def test_eager_keyword_constants_are_checked_against_new_shapes(dev):
    """A T.const given by keyword is in the key; a later call whose shape disagrees with it is a new
    key, so the full path's check still names the disagreement."""
    a, b = torch.randn(9, 40, device=dev), torch.randn(9, 40, device=dev)
    for _ in range(2):
        assert_close(scale_add(a, b, M=9), a.double() * 2 + b.double(), 1e-5, 1e-5)
    assert any(k[1] == (("M", int, 9),) for k in scale_add._eager._keyword_calls)
    with pytest.raises(KernelCallError, match=r"T.const 'M' is bound twice with different values"):
        scale_add(torch.randn(10, 40, device=dev), torch.randn(10, 40, device=dev), M=9)


def test_eager_keyword_key_keeps_classes_apart():
    from tile2triton.eager import _keywords_key

    keys = {_keywords_key({"block": v}) for v in (1, True, 1.0)}
    assert len(keys) == 3  # equal and equally hashed, but compile-time values of another class
