"""Attention backward's main kernel (dK/dV, dQ by atomics) under the lowering choices in question.

TileLang's examples at their ``run_regression_perf`` sizes (issue 23's attention-backward cases:
attention_sink ``example_{mha,gqa}_sink_bwd_bhsd`` with and without a sliding window,
flash_attention ``example_gqa_bwd`` and ``example_gqa_bwd_tma_reduce_varlen``), run unmodified
through tile2triton.  Per case and variant: the main kernel's median time
(``triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")``, us), the largest
|difference| of dQ, dK, dV against torch (the kernel's formula in fp32, scaled by their max), and
the compiled kernel's registers / shared memory.  Variants:

* ``default``: tile2triton as it is (launch from runtime/tuning.py's heuristic); the rows of
  gpu_logs/2026-12-02_s10_probe_attnbwd.log were taken with split-dims and transposed-dots off by
  default (they are on since);
* ``no-ranged-trips``: ``TILE2TRITON_TRIP_BOUNDS=0``: a loop whose bounds depend on the block
  indices (the causal sink loops: 4 to 16 iterations) counts as unknown for
  ``TILE2TRITON_TMA_MIN_TRIPS`` (17), so every program builds its tensor descriptors (before);
  the default counts it by its most iterations and loads through pointers;
* ``host-descriptors``: ``TILE2TRITON_HOST_DESCRIPTORS=1`` (another helper's switch; for scale);
* ``no-descriptors``: ``TILE2TRITON_TENSOR_DESCRIPTORS=0``: the varlen loop's trip count comes from
  ``cu_seqlens`` (unknown when compiling), so its programs build their descriptors (5 with the
  split: Q's two parts, dO, lse, Delta); this row says what that setup costs;
* ``split-dims``: ``TILE2TRITON_SPLIT_DIMS=1`` (passes/pow2_split.py): the gqa kernels' 192-wide
  head dim as 128 + 64 parts, a gemm per part, instead of padded to 256 (offline sm_90: 48 -> 8-11
  spill stores, 229 -> 180 KB shared memory at 2 stages, so the heuristic's 3 stages fit);
* ``transposed-dots``: ``TILE2TRITON_TRANSPOSED_DOTS=1`` (codegen/tile_ops.py): the dQ gemm of 32
  query rows (an mma.sync in Triton, fewer rows than a warpgroup's wgmma) as
  ``tl.trans(tl.dot(K^T, dS))``; offline sm_90 (Triton 3.9's ptxas) the mma.sync made ptxas wait
  after every wgmma instruction of the kernel (mha sink: 20 HGMMA, 20 waits -> 28, 4);
* ``w8 s1`` / ``ws``: other launch choices of the same lowering;
* ``hand split 128+64``: a hand-written Triton kernel of the gqa_bwd computation with the head dim
  as two dots of 128 and 64 columns, to learn what Triton can reach.

What the rows decide (tile2triton/settings.py): ``TRIP_BOUNDS_DEFAULT`` stays on if ``default``
beats ``no-ranged-trips`` on the four sink rows; ``SPLIT_DIMS_DEFAULT`` goes on if ``split-dims``
beats ``default`` on both gqa cases; ``TRANSPOSED_DOTS_DEFAULT`` goes on if ``transposed-dots``
beats ``default`` on the sink rows (and its gqa row beats ``split-dims``).

    PYTHONPATH=. python3 benchmarks/attnbwd_probe.py [TILELANG_EXAMPLES_DIR] [--cpu]

(default $TILELANG_EXAMPLES, else .tl/examples (the GPU machine's carried checkout), /work/tl/examples
or ../tl/examples).
"""

from __future__ import annotations

import importlib
import os
import sys
import time

START = time.time()  # the probe round stops the script at 120 s from its start
if "--cpu" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported: the hand kernel runs interpreted too

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

LOG2E = 1.44269504
DEV = "cuda"  # --cpu: tiny sizes through Triton's interpreter, a smoke test of this script


