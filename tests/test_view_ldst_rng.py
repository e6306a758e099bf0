"""T.view (reshape / bit-reinterpreting views), explicit vector loads/stores (T.ldg*, T.stg*, T.__ldg)
and device RNG (T.rng_*), on random inputs with poisoned outputs and odd sizes."""

import pytest
import torch
from t2t_util import poison

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.errors import TileLangCompileError


def global_view(rows, cols, dtype, new_cols, new_dtype):
    @T.prim_func
    def main(A: T.Tensor((rows * cols,), dtype), B: T.Tensor((rows, new_cols), new_dtype)):
        with T.Kernel(T.ceildiv(rows, 16), threads=64) as bx:
            V = T.view(A, (rows, new_cols), dtype=new_dtype)
            for i, j in T.Parallel(16, new_cols):
                if bx * 16 + i < rows:
                    B[bx * 16 + i, j] = V[bx * 16 + i, j]

    return main


@pytest.mark.parametrize(
    "dtype, new_dtype, scale",
    [("float32", "float32", 1.0), ("float32", "float16", 2.0), ("float16", "int32", 0.5), ("int32", "float32", 1.0)],
)
def test_global_view_reshapes_and_reinterprets(dev, dtype, new_dtype, scale):
    rows, cols = 37, 6
    new_cols = int(cols * scale)
    torch_dtype = getattr(torch, dtype)
    new_torch = getattr(torch, new_dtype)
    if torch_dtype.is_floating_point:
        a = torch.randn(rows * cols, dtype=torch_dtype, device=dev)
    else:
        a = torch.randint(-(2**30), 2**30, (rows * cols,), dtype=torch_dtype, device=dev)
    b = poison((rows, new_cols), new_torch, dev)
    tilelang.compile(global_view(rows, cols, dtype, new_cols, new_dtype))(a, b)
    ref = a.view(new_torch).view(rows, new_cols)
    # compared bit for bit: reinterpreted floats may be NaN patterns
    assert torch.equal(b.cpu().view(torch.uint8), ref.cpu().view(torch.uint8))


def shared_view(shape, dtype, new_shape, new_dtype):
    @T.prim_func
    def main(A: T.Tensor(shape, dtype), B: T.Tensor(new_shape, new_dtype)):
        with T.Kernel(1, threads=128):
            A_shared = T.alloc_shared(shape, dtype)
            A_view = T.view(A_shared, new_shape, dtype=new_dtype)
            T.copy(A, A_shared)
            T.copy(A_view, B)

    return main


@pytest.mark.parametrize(
    "shape, dtype, new_shape, new_dtype",
    [
        ((12, 20), "float32", (12, 40), "float16"),  # narrowing
        ((10, 24), "float16", (10, 12), "float32"),  # widening
        ((6, 20), "float32", (20, 6), "float32"),  # a plain reshape (not a power of two)
    ],
)
def test_shared_view(dev, shape, dtype, new_shape, new_dtype):
    torch_dtype, new_torch = getattr(torch, dtype), getattr(torch, new_dtype)
    a = torch.randn(shape, dtype=torch.float32, device=dev).to(torch_dtype)
    b = poison(new_shape, new_torch, dev)
    tilelang.compile(shared_view(shape, dtype, new_shape, new_dtype))(a, b)
    ref = a.view(new_torch).reshape(new_shape)
    assert torch.equal(b.cpu().view(torch.int16), ref.cpu().view(torch.int16))


def test_view_size_mismatch_is_an_error_at_the_line():
    @T.prim_func
    def main(A: T.Tensor((30,), "float32"), B: T.Tensor((30,), "float32")):
        with T.Kernel(1):
            V = T.view(A, (31,))
            T.copy(V[0:30], B)

    with pytest.raises(TileLangCompileError, match=r"test_view_ldst_rng.py:\d+.*changes its size in bits"):
        tilelang.compile(main)


def rng_kernel(rows, cols, seed, block_rows=16):
    @T.prim_func
    def main(U: T.Tensor((rows, cols), "uint32"), F: T.Tensor((rows, cols), "float32"),
             G: T.Tensor((rows, cols), "float64")):  # fmt: skip
        with T.Kernel(T.ceildiv(rows, block_rows), threads=128) as bx:
            T.rng_init(seed, bx, 7)
            for r in T.serial(block_rows):
                for j in T.Parallel(cols):
                    if bx * block_rows + r < rows:
                        U[bx * block_rows + r, j] = T.rng_rand()
            for i, j in T.Parallel(block_rows, cols):
                if bx * block_rows + i < rows:
                    F[bx * block_rows + i, j] = T.rng_rand_float()
                    G[bx * block_rows + i, j] = T.rng_rand_float(bit=64, dist="normal")

    return main


