"""What ``TILE2TRITON_TUNE=search`` costs and finds, on the GPU: one row of vs_tilelang.py.

    PYTHONPATH=. python benchmarks/tuning_search.py [ROW ...]
    PYTHONPATH=. python benchmarks/tuning_search.py --fallback [ROW]   # a choice that cannot build

For each row (vs_tilelang.py's numbering), in this process with an empty tuning cache: the first
call (lower, compile every candidate, time each, keep the fastest), what it timed, and a second
kernel object of the same source, whose first call takes the choice from the disk cache.  The
output is checked against the row's torch reference.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def fallback(index: int) -> None:
    """A launch choice Triton cannot build (4 stages of 128x128 D128 tiles: too much shared memory)
    must fall back to the source's launch at the first call, with a correct result."""
    import torch
    import vs_tilelang as v

    from tile2triton.runtime import tuning
    from tile2triton.runtime.kernel import JITKernel

    row = v.rows(False)[index]
    inputs = row.inputs("cuda")
    kernel = v.compile_row(row, "t2t")
    kernel = JITKernel(kernel.prim_func, pass_configs=kernel.pass_configs, launch=tuning.LaunchChoice(8, 4))
    out = kernel(*inputs)
    torch.cuda.synchronize()
    print(
        f"fallback {row.name}: asked w8 s4, launched {kernel.launch_choice.label()}, "
        f"err {v.rel_err(out, row.ref(*inputs)):.1e}",
        flush=True,
    )


def main(argv: list[str]) -> int:
    if argv[:1] == ["--fallback"]:
        fallback(int(argv[1]) if len(argv) > 1 else 0)
        return 0
    os.environ["TILE2TRITON_TUNE"] = "search"
    os.environ.setdefault("TILE2TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="t2t_tune_"))
    import torch
    import vs_tilelang as v

    all_rows = v.rows(False)
    for index in [int(a) for a in argv] or [6]:
        row = all_rows[index]
        inputs = row.inputs("cuda")
        ref = row.ref(*inputs)
        for attempt in ("first", "cached"):
            kernel = v.compile_row(row, "t2t")
            if attempt == "cached":  # a new kernel object: its choice comes from the disk cache
                from tile2triton.runtime.kernel import JITKernel

                kernel = JITKernel(kernel.prim_func, pass_configs=kernel.pass_configs)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            out = kernel(*inputs)
            torch.cuda.synchronize()
            secs = time.perf_counter() - t0
            report = kernel.tuning
            runs = v.timed(lambda k=kernel: k(*inputs), False)
            ms = sorted(runs)[len(runs) // 2]
            print(
                f"{row.name} | {attempt} call {secs:.2f} s | chose {kernel.launch_choice.label()} "
                f"| {ms:.3f} ms | err {v.rel_err(out, ref):.1e} | search {report.seconds if report else 0:.2f} s "
                f"| from cache {report.from_cache if report else None} | timed {report.timings_ms if report else {}}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
