"""An attention backward's key rows over twice the blocks (passes/row_split.py with
TILE2TRITON_ROW_SPLIT_BACKWARD): dQ = dS^T K sums over the key rows, but only into atomic adds, so each
half adds its part.  The kernel is TileLang's varlen GQA backward (examples/flash_attention/
example_gqa_bwd_tma_reduce_varlen.py) with its dK / dV stores masked at each sequence's end; sequences are
not multiples of the tiles."""

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


@pytest.fixture(params=[True, False], ids=["split", "whole"])
def split(monkeypatch, request):
    monkeypatch.setenv("TILE2TRITON_ROW_SPLIT", "always")
    monkeypatch.setenv("TILE2TRITON_ROW_SPLIT_BACKWARD", "1" if request.param else "0")
    return request.param


def backward(batch, total, longest, heads, D, BM, BN, causal, dq_form="element", counter=False, dkv_atomic=False):
    """dQ by ``dq_form``: "element" (a T.Parallel of element atomics under the sequence's mask), "tile" (a
    copy into shared memory, then a tile atomic) or "store" (a plain store of the block's part: no split);
    ``counter``: one more atomic both halves would make (no split); ``dkv_atomic``: dK and dV added as
    tiles from float32 shared copies (the example's ``flashattn_bwd_atomic_add``; rows past a sequence
    add zeros)."""
    scale = (1.0 / D) ** 0.5 * 1.44269504
    sm_scale = (1.0 / D) ** 0.5

    @T.prim_func
    def main(
        Q: T.Tensor((total, heads, D), "float16"),
        K: T.Tensor((total, heads, D), "float16"),
        V: T.Tensor((total, heads, D), "float16"),
        dO: T.Tensor((total, heads, D), "float16"),
        lse: T.Tensor((batch, heads, longest), "float32"),
        Delta: T.Tensor((batch, heads, longest), "float32"),
        cu_seqlens: T.Tensor((batch + 1,), "int32"),
        dQ: T.Tensor((total, heads, D), "float32"),
        dK: T.Tensor((total, heads, D), "float32"),
        dV: T.Tensor((total, heads, D), "float32"),
        count: T.Tensor((1,), "int32"),
    ):
        with T.Kernel(heads, T.ceildiv(longest, BM), batch, threads=256) as (bx, by, bz):
            K_shared = T.alloc_shared((BM, D), "float16")
            V_shared = T.alloc_shared((BM, D), "float16")
            q = T.alloc_shared((BN, D), "float16")
            do = T.alloc_shared((BN, D), "float16")
            lse_shared = T.alloc_shared((BN,), "float32")
            delta = T.alloc_shared((BN,), "float32")
            dsT_shared = T.alloc_shared((BM, BN), "float16")
            qkT = T.alloc_fragment((BM, BN), "float32")
            dsT = T.alloc_fragment((BM, BN), "float32")
            qkT_cast = T.alloc_fragment((BM, BN), "float16")
            dsT_cast = T.alloc_fragment((BM, BN), "float16")
            dv = T.alloc_fragment((BM, D), "float32")
            dk = T.alloc_fragment((BM, D), "float32")
            dq = T.alloc_fragment((BN, D), "float32")
            dq_shared = T.alloc_shared((BN, D), "float32")
            dk_shared = T.alloc_shared((BM, D), "float32")
            dv_shared = T.alloc_shared((BM, D), "float32")
            start = cu_seqlens[bz]
            length = cu_seqlens[bz + 1] - start
            T.copy(K[start + by * BM : start + (by + 1) * BM, bx, :], K_shared)
            T.copy(V[start + by * BM : start + (by + 1) * BM, bx, :], V_shared)
            T.clear(dv)
            T.clear(dk)
            loop_st = T.min(T.floordiv(by * BM, BN), T.floordiv(length, BN)) if causal else 0
            for k in T.Pipelined(loop_st, T.ceildiv(length, BN), num_stages=2):
                T.copy(Q[start + k * BN : start + (k + 1) * BN, bx, :], q)
                T.clear(qkT)
                T.gemm(K_shared, q, qkT, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(dO[start + k * BN : start + (k + 1) * BN, bx, :], do)
                T.clear(dsT)
                T.gemm(V_shared, do, dsT, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(lse[bz, bx, k * BN : (k + 1) * BN], lse_shared)
                for i, j in T.Parallel(BM, BN):
                    qkT[i, j] = T.exp2(qkT[i, j] * scale - lse_shared[j])
                for i, j in T.Parallel(BM, BN):
                    visible = by * BM + i < length and k * BN + j < length
                    if causal:
                        visible = visible and by * BM + i <= k * BN + j
                    qkT[i, j] = T.if_then_else(visible, qkT[i, j], 0)
                T.copy(qkT, qkT_cast)
                T.gemm(qkT_cast, do, dv, policy=T.GemmWarpPolicy.FullRow)
                T.copy(Delta[bz, bx, k * BN : (k + 1) * BN], delta)
                for i, j in T.Parallel(BM, BN):
                    dsT_cast[i, j] = qkT[i, j] * (dsT[i, j] - delta[j]) * sm_scale
                T.gemm(dsT_cast, q, dk, policy=T.GemmWarpPolicy.FullRow)
                T.copy(dsT_cast, dsT_shared)
                T.clear(dq)
                T.gemm(dsT_shared, K_shared, dq, transpose_A=True)
                if dq_form == "element":
                    for i, j in T.Parallel(BN, D):
                        if k * BN + i < length:
                            T.atomic_add(dQ[start + k * BN + i, bx, j], dq[i, j])
                elif dq_form == "tile":
                    T.copy(dq, dq_shared)
                    T.atomic_add(dQ[start + k * BN : start + (k + 1) * BN, bx, :], dq_shared)
                else:
                    T.copy(dq, dQ[start + k * BN : start + (k + 1) * BN, bx, :])
            if counter:
                T.atomic_add(count[0], 1)
            if dkv_atomic:
                T.copy(dk, dk_shared)
                T.atomic_add(dK[start + by * BM : start + (by + 1) * BM, bx, :], dk_shared)
                T.copy(dv, dv_shared)
                T.atomic_add(dV[start + by * BM : start + (by + 1) * BM, bx, :], dv_shared)
            else:
                for i, j in T.Parallel(BM, D):
                    if by * BM + i < length:
                        dK[start + by * BM + i, bx, j] = dk[i, j]
                        dV[start + by * BM + i, bx, j] = dv[i, j]

    return main


def _inputs(dev, lengths, heads, D):
    total, batch = sum(lengths), len(lengths)
    q, k, v, do = (torch.randn(total, heads, D, device=dev).half() for _ in range(4))
    lse = torch.rand(batch, heads, max(lengths), device=dev) * 4
    delta = torch.randn(batch, heads, max(lengths), device=dev) * 0.1
    cu = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.int32, device=dev)
    return q, k, v, do, lse, delta, cu


def _reference(lengths, causal, q, k, v, do, lse, delta, cu):
    """dQ, dK, dV in float64 from the kernel's own inputs (its lse and Delta as given)."""
    D = q.shape[-1]
    scale, sm_scale = (1.0 / D) ** 0.5 * 1.44269504, (1.0 / D) ** 0.5
    dq, dk, dv = (torch.zeros(q.shape, dtype=torch.float64, device=q.device) for _ in range(3))
    for b, n in enumerate(lengths):
        rows = slice(int(cu[b]), int(cu[b + 1]))
        Q, K, V, dO = (x[rows].double().transpose(0, 1) for x in (q, k, v, do))  # heads, n, D
        P = torch.exp2(K @ Q.transpose(1, 2) * scale - lse[b, :, None, :n].double())  # heads, keys, queries
        if causal:
            P = P * (torch.arange(n)[:, None] <= torch.arange(n)[None, :]).to(q.device)
        dS = P * (V @ dO.transpose(1, 2) - delta[b, :, None, :n].double()) * sm_scale
        P, dS = P.half().double(), dS.half().double()  # the kernel's float16 casts before its gemms
        dv[rows] = (P @ dO).transpose(0, 1)
        dk[rows] = (dS @ Q).transpose(0, 1)
        dq[rows] = (dS.transpose(1, 2) @ K).transpose(0, 1)
    return dq, dk, dv


def _run(dev, lengths, heads, D, BN, causal, **kw):
    kernel = tilelang.compile(backward(len(lengths), sum(lengths), max(lengths), heads, D, 128, BN, causal, **kw))
    ins = _inputs(dev, lengths, heads, D)
    dq = torch.zeros(sum(lengths), heads, D, device=dev)
    fill = 0.0 if kw.get("dkv_atomic") else float("nan")  # atomics add into zeros
    dk, dv = (torch.full((sum(lengths), heads, D), fill, device=dev) for _ in range(2))
    count = torch.zeros(1, dtype=torch.int32, device=dev)
    kernel(*ins, dq, dk, dv, count)
    return kernel, (dq, dk, dv), _reference(lengths, causal, *ins), count


@pytest.mark.parametrize(
    "lengths, heads, D, BN, causal, dq_form",
    [
        ((150,), 2, 32, 32, False, "element"),  # the second key tile past the sequence's end
        ((170, 90), 1, 32, 32, True, "element"),  # varlen: the second sequence starts at row 170
        ((140, 100), 1, 16, 16, False, "tile"),  # dQ staged in shared memory, added as a tile
        ((100, 140), 2, 16, 32, True, "atomic dK dV"),  # dK / dV added as tiles too
    ],
)
def test_split_backward_matches_torch(dev, split, lengths, heads, D, BN, causal, dq_form):
    kw = {"dq_form": "tile", "dkv_atomic": True} if dq_form == "atomic dK dV" else {"dq_form": dq_form}
    kernel, got, want, _ = _run(dev, lengths, heads, D, BN, causal, **kw)
    for name, g, w in zip(("dQ", "dK", "dV"), got, want):
        torch.testing.assert_close(g.double(), w, atol=3e-2, rtol=2e-2, msg=name)
    source = kernel.get_kernel_source(interpret=dev == "cpu")
    assert ("row_half" in source) == split, source


@pytest.mark.parametrize("kw", [{"dq_form": "store"}, {"counter": True}], ids=["dq-stored", "a-second-atomic"])
def test_what_both_halves_would_add_keeps_the_tile(dev, split, kw):
    """dQ stored (each half would overwrite the other's part), or an atomic outside the rows (both halves
    would make it): the kernel stays whole."""
    kernel, got, want, count = _run(dev, (150,), 1, 16, 16, False, **kw)
    assert "row_half" not in kernel.get_kernel_source(interpret=dev == "cpu")
    torch.testing.assert_close(got[1].double(), want[1], atol=3e-2, rtol=2e-2)
    if kw.get("counter"):
        assert int(count[0]) == 2  # one a block: 1 head x 2 key tiles x 1 sequence


@pytest.mark.parametrize("heads, split_expected", [(16, True), (40, False)])
def test_the_defaults_split_a_backward_under_half_a_wave(monkeypatch, heads, split_expected):
    """With the switches unset, the sm_90 lowering (offline, a 132-SM card) splits a backward whose grid doubles
    within the SMs (16 heads x 3 key tiles: 48 blocks) and not one past half a wave (40 x 3: 120 blocks);
    TILE2TRITON_ROW_SPLIT_BACKWARD=0 keeps it whole."""
    monkeypatch.delenv("TILE2TRITON_ROW_SPLIT", raising=False)
    monkeypatch.delenv("TILE2TRITON_ROW_SPLIT_BACKWARD", raising=False)
    kernel = tilelang.compile(backward(1, 300, 300, heads, 32, 128, 32, False))
    assert ("row_half" in kernel.lowered_for("sm_90").source) == split_expected
    monkeypatch.setenv("TILE2TRITON_ROW_SPLIT_BACKWARD", "0")
    assert "row_half" not in kernel.lowered_for("sm_90").source
