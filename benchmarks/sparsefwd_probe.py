"""GPU probe (issue 23, sparse/decoding attention forward): tiny gathered-block attention kernels.

A kernel written the way TileLang's deepseek_nsa examples are (a few CTAs of one warp, a loop over
data-dependent key blocks, ``T.copy`` of each gathered block, two ``T.gemm``) at the regression
suite's nsa_fwd and nsa_fwd_decode sizes, through tile2triton with each candidate lowering:

- ``base``: main's lowering (``TILE2TRITON_SPECULATE_COPIES=0``: the copies under the ``if``,
  through in-kernel tensor descriptors, not pipelined);
- ``spec``: the default now: the guarded copies issued before the ``if``, masked by its condition
  (pointer loads, pipelined by Triton as cp.async);
- ``spec-fw``: ``spec`` with ``TILE2TRITON_FEW_WARPS=1``: the source's 1 warp (as TileLang runs
  it) instead of the attention heuristic's 4 warps;

and a split-KV GQA decode (flash_decoding's gqa_decode split kernel at its regression size) with
``TILE2TRITON_BLOCK_SLICES`` on (``slices``, the default) and off (``onehot``);
timed with ``triton.testing.do_bench`` (warmup 25, rep 100, median; event time, host launch
included) and as CUDA-graph replays of 50 calls (about the device time of one), checked against
torch in float32.

    PYTHONPATH=. python3 benchmarks/sparsefwd_probe.py
"""

import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
import triton  # noqa: E402

import tile2triton as tilelang  # noqa: E402
import tile2triton.language as T  # noqa: E402

DEV = "cuda" if torch.cuda.is_available() else "cpu"


