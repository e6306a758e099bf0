"""GPU probe (issue 23, short attention loops): is an index-set split of a short causal or sliding-window loop
repaid?  ``passes/split.py`` splits a loop at a mask (the causal diagonal, the window's edge) into two loops,
each a pipeline fill of its own; ``TILE2TRITON_SPLIT_MIN_TRIPS`` (default 3) leaves loops of fewer iterations,
known or bounded when compiling, whole.  TileLang's attention-sink forward at the suite variant's shape
(at most 5 tiles of 128 keys) is split into a loop of up to 4 iterations and one of 1.  With its window of 128
keys every block runs 2 tiles, but the bounds' intervals allowed more, and the default split that loop into two
of 1 (session 22's run of this probe); since ``Ranges.most`` counts it block by block, the default keeps it whole
too, and the two runs differ only where the loop still splits.

TileLang's example (attention_sink/example_mha_sink_fwd_bhsd.py, its 128 x 128 tile, 256 threads, 2 stages,
fast math) through tile2triton, with the switch at its default and at 1000 (no split), one child process per
value; for each shape and window: whether the generated kernel was split, the event time
(``triton.testing.do_bench``, warmup 25, rep 200, median, L2 flushed), the kernel time (CUPTI, the suite's
``kernel_ms``) and the max abs error against the example's float32 reference.

    PYTHONPATH=. python3 benchmarks/split_probe.py EXAMPLES [--three]   (TileLang's examples/ folder)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# (batch, heads, seq_q, seq_kv, dim), window: the suite variant's shape with and without the suite's window of
# 128 keys (at most 5 tiles, split 4 + 1; at most 2 tiles, split 1 + 1), then the window over longer sequences
# (every program 2 tiles; without a window those loops take the Gluon rows route, which does not split)
CASES = [
    ((2, 24, 384, 640, 128), None),
    ((2, 24, 384, 640, 128), 128),
    ((2, 16, 1024, 1024, 128), 128),
    ((1, 16, 4096, 4096, 128), 128),
]
# --three (session 34): loops of at most 3 tiles, which the default (3) splits 2 + 1: a window of 256 keys (the
# regression suite's second variant set: head dim 64, 40 heads, 1024 keys) and causal loops over 384 keys
CASES_THREE = [
    ((1, 40, 1024, 1024, 64), 256),
    ((2, 16, 1024, 1024, 128), 256),
    ((2, 24, 384, 384, 128), None),
    ((1, 32, 384, 384, 64), None),
]
SPLITS = ["3", "1000"]


def child(examples: str) -> None:
    import torch
    import triton.testing

    from tile2triton.cli import install_tilelang_alias

    install_tilelang_alias()
    sys.path.insert(0, os.path.join(examples, "attention_sink"))
    sys.path.insert(0, os.path.join(HERE, "tilelang_regression_suite"))
    import example_mha_sink_fwd_bhsd as example
    from child import kernel_ms

    for shape, window in CASES_THREE if os.environ.get("SPLIT_PROBE_THREE") else CASES:
        kernel = example.flashattn(*shape, window, block_M=128, block_N=128, num_stages=2, threads=256)
        q, k, v, sinks = example.gen_inputs(*shape[:2], shape[2], shape[3], shape[4], dtype=torch.float16)
        out = kernel(q, k, v, sinks)
        ref = example.ref_program(q, k, v, sinks, window, dtype=torch.float16)
        err = float((out.float() - ref.float()).abs().max())
        split = "_split" in kernel.get_kernel_source()
        event = triton.testing.do_bench(lambda: kernel(q, k, v, sinks), warmup=25, rep=200, return_mode="median")
        device = kernel_ms(lambda: kernel(q, k, v, sinks))
        row = dict(shape=shape, window=window, split=split, event_us=event * 1e3, kernel_us=device * 1e3, err=err)
        print("ROW " + json.dumps(row), flush=True)


def main() -> int:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2])
        return 0
    three = "--three" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--three"]
    examples = os.path.abspath(args[0] if args else "/tmp/tl/examples")
    rows = {}
    for value in SPLITS:
        env = dict(os.environ, TILE2TRITON_SPLIT_MIN_TRIPS=value, SPLIT_PROBE_THREE="1" if three else "")
        r = subprocess.run([sys.executable, __file__, "--child", examples], env=env, capture_output=True, text=True)
        if r.returncode:
            print(f"SPLIT_MIN_TRIPS={value} failed:\n{(r.stdout + r.stderr)[-2000:]}")
        for line in r.stdout.splitlines():
            if line.startswith("ROW "):
                row = json.loads(line[4:])
                rows[(tuple(row["shape"]), row["window"], value)] = row
    print("| batch, heads, seq_q, seq_kv, dim | window | SPLIT_MIN_TRIPS | split | event us | kernel us | max err |")
    print("|---|---|---|---|---|---|---|")
    for (shape, window, value), row in sorted(rows.items(), key=lambda kv: (kv[0][0], str(kv[0][1]), kv[0][2])):
        print(f"| {', '.join(map(str, shape))} | {window} | {value} | {row['split']} | {row['event_us']:.2f} | "
              f"{row['kernel_us']:.2f} | {row['err']:.1e} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
