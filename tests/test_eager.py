"""Eager-style @tilelang.jit: T.const bound from shapes/strides/keywords, T.empty outputs,
`.compile(**consts)`, scalar parameters, and the errors for what cannot be bound."""

import pytest
import torch
from t2t_util import assert_close, assert_equal, load_example, poison

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import JITKernel, KernelCallError, TileLangCompileError
from tile2triton.runtime.cache import stats

# ---------------------------------------------------------------- seed 000, as written


def test_seed_block_view_copy(dev):
    seed = load_example("seed_copy")
    for n in (3000, 777, 1):
        a = torch.randn(n, dtype=torch.float16, device=dev)
        b = seed.tl_copy_1d_parallel(a, 1024)
        assert b.dtype == torch.float16 and b.device == a.device
        assert_equal(b, a)


def test_seed_thread_view_copy(dev):
    seed = load_example("seed_copy")
    a = torch.randn(1500, dtype=torch.float16, device=dev)
    b = seed.tl_copy_1d_parallel_thread_view(a, 1024)
    assert_equal(b, a)


def test_seed_thread_view_binds_thread_var():
    seed = load_example("seed_copy")
    a = torch.randn(100, dtype=torch.float16)
    func = seed.tl_copy_1d_parallel_thread_view._eager.get_tir(a, 256)
    assert [p.name for p in func.params] == ["A", "B"] and func.out_idx == [1]
    assert [v.name for v in func.kernels[0].thread_vars] == ["tx"]
    assert func.constants == {"N": 100}


# ---------------------------------------------------------------- run-time scalars annotated in the body


@tilelang.jit
def add_rows(A, B, M, N, block=32):
    M: T.int32  # TileLang's eager-JIT notebook ("annotations for runtime variables"): a run-time size
    A: T.Tensor[[M, N], T.float32]
    B: T.Tensor[[M, N], T.float32]
    C = T.empty((M, N), T.float32)
    with T.Kernel(T.ceildiv(M, block), threads=128) as bx:
        for i, j in T.Parallel(block, N):
            C[bx * block + i, j] = A[bx * block + i, j] + B[bx * block + i, j] * 2.0
    return C


def test_scalars_annotated_in_the_body_are_runtime_arguments(dev):
    for m in (37, 70):  # one kernel for both sizes: M is an argument, not a constant (N, unannotated, is one)
        a, b = torch.randn(m, 45, device=dev), torch.randn(m, 45, device=dev)
        assert_close(add_rows(a, b, m, 45), a.double() + b.double() * 2, 1e-5, 1e-5)
        if m == 37:
            before = stats.compiles
    assert stats.compiles == before


# ---------------------------------------------------------------- constants


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


def test_two_consts_from_shapes_and_scalar_param(dev):
    a = torch.randn(37, 45, device=dev)
    b = torch.randn(37, 45, device=dev)
    assert_close(scale_add(a, b), a.double() * 2 + b.double(), 1e-5, 1e-5)
    assert_close(scale_add(a, b, alpha=-0.5), a.double() * -0.5 + b.double(), 1e-5, 1e-5)
    assert_close(scale_add(a, b, 8, 8, 3.0), a.double() * 3 + b.double(), 1e-5, 1e-5)


def test_scalar_param_is_a_runtime_argument():
    a, b = torch.randn(5, 7), torch.randn(5, 7)
    scale_add(a, b, alpha=1.0)
    before = stats.compiles
    scale_add(a, b, alpha=4.0)
    assert stats.compiles == before  # no recompilation for another scalar value
    k = scale_add.compile(M=5, N=7)
    assert [p.name for p in k.params] == ["A", "B", "alpha", "C"]


def test_const_disagreement_names_both_bindings():
    with pytest.raises(KernelCallError, match=r"T.const 'N' is bound twice with different values: "
                                              r"A.shape\[1\] = 45 but B.shape\[1\] = 44"):  # fmt: skip
        scale_add(torch.randn(37, 45), torch.randn(37, 44))


def test_const_keyword_disagrees_with_shape():
    with pytest.raises(KernelCallError, match=r"T.const 'M' is bound twice with different values: "
                                              r"keyword argument M= = 36 but A.shape\[0\] = 37"):  # fmt: skip
        scale_add(torch.randn(37, 45), torch.randn(37, 45), M=36)


def test_const_keyword_that_agrees_is_fine():
    a, b = torch.randn(9, 10), torch.randn(9, 10)
    assert_close(scale_add(a, b, M=9, N=10), a.double() * 2 + b.double(), 1e-5, 1e-5)


