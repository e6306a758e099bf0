"""Element math and scalars: T.exp, exp2, log, log2, sqrt, rsqrt, abs, tanh, max, min, pow,
floor, ceil, T.cast / .astype, T.ceildiv, T.infinity, integer // and %."""

import math

import pytest
import torch
from t2t_util import assert_close, assert_equal

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty

N = 300  # 1-D problem size (not a multiple of the block)
BLOCK = 128


# One factory per op: the op has to appear literally in the kernel source.


@tilelang.jit(out_idx=[-1])
def k_exp(N, block):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = T.exp(A[bx * block + i])

    return main


@tilelang.jit(out_idx=[-1])
def k_exp2(N, block):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = T.exp2(A[bx * block + i])

    return main


@tilelang.jit(out_idx=[-1])
def k_log(N, block):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = T.log(A[bx * block + i])

    return main


@tilelang.jit(out_idx=[-1])
def k_log2(N, block):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = T.log2(A[bx * block + i])

    return main


@tilelang.jit(out_idx=[-1])
def k_sqrt(N, block):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = T.sqrt(A[bx * block + i])

    return main


@tilelang.jit(out_idx=[-1])
def k_rsqrt(N, block):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = T.rsqrt(A[bx * block + i])

    return main


@tilelang.jit(out_idx=[-1])
def k_abs(N, block):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = T.abs(A[bx * block + i])

    return main


@tilelang.jit(out_idx=[-1])
def k_tanh(N, block):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = T.tanh(A[bx * block + i])

    return main


@tilelang.jit(out_idx=[-1])
def k_floor(N, block):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = T.floor(A[bx * block + i])

    return main


@tilelang.jit(out_idx=[-1])
def k_ceil(N, block):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = T.ceil(A[bx * block + i])

    return main


def _pos(x):
    return x.abs() + 0.1


UNARY = [
    # (factory, input transform, torch reference on float64, atol, rtol)
    ("exp", k_exp, lambda x: x, torch.exp, 1e-5, 1e-5),
    ("exp2", k_exp2, lambda x: x, torch.exp2, 1e-5, 1e-5),
    ("log", k_log, _pos, torch.log, 1e-5, 1e-5),
    ("log2", k_log2, _pos, torch.log2, 1e-5, 1e-5),
    ("sqrt", k_sqrt, _pos, torch.sqrt, 1e-6, 1e-6),
    ("rsqrt", k_rsqrt, _pos, torch.rsqrt, 1e-5, 1e-5),
    ("abs", k_abs, lambda x: x, torch.abs, 0, 0),
    ("tanh", k_tanh, lambda x: x, torch.tanh, 1e-5, 1e-5),
    ("floor", k_floor, lambda x: x * 5.0, torch.floor, 0, 0),
    ("ceil", k_ceil, lambda x: x * 5.0, torch.ceil, 0, 0),
]


@pytest.mark.parametrize("name,factory,prep,ref,atol,rtol", UNARY, ids=[u[0] for u in UNARY])
def test_unary_math(dev, name, factory, prep, ref, atol, rtol):
    a = prep(torch.randn(N, device=dev) * 2.0)
    c = factory(N, BLOCK)(a)
    assert_close(c, ref(a.double()), atol, rtol, msg=name)


