"""Masks of 0 and -inf from integer comparisons lowered as float arithmetic (codegen/masks.py,
TILE2TRITON_ARITHMETIC_MASKS): the scores they mask are the select's, -inf exactly where the comparisons fail,
for each comparison operator, conjunctions, disjunctions and the swapped select; the rule steps aside where a
difference could wrap (sizes known only at launch) and where it is switched off."""

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty

WINDOW = 37
PAST = 11  # keys before the first query, as past_len in the attention examples

# name: (the mask's condition on q, k; whether the select is (cond, 0, -inf) or (cond, -inf, 0))
CONDITIONS = {
    "causal": (lambda q, k: q >= k, True),
    "strict": (lambda q, k: q > k, True),
    "keys_first": (lambda q, k: k <= q, True),
    "window": (lambda q, k: (q >= k) & (q < k + WINDOW), True),
    "outside_window": (lambda q, k: (q < k) | (q >= k + WINDOW), False),
    "future": (lambda q, k: k > q, False),
    # the second comparison holds for every key: the value ranges decide it, and it leaves no term
    "decided_term": (lambda q, k: (q >= k) & (k < 4096), True),
}


@tilelang.jit(out_idx=[-1])
def masked_scores(m, n, dim, block_m, block_n, kind, dynamic=False):
    cond, zero_where_true = CONDITIONS[kind]
    rows = T.dynamic("rows") if dynamic else m

    @T.prim_func
    def main(
        Q: T.Tensor((rows, dim), T.float16), K: T.Tensor((n, dim), T.float16), S: T.Tensor((rows, n), T.float32)
    ):
        with T.Kernel(T.ceildiv(n, block_n), T.ceildiv(rows, block_m), threads=128) as (bx, by):
            Q_shared = T.alloc_shared((block_m, dim), T.float16)
            K_shared = T.alloc_shared((block_n, dim), T.float16)
            acc = T.alloc_fragment((block_m, block_n), T.float32)
            T.copy(Q[by * block_m, 0], Q_shared)
            T.copy(K[bx * block_n, 0], K_shared)
            for i, j in T.Parallel(block_m, block_n):
                q_idx = by * block_m + i + PAST
                k_idx = bx * block_n + j
                if zero_where_true:
                    acc[i, j] = T.if_then_else(cond(q_idx, k_idx), 0, -T.infinity(T.float32))
                else:
                    acc[i, j] = T.if_then_else(cond(q_idx, k_idx), -T.infinity(T.float32), 0)
            T.gemm(Q_shared, K_shared, acc, transpose_B=True)
            T.copy(acc, S[by * block_m, bx * block_n])

    return main


@pytest.mark.parametrize("kind", sorted(CONDITIONS))
def test_masked_scores_match_torch(dev, kind):
    m, n, dim = 70, 93, 40
    g = torch.Generator().manual_seed(31)
    q = torch.randn(m, dim, generator=g).half()
    k = torch.randn(n, dim, generator=g).half()
    s = masked_scores(m, n, dim, 32, 32, kind)(q.to(dev), k.to(dev)).cpu()

    cond, zero_where_true = CONDITIONS[kind]
    q_idx = torch.arange(m)[:, None] + PAST
    k_idx = torch.arange(n)[None, :]
    keep = cond(q_idx, k_idx) if zero_where_true else ~cond(q_idx, k_idx)
    scores = q.double() @ k.double().T
    assert 0 < int(keep.sum()) < m * n  # both sides of the mask are checked
    assert torch.equal(torch.isneginf(s), ~keep), f"{int((torch.isneginf(s) != ~keep).sum())} misplaced -inf"
    torch.testing.assert_close(s[keep].double(), scores[keep], rtol=2e-3, atol=2e-3)


def _kernel_body(kind, dynamic=False) -> str:
    compiled = masked_scores.compile(m=70, n=93, dim=40, block_m=32, block_n=32, kind=kind, dynamic=dynamic)
    source = compiled.lowered_for("sm_90").source
    return source[source.index("def main_kernel") :]


@pytest.mark.parametrize("kind", sorted(CONDITIONS))
def test_masks_take_the_arithmetic_form(kind):
    body = _kernel_body(kind)
    assert "_neg_inf_unless(" in body and "tl.where(" not in body


def test_window_margins_are_joined_by_their_least():
    body = _kernel_body("window")
    assert "_neg_inf_unless(tl.minimum((q_idx - k_idx).to(tl.float32) + 0.5, " in body
    assert "_neg_inf_unless(tl.maximum(" in _kernel_body("outside_window")


def test_decided_comparisons_leave_no_term():
    body = _kernel_body("decided_term")
    assert "_neg_inf_unless((q_idx - k_idx).to(tl.float32) + 0.5)" in body and "4096" not in body


def test_unbounded_differences_keep_the_select():
    """With the row count known only at launch the value ranges bound no query index: a difference could wrap."""
    body = _kernel_body("causal", dynamic=True)
    assert "tl.where(" in body and "_neg_inf_unless(" not in body


def test_switched_off(monkeypatch):
    monkeypatch.setenv("TILE2TRITON_ARITHMETIC_MASKS", "0")
    body = _kernel_body("window")
    assert "tl.where(" in body and "_neg_inf_unless(" not in body


@tilelang.jit(out_idx=[-1])
def causal_mask(m, n, block, dtype):
    @T.prim_func
    def main(M: T.Tensor((m, n), dtype)):
        with T.Kernel(T.ceildiv(n, block), T.ceildiv(m, block), threads=128) as (bx, by):
            tile = T.alloc_fragment((block, block), dtype)
            for i, j in T.Parallel(block, block):
                tile[i, j] = T.if_then_else(by * block + i + PAST >= bx * block + j, 0, -T.infinity(dtype))
            T.copy(tile, M[by * block, bx * block])

    return main


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_mask_in_each_float_dtype(dev, dtype):
    m, n = 45, 77
    out = causal_mask(m, n, 32, dtype)().cpu()
    want = torch.arange(m)[:, None] + PAST >= torch.arange(n)[None, :]
    assert out.dtype == getattr(torch, dtype)
    assert torch.equal(torch.isneginf(out), ~want) and bool((out[want] == 0).all())
    assert "_neg_inf_unless(" in causal_mask.compile(m=m, n=n, block=32, dtype=dtype).lowered_for("sm_90").source
