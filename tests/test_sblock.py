"""``with T.sblock(name):`` (TVM's block) in a kernel: a lexical scope for annotations.  A
``T.annotate_safe_value`` holds for the global loads of its whole block (statements before it
too) and of nested blocks unless they override it; after the block the enclosing values are back
(TileLang's testing/python/language copy test, ``test_tilelang_copy_oob_safe_value_lexical_scope``)."""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import TileLangCompileError

pytestmark = pytest.mark.poison_empty  # outputs the runtime allocates start as NaN

M, N = 45, 27  # the tensor
BM, BN = 48, 32  # the tiles copied from it, larger: the last rows/columns read out of bounds


@tilelang.jit(out_idx=[1])
def scoped_copies():
    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), Out: T.Tensor((4, BM, BN), T.float32)):
        with T.Kernel(1, threads=64):
            tile = T.alloc_shared((BM, BN), T.float32)
            T.annotate_safe_value({A: 7.0})  # the kernel's block
            with T.sblock("outer"):
                T.reads()
                T.writes()
                T.copy(A[0:BM, 0:BN], tile)  # before the block's annotation: it holds here too
                T.copy(tile, Out[0, :, :])
                T.annotate_safe_value({A: -1.5})
                with T.sblock("inner"):
                    T.annotate_safe_value({A: -99.0})
                    for i, j in T.Parallel(BM, BN):
                        Out[1, i, j] = A[i, j] * 2.0
                with T.sblock():  # no value of its own: the outer block's
                    T.copy(A[0:BM, 0:BN], Out[2, :, :])
            T.copy(A[0:BM, 0:BN], tile)  # after the blocks: the kernel's value again
            T.copy(tile, Out[3, :, :])

    return main


def test_sblock_safe_value_scopes(dev):
    a = torch.randn(M, N, device=dev)
    out = scoped_copies()(a)

    def padded(fill, scale=1.0):
        ref = torch.full((BM, BN), fill, dtype=torch.float64)
        ref[:M, :N] = a.double().cpu() * scale
        return ref

    assert_close(out[0], padded(-1.5), atol=0, rtol=0)
    assert_close(out[1], padded(-198.0, 2.0), atol=0, rtol=0)  # -99 read, then doubled
    assert_close(out[2], padded(-1.5), atol=0, rtol=0)
    assert_close(out[3], padded(7.0), atol=0, rtol=0)


def test_sblock_in_a_loop_and_eager(dev):
    @tilelang.jit
    def rows(A, block=16):
        R, C = T.const("R, C")
        A: T.Tensor[[R, C], T.float32]
        B = T.empty((T.ceildiv(R, block) * block, C), T.float32)
        with T.Kernel(T.ceildiv(R, block), threads=32) as bx:
            for k in T.serial(2):
                with T.sblock("rows"):
                    T.annotate_safe_value({A: 3.0})
                    for i, j in T.Parallel(block, C):
                        if k == 1:
                            B[bx * block + i, j] = A[bx * block + i, j] + 1.0
        return B

    a = torch.randn(37, 11, device=dev)
    b = rows(a)
    ref = torch.full((48, 11), 4.0, dtype=torch.float64)
    ref[:37] = a.double().cpu() + 1
    assert_close(b, ref, atol=1e-6, rtol=0)


def test_sblock_errors():
    @T.prim_func
    def twice(A: T.Tensor((8,), T.float32), B: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=32):
            with T.sblock("b"):
                T.annotate_safe_value({A: 1.0})
                T.annotate_safe_value({A: 2.0})
                for i in T.Parallel(8):
                    B[i] = A[i]

    with pytest.raises(TileLangCompileError, match=r"test_sblock.py:\d+.*already has the safe value 1.0 in this block"):
        tilelang.compile(twice)

    @T.prim_func
    def named(A: T.Tensor((8,), T.float32), B: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=32):
            with T.sblock("b") as blk:  # noqa: F841
                for i in T.Parallel(8):
                    B[i] = A[i]

    with pytest.raises(TileLangCompileError, match=r"test_sblock.py:\d+.*binds no name"):
        tilelang.compile(named)

    @T.prim_func
    def inner_value(A: T.Tensor((8,), T.float32), B: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=32):
            with T.sblock("b"):
                T.annotate_safe_value({A: 1.0})
            T.annotate_safe_value({A: 2.0})  # the kernel's block: a value of its own, no conflict
            for i in T.Parallel(8):
                B[i] = A[i]

    tilelang.compile(inner_value)
    with pytest.raises(RuntimeError, match="T.sblock can only be used inside"):
        T.sblock("host")


def test_sblock_generated_code():
    src = scoped_copies().get_kernel_source()
    assert "other=-99.0" in src and "other=-1.5" in src and "other=7.0" in src, src


def test_sblock_compiles_for_hopper(tmp_path):
    from test_fuzz_regressions import compile_for_hopper

    compile_for_hopper(scoped_copies(), tmp_path)
