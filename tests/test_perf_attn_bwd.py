"""Attention backward's atomics (issue 23): TileLang's ``T.atomic_add`` / ``atomic_max`` / ``atomic_min``
with no ``memory_order`` are relaxed, so they lower to ``tl.atomic_*(..., sem='relaxed')`` (a
vectorised ``red.global`` on the GPU, where Triton's default acq_rel fences every access); an explicit
order is kept.  An attention backward modelled on TileLang's example (preprocess, the dK/dV kernel
that accumulates dQ with a tile atomic, postprocess) is checked against torch autograd.

Random inputs, sizes that are not multiples of the tiles, NaN-filled outputs, references in float64.
"""

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


# ----------------------------------------------------------------------------- memory orders
@tilelang.jit
def tile_accumulate(M, N, block_M, block_N, order, element_form):
    """Dst[r, c] += A[r, c] + A[r + M, c] over two row blocks of A per program: the same element
    receives two atomics, from two programs."""

    @T.prim_func
    def main(A: T.Tensor((2 * M, N), "float32"), Dst: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), 2, threads=64) as (bx, by, bz):
            frag = T.alloc_fragment((block_M, block_N), "float32")
            T.copy(A[bz * M + bx * block_M : bz * M + (bx + 1) * block_M, by * block_N : (by + 1) * block_N], frag)
            if element_form:
                for i, j in T.Parallel(block_M, block_N):
                    if bx * block_M + i < M:
                        T.atomic_add(Dst[bx * block_M + i, by * block_N + j], frag[i, j], memory_order=order)
            else:
                T.atomic_add(Dst[bx * block_M : (bx + 1) * block_M, by * block_N : (by + 1) * block_N], frag,
                             memory_order=order)  # fmt: skip

    return main


@pytest.mark.parametrize("element_form", [False, True], ids=["tile", "element"])
@pytest.mark.parametrize("order", [None, "relaxed", "release", "seq_cst"])
def test_tile_atomic_add_orders(dev, order, element_form):
    M, N = 45, 37  # not multiples of the 16 x 32 tile
    a = torch.randn(2 * M, N, device=dev)
    dst0 = torch.randn(M, N, device=dev)
    dst = dst0.clone()
    kernel = tile_accumulate(M, N, 16, 32, order, element_form)
    kernel(a, dst)
    ref = dst0.double() + a[:M].double() + a[M:].double()
    assert_close(dst, ref, atol=1e-5, rtol=1e-5)
    source = kernel.get_kernel_source(interpret=False)
    sem = {None: "relaxed", "relaxed": "relaxed", "release": "release", "seq_cst": None}[order]
    call = next(line for line in source.splitlines() if "tl.atomic_add(" in line)
    if sem is None:  # Triton's default, acq_rel, is its strongest order
        assert "sem=" not in call
    else:
        assert f"sem='{sem}'" in call


@tilelang.jit
def max_min_store(M, N, rows, store_order):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), Mx: T.Tensor((rows, N), "float32"), Mn: T.Tensor((rows, N), "int32"),
             Last: T.Tensor((1,), "float32")):  # fmt: skip
        with T.Kernel(T.ceildiv(M, 16), threads=32) as bx:
            for i, j in T.Parallel(16, N):
                r = bx * 16 + i
                if r < M:
                    T.atomic_max(Mx[r % rows, j], A[r, j])  # several rows collide in one slot
                    T.atomic_min(Mn[r % rows, j], T.cast(A[r, j] * 100, "int32"), memory_order="acquire")
            if bx == 0:
                T.atomic_store(Last[0], A[0, 0], memory_order=store_order)

    return main


