"""A register tile read at digit fields of lane variables (TILE2TRITON_DIGIT_READS): ``B[i, j // 2]``
(a packed byte's two nibbles), ``E[i, k // 16]`` and ``A[i, k // 4 * 2 + 1]`` (T.gemm_sp's
decompression), ``F[k >> 2, k & 3]``, ``X[i, k % 4]``: a reshape, ``tl.split`` / ``tl.join`` and a
broadcast over the digits instead of a ``tl.gather`` or a one-hot select.  Offline (Triton 3.6,
sm_90), example_dequant_gemm_fp4_hopper's loop lost its 64 shuffles a thread, and gemm_sp's kernel went
from 3408 instructions with 344 bytes of stack to 1392 with none."""

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T


def _code(kernel) -> str:
    src = kernel.get_kernel_source(interpret=False)
    return "\n".join(line for line in src.splitlines() if not line.strip().startswith("#"))


def nibbles(M, N, bm, bn):
    """Each byte of P holds two 4-bit values (low nibble first): out = value * 0.5 - 3."""

    @T.prim_func
    def main(P: T.Tensor((M, N // 2), "uint8"), O: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            packed = T.alloc_fragment((bm, bn // 2), "uint8")
            out = T.alloc_fragment((bm, bn), "float32")
            T.copy(P[by * bm, bx * bn // 2], packed)
            for i, j in T.Parallel(bm, bn):
                out[i, j] = T.Cast("float32", (packed[i, j // 2] >> ((j % 2) * 4)) & 15) * 0.5 - 3.0
            T.copy(out, O[by * bm, bx * bn])

    return main


def sparse_rows(M, K, bm, bk):
    """T.gemm_sp's decompression written out: per group of 4 columns, 2 kept values of A and a 4-bit
    code in E (4 codes an int16) naming their positions; out is the dense row."""

    @T.prim_func
    def main(A: T.Tensor((M, K // 2), "float16"), E: T.Tensor((M, K // 16), "int16"), O: T.Tensor((M, K), "float16")):
        with T.Kernel(T.ceildiv(K, bk), T.ceildiv(M, bm), threads=128) as (bx, by):
            a = T.alloc_shared((bm, bk // 2), "float16")
            e = T.alloc_shared((bm, bk // 16), "int16")
            dense = T.alloc_fragment((bm, bk), "float16")
            T.copy(A[by * bm, bx * bk // 2], a)
            T.copy(E[by * bm, bx * bk // 16], e)
            for i, k in T.Parallel(bm, bk):
                code = (T.Cast("int32", e[i, k // 16]) >> (k // 4 % 4 * 4)) & 15
                dense[i, k] = T.if_then_else(
                    (code & 3) == k % 4,
                    a[i, k // 4 * 2],
                    T.if_then_else((code >> 2) & 3 == k % 4, a[i, k // 4 * 2 + 1], 0),
                )
            T.copy(dense, O[by * bm, bx * bk])

    return main


def fields(n, rows):
    """out[r, k] = F[k >> 2, k & 3] + G[r, k % 4] * 2 (lanes k of extent n, F of n / 4 x 4)."""

    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((rows, 4), "float32"), O: T.Tensor((rows, n), "float32")):
        with T.Kernel(1, threads=128):
            f = T.alloc_fragment((n // 4, 4), "float32")
            g = T.alloc_fragment((rows, 4), "float32")
            out = T.alloc_fragment((rows, n), "float32")
            for k in T.Parallel(n):
                f[k // 4, k % 4] = X[k]
            T.copy(Y, g)
            for r, k in T.Parallel(rows, n):
                out[r, k] = f[k >> 2, k & 3] + g[r, k % 4] * 2.0
            T.copy(out, O)

    return main


def staged(M, N, bm, bn, atom):
    """example_gemm_intrinsics' epilogue: a tile stored into a 4-D shared buffer of atom x atom blocks at
    [i // atom, j // atom, i % atom, j % atom], read back at the same positions through lets, then out."""

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), O: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            tile = T.alloc_fragment((bm, bn), "float32")
            blocks = T.alloc_shared((bm // atom, bn // atom, atom, atom), "float16")
            T.copy(X[by * bm, bx * bn], tile)
            for i, j in T.Parallel(bm, bn):
                blocks[i // atom, j // atom, i % atom, j % atom] = tile[i, j] * 3.0
            for i, j in T.Parallel(bm, bn):
                bi, ii = i // atom, i % atom
                O[by * bm + i, bx * bn + j] = blocks[bi, j // atom, ii, j % atom] + 1.0

    return main


def interleaved(n):
    """out = [x0, y0, x1, y1, ...]: a T.Parallel(n, 2) writing F[k * 2 + c], then F copied out."""

    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32"), O: T.Tensor((2 * n,), "float32")):
        with T.Kernel(1, threads=64):
            f = T.alloc_fragment((2 * n,), "float32")
            for k, c in T.Parallel(n, 2):
                f[k * 2 + c] = T.if_then_else(c == 0, X[k], Y[k] * -2.0)
            T.copy(f, O)

    return main


@pytest.mark.parametrize("M,N,bm,bn", [(37, 70, 16, 32), (50, 22, 32, 64), (29, 50, 24, 24)])
@pytest.mark.parametrize("switch", ["1", "0"])
def test_nibble_reads(dev, monkeypatch, M, N, bm, bn, switch):
    monkeypatch.setenv("TILE2TRITON_DIGIT_READS", switch)
    torch.manual_seed(M * N)
    kernel = tilelang.jit(nibbles)(M, N, bm, bn)
    packed = torch.randint(0, 256, (M, N // 2), dtype=torch.uint8).to(dev)
    out = poison((M, N), device=dev)
    kernel(packed, out)
    p = packed.cpu().long()
    values = torch.stack([p & 15, p >> 4], dim=-1).reshape(M, N).double()
    assert_close(out, values * 0.5 - 3, atol=0, rtol=0)
    code = _code(kernel)
    if switch == "1" and bn & (bn - 1) == 0:  # each byte joined with itself: its nibbles' two lanes
        assert "tl.join(packed, packed)" in code and "tl.gather" not in code, code


def _sparse_inputs(M, K, seed):
    gen = torch.Generator().manual_seed(seed)
    groups = K // 4
    # two distinct positions per group of 4, in increasing order (2:4 sparsity's format)
    pairs = torch.tensor([(p, q) for p in range(4) for q in range(p + 1, 4)])
    choice = pairs[torch.randint(0, len(pairs), (M, groups), generator=gen)]
    codes = choice[..., 0] | (choice[..., 1] << 2)  # 4 bits a group
    e = torch.zeros(M, K // 16, dtype=torch.int32)
    for c in range(4):
        e |= codes[:, c::4] << (4 * c)
    e = torch.where(e >= 1 << 15, e - (1 << 16), e).to(torch.int16)
    a = torch.randn(M, K // 2, generator=gen).half()
    dense = torch.zeros(M, groups, 4, dtype=torch.float64)
    kept = a.double().view(M, groups, 2)
    dense.scatter_(2, choice, kept)
    return a, e, dense.view(M, K)


@pytest.mark.parametrize("M,K,bm,bk", [(37, 96, 16, 64), (20, 160, 32, 32), (21, 144, 16, 48)])
@pytest.mark.parametrize("switch", ["1", "0"])
def test_sparse_row_reads(dev, monkeypatch, M, K, bm, bk, switch):
    monkeypatch.setenv("TILE2TRITON_DIGIT_READS", switch)
    a, e, expected = _sparse_inputs(M, K, M + K)
    kernel = tilelang.jit(sparse_rows)(M, K, bm, bk)
    out = poison((M, K), dtype=torch.float16, device=dev)
    kernel(a.to(dev), e.to(dev), out)
    assert_close(out, expected, atol=0, rtol=0)
    code = _code(kernel)
    if switch == "1" and bk & (bk - 1) == 0:  # a tile of 48 columns keeps the gathers
        assert "tl.gather" not in code and "tl.split(tl.reshape(a, " in code, code


@pytest.mark.parametrize("n,rows", [(64, 3), (32, 5)])
@pytest.mark.parametrize("switch", ["1", "0"])
def test_field_reads(dev, monkeypatch, n, rows, switch):
    monkeypatch.setenv("TILE2TRITON_DIGIT_READS", switch)
    torch.manual_seed(n + rows)
    kernel = tilelang.jit(fields)(n, rows)
    x = torch.randn(n, device=dev)
    y = torch.randn(rows, 4, device=dev)
    out = poison((rows, n), device=dev)
    kernel(x, y, out)
    k = torch.arange(n)
    expected = x.double().cpu()[None, :] + y.double().cpu()[:, k % 4] * 2
    assert_close(out, expected, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("M,N,bm,bn,atom", [(37, 70, 32, 64, 16), (50, 22, 16, 32, 8)])
@pytest.mark.parametrize("switch", ["1", "0"])
def test_staged_blocks(dev, monkeypatch, M, N, bm, bn, atom, switch):
    monkeypatch.setenv("TILE2TRITON_DIGIT_READS", switch)
    torch.manual_seed(M + N + atom)
    kernel = tilelang.jit(staged)(M, N, bm, bn, atom)
    x = torch.randn(M, N, device=dev)
    out = poison((M, N), dtype=torch.float16, device=dev)
    kernel(x, out)
    expected = (x.cpu().double() * 3).half().double() + 1
    assert_close(out, expected, atol=2e-3, rtol=2e-3)
    if switch == "1":  # the block buffer is the tile's digits permuted, in registers, both ways
        code = _code(kernel)
        assert "scratch" not in code and "tl.gather" not in code and "_hit" not in code, code


@pytest.mark.parametrize("n", [16, 64])
@pytest.mark.parametrize("switch", ["1", "0"])
def test_interleaved_write(dev, monkeypatch, n, switch):
    monkeypatch.setenv("TILE2TRITON_DIGIT_READS", switch)
    torch.manual_seed(n)
    kernel = tilelang.jit(interleaved)(n)
    x, y = torch.randn(n, device=dev), torch.randn(n, device=dev)
    out = poison((2 * n,), device=dev)
    kernel(x, y, out)
    expected = torch.stack([x.cpu().double(), y.cpu().double() * -2], dim=1).reshape(-1)
    assert_close(out, expected, atol=0, rtol=0)
    if switch == "1":
        assert "_hit" not in _code(kernel)