def _examples_dir() -> str:
    given = [a for a in sys.argv[1:] if not a.startswith("--")]
    if given:
        return given[0]
    candidates = (os.environ.get("TILELANG_EXAMPLES", ""), ".tl/examples", "/work/tl/examples", "../tl/examples")
    for d in candidates:
        if d and os.path.isdir(os.path.join(d, "attention_sink")):
            return d
    raise SystemExit("pass TileLang's examples folder")


# ----------------------------------------------------------------------------- the reference
def reference(q, k, v, do, lse, delta, causal, window):
    """dQ, dK, dV of the kernels' formula, fp32, all bhsd with K/V heads repeated per query head:
    P = exp2(K Q^T * scale - lse) (masked), dV = P dO, dS = P (V dO^T - Delta) * sm_scale,
    dK = dS Q, dQ = dS^T K.  dK / dV per query head (the caller sums a group)."""
    qf, kf, vf, dof = (x.float() for x in (q, k, v, do))
    d = q.shape[-1]
    sm_scale = d**-0.5
    s = kf @ qf.transpose(-1, -2)  # b h keys queries
    p = torch.exp2(s * sm_scale * LOG2E - lse[:, :, None, :])
    n = s.shape[-1]
    key = torch.arange(n, device=q.device)[:, None]
    query = torch.arange(n, device=q.device)[None, :]
    keep = torch.ones(n, n, dtype=torch.bool, device=q.device)
    if causal:
        keep &= key <= query
    if window is not None:
        keep &= key > query - window
    p = torch.where(keep, p, 0.0)
    dv = p @ dof
    ds = p * (vf @ dof.transpose(-1, -2) - delta[:, :, None, :]) * sm_scale
    return ds.transpose(-1, -2) @ kf, ds @ qf, dv


def _lse(q, k, causal, window):
    """log2-domain logsumexp of the scores each query sees (so that P <= 1), [b, h, s]."""
    s = (k.float() @ q.float().transpose(-1, -2)) * q.shape[-1] ** -0.5 * LOG2E
    n = s.shape[-1]
    key = torch.arange(n, device=q.device)[:, None]
    query = torch.arange(n, device=q.device)[None, :]
    keep = torch.ones(n, n, dtype=torch.bool, device=q.device)
    if causal:
        keep &= key <= query
    if window is not None:
        keep &= key > query - window
    s = torch.where(keep, s, float("-inf"))
    return (torch.logsumexp(s / LOG2E, dim=-2) * LOG2E).contiguous()


def _err(got, ref) -> float:
    return ((got.float() - ref.float()).abs().max() / ref.float().abs().max()).item()


# ----------------------------------------------------------------------------- the cases
def sink(ex, gqa: bool, window, B, H, S, D, groups):
    """attention_sink's backward main kernel: bhsd, causal (and a sliding window), dK/dV atomics."""
    hk = H // groups
    q = torch.randn(B, H, S, D, device=DEV, dtype=torch.half)
    k = torch.randn(B, hk, S, D, device=DEV, dtype=torch.half)
    v = torch.randn(B, hk, S, D, device=DEV, dtype=torch.half)
    do = torch.randn(B, H, S, D, device=DEV, dtype=torch.half)
    kr, vr = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
    lse = _lse(q, kr, True, window)
    delta = torch.randn(B, H, S, device=DEV) * 0.5
    dq_r, dk_r, dv_r = reference(q, kr, vr, do, lse, delta, True, window)
    dk_r = dk_r.view(B, hk, groups, S, D).sum(2)
    dv_r = dv_r.view(B, hk, groups, S, D).sum(2)
    if gqa:
        main = ex.flashattn_bwd(B, H, S, D, groups, window)
        dk = torch.zeros(B, hk, S, D, device=DEV, dtype=torch.float32)
        dv = torch.zeros(B, hk, S, D, device=DEV, dtype=torch.float32)
    else:
        main = ex.flashattn_bwd(B, H, S, D, window)
        dk = torch.full((B, H, S, D), float("nan"), device=DEV, dtype=torch.half)
        dv = torch.full((B, H, S, D), float("nan"), device=DEV, dtype=torch.half)
    dq = torch.zeros(B, H, S, D, device=DEV, dtype=torch.float32)
    args = (q, k, v, do, lse, delta, dq, dk, dv)

    def check(run):
        for t in (dq, dk, dv) if gqa else (dq,):
            t.zero_()
        run(*args)
        return max(_err(dq, dq_r), _err(dk, dk_r), _err(dv, dv_r))

    return main, args, check