@tilelang.jit(out_idx=[-3, -2, -1])
def k_binary(N, block):
    @T.prim_func
    def main(
        A: T.Tensor((N,), "float32"),
        B: T.Tensor((N,), "float32"),
        Cmax: T.Tensor((N,), "float32"),
        Cmin: T.Tensor((N,), "float32"),
        Cpow: T.Tensor((N,), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                a = A[bx * block + i]
                b = B[bx * block + i]
                Cmax[bx * block + i] = T.max(a, b)
                Cmin[bx * block + i] = T.min(a, b)
                Cpow[bx * block + i] = T.pow(T.abs(a) + 0.5, b)

    return main


def test_binary_max_min_pow(dev):
    a = torch.randn(N, device=dev)
    b = torch.randn(N, device=dev)
    cmax, cmin, cpow = k_binary(N, BLOCK)(a, b)
    ad, bd = a.double(), b.double()
    assert_equal(cmax, torch.maximum(a, b))
    assert_equal(cmin, torch.minimum(a, b))
    assert_close(cpow, torch.pow(ad.abs() + 0.5, bd), 1e-5, 1e-5)


@tilelang.jit(out_idx=[-1])
def k_pow_of_a_literal(N, block, base=10000):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N, 3), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                k = bx * block + i
                C[k, 0] = T.pow(base, -T.cast(k, "float32") / N)  # RoPE's inverse frequencies
                C[k, 1] = T.pow(2.5, A[k])
                C[k, 2] = T.pow(base, 0.5) * A[k]

    return main


def test_pow_of_a_literal_base(dev):
    a = torch.randn(N, device=dev)
    c = k_pow_of_a_literal(N, BLOCK)(a)
    k = torch.arange(N, device=dev, dtype=torch.float64)
    assert_close(c[:, 0], torch.pow(10000.0, -k / N), 1e-5, 1e-5)
    assert_close(c[:, 1], torch.pow(2.5, a.double()), 1e-5, 1e-5)
    assert_close(c[:, 2], 100.0 * a.double(), 1e-5, 1e-5)


@tilelang.jit(out_idx=[-1])
def k_pow_of_negative_bases(N, block):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), E: T.Tensor((N,), "float32"), C: T.Tensor((N, 2), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                k = bx * block + i
                C[k, 0] = T.pow(A[k], E[k])
                C[k, 1] = T.pow(-1, k)  # alternating signs

    return main


def test_pow_of_negative_bases_as_c(dev):
    """C's powf: an odd integer power of a negative base is negative, a non-integer one NaN, and
    pow(x, 0) is 1 (exp2(y * log2(x)) gives NaN for every negative base)."""
    a = torch.randn(N, device=dev) * 3
    e = torch.randint(-4, 5, (N,), device=dev).float()
    e[::5] += 0.5  # non-integer powers
    e[::7] = 0.0
    c = k_pow_of_negative_bases(N, BLOCK)(a, e)
    want = torch.pow(a.double(), e.double())
    assert torch.equal(c[:, 0].isnan(), want.isnan())
    assert_close(c[:, 0].nan_to_num(), want.nan_to_num(), 1e-5, 1e-5)
    k = torch.arange(N, device=dev)
    assert torch.equal(c[:, 1], torch.where(k % 2 == 1, -1.0, 1.0))


@tilelang.jit(out_idx=[-1])
def k_math_fp16(N, block):
    @T.prim_func
    def main(A: T.Tensor((N,), "float16"), C: T.Tensor((N,), "float16")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = T.exp(A[bx * block + i]) + T.sqrt(T.abs(A[bx * block + i]))

    return main


def test_math_on_fp16(dev):
    a = torch.randn(N, device=dev).half()
    c = k_math_fp16(N, BLOCK)(a)
    assert c.dtype == torch.float16
    ad = a.double()
    assert_close(c, torch.exp(ad) + torch.sqrt(ad.abs()), 1e-2, 1e-2)


@tilelang.jit(out_idx=[-4, -3, -2, -1])
def k_casts(N, block):
    @T.prim_func
    def main(
        A: T.Tensor((N,), "float32"),
        I: T.Tensor((N,), "int32"),
        C_i: T.Tensor((N,), "int32"),
        C_h: T.Tensor((N,), "float16"),
        C_f: T.Tensor((N,), "float32"),
        C_b: T.Tensor((N,), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                C_i[bx * block + i] = T.cast(A[bx * block + i], "int32")  # truncation
                C_h[bx * block + i] = A[bx * block + i].astype("float16")
                C_f[bx * block + i] = T.cast(I[bx * block + i], "float32") / 4.0  # true division
                C_b[bx * block + i] = A[bx * block + i].astype("bfloat16").astype("float32")

    return main


def test_cast_and_astype(dev):
    a = torch.randn(N, device=dev) * 50.0
    ii = torch.randint(-1000, 1000, (N,), device=dev, dtype=torch.int32)
    ci, ch, cf, cb = k_casts(N, BLOCK)(a, ii)
    assert ci.dtype == torch.int32 and ch.dtype == torch.float16
    assert_equal(ci, a.to(torch.int32))
    assert_equal(ch, a.half())
    assert_close(cf, ii.double() / 4.0, 0, 0)
    assert_equal(cb, a.bfloat16().float())


@tilelang.jit(out_idx=[-3, -2, -1])
def k_intdiv(N, block, d):
    @T.prim_func
    def main(
        A: T.Tensor((N,), "int32"), Q: T.Tensor((N,), "int32"), R: T.Tensor((N,), "int32"), CD: T.Tensor((N,), "int32")
    ):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                Q[bx * block + i] = A[bx * block + i] // d  # floor division (Python semantics)
                R[bx * block + i] = A[bx * block + i] % d  # floor modulo
                CD[bx * block + i] = T.ceildiv(T.abs(A[bx * block + i]), 7)

    return main


@pytest.mark.parametrize("d", [7, -5])
def test_integer_floordiv_mod_ceildiv(dev, d):
    a = torch.randint(-100, 100, (N,), device=dev, dtype=torch.int32)
    q, r, cd = k_intdiv(N, BLOCK, d)(a)
    al = a.long().cpu()
    assert_equal(q, torch.div(al, d, rounding_mode="floor"))
    assert_equal(r, torch.remainder(al, d))
    assert_equal(cd, (al.abs() + 6) // 7)


@tilelang.jit(out_idx=[-1])
def k_flat_index(M, Ncols, block):
    # // and % on the index expression: a 2-D tensor walked by a flat 1-D parallel loop
    @T.prim_func
    def main(A: T.Tensor((M, Ncols), "float32"), C: T.Tensor((M, Ncols), "float32")):
        with T.Kernel(T.ceildiv(M * Ncols, block), threads=128) as bx:
            for t in T.Parallel(block):
                idx = bx * block + t
                r = idx // Ncols
                c = idx % Ncols
                if idx < M * Ncols:
                    C[r, c] = A[r, c] + r * 0.25 - c

    return main


def test_integer_div_mod_in_indices(dev):
    M, Nc = 37, 53
    a = torch.randn(M, Nc, device=dev)
    c = k_flat_index(M, Nc, BLOCK)(a)
    r = torch.arange(M, dtype=torch.float64)[:, None]
    col = torch.arange(Nc, dtype=torch.float64)[None, :]
    assert_close(c, a.double().cpu() + r * 0.25 - col, 1e-5, 1e-6)


@tilelang.jit(out_idx=[-1])
def k_infinity(N, block):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = T.if_then_else(
                    A[bx * block + i] > 0, T.infinity("float32"), T.max(A[bx * block + i], -T.infinity("float32"))
                )

    return main


def test_infinity(dev):
    a = torch.randn(N, device=dev)
    c = k_infinity(N, BLOCK)(a)
    ref = torch.where(a > 0, torch.tensor(math.inf, device=dev), a)
    assert_equal(c, ref)


def test_ceildiv_host_side():
    assert T.ceildiv(300, 128) == 3
    assert T.ceildiv(256, 128) == 2
    assert T.ceildiv(1, 64) == 1


@tilelang.jit(out_idx=[-1])
def k_bf16_arith(M, Ncols, bm, bn):
    @T.prim_func
    def main(
        A: T.Tensor((M, Ncols), "bfloat16"), B: T.Tensor((M, Ncols), "bfloat16"), C: T.Tensor((M, Ncols), "bfloat16")
    ):
        with T.Kernel(T.ceildiv(Ncols, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_f = T.alloc_fragment((bm, bn), "bfloat16")
            s = T.alloc_fragment((bm,), "float32")
            T.copy(A[by * bm, bx * bn], A_f)
            T.reduce_sum(A_f, s, dim=1)
            for i, j in T.Parallel(bm, bn):
                C[by * bm + i, bx * bn + j] = A_f[i, j] * B[by * bm + i, bx * bn + j] + T.exp(A_f[i, j]) - s[i] * 0.125

    return main


def test_bf16_arithmetic(dev):
    # bf16 element math and reduction (Triton's interpreter gets bf16 arithmetic wrong: triton#11584)
    M, Nc, bm, bn = 70, 90, 32, 32
    a = torch.randn(M, Nc, device=dev).bfloat16()
    b = torch.randn(M, Nc, device=dev).bfloat16()
    c = k_bf16_arith(M, Nc, bm, bn)(a, b)
    assert c.dtype == torch.bfloat16
    ad, bd = a.double().cpu(), b.double().cpu()
    pad = torch.zeros(M, 3 * bn, dtype=torch.float64)
    pad[:, :Nc] = ad
    s = pad.view(M, 3, bn).sum(2).repeat_interleave(bn, dim=1)[:, :Nc]  # per-tile row sums
    assert_close(c, ad * bd + torch.exp(ad) - s * 0.125, 1e-1, 3e-2)
