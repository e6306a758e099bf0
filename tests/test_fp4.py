"""Packed fp4 (``T.float4_e2m1fn``): tensors of it are bytes holding two values each, the element of
even index in the low nibble (TileLang's packing); loads decode e2m1, stores and casts round to
nearest even (saturating at 6) and write one nibble each.  The references decode and encode in
float64 with torch, independently of the kernels (codegen/fp4.py)."""

import pytest
import torch
from t2t_util import assert_close
from test_fuzz_regressions import compile_for_hopper

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.errors import KernelCallError, TileLangCompileError

FP4 = T.float4_e2m1fn
GRID = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=torch.float64)


def decode_ref(storage: torch.Tensor) -> torch.Tensor:
    """The logical fp4 values (float64) of packed bytes: last dim doubled, low nibble first."""
    b = storage.cpu().view(torch.uint8).to(torch.int64)
    codes = torch.stack([b & 15, b >> 4], dim=-1).reshape(*b.shape[:-1], 2 * b.shape[-1])
    mag = GRID[codes & 7]
    return torch.where(codes >= 8, -mag, mag)


def encode_ref(x: torch.Tensor) -> torch.Tensor:
    """fp4 codes of ``x``: nearest grid value, ties to the even code, saturating at 6."""
    x = x.cpu().double()
    a = x.abs().clamp(max=6.0)
    dist = (a[..., None] - GRID).abs()
    best = dist.min(dim=-1, keepdim=True).values
    ties = dist == best
    code = torch.arange(8).expand_as(dist)
    # among the nearest codes, the even one (two nearest codes are adjacent: one is even)
    pick = torch.where(ties & (code % 2 == 0), code, torch.full_like(code, 99)).min(dim=-1).values
    only = torch.where(ties, code, torch.full_like(code, 99)).min(dim=-1).values
    code = torch.where(pick == 99, only, pick)
    return torch.where(torch.signbit(x), code + 8, code)