def nsa_factory(batch, seq_q, seq_kv, heads, head_kv, dim, block_size, selected, causal, scale):
    """Gathered-block attention: for each query, ``selected`` key blocks named by BlockIndices."""
    G = heads // head_kv
    BS, BK = block_size, dim
    dtype, acc = "float16", "float32"
    sc = scale * 1.44269504

    @T.prim_func
    def nsa(
        Q: T.Tensor([batch, seq_q, heads, dim], dtype),
        K: T.Tensor([batch, seq_kv, head_kv, dim], dtype),
        V: T.Tensor([batch, seq_kv, head_kv, dim], dtype),
        BlockIndices: T.Tensor([batch, seq_q, head_kv, selected], "int32"),
        Output: T.Tensor([batch, seq_q, heads, dim], dtype),
    ):
        with T.Kernel(seq_q, 1, batch * head_kv, threads=32) as (bx, by, bz):
            Q_shared = T.alloc_shared([G, BK], dtype)
            K_shared = T.alloc_shared([BS, BK], dtype)
            V_shared = T.alloc_shared([BS, BK], dtype)
            O_shared = T.alloc_shared([G, BK], dtype)
            acc_s = T.alloc_fragment([G, BS], acc)
            acc_s_cast = T.alloc_fragment([G, BS], dtype)
            acc_o = T.alloc_fragment([G, BK], acc)
            m = T.alloc_fragment([G], acc)
            m_prev = T.alloc_fragment([G], acc)
            s_scale = T.alloc_fragment([G], acc)
            s_sum = T.alloc_fragment([G], acc)
            logsum = T.alloc_fragment([G], acc)
            i_t = bx
            i_b = bz // head_kv
            i_h = bz % head_kv
            T.copy(Q[i_b, i_t, i_h * G : (i_h + 1) * G, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(m, -T.infinity(acc))
            for i in T.Pipelined(selected, num_stages=2):
                i_s = BlockIndices[i_b, i_t, i_h, i] * BS
                if i_s >= 0 and i_s < seq_kv:
                    T.copy(K[i_b, i_s : i_s + BS, i_h, :], K_shared)
                    if causal:
                        for a, j in T.Parallel(G, BS):
                            acc_s[a, j] = T.if_then_else(i_t >= (i_s + j), 0, -T.infinity(acc))
                    else:
                        T.clear(acc_s)
                    T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                    T.copy(m, m_prev)
                    T.reduce_max(acc_s, m, dim=1, clear=True)
                    for a in T.Parallel(G):
                        m[a] = T.max(m[a], m_prev[a])
                    for a in T.Parallel(G):
                        s_scale[a] = T.exp2(m_prev[a] * sc - m[a] * sc)
                    for a, j in T.Parallel(G, BS):
                        acc_s[a, j] = T.exp2(acc_s[a, j] * sc - m[a] * sc)
                    T.reduce_sum(acc_s, s_sum, dim=1)
                    for a in T.Parallel(G):
                        logsum[a] = logsum[a] * s_scale[a] + s_sum[a]
                    T.copy(acc_s, acc_s_cast)
                    for a, j in T.Parallel(G, BK):
                        acc_o[a, j] *= s_scale[a]
                    T.copy(V[i_b, i_s : i_s + BS, i_h, :], V_shared)
                    T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for a, j in T.Parallel(G, BK):
                acc_o[a, j] /= logsum[a]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[i_b, i_t, i_h * G : (i_h + 1) * G, :])

    return nsa


def decode_factory(batch, heads, groups, seqlen_kv, dim, block_N=128, block_H=64, num_split=8):
    """Split-KV GQA decoding as TileLang's flash_decoding/example_gqa_decode.py splits it: block_H
    query rows a program, of which only heads // groups are real; the partial output is the
    first ``valid`` rows of the accumulator (``acc_o[:valid, :]``, the TILE2TRITON_BLOCK_SLICES read)."""
    dtype, acc = "float16", "float32"
    valid = min(block_H, heads // groups)
    part = seqlen_kv // num_split
    sc = (1.0 / dim) ** 0.5 * 1.44269504

    @T.prim_func
    def split(
        Q: T.Tensor([batch, heads, dim], dtype),
        K: T.Tensor([batch, seqlen_kv, groups, dim], dtype),
        V: T.Tensor([batch, seqlen_kv, groups, dim], dtype),
        glse: T.Tensor([batch, heads, num_split], acc),
        Opart: T.Tensor([batch, heads, num_split, dim], dtype),
    ):
        with T.Kernel(batch, heads // valid, num_split, threads=128) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_H, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            O_shared = T.alloc_shared([valid, dim], dtype)
            acc_s = T.alloc_fragment([block_H, block_N], acc)
            acc_s_cast = T.alloc_fragment([block_H, block_N], dtype)
            acc_o = T.alloc_fragment([block_H, dim], acc)
            m = T.alloc_fragment([block_H], acc)
            m_prev = T.alloc_fragment([block_H], acc)
            s_scale = T.alloc_fragment([block_H], acc)
            s_sum = T.alloc_fragment([block_H], acc)
            logsum = T.alloc_fragment([block_H], acc)
            T.copy(Q[bx, by * valid : by * valid + block_H, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(m, -T.infinity(acc))
            for k in T.Pipelined(T.ceildiv(part, block_N), num_stages=2):
                T.copy(K[bx, part * bz + k * block_N : part * bz + (k + 1) * block_N, by, :], K_shared)
                T.clear(acc_s)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(m, m_prev)
                T.reduce_max(acc_s, m, dim=1, clear=True)
                for i in T.Parallel(block_H):
                    m[i] = T.max(m[i], m_prev[i])
                for i in T.Parallel(block_H):
                    s_scale[i] = T.exp2(m_prev[i] * sc - m[i] * sc)
                for i, j in T.Parallel(block_H, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * sc - m[i] * sc)
                T.reduce_sum(acc_s, s_sum, dim=1)
                for i in T.Parallel(block_H):
                    logsum[i] = logsum[i] * s_scale[i] + s_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_H, dim):
                    acc_o[i, j] *= s_scale[i]
                T.copy(V[bx, part * bz + k * block_N : part * bz + (k + 1) * block_N, by, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_H, dim):
                acc_o[i, j] /= logsum[i]
            for i in T.Parallel(block_H):
                logsum[i] = T.log2(logsum[i]) + m[i] * sc
            for i in T.Parallel(block_H):
                if i < valid:
                    glse[bx, by * valid + i, bz] = logsum[i]
            T.copy(acc_o[:valid, :], O_shared)
            T.copy(O_shared, Opart[bx, by * valid : (by + 1) * valid, bz, :])

    return split


def decode_reference(q, k, v, num_split):
    B, H, D = q.shape
    G = k.shape[2]
    part = k.shape[1] // num_split
    qf = q.float().view(B, G, H // G, D)
    kf = k.float().view(B, num_split, part, G, D)
    vf = v.float().view(B, num_split, part, G, D)
    s = torch.einsum("bghd,bsngd->bgshn", qf, kf) * D**-0.5
    o = torch.einsum("bgshn,bsngd->bgshd", torch.softmax(s, -1), vf)  # [B, G, split, H/G, D]
    return o.permute(0, 1, 3, 2, 4).reshape(B, H, num_split, D)


def run_decode() -> None:
    # example_gqa_decode's run_regression_perf: batch 1, heads 32, groups 8, kv 8192, dim 128
    B, H, G, SKV, D = (1, 32, 8, 8192, 128) if DEV == "cuda" else (1, 8, 2, 1024, 64)
    torch.manual_seed(0)
    q = torch.randn(B, H, D, dtype=torch.float16, device=DEV)
    k = torch.randn(B, SKV, G, D, dtype=torch.float16, device=DEV)
    v = torch.randn(B, SKV, G, D, dtype=torch.float16, device=DEV)
    ref = decode_reference(q, k, v, 8)
    for name, value in (("slices", None), ("onehot", "0")):
        if value is None:
            os.environ.pop("TILE2TRITON_BLOCK_SLICES", None)
        else:
            os.environ["TILE2TRITON_BLOCK_SLICES"] = value
        try:
            kern = tilelang.jit(out_idx=[-2, -1])(decode_factory)(B, H, G, SKV, D)
            _, opart = kern(q, k, v)
            err = float((opart.float() - ref).abs().max())
            ev = gr = float("nan")
            if DEV == "cuda":
                ev = 1000 * triton.testing.do_bench(lambda: kern(q, k, v), warmup=25, rep=100, return_mode="median")
                try:
                    gr = graph_time(lambda: kern(q, k, v))
                except Exception as e:  # noqa: BLE001
                    print(f"  (graph failed: {type(e).__name__}: {e})")
            facts = offline_facts(kern, True)
            print(f"{'gqa_decode_split':16} {name:8} {ev:9.2f} {gr:9.2f} {err:9.2e}  {facts}")
        except Exception as e:  # noqa: BLE001
            print(f"{'gqa_decode_split':16} {name:8} failed: {type(e).__name__}: {str(e)[:200]}")
    os.environ.pop("TILE2TRITON_BLOCK_SLICES", None)


def reference(q, k, v, idx, block_size, causal, scale):
    B, SQ, H, D = q.shape
    HK = k.shape[2]
    G = H // HK
    out = torch.zeros(B, SQ, H, D, dtype=torch.float32, device=q.device)
    qf, kf, vf = q.float(), k.float(), v.float()
    for b in range(B):
        for t in range(SQ):
            for h in range(HK):
                keys = []
                for s in idx[b, t, h].tolist():
                    start = s * block_size
                    if 0 <= start < k.shape[1]:
                        keys += [j for j in range(start, start + block_size) if not causal or j <= t]
                if not keys:
                    continue
                kk = torch.tensor(keys, device=q.device)
                sc = qf[b, t, h * G : (h + 1) * G] @ kf[b, kk, h].T * scale
                out[b, t, h * G : (h + 1) * G] = torch.softmax(sc, -1) @ vf[b, kk, h]
    return out


# (case, batch, seq_q, seq_kv, heads, head_kv, dim, block_size, selected, causal): the suite's sizes
CASES = [
    ("nsa_fwd", 2, 64, 64, 16, 1, 32, 32, 1, True),
    ("nsa_fwd_decode", 2, 1, 64, 16, 1, 16, 32, 1, False),
    ("nsa_fwd_s4", 1, 96, 96, 16, 1, 64, 32, 3, True),
]
# (name, environment): "base" is main's lowering (copies under the `if` through tensor descriptors);
# "spec" the default now (TILE2TRITON_SPECULATE_COPIES: the guarded copies issued before the `if`,
# masked by it, pipelined by Triton); "-fw": TILE2TRITON_FEW_WARPS=1, the source's 1 warp (as
# TileLang) instead of the attention heuristic's 4 warps
VARIANTS = [
    ("base", {"TILE2TRITON_SPECULATE_COPIES": "0"}),
    ("spec", {}),
    ("spec-fw", {"TILE2TRITON_FEW_WARPS": "1"}),
]
ENV = ("TILE2TRITON_SPECULATE_COPIES", "TILE2TRITON_FEW_WARPS", "TILE2TRITON_TENSOR_DESCRIPTORS")


def graph_time(fn, calls=50) -> float:
    """Microseconds a call, from CUDA-graph replays of ``calls`` calls (no host launch cost)."""
    fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    ms = triton.testing.do_bench(g.replay, warmup=10, rep=100, return_mode="median")
    return ms * 1000 / calls


def offline_facts(kern, descriptors: bool | None) -> str:
    """Registers, spills, shared bytes and PTX instruction counts of the sm_90 build (Triton here)."""
    try:
        import importlib.util
        import tempfile

        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource

        from tile2triton.runtime.target import triton_signature

        module = kern.lowered_for("sm_90", descriptors=descriptors)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, f"sparsefwd_{abs(hash(module.source))}.py")
            with open(path, "w") as f:
                f.write(module.source)
            spec = importlib.util.spec_from_file_location(Path(path).stem, path)
            gen = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = gen
            spec.loader.exec_module(gen)
            launch = module.launches[0]
            fn = getattr(gen, launch.name)
            types = triton_signature(launch)
            attrs = {(i,): [["tt.divisibility", 16]] for i, t in enumerate(types) if t.startswith("*")}
            c = triton.compile(
                ASTSource(fn, dict(zip(fn.arg_names, types)), {}, attrs),
                target=GPUTarget("cuda", 90, 32),
                options={"num_warps": launch.num_warps},
            )
        ptx = c.asm["ptx"]
        counts = {
            k: len(re.findall(pat, ptx))
            for k, pat in (
                ("wgmma", r"wgmma\.mma_async"),
                ("mma", r"\bmma\.sync"),
                ("cp.async", r"cp\.async\.(?:ca|cg)"),
                ("tma", r"cp\.async\.bulk\.tensor"),
                ("tmap", r"tensormap\.replace"),
                ("bar", r"bar\.sync"),
            )
        }
        from tile2triton.runtime.target import _register_usage

        regs, spills = _register_usage(c, True)
        tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
        if os.path.exists(tool):  # spills: local-memory stores in the SASS
            import subprocess

            with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
                f.write(c.asm["cubin"])
                f.flush()
                sass = subprocess.run([tool, "-sass", f.name], capture_output=True, text=True, timeout=60).stdout
            spills = "{}STL".format(len(re.findall(r"\bSTL", sass)))
        return f"w{launch.num_warps} regs={regs} spills={spills} smem={c.metadata.shared} " + " ".join(
            f"{k}={v}" for k, v in counts.items()
        )
    except Exception as e:  # noqa: BLE001
        return f"(offline compile failed: {type(e).__name__}: {str(e)[:120]})"


def main() -> None:
    t0 = time.time()
    print(f"triton {triton.__version__}, torch {torch.__version__}, {DEV}")
    print(f"{'case':16} {'variant':8} {'event us':>9} {'graph us':>9} {'max err':>9}")
    for case, B, SQ, SKV, H, HK, D, BS, S, causal in CASES:
        torch.manual_seed(0)
        q = torch.randn(B, SQ, H, D, dtype=torch.float16, device=DEV)
        k = torch.randn(B, SKV, HK, D, dtype=torch.float16, device=DEV)
        v = torch.randn(B, SKV, HK, D, dtype=torch.float16, device=DEV)
        idx = torch.full((B, SQ, HK, S), SKV // BS, dtype=torch.int32)
        for b in range(B):
            for t in range(SQ):
                for h in range(HK):
                    perm = torch.randperm(max(1, (t + (SKV - SQ)) // BS + (0 if causal else 1)))[:S]
                    idx[b, t, h, : len(perm)] = perm.to(torch.int32)
        idx = idx.sort(-1)[0].to(DEV)
        scale = D**-0.5
        ref = reference(q, k, v, idx, BS, causal, scale)
        for name, env in VARIANTS:
            for var in ENV:
                os.environ.pop(var, None)
            os.environ.update(env)
            kern = tilelang.jit(out_idx=[-1], pass_configs={"tl.enable_fast_math": True})(nsa_factory)(
                B, SQ, SKV, H, HK, D, BS, S, causal, scale
            )
            try:
                out = kern(q, k, v, idx)
                err = float((out.float() - ref).abs().max())
                if DEV == "cuda":
                    ev = triton.testing.do_bench(lambda: kern(q, k, v, idx), warmup=25, rep=100, return_mode="median")
                    try:
                        gr = graph_time(lambda: kern(q, k, v, idx))
                    except Exception as e:  # noqa: BLE001
                        print(f"  (graph failed: {type(e).__name__}: {e})")
                        gr = float("nan")
                    ev *= 1000
                else:
                    ev = gr = float("nan")
                facts = offline_facts(kern, None)
                print(f"{case:16} {name:8} {ev:9.2f} {gr:9.2f} {err:9.2e}  {facts}")
            except Exception as e:  # noqa: BLE001
                print(f"{case:16} {name:8} failed: {type(e).__name__}: {str(e)[:200]}")
    for var in ENV:
        os.environ.pop(var, None)
    run_decode()
    print(f"total {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