@tilelang.jit
def fill_const(A, value: T.float32):
    N, K = T.const("N, K")
    A: T.Tensor((N,), T.float32)
    B = T.empty((K,), T.float32)
    with T.Kernel(T.ceildiv(K, 64), threads=64) as bx:
        for i in T.Parallel(64):
            B[bx * 64 + i] = value + A[0]
    return B


def test_const_not_in_any_shape_must_be_given_by_keyword(dev):
    with pytest.raises(KernelCallError, match=r"T.const 'K' cannot be bound: it is not directly a dimension or "
                                              r"stride of any tensor parameter; pass it as a keyword argument \(K=...\)"):  # fmt: skip
        fill_const(torch.randn(3), 1.5)
    a = torch.randn(3, device=dev)
    b = fill_const(a, 1.5, K=130)
    assert b.shape == (130,)
    assert_close(b, (a[0].double().cpu() + 1.5).expand(130), 1e-6, 1e-6)


def test_unknown_keyword_lists_params_and_consts():
    with pytest.raises(KernelCallError, match=r"unexpected keyword argument\(s\) Q \(parameters: A, value; "
                                              r"T.const names: N, K\)"):  # fmt: skip
        fill_const(torch.randn(3), 1.5, K=4, Q=1)


@tilelang.jit
def strided_rows(A, block=32):
    M, N, sM = T.const("M, N, sM")
    A: T.StridedTensor((M, N), (sM, 1), T.float32)
    B = T.empty((M, N), T.float32)
    with T.Kernel(T.ceildiv(N, block), M, threads=32) as (bx, by):
        for j in T.Parallel(block):
            B[by, bx * block + j] = A[by, bx * block + j] + 1.0
    return B


def test_const_bound_from_stride(dev):
    base = torch.randn(11, 50, device=dev)
    view = base[:, 3:40]  # row stride 50, not contiguous
    out = strided_rows(view)
    assert strided_rows._eager.get_tir(view).constants == {"M": 11, "N": 37, "sM": 50}
    assert_close(out, view.double() + 1, 1e-6, 1e-6)


# ---------------------------------------------------------------- compile(), decorator forms


@tilelang.jit()
def add_one(A, block: int = 64):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    B = T.empty((N,), T.float32)
    with T.Kernel(T.ceildiv(N, block), threads=64) as bx:
        for i in T.Parallel(block):
            B[bx * block + i] = A[bx * block + i] + 1.0
    return B


def test_decorator_with_parentheses_and_compile(dev):
    k = add_one.compile(N=100, block=32)
    assert isinstance(k, JITKernel)
    a = torch.randn(100, device=dev)
    assert_close(k(a), a.double() + 1, 1e-6, 1e-6)
    assert k is add_one.compile(N=100, block=32)  # cached
    assert k is add_one.compile(a, block=32)  # the same binding, from a tensor
    assert "def add_one_kernel" in add_one.get_kernel_source(a)
    with pytest.raises(KernelCallError, match=r"T.const 'N' cannot be bound: the tensors it is a dimension of "
                                              r"were not given; pass it as a keyword argument \(N=...\)"):  # fmt: skip
        add_one.compile(block=32)


def test_out_idx_is_rejected_in_eager_style():
    with pytest.raises(ValueError, match="out_idx cannot be used with an eager-style"):

        @tilelang.jit(out_idx=[-1])
        def bad(A):
            N = T.const("N")
            A: T.Tensor((N,), T.float32)
            B = T.empty((N,), T.float32)
            with T.Kernel(1) as bx:
                B[0] = A[0]
            return B


# ---------------------------------------------------------------- outputs


@tilelang.jit
def two_outputs(A, block=64):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    S = T.empty((N,), T.float32)
    D = T.empty(N, dtype=T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=64) as bx:
        for i in T.Parallel(block):
            S[bx * block + i] = A[bx * block + i] * A[bx * block + i]
            D[bx * block + i] = A[bx * block + i] * 2.0
    return D, S


def test_two_outputs_in_return_order(dev):
    a = torch.randn(99, device=dev)
    d, s = two_outputs(a)
    assert d.dtype == torch.float16 and s.dtype == torch.float32
    assert_close(s, a.double() ** 2, 1e-5, 1e-5)
    assert_close(d, a.double() * 2, 1e-2, 1e-2)


@tilelang.jit
def axpy_inplace(X, Y, a: T.float32, block=32):
    N = T.const("N")
    X: T.Tensor((N,), T.float32)
    Y: T.Tensor((N,), T.float32)
    with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
        for i in T.Parallel(block):
            Y[bx * block + i] = a * X[bx * block + i]


