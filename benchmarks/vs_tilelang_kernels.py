"""TileLang kernels that benchmarks/vs_tilelang.py runs through real TileLang AND through tile2triton.

Plain TileLang source: this module imports ``tilelang``.  vs_tilelang.py loads it twice, once with
real TileLang and once with ``tilelang`` / ``tilelang.language`` bound to tile2triton (as
``tile2triton run`` does), so both compile the very same functions.  The factories are not
decorated: the benchmark applies ``tilelang.jit(out_idx=..., pass_configs=...)`` itself, so one
source serves both the plain and the fast-math rows.  Written after TileLang's examples
(flash attention BHSD/BSHD/GQA, GQA and MLA decoding, GEMM, grouped GEMM, GEMV in the block and
the thread view, norms) at their configurations.
"""

import tilelang.language as T


def mha_bhsd(batch, heads, seq_q, seq_kv, dim, is_causal, block_M, block_N, num_stages, threads):
    """Flash attention forward, (batch, heads, seq, dim); exp2 with log2(e) folded into the scale."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504
    q_shape = [batch, heads, seq_q, dim]
    kv_shape = [batch, heads, seq_kv, dim]
    dtype = "float16"
    accum_dtype = "float"
    past_len = seq_kv - seq_q

    @T.prim_func
    def main(
        Q: T.Tensor(q_shape, dtype),
        K: T.Tensor(kv_shape, dtype),
        V: T.Tensor(kv_shape, dtype),
        Output: T.Tensor(q_shape, dtype),
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
            for k in T.Pipelined(loop_range, num_stages=num_stages):
                T.copy(K[bz, by, k * block_N : (k + 1) * block_N, :], K_shared)
                if is_causal:
                    for i, j in T.Parallel(block_M, block_N):
                        q_idx = bx * block_M + i + past_len
                        k_idx = k * block_N + j
                        acc_s[i, j] = T.if_then_else(q_idx >= k_idx, 0, -T.infinity(acc_s.dtype))
                else:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(k * block_N + j >= seq_kv, -T.infinity(acc_s.dtype), 0)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum_dtype))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                for i in T.Parallel(block_M):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_M):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(V[bz, by, k * block_N : (k + 1) * block_N, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)

            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bz, by, bx * block_M : (bx + 1) * block_M, :])

    return main


def attn_bshd(batch, heads, seq_len, dim, is_causal, groups, block_M, block_N, num_stages, threads):
    """Flash attention forward, (batch, seq, heads, dim); ``groups`` query heads share a K/V head (GQA)."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504
    head_kv = heads // groups
    q_shape = [batch, seq_len, heads, dim]
    kv_shape = [batch, seq_len, head_kv, dim]
    dtype = "float16"
    accum_dtype = "float"

    @T.prim_func
    def main(
        Q: T.Tensor(q_shape, dtype),
        K: T.Tensor(kv_shape, dtype),
        V: T.Tensor(kv_shape, dtype),
        Output: T.Tensor(q_shape, dtype),
    ):
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=threads) as (bx, by, bz):
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

            T.copy(Q[bz, bx * block_M : (bx + 1) * block_M, by, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))

            loop_range = (
                T.min(T.ceildiv(seq_len, block_N), T.ceildiv((bx + 1) * block_M, block_N))
                if is_causal
                else T.ceildiv(seq_len, block_N)
            )
            for k in T.Pipelined(loop_range, num_stages=num_stages):
                T.copy(K[bz, k * block_N : (k + 1) * block_N, by // groups, :], K_shared)
                if is_causal:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(bx * block_M + i >= k * block_N + j, 0, -T.infinity(acc_s.dtype))
                else:  # TileLang's example clears acc_s here; the mask makes any seq_len exact
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(k * block_N + j >= seq_len, -T.infinity(acc_s.dtype), 0)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum_dtype))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                for i in T.Parallel(block_M):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_M):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(V[bz, k * block_N : (k + 1) * block_N, by // groups, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)

            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bz, bx * block_M : (bx + 1) * block_M, by, :])

    return main


