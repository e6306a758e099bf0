"""Runs a part of TileLang's regression suite through both implementations and writes
OUT/part_K_of_N.json: per case both implementations' records and whether their outputs agree.

Phase 1 (warm) runs every case once per implementation in parallel (compiles, fills both
implementations' caches); phase 2 (time) runs each file alone, TileLang then tile2triton.

With ``variants`` every case runs at its variants.py shape instead (cases with none are listed,
not run) and every file this writes is named ``variants_...``."""

from __future__ import annotations

import ast
import glob
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import torch

from . import outputs
from . import variants as shape_variants

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.dirname(os.path.dirname(HERE))  # the checkout holding benchmarks/
IMPLS = ("tilelang", "tile2triton")


def regression_files(examples: str, substrings: list) -> list:
    files = sorted(glob.glob(os.path.join(examples, "**", "regression_*.py"), recursive=True))
    return [f for f in files if not substrings or any(s in f for s in substrings)]


def cases_of(path: str) -> list:
    """The file's regression_* functions, read without importing it."""
    with open(path) as f:
        tree = ast.parse(f.read())
    return sorted(n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("regression_"))


def split(files: list, parts: int) -> list:
    """Files in ``parts`` groups of about the same number of cases (largest files first)."""
    bins: list = [[] for _ in range(parts)]
    load = [0] * parts
    for f in sorted(files, key=lambda f: (-len(cases_of(f)), f)):
        i = load.index(min(load))
        bins[i].append(f)
        load[i] += len(cases_of(f))
    return [sorted(b) for b in bins]


class Runner:
    def __init__(self, examples: str, site: str, out: str, timeouts: dict, variants: int = 0):
        self.examples, self.site, self.out, self.timeouts = examples, site, out, timeouts
        self.variants = variants

    def child(self, impl: str, path: str, phase: str, case: str | None = None, timeout: float | None = None) -> dict:
        """Run one child; ``timeout``: seconds it may take (default: the phase's)."""
        rel = os.path.relpath(path, self.examples).replace(os.sep, "__")
        prefix = "variants_" if self.variants else ""
        out = os.path.join(self.out, f"{prefix}{impl}_{phase}_{rel}{'__' + case if case else ''}.json")
        extra = PROJECT if impl == "tile2triton" else self.site
        env = dict(os.environ, PYTHONUNBUFFERED="1", TILELANG_REGRESSION_IMPL=impl)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.dirname(path), extra) if p)
        mode = ["--variants", str(self.variants)] if self.variants else []
        cmd = [sys.executable, os.path.join(HERE, "child.py"), *mode, impl, path, phase, out] + ([case] if case else [])
        t0 = time.time()
        try:
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout or self.timeouts[phase])
            rc, tail = p.returncode, (p.stdout[-800:] + "\n" + p.stderr[-1500:]) if p.returncode else ""
        except subprocess.TimeoutExpired:
            rc, tail = "timeout", ""
        try:
            with open(out) as f:
                res = json.load(f)
        except (OSError, ValueError):
            res = {"cases": {}}
        res.update(rc=rc, wall_s=round(time.time() - t0, 1), tail=tail, out=out)
        return res


def _case(res: dict, name: str) -> dict:
    """A case's record, or the reason the child gave none."""
    if name in res.get("cases", {}):
        return res["cases"][name]
    return {"status": "error", "error": res.get("import_error") or f"child exited with {res.get('rc')}: "
            + (res.get("tail") or "")[-300:]}  # fmt: skip


def _samples(res: dict):
    path = res.get("out", "")[: -len(".json")] + ".samples.pt"
    return torch.load(path) if os.path.exists(path) else {}


