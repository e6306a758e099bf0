"""Flash attention in the form of TileLang's examples/amd: a forward whose blocks walk query tiles in a
``while`` loop (``bx += num_split``) with a pipelined key loop inside, grouped key/value heads and
``T.use_swizzle``; and a backward over key tiles that adds dQ by atomics. Sequence lengths are not multiples of
the tiles: keys past the end are masked here (the example masks only the causal diagonal)."""

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


@tilelang.jit(out_idx=[3, 4])
def persistent_forward(batch, heads, seq_len, dim, is_causal, groups, block_M, block_N, num_split):
    scale = (1.0 / dim) ** 0.5
    q_shape = [batch, seq_len, heads, dim]
    kv_shape = [batch, seq_len, heads // groups, dim]

    @T.prim_func
    def main(
        Q: T.Tensor(q_shape, T.float16),
        K: T.Tensor(kv_shape, T.float16),
        V: T.Tensor(kv_shape, T.float16),
        Output: T.Tensor(q_shape, T.float16),
        lse: T.Tensor([batch, heads, seq_len], T.float32),
    ):
        with T.Kernel(num_split, batch * heads, threads=128) as (b_split, byz):
            T.use_swizzle(3)
            bz = byz // heads
            by = byz % heads
            num_q_blocks = T.ceildiv(seq_len, block_M)
            bx = T.alloc_var(T.int32)
            bx = b_split
            while bx < num_q_blocks:
                acc_o = T.alloc_fragment([block_M, dim], T.float32)
                m_i = T.alloc_fragment([block_M], T.float32)
                l_i = T.alloc_fragment([block_M], T.float32)
                T.fill(acc_o, 0)
                T.fill(m_i, -T.infinity(T.float32))
                T.fill(l_i, 0)
                current_bx = bx
                q0 = current_bx * block_M
                Q_shared = T.alloc_shared([block_M, dim], T.float16)
                K_shared = T.alloc_shared([block_N, dim], T.float16)
                V_shared = T.alloc_shared([block_N, dim], T.float16)
                acc_s = T.alloc_fragment([block_M, block_N], T.float32)
                acc_s_cast = T.alloc_fragment([block_M, block_N], T.float16)
                m_prev = T.alloc_fragment([block_M], T.float32)
                row_sum = T.alloc_fragment([block_M], T.float32)
                T.copy(Q[bz, q0 : q0 + block_M, by, :], Q_shared)
                loop_end = (
                    T.ceildiv(T.min(q0 + block_M, seq_len), block_N) if is_causal else T.ceildiv(seq_len, block_N)
                )
                for k in T.Pipelined(loop_end, num_stages=1):
                    T.copy(K[bz, k * block_N : (k + 1) * block_N, by // groups, :], K_shared)
                    T.copy(V[bz, k * block_N : (k + 1) * block_N, by // groups, :], V_shared)
                    for i, j in T.Parallel(block_M, block_N):
                        visible = k * block_N + j < seq_len
                        if is_causal:
                            visible = visible and q0 + i >= k * block_N + j
                        acc_s[i, j] = T.if_then_else(visible, 0, -T.infinity(T.float32))
                    T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                    T.copy(m_i, m_prev)
                    T.reduce_max(acc_s, m_i, dim=1, clear=False)
                    for i in T.Parallel(block_M):
                        m_prev[i] = T.exp(m_prev[i] * scale - m_i[i] * scale)  # the rescale factor
                        l_i[i] *= m_prev[i]
                    for i, j in T.Parallel(block_M, dim):
                        acc_o[i, j] *= m_prev[i]
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.exp(acc_s[i, j] * scale - m_i[i] * scale)
                    T.reduce_sum(acc_s, row_sum, dim=1)
                    for i in T.Parallel(block_M):
                        l_i[i] += row_sum[i]
                    T.copy(acc_s, acc_s_cast)
                    T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
                for i, j in T.Parallel(block_M, dim):
                    if q0 + i < seq_len:
                        Output[bz, q0 + i, by, j] = acc_o[i, j] / l_i[i]
                for i in T.Parallel(block_M):
                    if q0 + i < seq_len:
                        lse[bz, by, q0 + i] = T.log(l_i[i]) + m_i[i] * scale
                bx = current_bx + num_split

    return main


@tilelang.jit
def backward(batch, heads, seq_len, dim, is_causal, groups, block_M, block_N):
    scale = (1.0 / dim) ** 0.5
    q_shape = [batch, seq_len, heads, dim]
    kv_shape = [batch, seq_len, heads // groups, dim]

    @T.prim_func
    def main(
        Q: T.Tensor(q_shape, T.float16),
        K: T.Tensor(kv_shape, T.float16),
        V: T.Tensor(kv_shape, T.float16),
        dO: T.Tensor(q_shape, T.float16),
        lse: T.Tensor([batch, heads, seq_len], T.float32),
        Delta: T.Tensor([batch, heads, seq_len], T.float32),
        dQ: T.Tensor(q_shape, T.float32),
        dK: T.Tensor(kv_shape, T.float32),
        dV: T.Tensor(kv_shape, T.float32),
    ):
        with T.Kernel(heads, T.ceildiv(seq_len, block_M), batch, threads=128) as (bx, by, bz):
            T.use_swizzle(3)
            K_shared = T.alloc_shared([block_M, dim], T.float16)
            V_shared = T.alloc_shared([block_M, dim], T.float16)
            q_shared = T.alloc_shared([block_N, dim], T.float16)
            do_shared = T.alloc_shared([block_N, dim], T.float16)
            lse_shared = T.alloc_shared([block_N], T.float32)
            delta_shared = T.alloc_shared([block_N], T.float32)
            ds_shared = T.alloc_shared([block_M, block_N], T.float16)
            p_cast = T.alloc_fragment([block_M, block_N], T.float16)
            qkT = T.alloc_fragment([block_M, block_N], T.float32)
            P_acc = T.alloc_fragment([block_M, block_N], T.float32)
            dP = T.alloc_fragment([block_M, block_N], T.float32)
            dv = T.alloc_fragment([block_M, dim], T.float32)
            dk = T.alloc_fragment([block_M, dim], T.float32)
            dq = T.alloc_fragment([block_N, dim], T.float32)
            T.copy(K[bz, by * block_M : (by + 1) * block_M, bx // groups, :], K_shared)
            T.copy(V[bz, by * block_M : (by + 1) * block_M, bx // groups, :], V_shared)
            T.clear(dv)
            T.clear(dk)
            loop_st = T.floordiv(by * block_M, block_N) if is_causal else 0
            for k in T.Pipelined(loop_st, T.ceildiv(seq_len, block_N), num_stages=1):
                T.copy(Q[bz, k * block_N : (k + 1) * block_N, bx, :], q_shared)
                T.clear(qkT)
                T.gemm(K_shared, q_shared, qkT, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(lse[bz, bx, k * block_N : (k + 1) * block_N], lse_shared)
                for i, j in T.Parallel(block_M, block_N):
                    P_acc[i, j] = T.exp(qkT[i, j] * scale - lse_shared[j])
                if is_causal:
                    for i, j in T.Parallel(block_M, block_N):
                        P_acc[i, j] = T.if_then_else(by * block_M + i <= k * block_N + j, P_acc[i, j], 0.0)
                T.copy(dO[bz, k * block_N : (k + 1) * block_N, bx, :], do_shared)
                T.clear(dP)
                T.gemm(V_shared, do_shared, dP, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(P_acc, p_cast)
                T.gemm(p_cast, do_shared, dv, policy=T.GemmWarpPolicy.FullRow)
                T.copy(Delta[bz, bx, k * block_N : (k + 1) * block_N], delta_shared)
                for i, j in T.Parallel(block_M, block_N):
                    p_cast[i, j] = P_acc[i, j] * (dP[i, j] - delta_shared[j]) * scale
                T.gemm(p_cast, q_shared, dk, policy=T.GemmWarpPolicy.FullRow)
                T.copy(p_cast, ds_shared)
                T.clear(dq)
                T.gemm(ds_shared, K_shared, dq, transpose_A=True)
                for i, j in T.Parallel(block_N, dim):
                    if k * block_N + i < seq_len:
                        T.atomic_add(dQ[bz, k * block_N + i, bx, j], dq[i, j])
            for i, j in T.Parallel(block_M, dim):
                if by * block_M + i < seq_len:
                    T.atomic_add(dV[bz, by * block_M + i, bx // groups, j], dv[i, j])
                    T.atomic_add(dK[bz, by * block_M + i, bx // groups, j], dk[i, j])

    return main


def _reference(q, k, v, is_causal, groups):
    """Attention in float64 on (batch, seq, heads, dim) tensors, key heads shared by groups of query heads."""
    k = k.repeat_interleave(groups, dim=2)
    v = v.repeat_interleave(groups, dim=2)
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / q.shape[-1] ** 0.5
    if is_causal:
        seq = q.shape[1]
        scores = scores.masked_fill(~torch.ones(seq, seq, dtype=torch.bool, device=q.device).tril(), float("-inf"))
    return torch.einsum("bhqk,bkhd->bqhd", scores.softmax(-1), v), scores.logsumexp(-1)


@pytest.mark.parametrize("is_causal", [False, True])
def test_persistent_forward_and_backward(dev, is_causal):
    batch, heads, groups, seq_len, dim = 2, 4, 2, 77, 32
    gen = torch.Generator().manual_seed(7)

    def rand(*shape):
        return torch.randn(*shape, generator=gen).half().to(dev)

    q, d_o = rand(batch, seq_len, heads, dim), rand(batch, seq_len, heads, dim)
    k, v = rand(batch, seq_len, heads // groups, dim), rand(batch, seq_len, heads // groups, dim)
    # 3 walkers over 3 query tiles of 32: one tile each; 2 walkers: the first takes tiles 0 and 2
    for num_split in (3, 2):
        fwd = persistent_forward(batch, heads, seq_len, dim, is_causal, groups, 32, 16, num_split)
        out, lse = fwd(q, k, v)
        q64, k64, v64 = (t.double().requires_grad_() for t in (q, k, v))
        ref, ref_lse = _reference(q64, k64, v64, is_causal, groups)
        torch.testing.assert_close(out.double(), ref.detach(), atol=2e-3, rtol=2e-3)
        torch.testing.assert_close(lse.double(), ref_lse.detach(), atol=1e-3, rtol=1e-3)

    ref.backward(d_o.double())
    delta = (out.float() * d_o.float()).sum(-1).transpose(1, 2).contiguous()
    dq = torch.zeros(q.shape, dtype=torch.float32, device=dev)
    dk = torch.zeros(k.shape, dtype=torch.float32, device=dev)
    dv = torch.zeros(v.shape, dtype=torch.float32, device=dev)
    backward(batch, heads, seq_len, dim, is_causal, groups, 32, 16)(q, k, v, d_o, lse, delta, dq, dk, dv)
    for got, want in ((dq, q64.grad), (dk, k64.grad), (dv, v64.grad)):
        torch.testing.assert_close(got.double(), want, atol=2e-2, rtol=2e-2)
