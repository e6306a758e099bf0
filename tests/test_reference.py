"""The reference executor (tile2triton/oracle/reference.py): TileLang semantics on torch, no Triton.

Checked three ways: on the seed kernels against torch, against tile2triton's interpreter run
(``reference.compare``), and on small kernels that pin one TileLang rule each (copy bounds,
gemm accumulation, reduce ``clear``, floor division, per-iteration locals, atomics, ...).
"""

import pytest
import torch
from t2t_util import assert_close, load_example

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.oracle import reference


# ---------------------------------------------------------------------------- seed kernels vs torch
def test_seed_elementwise():
    ex = load_example("elementwise")
    a, b = torch.randn(150, 200), torch.randn(150, 200)
    c = reference.run(ex.elementwise_op(150, 200, 32, 64, 128), a, b)
    assert_close(c, a.double() + b.double(), 1e-6, 1e-6)


def test_seed_conditional_elementwise():
    ex = load_example("conditional_elementwise")
    a, b = torch.randn(300), torch.randn(300)
    c = reference.run(ex.conditional_elementwise(300, 128), a, b)
    ad, bd = a.double(), b.double()
    assert_close(c, torch.where(ad > 0, ad + bd, ad - bd), 1e-6, 1e-6)


def test_seed_reduction():
    ex = load_example("reduction")
    a = torch.randn(50, 300)
    c = reference.run(ex.reduction_op(50, 300, 128), a)
    assert_close(c, a.double().sum(1), 1e-5, 1e-5)


def test_seed_layer_norm():
    ex = load_example("layer_norm")
    x = torch.randn(40, 200) * 2.0 + 0.5
    y = reference.run(ex.layer_norm(40, 200, 128), x)
    assert_close(y, ex.reference(x), 1e-4, 1e-4)


def test_seed_matmul():
    ex = load_example("matmul")
    a, b = torch.randn(200, 120).half(), torch.randn(120, 136).half()
    c = reference.run(ex.matmul(200, 136, 120, 64, 64, 32), a, b)
    assert c.dtype == torch.float16 and c.shape == (200, 136)
    assert_close(c, a.double() @ b.double(), 1e-2, 1e-2)


def test_seed_gemv():
    ex = load_example("gemv")
    a, b = torch.randn(200).half(), torch.randn(150, 200).half()
    c = reference.run(ex.gemv(150, 200, 32, 64), a, b)
    assert_close(c, b.double() @ a.double(), 1e-2, 1e-2)


# ---------------------------------------------------------------------------- vs tile2triton (interpreter)
SEED_CASES = [
    (
        "elementwise",
        lambda ex: ex.elementwise_op(70, 90, 32, 64, 128),
        lambda: (torch.randn(70, 90), torch.randn(70, 90)),
    ),
    (
        "conditional_elementwise",
        lambda ex: ex.conditional_elementwise(300, 128),
        lambda: (torch.randn(300), torch.randn(300)),
    ),
    ("reduction", lambda ex: ex.reduction_op(20, 300, 128), lambda: (torch.randn(20, 300),)),
    ("layer_norm", lambda ex: ex.layer_norm(12, 200, 128), lambda: (torch.randn(12, 200) * 2 + 0.5,)),
    (
        "matmul",
        lambda ex: ex.matmul(100, 72, 80, 64, 64, 32),
        lambda: (torch.randn(100, 80).half(), torch.randn(80, 72).half()),
    ),
    ("gemv", lambda ex: ex.gemv(40, 70, 32, 32), lambda: (torch.randn(70).half(), torch.randn(40, 70).half())),
]


@pytest.mark.parametrize("name,make,inputs", SEED_CASES, ids=[c[0] for c in SEED_CASES])
def test_seed_agrees_with_tile2triton(name, make, inputs):
    kernel = make(load_example(name))
    result = reference.compare(kernel, *inputs())
    assert result.ok, result.message


# ---------------------------------------------------------------------------- one rule each
@tilelang.jit(out_idx=[-1])
def shifted_copy(M, N, bm, bn, off):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm)) as (bx, by):
            S = T.alloc_shared((bm, bn), "float32")
            T.copy(A[by * bm + off, bx * bn], S)  # reads past the end of A: zeros
            T.copy(S, B[by * bm, bx * bn])  # writes past the end of B: dropped

    return main