def _gqa_tensors(B, H, S, Dqk, Dv, groups):
    hk = H // groups
    q = torch.randn(B, S, H, Dqk, device=DEV, dtype=torch.half)
    k = torch.randn(B, S, hk, Dqk, device=DEV, dtype=torch.half)
    v = torch.randn(B, S, hk, Dv, device=DEV, dtype=torch.half)
    do = torch.randn(B, S, H, Dv, device=DEV, dtype=torch.half)
    qh, kh, vh, doh = (x.transpose(1, 2) for x in (q, k, v, do))
    kh, vh = kh.repeat_interleave(groups, 1), vh.repeat_interleave(groups, 1)
    lse = _lse(qh, kh, False, None)
    delta = torch.randn(B, H, S, device=DEV) * 0.5
    dq_r, dk_r, dv_r = reference(qh, kh, vh, doh, lse, delta, False, None)
    # per group index g = head % groups: [groups, B, S, hk, D] as the kernels write it
    dk_r = dk_r.view(B, hk, groups, S, Dqk).permute(2, 0, 3, 1, 4)
    dv_r = dv_r.view(B, hk, groups, S, Dv).permute(2, 0, 3, 1, 4)
    return q, k, v, do, lse, delta, dq_r.transpose(1, 2), dk_r, dv_r


def gqa(ex, B, H, S, Dqk, Dv, groups):
    """flash_attention's example_gqa_bwd split kernel (bshd, dK/dV per group index)."""
    hk = H // groups
    q, k, v, do, lse, delta, dq_r, dk_r, dv_r = _gqa_tensors(B, H, S, Dqk, Dv, groups)
    main = ex.flashattn_bwd_split(B, H, S, Dqk, Dv, False, block_M=128, block_N=32, threads=256, num_stages=2,
                                  groups=groups)  # fmt: skip
    dq = torch.zeros(B, S, H, Dqk, device=DEV, dtype=torch.float32)
    dk = torch.full((groups, B, S, hk, Dqk), float("nan"), device=DEV, dtype=torch.half)
    dv = torch.full((groups, B, S, hk, Dv), float("nan"), device=DEV, dtype=torch.half)
    args = (q, k, v, do, lse, delta, dq, dk, dv)

    def check(run):
        dq.zero_()
        run(*args)
        return max(_err(dq, dq_r), _err(dk, dk_r), _err(dv, dv_r))

    return main, args, check


def varlen(ex, B, H, S, Dqk, Dv, groups):
    """example_gqa_bwd_tma_reduce_varlen's split kernel, one sequence (as its regression runs it)."""
    assert B == 1
    hk = H // groups
    q, k, v, do, lse, delta, dq_r, dk_r, dv_r = _gqa_tensors(1, H, S, Dqk, Dv, groups)
    main = ex.flashattn_bwd_split(1, S, S, S, H, S, Dqk, Dv, False, block_M=128, block_N=32, threads=256,
                                  num_stages=2, groups=groups)  # fmt: skip
    cu = torch.tensor([0, S], device=DEV, dtype=torch.int32)
    dq = torch.zeros(S, H, Dqk, device=DEV, dtype=torch.float32)
    dk = torch.full((groups, S, hk, Dqk), float("nan"), device=DEV, dtype=torch.half)
    dv = torch.full((groups, S, hk, Dv), float("nan"), device=DEV, dtype=torch.half)
    args = (q[0], k[0], v[0], do[0], lse, delta, cu, cu, dq, dk, dv)

    def check(run):
        dq.zero_()
        run(*args)
        return max(_err(dq, dq_r[0]), _err(dk, dk_r[:, 0]), _err(dv, dv_r[:, 0]))

    return main, args, check