def pack_ref(codes: torch.Tensor) -> torch.Tensor:
    c = codes.reshape(*codes.shape[:-1], codes.shape[-1] // 2, 2)
    return (c[..., 0] | (c[..., 1] << 4)).to(torch.uint8)


@tilelang.jit
def dequant(M, N, bm, bn, out_dtype):
    @T.prim_func
    def main(A: T.Tensor((M, N), FP4), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            for i, j in T.Parallel(bm, bn):
                C[by * bm + i, bx * bn + j] = A[by * bm + i, bx * bn + j]

    return main


@pytest.mark.parametrize("out_dtype", ["float32", "float16"])
@pytest.mark.parametrize("m, n", [(37, 58), (5, 130)])
def test_fp4_loads_decode_every_code(dev, m, n, out_dtype):
    packed = torch.randint(0, 256, (m, n // 2), dtype=torch.uint8, device=dev)
    packed.view(-1)[:256] = torch.arange(256, dtype=torch.uint8)[: packed.numel()]  # every byte value
    C = torch.full((m, n), float("nan"), dtype=getattr(torch, out_dtype), device=dev)
    dequant(m, n, 16, 32, out_dtype)(packed.view(torch.int8), C)
    assert_close(C, decode_ref(packed), atol=0, rtol=0)


@tilelang.jit
def quant_strided(M, N, bm, bn):
    S = T.dynamic("S")

    @T.prim_func
    def main(X: T.Tensor((M, N), T.float32), Q: T.StridedTensor((M, N), (S, 1), FP4)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            x_local = T.alloc_fragment((bm, bn), T.float32)
            q_local = T.alloc_fragment((bm, bn), FP4)
            T.copy(X[by * bm, bx * bn], x_local)
            for i, j in T.Parallel(bm, bn):
                q_local[i, j] = x_local[i, j] * 2.0
            T.copy(q_local, Q[by * bm, bx * bn])

    return main


def _values(m, n, dev):
    x = torch.randn(m, n, dtype=torch.float64) * 3
    ties = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0, 100.0, -0.1, -0.25, -5.0, -3.5])
    x.view(-1)[: ties.numel()] = ties.double() / 2  # exact ties (after * 2), saturation, -0
    return x.float().to(dev)


@pytest.mark.parametrize("m, n", [(23, 70), (40, 34)])
def test_fp4_stores_round_to_nearest_even_into_a_row_slice(dev, m, n):
    """A fragment of fp4 written to a tensor whose rows are slices of a wider byte buffer: the
    bytes between the rows keep their sentinel, every nibble of a row is written."""
    X = _values(m, n, dev)
    back = torch.full((m, n // 2 + 3), 0xA5, dtype=torch.uint8, device=dev)
    Q = back[:, : n // 2]
    quant_strided(m, n, 16, 32)(X, Q)
    want = back.cpu().clone()
    want[:, : n // 2] = pack_ref(encode_ref(X.double() * 2))
    assert torch.equal(back.cpu(), want), f"{(back.cpu() != want).sum().item()} bytes differ"


@tilelang.jit
def quant_rows(M, N, bm, bn):
    @T.prim_func
    def main(X: T.Tensor((M, N), T.float32), Q: T.Tensor((M, N), FP4)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            q_local = T.alloc_fragment((bm, bn), FP4)
            for i, j in T.Parallel(bm, bn):
                q_local[i, j] = X[by * bm + i, bx * bn + j] * 2.0
            T.copy(q_local, Q[by * bm, bx * bn])

    return main


def test_fp4_tile_stores_of_whole_pairs_need_no_nibble_fallback(dev):
    """Columns from an even start along the contiguous dim, bounds proved, only rows masked (a partial last row
    block): every pair of lanes is one byte, stored whole, without the per-nibble atomics; a tensor whose row
    stride is a run-time value keeps them (its rows may start at an odd nibble)."""
    m, n = 23, 96
    X = _values(m, n, dev)
    Q = torch.full((m, n // 2), 0xA5, dtype=torch.uint8, device=dev)
    kernel = quant_rows(m, n, 16, 32)
    src = kernel.get_kernel_source()
    assert "_fp4_store(" not in src
    # the bytes' offsets are the rows' halved plus the pair number: contiguous to Triton, so stored as vectors
    assert "// 2 + tl.arange(0, 16)[None, :])" in src and "pair_offs" not in src
    kernel(X, Q)
    assert torch.equal(Q.cpu(), pack_ref(encode_ref(X.double() * 2)))
    assert "_fp4_store(" in quant_strided(m, n, 16, 32).get_kernel_source()


@tilelang.jit
def fp4_empty(x):
    M = T.dynamic("M")
    N = T.const("N")
    x: T.Tensor[(M, N), T.float32]
    q = T.empty((M, N), FP4)
    with T.Kernel(T.ceildiv(M, 16), threads=64) as bx:
        for i, j in T.Parallel(16, N):
            q[bx * 16 + i, j] = T.Cast(FP4, x[bx * 16 + i, j])
    return q


def test_fp4_empty_output_is_torch_storage(dev):
    x = _values(29, 46, dev)
    q = fp4_empty(x)
    storage = getattr(torch, "float4_e2m1fn_x2", torch.int8)
    assert q.dtype == storage and tuple(q.shape) == (29, 23)
    assert torch.equal(q.cpu().view(torch.uint8), pack_ref(encode_ref(x)))


def test_fp4_odd_last_dim_is_refused(dev):
    with pytest.raises(TileLangCompileError, match="fp4 tensor 'q' has an odd last dim 45"):
        fp4_empty(_values(29, 45, dev))


@tilelang.jit(out_idx=None)
def scatter_rows(src, dst, perm):
    n = T.dynamic("n")
    src: T.Tensor[(n, 46), FP4]
    dst: T.Tensor[(n, 46), FP4]
    perm: T.Tensor[(n,), T.int32]
    with T.Kernel(n, threads=32) as i:
        for k in T.serial(46):
            dst[perm[i], k] = src[i, k]


def test_fp4_single_element_stores_keep_the_other_nibble(dev):
    n = 13
    src = torch.randint(0, 256, (n, 23), dtype=torch.uint8, device=dev)
    dst = torch.full((n, 23), 0x5A, dtype=torch.uint8, device=dev)
    perm = torch.randperm(n, dtype=torch.int32).to(dev)
    scatter_rows(src, dst, perm)
    want = torch.empty_like(src.cpu())
    want[perm.cpu().long()] = src.cpu()
    assert torch.equal(dst.cpu(), want)


def test_fp4_binding_reads_the_packed_shape_and_strides(dev):
    @tilelang.jit
    def rows(x):
        m = T.dynamic("m")
        s = T.dynamic("s")
        x: T.StridedTensor[[m, 18], [s, 1], FP4]
        out = T.empty((m,), T.int32)
        with T.Kernel(1, threads=32):
            for i in T.serial(m):
                out[i] = s + m * 1000
        return out

    wide = torch.randint(0, 256, (14, 9), dtype=torch.uint8, device=dev)
    got = rows(wide[::2])  # 7 rows of 9 bytes, byte stride 18 -> fp4 stride 36
    assert got.cpu().tolist() == [36 + 7000] * 7


def test_fp4_wrong_storage_is_a_call_error(dev):
    A = torch.zeros(8, 5, device=dev)
    C = torch.zeros(8, 10, device=dev)
    with pytest.raises(KernelCallError, match="packed fp4.*torch.uint8, torch.int8.*got torch.float32"):
        dequant(8, 10, 16, 32, "float32")(A, C)
    with pytest.raises(KernelCallError, match=r"expects shape \(8, 10\).*fp4 shape \(8, 12\)"):
        dequant(8, 10, 16, 32, "float32")(torch.zeros(8, 6, dtype=torch.uint8, device=dev), C)


@tilelang.jit
def fp4_arith(N, bn):
    @T.prim_func
    def main(A: T.Tensor((N,), FP4), B: T.Tensor((N,), FP4), C: T.Tensor((N,), T.float32), D: T.Tensor((N,), FP4)):
        with T.Kernel(T.ceildiv(N, bn), threads=64) as bx:
            for i in T.Parallel(bn):
                C[bx * bn + i] = A[bx * bn + i] * 0.75 - B[bx * bn + i]  # float32: fp4 operands decoded
                D[bx * bn + i] = A[bx * bn + i] + B[bx * bn + i]  # fp4 + fp4 is fp4: rounded once

    return main


def test_fp4_arithmetic_runs_on_values_not_codes(dev):
    n = 90
    a = torch.randint(0, 256, (n // 2,), dtype=torch.uint8, device=dev)
    b = torch.randint(0, 256, (n // 2,), dtype=torch.uint8, device=dev)
    C = torch.full((n,), float("nan"), device=dev)
    D = torch.full((n // 2,), 0xA5, dtype=torch.uint8, device=dev)
    fp4_arith(n, 32)(a, b, C, D)
    assert_close(C, decode_ref(a) * 0.75 - decode_ref(b), atol=0, rtol=0)
    assert torch.equal(D.cpu(), pack_ref(encode_ref(decode_ref(a) + decode_ref(b))))


def test_fp4_reduction_is_refused():
    @tilelang.jit
    def row_sums(N):
        @T.prim_func
        def main(A: T.Tensor((N, N), FP4), C: T.Tensor((N,), T.float32)):
            with T.Kernel(1, threads=128):
                A_frag = T.alloc_fragment((N, N), FP4)
                C_frag = T.alloc_fragment((N,), T.float32)
                T.copy(A, A_frag)
                T.reduce_sum(A_frag, C_frag, dim=1)
                T.copy(C_frag, C)

        return main

    with pytest.raises(TileLangCompileError, match="fp4 buffer 'A_frag'.*T.copy it into a float16/float32"):
        row_sums(16).lowered(True)


@tilelang.jit
def staged_dequant(M, N, bm, bn):
    @T.prim_func
    def main(A: T.Tensor((M, N), FP4), C: T.Tensor((M, N), T.float16), D: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_shared = T.alloc_shared((bm, bn), FP4)
            C_frag = T.alloc_fragment((bm, bn), T.float16)
            D_frag = T.alloc_fragment((bm, bn), T.float32)
            T.copy(A[by * bm, bx * bn], A_shared)
            T.copy(A_shared, C_frag)  # fp4 -> float16 on the copy
            T.copy(A[by * bm, bx * bn], D_frag)  # straight from global
            for i, j in T.Parallel(bm, bn):
                D_frag[i, j] = D_frag[i, j] * 2.0 + A_shared[i, j]
            T.copy(C_frag, C[by * bm, bx * bn])
            T.copy(D_frag, D[by * bm, bx * bn])

    return main


@pytest.mark.parametrize("m, n", [(21, 66)])
def test_fp4_copies_through_shared_and_fragments(dev, m, n):
    packed = torch.randint(0, 256, (m, n // 2), dtype=torch.uint8, device=dev)
    C = torch.full((m, n), float("nan"), dtype=torch.float16, device=dev)
    D = torch.full((m, n), float("nan"), device=dev)
    staged_dequant(m, n, 16, 32)(packed, C, D)
    ref = decode_ref(packed)
    assert_close(C, ref, atol=0, rtol=0)
    assert_close(D, ref * 3, atol=0, rtol=0)

@tilelang.jit
def fp4_constants(N, bn):
    @T.prim_func
    def main(A: T.Tensor((N,), FP4), B: T.Tensor((N,), FP4), C: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, bn), threads=64) as bx:
            F = T.alloc_fragment((bn,), FP4)
            T.fill(F, 2.6)  # rounds to 3
            T.copy(F, A[bx * bn])
            for i in T.Parallel(bn):
                B[bx * bn + i] = T.float4_e2m1fn(-1.5)
                C[bx * bn + i] = F[i] + T.float4_e2m1fn(0.5)  # fp4 + fp4: 3.5 is a tie, rounds to 4

    return main


def test_fp4_constants_and_fill(dev):
    n = 38
    A = torch.zeros(n // 2, dtype=torch.uint8, device=dev)
    B = torch.zeros(n // 2, dtype=torch.uint8, device=dev)
    C = torch.full((n,), float("nan"), device=dev)
    fp4_constants(n, 16)(A, B, C)
    assert torch.equal(decode_ref(A), torch.full((n,), 3.0, dtype=torch.float64))
    assert torch.equal(decode_ref(B), torch.full((n,), -1.5, dtype=torch.float64))
    assert_close(C, torch.full((n,), 4.0), atol=0, rtol=0)


@tilelang.jit
def quant_shifted(M, N, bm, bn):
    @T.prim_func
    def main(X: T.Tensor((M, N), T.float32), Q: T.Tensor((M, N + 1), FP4)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            for i, j in T.Parallel(bm, bn):
                if by * bm + i < M and bx * bn + j < N:
                    Q[by * bm + i, bx * bn + j + 1] = X[by * bm + i, bx * bn + j]  # odd start: pairs straddle bytes

    return main


@pytest.mark.parametrize("m, n", [(19, 45), (9, 63)])
def test_fp4_tile_stores_at_an_odd_start_keep_the_first_nibble(dev, m, n):
    X = _values(m, n, dev)
    Q = torch.full((m, (n + 1) // 2), 0xA5, dtype=torch.uint8, device=dev)
    quant_shifted(m, n, 8, 32)(X, Q)
    codes = torch.cat([torch.full((m, 1), 0x5, dtype=torch.int64), encode_ref(X)], dim=1)  # 0x5: the old low nibble
    assert torch.equal(Q.cpu(), pack_ref(codes))


@tilelang.jit
def quant_some_columns(M, N, bm, bn):
    @T.prim_func
    def main(X: T.Tensor((M, N), T.float32), Q: T.Tensor((M, N), FP4)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            for i, j in T.Parallel(bm, bn):
                if (bx * bn + j) % 3 != 0:  # pairs whole, half-masked and fully masked in one store
                    Q[by * bm + i, bx * bn + j] = X[by * bm + i, bx * bn + j]

    return main


def test_fp4_tile_stores_with_masked_partners(dev):
    m, n = 21, 94
    X = _values(m, n, dev)
    Q = torch.full((m, n // 2), 0xA5, dtype=torch.uint8, device=dev)
    quant_some_columns(m, n, 16, 32)(X, Q)
    old = torch.tensor([5, 10]).repeat(n // 2).expand(m, n)  # the sentinel's nibbles, low first
    keep = (torch.arange(n) % 3 == 0).expand(m, n)
    assert torch.equal(Q.cpu(), pack_ref(torch.where(keep, old, encode_ref(X))))



def test_fp4_gemm_is_refused():
    @tilelang.jit
    def mm(N):
        @T.prim_func
        def main(A: T.Tensor((N, N), FP4), B: T.Tensor((N, N), T.float16), C: T.Tensor((N, N), T.float32)):
            with T.Kernel(1, threads=128):
                A_shared = T.alloc_shared((N, N), FP4)
                B_shared = T.alloc_shared((N, N), T.float16)
                C_frag = T.alloc_fragment((N, N), T.float32)
                T.copy(A, A_shared)
                T.copy(B, B_shared)
                T.clear(C_frag)
                T.gemm(A_shared, B_shared, C_frag)
                T.copy(C_frag, C)

        return main

    with pytest.raises(TileLangCompileError, match="T.gemm on fp4 buffer 'A_shared'.*T.copy it into a float16"):
        mm(16).lowered(True)



@tilelang.jit
def copy_rows_serially(n):
    @T.prim_func
    def main(src: T.Tensor((n, 46), FP4), dst: T.Tensor((n, 46), FP4)):
        with T.Kernel(n, threads=32) as i:
            for k in T.serial(46):
                dst[i, k] = src[i, k]  # one nibble at a time: scalar loads and atomics

    return main


def test_fp4_compiles_for_hopper(tmp_path):
    compile_for_hopper(quant_strided(23, 70, 16, 32), tmp_path)
    compile_for_hopper(dequant(37, 58, 16, 32, "float16"), tmp_path)
    compile_for_hopper(fp4_arith(90, 32), tmp_path)
    compile_for_hopper(staged_dequant(21, 66, 16, 32), tmp_path)
    compile_for_hopper(copy_rows_serially(13), tmp_path)
    compile_for_hopper(fp4_constants(38, 16), tmp_path)
    compile_for_hopper(quant_shifted(19, 45, 8, 32), tmp_path)
    compile_for_hopper(quant_some_columns(21, 94, 16, 32), tmp_path)
    # an element read out of a uint8 tile into another inside a loop (a tl.sum, 32 bits wide: converted back)
    compile_for_hopper(fp4_scalar_casts.compile([0.3, -2.6, 7.5]), tmp_path)


@tilelang.jit(out_idx=[-1])
def fp4_scalar_casts(values):
    """``T.cast(number, T.float4_e2m1fn)`` stored into shared and local fp4 buffers of an odd length
    (TileLang's components test of packed sub-byte allocations), read back as floats."""
    n = len(values)

    @T.prim_func
    def main(Out: T.Tensor((2, n), T.float32)):
        with T.Kernel(1, threads=32):
            S = T.alloc_shared((127,), FP4)
            L = T.alloc_local((127,), FP4)
            for k, v in enumerate(values):
                S[126 - k] = T.cast(v, FP4)
            for k in T.serial(n):
                L[k] = S[126 - k]
            for k in T.Parallel(n):
                Out[0, k] = S[126 - k]
                Out[1, k] = L[k]

    return main


def test_fp4_casts_of_numbers():
    # ties go to the even code (1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4), beyond 6 saturates
    values = [0.0, 0.3, 1.25, 1.75, 2.5, 3.5, 5.0, 7.5, -2.6, -0.75, 6.0]
    ref = GRID[encode_ref(torch.tensor(values)) & 7] * torch.tensor([-1.0 if v < 0 else 1.0 for v in values]).double()
    out = fp4_scalar_casts(values)()
    assert_close(out, torch.stack([ref, ref]), atol=0, rtol=0)
