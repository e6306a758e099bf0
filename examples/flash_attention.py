"""Flash attention forward, (batch, heads, seq, dim) layout, causal or not.

Written the way TileLang's examples/flash_attention/example_mha_fwd_bhsd.py is: Q tile in
shared memory, a K/V loop with an online softmax in base 2 (scores scaled by log2(e)/sqrt(dim)
and exponentiated with T.exp2), the score tile ``acc_s`` pre-filled with 0 or -inf by a
T.Parallel (causal mask and key padding) before ``T.gemm(Q, K, acc_s, transpose_B=True)``, and
the probabilities cast to fp16 (``acc_s_cast``) for the second gemm with V.

seq_q / seq_kv need not be multiples of the tiles: keys past the end are masked to -inf.
With seq_q < seq_kv, the causal mask is aligned to the end (query i sees keys <= i + seq_kv - seq_q).

Run: python examples/flash_attention.py
"""

import math

import torch

import tile2triton as tilelang
import tile2triton.language as T


@tilelang.jit(out_idx=[3])
def flashattn(batch, heads, seq_q, seq_kv, dim, is_causal, block_M=64, block_N=64, num_stages=1, threads=128):
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    q_shape = [batch, heads, seq_q, dim]
    kv_shape = [batch, heads, seq_kv, dim]
    dtype = "float16"
    accum_dtype = "float"
    past_len = seq_kv - seq_q
    assert past_len >= 0, "seq_kv must be >= seq_q"

    @T.macro
    def MMA0(K, Q_shared, K_shared, acc_s, k, bx, by, bz):
        T.copy(K[bz, by, k * block_N : (k + 1) * block_N, :], K_shared)
        for i, j in T.Parallel(block_M, block_N):
            q_idx = bx * block_M + i + past_len
            k_idx = k * block_N + j
            if is_causal:
                acc_s[i, j] = T.if_then_else((q_idx >= k_idx) & (k_idx < seq_kv), 0, -T.infinity(acc_s.dtype))
            else:
                acc_s[i, j] = T.if_then_else(k_idx < seq_kv, 0, -T.infinity(acc_s.dtype))
        T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)

    @T.macro
    def MMA1(V, V_shared, acc_s_cast, acc_o, k, by, bz):
        T.copy(V[bz, by, k * block_N : (k + 1) * block_N, :], V_shared)
        T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)

    @T.macro
    def Softmax(acc_s, acc_s_cast, scores_max, scores_max_prev, scores_scale, scores_sum, logsum):
        T.copy(scores_max, scores_max_prev)
        T.fill(scores_max, -T.infinity(accum_dtype))
        T.reduce_max(acc_s, scores_max, dim=1, clear=False)
        for i in T.Parallel(block_M):
            scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
        # To do causal softmax, we need to set the scores_max to 0 if it is -inf
        # This process is called Check_inf in FlashAttention3 code, and it only need to be done
        # in the first ceil_div(kBlockM, kBlockN) steps.
        for i in T.Parallel(block_M):
            scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
        for i, j in T.Parallel(block_M, block_N):
            # Instead of computing exp(x - max), we compute exp2(x * log_2(e) - max * log_2(e)),
            # which can be fused into one ffma instruction.
            acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
        T.reduce_sum(acc_s, scores_sum, dim=1)
        for i in T.Parallel(block_M):
            logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
        T.copy(acc_s, acc_s_cast)

    @T.macro
    def Rescale(acc_o, scores_scale):
        for i, j in T.Parallel(block_M, dim):
            acc_o[i, j] *= scores_scale[i]

    @T.prim_func
    def main(
        Q: T.Tensor[q_shape, dtype],
        K: T.Tensor[kv_shape, dtype],
        V: T.Tensor[kv_shape, dtype],
        Output: T.Tensor[q_shape, dtype],
    ):
        with T.Kernel(T.ceildiv(seq_q, block_M), heads, batch, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_M, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            O_shared = T.alloc_shared([block_M, dim], dtype)
            acc_s = T.alloc_fragment([block_M, block_N], accum_dtype)
            acc_s_cast = T.alloc_fragment([block_M, block_N], dtype)
            acc_o = T.alloc_fragment([block_M, dim], accum_dtype)
            scores_max = T.alloc_fragment([block_M], accum_dtype)
            scores_max_prev = T.alloc_fragment([block_M], accum_dtype)
            scores_scale = T.alloc_fragment([block_M], accum_dtype)
            scores_sum = T.alloc_fragment([block_M], accum_dtype)
            logsum = T.alloc_fragment([block_M], accum_dtype)

            T.copy(Q[bz, by, bx * block_M : (bx + 1) * block_M, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))

            loop_range = (
                T.min(T.ceildiv(seq_kv, block_N), T.ceildiv((bx + 1) * block_M + past_len, block_N))
                if is_causal
                else T.ceildiv(seq_kv, block_N)
            )

            for k in T.Pipelined(
                loop_range,
                num_stages=num_stages,
                order=[-1, 0, 3, 1, -1, 2],
                stage=[-1, 0, 0, 1, -1, 1],
                group=[[0], [1, 2], [3, 4, 5, 6, 7, 8, 9, 10], [11], [12], [13]],
            ):
                MMA0(K, Q_shared, K_shared, acc_s, k, bx, by, bz)
                Softmax(acc_s, acc_s_cast, scores_max, scores_max_prev, scores_scale, scores_sum, logsum)
                Rescale(acc_o, scores_scale)
                MMA1(V, V_shared, acc_s_cast, acc_o, k, by, bz)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bz, by, bx * block_M : (bx + 1) * block_M, :])

    return main


def ref_program(Q, K, V, is_causal):
    """Attention in float64."""
    q, k, v = Q.double(), K.double(), V.double()
    dim = q.size(-1)
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(dim)
    if is_causal:
        seq_q, seq_kv = q.size(2), k.size(2)
        qi = torch.arange(seq_q, device=q.device)[:, None] + (seq_kv - seq_q)
        ki = torch.arange(seq_kv, device=q.device)[None, :]
        scores = scores.masked_fill(ki > qi, float("-inf"))
    return torch.einsum("bhqk,bhkd->bhqd", torch.softmax(scores, dim=-1), v)


def check(device=None, batch=2, heads=2, seq_q=80, seq_kv=80, dim=32, is_causal=False, block_M=32, block_N=32):
    """Run at sequence lengths that are not multiples of the tiles; return the max abs error."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    kernel = flashattn(batch, heads, seq_q, seq_kv, dim, is_causal, block_M=block_M, block_N=block_N)
    q = torch.randn(batch, heads, seq_q, dim, device=device).half()
    k = torch.randn(batch, heads, seq_kv, dim, device=device).half()
    v = torch.randn(batch, heads, seq_kv, dim, device=device).half()
    out = kernel(q, k, v)
    ref = ref_program(q, k, v, is_causal)
    torch.testing.assert_close(out.double(), ref, atol=1e-2, rtol=1e-2)
    return (out.double() - ref).abs().max().item()


def main():
    torch.manual_seed(0)
    for dim in (32, 64):
        for is_causal in (False, True):
            err = check(dim=dim, is_causal=is_causal)
            print(f"dim={dim} causal={is_causal}: ok max_err={err:.3g}")
    err = check(seq_q=50, seq_kv=90, is_causal=True)
    print(f"seq_q=50 seq_kv=90 causal: ok max_err={err:.3g}")


if __name__ == "__main__":
    main()
