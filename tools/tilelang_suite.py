"""Run TileLang's own example CI and language/kernel tests, unmodified, through tile2triton.

    python3 tools/tilelang_suite.py PATH_TO_TILELANG_CHECKOUT [--only GLOB] [--timeout S] [--json OUT]
                                    [--native | --both] [--cuda-as-cpu] [--sets examples,language,kernel]

Each test file runs in its own ``python -m pytest`` subprocess (cwd = the file's folder, as the
example CI does), with a per-file timeout. This file is also the pytest plugin of those
subprocesses (``-p tilelang_suite``): it makes ``import tilelang`` resolve to tile2triton (or, with
``--native``, imports the installed TileLang before the checkout's conftest can put its unbuilt
source tree first on ``sys.path``) and records every collection and test report as a JSON line, so
a file killed by its timeout still reports the items it finished.

``--cuda-as-cpu`` (CPU machines only): upstream tests create their tensors with ``.cuda()`` or
``device="cuda"``; this maps those to the CPU so the kernels run on Triton's interpreter instead of
failing on the first tensor; ``torch.Generator(device="cuda")`` gives a CPU generator and
``TRITON_INTERPRET=1`` runs the examples' own Triton kernels on the interpreter too.
``torch.cuda.is_available()`` stays False; tile2triton's ``tilelang.testing`` then treats the
interpreter as a generic pre-Hopper GPU (compute capability 8.0): ``requires_cuda`` tests run,
tests gated on sm_90+ (TMA, wgmma, ...) still skip.

Nothing is copied from the checkout; the files are read where they are.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

SETS = {
    "examples": ("examples", "**/test_*.py"),
    "language": ("testing/python/language", "test_*.py"),
    "kernel": ("testing/python/kernel", "test_*.py"),
    # example scripts the example CI does not import, each run as ``python example_x.py`` (its
    # ``__main__`` block, sizes and checks as written): code in the wild, beyond the CI
    "scripts": ("examples", "**/example_*.py"),
}
# TileLang's other test folders (issue 26), each a set of its own; "others" runs every one the checkout has.
# Some test TileLang's own backends (amd, cpu, metal, webgpu, llvm) or its TVM passes (transform,
# analysis, arith): their counts say what of them a TileLang program through tile2triton keeps.
OTHER_FOLDERS = ("issue", "jit", "cache", "autotune", "transform", "tilelibrary", "components", "dynamic", "fastmath",
                 "math", "cpu", "amd", "analysis", "arith", "backend", "carver", "contrib", "cuda", "debug", "layout",
                 "llvm", "metal", "profiler", "quantize", "runtime", "target", "tools", "utils", "webgpu")  # fmt: skip
SETS.update({name: (f"testing/python/{name}", "**/test_*.py") for name in OTHER_FOLDERS})
GROUPS = {"others": OTHER_FOLDERS}


def folder_of(rel: str) -> str:
    """The set folder a file belongs to: ``examples`` or ``testing/python/<name>``."""
    parts = rel.split(os.sep) if os.sep in rel else rel.split("/")
    return "/".join(parts[:3]) if parts[:2] == ["testing", "python"] and len(parts) > 3 else parts[0]


# ----------------------------------------------------------------------------- plugin side
_RECORD = os.environ.get("T2T_SUITE_RECORD")


def _plugin_setup() -> None:
    mode = os.environ.get("T2T_SUITE_MODE", "t2t")
    if mode == "native":
        import tilelang  # noqa: F401 - the installed TileLang wins over the checkout's source tree

        return
    sys.path.insert(0, os.environ.get("T2T_SUITE_REPO", REPO))
    from tile2triton.cli import install_tilelang_alias

    install_tilelang_alias()
    if os.environ.get("T2T_SUITE_CUDA_AS_CPU") == "1":
        _map_cuda_to_cpu()


def _map_cuda_to_cpu() -> None:
    """Make ``device="cuda"`` / ``.cuda()`` mean the CPU (a CPU-only torch has no CUDA device):
    the mapping ``tile2triton run --device cpu`` installs (tile2triton/cuda_as_cpu.py)."""
    from tile2triton.cuda_as_cpu import map_cuda_to_cpu

    map_cuda_to_cpu()


def _emit(record: dict) -> None:
    if _RECORD:
        with open(_RECORD, "a") as f:
            f.write(json.dumps(record) + "\n")


def _short(text, limit=400):
    text = str(text or "")
    lines = [line for line in text.splitlines() if line.strip()]
    # the last "E   ..." line of a pytest failure is the exception; otherwise the last line
    errs = [line for line in lines if line.startswith("E ")]
    line = (errs[0] if errs else (lines[-1] if lines else "")).strip()
    return line[:limit]


def pytest_collectreport(report):
    if report.failed:
        _emit({"kind": "collect", "nodeid": report.nodeid, "outcome": "error", "msg": _short(report.longreprtext)})


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        if report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else _short(report.longreprtext)
            outcome, msg = "skipped", reason
        elif report.failed:
            outcome = "failed" if report.when == "call" else "error"
            msg = _short(report.longreprtext)
        else:
            outcome, msg = "passed", ""
        _emit({"kind": "item", "nodeid": report.nodeid, "outcome": outcome, "msg": msg,
               "duration": round(report.duration, 2)})  # fmt: skip


if os.environ.get("T2T_SUITE_PLUGIN") == "1" and __name__ != "__main__":
    _plugin_setup()


# ----------------------------------------------------------------------------- runner side
def discover(root: str, sets: list[str], only: list[str]) -> list[str]:
    import glob

    files = []
    for name in sets:
        sub, pattern = SETS[name]
        base = os.path.join(root, sub)
        for path in sorted(glob.glob(os.path.join(base, pattern), recursive=True)):
            rel = os.path.relpath(path, root)
            if "bitnet-1.58b" in rel:  # the example CI's pytest.ini skips it (norecursedirs)
                continue
            if only and not any(fnmatch.fnmatch(rel, g) or g in rel for g in only):
                continue
            if name == "scripts" and _imported_by_ci(path):
                continue
            files.append(rel)
    return files


def _imported_by_ci(path: str) -> bool:
    """Does a test file of the example's folder import it (the example CI runs it already)?"""
    import glob
    import re

    module = os.path.splitext(os.path.basename(path))[0]
    for test in glob.glob(os.path.join(os.path.dirname(path), "test_*.py")):
        if re.search(rf"\b{re.escape(module)}\b", open(test, errors="replace").read()):
            return True
    return False


