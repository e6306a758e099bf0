"""One case of a regression file (TileLang's or benchmarks/beyond_suite's), through tile2triton only, under
several settings of tile2triton's environment variables: one child process each, the case's own
``do_bench`` (tile2triton.profiler's: a median in ms).  For a switch's effect on one kernel, beside
benchmarks/tilelang_regression.py, which times both implementations under one setting.

    TILELANG_EXAMPLES=CHECKOUT/examples python3 benchmarks/env_variants.py FILE run_CASE \\
        "" "TILE2TRITON_ON_CHIP_SCRATCH=on" "TILE2TRITON_HELD_LOCALS=0,TILE2TRITON_ON_CHIP_SCRATCH=on"

Each setting is a comma-separated list of NAME=VALUE ("" for the defaults).  Prints one line a setting.
A TileLang case written ``regression_CASE@SET`` runs at its shape in the variant set SET
(tilelang_regression_suite/variants.py, as ``tilelang_regression.py --variants SET`` runs it).
"""

import importlib.util
import os
import subprocess
import sys
import time


def child(path: str, case: str) -> None:
    from tile2triton.cli import install_tilelang_alias

    install_tilelang_alias()
    import tile2triton.testing

    # TileLang's own regression_* cases hand their latency to tilelang.testing.process_func and return
    # nothing: keep the last latency it was given
    latencies = []
    process_func = tile2triton.testing.process_func
    case, _, variant_set = case.partition("@")
    variant = None
    if variant_set:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from tilelang_regression_suite.variants import variant_of

        variant = variant_of(case, int(variant_set))
        if not variant.runs:
            raise SystemExit(f"{case} has no shape in variant set {variant_set}: {variant.why}")

    def recording(func, name=None, /, **kwargs):
        latencies.append(float(variant.call(func, kwargs) if variant else func(**kwargs)))
        return process_func(lambda **_: latencies[-1], name, **kwargs)

    tile2triton.testing.process_func = recording
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))  # a regression file's sibling examples
    spec = importlib.util.spec_from_file_location("case", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    t0 = time.time()
    ms = getattr(mod, case)()
    if ms is None and latencies:
        ms = latencies[-1]
    print(f"RESULT {ms:.4f} {time.time() - t0:.1f}")


def report(command: list, env: dict, case: str, label: str, width: int = 60) -> None:
    """Run one child (``command``) and print its line: the case's median, or why it failed."""
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT")]
    if lines:
        _, ms, seconds = lines[-1].split()
        print(f"{case:32s} {label:{width}s} {float(ms):9.4f} ms  (call {seconds} s with compiles)")
    else:
        print(f"{case:32s} {label:{width}s} FAILED: {(proc.stderr or proc.stdout)[-300:]!r}")


def main() -> None:
    if sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
        return
    path, case, settings = sys.argv[1], sys.argv[2], sys.argv[3:] or [""]
    for setting in settings:
        env = dict(os.environ)
        env.update(kv.split("=", 1) for kv in setting.split(",") if kv)
        report([sys.executable, __file__, "--child", path, case], env, case, setting or "defaults")


if __name__ == "__main__":
    main()
