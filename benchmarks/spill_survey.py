"""Registers, spills and shared memory of every kernel TileLang's regression suite launches through
tile2triton, at the suite's shapes, compiled for sm_90 by the installed Triton: no GPU needed.

    PYTHONPATH=. python benchmarks/spill_survey.py TILELANG_EXAMPLES [FILE ...] [--jobs N] [--lines] [--variants N]

FILE: regression files relative to TILELANG_EXAMPLES (default: every ``**/regression_*.py``).  ``--variants N``:
each case at its shape in variant set N (benchmarks/tilelang_regression_suite/variants.py), as
``tilelang_regression.py --variants N`` times it; a case without one is listed as such.  Each
file runs in a child process with CUDA faked as on an H200 (benchmarks/launch_cost.py's
``fake_cuda``: Triton compiles for sm_90 offline and launches nothing; ``torch.cuda.is_available``
true and the device target sm_90, so the launch choices, passes and shared-memory fit steps are
the GPU's; ``device="cuda"`` tensors made on the CPU), its ``regression_*`` functions called with
their timers reduced to one call.  Every kernel Triton compiles is listed in compile order, with
``ptxas -v`` of its PTX: a kernel compiled more than once went through the fit steps, and the last
of its rows is the one that runs.  A case whose Python needs more of CUDA than is faked is listed
with its error.  Run it with Triton 3.6 (the GPU machine's) for the GPU's code: a venv with
triton==3.6.0 and torch's CPU build, ``PYTHONPATH=. VENV/bin/python benchmarks/spill_survey.py ...``.

Spills inside a hot loop cost time (session 25: the sparse MLA backward's 83 local loads an
iteration).  ``--lines`` places them: for each kernel that spills, its local loads/stores (``LDL`` /
``STL`` in the SASS of ``ptxas -lineinfo``, read by ``nvdisasm -g``) counted per line of the generated
Triton source (the module of that kernel, in the tile2triton cache the run used: its folder is printed).
"""

from __future__ import annotations

import argparse
import glob
import importlib
import json
import os
import re
import subprocess
import sys
import tempfile
import types
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.dirname(HERE)


def _fake_h200():
    """The context managers that fake CUDA as one H200 (the timers reduce to one call from now on)."""
    sys.path.insert(0, HERE)
    from hostcost_probe import cpu_for_cuda
    from launch_cost import fake_cuda

    import tile2triton.profiler as profiler

    def once(fn=None, *args, **kwargs):
        if callable(fn):
            fn()
        return 1.0

    def profiler_once(self, func=None, *args, **kwargs):
        self.run_once(func)
        return 1.0

    import triton.testing

    profiler.do_bench = once
    profiler.Profiler.do_bench = profiler_once
    triton.testing.do_bench = once
    return fake_cuda(h200=True), cpu_for_cuda()


def child(examples: str, rel: str, cache: str, variant_set: int = 0) -> None:
    """Run one regression file's cases; print one JSON line per case: its status and the Triton
    cache files (metadata JSON) its calls compiled, in order.  ``variant_set``: each case at its shape
    in that set of benchmarks/tilelang_regression_suite/variants.py (a case without one is skipped)."""
    from tile2triton.cli import install_tilelang_alias

    install_tilelang_alias()
    cuda, factories = _fake_h200()
    variant = None
    if variant_set:
        from tilelang_regression_suite.variants import variant_of

        import tile2triton.testing

        process_func = tile2triton.testing.process_func

        def at_variant_shape(func, name=None, /, **kwargs):
            return process_func(lambda **_: variant.call(func, kwargs), name, **kwargs)

        tile2triton.testing.process_func = at_variant_shape
    folder = os.path.join(examples, os.path.dirname(rel))
    sys.path.insert(0, folder)
    os.chdir(folder)
    sys.argv = [os.path.basename(rel)]  # examples that parse their arguments when imported see none
    try:
        import einops  # noqa: F401 - some examples import it for their references only
    except ImportError:
        sys.modules["einops"] = types.SimpleNamespace(rearrange=None, einsum=None)
    module = importlib.import_module(os.path.basename(rel)[:-3])
    metas = os.path.join(cache, "triton", "*", "*.json")
    with cuda, factories:
        for name in sorted(n for n in dir(module) if n.startswith("regression_")):
            if variant_set:
                variant = variant_of(name, variant_set)
                if not variant.runs:
                    print("CASE " + json.dumps({"case": name, "status": variant.describe(), "metas": []}), flush=True)
                    continue
            seen = set(glob.glob(metas))
            try:
                getattr(module, name)()
                status = "ok"
            except Exception as exc:  # noqa: BLE001 - reported per case
                status = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
            new = sorted(set(glob.glob(metas)) - seen, key=os.path.getmtime)
            print("CASE " + json.dumps({"case": name, "status": status, "metas": new}), flush=True)


def _ptxas() -> str:
    from triton.backends.nvidia.compiler import get_ptxas

    found = get_ptxas(90)
    return getattr(found, "path", found)