def test_kernel_without_outputs_mutates_argument(dev):
    x = torch.randn(70, device=dev)
    y = poison((70,), device=dev)
    assert axpy_inplace(x, y, 3.0) is None
    assert_close(y, x.double() * 3, 1e-6, 1e-6)


def test_empty_output_never_returned_is_an_error():
    @tilelang.jit
    def forgot(A):
        N = T.const("N")
        A: T.Tensor((N,), T.float32)
        B = T.empty((N,), T.float32)
        with T.Kernel(1) as bx:
            B[0] = A[0]

    with pytest.raises(TileLangCompileError, match=r"T.empty output\(s\) B must be returned: 'return B'"):
        forgot(torch.randn(4))


def test_returning_a_parameter_is_an_error():
    @tilelang.jit
    def returns_param(A):
        N = T.const("N")
        A: T.Tensor((N,), T.float32)
        with T.Kernel(1) as bx:
            A[0] = 1.0
        return A

    with pytest.raises(TileLangCompileError, match=r"returns only T.empty outputs, but this returns parameter 'A'"):
        returns_param(torch.randn(4))


# ---------------------------------------------------------------- what cannot be bound


def test_tensor_for_undeclared_parameter():
    @tilelang.jit
    def undeclared(A, B):
        N = T.const("N")
        A: T.Tensor((N,), T.float32)
        C = T.empty((N,), T.float32)
        with T.Kernel(1) as bx:
            C[0] = A[0]
        return C

    with pytest.raises(KernelCallError, match=r"parameter 'B' received a torch.Tensor, but the kernel body does not "
                                              r"declare it; add 'B: T.Tensor\(shape, dtype\)' before T.Kernel"):  # fmt: skip
        undeclared(torch.randn(4), torch.randn(4))


def test_non_tensor_for_declared_tensor():
    with pytest.raises(KernelCallError, match=r"add_one: parameter .A. expects a torch.Tensor declared T.Tensor\(\(N,\), float32\), got int 5"):  # fmt: skip
        add_one(5)


def test_missing_tensor_argument():
    with pytest.raises(KernelCallError, match=r"add_one: missing tensor argument 'A'"):
        add_one(block=32)


def test_const_outside_eager_style_is_an_error():
    @T.prim_func
    def lazy(A: T.Tensor((4,), T.float32)):
        N = T.const("N")
        with T.Kernel(1) as bx:
            A[0] = 1.0

    with pytest.raises(TileLangCompileError, match=r"T.const is for eager-style @tilelang.jit kernels"):
        tilelang.compile(lazy)


def test_const_used_only_in_an_expression_needs_a_keyword():
    @tilelang.jit
    def doubled(A):
        N = T.const("N")
        A: T.Tensor((N * 2,), T.float32)
        B = T.empty((N,), T.float32)
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(4):
                B[i] = A[2 * i]
        return B

    with pytest.raises(KernelCallError, match=r"T.const 'N' cannot be bound: it is not directly a dimension"):
        doubled(torch.randn(8))
    a = torch.randn(8)
    assert_close(doubled(a, N=4), a[::2].double(), 0, 0)


def test_constant_rank_mismatch_names_parameter():
    with pytest.raises(KernelCallError, match=r"parameter 'A' expects a 2-D tensor \(M, N\), got shape \(12,\)"):
        scale_add(torch.randn(12), torch.randn(12))


def test_fast_path_after_a_good_call_still_validates(dev):
    a = torch.randn(50, device=dev)
    assert_close(add_one(a, 32), a.double() + 1, 1e-6, 1e-6)
    assert_close(add_one(a, 32), a.double() + 1, 1e-6, 1e-6)  # the remembered binding
    b = torch.randn(51, device=dev)
    assert_close(add_one(b, 32), b.double() + 1, 1e-6, 1e-6)  # another N under the same key
    with pytest.raises(KernelCallError, match=r"parameter 'A' expects a 1-D tensor \(N,\), got shape \(5, 10\)"):
        add_one(torch.randn(5, 10, device=dev), 32)
    with pytest.raises(KernelCallError, match=r"parameter 'A' expects dtype torch.float32, got torch.float16"):
        add_one(a.half(), 32)
    with pytest.raises(KernelCallError, match=r"parameter 'A' must be contiguous"):
        add_one(torch.randn(100, device=dev)[::2], 32)