def test_rng_is_deterministic_distinct_and_distributed(dev):
    rows, cols = 45, 29
    outs = []
    for seed in (11, 11, 12):
        u = poison((rows, cols), torch.int32, dev).view(torch.uint32)
        f, g = poison((rows, cols), torch.float32, dev), poison((rows, cols), torch.float64, dev)
        tilelang.compile(rng_kernel(rows, cols, seed))(u, f, g)
        outs.append((u.cpu().view(torch.int32).to(torch.int64), f.cpu(), g.cpu()))
    (u, f, g), (u2, f2, g2), (u3, _, _) = outs
    assert torch.equal(u, u2) and torch.equal(f, f2) and torch.equal(g, g2)  # same seed, same numbers
    assert not torch.equal(u, u3)  # another seed, other numbers
    # every element, loop iteration and block drew its own number (no sentinel left, no repeats)
    assert (u != poison((1,), torch.int32)[0]).all() and u.unique().numel() == u.numel()
    assert (f > 0).all() and (f <= 1).all() and abs(f.mean().item() - 0.5) < 0.05  # curand_uniform's (0, 1]
    assert g.dtype == torch.float64 and abs(g.mean().item()) < 0.1 and abs(g.std().item() - 1) < 0.1


def _philox4x32_10(key: int, counter: tuple) -> list:
    """Random123's Philox-4x32-10 (curand's Philox4_32_10 generator), on Python ints."""
    c0, c1, c2, c3 = counter
    k0, k1 = key & 0xFFFFFFFF, key >> 32
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = (
            ((p1 >> 32) ^ c1 ^ k0) & 0xFFFFFFFF,
            p1 & 0xFFFFFFFF,
            ((p0 >> 32) ^ c3 ^ k1) & 0xFFFFFFFF,
            p0 & 0xFFFFFFFF,
        )
        k0, k1 = (k0 + 0x9E3779B9) & 0xFFFFFFFF, (k1 + 0xBB67AE85) & 0xFFFFFFFF
    return [c0, c1, c2, c3]


def curand_draws(seed: int, seq: int, offset: int, n: int) -> list:
    """The first n numbers of curand_init(seed, seq, offset) followed by curand() n times."""
    out = []
    for d in range(offset, offset + n):
        block = d // 4
        out.append(_philox4x32_10(seed, (block & 0xFFFFFFFF, block >> 32, seq & 0xFFFFFFFF, seq >> 32))[d % 4])
    return out


def one_thread_rng(m, seed, seq, per_block=40):
    @T.prim_func
    def main(A: T.Tensor((m,), "uint32"), B: T.Tensor((m,), "float32")):
        with T.Kernel(T.ceildiv(m, per_block), threads=1) as bx:
            T.rng_init(seed, seq, bx * per_block)
            for j in T.Parallel(per_block):
                if bx * per_block + j < m:
                    A[bx * per_block + j] = T.rng_rand()
            for j in T.Parallel(per_block):
                if bx * per_block + j < m:
                    B[bx * per_block + j] = T.rng_rand_float()

    return main


