"""Tidying the generated kernel (codegen/tidy.py): a value two TileLang statements compute alike is named once.

A MoE-gate top-k stores each step's row maximum and its index at the same place of two outputs
(examples/topk/example_topk.py); the generated kernel used to name that offset twice (``offs_1`` and ``offs_2``)."""

import ast

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.codegen.tidy import merge_repeated_values


def top_k(m, n, k, blk):
    @T.prim_func
    def main(X: T.Tensor((m, n), "float32"), V: T.Tensor((m, k), "float32"), I: T.Tensor((m, k), "int32")):
        with T.Kernel(T.ceildiv(m, blk), threads=128) as bx:
            x = T.alloc_fragment((blk, n), "float32")
            top = T.alloc_fragment((blk,), "float32")
            where = T.alloc_fragment((blk, n), "int32")
            at = T.alloc_fragment((blk,), "int32")
            T.copy(X[bx * blk, 0], x)
            for s in T.serial(k):
                T.reduce_max(x, top, dim=1, clear=True)
                for i, j in T.Parallel(blk, n):
                    where[i, j] = T.if_then_else(x[i, j] == top[i], j, -1)
                T.reduce_max(where, at, dim=1, clear=True)
                for i, j in T.Parallel(blk, n):
                    x[i, j] = T.if_then_else(j == at[i], -1e4, x[i, j])
                for i in T.Parallel(blk):
                    V[bx * blk + i, s] = top[i]
                    I[bx * blk + i, s] = at[i]

    return main


@pytest.mark.parametrize("m", [150, 96])  # the last block partial (masked stores), every block whole
def test_top_k_stores_share_their_offsets(dev, m):
    n, k, blk = 72, 5, 32
    torch.manual_seed(m)
    kernel = tilelang.jit(out_idx=[])(top_k)(m, n, k, blk)
    x = torch.randn(m, n, device=dev)
    values, indices = poison((m, k), device=dev), poison((m, k), torch.int32, device=dev)
    kernel(x, values, indices)
    ref = x.cpu().double().topk(k, dim=1)
    assert_close(values, ref.values, atol=0, rtol=0)
    assert torch.equal(indices.cpu().long(), ref.indices)
    code = kernel.get_kernel_source(interpret=False)
    loop = code[code.index("for s in range") :]
    assigned = [line.split(" = ")[0].strip() for line in loop.splitlines() if " = " in line]
    offsets = [name for name in assigned if name.startswith("offs")]
    assert len(offsets) == 1, code  # one offset for both stores
    # the padded columns' mask (72 of 128 valid) named once, read by both reductions
    assert [name for name in assigned if name.startswith("valid")] == ["valid"], code
    assert loop.count("tl.where(valid, ") == 2, code
    if m % blk:
        assert len([name for name in assigned if name.startswith("mask")]) == 1, code


def _tidied(src: str) -> str:
    fn = ast.parse(src).body[0]
    merge_repeated_values(fn)
    return ast.unparse(fn)


def test_merges_only_values_that_still_hold():
    src = """
def kernel(a, b, n):
    i = tl.arange(0, 64)
    j = tl.arange(0, 64)
    offs = a * 64 + i
    offs_1 = a * 64 + i
    tl.store(b + offs_1, i)
    x = n + 1
    outside = n * 3
    for s in range(4):
        inside = n * 3
        early = x * 2
        x = x + s
        late = x * 2
        again = x * 2
        tl.store(b + early + late + again + inside + outside, s)
    loaded = tl.load(b + offs)
    loaded_1 = tl.load(b + offs)
    tl.store(b + offs, loaded + loaded_1 + j)
"""
    out = _tidied(src)
    assert "offs_1" not in out and "tl.store(b + offs, i)" in out  # the same offset: named once
    assert "j = tl.arange(0, 64)" in out  # a lane index keeps its own name
    assert "early = x * 2" in out  # x is reassigned in the loop: not the value before it
    assert "inside = n * 3" in out  # a loop's values stay in it (the lowering keeps some there for registers)
    assert "late = x * 2" in out and "again" not in out and "early + late + late" in out
    assert "loaded_1 = tl.load(b + offs)" in out  # loads are not merged


def test_nested_blocks_see_outer_values_not_sibling_ones():
    src = """
def kernel(a, b, c):
    offs = a * 8 + 1
    if c > 0:
        inner = a * 8 + 1
        only_here = a * 3
        tl.store(b + inner + only_here, c)
    after = a * 3
    tl.store(b + offs + after, c)
"""
    out = _tidied(src)
    assert "inner" not in out and "tl.store(b + offs + only_here, c)" in out
    assert "after = a * 3" in out  # the branch's value may not have been computed