# ----------------------------------------------------------------------------- hand-written Triton
@triton.jit
def gqa_bwd_hand(Q, K, V, dO, lse, Delta, dQ, dK, dV, B: tl.constexpr, S: tl.constexpr, H: tl.constexpr,
                 G: tl.constexpr, D0: tl.constexpr, D1: tl.constexpr, DV: tl.constexpr, BM: tl.constexpr,
                 BN: tl.constexpr, STAGES: tl.constexpr):  # fmt: skip
    """example_gqa_bwd's split kernel with its D0 + D1 head dim as two dots (bshd, S % BM == 0)."""
    D: tl.constexpr = D0 + D1
    HK: tl.constexpr = H // G
    bx = tl.program_id(0)
    by = tl.program_id(1)
    bz = tl.program_id(2)
    hk = bx // G
    sm_scale = 1.0 / tl.sqrt(D * 1.0)
    scale = sm_scale * 1.44269504
    rm = by * BM + tl.arange(0, BM)[:, None]
    c0 = tl.arange(0, D0)[None, :]
    c1 = D0 + tl.arange(0, D1)[None, :]
    cv = tl.arange(0, DV)[None, :]
    kbase = K + bz * S * HK * D + rm * (HK * D) + hk * D
    k0 = tl.load(kbase + c0)
    k1 = tl.load(kbase + c1)
    vt = tl.load(V + bz * S * HK * DV + rm * (HK * DV) + hk * DV + cv)
    dv = tl.zeros([BM, DV], tl.float32)
    dk0 = tl.zeros([BM, D0], tl.float32)
    dk1 = tl.zeros([BM, D1], tl.float32)
    for k in tl.range(0, S // BN, num_stages=STAGES):
        rn = k * BN + tl.arange(0, BN)[:, None]
        qbase = Q + bz * S * H * D + rn * (H * D) + bx * D
        q0 = tl.load(qbase + c0)
        q1 = tl.load(qbase + c1)
        qkT = tl.dot(k0, tl.trans(q0))
        qkT = tl.dot(k1, tl.trans(q1), qkT)
        do = tl.load(dO + bz * S * H * DV + rn * (H * DV) + bx * DV + cv)
        dsT = tl.dot(vt, tl.trans(do))
        cols = k * BN + tl.arange(0, BN)
        p = tl.exp2(qkT * scale - tl.load(lse + bz * H * S + bx * S + cols)[None, :])
        dv = tl.dot(p.to(tl.float16), do, dv)
        ds = (p * (dsT - tl.load(Delta + bz * H * S + bx * S + cols)[None, :]) * sm_scale).to(tl.float16)
        dk0 = tl.dot(ds, q0, dk0)
        dk1 = tl.dot(ds, q1, dk1)
        dst = tl.trans(ds)
        dqbase = dQ + bz * S * H * D + rn * (H * D) + bx * D
        tl.atomic_add(dqbase + c0, tl.dot(dst, k0), sem="relaxed")
        tl.atomic_add(dqbase + c1, tl.dot(dst, k1), sem="relaxed")
    g = bx % G
    vbase = dV + g * (B * S * HK * DV) + bz * S * HK * DV + rm * (HK * DV) + hk * DV
    tl.store(vbase + cv, dv.to(tl.float16))
    dkbase = dK + g * (B * S * HK * D) + bz * S * HK * D + rm * (HK * D) + hk * D
    tl.store(dkbase + c0, dk0.to(tl.float16))
    tl.store(dkbase + c1, dk1.to(tl.float16))


def hand_gqa(B, H, S, Dqk, Dv, groups, d0, warps, stages):
    def run(q, k, v, do, lse, delta, dq, dk, dv):
        grid = (H, triton.cdiv(S, 128), B)
        gqa_bwd_hand[grid](q, k, v, do, lse, delta, dq, dk, dv, B, S, H, groups, d0, Dqk - d0, Dv, 128, 32, stages,
                           num_warps=warps)  # fmt: skip

    return run


# ----------------------------------------------------------------------------- variants
def _variant(main, env: dict, launch):
    """The main kernel compiled under ``env`` and ``launch`` (tuning.LaunchChoice or None)."""
    from tile2triton.runtime.kernel import JITKernel

    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return JITKernel(main.prim_func, pass_configs=main.pass_configs, launch=launch or main.launch_choice), saved
    except Exception:
        _restore(saved)
        raise


def _restore(saved):
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _compiled_info(kernel) -> str:
    """Registers and shared memory of the compiled main kernel (informative only)."""
    try:
        for lowered in kernel._compiled.values():
            for direct in lowered.direct:
                for c in (direct.kernels or {}).values() if direct is not None else ():
                    return f"regs {c.n_regs} spills {c.n_spills} smem {c.metadata.shared}"
            for fn, *_ in lowered.launches:
                for cache in getattr(fn, "device_caches", {}).values():
                    for c in cache[0].values():
                        return f"regs {c.n_regs} spills {c.n_spills} smem {c.metadata.shared}"
    except Exception as exc:
        return f"(no info: {type(exc).__name__})"
    return "-"


def _hand_info() -> str:
    """The same, of the hand-written kernel compiled last."""
    try:
        for cache in gqa_bwd_hand.device_caches.values():
            c = list(cache[0].values())[-1]
            return f"regs {c.n_regs} spills {c.n_spills} smem {c.metadata.shared}"
    except Exception as exc:
        return f"(no info: {type(exc).__name__})"
    return "-"


def main() -> int:
    global DEV
    cpu = "--cpu" in sys.argv
    DEV = "cpu" if cpu else "cuda"
    if not cpu and not torch.cuda.is_available():
        print("needs a CUDA GPU (or --cpu)")
        return 1
    if cpu:
        torch.cuda.get_device_capability = lambda *a, **k: (9, 0)  # the sink examples pick tiles by it
    import triton.testing

    from tile2triton.cli import install_tilelang_alias

    install_tilelang_alias()
    from tile2triton.runtime.tuning import LaunchChoice

    root = _examples_dir()
    sys.path.insert(0, os.path.join(root, "attention_sink"))
    sys.path.insert(0, os.path.join(root, "flash_attention"))
    mha_sink = importlib.import_module("example_mha_sink_bwd_bhsd")
    gqa_sink = importlib.import_module("example_gqa_sink_bwd_bhsd")
    gqa_ex = importlib.import_module("example_gqa_bwd")
    varlen_ex = importlib.import_module("example_gqa_bwd_tma_reduce_varlen")
    torch.manual_seed(0)
    name = torch.cuda.get_device_name() if not cpu else "cpu"
    print(f"{name}, torch {torch.__version__}, triton {triton.__version__}", flush=True)
    # the regression sizes (run_regression_perf); --cpu: small ones
    mha_size = (1, 4, 256, 32, 1) if cpu else (1, 32, 512, 128, 1)
    gsink_size = (1, 4, 256, 32, 2) if cpu else (1, 8, 512, 64, 2)
    gqa_size = (1, 4, 256, 96, 32, 2) if cpu else (1, 32, 256, 192, 128, 16)
    unranged = {"TILE2TRITON_TRIP_BOUNDS": "0"}
    host = {"TILE2TRITON_HOST_DESCRIPTORS": "1"}
    split = {"TILE2TRITON_SPLIT_DIMS": "1"}
    nodesc = {"TILE2TRITON_TENSOR_DESCRIPTORS": "0"}
    tdots = {"TILE2TRITON_TRANSPOSED_DOTS": "1"}
    sink_variants = [("default", {}, None), ("no-ranged-trips", unranged, None), ("transposed-dots", tdots, None)]
    w8s2, w8s1, ws = LaunchChoice(8, 2), LaunchChoice(8, 1), LaunchChoice(8, 2, True)
    d0 = 64 if cpu else 128  # the split: a power of two and the rest (96 = 64 + 32, 192 = 128 + 64)
    cases = [
        # w8 s2: where the runtime's shared-memory refit lands from the heuristic's w8 s3 with the head dim
        # padded (given, so no row compiles twice); split, w8 s3 fits
        ("gqa_bwd B1 H32 S256 192/128 g16", lambda: gqa(gqa_ex, *gqa_size),
         [("default", {}, w8s2), ("split-dims", split, None), ("split-dims transposed-dots", {**split, **tdots}, None),
          ("hand split 128+64 w8 s2", None, (8, 2))]),
        ("gqa_bwd_varlen 1x256 192/128 g16", lambda: varlen(varlen_ex, *gqa_size),
         [("default", {}, w8s2), ("split-dims", split, None), ("split-dims transposed-dots", {**split, **tdots}, None),
          ("no-descriptors", nodesc, w8s2), ("split-dims no-descriptors", {**split, **nodesc}, None)]),
        ("mha_sink_bwd B1 H32 S512 D128", lambda: sink(mha_sink, False, None, *mha_size), sink_variants),
        ("gqa_sink_bwd B1 H8 S512 D64 g2", lambda: sink(gqa_sink, True, None, *gsink_size), sink_variants),
        ("mha_sink_bwd window 128", lambda: sink(mha_sink, False, 128, *mha_size), sink_variants),
        ("gqa_sink_bwd window 128", lambda: sink(gqa_sink, True, 128, *gsink_size), sink_variants),
        # informative, while time lasts
        ("gqa_bwd B1 H32 S256 192/128 g16", lambda: gqa(gqa_ex, *gqa_size),
         [("split-dims w8 s2", split, w8s2), ("split-dims ws", split, ws), ("w8 s1", {}, w8s1)]),
        ("mha_sink_bwd B1 H32 S512 D128", lambda: sink(mha_sink, False, None, *mha_size),
         [("w8 s2 (the source's stages)", {}, w8s2), ("ws", {}, ws), ("host-descriptors", host, None)]),
        ("gqa_sink_bwd B1 H8 S512 D64 g2", lambda: sink(gqa_sink, True, None, *gsink_size),
         [("w8 s2 (the source's stages)", {}, w8s2)]),
        ("gqa_bwd_varlen 1x256 192/128 g16", lambda: varlen(varlen_ex, *gqa_size),
         [("split-dims host-descriptors", {**split, **host}, None)]),
    ]  # fmt: skip
    print("| case | variant | launch | us | err | compiled |")
    print("|---|---|---|---|---|---|", flush=True)
    for case, build, variants in cases:
        try:
            main_k, args, check = build()
        except Exception as exc:
            print(f"| {case} | build failed: {type(exc).__name__}: {str(exc)[:200]} |", flush=True)
            continue
        for label, env, launch in variants:
            if not cpu and time.time() - START > 70:
                print(f"| {case} | {label} | skipped: out of time |", flush=True)
                continue
            try:
                if env is None:  # hand-written
                    run = hand_gqa(*gqa_size, d0, *launch)
                    err = check(run)
                    chosen, info = f"w{launch[0]} s{launch[1]}", ""
                else:
                    kernel, saved = _variant(main_k, env, launch)
                    try:
                        err = check(kernel)  # compiles here, under env
                    finally:
                        _restore(saved)
                    run = kernel
                    chosen = kernel.launch_choice.label() if kernel.launch_choice is not None else "-"
                us = float("nan")
                if not cpu:
                    us = triton.testing.do_bench(lambda: run(*args), warmup=25, rep=200, return_mode="median") * 1e3
                info = _hand_info() if env is None else _compiled_info(kernel)
                print(f"| {case} | {label} | {chosen} | {us:.2f} | {err:.1e} | {info} |", flush=True)
            except Exception as exc:
                print(f"| {case} | {label} | failed: {type(exc).__name__}: {str(exc)[:200]} |", flush=True)
    print(f"total {time.time() - START:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