def test_copy_bounds_read_zero_and_drop_writes():
    M, N = 37, 21
    a = torch.randn(M, N)
    b = reference.run(shifted_copy(M, N, 16, 8, 5), a)
    ref = torch.zeros(M, N)
    ref[: M - 5] = a[5:]
    assert torch.equal(b, ref)


@tilelang.jit(out_idx=[-1])
def gemm_bias(M, N, K, clear):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((N, K), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1):
            As = T.alloc_shared((M, K), "float32")
            Bs = T.alloc_shared((N, K), "float32")
            Cf = T.alloc_fragment((M, N), "float32")
            T.fill(Cf, 1.5)
            T.copy(A, As)
            T.copy(B, Bs)
            T.gemm(As, Bs, Cf, transpose_B=True, clear_accum=clear)
            T.gemm(As, Bs, Cf, transpose_B=True)
            T.copy(Cf, C)

    return main


@pytest.mark.parametrize("clear", [False, True])
def test_gemm_accumulates_unless_clear_accum(clear):
    M, N, K = 5, 6, 7
    a, b = torch.randn(M, K), torch.randn(N, K)
    c = reference.run(gemm_bias(M, N, K, clear), a, b)
    p = a.double() @ b.double().T
    assert_close(c, (0 if clear else 1.5) + 2 * p, 1e-5, 1e-5)


@tilelang.jit(out_idx=[-1])
def reduce_keep(M, N, kind, clear):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M,), "float32")):
        with T.Kernel(1):
            X = T.alloc_fragment((M, N), "float32")
            R = T.alloc_fragment((M,), "float32")
            T.copy(A, X)
            T.fill(R, 1.0)
            T.reduce(X, R, kind, dim=1, clear=clear)
            T.copy(R, C)

    return main


@pytest.mark.parametrize("kind", ["sum", "max", "min", "absmax", "abssum"])
@pytest.mark.parametrize("clear", [True, False])
def test_reduce_clear_semantics(kind, clear):
    a = torch.randn(6, 9)
    c = reference.run(reduce_keep(6, 9, kind, clear), a)
    ad = a.double()
    red = {
        "sum": ad.sum(1),
        "max": ad.amax(1),
        "min": ad.amin(1),
        "absmax": ad.abs().amax(1),
        "abssum": ad.abs().sum(1),
    }[kind]
    if not clear and kind != "abssum":
        red = {"sum": red + 1, "max": red.clamp(min=1), "min": red.clamp(max=1), "absmax": red.clamp(min=1)}[kind]
    assert_close(c, red, 1e-6, 1e-6)


@tilelang.jit(out_idx=[-2, -1])
def divmod_kernel(N, d):
    @T.prim_func
    def main(A: T.Tensor((N,), "int32"), Q: T.Tensor((N,), "int32"), R: T.Tensor((N,), "int32")):
        with T.Kernel(1):
            for i in T.Parallel(N):
                Q[i] = A[i] // d
                R[i] = A[i] % d

    return main


@pytest.mark.parametrize("d", [3, -3])
def test_int_floordiv_floormod(d):
    a = torch.arange(-10, 11, dtype=torch.int32)
    q, r = reference.run(divmod_kernel(a.numel(), d), a)
    assert torch.equal(q, torch.div(a, d, rounding_mode="floor"))
    assert torch.equal(r, torch.remainder(a, d))


