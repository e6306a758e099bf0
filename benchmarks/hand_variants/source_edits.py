"""One case of a regression file (TileLang's or benchmarks/beyond_suite's) through tile2triton, its generated
kernel edited as text before Triton compiles it: what a change of the generated code would gain, measured
before the code generator is taught it.  Each variant runs in a child process (the case's own ``do_bench``,
a median in ms); its edits apply to the kernels whose generated file name starts with STEM (a STEM ending
in ``$``: the kernel of exactly that name, e.g. ``flash_bwd$`` leaves ``flash_bwd_prep`` alone).

    TILELANG_EXAMPLES=CHECKOUT/examples python3 benchmarks/hand_variants/source_edits.py FILE run_CASE STEM EDITS.json

run_CASE may name a TileLang case at a variant set's shape, ``regression_CASE@SET`` (benchmarks/env_variants.py).
EDITS.json: {"variant name": [[regex, replacement], ...], ...}; the variant "as generated" ([]) runs first.
A regex that matches nothing fails its variant.  An edit ["@launch", {"maxnreg": 32}] instead adds Triton
launch options to every launch of the case (``JITFunction.run``'s keywords: ``maxnreg``, ``num_warps``).  Session 42's first use: rms_norm_splitk's store loop
(``for k_1 in range(16)``, each load waiting behind the previous iteration's store in SASS, as Triton cannot
know that A and B do not overlap) pipelined by ``tl.range(..., num_stages=n)``, whose prefetch assumes they
do not, as TileLang's ``__restrict__`` does.
"""

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import env_variants  # noqa: E402


def child(path: str, case: str, stem: str, edits: list) -> None:
    import torch

    from tile2triton.runtime import cache

    if not torch.cuda.is_available():  # a try on a machine without a GPU: the interpreter
        from tile2triton.cuda_as_cpu import map_cuda_to_cpu

        map_cuda_to_cpu()
    launch_options = {k: v for old, new in edits if old == "@launch" for k, v in new.items()}
    edits = [e for e in edits if e[0] != "@launch"]
    if launch_options:
        from triton.runtime.jit import JITFunction

        run = JITFunction.run

        def run_with_options(self, *args, **kwargs):
            return run(self, *args, **{**kwargs, **launch_options})

        JITFunction.run = run_with_options
    original = cache.source_path

    def edited(source: str, name: str):
        if (name == stem[:-1]) if stem.endswith("$") else name.startswith(stem):
            for old, new in edits:
                source, n = re.subn(old, new, source)
                if not n:
                    raise SystemExit(f"no match for {old!r} in {name}")
        return original(source, name)

    cache.source_path = edited
    if torch.cuda.is_available():  # an edit may build a tensor descriptor in the kernel: Triton's workspace
        from tile2triton.runtime.target import ensure_allocator

        ensure_allocator()
    env_variants.child(path, case)


def main() -> None:
    if sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4], json.loads(sys.argv[5]))
        return
    path, case, stem, edits_file = sys.argv[1:5]
    with open(edits_file) as f:
        variants = {"as generated": [], **json.load(f)}
    env = dict(os.environ, TILE2TRITON_DISABLE_CACHE="1")
    for name, edits in variants.items():
        command = [sys.executable, __file__, "--child", path, case, stem, json.dumps(edits)]
        env_variants.report(command, env, case, name, width=40)


if __name__ == "__main__":
    main()
