"""TileLang kernels that benchmarks/vs_tilelang.py runs through real TileLang AND through tile2triton.

Plain TileLang source: this module imports ``tilelang``.  vs_tilelang.py loads it twice, once with
real TileLang and once with ``tilelang`` / ``tilelang.language`` bound to tile2triton (as
``tile2triton run`` does), so both compile the very same functions.  The factories are not
decorated: the benchmark applies ``tilelang.jit(out_idx=..., pass_configs=...)`` itself, so one
source serves both the plain and the fast-math rows.  Written after TileLang's examples
(flash attention BHSD/BSHD/GQA, GEMM, GEMV, norms) at their configurations.
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
