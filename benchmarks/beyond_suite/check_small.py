"""Every case of the regression files here, once, at its ``SMALL`` sizes, on the CPU through Triton's
interpreter and tile2triton: that each builds and runs what it means to (outputs are compared on the GPU, with
TileLang's, by the harness).  One child process a file.

    TILELANG_EXAMPLES=CHECKOUT/examples python3 benchmarks/beyond_suite/check_small.py [SUBSTR...]
"""

import glob
import importlib.util
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def _tensors(value):
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def _answer_as_an_h200(torch) -> None:
    """The examples' own questions about the card (is there one, its name, its properties: the amd examples pick
    their tiles from them) are answered as an H200's (tools/tilelang_examples_small.py's answers); tile2triton's
    own ``is_available`` still gets the truth (no CUDA here: it runs on the interpreter)."""
    from tools.tilelang_examples_small import answer_as_an_h200

    examples = os.path.realpath(os.environ["TILELANG_EXAMPLES"])
    truth = torch.cuda.is_available

    def is_available() -> bool:
        caller = os.path.realpath(sys._getframe(1).f_globals.get("__file__") or "")
        return True if caller.startswith(examples + os.sep) else truth()

    h200 = answer_as_an_h200(torch)
    torch.cuda.is_available = is_available
    torch.cuda.get_device_name = lambda *a, **k: h200.name


def child(path: str) -> int:
    from tile2triton.cli import install_tilelang_alias
    from tile2triton.cuda_as_cpu import map_cuda_to_cpu

    install_tilelang_alias()
    map_cuda_to_cpu()
    import tilelang
    import torch

    _answer_as_an_h200(torch)
    results = []
    tilelang.profiler.do_bench = lambda fn, *a, **k: results.append(fn()) or 1.0
    spec = importlib.util.spec_from_file_location("beyond_case", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    failed = 0
    for name, sizes in mod.SMALL.items():
        torch.manual_seed(0)
        results.clear()
        try:
            getattr(mod, name)(**sizes)
            finite = all(bool(torch.isfinite(t.float()).all()) for t in _tensors(results[0]))
            print(f"ok   {os.path.basename(path)}::{name} {sizes}: {'finite' if finite else 'NOT FINITE'}", flush=True)
            failed += not finite
        except Exception as e:  # noqa: BLE001 - a line a case
            failed += 1
            print(f"FAIL {os.path.basename(path)}::{name} {sizes}: {type(e).__name__}: {str(e)[:400]}", flush=True)
    return failed


def main(argv) -> int:
    if argv[:1] == ["--child"]:
        return 1 if child(argv[1]) else 0
    files = sorted(glob.glob(os.path.join(HERE, "**", "regression_*.py"), recursive=True))
    files = [f for f in files if not argv or any(s in f for s in argv)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
    bad = 0
    for f in files:
        p = subprocess.run([sys.executable, __file__, "--child", f], env=env, cwd=os.path.dirname(f))
        bad += p.returncode != 0
    print(f"{len(files) - bad} of {len(files)} files ran clean")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
