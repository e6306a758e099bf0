"""Host time of kernels with host-made tensor descriptors (issue 23; runtime/host_descriptors.py).

TileLang's flash-attention examples at their ``run_regression_perf`` sizes, run unmodified through
tile2triton (forward: the whole kernel; backward: the dK/dV main kernel the suite times).  Per case
and variant:

* ``err``: largest |difference| against an fp32 torch reference (backward: dQ, dK, dV scaled by their max);
* ``loop us``: 2000 calls timed with ``time.perf_counter`` and one synchronize at the end, per call
  (the host's cost per call where it exceeds the kernel's);
* ``event us``: ``triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")`` (L2 flushed:
  what the regression suite reports);
* ``idle us``: CUDA-event time of one call made with the GPU idle (flushed, synchronized, then
  the call): the host's latency from the call to its kernel's start, plus the kernel;
* ``graph us``: ``triton.testing.do_bench_cudagraph`` median: the kernel without host cost (where
  ``loop us`` exceeds it, ``loop us`` is the host's time per call);
* ``path``: ``gen`` (the generated launcher) or ``generic``; per launch ``ptr`` (no host
  descriptors), ``descN:enc`` (N descriptors, encoded once per tensor) or ``descN:obj``
  (``TensorDescriptor`` objects Triton encodes per call).

Variants (environment set while the kernel is built, tile2triton/settings.py):

* ``default``: as shipped (host descriptors off; loops of <= 16 iterations through pointers);
* ``host trips1 nocache``: ``TILE2TRITON_HOST_DESCRIPTORS=1 TILE2TRITON_TMA_MIN_TRIPS=1
  TILE2TRITON_HOST_DESCRIPTOR_CACHE=0``: every TMA copy through a host-made descriptor, a
  ``TensorDescriptor`` per call that Triton's launcher encodes (session 9's path);
* ``host trips1 cache``: the same with the encoded tensormaps cached per tensor and passed to
  Triton's C launcher directly (``EncodedDescriptors``);
* ``host cache``: the candidate default: host descriptors, cached, the shipped ``TMA_MIN_TRIPS``
  (which since this branch leaves host-made descriptors alone: the same kernels as ``host trips1``);
* ``device trips1``: descriptors built in every program (``TILE2TRITON_TMA_MIN_TRIPS=1``, host off).

Then a cProfile top-15 (by own time) of 2000 forward calls on ``host trips1 nocache`` and on
``host trips1 cache``.

At these sizes the loops run 2 (forward) and 8 (backward) times, so ``default`` (loops of <= 16
iterations through pointers) has no descriptors at all: ``host trips1`` against ``default`` says
whether the pointer fallback is still needed once descriptors are host-made.  The last case (32 iterations) has descriptors in
every variant.  What the rows decide: ``HOST_DESCRIPTORS_DEFAULT`` on (with ``TMA_MIN_TRIPS_DEFAULT``
1) if ``host trips1 cache`` beats ``default`` on event time in every case;
``HOST_DESCRIPTOR_CACHE_DEFAULT`` on if ``cache`` is no slower than ``nocache`` anywhere.

    PYTHONPATH=. python3 benchmarks/hostdesc_probe.py [TILELANG_EXAMPLES_DIR] [--cpu]

(``--cpu``: one head, through Triton's interpreter, errors only: a smoke test of this script.)
"""

from __future__ import annotations

import cProfile
import importlib
import io
import os
import pstats
import sys
import time

import torch

DEV = "cuda"
LOG2E = 1.44269504


def _examples_dir() -> str | None:
    given = [a for a in sys.argv[1:] if not a.startswith("--")]
    for d in (*given, os.environ.get("TILELANG_EXAMPLES", ""), "/work/tl/examples/flash_attention",
              "../tl/examples/flash_attention"):  # fmt: skip
        if d and os.path.isdir(d):
            return d
    return None  # the probe's own forward kernel only


