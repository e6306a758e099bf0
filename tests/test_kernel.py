"""T.Kernel grids and threads, the jit/kernel object API (out_idx forms, outputs, source),
dtype spellings and T.Buffer as an alias of T.Tensor."""

import pytest
import torch
from t2t_util import Guarded, assert_close, assert_equal, poison

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty

# ---------------------------------------------------------------- grids


@tilelang.jit
def grid1d(N, block, threads):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=threads) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] * 3.0 + bx

    return main


@pytest.mark.parametrize("threads", [32, 128, 256])
def test_kernel_1d_grid(dev, threads):
    N, block = 300, 64
    k = grid1d(N, block, threads)
    a = torch.randn(N, device=dev)
    g = Guarded((N,), device=dev)
    k(a, g.tensor)
    bx = torch.arange(N, dtype=torch.float64) // block
    assert_close(g.tensor, a.double().cpu() * 3.0 + bx, 1e-5, 1e-5)
    g.check_tail()
    assert k.num_warps == threads // 32  # threads -> num_warps


@tilelang.jit(out_idx=[-1])
def grid1d_default_threads(N, block):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block)) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] - 1.0

    return main


def test_kernel_default_threads(dev):
    N, block = 210, 64
    a = torch.randn(N, device=dev)
    k = grid1d_default_threads(N, block)
    c = k(a)
    assert_close(c, a.double() - 1.0, 1e-6, 1e-6)
    assert k.num_warps == 4  # TileLang's default is threads=128


@tilelang.jit
def grid2d(M, N, bm, bn):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            for i, j in T.Parallel(bm, bn):
                # grid index encodes which program wrote the element
                C[by * bm + i, bx * bn + j] = A[by * bm + i, bx * bn + j] + by * 1000 + bx

    return main


def test_kernel_2d_grid(dev):
    M, N, bm, bn = 150, 200, 32, 64
    a = torch.randn(M, N, device=dev)
    g = Guarded((M, N), device=dev)
    grid2d(M, N, bm, bn)(a, g.tensor)
    rows = torch.arange(M, dtype=torch.float64)[:, None] // bm
    cols = torch.arange(N, dtype=torch.float64)[None, :] // bn
    assert_close(g.tensor, a.double().cpu() + rows * 1000 + cols, 1e-4, 1e-6)
    g.check_tail()


@tilelang.jit
def grid3d(Bt, M, N, bm, bn):
    @T.prim_func
    def main(
        A: T.Tensor((Bt, M, N), "float32"), B: T.Tensor((Bt, M, N), "float32"), C: T.Tensor((Bt, M, N), "float32")
    ):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), Bt, threads=64) as (bx, by, bz):
            for i, j in T.Parallel(bm, bn):
                C[bz, by * bm + i, bx * bn + j] = A[bz, by * bm + i, bx * bn + j] * B[bz, by * bm + i, bx * bn + j] + bz

    return main


def test_kernel_3d_grid(dev):
    Bt, M, N, bm, bn = 3, 50, 70, 16, 32
    a = torch.randn(Bt, M, N, device=dev)
    b = torch.randn(Bt, M, N, device=dev)
    g = Guarded((Bt, M, N), device=dev)
    grid3d(Bt, M, N, bm, bn)(a, b, g.tensor)
    z = torch.arange(Bt, dtype=torch.float64)[:, None, None]
    assert_close(g.tensor, a.double().cpu() * b.double().cpu() + z, 1e-5, 1e-5)
    g.check_tail()


@tilelang.jit(out_idx=[-1])
def two_kernels(N, block):
    # two `with T.Kernel` blocks in one prim_func are two launches executed in order
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), Tmp: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                Tmp[bx * block + i] = A[bx * block + i] * 2.0
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                # reads an element written by another program of the first launch
                C[bx * block + i] = Tmp[N - 1 - (bx * block + i)] + 1.0

    return main


def test_kernel_two_launches(dev):
    N, block = 300, 128
    a = torch.randn(N, device=dev)
    tmp = poison((N,), device=dev)
    c = two_kernels(N, block)(a, tmp)
    assert_close(c, a.double().flip(0) * 2.0 + 1.0, 1e-6, 1e-6)


# ---------------------------------------------------------------- out_idx and outputs


@tilelang.jit(out_idx=[1])
def out_idx_positive(N, block):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] - 2.0 * B[bx * block + i]

    return main


def test_out_idx_positive_middle(dev):
    N, block = 300, 128
    a = torch.randn(N, device=dev)
    b = torch.randn(N, device=dev)
    c = out_idx_positive(N, block)(a, b)  # inputs in declaration order, skipping the output
    assert isinstance(c, torch.Tensor)
    assert c.device.type == torch.device(dev).type
    assert c.dtype == torch.float32
    assert_close(c, a.double() - 2.0 * b.double(), 1e-6, 1e-6)


@tilelang.jit(out_idx=-1)
def out_idx_int(N, block):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] * A[bx * block + i]

    return main


def test_out_idx_int(dev):
    N = 130
    a = torch.randn(N, device=dev)
    c = out_idx_int(N, 64)(a)
    assert isinstance(c, torch.Tensor)
    assert_close(c, a.double() ** 2, 1e-6, 1e-6)


