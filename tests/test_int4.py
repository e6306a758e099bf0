"""Packed sub-byte integers (issue 26): ``T.int4`` and ``T.dtype("uint4")`` tensors are int8 / uint8
bytes holding two values each, the element of even index in the low nibble (TileLang's packing,
``_pack_int4`` of its sm75 gemm test).  As in TileLang's CUDA (``tl_int4_packed_load`` returns an
``int``), loads sign-extend int4, arithmetic runs in 32 bits without wrapping, and stores (to
tensors, to int4 fragments and to kernel-local names) keep the low 4 bits.  The references pack and unpack with torch."""

import pytest
import torch
from test_fuzz_regressions import compile_for_hopper

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.errors import KernelCallError, TileLangCompileError

pytestmark = pytest.mark.poison_empty  # outputs the runtime allocates start as NaN / a sentinel

INT4, UINT4 = T.int4, T.dtype("uint4")


def pack(values: torch.Tensor) -> torch.Tensor:
    """Two 4-bit values per byte, low nibble first (as TileLang's tests pack int4)."""
    v = values.to(torch.int16)
    return ((v[..., ::2] & 0x0F) | ((v[..., 1::2] & 0x0F) << 4)).to(torch.int8)


def unpack(packed: torch.Tensor, signed: bool) -> torch.Tensor:
    b = packed.cpu().view(torch.uint8).to(torch.int64)
    nib = torch.stack([b & 15, b >> 4], dim=-1).reshape(*b.shape[:-1], 2 * b.shape[-1])
    return torch.where(nib >= 8, nib - 16, nib) if signed else nib


def wrap(x: torch.Tensor, signed: bool) -> torch.Tensor:
    low = x.to(torch.int64) & 15
    return torch.where(low >= 8, low - 16, low) if signed else low


def _arith_kernel(M, N, bm, bn, dt):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), dt),
        B: T.Tensor((M, N), dt),
        C: T.Tensor((M, N), T.int32),
        F: T.Tensor((M, N), T.float32),
        D: T.Tensor((M, N), dt),
    ):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            a = T.alloc_fragment((bm, bn), dt)
            T.copy(A[by * bm, bx * bn], a)
            for i, j in T.Parallel(bm, bn):
                b = B[by * bm + i, bx * bn + j]
                C[by * bm + i, bx * bn + j] = a[i, j] * 3 + b - (a[i, j] < b)  # int32: no wrap
                F[by * bm + i, bx * bn + j] = T.Cast(T.float32, a[i, j]) * 0.5
                a[i, j] = a[i, j] * 5 + b  # an int4 fragment keeps the low 4 bits
            T.copy(a, D[by * bm, bx * bn])

    return main


