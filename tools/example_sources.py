"""The sm_90 Triton source of every kernel TileLang's examples and the beyond-suite cases build, offline: both
small-size drivers (tools/tilelang_examples_small.py, benchmarks/beyond_suite/check_small.py) run on the CPU with
tools/gpu_sources_plugin.py loaded in each child, which writes each kernel's GPU source (the code's default
lowering options, with and without tensor descriptors) into OUT.  For "which kernels does this change touch":
run it before and after, then diff the two folders' file names (a source's name carries its hash).

    python3 tools/example_sources.py TILELANG_CHECKOUT OUT [--jobs 2] [--only SUBSTR]

The beyond-suite cases that need a package the machine lacks (``einops`` for dsa_sparse_finetune) are reported
by check_small.py and skipped.  About 15 minutes on two cores.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# loaded by every child Python through PYTHONPATH: the plugin patches emit.emit_module to dump GPU sources
SITECUSTOMIZE = f"""import sys
sys.path.insert(0, {REPO!r})
import tools.gpu_sources_plugin  # noqa: F401
"""


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkout", help="a TileLang checkout (its examples/ folder is read)")
    p.add_argument("out", help="folder for the sources (one file a distinct kernel source)")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--only", default="", help="only examples and beyond-suite files whose path contains this")
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    hook = tempfile.mkdtemp()
    with open(os.path.join(hook, "sitecustomize.py"), "w") as f:
        f.write(SITECUSTOMIZE)
    env = dict(os.environ, T2T_GPU_DUMP=os.path.abspath(a.out), TILELANG_EXAMPLES=os.path.join(a.checkout, "examples"))
    env["PYTHONPATH"] = os.pathsep.join([hook, REPO, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    only = ["--only", a.only] if a.only else []
    runs = [
        [sys.executable, "tools/tilelang_examples_small.py", a.checkout, "--jobs", str(a.jobs), *only],
        [sys.executable, "benchmarks/beyond_suite/check_small.py", *only[1:]],
    ]
    failed = 0
    for cmd in runs:
        failed |= subprocess.run(cmd, cwd=REPO, env=env).returncode
    print(f"{len(os.listdir(a.out))} sources in {a.out}")
    return failed


if __name__ == "__main__":
    sys.exit(main())
