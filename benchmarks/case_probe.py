"""One case of TileLang's regression suite, looked at closely in each implementation: where a call's
host time goes, and whether both implementations were handed the same inputs.

    python3 benchmarks/case_probe.py EXAMPLES FILE::regression_NAME [--impl tilelang|tile2triton|both]
                                     [--site DIR] [--profile N] [--env K=V ...] [--kwargs K=V ...]

For every callable the case hands ``do_bench`` (the first only, of a case that benches several), it
prints one JSON line: host us per call (300 calls back to back, then one synchronize: the host
path when the kernel is short), event ms (``triton.testing.do_bench`` median, L2 flushed, as the
suite), a fingerprint of the inputs (per tensor: shape, dtype, float64 sum and sum of squares; read
from TileLang's ``functools.partial`` or tile2triton's closure), the first call's output fingerprint,
and with ``--profile N`` the N functions of most own time over 300 calls (cProfile).  ``--env``
sets variables for the tile2triton child only (switch comparisons).  Each implementation runs in a
child process of its own, as in the suite (benchmarks/tilelang_regression_suite/child.py).
``--kwargs K=V ...`` (values as Python literals) overrides the keywords the case hands
``tilelang.testing.process_func`` (both implementations alike), as the suite's ``--variants`` does:
``--kwargs batch=4 max_cache_seqlen=3072`` runs sparse_gqa_decode_varlen_indice at its variant shape.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import json
import os
import pstats
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.dirname(HERE)


def fingerprint(value) -> list:
    import torch

    if isinstance(value, torch.Tensor):
        x = value.detach().to(torch.float64)
        return [[list(value.shape), str(value.dtype), float(x.sum()), float((x * x).sum())]]
    if isinstance(value, (list, tuple)):
        return [f for v in value for f in fingerprint(v)]
    return []


def inputs_of(fn) -> list:
    """The tensors a timed callable closes over: TileLang's partial(adapter, *ins), tile2triton's
    ``lambda: fn(*ins)``, or an example's own closure."""
    import torch

    if isinstance(fn, functools.partial):
        found = list(fn.args)
    else:
        found = []
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                found.append(cell.cell_contents)
            except ValueError:
                continue

    def tensors(v):
        if isinstance(v, torch.Tensor):
            return [v]
        if isinstance(v, (list, tuple)):
            return [t for x in v for t in tensors(x)]
        return []

    return tensors(found)


class Probe:
    def __init__(self, profile: int, save: str):
        self.profile, self.save, self.done = profile, save, False

    def __call__(self, fn, *args, **kwargs):
        import torch
        import triton.testing

        if self.done:
            fn()
            return 1.0
        self.done = True
        sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
        row = {"inputs": fingerprint(inputs_of(fn))}
        out = fn()
        sync()
        row["output"] = fingerprint(out)[:4]
        if self.save:
            torch.save({"inputs": inputs_of(fn), "output": out}, self.save)
        calls = 300 if torch.cuda.is_available() else 2  # the CPU (interpreter) only checks the script
        for _ in range(min(20, calls)):
            fn()
        sync()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        sync()
        row["host_us"] = round((t1 - t0) / calls * 1e6, 2)
        row["host_sync_us"] = round((time.perf_counter() - t0) / calls * 1e6, 2)
        if torch.cuda.is_available():
            row["event_ms"] = triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")
        else:
            row["event_ms"] = row["host_sync_us"] * 1e-3
        if self.profile:
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(calls):
                fn()
            prof.disable()
            sync()
            s = io.StringIO()
            pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(self.profile)
            row["profile"] = "\n".join(line for line in s.getvalue().splitlines() if line.strip())[-4000:]
        print("PROBE " + json.dumps(row), flush=True)
        quantiles = kwargs.get("quantiles")
        return [row["event_ms"]] * len(quantiles) if quantiles else row["event_ms"]


def parse_kwargs(items: list) -> dict:
    """``K=V`` items, each V a Python literal (``4``, ``'bf16'``, ``[1, 2]``)."""
    import ast

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            raise SystemExit(f"--kwargs: expected NAME=VALUE, got {item!r}")
        out[key] = ast.literal_eval(value)
    return out


def child(impl: str, path: str, case: str, profile: int, save: str, kwargs: dict | None = None) -> None:
    sys.path.insert(0, os.path.join(HERE, "tilelang_regression_suite"))
    import importlib.util

    from child import install, seed  # the suite's own import and seeding

    recorded = install(impl, Probe(profile, save))
    if kwargs:  # the case's process_func keywords overridden, as the suite's --variants does
        import tilelang.testing

        def process_func(func, name=None, /, **given):
            recorded["latency"] = float(func(**{**given, **kwargs}))

        tilelang.testing.process_func = process_func
    sys.path.insert(0, os.path.dirname(path))
    os.chdir(os.path.dirname(path))
    sys.argv = [path]
    seed()
    spec = importlib.util.spec_from_file_location("_probe_case", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    seed()
    getattr(mod, case)()
    print(f"DONE {impl} {recorded.get('version')}", flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("examples")
    p.add_argument("case", help="FILE::regression_NAME, FILE relative to EXAMPLES")
    p.add_argument("--impl", default="both")
    p.add_argument("--site", default="")
    p.add_argument("--profile", type=int, default=0)
    p.add_argument("--env", nargs="*", default=[])
    p.add_argument("--save", default="", help="folder: each implementation's first inputs and output (torch.save)")
    p.add_argument("--kwargs", nargs="*", default=[], help="K=V ...: the case's process_func keywords overridden")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    rel, _, case = a.case.partition("::")
    path = os.path.abspath(os.path.join(a.examples, rel))  # the child changes into the case's folder
    if a.child:
        child(a.impl, path, case, a.profile, a.save, parse_kwargs(a.kwargs))
        return 0
    parse_kwargs(a.kwargs)  # a malformed item fails here, not in both children
    impls = ("tilelang", "tile2triton") if a.impl == "both" else (a.impl,)
    for impl in impls:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        extra = PROJECT if impl == "tile2triton" else a.site
        env["PYTHONPATH"] = os.pathsep.join(x for x in (os.path.dirname(path), extra) if x)
        if impl == "tile2triton":
            env.update(kv.split("=", 1) for kv in a.env)
        cmd = [sys.executable, os.path.abspath(__file__), a.examples, a.case, "--impl", impl, "--child"]
        cmd += ["--profile", str(a.profile if impl == "tile2triton" else 0)]
        cmd += ["--kwargs", *a.kwargs] if a.kwargs else []
        if a.save:
            os.makedirs(a.save, exist_ok=True)
            cmd += ["--save", os.path.join(os.path.abspath(a.save), f"{case}.{impl}.pt")]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        tag = f"{impl}{' ' + ' '.join(a.env) if impl == 'tile2triton' and a.env else ''}"
        lines = [ln for ln in r.stdout.splitlines() if ln.startswith("PROBE ")]
        if r.returncode or not lines:
            print(f"## {case} [{tag}] FAILED rc={r.returncode}\n{(r.stdout + r.stderr)[-1500:]}")
            continue
        for ln in lines:
            row = json.loads(ln[6:])
            prof = row.pop("profile", "")
            print(f"## {case} [{tag}] {json.dumps(row)}")
            if prof:
                print(prof)
    return 0


if __name__ == "__main__":
    sys.exit(main())
