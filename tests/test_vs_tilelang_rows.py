"""benchmarks/vs_tilelang.py's decode, thread-view GEMV and grouped GEMM rows through tile2triton.

The GPU run compares these kernels against real TileLang at large sizes; here each row's own
small (``--cpu``) sizes run through tile2triton and are checked element by element against the
row's torch reference (float64), and against the torch implementation the row times.  Outputs
and the T.alloc_global workspaces start NaN-poisoned (``poison_empty``), so an element a kernel
never writes fails.
"""

import importlib.util
import sys

import pytest
import torch
from t2t_util import ROOT, assert_close

pytestmark = pytest.mark.poison_empty

_spec = importlib.util.spec_from_file_location("vs_tilelang_bench", ROOT / "benchmarks" / "vs_tilelang.py")
vs_tilelang = sys.modules.setdefault("vs_tilelang_bench", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(vs_tilelang)  # registered first: its dataclasses look their module up

NEW_ROWS = ("gqa_decode", "mla_decode", "gemv_threads", "grouped_gemm")


def _row(factory: str):
    (row,) = [r for r in vs_tilelang.rows(cpu=True) if r.factory == factory]
    return row


@pytest.mark.parametrize("factory", NEW_ROWS)
def test_row_matches_torch(dev, factory):
    row = _row(factory)
    inputs = row.inputs(dev)
    if factory == "gqa_decode":
        assert 0 < int(inputs[3].sum()) < inputs[3].numel()  # the mask drops some keys, not all
    kernel = vs_tilelang.compile_row(row, "t2t")
    out = kernel(*inputs)
    # the rows' references widen to float64 on the CPU only (float32 at GPU sizes): take it there
    ref = row.ref(*[x.cpu() if torch.is_tensor(x) else x for x in inputs]).to(out.device)
    assert ref.dtype == torch.float64
    assert_close(out, ref, atol=2e-2, rtol=2e-2, msg=row.name)
    assert vs_tilelang.rel_err(out, ref) < row.tol
    # the torch implementation the GPU run times computes the same thing
    assert_close(row.torch_fn(*inputs), ref, atol=3e-2, rtol=3e-2, msg=f"{row.name} (torch)")


def test_row_sizes_are_not_tile_multiples():
    gqa, mla, grouped = _row("gqa_decode"), _row("mla_decode"), _row("grouped_gemm")
    batch, heads, kv_heads, seqlen, dim, block_N, block_H, num_split, *_ = gqa.args
    assert seqlen % num_split and (seqlen // num_split) % block_N and heads // kv_heads < block_H
    assert mla.args[2] % mla.args[5]  # the context is not a whole number of key blocks
    sizes, K, N, block_M, block_N, block_K, *_ = grouped.args
    assert all(s % block_M for s in sizes) and K % block_K and N % block_N


def test_pass_configs_reach_the_kernel():
    row = _row("gqa_decode")
    kernel = vs_tilelang.compile_row(row, "t2t")
    assert kernel.pass_configs == {"tl.disable_warp_specialized": True}
    mla = vs_tilelang.compile_row(_row("mla_decode"), "t2t")
    assert mla.pass_configs == {"tl.enable_fast_math": True}


def test_rows_selection():
    names = [r.name for r in vs_tilelang.rows(cpu=True)]
    picked = [n for i, n in enumerate(names) if vs_tilelang.selected(i, n, "decode,grouped")]
    assert [n.split()[0] for n in picked] == ["GQA", "MLA", "grouped"]
    assert [i for i, n in enumerate(names) if vs_tilelang.selected(i, n, "0, 21")] == [0, 21]
    assert all(vs_tilelang.selected(i, n, "") for i, n in enumerate(names))
    # the row numbers BENCHMARKS.md's --cold list names stay where they were
    assert names[0].startswith("FA bhsd D128") and names[10].startswith("GEMM") and names[16].startswith("softmax")