# ---------------------------------------------------------------- **metadata: keywords that name no parameter
@tilelang.jit
def shifted_copy(A, block: int = 32, **metadata):
    """TileLang's eager ``**metadata`` (its jit argument-binding test): the other keywords are a dict of
    compile-time values in the body."""
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    B = T.empty((N,), T.float32)
    shift = metadata.get("shift", 0.0)
    scales = metadata.get("scales", [1.0])
    with T.Kernel(T.ceildiv(N, block), threads=64) as bx:
        for i in T.Parallel(block):
            B[bx * block + i] = A[bx * block + i] * scales[-1] + shift
    return B


def test_var_keyword_metadata(dev):
    a = torch.randn(77, device=dev)
    assert_close(shifted_copy(a), a.double().cpu(), 0, 0)
    assert_close(shifted_copy(a, shift=1.5), a.double().cpu() + 1.5, 1e-6, 1e-6)
    assert_close(shifted_copy(a, 16, shift=-2.0, scales=[1.0, 3.0]), 3 * a.double().cpu() - 2.0, 1e-6, 1e-6)
    binds = stats.binds
    shifted_copy(a, shift=1.5)  # the same compile-time values: the kernel compiled for them
    assert stats.binds == binds
    assert shifted_copy.compile(T.Tensor[(77,), T.float32], shift=0.5) is not shifted_copy.compile(
        T.Tensor[(77,), T.float32], shift=0.25
    )


def test_var_positional_is_refused():
    with pytest.raises(TileLangCompileError, match=r"cannot take \*rest"):

        @tilelang.jit
        def f(A, *rest):
            N = T.const("N")
            A: T.Tensor((N,), T.float32)
            with T.Kernel(1):
                T.evaluate(0)


@tilelang.jit
def _scaled(A, factor: float = 2.0):
    M, N = T.const("M, N")
    A: T.Tensor[[M, N], T.float32]
    B = T.empty((M, N), T.float32)
    with T.Kernel(T.ceildiv(M, 16), threads=64) as bx:
        for i, j in T.Parallel(16, N):
            B[bx * 16 + i, j] = A[bx * 16 + i, j] * factor
    return B


def test_parse_cache_key(dev):
    """TileLang's ``JITImpl.parse_cache_key`` (the eager_jit notebook times it): equal for calls one kernel
    serves, different where the shapes or compile-time values differ; a lazy factory's is its arguments."""
    a = torch.randn(37, 21, device=dev)
    assert_close(_scaled(a), a * 2, atol=0, rtol=0)
    key = _scaled.parse_cache_key(a)
    assert key == _scaled.parse_cache_key(torch.randn(37, 21, device=dev))
    assert key != _scaled.parse_cache_key(torch.randn(38, 21, device=dev))
    assert _scaled.parse_cache_key(a, factor=3.0) != _scaled.parse_cache_key(a, factor=2.5)

    @tilelang.jit
    def factory(n, block=32):
        @T.prim_func
        def main(A: T.Tensor((n,), T.float32)):
            with T.Kernel(T.ceildiv(n, block), threads=32):
                pass

        return main

    assert factory.parse_cache_key(10, block=16) == factory.parse_cache_key(10, block=16)
    assert factory.parse_cache_key(10) != factory.parse_cache_key(11)


@tilelang.jit
def _matched(A: T.ptr, is_2d=False):
    if is_2d:
        M, N = T.const("M, N")
        A = T.match_buffer(A, [M, N], T.float32)
        B = T.empty((M,), T.float32)
        with T.Kernel(T.ceildiv(M, 16), threads=32) as bx:
            for i in T.Parallel(16):
                B[bx * 16 + i] = A[bx * 16 + i, N - 1] * 2
        return B
    else:
        L = T.const("L")
        A = T.match_buffer(A, [L], T.float32)
        B = T.empty((L,), T.float32)
        with T.Kernel(T.ceildiv(L, 16), threads=32) as bx:
            for i in T.Parallel(16):
                B[bx * 16 + i] = A[bx * 16 + i] + 1
        return B


def test_ptr_parameter_declared_by_match_buffer(dev):
    """The eager_jit notebook's dynamic dimensions: ``A: T.ptr`` given a tensor, its shape declared in the body
    by ``T.match_buffer(A, [M, N], dtype)``, the constants bound from the tensor's shape at each call."""
    for rows, cols in ((37, 29), (45, 30)):
        a = torch.randn(rows, cols, device=dev)
        assert_close(_matched(a, is_2d=True), a[:, -1] * 2, atol=0, rtol=0)
    v = torch.randn(50, device=dev)
    assert_close(_matched(v), v + 1, atol=0, rtol=0)
    with pytest.raises(KernelCallError, match="float32"):
        _matched(torch.randn(50, device=dev).half())