@tilelang.jit(out_idx=[-2, -1])
def two_outputs(M, N, bm, bn):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), S: T.Tensor((M, N), "float32"), H: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            for i, j in T.Parallel(bm, bn):
                S[by * bm + i, bx * bn + j] = A[by * bm + i, bx * bn + j] + 1.0
                H[by * bm + i, bx * bn + j] = A[by * bm + i, bx * bn + j] * 0.5

    return main


def test_out_idx_multiple_outputs_tuple(dev):
    M, N = 70, 90
    a = torch.randn(M, N, device=dev)
    out = two_outputs(M, N, 32, 32)(a)
    assert isinstance(out, (tuple, list)) and len(out) == 2
    s, h = out
    assert s.dtype == torch.float32 and h.dtype == torch.float16
    assert s.shape == (M, N) and h.shape == (M, N)
    assert_close(s, a.double() + 1.0, 1e-6, 1e-6)
    assert_close(h, (a * 0.5).half(), 0, 0)


@tilelang.jit
def no_out_idx(N, block):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] + 0.5

    return main


def test_no_out_idx_writes_into_caller_tensor(dev):
    N = 300
    a = torch.randn(N, device=dev)
    c = poison((N,), device=dev)
    ret = no_out_idx(N, 128)(a, c)
    assert ret is None or len(ret) == 0  # TileLang returns an empty list
    assert_close(c, a.double() + 0.5, 1e-6, 1e-6)


def test_factory_cache_and_source():
    k1 = no_out_idx(300, 128)
    k2 = no_out_idx(300, 128)
    src = k1.get_kernel_source()
    assert isinstance(src, str)
    assert "triton" in src and "tl." in src
    assert k2.get_kernel_source() == src


# ---------------------------------------------------------------- dtypes


@tilelang.jit(out_idx=[-1])
def copy_dtype_str(N, block, dtype):
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            A_frag = T.alloc_fragment((block,), dtype)
            T.copy(A[bx * block], A_frag)
            for i in T.Parallel(block):
                C[bx * block + i] = A_frag[i]

    return main


def _random(N, tdtype, dev):
    if tdtype == torch.bool:
        return torch.rand(N, device=dev) > 0.5
    if tdtype.is_floating_point:
        return torch.randn(N, device=dev).to(tdtype)
    if tdtype == torch.uint8:
        return torch.randint(1, 256, (N,), device=dev, dtype=torch.int32).to(tdtype)
    info = torch.iinfo(tdtype)
    return torch.randint(max(info.min, -(10**6)), min(info.max, 10**6), (N,), device=dev, dtype=torch.int64).to(tdtype)


DTYPE_STRINGS = [
    ("float16", torch.float16),
    ("float", torch.float32),
    ("float32", torch.float32),
    ("bfloat16", torch.bfloat16),
    ("int8", torch.int8),
    ("int32", torch.int32),
    ("uint8", torch.uint8),
    ("bool", torch.bool),
]


@pytest.mark.parametrize("name,tdtype", DTYPE_STRINGS, ids=[d[0] for d in DTYPE_STRINGS])
def test_dtype_strings(dev, name, tdtype):
    N = 300
    a = _random(N, tdtype, dev)
    c = copy_dtype_str(N, 128, name)(a)
    assert c.dtype == tdtype
    assert_equal(c, a)


DTYPE_OBJECTS = [
    ("float16", torch.float16),
    ("float32", torch.float32),
    ("bfloat16", torch.bfloat16),
    ("int8", torch.int8),
    ("int32", torch.int32),
    ("uint8", torch.uint8),
    ("bool", torch.bool),
]


@pytest.mark.parametrize("name,tdtype", DTYPE_OBJECTS, ids=[d[0] for d in DTYPE_OBJECTS])
def test_dtype_objects(dev, name, tdtype):
    N = 300
    a = _random(N, tdtype, dev)
    c = copy_dtype_str(N, 128, getattr(T, name))(a)
    assert c.dtype == tdtype
    assert_equal(c, a)


@tilelang.jit(out_idx=[-1])
def dtype_objects_in_body(M, N, bm, bn):
    @T.prim_func
    def main(A: T.Tensor((M, N), T.float16), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bn), T.float16)
            F = T.alloc_fragment((bm, bn), T.float32)
            T.copy(A[by * bm, bx * bn], A_s)
            for i, j in T.Parallel(bm, bn):
                F[i, j] = T.cast(A_s[i, j], T.float32) * 2.0
            T.copy(F, C[by * bm, bx * bn])

    return main


def test_dtype_objects_in_allocations(dev):
    M, N = 100, 72
    a = torch.randn(M, N, device=dev).half()
    c = dtype_objects_in_body(M, N, 32, 32)(a)
    assert c.dtype == torch.float32
    assert_close(c, a.double() * 2.0, 0, 0)


@tilelang.jit(out_idx=[-1])
def buffer_alias(M, N, bm, bn):
    @T.prim_func
    def main(A: T.Buffer((M, N), "float32"), C: T.Buffer((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bn), "float32")
            T.copy(A[by * bm, bx * bn], A_s)
            T.copy(A_s, C[by * bm, bx * bn])

    return main


def test_buffer_alias_of_tensor(dev):
    M, N = 150, 100
    a = torch.randn(M, N, device=dev)
    c = buffer_alias(M, N, 64, 64)(a)
    assert_equal(c, a)
