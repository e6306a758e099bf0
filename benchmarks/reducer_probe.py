"""GPU probe for ``TILE2TRITON_DEFER_REDUCERS`` (codegen/atomics._defer_reduction): TileLang's
``gemv_alloc_reducer`` (examples/gemv/example_gemv.py, the sixth kernel of the suite's example_gemv)
through tile2triton with the switch off and on, at the suite's 4096 x 4096 and other shapes.

A reducer's ``o_reducer[i] += a[i, j] * x[j]`` in ``T.Parallel(block_M, block_N)`` is a cross-thread
``tl.sum`` of the 128 x 128 tile every step of the loop when the switch is off; on, the terms are
added element-wise and summed once after the loop (as TileLang keeps a reducer's partial sums per
thread until ``T.finalize_reducer``).  Session 15's suite run timed the kernel at 183 us against
TileLang's 24 us (4096 x 4096, H200).  Each row: ``triton.testing.do_bench`` median in microseconds,
the output checked against a float64 torch reference of the float16 products.  From the repo root on
the GPU (< 60 s):

    PYTHONPATH=. python3 benchmarks/reducer_probe.py /path/to/tilelang/examples
"""

from __future__ import annotations

import os
import subprocess
import sys

import torch
import triton

from tile2triton.cli import install_tilelang_alias

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mhc_topk_cases import load  # noqa: E402 - a TileLang example as a module

EXAMPLES = sys.argv[1] if len(sys.argv) > 1 else "/tmp/tl/examples"
SWITCH = sys.argv[2] if len(sys.argv) > 2 else None  # a child: the rows of one setting
SHAPES = [(4096, 4096), (8192, 1024), (1000, 3000), (16384, 8192)]  # (M, N): the suite's first


def rows(switch: str) -> None:
    """The rows of one setting (a process each: a kernel's lowering is cached with the settings it
    first saw)."""
    os.environ["TILE2TRITON_DEFER_REDUCERS"] = switch
    install_tilelang_alias()
    example = load(os.path.join(EXAMPLES, "gemv", "example_gemv.py"), "example_gemv")
    for m, n in SHAPES:
        a = torch.randn(m, n, device="cuda").half()
        x = torch.randn(n, device="cuda").half()
        ref = (a.double() * x.double()).half().double().sum(1)
        # block sizes given, as the suite's run_regression_perf gives them: no autotuning
        kernel = example.gemv_alloc_reducer.compile(M=m, N=n, block_M=128, block_N=128)
        out = kernel(a, x)
        err = (out.double() - ref).abs().max().item()
        us = triton.testing.do_bench(lambda kernel=kernel: kernel(a, x), warmup=25, rep=200) * 1e3
        deferred = "o_reducer_terms" in kernel.get_kernel_source()
        print(f"{m:>6} x {n:<5} {switch:>6} {us:>8.1f} {err:>9.2e}  {deferred}", flush=True)


def main() -> None:
    if SWITCH is not None:
        rows(SWITCH)
        return
    print(f"{'M x N':>13} {'switch':>6} {'us':>8} {'max err':>9}  deferred in source", flush=True)
    for switch in ("0", "1"):
        subprocess.run([sys.executable, __file__, EXAMPLES, switch], check=False)
    print(f"({torch.cuda.get_device_name()}, triton {triton.__version__})")


if __name__ == "__main__":
    main()