def _usage(meta_path: str, ptxas: str, lines: bool) -> dict | None:
    meta = json.load(open(meta_path))
    ptx = glob.glob(os.path.join(os.path.dirname(meta_path), "*.ptx"))
    if "name" not in meta or not ptx:
        return None  # a group file, or a kernel that never reached PTX
    out = subprocess.run([ptxas, "-arch=sm_90a", "-v", ptx[0], "-o", os.devnull], capture_output=True, text=True)
    regs = re.search(r"Used (\d+) registers", out.stderr)
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", out.stderr)
    usage = {
        "kernel": meta["name"],
        "warps": meta.get("num_warps"),
        "shared": meta.get("shared"),
        "regs": int(regs.group(1)) if regs else None,
        "spills": f"{spills.group(1)}/{spills.group(2)}" if spills else "?",
        # ptxas C7515: wgmma.mma_async serialized (a non-wgmma instruction defines an accumulator register
        # inside a wgmma pipeline stage): each wgmma then waits for the one before
        "serialized": "C7515" in out.stderr,
    }
    if lines and spills and spills.group(1) != "0":
        usage["lines"] = _spills_by_line(ptx[0], ptxas)
    return usage


def _spills_by_line(ptx: str, ptxas: str) -> str:
    """``L<line>: loads/stores`` of local memory per line of the generated source, in line order."""
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "k.cubin")
        subprocess.run([ptxas, "-arch=sm_90a", "-lineinfo", ptx, "-o", cubin], capture_output=True, check=True)
        nvdisasm = os.path.join(os.path.dirname(ptxas), "nvdisasm")
        sass = subprocess.run([nvdisasm, "-c", "-g", cubin], capture_output=True, text=True).stdout
    per: dict = {}
    line = 0
    for text in sass.splitlines():
        found = re.search(r"## File .*line (\d+)", text)
        if found:
            line = int(found.group(1))
        for k, op in enumerate(("LDL", "STL")):
            if re.search(rf"\b{op}\b", text):
                per.setdefault(line, [0, 0])[k] += 1
    return " ".join(f"L{n}: {ld}/{st}" for n, (ld, st) in sorted(per.items()))


def survey(examples: str, rel: str, lines: bool = False, variant_set: int = 0) -> list:
    cache = tempfile.mkdtemp(prefix="spill_survey_")
    env = dict(
        os.environ, TRITON_CACHE_DIR=os.path.join(cache, "triton"), TILE2TRITON_CACHE_DIR=os.path.join(cache, "t2t")
    )
    env["PYTHONPATH"] = os.pathsep.join(x for x in (PROJECT, env.get("PYTHONPATH", "")) if x)
    cmd = [sys.executable, os.path.abspath(__file__), examples, rel, "--child", cache, "--variants", str(variant_set)]
    try:
        run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        return [{"case": rel, "status": "timeout (900 s)", "metas": []}]
    cases = [json.loads(line[5:]) for line in run.stdout.splitlines() if line.startswith("CASE ")]
    if not cases:
        return [{"case": rel, "status": f"rc={run.returncode}: {(run.stderr or run.stdout)[-200:]!r}", "metas": []}]
    ptxas = _ptxas()
    for case in cases:
        case["kernels"] = [u for u in (_usage(m, ptxas, lines) for m in case.pop("metas")) if u]
        case["sources"] = os.path.join(cache, "t2t")
    return cases


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("examples")
    p.add_argument("files", nargs="*")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--lines", action="store_true", help="local loads/stores per generated source line")
    p.add_argument("--variants", type=int, default=0, help="the cases at their shapes of this variant set (1 or 2)")
    p.add_argument("--child", default="", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    examples = os.path.abspath(a.examples)
    if a.child:
        child(examples, a.files[0], a.child, a.variants)
        return 0
    files = a.files or sorted(
        os.path.relpath(f, examples) for f in glob.glob(f"{examples}/**/regression_*.py", recursive=True)
    )
    import triton

    print(
        f"# kernels of TileLang's regression suite through tile2triton, sm_90, Triton {triton.__version__} (CUDA faked)"
    )
    print("| case | file | kernel | warps | shared bytes | registers | spill bytes (stores/loads) | wgmma serialized |")
    print("|---|---|---|---|---|---|---|---|")
    with ThreadPoolExecutor(a.jobs) as pool:
        for rel, cases in zip(files, pool.map(lambda f: survey(examples, f, a.lines, a.variants), files)):
            for case in cases:
                name = case["case"].removeprefix("regression_")
                if case["status"] != "ok" and not case.get("kernels"):
                    print(f"| `{name}` | {rel} | {case['status']} | | | | | |")
                for k in case.get("kernels", []):
                    row = (
                        k["kernel"],
                        k["warps"],
                        k["shared"],
                        k["regs"],
                        k["spills"],
                        "yes" if k["serialized"] else "",
                    )
                    print(f"| `{name}` | {rel} | " + " | ".join(str(x) for x in row) + " |")
                    if k.get("lines"):
                        where = f"{k['kernel']} in {case['sources']}"
                        print(
                            f"|   | local loads/stores by generated source line ({where}): {k['lines']} | | | | | | |"
                        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