@pytest.mark.parametrize("store_order", ["seq_cst", "relaxed"])
def test_atomic_max_min_store_orders(dev, store_order):
    M, N, rows = 41, 19, 6
    a = torch.randn(M, N, device=dev)
    mx0 = torch.randn(rows, N, device=dev)
    mn0 = torch.randint(-50, 50, (rows, N), device=dev, dtype=torch.int32)
    mx, mn, last = mx0.clone(), mn0.clone(), poison((1,), torch.float32, dev)
    kernel = max_min_store(M, N, rows, store_order)
    kernel(a, mx, mn, last)
    ref_mx, ref_mn = mx0.double().clone(), mn0.clone()
    scaled = (a * 100).to(torch.int32)
    for r in range(M):
        ref_mx[r % rows] = torch.maximum(ref_mx[r % rows], a[r].double())
        ref_mn[r % rows] = torch.minimum(ref_mn[r % rows], scaled[r])
    assert_close(mx, ref_mx, atol=0, rtol=0)
    assert torch.equal(mn.cpu(), ref_mn.cpu())
    assert_close(last, a[:1, 0].double(), atol=0, rtol=0)
    source = kernel.get_kernel_source(interpret=False)
    lines = source.splitlines()
    assert "sem='relaxed'" in next(s for s in lines if "tl.atomic_max(" in s)
    assert "sem='acquire'" in next(s for s in lines if "tl.atomic_min(" in s)
    xchg = next(s for s in lines if "tl.atomic_xchg(" in s)
    assert ("sem='relaxed'" in xchg) == (store_order == "relaxed") and "acq_rel" not in xchg


# ----------------------------------------------------------------------------- attention backward
LOG2E = 1.44269504


@tilelang.jit(out_idx=[2])
def bwd_preprocess(batch, heads, seq_len, dim, blk=32):
    shape = [batch, heads, seq_len, dim]

    @T.prim_func
    def prep(O: T.Tensor(shape, "float16"), dO: T.Tensor(shape, "float16"),
             Delta: T.Tensor([batch, heads, seq_len], "float32")):  # fmt: skip
        with T.Kernel(heads, T.ceildiv(seq_len, blk), batch) as (bx, by, bz):
            o = T.alloc_fragment([blk, blk], "float16")
            do = T.alloc_fragment([blk, blk], "float16")
            acc = T.alloc_fragment([blk, blk], "float32")
            delta = T.alloc_fragment([blk], "float32")
            T.clear(acc)
            for k in range(T.ceildiv(dim, blk)):
                T.copy(O[bz, bx, by * blk : (by + 1) * blk, k * blk : (k + 1) * blk], o)
                T.copy(dO[bz, bx, by * blk : (by + 1) * blk, k * blk : (k + 1) * blk], do)
                for i, j in T.Parallel(blk, blk):
                    acc[i, j] += o[i, j] * do[i, j]
            T.reduce_sum(acc, delta, 1)
            T.copy(delta, Delta[bz, bx, by * blk : (by + 1) * blk])

    return prep