def gemm(M, N, K, block_M, block_N, block_K, num_stages, threads, swizzle, dtype="float16"):
    """C = A @ B with an fp32 accumulator (TileLang's quickstart GEMM, optional panel swizzle)."""

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), "float")
            if swizzle:
                T.use_swizzle(panel_size=swizzle)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def gemv(N, K, BLOCK_N, BLOCK_K):
    """c = B @ a, block view: a BLOCK_N x BLOCK_K tile per step, reduced along K at the end."""

    @T.prim_func
    def main(A: T.Tensor((K,), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((N,), "float16")):
        with T.Kernel(T.ceildiv(N, BLOCK_N), threads=128) as bn:
            acc = T.alloc_fragment((BLOCK_N, BLOCK_K), "float")
            row = T.alloc_fragment((BLOCK_N,), "float")
            T.clear(acc)
            for ko in T.serial(T.ceildiv(K, BLOCK_K)):
                for i, j in T.Parallel(BLOCK_N, BLOCK_K):
                    acc[i, j] += A[ko * BLOCK_K + j].astype("float") * B[bn * BLOCK_N + i, ko * BLOCK_K + j].astype(
                        "float"
                    )
            T.reduce_sum(acc, row, dim=1)
            for i in T.Parallel(BLOCK_N):
                C[bn * BLOCK_N + i] = row[i]

    return main


def softmax(M, N, threads):
    """Row softmax, one row per block, exp2 with log2(e) folded in."""
    scale = 1.44269504

    @T.prim_func
    def main(X: T.Tensor((M, N), "float16"), Y: T.Tensor((M, N), "float16")):
        with T.Kernel(M, threads=threads) as bx:
            x = T.alloc_fragment((N,), "float")
            mx = T.alloc_fragment((1,), "float")
            total = T.alloc_fragment((1,), "float")
            T.copy(X[bx, 0:N], x)
            T.reduce_max(x, mx, dim=0)
            for j in T.Parallel(N):
                x[j] = T.exp2(x[j] * scale - mx[0] * scale)
            T.reduce_sum(x, total, dim=0)
            for j in T.Parallel(N):
                x[j] = x[j] / total[0]
            T.copy(x, Y[bx, 0:N])

    return main


def layernorm(M, N, threads):
    """y = (x - mean) / sqrt(var + eps) * w + b per row (fp16 in/out, fp32 statistics)."""

    @T.prim_func
    def main(
        X: T.Tensor((M, N), "float16"),
        W: T.Tensor((N,), "float16"),
        Bias: T.Tensor((N,), "float16"),
        Y: T.Tensor((M, N), "float16"),
    ):
        with T.Kernel(M, threads=threads) as bx:
            x = T.alloc_fragment((N,), "float")
            sq = T.alloc_fragment((N,), "float")
            s1 = T.alloc_fragment((1,), "float")
            s2 = T.alloc_fragment((1,), "float")
            T.copy(X[bx, 0:N], x)
            for j in T.Parallel(N):
                sq[j] = x[j] * x[j]
            T.reduce_sum(x, s1, dim=0)
            T.reduce_sum(sq, s2, dim=0)
            for j in T.Parallel(N):
                mean = s1[0] / N
                var = s2[0] / N - mean * mean
                Y[bx, j] = (x[j] - mean) * T.rsqrt(var + 1e-5) * W[j].astype("float") + Bias[j].astype("float")

    return main


def rmsnorm(M, N, threads):
    """y = x / sqrt(mean(x^2) + eps) per row (TileLang's rms_norm example, whole row per block)."""

    @T.prim_func
    def main(X: T.Tensor((M, N), "float16"), Y: T.Tensor((M, N), "float16")):
        with T.Kernel(M, threads=threads) as bx:
            x = T.alloc_fragment((N,), "float")
            sq = T.alloc_fragment((N,), "float")
            s = T.alloc_fragment((1,), "float")
            T.copy(X[bx, 0:N], x)
            for j in T.Parallel(N):
                sq[j] = x[j] * x[j]
            T.reduce_sum(sq, s, dim=0)
            for j in T.Parallel(N):
                Y[bx, j] = x[j] * T.rsqrt(s[0] / N + 1e-6)

    return main


def dequant_gemm(M, N, K, block_M, block_N, block_K, num_stages, threads):
    """C = A @ dequant(B).T * scale: B holds int4 weights two per byte (low nibble first, zero point
    8), unpacked into a shared fp16 tile inside the K loop (TileLang's dequantize_gemm style)."""

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B_packed: T.Tensor((N, K // 2), "uint8"),
        Scale: T.Tensor((N,), "float16"),
        C: T.Tensor((M, N), "float16"),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "float16")
            B_shared = T.alloc_shared((block_N, block_K // 2), "uint8")
            B_dequant = T.alloc_shared((block_N, block_K), "float16")
            C_local = T.alloc_fragment((block_M, block_N), "float")
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B_packed[bx * block_N, ko * block_K // 2], B_shared)
                for i, j in T.Parallel(block_N, block_K):
                    nibble = (T.cast(B_shared[i, j // 2], "int32") >> ((j % 2) * 4)) & 15
                    B_dequant[i, j] = T.cast(nibble - 8, "float16")
                T.gemm(A_shared, B_dequant, C_local, transpose_B=True)
            for i, j in T.Parallel(block_M, block_N):
                C_local[i, j] = C_local[i, j] * Scale[bx * block_N + j]
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def batched_gemm(batch, M, N, K, block_M, block_N, block_K, num_stages, threads):
    """C[b] = A[b] @ B[b] for every b: a GEMM per block of the grid's third axis."""

    @T.prim_func
    def main(
        A: T.Tensor((batch, M, K), "float16"),
        B: T.Tensor((batch, K, N), "float16"),
        C: T.Tensor((batch, M, N), "float16"),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), batch, threads=threads) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_K), "float16")
            B_shared = T.alloc_shared((block_K, block_N), "float16")
            C_local = T.alloc_fragment((block_M, block_N), "float")
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[bz, by * block_M : (by + 1) * block_M, ko * block_K : (ko + 1) * block_K], A_shared)
                T.copy(B[bz, ko * block_K : (ko + 1) * block_K, bx * block_N : (bx + 1) * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[bz, by * block_M : (by + 1) * block_M, bx * block_N : (bx + 1) * block_N])

    return main


def gqa_decode(batch, heads, kv_heads, seqlen_kv, dim, block_N, block_H, num_split, num_stages, threads):
    """One decode step of grouped-query attention with a per-key mask (TileLang's
    flash_decoding/example_gqa_decode, split form).  Each block takes the query heads of one K/V
    head and one of ``num_split`` slices of the keys, and leaves its partial output and log2-sum-exp
    in global workspaces; a second kernel weighs the slices together."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # exp2 with log2(e) folded in
    dtype = "float16"
    accum_dtype = "float"
    group_size = heads // kv_heads  # query heads per K/V head
    rows = min(block_H, group_size)  # the query heads one block owns (block_H pads the gemm)
    split_len = (seqlen_kv + num_split - 1) // num_split

    @T.prim_func
    def main(
        Q: T.Tensor([batch, heads, dim], dtype),
        K: T.Tensor([batch, seqlen_kv, kv_heads, dim], dtype),
        V: T.Tensor([batch, seqlen_kv, kv_heads, dim], dtype),
        Mask: T.Tensor([batch, seqlen_kv, kv_heads], "uint8"),
        Output: T.Tensor([batch, heads, dim], dtype),
    ):
        lse_part = T.alloc_global([batch, heads, num_split], accum_dtype)
        out_part = T.alloc_global([batch, heads, num_split, dim], dtype)
        with T.Kernel(batch, heads // rows, num_split, threads=threads) as (bid, hid, sid):
            Q_shared = T.alloc_shared([block_H, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            O_shared = T.alloc_shared([rows, dim], dtype)
            keep = T.alloc_fragment([block_N], "uint8")
            acc_s = T.alloc_fragment([block_H, block_N], accum_dtype)
            acc_s_cast = T.alloc_fragment([block_H, block_N], dtype)
            acc_o = T.alloc_fragment([block_H, dim], accum_dtype)
            scores_max = T.alloc_fragment([block_H], accum_dtype)
            scores_max_prev = T.alloc_fragment([block_H], accum_dtype)
            scores_scale = T.alloc_fragment([block_H], accum_dtype)
            scores_sum = T.alloc_fragment([block_H], accum_dtype)
            logsum = T.alloc_fragment([block_H], accum_dtype)

            kv_head = hid // (group_size // rows)
            T.copy(Q[bid, hid * rows : hid * rows + block_H, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))

            for k in T.Pipelined(T.ceildiv(split_len, block_N), num_stages=num_stages):
                start = sid * split_len + k * block_N
                T.copy(K[bid, start : start + block_N, kv_head, :], K_shared)
                T.copy(Mask[bid, start : start + block_N, kv_head], keep)
                T.clear(acc_s)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                for i, j in T.Parallel(block_H, block_N):  # masked keys, and keys past this slice
                    acc_s[i, j] = T.if_then_else(
                        (keep[j] != 0) & (k * block_N + j < split_len) & (start + j < seqlen_kv),
                        acc_s[i, j],
                        -T.infinity(accum_dtype),
                    )
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum_dtype))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_H):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                for i in T.Parallel(block_H):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_H, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_H):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_H, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(V[bid, start : start + block_N, kv_head, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)

            for i, j in T.Parallel(block_H, dim):
                acc_o[i, j] /= logsum[i]
            for i in T.Parallel(block_H):  # log2 of the slice's softmax denominator, max included
                logsum[i] = T.log2(logsum[i]) + scores_max[i] * scale
            for i in T.Parallel(block_H):
                if i < rows:
                    lse_part[bid, hid * rows + i, sid] = logsum[i]
            T.copy(acc_o[:rows, :], O_shared)
            T.copy(O_shared, out_part[bid, hid * rows : (hid + 1) * rows, sid, :])

        # combine: the slices weighted by exp2(their lse - the total lse)
        with T.Kernel(heads, batch, threads=128) as (hid, bid):
            o_acc = T.alloc_fragment([dim], accum_dtype)
            lse_max = T.alloc_local([1], accum_dtype)
            lse_total = T.alloc_local([1], accum_dtype)
            weight = T.alloc_local([1], accum_dtype)
            T.clear(o_acc)
            lse_max[0] = -T.infinity(accum_dtype)
            for s in T.serial(num_split):
                lse_max[0] = T.max(lse_max[0], lse_part[bid, hid, s])
            lse_total[0] = 0
            for s in T.serial(num_split):
                lse_total[0] += T.exp2(lse_part[bid, hid, s] - lse_max[0])
            for s in T.serial(num_split):
                weight[0] = T.exp2(lse_part[bid, hid, s] - lse_max[0]) / lse_total[0]
                for i in T.Parallel(dim):
                    o_acc[i] += out_part[bid, hid, s, i] * weight[0]
            for i in T.Parallel(dim):
                Output[bid, hid, i] = o_acc[i]

    return main


def mla_decode(batch, heads, seqlen_kv, dim, pe_dim, block_N, block_H, threads, softmax_scale):
    """One decode step of DeepSeek's multi-head latent attention (TileLang's
    deepseek_mla/example_mla_decode, unsplit form): every query head attends to one shared latent
    K/V of width ``dim`` plus a rotary part of width ``pe_dim``; the latent tile is both K and V."""
    scale = softmax_scale * 1.44269504  # exp2 with log2(e) folded in
    dtype = "float16"
    accum_dtype = "float"

    @T.prim_func
    def main(
        Q: T.Tensor([batch, heads, dim], dtype),
        Q_pe: T.Tensor([batch, heads, pe_dim], dtype),
        KV: T.Tensor([batch, seqlen_kv, 1, dim], dtype),
        K_pe: T.Tensor([batch, seqlen_kv, 1, pe_dim], dtype),
        Output: T.Tensor([batch, heads, dim], dtype),
    ):
        with T.Kernel(heads // block_H, batch, threads=threads) as (hid, bid):
            Q_shared = T.alloc_shared([block_H, dim], dtype)
            Q_pe_shared = T.alloc_shared([block_H, pe_dim], dtype)
            KV_shared = T.alloc_shared([block_N, dim], dtype)
            K_pe_shared = T.alloc_shared([block_N, pe_dim], dtype)
            S_shared = T.alloc_shared([block_H, block_N], dtype)
            O_shared = T.alloc_shared([block_H, dim], dtype)
            acc_s = T.alloc_fragment([block_H, block_N], accum_dtype)
            acc_o = T.alloc_fragment([block_H, dim], accum_dtype)
            scores_max = T.alloc_fragment([block_H], accum_dtype)
            scores_max_prev = T.alloc_fragment([block_H], accum_dtype)
            scores_scale = T.alloc_fragment([block_H], accum_dtype)
            scores_sum = T.alloc_fragment([block_H], accum_dtype)
            logsum = T.alloc_fragment([block_H], accum_dtype)

            T.copy(Q[bid, hid * block_H : (hid + 1) * block_H, :], Q_shared)
            T.copy(Q_pe[bid, hid * block_H : (hid + 1) * block_H, :], Q_pe_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))

            for k in T.Pipelined(T.ceildiv(seqlen_kv, block_N), num_stages=2):
                T.copy(KV[bid, k * block_N : (k + 1) * block_N, 0, :], KV_shared)
                T.copy(K_pe[bid, k * block_N : (k + 1) * block_N, 0, :], K_pe_shared)
                # TileLang's example clears acc_s (clear_accum) here; starting from the mask makes
                # any seqlen_kv exact
                for i, j in T.Parallel(block_H, block_N):
                    acc_s[i, j] = T.if_then_else(k * block_N + j < seqlen_kv, 0, -T.infinity(accum_dtype))
                T.gemm(Q_shared, KV_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullCol)
                T.gemm(Q_pe_shared, K_pe_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullCol)
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum_dtype))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_H):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                for i in T.Parallel(block_H):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_H, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                T.copy(acc_s, S_shared)
                for i in T.Parallel(block_H):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                for i, j in T.Parallel(block_H, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.gemm(S_shared, KV_shared, acc_o, policy=T.GemmWarpPolicy.FullCol)

            for i, j in T.Parallel(block_H, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bid, hid * block_H : (hid + 1) * block_H, :])

    return main


def gemv_threads(N, K, BLOCK_N, reduce_threads):
    """c = B @ a in the thread view (TileLang's gemv/example_gemv ``splitk_gemv_vectorized``): a
    (BLOCK_N, reduce_threads) thread block; each thread reads 128-bit runs of a row and adds its
    partial dot product into a shared-memory slot with an atomic."""
    TILE_K = 8  # fp16 elements per 128-bit load
    BLOCK_K = reduce_threads * TILE_K
    assert N % BLOCK_N == 0 and K % BLOCK_K == 0, "the thread-view GEMV reads whole (BLOCK_N, BLOCK_K) tiles"

    @T.prim_func
    def main(A: T.Tensor((K,), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((N,), "float16")):
        with T.Kernel(T.ceildiv(N, BLOCK_N), threads=(BLOCK_N, reduce_threads)) as bn:
            tn = T.get_thread_binding(0)
            tk = T.get_thread_binding(1)
            A_local = T.alloc_local((TILE_K,), "float16")
            B_local = T.alloc_local((TILE_K,), "float16")
            C_shared = T.alloc_shared((BLOCK_N,), "float")
            C_accum = T.alloc_local((1,), "float")
            if tk == 0:
                C_shared[tn] = 0
            T.clear(C_accum)
            for bk in T.serial(T.ceildiv(K, BLOCK_K)):
                for k in T.vectorized(TILE_K):
                    A_local[k] = A[bk * BLOCK_K + tk * TILE_K + k]
                    B_local[k] = B[bn * BLOCK_N + tn, bk * BLOCK_K + tk * TILE_K + k]
                for k in T.serial(TILE_K):
                    C_accum[0] += A_local[k].astype("float") * B_local[k].astype("float")
            T.atomic_add(C_shared[tn], C_accum[0])
            C[bn * BLOCK_N + tn] = C_shared[tn]

    return main


def grouped_gemm(group_sizes, K, N, block_M, block_N, block_K, num_stages, threads):
    """C[rows of group g] = A[rows of group g] @ B[g] for groups of any size (TileLang's
    grouped_gemm/example_grouped_gemm_fwd).  Groups are padded to whole block_M tiles in the grid;
    each block finds its group from the padded offsets and writes only its group's real rows."""
    total_rows = sum(group_sizes)
    groups = len(group_sizes)
    m_blocks = sum((size + block_M - 1) // block_M for size in group_sizes)

    @T.prim_func
    def main(
        A: T.Tensor([total_rows, K], "float16"),
        B: T.Tensor([groups, K, N], "float16"),
        sizes: T.Tensor([groups], "int32"),
        offsets: T.Tensor([groups], "int32"),
        padded_offsets: T.Tensor([groups], "int32"),
        C: T.Tensor([total_rows, N], "float16"),
    ):
        with T.Kernel(m_blocks, T.ceildiv(N, block_N), threads=threads) as (bx, by):
            A_shared = T.alloc_shared([block_M, block_K], "float16")
            B_shared = T.alloc_shared([block_K, block_N], "float16")
            C_local = T.alloc_fragment([block_M, block_N], "float")
            group = T.alloc_var("int32")

            padded_start = bx * block_M
            group = 0
            for g in range(groups):  # the last group whose padded offset is at or before this tile
                group = T.if_then_else(padded_start >= padded_offsets[g], g, group)
            m_start = padded_start - padded_offsets[group] + offsets[group]
            valid_rows = T.max(0, T.min(block_M, sizes[group] + padded_offsets[group] - padded_start))

            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[m_start : m_start + block_M, k * block_K : (k + 1) * block_K], A_shared)
                T.copy(B[group, k * block_K : (k + 1) * block_K, by * block_N : (by + 1) * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            for i, j in T.Parallel(block_M, block_N):
                if (i < valid_rows) & (by * block_N + j < N):
                    C[m_start + i, by * block_N + j] = C_local[i, j]

    return main
