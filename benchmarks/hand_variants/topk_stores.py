"""MoE-gate top-k (examples/topk/example_topk.py): what its per-step row stores cost.

Each step of the source's ``for k in T.serial(topk)`` stores a ``[blk_m]`` row result (``topk_gates[bx * blk_m + i,
k] = max_val[i]``). Triton's coalescing gives that store a one-element-a-thread layout, so each step converts the row
reduction's result through shared memory (two barriers a stored tensor, offline on sm_90); TileLang stores from lane
0 of each warp. Variants, each checked exactly against ``torch.topk`` (values and indices):

- ``tile2triton``: the example's own call through tile2triton (defaults);
- ``deferred stores``: the same generated source, the steps' results gathered into a ``[blk_m, topk]`` register tile
  (``tl.where(cols == k, ...)``) and stored once after the loop (no conversion in the loop);
- ``TileLang``: the example through real TileLang, in a child process (``--site``).

    PYTHONPATH=. python3 benchmarks/hand_variants/topk_stores.py TILELANG_EXAMPLES [--site TILELANG_SITE]

Times: ``triton.testing.do_bench`` medians in microseconds (L2 flushed), one line per shape: each call's host
launch included (tile2triton's launcher, Triton's for the edited kernel, TileLang's ``@autotune`` wrapper, which
costs it about 150-250 us a call), so only the two tile2triton columns compare, and only roughly. ``ok`` is exact
agreement with ``torch.topk``; a row with tied logits disagrees in every implementation (TileLang's source masks
all of a row's copies of the maximum at once), so ``WRONG`` there is the inputs', not a fault (session 47's run,
gpu_logs/2026-12-06_s47_h100/topk_stores.txt; the CPU interpreter agreed exactly at two untied shapes).
"""

import os
import re
import subprocess
import sys

SHAPES = [  # M, N (experts), topk, blk_m
    (16384, 128, 6, 64),
    (16384, 64, 8, 64),
    (8192, 256, 8, 64),
    (32768, 128, 2, 128),
    (4000, 160, 5, 32),
]


def deferred(src: str, topk: int) -> str:
    """The generated source with the loop's two row stores gathered into register tiles and stored after it."""
    pad = 1 << (topk - 1).bit_length()
    loop = re.search(r"\n(    )for (\w+) in range\((\d+)\):\n", src)
    k = loop.group(2)
    stores = re.findall(r"\n        tl\.store\((\w+) \+ (\w+), (\w+)\)", src)
    assert len(stores) == 2, stores
    head = f"\n    cols = tl.arange(0, {pad})[None, :]\n"
    for _ptr, _, val in stores:
        dtype = "tl.int32" if "idx" in val else "tl.float32"
        head += f"    {val}_all = tl.zeros([BLK, {pad}], {dtype})\n"
    src = src.replace(loop.group(0), head + loop.group(0)[1:], 1)
    for ptr, offs, val in stores:
        src = src.replace(
            f"tl.store({ptr} + {offs}, {val})", f"{val}_all = tl.where(cols == {k}, {val}[:, None], {val}_all)"
        )
    rows = re.search(r"i_\d+ = tl\.arange\(0, (\d+)\)\n", src).group(1)
    src = src.replace("BLK", rows)
    tail = f"    rows = tl.arange(0, {rows})[:, None]\n    offs_out = (bx * {rows} + rows) * {topk} + cols\n"
    tail += f"    keep = (cols < {topk}) & (bx * {rows} + rows < M_rows)\n"
    for ptr, _, val in stores:
        tail += f"    tl.store({ptr} + offs_out, {val}_all, mask=keep)\n"
    return src.rstrip("\n") + "\n" + tail


def tilelang_times(examples: str, site: str) -> dict:
    code = f"""
import sys, torch, triton
sys.path.insert(0, {os.path.join(examples, "topk")!r})
import example_topk
for M, N, topk, blk in {SHAPES!r}:
    x = torch.rand((M, N), device="cuda")
    g, i = example_topk.tl_topk(x, topk, blk_m=blk)
    ref = x.topk(topk, dim=1)
    ok = torch.equal(g, ref.values) and torch.equal(i.long(), ref.indices)
    us = triton.testing.do_bench(lambda: example_topk.tl_topk(x, topk, blk_m=blk), return_mode="median") * 1e3
    print("TL", M, N, topk, blk, round(us, 2), ok)
"""
    env = dict(os.environ, PYTHONPATH=site)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=400)
    times = {}
    for line in out.stdout.splitlines():
        if line.startswith("TL "):
            _, M, N, topk, blk, us, ok = line.split()
            times[(int(M), int(N), int(topk), int(blk))] = f"{us} ({'ok' if ok == 'True' else 'WRONG'})"
    if not times:
        print(out.stderr[-2000:])
    return times


def main() -> None:
    examples = sys.argv[1]
    site = sys.argv[sys.argv.index("--site") + 1] if "--site" in sys.argv else None
    tl_times = tilelang_times(examples, site) if site else {}

    import torch
    import triton

    from tile2triton.cli import install_tilelang_alias

    install_tilelang_alias()
    sys.path.insert(0, os.path.join(examples, "topk"))
    import example_topk

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from variant_tools import kernel_from_source

    print("| M | N | topk | blk_m | tile2triton us | deferred stores us | TileLang us |")
    print("|---|---|---|---|---|---|---|")
    for M, N, topk, blk in SHAPES:
        x = torch.rand((M, N), device="cuda")
        ref = x.topk(topk, dim=1)

        def check(g, i):
            return "ok" if torch.equal(g, ref.values) and torch.equal(i.long(), ref.indices) else "WRONG"

        g, i = example_topk.tl_topk(x, topk, blk_m=blk)
        t2t_ok = check(g, i)
        t2t = triton.testing.do_bench(lambda: example_topk.tl_topk(x, topk, blk_m=blk), return_mode="median") * 1e3
        kernel = example_topk.tl_topk.jit_impl.compile(x, topk, blk_m=blk, threads=128)
        src = kernel.get_kernel_source()
        edited = deferred(src, topk)
        edited = edited.replace(
            "def tl_topk_kernel(logits, topk_gates, topk_indices",
            "def tl_topk_kernel(logits, topk_gates, topk_indices, M_rows",
        )
        fn = kernel_from_source(edited, f"topk_deferred_{M}_{N}_{topk}_{blk}", "tl_topk_kernel")
        g2 = torch.full_like(g, float("nan"))
        i2 = torch.full_like(i, -1)
        grid = (triton.cdiv(M, blk),)
        fn[grid](x, g2, i2, M, num_warps=4)
        d_ok = check(g2, i2)
        d = triton.testing.do_bench(lambda: fn[grid](x, g2, i2, M, num_warps=4), return_mode="median") * 1e3
        print(
            f"| {M} | {N} | {topk} | {blk} | {t2t:.2f} ({t2t_ok}) | {d:.2f} ({d_ok}) | {tl_times.get((M, N, topk, blk), '-')} |"
        )
        if os.environ.get("SHOW"):
            print(edited)


if __name__ == "__main__":
    main()
