"""float8_e8m0fnu wherever a dtype can appear: shared, fragment and local buffers, tile copies
with casts both ways (TileLang's vectorized-cast test copies float32 / bfloat16 / float64 into
it and it into bfloat16), T.fill, reductions, and shared buffers kept in global scratch.  Casts
to it round up to a power of two (CUDA's satfinite, round toward +inf conversion that
TileLang's ``__tl_cvt_*_to_e8m0`` call), from a double by its own bits."""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T

E8M0 = T.float8_e8m0fnu


def e8m0_value(codes: torch.Tensor) -> torch.Tensor:
    """The value of e8m0 bytes: 2**(code - 127), 0xFF NaN (float64)."""
    e = codes.to(torch.int32)
    v = torch.exp2((e - 127).double())
    return torch.where(e == 255, torch.full_like(v, float("nan")), v)


def e8m0_round(x: torch.Tensor) -> torch.Tensor:
    """2**ceil(log2|x|) clamped to [2**-127, 2**127] (0 gives 2**-127), NaN stays NaN; exact in float64."""
    a = x.double().abs()
    mantissa, exponent = torch.frexp(a)
    e = torch.where(mantissa == 0.5, exponent - 1, exponent).double()
    e = torch.where(a > 0, e, torch.full_like(e, -127.0)).clamp(-127, 127)
    out = torch.exp2(e)
    out = torch.where(torch.isinf(a), torch.full_like(out, 2.0**127), out)
    return torch.where(torch.isnan(a), a, out)


def e8m0_empty(shape, dev):
    return torch.full(shape, 0x5A, dtype=torch.uint8, device=dev).view(torch.float8_e8m0fnu)  # a wrong value


@tilelang.jit
def copy_cast(M, dtype_a, dtype_b):
    @T.prim_func
    def main(A: T.Tensor((M,), dtype_a), B: T.Tensor((M,), dtype_b)):
        with T.Kernel(1, threads=128):
            T.copy(A, B)

    return main


@tilelang.jit
def parallel_cast(M, dtype_a, dtype_b, block=64):
    @T.prim_func
    def main(A: T.Tensor((M,), dtype_a), B: T.Tensor((M,), dtype_b)):
        with T.Kernel(T.ceildiv(M, block), threads=128) as bx:
            A_local = T.alloc_fragment((block,), dtype_a)
            B_local = T.alloc_fragment((block,), dtype_b)
            T.copy(A[bx * block], A_local)
            for i in T.Parallel(block):
                B_local[i] = A_local[i]
            T.copy(B_local, B[bx * block])

    return main


def awkward_values(n, dtype, dev):
    """Random magnitudes over many binades, plus the edge cases of the rounding."""
    g = torch.Generator().manual_seed(n)
    x = torch.randn(n, generator=g, dtype=torch.float64) * torch.exp2(torch.randint(-60, 60, (n,), generator=g).double())
    edges = [0.0, 3.0, -0.75, 2.0**-127, 2.0**-128, 1e-45, 2.0**127 * 1.5, float("inf"), float("nan"), 1.0]
    if dtype == torch.float64:  # above a power of two by less than float32 can tell: still rounds up
        edges += [2.0**10 * (1 + 2.0**-40), 2.0**-127 * (1 + 2.0**-30), 1e-60, 1e60]
    x[: len(edges)] = torch.tensor(edges, dtype=torch.float64)
    return x.to(dtype).to(dev)


@pytest.mark.parametrize("kernel", [copy_cast, parallel_cast], ids=["copy", "parallel"])
@pytest.mark.parametrize("src", [T.float32, T.bfloat16, T.float64, T.float16])
def test_cast_to_e8m0(dev, kernel, src):
    M = 150
    a = awkward_values(M, src.as_torch(), dev)
    b = e8m0_empty((M,), dev)
    kernel(M, src, E8M0)(a, b)
    got, ref = e8m0_value(b.view(torch.uint8).cpu()), e8m0_round(a.cpu())
    assert torch.equal(torch.isnan(got), torch.isnan(ref))  # NaN in, the NaN code out
    assert_close(got[ref == ref], ref[ref == ref], atol=0, rtol=0)


@pytest.mark.parametrize("kernel", [copy_cast, parallel_cast], ids=["copy", "parallel"])
@pytest.mark.parametrize("dst", [T.float32, T.bfloat16, T.float64])
def test_cast_from_e8m0(dev, kernel, dst):
    M = 150
    g = torch.Generator().manual_seed(3)
    codes = torch.randint(1, 256, (M,), generator=g, dtype=torch.uint8)
    codes[:3] = torch.tensor([1, 254, 255], dtype=torch.uint8)  # smallest normal, largest, NaN
    if not (dev == "cpu" and dst == T.bfloat16):
        # 2**-127 (code 0) is a bfloat16 subnormal: the interpreter's float32 -> bfloat16 store flushes it
        codes[3] = 0
    b = torch.full((M,), float("nan"), dtype=dst.as_torch(), device=dev)
    kernel(M, E8M0, dst)(codes.to(dev).view(torch.float8_e8m0fnu), b)
    ref = e8m0_value(codes)
    assert torch.isnan(b[2]).item()
    assert_close(b.cpu()[ref == ref], ref[ref == ref], atol=0, rtol=0)