@tilelang.jit(out_idx=[-1])
def private_local(N, K):
    @T.prim_func
    def main(A: T.Tensor((N, K), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(1):
            for i in T.Parallel(N):
                acc = T.alloc_local((2,), "float32")
                acc[0] = 0.0
                acc[1] = 1.0
                for k in T.serial(K):
                    if A[i, k] > 0:
                        acc[0] += A[i, k]
                    else:
                        acc[1] *= 2.0
                C[i] = acc[0] + acc[1]

    return main


def test_local_in_parallel_is_per_iteration():
    a = torch.randn(9, 5)
    c = reference.run(private_local(9, 5), a)
    ref = a.clamp(min=0).sum(1).double() + 2.0 ** (a <= 0).sum(1).double()
    assert_close(c, ref, 1e-6, 1e-6)


@tilelang.jit
def histogram(N, bins, blk):
    @T.prim_func
    def main(A: T.Tensor((N,), "int32"), H: T.Tensor((bins,), "float32")):
        with T.Kernel(T.ceildiv(N, blk)) as bx:
            for i in T.Parallel(blk):
                if bx * blk + i < N:
                    T.atomic_add(H[A[bx * blk + i]], 1.0)

    return main


def test_atomic_add_accumulates_duplicates():
    a = torch.randint(0, 7, (100,), dtype=torch.int32)
    h = torch.zeros(7)
    reference.run(histogram(100, 7, 32), a, h)  # in place
    assert torch.equal(h, torch.bincount(a.long(), minlength=7).float())


@tilelang.jit(out_idx=[-1])
def cumsum_kernel(N, reverse):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1):
            S = T.alloc_shared((N,), "float32")
            T.copy(A, S)
            T.cumsum(S, dim=0, reverse=reverse)
            T.copy(S, B)

    return main


@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum(reverse):
    a = torch.randn(13)
    b = reference.run(cumsum_kernel(13, reverse), a)
    ref = a.double().flip(0).cumsum(0).flip(0) if reverse else a.double().cumsum(0)
    assert_close(b, ref, 1e-5, 1e-5)


@tilelang.jit(out_idx=[-1])
def thread_view_copy(N, threads):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, threads * 2), threads=threads) as bx:
            tx = T.get_thread_binding(0)
            for j in T.serial(2):
                idx = bx * threads * 2 + j * threads + tx
                if idx < N:
                    B[idx] = A[idx] * 2.0

    return main


def test_thread_view():
    a = torch.randn(301)
    b = reference.run(thread_view_copy(301, 64), a)
    assert torch.equal(b, a * 2)


@tilelang.jit(out_idx=[-1])
def math_kernel(N):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1):
            for i in T.Parallel(N):
                x = A[i]
                B[i] = (
                    T.exp(x) * 0.25
                    + T.sigmoid(x)
                    - T.tanh(x)
                    + T.max(x, 0.5)
                    + T.if_then_else(x > 0, T.sqrt(x), T.abs(x))
                )

    return main


def test_math_intrinsics():
    a = torch.randn(33)
    b = reference.run(math_kernel(33), a)
    x = a.double()
    ref = (
        torch.exp(x) * 0.25
        + torch.sigmoid(x)
        - torch.tanh(x)
        + x.clamp(min=0.5)
        + torch.where(x > 0, x.clamp(min=0).sqrt(), x.abs())
    )
    assert_close(b, ref, 1e-5, 1e-5)


# ---------------------------------------------------------------------------- the debugging option
class _Broken:
    """A kernel whose result is wrong in one element (what compare must point at)."""

    def __init__(self, kernel, where):
        self.kernel, self.where = kernel, where
        self.prim_func = kernel.prim_func

    def __call__(self, *args):
        out = self.kernel(*args)
        out[self.where] += 1.0
        return out


def test_compare_reports_first_divergence_and_statement():
    ex = load_example("elementwise")
    kernel = ex.elementwise_op(40, 50, 16, 32, 128)
    a, b = torch.randn(40, 50), torch.randn(40, 50)
    ok = reference.compare(kernel, a, b)
    assert ok and ok.ok
    result = reference.compare(_Broken(kernel, (7, 11)), a, b)
    assert not result.ok
    assert result.output == "C" and result.index == (7, 11) and result.mismatches == 1
    assert result.statement is not None and result.statement.loc.line > 0
    assert "elementwise.py" in str(result.statement.loc)
    assert "diverges at (7, 11)" in result.message
    with pytest.raises(AssertionError, match="diverges"):
        reference.compare(_Broken(kernel, (0, 0)), a, b, raise_on_mismatch=True)


def test_inputs_are_not_modified_by_compare():
    a = torch.randint(0, 7, (50,), dtype=torch.int32)
    h = torch.zeros(7)
    result = reference.compare(histogram(50, 7, 32), a, h)
    assert result.ok, result.message
    assert torch.equal(h, torch.zeros(7))
