"""One case of a regression file (TileLang's or benchmarks/beyond_suite's) through tile2triton, its generated
kernel edited as text before Triton compiles it: what a change of the generated code would gain, measured
before the code generator is taught it.  Each variant runs in a child process (the case's own ``do_bench``,
a median in ms); its edits apply to the kernels whose generated file name starts with STEM.

    TILELANG_EXAMPLES=CHECKOUT/examples python3 benchmarks/hand_variants/source_edits.py FILE run_CASE STEM EDITS.json

EDITS.json: {"variant name": [[regex, replacement], ...], ...}; the variant "as generated" ([]) runs first.
A regex that matches nothing fails its variant.  Session 42's first use: rms_norm_splitk's store loop
(``for k_1 in range(16)``, each load waiting behind the previous iteration's store in SASS, as Triton cannot
know that A and B do not overlap) pipelined by ``tl.range(..., num_stages=n)``, whose prefetch assumes they
do not, as TileLang's ``__restrict__`` does.
"""

import importlib.util
import json
import os
import re
import subprocess
import sys
import time


def child(path: str, case: str, stem: str, edits: list) -> None:
    from tile2triton.cli import install_tilelang_alias
    from tile2triton.runtime import cache

    install_tilelang_alias()
    import torch

    if not torch.cuda.is_available():  # a try on a machine without a GPU: the interpreter
        from tile2triton.cuda_as_cpu import map_cuda_to_cpu

        map_cuda_to_cpu()
    original = cache.source_path

    def edited(source: str, name: str):
        if name.startswith(stem):
            for old, new in edits:
                source, n = re.subn(old, new, source)
                if not n:
                    raise SystemExit(f"no match for {old!r} in {name}")
        return original(source, name)

    cache.source_path = edited
    spec = importlib.util.spec_from_file_location("case", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    t0 = time.time()
    ms = getattr(mod, case)()
    print(f"RESULT {ms:.4f} {time.time() - t0:.1f}")


def main() -> None:
    if sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4], json.loads(sys.argv[5]))
        return
    path, case, stem, edits_file = sys.argv[1:5]
    with open(edits_file) as f:
        variants = {"as generated": [], **json.load(f)}
    for name, edits in variants.items():
        proc = subprocess.run(
            [sys.executable, __file__, "--child", path, case, stem, json.dumps(edits)],
            env=dict(os.environ, TILE2TRITON_DISABLE_CACHE="1"),
            capture_output=True,
            text=True,
            timeout=600,
        )
        lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT")]
        if lines:
            _, ms, seconds = lines[-1].split()
            print(f"{case:28s} {name:40s} {float(ms):9.4f} ms  (call {seconds} s with compiles)")
        else:
            print(f"{case:28s} {name:40s} FAILED: {(proc.stderr or proc.stdout)[-300:]!r}")


if __name__ == "__main__":
    main()
