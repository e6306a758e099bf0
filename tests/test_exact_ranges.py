"""Value ranges from exact spans (TILE2TRITON_EXACT_RANGES, passes/analysis.Ranges.span).

A block that pools its own range of rows (dsa_hisa's fp8 block mean pooling) computes ``k_end =
T.min(k_start + pool, n)`` and walks ``T.ceildiv(k_end - k_start, block)`` tiles, masking the rows past
``T.min(k_start + (i + 1) * block, k_end)``.  Intervals bound ``k_end - k_start`` only loosely (each operand
over all blocks); enumerating the block index shows it is ``pool`` in every block when ``n`` is a
multiple of ``pool``, as TileLang's simplifier proves.  The loop then has a constant trip count (Triton
unrolls and schedules it) and the row mask folds away; where the last block is partial both stay."""

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import ir
from tile2triton.ir.dtypes import INT32
from tile2triton.passes.analysis import Ranges


def block_mean(n, dim, pool, block):
    """Each block's rows ``[bx * pool, min(bx * pool + pool, n))`` averaged, ``block`` rows a step."""

    @T.prim_func
    def main(X: T.Tensor((n, dim), "float32"), Y: T.Tensor((T.ceildiv(n, pool), dim), "float32")):
        with T.Kernel(T.ceildiv(n, pool), threads=128) as bx:
            tile = T.alloc_fragment((block, dim), "float32")
            acc = T.alloc_fragment((dim,), "float32")
            T.fill(acc, 0.0)
            k_start = bx * pool
            k_end = T.min(k_start + pool, n)
            rows = k_end - k_start
            for i in T.serial(T.ceildiv(rows, block)):
                start = k_start + i * block
                valid = T.min(k_start + (i + 1) * block, k_end) - start
                T.copy(X[start : start + block, :], tile)
                for r, c in T.Parallel(block, dim):
                    if r >= valid:
                        tile[r, c] = 0.0
                T.reduce_sum(tile, acc, dim=0, clear=False)
            for c in T.Parallel(dim):
                Y[bx, c] = acc[c] / rows

    return main


def _code(kernel) -> str:
    src = kernel.get_kernel_source(interpret=False)
    return "\n".join(line for line in src.splitlines() if not line.strip().startswith("#"))


@pytest.mark.parametrize("n", [6 * 96, 6 * 96 - 37])  # every block whole; the last one partial
@pytest.mark.parametrize("switch", ["1", "0"])
def test_block_mean(dev, monkeypatch, n, switch):
    monkeypatch.setenv("TILE2TRITON_EXACT_RANGES", switch)
    dim, pool, block = 40, 96, 32
    torch.manual_seed(n)
    kernel = tilelang.jit(out_idx=[])(block_mean)(n, dim, pool, block)
    x = torch.randn(n, dim, device=dev)
    y = poison(((n + pool - 1) // pool, dim), device=dev)
    kernel(x, y)
    x64 = x.cpu().double()
    expected = torch.stack([x64[s : s + pool].mean(dim=0) for s in range(0, n, pool)])
    assert_close(y, expected, atol=1e-5, rtol=1e-5)
    code = _code(kernel)
    constant = "in range(3):" in code
    assert constant == (switch == "1" and n % pool == 0), code
    assert ("tl.where" not in code) == constant, code  # the row mask folds with the constant trip count


def _var(name, lo, hi, ranges):
    v = ir.Var(name, INT32, "let")
    ranges.set(v, lo, hi)
    return v, ir.VarRef(v)


def test_spans_tighten_lets_and_decide_comparisons():
    r = Ranges(exact_spans=True)
    _, bx = _var("bx", 0, 1023, r)
    k_start = ir.BinOp("*", bx, ir.Const(128, INT32), INT32)
    k_end_var = ir.Var("k_end", INT32, "let")
    r.bind(
        k_end_var, ir.Call("min", (ir.BinOp("+", k_start, ir.Const(128, INT32), INT32), ir.Const(131072, INT32)), INT32)
    )
    size = ir.Var("size", INT32, "let")
    r.bind(size, ir.BinOp("-", ir.VarRef(k_end_var), k_start, INT32))
    assert r.of(ir.VarRef(size)) == (128, 128)  # intervals alone: (-130816, 131072)
    # the last block's end is short of the next multiple: the span is what every block sees
    short = Ranges(exact_spans=True)
    _, bx2 = _var("bx", 0, 9, short)
    end = ir.Var("end", INT32, "let")
    short.bind(
        end,
        ir.Call(
            "min",
            (
                ir.BinOp("+", ir.BinOp("*", bx2, ir.Const(8, INT32), INT32), ir.Const(8, INT32), INT32),
                ir.Const(75, INT32),
            ),
            INT32,
        ),
    )
    rows = ir.Var("rows", INT32, "let")
    short.bind(rows, ir.BinOp("-", ir.VarRef(end), ir.BinOp("*", bx2, ir.Const(8, INT32), INT32), INT32))
    assert short.of(ir.VarRef(rows)) == (3, 8)
    # a comparison of two expressions of the same block index, which intervals cannot decide
    lhs = ir.BinOp("+", bx2, ir.Const(1, INT32), INT32)
    assert short.compare("<=", bx2, lhs) is True
    loose = Ranges()  # the default: intervals only
    loose.set(bx2.var, 0, 9)
    assert loose.compare("<=", bx2, lhs) is None
