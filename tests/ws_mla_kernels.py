"""A hand warp-specialized sparse MLA forward, written after the structure of TileLang's DeepSeek-V3.2
``sparse_mla_fwd_pipelined`` (its example, not copied): for tests (tests/test_forward_shared.py)
and the H200 probe (benchmarks/mlapipe_probe.py).

One program per query row ``s``, all ``H`` heads.  Three thread ranges of 128:

- a producer (``tx >= 256``) gathers, per block of ``BI`` key rows, the rows ``KV[b, Indices[b, s,
  g, k]]`` into a two-slot shared ring with ``T.ptx_cp_async`` (8 threads a row, 8 elements each),
  marking the rows whose index passes the causal limit and skipping the others;
- consumer 0 (``tx < 128``) waits for a slot, computes the scores of the block against Q (three
  gemms: two halves of ``D`` and the tail), the online softmax, P into shared memory, and the
  left half of the output;
- consumer 1 (``128 <= tx < 256``) takes P and the rescale factor from shared memory and computes
  the right half.

mbarriers order them (``k_ready``/``k_free`` per slot, ``s_ready``/``s_free`` for P).
"""

import tile2triton.language as T


def sparse_mla_ws(heads: int, dim: int, tail: int, topk: int, sm_scale: float, block: int = 64, shape=None):
    """``Out[b, s, h, :dim]`` = softmax over the valid ``topk`` keys of ``s`` of (Q K^T * sm_scale) V,
    with K = KV rows, V their first ``dim`` columns; key index ``k`` valid when ``k <= q_start + s``.
    ``shape``: static (batch, seq_len, seq_len_kv) instead of dynamic ones (TMA copies on Hopper)."""
    H, D, DT, BI = heads, dim, tail, block
    NI = topk // BI
    assert topk % BI == 0 and NI % 2 == 0 and BI % 16 == 0 and (D + DT) % 64 == 0 and H >= 16
    stages = 2
    scale = sm_scale * 1.44269504  # log2(e)
    batch, seq_len, seq_len_kv = shape if shape is not None else T.dynamic("batch, seq_len, seq_len_kv")

    @T.prim_func
    def main(
        Q: T.Tensor([batch, seq_len, H, D + DT], "bfloat16"),
        KV: T.Tensor([batch, seq_len_kv, 1, D + DT], "bfloat16"),
        Indices: T.Tensor([batch, seq_len, 1, topk], "int32"),
        q_start: T.Tensor([1], "int32"),
        Out: T.Tensor([batch, seq_len, H, D], "bfloat16"),
    ):
        with T.Kernel(seq_len, batch, 1, threads=384) as (bx, by, bz):
            Q_s = T.alloc_shared([H, D + DT], "bfloat16")
            KV_s = T.alloc_shared([stages, BI, D + DT], "bfloat16")
            O_s = Q_s
            valid = T.alloc_shared([stages, BI], "bool", scope="shared")
            acc_l = T.alloc_fragment([H, D // 2], "float32")
            acc_r = T.alloc_fragment([H, D // 2], "float32")
            acc_s = T.alloc_fragment([H, BI], "float32")
            P_s = T.alloc_shared([H, BI], "bfloat16")
            sumexp = T.alloc_fragment([H], "float32")
            sumexp_s = T.alloc_shared([H], "float32")
            sumexp_i = T.alloc_fragment([H], "float32")
            alpha_s = T.alloc_shared([H], "float32", scope="shared")
            alpha = T.alloc_fragment([H], "float32")
            m_i = T.alloc_fragment([H], "float32")
            m_prev = T.alloc_fragment([H], "float32")
            row_index = T.alloc_var("int32")

            q_ready = T.alloc_barrier(arrive_count=384)
            k_ready = T.alloc_barrier(arrive_count=[128] * stages)
            k_free = T.alloc_barrier(arrive_count=[256] * stages)
            s_ready = T.alloc_barrier(arrive_count=256)
            s_free = T.alloc_barrier(arrive_count=256)

            b, s, g = by, bx, bz
            limit = q_start[0] + s
            tx = T.get_thread_binding()

            T.tma_copy(Q[b, s, 0:H, :], Q_s, barrier=q_ready)
            T.barrier_arrive(q_ready)

            if tx < 128:
                T.fill(sumexp, 0)
                T.fill(m_i, -(2**30))
                T.fill(acc_l, 0)
                T.barrier_wait(q_ready, 0)
                for i_i in T.serial(NI // stages):
                    for st in T.unroll(stages):
                        T.barrier_wait(k_ready[st], i_i & 1)
                        for h, j in T.Parallel(H, BI):
                            acc_s[h, j] = T.if_then_else(valid[st, j], 0, -T.infinity("float32"))
                        T.wgmma_gemm(Q_s[:, : D // 2], KV_s[st, :, : D // 2], acc_s, transpose_B=True)
                        T.wgmma_gemm(Q_s[:, D // 2 : D], KV_s[st, :, D // 2 : D], acc_s, transpose_B=True)
                        T.wgmma_gemm(Q_s[:, D:], KV_s[st, :, D:], acc_s, transpose_B=True)
                        T.wait_wgmma(0)
                        if i_i != 0 or st != 0:
                            T.barrier_arrive(s_free)
                            T.barrier_wait(s_free, ((i_i * stages + st) & 1) ^ 1)
                        T.copy(m_i, m_prev)
                        T.reduce_max(acc_s, m_i, dim=1, clear=False)
                        for h in T.Parallel(H):
                            m_i[h] = T.max(m_i[h], m_prev[h])
                        for h in T.Parallel(H):
                            alpha[h] = T.exp2((m_prev[h] - m_i[h]) * scale)
                        for h, j in T.Parallel(H, BI):
                            acc_s[h, j] = T.exp2(acc_s[h, j] * scale - m_i[h] * scale)
                        T.reduce_sum(acc_s, sumexp_i, dim=1)
                        for h in T.Parallel(H):
                            sumexp[h] = sumexp[h] * alpha[h] + sumexp_i[h]
                        for h, d in T.Parallel(H, D // 2):
                            acc_l[h, d] *= alpha[h]
                        T.copy(alpha, alpha_s)
                        T.copy(acc_s, P_s)
                        T.gemm(P_s, KV_s[st, :, : D // 2], acc_l)
                        T.barrier_arrive(s_ready)
                        T.barrier_arrive(k_free[st])
                for h in T.Parallel(H):
                    sumexp_s[h] = sumexp[h]
                for h, d in T.Parallel(H, D // 2):
                    acc_l[h, d] /= sumexp[h]
                T.copy(acc_l, O_s[:, : D // 2])
                T.copy(O_s[:, : D // 2], Out[b, s, 0:H, 0 : D // 2])
            elif tx >= 128 and tx < 256:
                T.fill(acc_r, 0)
                for i_i in T.serial(NI // stages):
                    for st in T.unroll(stages):
                        T.barrier_arrive(s_ready)
                        T.barrier_wait(s_ready, (i_i * stages + st) & 1)
                        for h, d in T.Parallel(H, D // 2):
                            acc_r[h, d] *= alpha_s[h]
                        T.gemm(P_s, KV_s[st, :, D // 2 : D], acc_r)
                        T.barrier_arrive(k_free[st])
                        if st != stages - 1 or i_i != NI // stages - 1:
                            T.barrier_arrive(s_free)
                for h, d in T.Parallel(H, D // 2):
                    acc_r[h, d] /= sumexp_s[h]
                T.copy(acc_r, O_s[:, D // 2 : D])
                T.copy(O_s[:, D // 2 : D], Out[b, s, 0:H, D // 2 : D])
            elif tx >= 256:
                for i_i in T.serial(NI // stages):
                    for st in T.unroll(stages):
                        T.barrier_wait(k_free[st], (i_i & 1) ^ 1)
                        for r in T.serial(BI // 16):
                            row_index = Indices[b, s, g, (i_i * stages + st) * BI + r * 16 + (tx - 256) // 8]
                            valid[st, r * 16 + (tx - 256) // 8] = row_index <= limit
                            if valid[st, r * 16 + (tx - 256) // 8]:
                                for u in T.serial((D + DT) // 64):
                                    T.ptx_cp_async(
                                        T.access_ptr(
                                            KV_s[st, r * 16 + (tx - 256) // 8, 64 * u + (tx - 256) % 8 * 8], "w", 8
                                        ),
                                        T.access_ptr(KV[b, row_index, g, 64 * u + (tx - 256) % 8 * 8], "r", 8),
                                        8,
                                    )
                        T.cp_async_barrier_noinc(k_ready[st])

    return main


def reference(q, kv, idx, start: int, sm_scale: float, dim: int):
    """float64 torch: query row s attends to its topk keys with index <= start + s."""
    import torch

    S, SKV = q.shape[1], kv.shape[1]
    qf, kf = q[0].double(), kv[0, :, 0].double()
    ids = idx[0, :, 0].long()
    valid = ids <= (start + torch.arange(S, device=q.device))[:, None]
    k = kf[ids.clamp(0, SKV - 1)]  # [S, topk, D + DT]
    scores = torch.einsum("shd,std->sht", qf, k) * sm_scale
    scores = scores.masked_fill(~valid[:, None, :], float("-inf"))
    return torch.einsum("sht,std->shd", scores.softmax(-1), k[..., :dim])
