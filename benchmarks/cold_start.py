"""Cold first-call latency: a fresh process with empty caches, from its first kernel work to the
first result, for the tile2triton-transpiled kernel and the hand-written Triton one (bench.py's).

Each measurement is a new Python process with a new, empty TRITON_CACHE_DIR and
TILE2TRITON_CACHE_DIR. In it, after the imports, the inputs are made, Triton's driver is set up
(its utility module is built into the empty cache: the same for both) and the device synchronised;
then the clock runs from the kernel work to the first output being ready (torch.cuda.synchronize):

  tile2triton   re-apply @tilelang.jit to the factory (parse), call it (bind, check): "parse+bind";
                kernel.get_kernel_source() (lower, emit, write and import the generated module):
                "lower+emit"; the first call (Triton compiles, launches; the device runs): "Triton+run".
  hand Triton   the first launch of bench.py's hand-written kernel (Triton compiles, launches, runs).

"tile2triton" = parse+bind + lower+emit, the time tile2triton adds before Triton's compile (the
issue's target: under 50 ms). Every cell is the median over --runs fresh processes; the first
output is checked against torch. "import" is `import tile2triton` after torch and triton.

    PYTHONPATH=. python benchmarks/cold_start.py [--runs 3] [--only gemm,softmax,layernorm,flash_attn]
    PYTHONPATH=. python benchmarks/cold_start.py --cpu   # no GPU: Triton's interpreter, tiny sizes, 1 run
    PYTHONPATH=$PYTHONPATH:. python benchmarks/cold_start.py --tilelang 0,10,16   # against real TileLang

``--tilelang ROWS`` compares with real TileLang instead (it must be importable): the first call of
benchmarks/vs_tilelang.py's rows, the same source through both, each in a fresh process with empty
Triton, tile2triton and TileLang caches (vs_tilelang.cold_table).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_T_PROCESS = time.perf_counter()  # after the standard library's imports

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
KERNELS = ("gemm", "softmax", "layernorm", "flash_attn")
IMPLS = ("t2t", "hand")


def specs(bench, cpu: bool) -> dict:
    """kernel -> (description, TileLang factory, its arguments, hand-written launch, inputs, reference, atol)."""
    import torch

    dev = "cpu" if cpu else "cuda"
    f16 = torch.float16
    gm, gb = (64, (32, 32, 32, 2, 128)) if cpu else (4096, (128, 256, 64, 3, 256))
    sm, sn = (4, 1024) if cpu else (16384, 4096)
    fb, fh, fs, fd = (1, 2, 128, 64) if cpu else (4, 32, 4096, 128)
    fa_tl = (64, 32, 2, 128) if cpu else bench.FA_TL_CONFIG[fd, False]
    fa_hand = (64, 32, 2, 4) if cpu else bench.FA_HAND_CONFIG[fd]
    fa_view = lambda t: t[[0, fb - 1]][:, [0, fh - 1]]  # noqa: E731
    return {
        "gemm": (
            f"GEMM fp16 {gm}^3 {'x'.join(map(str, gb[:3]))}",
            bench.tl_gemm, (gm, gm, gm, *gb, 0 if cpu else 8, "float16"),
            lambda a, b: bench._launch_gemm(a, b, *gb, 1 if cpu else 8),
            lambda: [torch.randn(gm, gm, device=dev, dtype=f16), torch.randn(gm, gm, device=dev, dtype=f16)],
            lambda out, a, b: (out.double() - (a.float() @ b.float()).double()).abs().max().item(), 0.5,
        ),
        "softmax": (
            f"softmax fp16 {sm}x{sn}",
            bench.tl_softmax, (sm, sn, False),
            lambda x: bench._launch(bench.hw_softmax, (sm,), x, torch.empty_like(x), N=sn, BLOCK=sn, num_warps=8),
            lambda: [torch.randn(sm, sn, device=dev, dtype=f16)],
            lambda out, x: (out.double() - torch.softmax(x.double(), -1)).abs().max().item(), 2e-3,
        ),
        "layernorm": (
            f"layernorm fp32 {sm}x{sn}",
            bench.tl_layernorm, (sm, sn, 128),
            lambda x: bench._launch(bench.hw_layernorm, (sm,), x, torch.empty_like(x), N=sn, BLOCK=sn, num_warps=8),
            lambda: [torch.randn(sm, sn, device=dev)],
            lambda out, x: (out.double() - torch.nn.functional.layer_norm(x.double(), (sn,), eps=1e-5)).abs().max().item(),
            1e-3,
        ),
        "flash_attn": (
            f"flash attn fp16 {fb}x{fh}x{fs} D{fd}",
            bench.flashattn, (fb, fh, fs, fs, fd, False, *fa_tl),
            lambda q, k, v: bench.hw_attention(q, k, v, False, fa_hand, "host"),
            lambda: [torch.randn(fb, fh, fs, fd, device=dev, dtype=f16) for _ in range(3)],
            lambda out, q, k, v: (
                fa_view(out).double() - bench.fa_example.ref_program(fa_view(q), fa_view(k), fa_view(v), False)
            ).abs().max().item(),
            1e-2,
        ),
    }  # fmt: skip


def child(kernel: str, impl: str, cpu: bool) -> dict:
    """One cold measurement, in this (fresh) process."""
    t = time.perf_counter()
    import torch
    import triton

    t_torch = time.perf_counter() - t
    t = time.perf_counter()
    import tile2triton as tilelang

    t_import = time.perf_counter() - t
    sys.path.insert(0, str(HERE))
    import bench

    from tile2triton.runtime.cache import interpreter_mode

    _, factory, args, hand, inputs, error, atol = specs(bench, cpu)[kernel]
    xs = inputs()
    sync = (lambda: None) if cpu else torch.cuda.synchronize
    if not cpu:  # Triton's driver utilities (built once per cache directory) are set-up, not kernel work
        triton.runtime.driver.active.get_current_device()
    sync()
    result = {"import_torch_triton": t_torch, "import_tile2triton": t_import}
    t0 = time.perf_counter()
    if impl == "t2t":
        jitted = tilelang.jit(out_idx=factory.out_idx)(factory.func)  # parse the factory afresh
        kernel_obj = jitted(*args)
        t1 = time.perf_counter()
        kernel_obj.get_kernel_source(interpret=cpu)
        t2 = time.perf_counter()
        out = kernel_obj(*xs)
        sync()
        t3 = time.perf_counter()
        result.update(parse_bind=t1 - t0, lower_emit=t2 - t1, tile2triton=t2 - t0, triton_run=t3 - t2)
    else:
        if cpu:
            with interpreter_mode(True):
                out = hand(*xs)
        else:
            out = hand(*xs)
        sync()
        t3 = time.perf_counter()
    result["total"] = t3 - t0
    result["since_process_start"] = t3 - _T_PROCESS
    err = error(out, *xs)
    result["err"] = err
    result["ok"] = bool(err <= atol)
    return result


def run_child(kernel: str, impl: str, cpu: bool, timeout: float) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="t2t-cold-"))
    env = dict(os.environ)
    env["TRITON_CACHE_DIR"] = str(tmp / "triton")
    env["TILE2TRITON_CACHE_DIR"] = str(tmp / "tile2triton")
    env.pop("TILE2TRITON_DISABLE_CACHE", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    if cpu:
        env["TRITON_INTERPRET"] = "1"
    else:
        env.pop("TRITON_INTERPRET", None)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", kernel, impl] + (["--cpu"] if cpu else [])
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        for line in proc.stdout.splitlines():
            if line.startswith("COLD_RESULT "):
                return json.loads(line[len("COLD_RESULT ") :])
        tail = (proc.stderr or proc.stdout).strip().splitlines()
        return {"error": tail[-1][:200] if tail else f"exit status {proc.returncode}"}
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=None, help="fresh processes per cell (default 3; 1 with --cpu)")
    parser.add_argument("--only", default="", help=f"comma-separated subset of {','.join(KERNELS)}")
    parser.add_argument("--cpu", action="store_true", help="Triton's interpreter at tiny sizes (no GPU needed)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per child process")
    parser.add_argument("--child", nargs=2, metavar=("KERNEL", "IMPL"), help=argparse.SUPPRESS)
    parser.add_argument("--tilelang", default="", help="vs_tilelang.py row numbers: first call against TileLang")
    args = parser.parse_args(argv)
    if args.tilelang:
        import vs_tilelang

        rows = [int(x) for x in args.tilelang.split(",")]
        vs_tilelang.cold_table(rows, vs_tilelang.rows(False), True, args.runs or 3)
        return 0
    if args.child:
        result = child(args.child[0], args.child[1], args.cpu)
        print("COLD_RESULT " + json.dumps(result), flush=True)
        return 0

    import torch

    cpu = args.cpu or not torch.cuda.is_available()
    runs = args.runs or (1 if cpu else 3)
    kernels = [k for k in KERNELS if not args.only or k in args.only.split(",")]
    sys.path.insert(0, str(HERE))
    import triton

    device = "Triton interpreter (CPU)" if cpu else torch.cuda.get_device_name()
    print(f"# cold first call: {device} | torch {torch.__version__} | triton {triton.__version__} | "
          f"median of {runs} fresh process(es) per cell, empty TRITON_CACHE_DIR and TILE2TRITON_CACHE_DIR", flush=True)  # fmt: skip
    results = {(k, i): [] for k in kernels for i in IMPLS}
    for r in range(runs):  # rounds, so that drift hits every cell alike
        for k in kernels:
            for i in IMPLS:
                res = run_child(k, i, cpu, args.timeout)
                results[(k, i)].append(res)
                status = res.get("error") or f"{res['total'] * 1e3:.0f} ms"
                print(f"#   run {r + 1}/{runs} {k} {i}: {status}", file=sys.stderr, flush=True)

    def med(k, i, field):
        vals = [x[field] for x in results[(k, i)] if field in x]
        return statistics.median(vals) * 1e3 if vals else None

    def fmt(v):
        return "n/a" if v is None else f"{v:.1f}"

    print()
    print("| kernel | tile2triton first call ms | parse+bind ms | lower+emit ms | tile2triton total ms | "
          "Triton+run ms | hand Triton first call ms | t2t - hand ms | import tile2triton ms | check |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    import bench  # for the case descriptions

    names = {k: v[0] for k, v in specs(bench, cpu).items()}
    for k in kernels:
        t_tot, h_tot = med(k, "t2t", "total"), med(k, "hand", "total")
        pb, le, tt = med(k, "t2t", "parse_bind"), med(k, "t2t", "lower_emit"), med(k, "t2t", "tile2triton")
        errors = sorted({x["error"] for i in IMPLS for x in results[(k, i)] if "error" in x})
        checks = [
            f"{i} {x['err']:.2g}{'' if x['ok'] else ' FAIL'}" for i in IMPLS for x in results[(k, i)][:1] if "err" in x
        ]
        check = "; ".join(checks + [f"error: {e}" for e in errors])
        diff = t_tot - h_tot if t_tot is not None and h_tot is not None else None
        print(f"| {names[k]} | {fmt(t_tot)} | {fmt(pb)} | {fmt(le)} | {fmt(tt)} | {fmt(med(k, 't2t', 'triton_run'))} | "
              f"{fmt(h_tot)} | {fmt(diff)} | {fmt(med(k, 't2t', 'import_tile2triton'))} | {check} |", flush=True)  # fmt: skip
    failed = any("error" in x or not x.get("ok", False) for v in results.values() for x in v)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