class OwnForward:
    """A flash-attention forward written for this probe (bhsd, not causal), for a machine without
    TileLang's examples: online softmax in base 2, K and V through a pipelined loop."""

    @staticmethod
    def flashattn(batch, heads, seq_q, seq_kv, dim, is_causal, block_M=64, block_N=64, num_stages=1, threads=128):
        import tile2triton as tilelang
        import tile2triton.language as T

        return _own_forward(tilelang, T)(batch, heads, seq_q, seq_kv, dim, block_M, block_N, num_stages, threads)


def _own_forward(tilelang, T):
    @tilelang.jit(out_idx=[3])
    def forward(batch, heads, seq_q, seq_kv, dim, block_M, block_N, num_stages, threads):
        scale = (1.0 / dim) ** 0.5 * LOG2E
        half, f32 = T.float16, T.float32

        @T.prim_func
        def main(
            Q: T.Tensor([batch, heads, seq_q, dim], half),
            K: T.Tensor([batch, heads, seq_kv, dim], half),
            V: T.Tensor([batch, heads, seq_kv, dim], half),
            Out: T.Tensor([batch, heads, seq_q, dim], half),
        ):
            with T.Kernel(T.ceildiv(seq_q, block_M), heads, batch, threads=threads) as (bx, by, bz):
                q_s = T.alloc_shared([block_M, dim], half)
                k_s = T.alloc_shared([block_N, dim], half)
                v_s = T.alloc_shared([block_N, dim], half)
                o_s = T.alloc_shared([block_M, dim], half)
                s = T.alloc_fragment([block_M, block_N], f32)
                p = T.alloc_fragment([block_M, block_N], half)
                acc = T.alloc_fragment([block_M, dim], f32)
                m = T.alloc_fragment([block_M], f32)
                m_prev = T.alloc_fragment([block_M], f32)
                rescale = T.alloc_fragment([block_M], f32)
                row = T.alloc_fragment([block_M], f32)
                total = T.alloc_fragment([block_M], f32)
                T.copy(Q[bz, by, bx * block_M : (bx + 1) * block_M, :], q_s)
                T.fill(acc, 0)
                T.fill(total, 0)
                T.fill(m, -T.infinity(f32))
                for k in T.Pipelined(T.ceildiv(seq_kv, block_N), num_stages=num_stages):
                    T.copy(K[bz, by, k * block_N : (k + 1) * block_N, :], k_s)
                    T.clear(s)
                    T.gemm(q_s, k_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                    T.copy(m, m_prev)
                    T.reduce_max(s, m, dim=1, clear=False)
                    for i in T.Parallel(block_M):
                        rescale[i] = T.exp2(m_prev[i] * scale - m[i] * scale)
                    for i, j in T.Parallel(block_M, block_N):
                        s[i, j] = T.exp2(s[i, j] * scale - m[i] * scale)
                    T.reduce_sum(s, row, dim=1)
                    for i in T.Parallel(block_M):
                        total[i] = total[i] * rescale[i] + row[i]
                    T.copy(s, p)
                    for i, j in T.Parallel(block_M, dim):
                        acc[i, j] *= rescale[i]
                    T.copy(V[bz, by, k * block_N : (k + 1) * block_N, :], v_s)
                    T.gemm(p, v_s, acc, policy=T.GemmWarpPolicy.FullRow)
                for i, j in T.Parallel(block_M, dim):
                    acc[i, j] /= total[i]
                T.copy(acc, o_s)
                T.copy(o_s, Out[bz, by, bx * block_M : (bx + 1) * block_M, :])

        return main

    return forward


def _attention(q, k, v, layout):
    """fp32 softmax(q k^T / sqrt(d)) v in the kernel's layout."""
    a, b, c = (x.float().transpose(1, 2) if layout == "bshd" else x.float() for x in (q, k, v))
    o = torch.softmax(a @ b.transpose(-1, -2) / q.shape[-1] ** 0.5, -1) @ c
    return o.transpose(1, 2) if layout == "bshd" else o


def fwd_case(ex, layout, B, H, S, D, **launch):
    shape = (B, H, S, D) if layout == "bhsd" else (B, S, H, D)
    q, k, v = (torch.randn(shape, device=DEV, dtype=torch.half) for _ in range(3))
    ref = _attention(q, k, v, layout)
    sizes = (B, H, S, S, D, False) if layout == "bhsd" else (B, H, S, D, False)
    main = ex.flashattn(*sizes, **launch)
    args = (q, k, v)

    def check(kernel):
        return (kernel(*args).float() - ref).abs().max().item()

    return main, args, check


def bwd_case(probe, ex, layout, B=1, H=16, S=512, D=64):
    probe.DEV = DEV
    return probe.mha(ex, layout, B, H, S, D)


def _build(main, env: dict):
    """A fresh kernel of ``main``'s source compiled under ``env`` (the switches are read when it lowers)."""
    from tile2triton.runtime.kernel import JITKernel

    return JITKernel(main.prim_func, pass_configs=main.pass_configs, launch=main.launch_choice), env


def _with_env(env: dict, fn):
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return fn()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _loop_us(fn, n=2000) -> float:
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


def _synced_event_us(fn, n=200) -> float:
    """Median CUDA-event time of one call made on an idle GPU (L2 flushed, then synchronized): the
    host's time from the call to its kernel's start shows, added to the kernel's."""
    import triton.testing  # noqa: F401 - the driver's cache buffer
    from triton.runtime.driver import driver

    cache = driver.active.get_empty_cache_for_benchmark()
    times = []
    for _ in range(n):
        driver.active.clear_cache(cache)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return sorted(times)[n // 2]


def _graph_us(fn) -> float:
    import triton.testing

    try:
        return triton.testing.do_bench_cudagraph(fn, rep=30, return_mode="median") * 1e3
    except Exception as exc:  # a path that cannot be captured
        print(f"  (cuda graph failed: {type(exc).__name__}: {str(exc)[:120]})", flush=True)
        return float("nan")


def _profile(fn, n=2000) -> str:
    fn()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        fn()
    prof.disable()
    torch.cuda.synchronize()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(15)
    lines = [ln for ln in out.getvalue().splitlines() if ln.strip()]
    return "\n".join(lines[:24])


def _direct_state(kernel) -> str:
    """Whether the kernel's launches took the generated launcher and the cached descriptors."""
    try:
        lowered = kernel._compiled.get(False)
        gen = getattr(kernel._entry, "source", None) is not None
        parts = []
        for d in lowered.direct if lowered is not None else ():
            if d is None:
                parts.append("run")
            elif d.descriptors:
                parts.append(f"desc{len(d.descriptors)}:{'enc' if any(d.encoded.values()) else 'obj'}")
            else:
                parts.append("ptr")
        return ("gen " if gen else "generic ") + ",".join(parts)
    except Exception as exc:
        return f"? {type(exc).__name__}"


def main() -> int:
    global DEV
    cpu = "--cpu" in sys.argv
    if cpu:
        DEV = "cpu"
    elif not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 1
    import triton
    import triton.testing

    from tile2triton.cli import install_tilelang_alias

    install_tilelang_alias()
    start = time.time()
    examples = _examples_dir()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    if examples is None:
        print("TileLang's examples/flash_attention not found: the probe's own forward kernel only", flush=True)
        fwd_bhsd = OwnForward
        fwd_bshd = bwd_bhsd = bwd_bshd = probe = None
    else:
        sys.path.insert(0, examples)
        fwd_bhsd = importlib.import_module("example_mha_fwd_bhsd")
        fwd_bshd = importlib.import_module("example_mha_fwd_bshd")
        bwd_bhsd = importlib.import_module("example_mha_bwd_bhsd")
        bwd_bshd = importlib.import_module("example_mha_bwd_bshd")
        probe = importlib.import_module("attnbwd_probe")
    torch.manual_seed(0)
    heads = 1 if cpu else 32
    print(
        f"{'cpu' if cpu else torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}",
        flush=True,
    )
    on = {"TILE2TRITON_HOST_DESCRIPTORS": "1"}
    nocache = {**on, "TILE2TRITON_TMA_MIN_TRIPS": "1", "TILE2TRITON_HOST_DESCRIPTOR_CACHE": "0"}
    cache = {**on, "TILE2TRITON_TMA_MIN_TRIPS": "1", "TILE2TRITON_HOST_DESCRIPTOR_CACHE": "1"}
    short = [
        ("default", {}),
        ("host trips1 nocache", nocache),
        ("host trips1 cache", cache),
        ("host cache", {**on, "TILE2TRITON_HOST_DESCRIPTOR_CACHE": "1"}),  # the shipped TMA_MIN_TRIPS
        ("device trips1", {"TILE2TRITON_HOST_DESCRIPTORS": "0", "TILE2TRITON_TMA_MIN_TRIPS": "1"}),
    ]
    # 32 iterations a program: descriptors under every variant (in-kernel by default)
    long = [("default", {}), ("host trips1 nocache", nocache), ("host trips1 cache", cache)]
    h2 = heads // 2 or 1
    cases = [
        (f"mha_fwd_bhsd B1 H{heads} S256 D64", short, lambda: fwd_case(fwd_bhsd, "bhsd", 1, heads, 256, 64,
                                                    block_M=128, block_N=128, num_stages=2, threads=256)),
        (f"mha_bwd_bhsd B1 H{h2} S512 D64 (main)", short, lambda: bwd_case(probe, bwd_bhsd, "bhsd", H=h2)),
        (f"mha_bwd_bhsd B1 H{h2} S{256 if cpu else 2048} D64 (main, 32 trips)", long,
         lambda: bwd_case(probe, bwd_bhsd, "bhsd", H=h2, S=256 if cpu else 2048)),
        (f"mha_fwd_bshd B1 H{heads} S256 D128", short, lambda: fwd_case(fwd_bshd, "bshd", 1, heads, 256, 128,
                                                     block_M=128, block_N=128, num_stages=1, threads=128)),
        (f"mha_bwd_bshd B1 H{h2} S512 D64 (main)", short, lambda: bwd_case(probe, bwd_bshd, "bshd", H=h2)),
    ]  # fmt: skip
    if "--own" in sys.argv or examples is None:  # the probe's own kernel (and nothing else without examples)
        cases = [(f"own fwd_bhsd B1 H{heads} S256 D64", short, lambda: fwd_case(OwnForward, "bhsd", 1, heads, 256, 64,
                  block_M=128, block_N=128, num_stages=2, threads=256))] + (cases if examples else [])  # fmt: skip
    profiled = {}
    print("| case | variant | err | loop us | event us | idle us | graph us | path |")
    print("|---|---|---|---|---|---|---|---|", flush=True)
    for name, variants, build in cases:
        try:
            main_k, args, check = build()
        except Exception as exc:
            print(f"| {name} | build failed: {type(exc).__name__}: {str(exc)[:200]} |", flush=True)
            continue
        for label, env in variants:
            if time.time() - start > 80 and not cpu:
                print(f"| {name} | {label} | skipped: time |", flush=True)
                continue
            try:
                kernel, _ = _build(main_k, env)
                err = _with_env(env, lambda k=kernel: check(k))  # compiles here, under env
                if cpu:
                    print(f"| {name} | {label} | {err:.1e} | - | - | - | - | {_direct_state(kernel)} |", flush=True)
                    continue
                fn = lambda k=kernel: k(*args)
                loop = _loop_us(fn)
                event = triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e3
                idle = _synced_event_us(fn)
                graph = _graph_us(fn)
                print(f"| {name} | {label} | {err:.1e} | {loop:.2f} | {event:.2f} | {idle:.2f} | {graph:.2f} | {_direct_state(kernel)} |", flush=True)  # fmt: skip
                if "fwd_bhsd" in name and label in ("host trips1 nocache", "host trips1 cache"):
                    profiled[label] = fn
            except Exception as exc:
                print(f"| {name} | {label} | failed: {type(exc).__name__}: {str(exc)[:200]} |", flush=True)
        for label, fn in profiled.items():  # after the first case: before any time cut-off
            print(f"\ncProfile, mha_fwd_bhsd, {label}, 2000 calls (top 15 by own time):")
            print(_profile(fn), flush=True)
        if profiled:
            print()
        profiled = {}
    print(f"\n{time.time() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