@pytest.mark.parametrize("seed, seq", [(42, 0), (2**40 + 12345, 3)])
def test_rng_is_curands_philox_stream(dev, seed, seq):
    """T.rng_init(seed, seq, off) then T.rng_rand(): the numbers of curand_init(seed, seq, off) then
    curand() (TileLang's examples/rand/rand_uint.py checks them against Triton's randint4x); one thread
    runs a T.Parallel's elements in order, each statement the next of its draws; T.rng_rand_float() is
    curand_uniform of the next number."""
    m, per_block = 97, 40
    a = poison((m,), torch.int32, dev).view(torch.uint32)
    b = poison((m,), torch.float32, dev)
    tilelang.compile(one_thread_rng(m, seed, seq, per_block))(a, b)
    got = a.cpu().view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    for bx in range(-(-m // per_block)):
        n = min(per_block, m - bx * per_block)
        draws = curand_draws(seed, seq, bx * per_block, per_block + n)
        assert got[bx * per_block : bx * per_block + n].tolist() == draws[:n]
        uniform = torch.tensor(draws[per_block:], dtype=torch.float64) * 2.0**-32 + 2.0**-33
        torch.testing.assert_close(b[bx * per_block : bx * per_block + n].cpu().double(), uniform, atol=1e-7, rtol=0)


def test_rng_rand_before_init_is_an_error_at_the_line():
    @T.prim_func
    def main(U: T.Tensor((30,), "uint32")):
        with T.Kernel(1):
            for i in T.Parallel(30):
                U[i] = T.rng_rand()

    with pytest.raises(TileLangCompileError, match=r"test_view_ldst_rng.py:\d+.*before T.rng_init"):
        tilelang.compile(main)


def packed_copy(n, dtype, width):
    """Each program moves `width` bits per step with T.ldg*/T.stg* (through shared with T.lds*/T.sts*),
    the first `keep` elements by predicated global loads/stores, the rest reinterpreted through float32
    lanes; `n` is not a multiple of the step (the tail goes element by element)."""
    ldg, stg, lds, sts = (getattr(T, f"{op}{width}") for op in ("ldg", "stg", "lds", "sts"))
    step = width // {"float16": 16, "bfloat16": 16, "float32": 32, "int8": 8}[dtype]
    full = n // step
    lanes32 = width // 32
    vec32 = getattr(T, f"float32x{lanes32}") if lanes32 > 1 else T.float32

    @T.prim_func
    def main(X: T.Tensor((n,), dtype), Y: T.Tensor((n,), dtype), Z: T.Tensor((n,), dtype), keep: T.int32):
        with T.Kernel(full, threads=32) as pid:
            S = T.alloc_shared((step,), dtype)
            sts(S[0:step], ldg(X[pid * step : pid * step + step]))
            T.sync_threads()
            stg(Y[pid * step : pid * step + step], lds(S[0:step]), pred=pid * step < keep)
            if pid * step >= keep:
                stg(
                    Y[pid * step : pid * step + step],
                    T.reinterpret(ldg(X[pid * step : pid * step + step], pred=pid >= 0), vec32),
                )
            # Z through float32 lanes of the loaded bits
            if lanes32 > 1:
                Z[pid * step : pid * step + step] = T.reinterpret(
                    T.reinterpret(ldg(X[pid * step : pid * step + step]), vec32), getattr(T, f"{dtype}x{step}")
                )
            else:
                stg(
                    Z[pid * step],
                    T.reinterpret(T.reinterpret(ldg(X[pid * step : pid * step + step]), T.float32), T.uint32),
                )
            if pid == 0:
                for t in T.serial(n - full * step):
                    Y[full * step + t] = T.__ldg(X[full * step + t])
                    Z[full * step + t] = T.__ldg(X, full * step + t)

    return main


@pytest.mark.parametrize(
    "dtype, width",
    [("float32", 32), ("float16", 64), ("bfloat16", 64), ("float16", 128), ("float32", 128), ("int8", 32)],
)
def test_packed_loads_and_stores_move_the_elements(dev, dtype, width):
    n = 203
    torch_dtype = getattr(torch, dtype)
    if torch_dtype.is_floating_point:
        x = torch.randn(n, device=dev).to(torch_dtype)
    else:
        x = torch.randint(-128, 127, (n,), dtype=torch_dtype, device=dev)
    y, z = poison((n,), torch_dtype, dev), poison((n,), torch_dtype, dev)
    tilelang.compile(packed_copy(n, dtype, width))(x, y, z, 37)
    assert torch.equal(y.cpu(), x.cpu()) and torch.equal(z.cpu(), x.cpu())


def test_predicated_packed_load_reads_zero():
    @T.prim_func
    def main(X: T.Tensor((90,), "float16"), Y: T.Tensor((90,), "float16")):
        with T.Kernel(45, threads=32) as pid:
            T.stg32(Y[pid * 2 : pid * 2 + 2], T.ldg32(X[pid * 2 : pid * 2 + 2], pred=pid < 20))

    x = torch.randn(90).half()
    y = poison((90,), torch.float16)
    tilelang.compile(main)(x, y)
    ref = x.clone()
    ref[40:] = 0
    assert torch.equal(y, ref)


def test_packed_width_mismatch_is_an_error_at_the_line():
    @T.prim_func
    def main(X: T.Tensor((64,), "float32"), Y: T.Tensor((64,), "float32")):
        with T.Kernel(16, threads=32) as pid:
            T.stg128(Y[pid * 4 : pid * 4 + 4], T.ldg64(X[pid * 2 : pid * 2 + 2]))

    with pytest.raises(TileLangCompileError, match=r"test_view_ldst_rng.py:\d+.*stores 128 bits; the value has 64"):
        tilelang.compile(main)


def fragment_views():
    @T.prim_func
    def main(A: T.Tensor((12, 20), "float32"), B: T.Tensor((12, 40), "float16"), C: T.Tensor((4, 60), "float32")):
        with T.Kernel(1, threads=128):
            F = T.alloc_fragment((12, 20), "float32")
            T.copy(A, F)
            T.copy(T.view(F, (12, 40), dtype="float16"), B)
            T.copy(T.view(F, (4, 60)), C)

    return main


def test_fragment_views(dev):
    a = torch.randn(12, 20, device=dev)
    b, c = poison((12, 40), torch.float16, dev), poison((4, 60), torch.float32, dev)
    tilelang.compile(fragment_views())(a, b, c)
    assert torch.equal(b.cpu().view(torch.int16), a.cpu().view(torch.float16).view(torch.int16))
    assert torch.equal(c.cpu(), a.cpu().reshape(4, 60))