@tilelang.jit
def scaled(M, N, bm=16):
    @T.prim_func
    def main(
        X: T.Tensor((M, N), T.float32),
        S: T.Tensor((M, N), E8M0),
        Y: T.Tensor((M, N), E8M0),
        Z: T.Tensor((M, N), T.float32),
        R: T.Tensor((M,), E8M0),
        F: T.Tensor((M, N), E8M0),
    ):
        with T.Kernel(T.ceildiv(M, bm), threads=64) as bx:
            S_shared = T.alloc_shared((bm, N), E8M0)
            Y_frag = T.alloc_fragment((bm, N), E8M0)
            R_frag = T.alloc_fragment((bm,), E8M0)
            F_shared = T.alloc_shared((bm, N), E8M0)
            unit = T.alloc_var(E8M0)
            unit = 0.75  # a constant rounds as at run time: 1.0
            T.copy(S[bx * bm, 0], S_shared)
            for i, j in T.Parallel(bm, N):
                Y_frag[i, j] = X[bx * bm + i, j] * S_shared[i, j] * unit  # rounds on the way in
            T.copy(Y_frag, Y[bx * bm, 0])
            T.reduce_max(Y_frag, R_frag, dim=1)
            T.copy(R_frag, R[bx * bm])
            for i, j in T.Parallel(bm, N):
                Z[bx * bm + i, j] = T.cast(S_shared[i, j], T.float32) * 0.5
            T.fill(F_shared, 3.0)  # 4.0
            T.copy(F_shared, F[bx * bm, 0])

    return main


@pytest.mark.parametrize("scratch", [False, True], ids=["registers", "scratch"])
def test_e8m0_onchip_buffers(dev, scratch, monkeypatch):
    if scratch:  # the shared buffers in global scratch: their whole-tile loads and stores decode/encode
        monkeypatch.setenv("TILE2TRITON_SHARED_SCRATCH", "1")
    M, N = 37, 20
    g = torch.Generator().manual_seed(1)
    X = (torch.randn(M, N, generator=g) * 7).to(dev)
    codes = torch.randint(100, 150, (M, N), generator=g, dtype=torch.uint8)
    S = codes.to(dev).view(torch.float8_e8m0fnu)
    Y, F, R = e8m0_empty((M, N), dev), e8m0_empty((M, N), dev), e8m0_empty((M,), dev)
    Z = torch.full((M, N), float("nan"), device=dev)
    kernel = scaled(M, N)
    if scratch:
        kernel = tilelang.compile(kernel.prim_func)  # lowered afresh under the environment variable
    kernel(X, S, Y, Z, R, F)
    s = e8m0_value(codes)
    y_ref = e8m0_round(X.cpu().double() * s)
    assert_close(e8m0_value(Y.view(torch.uint8).cpu()), y_ref, atol=0, rtol=0)
    assert_close(Z, s * 0.5, atol=0, rtol=0)
    assert_close(e8m0_value(R.view(torch.uint8).cpu()), y_ref.max(dim=1).values, atol=0, rtol=0)
    assert_close(e8m0_value(F.view(torch.uint8).cpu()), torch.full((M, N), 4.0, dtype=torch.float64), atol=0, rtol=0)


def test_e8m0_onchip_compiles_for_hopper(tmp_path):
    from test_fuzz_regressions import compile_for_hopper

    compile_for_hopper(scaled(37, 20), tmp_path)
    compile_for_hopper(parallel_cast(150, T.float64, E8M0), tmp_path)  # the float64 rounding branch
    compile_for_hopper(copy_cast(150, E8M0, T.bfloat16), tmp_path)


@tilelang.jit(out_idx=[1])
def padded_scales(n, block=64):
    @T.prim_func
    def main(S: T.Tensor((n,), E8M0), Out: T.Tensor((T.ceildiv(n, block) * block,), T.float32)):
        with T.Kernel(T.ceildiv(n, block), threads=64) as bx:
            T.annotate_safe_value({S: 3.0})  # past the end: the scale 4.0 (3 rounded up)
            S_frag = T.alloc_fragment((block,), E8M0)
            T.copy(S[bx * block], S_frag)
            for i in T.Parallel(block):
                Out[bx * block + i] = T.cast(S_frag[i], T.float32)

    return main


def test_e8m0_safe_value(dev):
    n = 70
    codes = torch.randint(100, 150, (n,), dtype=torch.uint8)
    out = padded_scales(n)(codes.to(dev).view(torch.float8_e8m0fnu))
    ref = torch.full((128,), 4.0, dtype=torch.float64)
    ref[:n] = e8m0_value(codes)
    assert_close(out, ref, atol=0, rtol=0)


@tilelang.jit(out_idx=[1, 2])
def sums(n):
    @T.prim_func
    def main(S: T.Tensor((n, 12), E8M0), Y: T.Tensor((n,), E8M0), Z: T.Tensor((n, 12), E8M0)):
        with T.Kernel(n, threads=32) as bx:
            s = T.alloc_fragment((12,), E8M0)
            r = T.alloc_fragment((1,), E8M0)
            z = T.alloc_fragment((12,), E8M0)
            T.copy(S[bx, 0], s)
            T.reduce_sum(s, r, dim=0)  # a sum is off the grid: stored rounded up
            Y[bx] = r[0]
            for i in T.Parallel(12):
                z[i] = s[i] + s[i] * T.cast(3, E8M0)  # the constant is 4.0; each result rounds up
            T.copy(z, Z[bx, 0])

    return main


def test_e8m0_sums_and_constants(dev):
    n = 9
    codes = torch.randint(120, 136, (n, 12), dtype=torch.uint8)  # sums exact in float32
    y, z = sums(n)(codes.to(dev).view(torch.float8_e8m0fnu))
    s = e8m0_value(codes)
    assert_close(e8m0_value(y.view(torch.uint8).cpu()), e8m0_round(s.sum(dim=1)), atol=0, rtol=0)
    assert_close(e8m0_value(z.view(torch.uint8).cpu()), e8m0_round(s + s * 4), atol=0, rtol=0)