@tilelang.jit
def bwd_main(batch, heads, seq_len, dim, causal, block_M, block_N, tile_atomic):
    sm_scale = (1.0 / dim) ** 0.5
    scale = sm_scale * LOG2E
    shape = [batch, heads, seq_len, dim]

    @T.prim_func
    def main(Q: T.Tensor(shape, "float16"), K: T.Tensor(shape, "float16"), V: T.Tensor(shape, "float16"),
             dO: T.Tensor(shape, "float16"), lse: T.Tensor([batch, heads, seq_len], "float32"),
             Delta: T.Tensor([batch, heads, seq_len], "float32"), dQ: T.Tensor(shape, "float32"),
             dK: T.Tensor(shape, "float16"), dV: T.Tensor(shape, "float16")):  # fmt: skip
        with T.Kernel(heads, T.ceildiv(seq_len, block_M), batch, threads=128) as (bx, by, bz):
            K_shared = T.alloc_shared([block_M, dim], "float16")
            V_shared = T.alloc_shared([block_M, dim], "float16")
            dsT_shared = T.alloc_shared([block_M, block_N], "float16")
            q = T.alloc_shared([block_N, dim], "float16")
            do = T.alloc_shared([block_N, dim], "float16")
            lse_shared = T.alloc_shared([block_N], "float32")
            delta = T.alloc_shared([block_N], "float32")
            qkT = T.alloc_fragment([block_M, block_N], "float32")
            dsT = T.alloc_fragment([block_M, block_N], "float32")
            qkT_cast = T.alloc_fragment([block_M, block_N], "float16")
            dsT_cast = T.alloc_fragment([block_M, block_N], "float16")
            dv = T.alloc_fragment([block_M, dim], "float32")
            dk = T.alloc_fragment([block_M, dim], "float32")
            dq = T.alloc_fragment([block_N, dim], "float32")
            T.copy(K[bz, bx, by * block_M : (by + 1) * block_M, :], K_shared)
            T.copy(V[bz, bx, by * block_M : (by + 1) * block_M, :], V_shared)
            T.clear(dv)
            T.clear(dk)
            loop_st = T.floordiv(by * block_M, block_N) if causal else 0
            for k in T.Pipelined(loop_st, T.ceildiv(seq_len, block_N), num_stages=2):
                T.copy(Q[bz, bx, k * block_N : (k + 1) * block_N, :], q)
                T.clear(qkT)
                T.gemm(K_shared, q, qkT, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(lse[bz, bx, k * block_N : (k + 1) * block_N], lse_shared)
                for i, j in T.Parallel(block_M, block_N):
                    qkT[i, j] = T.exp2(qkT[i, j] * scale - lse_shared[j])
                if causal:
                    for i, j in T.Parallel(block_M, block_N):
                        qkT[i, j] = T.if_then_else(by * block_M + i <= k * block_N + j, qkT[i, j], 0)
                T.copy(dO[bz, bx, k * block_N : (k + 1) * block_N, :], do)
                T.clear(dsT)
                T.gemm(V_shared, do, dsT, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(qkT, qkT_cast)
                T.gemm(qkT_cast, do, dv, policy=T.GemmWarpPolicy.FullRow)
                T.copy(Delta[bz, bx, k * block_N : (k + 1) * block_N], delta)
                for i, j in T.Parallel(block_M, block_N):
                    dsT_cast[i, j] = qkT[i, j] * (dsT[i, j] - delta[j]) * sm_scale
                T.gemm(dsT_cast, q, dk, policy=T.GemmWarpPolicy.FullRow)
                T.copy(dsT_cast, dsT_shared)
                T.clear(dq)
                T.gemm(dsT_shared, K_shared, dq, transpose_A=True)
                if tile_atomic:  # the attention-sink examples' form
                    T.atomic_add(dQ[bz, bx, k * block_N : (k + 1) * block_N, :], dq)
                else:  # the flash-attention examples' form
                    for i, j in T.Parallel(block_N, dim):
                        T.atomic_add(dQ[bz, bx, k * block_N + i, j], dq[i, j])
            T.copy(dv, dV[bz, bx, by * block_M : (by + 1) * block_M, :])
            T.copy(dk, dK[bz, bx, by * block_M : (by + 1) * block_M, :])

    return main


@tilelang.jit(out_idx=[1])
def bwd_postprocess(batch, heads, seq_len, dim, blk=32):
    shape = [batch, heads, seq_len, dim]

    @T.prim_func
    def post(dQ: T.Tensor(shape, "float32"), dQ_out: T.Tensor(shape, "float16")):
        with T.Kernel(T.ceildiv(seq_len, blk), heads, batch, threads=128) as (bx, by, bz):
            T.copy(dQ[bz, by, bx * blk : (bx + 1) * blk, :], dQ_out[bz, by, bx * blk : (bx + 1) * blk, :])

    return post


@pytest.mark.parametrize(
    "causal, tile_atomic, block_M, block_N",
    [(False, False, 32, 32), (True, True, 32, 16)],
    ids=["full-element-atomic", "causal-tile-atomic"],
)
def test_attention_backward_against_autograd(dev, causal, tile_atomic, block_M, block_N):
    B, H, S, D = 1, 2, 80, 48  # seq and dim: not multiples of the tiles
    q, k, v, do = (torch.randn(B, H, S, D, device=dev).to(torch.float16) for _ in range(4))
    qd, kd, vd = (t.double().requires_grad_() for t in (q, k, v))
    scores = qd @ kd.transpose(-1, -2) / D**0.5
    if causal:
        scores = scores.masked_fill(torch.ones(S, S, dtype=torch.bool, device=dev).triu(1), float("-inf"))
    o = torch.softmax(scores, dim=-1) @ vd
    o.backward(do.double())
    lse = (torch.logsumexp(scores, dim=-1) * LOG2E).detach().float()  # the forward's log2-domain statistic

    o16 = o.detach().to(torch.float16)
    delta = bwd_preprocess(B, H, S, D)(o16, do)
    assert_close(delta, (o16.double() * do.double()).sum(-1), atol=1e-3, rtol=1e-3)
    dq_acc = torch.zeros(B, H, S, D, device=dev)  # the atomics accumulate into it, as in TileLang's example
    dk, dv = poison((B, H, S, D), torch.float16, dev), poison((B, H, S, D), torch.float16, dev)
    main = bwd_main(B, H, S, D, causal, block_M, block_N, tile_atomic)
    main(q, k, v, do, lse, delta, dq_acc, dk, dv)
    dq = bwd_postprocess(B, H, S, D)(dq_acc)
    assert_close(dv, vd.grad, atol=2e-2, rtol=2e-2, msg="dV")
    assert_close(dk, kd.grad, atol=2e-2, rtol=2e-2, msg="dK")
    assert_close(dq, qd.grad, atol=2e-2, rtol=2e-2, msg="dQ")
    source = main.get_kernel_source(interpret=False)
    assert "sem='relaxed'" in next(s for s in source.splitlines() if "tl.atomic_add(" in s)


def test_backward_launch_takes_the_warps_that_hold_the_most_accumulators():
    """dK/dV kernel at head dim 192, 128 x 32 tiles: 128 x 192 dK and dV, 32 x 192 dQ and two 128 x 32
    score tiles fit no block's registers; 8 warps hold the most (16 warps give a thread 128
    registers, and spilled four times as much in the sm_90 compile)."""
    from tile2triton.runtime import tuning

    func = bwd_main(1, 4, 256, 192, False, 128, 32, False).prim_func
    shape = tuning.shape_of(func)
    assert shape.kind == "attention" and shape.acc_elems == 2 * 128 * 32 + 2 * 128 * 192 + 32 * 192
    assert tuning.heuristic(func, (9, 0)).num_warps == 8
    # the regression size of mha_bwd_bhsd (64 x 64 tiles, dim 64): four warps hold all five
    assert tuning.heuristic(bwd_main(1, 16, 512, 64, False, 64, 64, False).prim_func, (9, 0)).num_warps == 4


# ----------------------------------------------------------------------------- zero-padded gemm operands
@tilelang.jit(out_idx=[2])
def padded_k_gemm(M, N, K, computed_a):
    """C = f(X) @ W with K = 48 (padded to 64 in registers).  W, and X when it is copied as it is,
    come from global copies, so their padded K lanes hold zeros; log(X) computed in a T.Parallel
    holds log(0) = -inf there, which must still be zeroed (-inf * 0 is NaN)."""

    @T.prim_func
    def main(X: T.Tensor((M, K), "float32"), W: T.Tensor((K, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128):
            x = T.alloc_shared((M, K), "float32")
            a = T.alloc_fragment((M, K), "float32")
            w = T.alloc_shared((K, N), "float32")
            c = T.alloc_fragment((M, N), "float32")
            T.copy(X, x)
            T.copy(W, w)
            T.clear(c)
            if computed_a:
                for i, j in T.Parallel(M, K):
                    a[i, j] = T.log(x[i, j])
                T.gemm(a, w, c)
            else:
                T.gemm(x, w, c)
            T.copy(c, C)

    return main


@pytest.mark.parametrize("computed_a", [False, True], ids=["copied", "computed"])
def test_padded_k_gemm_zeroes_only_what_may_hold_junk(dev, computed_a):
    M, N, K = 40, 24, 48
    x = torch.rand(M, K, device=dev) + 0.5
    w = torch.randn(K, N, device=dev)
    kernel = padded_k_gemm(M, N, K, computed_a)
    out = kernel(x, w)
    a = x.double().log() if computed_a else x.double()
    tol = 1e-3 if dev == "cpu" else 2e-2  # a float32 tl.dot runs in tf32 on the GPU (as TileLang's T.gemm)
    assert_close(out, a @ w.double(), atol=tol, rtol=tol)
    dot = next(s for s in kernel.get_kernel_source(interpret=False).splitlines() if "tl.dot(" in s)
    # W's padding is zero (a copy from global); X's too, log(X)'s is not
    assert dot.count("tl.where") == (1 if computed_a else 0)