@pytest.mark.parametrize("signed", [True, False], ids=["int4", "uint4"])
@pytest.mark.parametrize("m, n", [(19, 46), (5, 130)])
def test_int4_loads_arithmetic_and_stores(dev, m, n, signed):
    dt = INT4 if signed else UINT4
    kernel = tilelang.compile(_arith_kernel(m, n, 8, 32, dt))
    a_bytes = torch.randint(-128, 128, (m, n // 2), dtype=torch.int8)
    a_bytes.view(-1)[:256] = torch.arange(-128, 128, dtype=torch.int8)[: a_bytes.numel()]  # every byte
    b_bytes = torch.randint(-128, 128, (m, n // 2), dtype=torch.int8)
    storage = torch.int8 if signed else torch.uint8
    a_in, b_in = (x.view(storage).to(dev) for x in (a_bytes, b_bytes))
    C = torch.full((m, n), -12345, dtype=torch.int32, device=dev)
    F = torch.full((m, n), float("nan"), device=dev)
    D = torch.full((m, n // 2), 0x5A, dtype=storage, device=dev)
    kernel(a_in, b_in, C, F, D)
    a, b = unpack(a_bytes, signed), unpack(b_bytes, signed)
    want_c = a * 3 + b - (a < b).long()
    if not signed:  # uint4 arithmetic is unsigned 32-bit (C's promotion of TileLang's unsigned int loads)
        want_c = want_c & 0xFFFFFFFF
        want_c = torch.where(want_c >= 2**31, want_c - 2**32, want_c)
    assert torch.equal(C.cpu().long(), want_c)
    assert torch.equal(F.cpu(), a.float() * 0.5)
    assert torch.equal(unpack(D, signed), wrap(a * 5 + b, signed))


def _let_kernel(M, N, dt):
    @T.prim_func
    def main(A: T.Tensor((M, N), dt), B: T.Tensor((M, N), dt), C: T.Tensor((M, N), T.int32)):
        with T.Kernel(1, threads=128):
            for i, j in T.Parallel(M, N):
                x = A[i, j] * 3 + B[i, j]  # an int4 let: TileLang's CUDA keeps (a * 3 + b) & 0x0f
                C[i, j] = x * 2

    return main


@pytest.mark.parametrize("signed", [True, False], ids=["int4", "uint4"])
def test_int4_local_keeps_the_low_bits(dev, signed):
    """A kernel-local name of int4 arithmetic is an int4 (TVM's let), as a store to an int4 fragment."""
    m, n = 7, 22
    a_bytes, b_bytes = (torch.randint(-128, 128, (m, n // 2), dtype=torch.int8) for _ in range(2))
    storage = torch.int8 if signed else torch.uint8
    C = torch.full((m, n), -12345, dtype=torch.int32, device=dev)
    kernel = tilelang.compile(_let_kernel(m, n, INT4 if signed else UINT4))
    kernel(a_bytes.view(storage).to(dev), b_bytes.view(storage).to(dev), C)
    a, b = unpack(a_bytes, signed), unpack(b_bytes, signed)
    assert torch.equal(C.cpu().long(), wrap(a * 3 + b, signed) * 2)


def _cast_kernel(n, block):
    @T.prim_func
    def main(X: T.Tensor((n,), T.float32), Q: T.Tensor((n,), T.int4), U: T.Tensor((n,), T.int32)):
        with T.Kernel(T.ceildiv(n, block), threads=32) as bx:
            for i in T.Parallel(block):
                k = bx * block + i
                if k < n:
                    Q[k] = X[k]  # float -> int: toward zero, then the low 4 bits
                    U[k] = T.Cast(T.int4, T.Cast(T.int32, X[k]) + 100) + T.int4(9)  # T.int4(9) is -7

    return main


def test_int4_casts_and_single_nibble_stores(dev):
    """One element per lane under an ``if``: whole bytes where both lanes of an aligned pair write,
    single nibbles elsewhere; the bytes after the tensor's end keep their sentinel."""
    n, block = 44, 15  # odd: the second block starts mid-byte (lone nibbles, atomic and/or)
    kernel = tilelang.compile(_cast_kernel(n, block))
    x = (torch.randn(n) * 9).to(dev)
    back = torch.full((n // 2 + 3,), 0x5A, dtype=torch.int8, device=dev)
    u = torch.full((n,), -12345, dtype=torch.int32, device=dev)
    kernel(x, back[: n // 2], u)
    want = wrap(torch.trunc(x.cpu()).long(), True)
    assert torch.equal(unpack(back[: n // 2], True), want)
    assert back[n // 2 :].tolist() == [0x5A] * 3
    assert torch.equal(u.cpu().long(), wrap(torch.trunc(x.cpu()).long() + 100, True) - 7)
    with pytest.raises(TileLangCompileError, match="int4 tensor 'Q' has an odd last dim 45"):
        tilelang.compile(_cast_kernel(45, block))


def _empty_kernel():
    @T.prim_func
    def kernel(A: T.Tensor((3, 16), T.int8), n: T.int32):
        output = T.empty((3, n * 2), T.int4)
        with T.Kernel(1, threads=32):
            for i, j in T.Parallel(3, 16):
                if j < n * 2:
                    output[i, j] = A[i, j]
        return output

    return kernel


def test_int4_empty_output_is_int8_storage(dev):
    a = torch.randint(-100, 100, (3, 16), dtype=torch.int8, device=dev)
    out = tilelang.compile(_empty_kernel())(a, 7)
    assert out.dtype == torch.int8 and out.shape == (3, 7)
    assert torch.equal(unpack(out, True), wrap(a[:, :14].cpu(), True))


def test_int4_wrong_storage_and_accumulator_are_errors(dev):
    kernel = tilelang.compile(_arith_kernel(8, 32, 8, 32, INT4))
    a = torch.zeros(8, 16, dtype=torch.int8, device=dev)
    c = torch.zeros(8, 32, dtype=torch.int32, device=dev)
    with pytest.raises(KernelCallError, match=r"packed int4.*torch.int8 or torch.uint8.*got torch.float32"):
        kernel(a.float(), a, c, c.float(), a)

    @T.prim_func
    def gemm(A: T.Tensor((16, 32), T.int4), C: T.Tensor((16, 16), T.int4)):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((16, 32), T.int4)
            c = T.alloc_fragment((16, 16), T.int4)
            T.copy(A, a)
            T.gemm(a, a, c, transpose_B=True, clear_accum=True)
            T.copy(c, C)

    with pytest.raises(TileLangCompileError, match="T.gemm on int4 buffer 'c'.*int8"):
        tilelang.compile(gemm)


def _gemm_kernel(M, N, K, bm, bn, bk, dt, trans_b):
    b_shape, b_tile = ((N, K), (bn, bk)) if trans_b else ((K, N), (bk, bn))

    @T.prim_func
    def main(A: T.Tensor((M, K), dt), B: T.Tensor(b_shape, dt), C: T.Tensor((M, N), T.int32)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            a = T.alloc_shared((bm, bk), dt)
            b = T.alloc_shared(b_tile, dt)
            c = T.alloc_fragment((bm, bn), T.int32)
            T.clear(c)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, ko * bk], a)
                if trans_b:
                    T.copy(B[bx * bn, ko * bk], b)
                else:
                    T.copy(B[ko * bk, bx * bn], b)
                T.gemm(a, b, c, transpose_B=trans_b)
            T.copy(c, C[by * bm, bx * bn])

    return main


@pytest.mark.parametrize("signed", [True, False], ids=["int4", "uint4"])
@pytest.mark.parametrize("trans_b", [True, False], ids=["nt", "nn"])
@pytest.mark.parametrize("K, bk", [(100, 16), (96, 32)], ids=["k_ragged", "k_whole"])
def test_int4_gemm(dev, signed, trans_b, K, bk):
    """T.gemm of int4 / uint4 tiles into int32 (examples/gemm_int4): an int8 dot of the values.  K of 16-value
    tiles (under tl.dot's 32 for 8-bit operands on the GPU), masked on K: nibble loads; K a whole number of
    32-value tiles: the nt operands' rows are whole bytes, loaded as such and split (``fp4.pairs_whole``)."""
    M, N = 70, 54
    dt, low, high = (INT4, -8, 8) if signed else (UINT4, 0, 16)
    a = torch.randint(low, high, (M, K))
    b = torch.randint(low, high, (N, K) if trans_b else (K, N))
    C = torch.full((M, N), -12345, dtype=torch.int32, device=dev)
    kernel = tilelang.compile(_gemm_kernel(M, N, K, 32, 32, bk, dt, trans_b))
    if K % bk == 0 and trans_b:
        assert kernel.get_kernel_source().count("pair_byte = tl.load(") == 1  # A's and B's loads: `pair_byte_1`
    kernel(pack(a).to(dev), pack(b).to(dev), C)
    want = a.long() @ (b.long().T if trans_b else b.long())
    assert torch.equal(C.cpu().long(), want)


def test_int4_compiles_for_hopper(tmp_path):
    compile_for_hopper(tilelang.compile(_arith_kernel(19, 46, 8, 32, INT4)), tmp_path)
    compile_for_hopper(tilelang.compile(_arith_kernel(19, 46, 8, 32, UINT4)), tmp_path)
    compile_for_hopper(tilelang.compile(_cast_kernel(44, 16)), tmp_path)
    compile_for_hopper(tilelang.compile(_gemm_kernel(70, 54, 100, 32, 32, 16, UINT4, False)), tmp_path)
    compile_for_hopper(tilelang.compile(_gemm_kernel(256, 256, 512, 128, 128, 64, INT4, True)), tmp_path)
    compile_for_hopper(int4_scalar_casts.compile([1, -8, 23], INT4), tmp_path)  # tl.sum of int8: back to int8
    compile_for_hopper(int4_scalar_casts.compile([1, 15, 23], UINT4), tmp_path)


@tilelang.jit
def eager_double(x):
    M = T.dynamic("M")
    N = T.const("N")  # the logical size: twice the bytes of x's last dim
    x: T.Tensor[(M, N), T.int4]
    y = T.empty((M, N), T.float32)
    q = T.empty((M, N), T.int4)
    with T.Kernel(T.ceildiv(M, 16), threads=64) as bx:
        for i, j in T.Parallel(16, N):
            y[bx * 16 + i, j] = x[bx * 16 + i, j]
            q[bx * 16 + i, j] = x[bx * 16 + i, j] * 2
    return y, q


def test_int4_eager_constants_read_the_logical_shape(dev):
    for rows in (21, 5):  # the second call takes the cached entry
        x = torch.randint(-128, 128, (rows, 9), dtype=torch.int8, device=dev)
        y, q = eager_double(x)
        assert y.shape == (rows, 18) and q.dtype == torch.int8 and q.shape == (rows, 9)
        assert torch.equal(y.cpu(), unpack(x, True).float())
        assert torch.equal(unpack(q, True), wrap(unpack(x, True) * 2, True))


def _shared_fill_kernel(M, N, bm):
    @T.prim_func
    def main(A: T.Tensor((M, N), T.int4), D: T.Tensor((M, N), T.int4), E: T.Tensor((M, N), T.int8)):
        with T.Kernel(T.ceildiv(M, bm), threads=64) as bx:
            s = T.alloc_shared((bm, N), T.int4)
            f = T.alloc_fragment((bm, N), T.int4)
            T.copy(A[bx * bm, 0], s)
            T.fill(f, 9)  # 9 is -7 in int4
            for i, j in T.Parallel(bm, N):
                f[i, j] = f[i, j] + s[i, j]
                E[bx * bm + i, j] = s[i, j] >> 1  # an arithmetic shift of the sign-extended value
            T.copy(f, D[bx * bm, 0])

    return main


def test_int4_shared_fill_and_shifts(dev):
    m, n = 13, 38
    kernel = tilelang.compile(_shared_fill_kernel(m, n, 8))
    a = torch.randint(-128, 128, (m, n // 2), dtype=torch.int8, device=dev)
    d = torch.full((m, n // 2), 0x5A, dtype=torch.int8, device=dev)
    e = torch.full((m, n), 99, dtype=torch.int8, device=dev)
    kernel(a, d, e)
    v = unpack(a, True)
    assert torch.equal(unpack(d, True), wrap(v - 7, True))
    assert torch.equal(e.cpu().long(), v >> 1)


@tilelang.jit(out_idx=[-1])
def int4_scalar_casts(values, dt):
    """``T.cast(number, T.int4 / uint4)`` stored into shared and local buffers of an odd length
    (TileLang's components test of packed sub-byte allocations), read back as int32."""
    n = len(values)

    @T.prim_func
    def main(Out: T.Tensor((2, n), T.int32)):
        with T.Kernel(1, threads=32):
            S = T.alloc_shared((127,), dt)
            L = T.alloc_local((127,), dt)
            for k, v in enumerate(values):
                S[126 - k] = T.cast(v, dt)
            T.tvm_storage_sync("shared")
            for k in T.serial(n):
                L[k] = S[126 - k]
            for k in T.Parallel(n):
                Out[0, k] = S[126 - k]
                Out[1, k] = L[k]

    return main


@pytest.mark.parametrize("signed", [True, False], ids=["int4", "uint4"])
def test_int4_casts_of_numbers(signed):
    values = [0, 1, 7, 8, 9, -1, -8, 15, 23, -30]  # the low 4 bits, sign-extended for int4
    out = int4_scalar_casts(values, INT4 if signed else UINT4)()
    ref = wrap(torch.tensor(values), signed)
    assert torch.equal(out.cpu().long(), torch.stack([ref, ref]))
