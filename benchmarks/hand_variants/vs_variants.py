"""GPU probe (issue 23, session 18): hand edits of the generated vertical-slash attention kernel.

``vertical_slash_s17.py`` is what main generated for MInference's ``vs_sparse_flashattn_ws``
(examples/minference) before session 18, at the suite's shape (seq 16384, head dim 64, vertical 1000,
slash 200).  The inputs are the example's own (``run_regression_perf`` is run with the kernel
replaced by a recorder).  Variants (text edits):

- ``prefetch``: the slash loop's ``block_offset[bi]`` loaded one iteration ahead into a register the
  loop carries (what passes/prefetch_indices.py now generates);
- ``nokmask``: the K/V tile loads without their row-bounds masks;
- launch stages and warps.

Outputs are compared with the first variant's.  ``ONLY=name`` runs that variant twice and exits
(for Nsight Compute: ncu_sources.sh).  Needs TileLang's examples in .tlx (.tl/setup.sh).

    PYTHONPATH=. python3 benchmarks/hand_variants/vs_variants.py
"""

import os
import sys

import torch
import triton
from variant_tools import first_calls, kernel_from_source

from tile2triton.cli import install_tilelang_alias

install_tilelang_alias()
sys.path.insert(0, ".tlx/examples/minference")
import example_vertical_slash_sparse_attn as example  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BASE = open(os.path.join(HERE, "vertical_slash_s17.py")).read()
SLASH_LOOP = "    for bi in range(block_count):\n"
OFFSET = "        k = tl.where(bi < 200, tl.load(BlockOffset + offs_5, mask=mask_2, other=0), 0)\n"
OFFSET_AGAIN = "        k_1 = tl.where(bi < 200, tl.load(BlockOffset + offs_8, mask=mask_5, other=0), 0)\n"


def captured_inputs():
    captured = {}

    def recorder(*args):
        captured["args"] = args

    example._tl_vs_sparse_flashattn = lambda *a: recorder
    example.do_bench = lambda f, **kw: f()
    example.run_regression_perf()
    return captured["args"]


def variant(name: str):
    src = BASE
    if "prefetch" in name:
        first = (
            "    k_next = tl.load(BlockOffset + bz * 51200 + by * 51200 + bx * 200, mask=block_count > 0, other=0)\n"
        )
        nxt = "        k = k_next\n        k_next = tl.load(BlockOffset + offs_5 + 1, mask=bi + 1 < tl.minimum(block_count, 200), other=0)\n"
        src = (
            src.replace(SLASH_LOOP, first + SLASH_LOOP).replace(OFFSET, nxt).replace(OFFSET_AGAIN, "        k_1 = k\n")
        )
    if "nokmask" in name:
        src = src.replace("tl.load(K + offs_6, mask=mask_3, other=0)", "tl.load(K + offs_6)")
        src = src.replace("tl.load(V + offs_7, mask=mask_4, other=0)", "tl.load(V + offs_7)")
    return kernel_from_source(src, f"vs_variant_{name}", "vs_sparse_flashattn_ws_kernel")


def main() -> None:
    q, k, v, block_count, block_offset, column_count, column_index = captured_inputs()
    print(f"triton {triton.__version__} {torch.cuda.get_device_name()}")
    print(
        f"slash blocks a row {block_count.float().mean().item():.1f}, columns {column_count.float().mean().item():.1f}"
    )
    only = os.environ.get("ONLY")
    runs = [(only, 3, 4)] if only else [
        ("base", 3, 4), ("base", 2, 4), ("base", 4, 4), ("base", 3, 8),
        ("prefetch", 3, 4), ("prefetch", 4, 4), ("prefetch_nokmask", 3, 4), ("nokmask", 3, 4),
    ]  # fmt: skip
    ref = None
    for name, stages, warps in runs:
        fn = variant(name)
        out = torch.full_like(q, float("nan"))

        def run(fn=fn, out=out, stages=stages, warps=warps):
            grid = (q.shape[2] // 64, q.shape[1], q.shape[0])
            fn[grid](
                q, k, v, out, block_count, block_offset, column_count, column_index, num_warps=warps, num_stages=stages
            )

        if first_calls(run, only, name):
            return
        ref = out.clone() if ref is None else ref
        err = (out.float() - ref.float()).abs().max().item()
        ms = triton.testing.do_bench(run, warmup=25, rep=200)
        print(f"{name:<18} stages={stages} warps={warps} {ms * 1000:8.1f} us  max diff vs base {err:.2e}", flush=True)


if __name__ == "__main__":
    main()