_SCRIPT_BOOT = (  # the plugin's setup (the alias, --cuda-as-cpu), then the script as __main__
    "import runpy, sys, tilelang_suite; tilelang_suite._plugin_setup(); "
    "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
)


def run_file(root: str, rel: str, args, mode: str = "t2t", gpu: int | None = None) -> dict:
    path = os.path.join(root, rel)
    fd, record = tempfile.mkstemp(prefix="t2t_suite_", suffix=".jsonl")
    os.close(fd)
    env = dict(os.environ)
    env.update(T2T_SUITE_PLUGIN="1", T2T_SUITE_RECORD=record, T2T_SUITE_MODE=mode)
    if gpu is not None:  # --jobs on a machine of several GPUs: files take turns on them
        env["CUDA_VISIBLE_DEVICES"] = str(gpu)
    if args.cuda_as_cpu and mode == "t2t":
        env["T2T_SUITE_CUDA_AS_CPU"] = "1"
        env["TRITON_INTERPRET"] = "1"  # the examples' own Triton reference kernels run on the interpreter too
    repo = os.path.abspath(args.repo or REPO)
    env["T2T_SUITE_REPO"] = repo
    env["PYTHONPATH"] = os.pathsep.join([HERE, repo, *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    cmd = [sys.executable, "-m", "pytest", "-p", "tilelang_suite", "-p", "no:cacheprovider", "-q", "-rN",
           "--tb=short", "-x" if args.exitfirst else "--maxfail=1000", os.path.basename(path)]  # fmt: skip
    script = not os.path.basename(path).startswith("test_")
    if script:  # one item: the script's run; a tile2triton run installs the alias first
        name = os.path.basename(path)
        cmd = [sys.executable, name] if mode == "native" else [sys.executable, "-c", _SCRIPT_BOOT, name]
    start = time.time()
    status = None
    try:
        proc = subprocess.Popen(cmd, cwd=os.path.dirname(path), env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)  # fmt: skip
        try:
            out, _ = proc.communicate(timeout=args.timeout)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            rc, status = None, "timeout"
    finally:
        wall = time.time() - start
    items, collect = [], []
    if script and status is None:
        lines = (out or "").splitlines()
        error = next((ln for ln in reversed(lines) if re.match(r"^\w*(Error|Exception)\b", ln.strip())), "")
        outcome = "passed" if rc == 0 else "failed"
        items.append({"kind": "item", "nodeid": f"{rel}::__main__", "outcome": outcome,
                      "msg": _short(error or (lines[-1] if lines else f"exit {rc}")) if rc else "", "duration": wall})  # fmt: skip
        rc = 0 if rc == 0 else 1
    with open(record) as f:
        for line in f:
            rec = json.loads(line)
            (items if rec["kind"] == "item" else collect).append(rec)
    os.unlink(record)
    counts = Counter(r["outcome"] for r in items)
    if status is None:
        if collect:
            status = "collection error"
        elif rc not in (0, 5) and not items:
            status = "startup error"  # pytest stopped before collecting (e.g. the plugin's import failed)
        elif rc == 0:
            status = "passed"
        elif rc == 5 and not counts.get("failed") and not counts.get("error"):
            status = "skipped" if counts.get("skipped") else "no tests"
        elif rc in (1, 2, 3, 4, 5):
            status = "failed"
        else:
            status = f"crashed (rc {rc})"
    tail = "\n".join((out or "").splitlines()[-15:])
    return {"file": rel, "status": status, "rc": rc, "wall_s": round(wall, 1), "counts": dict(counts),
            "collect_errors": collect, "items": items, "tail": tail if status not in ("passed",) else ""}  # fmt: skip


def _report(res: dict, mode: str, modes: list, verbose: bool) -> None:
    tag = f"[{mode}] ".ljust(9) if len(modes) > 1 else ""
    print(f"{tag}{res['status']:<17} {res['file']}  [{_fmt_counts(res['counts'])}] {res['wall_s']} s", flush=True)
    for rec in res["collect_errors"]:
        print(f"    collection error: {rec['msg']}", flush=True)
    for rec in res["items"]:
        if verbose or rec["outcome"] != "passed":
            name = rec["nodeid"].split("::", 1)[-1]
            print(f"    {rec['outcome']:<8} {name}: {rec['msg'][:200]}", flush=True)
    if res["status"] in ("timeout", "startup error") or res["status"].startswith("crashed"):
        print("    " + res["tail"].replace("\n", "\n    ")[-1200:], flush=True)


def _fmt_counts(c: dict) -> str:
    return " ".join(f"{k}={c[k]}" for k in ("passed", "failed", "error", "skipped") if c.get(k))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("checkout", help="a TileLang source checkout (its examples/ and testing/python/)")
    p.add_argument("--only", action="append", default=[], metavar="GLOB",
                   help="run only files whose path (relative to the checkout) matches GLOB or contains it")  # fmt: skip
    p.add_argument("--sets", default="examples,language,kernel",
                   help="comma list of: " + ", ".join([*SETS, *GROUPS]))  # fmt: skip
    p.add_argument("--timeout", type=float, default=300, help="seconds per file (default 300)")
    p.add_argument("--json", metavar="OUT", help="write every file's and item's result to OUT")
    p.add_argument("--native", action="store_true", help="run the installed TileLang instead (the baseline)")
    p.add_argument("--both", action="store_true", help="run each file on TileLang, then on tile2triton, and compare")
    p.add_argument("--cuda-as-cpu", action="store_true", help="map device='cuda' / .cuda() to the CPU")
    p.add_argument("--repo", metavar="DIR", help="the tile2triton tree to import (default: this checkout)")
    p.add_argument("--jobs", type=int, default=1, help="files run at once (default 1)")
    p.add_argument("--gpus", type=int, default=0, help="with --jobs: spread the files over this many GPUs")
    p.add_argument("-x", "--exitfirst", action="store_true", help="stop each file at its first failure")
    p.add_argument("-v", "--verbose", action="store_true", help="print every item, not only the non-passing")
    args = p.parse_args(argv)
    root = os.path.abspath(args.checkout)
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    sets = [x for s in sets for x in GROUPS.get(s, (s,))]
    bad = [s for s in sets if s not in SETS]
    if bad or not os.path.isdir(os.path.join(root, "examples")):
        p.error(f"unknown set(s) {bad}" if bad else f"{root} is not a TileLang checkout (no examples/)")
    files = discover(root, sets, args.only)
    modes = ["native", "t2t"] if args.both else ["native"] if args.native else ["t2t"]
    names = {"native": "TileLang (native)", "t2t": f"tile2triton ({os.path.abspath(args.repo or REPO)})"}
    print(f"{len(files)} files from {root}, implementation(s): {', '.join(names[m] for m in modes)}, "
          f"timeout {args.timeout:g} s/file", flush=True)  # fmt: skip
    results: dict = {m: [None] * len(files) for m in modes}
    runs = [(k, rel, mode) for k, rel in enumerate(files) for mode in modes]

    def run(job):
        n, (k, rel, mode) = job
        gpu = n % args.gpus if args.gpus else None
        return k, mode, run_file(root, rel, args, mode, gpu)

    with ThreadPoolExecutor(max(1, args.jobs)) as pool:  # each file is its own subprocess
        for done in as_completed([pool.submit(run, job) for job in enumerate(runs)]):
            k, mode, res = done.result()
            results[mode][k] = res
            _report(res, mode, modes, args.verbose)
    print()
    for mode in modes:
        file_counts = Counter(r["status"] for r in results[mode])
        item_counts = Counter()
        for r in results[mode]:
            item_counts.update(r["counts"])
        tag = f"{names[mode]} " if len(modes) > 1 else ""
        print(f"{tag}files: " + ", ".join(f"{k} {v}" for k, v in sorted(file_counts.items()))
              + f" (of {len(results[mode])})")  # fmt: skip
        print(f"{tag}items: " + ", ".join(f"{k} {v}" for k, v in sorted(item_counts.items())))
    folders = sorted({folder_of(r["file"]) for r in results[modes[0]]})
    if len(folders) > 1:  # items per folder, for each implementation
        print()
        for folder in folders:
            line = []
            for mode in modes:
                c = Counter()
                for r in results[mode]:
                    if folder_of(r["file"]) == folder:
                        c.update(r["counts"])
                line.append(f"{mode}: {_fmt_counts(c) or 'no items'}")
            print(f"  {folder:<34} " + "; ".join(line))
    if len(modes) > 1:
        passed = {m: {(r["file"], i["nodeid"]) for r in results[m] for i in r["items"] if i["outcome"] == "passed"}
                  for m in modes}  # fmt: skip
        missing = sorted(passed["native"] - passed["t2t"])
        print(f"\n{len(missing)} item(s) pass on TileLang but not on tile2triton:")
        for file, nodeid in missing:
            print(f"    {file}::{nodeid.split('::', 1)[-1]}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"checkout": root, "timeout": args.timeout, "cuda_as_cpu": args.cuda_as_cpu,
                       "implementations": {m: {"name": names[m], "files": results[m]} for m in modes},
                       "files": results[modes[-1]]}, f, indent=1)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