def run_part(examples: str, part: str, site: str, out: str, jobs: int, substrings: list, deadline: int,
             warm_timeout: int = 420, time_timeout: int = 240, warm: bool = True, variants: int = 0) -> str:  # fmt: skip
    examples = os.path.abspath(examples)
    k, n = map(int, part.split("/"))
    files = split(regression_files(examples, substrings), n)[k - 1]
    os.makedirs(out, exist_ok=True)
    runner = Runner(examples, site, out, {"warm": warm_timeout, "time": time_timeout}, variants)
    t0 = time.time()
    log = lambda msg: print(f"[{time.time() - t0:5.0f}s] {msg}", flush=True)
    log(f"part {part}: {len(files)} files, {sum(len(cases_of(f)) for f in files)} cases")
    variant_of = lambda c: shape_variants.variant_of(c, variants)
    runs = lambda c: not variants or variant_of(c).runs
    if variants:
        for problem in shape_variants.check(examples, shape_variants.VARIANT_SETS[variants]):
            log(f"variants.py: {problem}")
    jobs_list = [(impl, f, c) for f in files for c in cases_of(f) if runs(c) for impl in IMPLS] if warm else []
    jobs_list.sort(key=lambda j: j[0] != "tilelang")  # TileLang's compiles are the slow ones: first
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        futures = {pool.submit(runner.child, impl, f, "warm", c): (impl, f, c) for impl, f, c in jobs_list}
        for future, (impl, f, c) in futures.items():
            log(f"warm {impl} {os.path.relpath(f, examples)}::{c} {_case(future.result(), c)['status']}")
    path = os.path.join(out, f"{'variants_' if variants else ''}part_{k}_of_{n}.json")
    head = {"part": part, "examples": examples}
    rows = []
    for at, f in enumerate(files):
        # the part file as it stands before each file is timed: a run stopped from outside (a device call's
        # time limit) keeps the rows it timed, the rest listed as not reached
        pending = [{"file": os.path.relpath(g, examples), "case": c, "skipped": "not reached (run stopped)"}
                   for g in files[at:] for c in cases_of(g)]  # fmt: skip
        _write(path, head, rows + pending, variants)
        rel = os.path.relpath(f, examples)
        if time.time() - t0 > deadline:
            log(f"deadline: {rel} not timed")
            rows += [{"file": rel, "case": c, "skipped": "deadline"} for c in cases_of(f)]
            continue
        if not any(runs(c) for c in cases_of(f)):
            rows += [{"file": rel, "case": c, "skipped": variant_of(c).describe()} for c in cases_of(f)]
            continue
        # a child that hangs may not take the rest of the part's time (session 38: TileLang's time child of
        # one file ran its whole 240 s, and the device call's limit stopped the files after it)
        left = lambda: max(30.0, min(time_timeout, deadline - (time.time() - t0)))  # noqa: E731
        results = {impl: runner.child(impl, f, "time", timeout=left()) for impl in IMPLS}
        samples = {impl: _samples(r) for impl, r in results.items()}
        for c in cases_of(f):
            if not runs(c):
                rows.append({"file": rel, "case": c, "skipped": variant_of(c).describe()})
                continue
            tl, t2 = _case(results["tilelang"], c), _case(results["tile2triton"], c)
            row = {"file": rel, "case": c, "tilelang": tl, "tile2triton": t2}
            if variants:
                row["variant"] = variant_of(c).describe()
            if tl["status"] == "ok" and t2["status"] == "ok":
                row["outputs"] = outputs.compare_case(tl, t2, samples["tilelang"].get(c), samples["tile2triton"].get(c))
            rows.append(row)
            log(f"time {rel}::{c} TileLang {tl.get('latency', tl.get('error', '')[:60])} "
                f"tile2triton {t2.get('latency', t2.get('error', '')[:60])} {row.get('outputs', '')}")  # fmt: skip
    _write(path, head, rows, variants)
    log(f"wrote {path}")
    return path


def _write(path: str, head: dict, rows: list, variants: int) -> None:
    with open(path + ".tmp", "w") as fh:
        json.dump({**head, "rows": rows, **({"variants": variants} if variants else {})}, fh, indent=1)
    os.replace(path + ".tmp", path)  # never a half-written part file
