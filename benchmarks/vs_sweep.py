"""Vertical-slash sparse attention (TileLang's examples/minference) at several shapes, through real TileLang
and through tile2triton, each shape's kernel time as the example's own ``run_regression_perf`` measures it
(``do_bench(..., backend="cupti")``, ms).  Session 21 (issue 23): the rings' TMA stages and 2-D stage operands
were measured at the suite's shape and its variant's; this checks other lengths and index counts.  The
example's index preparation assumes batch 1 and one head.  On the GPU machine from the repo root, with .tl
carried and set up (benchmarks/tilelang_regression.py's docstring):

    python3 benchmarks/vs_sweep.py .tlx/examples /tmp/tlsite
"""

import json
import os
import subprocess
import sys

SHAPES = [  # (seq_len, vertical_size, slash_size)
    (4096, 1000, 200),
    (8192, 600, 120),
    (20480, 1000, 200),
    (32768, 1500, 300),
]

CHILD = r"""
import json, sys
if sys.argv[1] == "tile2triton":
    from tile2triton.cli import install_tilelang_alias
    install_tilelang_alias()
sys.path.insert(0, sys.argv[2])
import example_vertical_slash_sparse_attn as example
for seq, v, s in json.loads(sys.argv[3]):
    ms = example.run_regression_perf(seq_len=seq, vertical_size=v, slash_size=s)
    print("ROW", json.dumps([seq, v, s, float(ms)]), flush=True)
"""


def run(impl: str, examples: str, site: str) -> dict:
    env = dict(os.environ, TORCH_EXTENSIONS_DIR="/tmp/torch_ext")
    if impl == "tilelang":
        env["PYTHONPATH"] = site
    out = subprocess.run(
        [sys.executable, "-c", CHILD, impl, os.path.join(examples, "minference"), json.dumps(SHAPES)],
        env=env, capture_output=True, text=True, timeout=500,
    )  # fmt: skip
    rows = {}
    for line in out.stdout.splitlines():
        if line.startswith("ROW "):
            seq, v, s, ms = json.loads(line[4:])
            rows[(seq, v, s)] = ms
    if out.returncode:
        print(f"{impl}: exit {out.returncode}: {out.stderr[-600:]}")
    return rows


def main() -> None:
    examples, site = sys.argv[1], sys.argv[2]
    tl, t2t = run("tilelang", examples, site), run("tile2triton", examples, site)
    print("| seq_len | vertical | slash | TileLang ms | tile2triton ms | ratio |")
    print("|---|---|---|---|---|---|")
    for shape in SHAPES:
        a, b = tl.get(shape), t2t.get(shape)
        ratio = f"{a / b:.2f}×" if a and b else "-"
        print(f"| {shape[0]} | {shape[1]} | {shape[2]} | {a and round(a, 4)} | {b and round(b, 4)} | {ratio} |")


if __name__ == "__main__":
    main()
