"""GPU probe (issue 23): TILE2TRITON_LICM_GUARD on and off, same machine, same process.

The guard (codegen/rules.keeps_invariants_in_loop) writes a loop with gemms as
``tl.range(..., disable_licm=True)`` on sm_90 where the kernel's accumulators pass the register
budget.  Cases: TileLang's sparse MLA backward as benchmarks/mlabwd_probe.py builds it (256 threads,
64 heads, 512 + 64 head dims) at the suite's shape and two others; outputs checked against a
float32 torch reference (max error relative to the reference's max), ``triton.testing.do_bench``
medians.

    PYTHONPATH=. python3 benchmarks/licm_probe.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
import triton  # noqa: E402
from mlabwd_probe import inputs, t2t_case  # noqa: E402


def main() -> None:
    t0 = time.time()
    print(f"triton {triton.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"{'size':<24} {'guard':<6} {'ms':>8} {'max rel err':>12}  note")
    for size in [(256, 512, 256), (512, 2048, 512), (384, 1024, 384), (200, 700, 192)]:
        x = inputs(*size)
        label = "S={} SKV={} k={}".format(*size)
        for guard in ("0", "1"):
            ms, e, note = t2t_case(*size, x, {"TILE2TRITON_LICM_GUARD": guard})
            print(f"{label:<24} {guard:<6} {ms:8.4f} {e:12.2e}  {note}", flush=True)
    print(f"total {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
