"""A model, not a measurement: how long a causal attention forward's grid takes in launch order, with
its query-tile axis reversed, and with that axis walked slowest and reversed (what
``TILE2TRITON_HEAVY_FIRST`` emits, codegen/block_order.py), on 132 SMs.

Each block costs ``overhead + key tiles`` (block ``bx`` of a causal forward walks ``bx + 1`` key
tiles; a varlen block past its sequence none); the GPU is modelled as greedy list scheduling, the
next block in launch order (x fastest) going to the first free slot.  Times are in key-tile units;
``bound`` is the total work over the slots (no order does better).  The shapes are the second
variant set's causal forwards (benchmarks/tilelang_regression_suite/variants.py) and two of
benchmarks/heavy_first_sweep.py's past L2.  Session 51 (this model, no GPU): on grids of many waves launch
order is already within 1-4% of the bound, and heaviest first in runs of a few heads (the blocks running
together then read a few heads' keys and values, not all of them) reaches the bound wherever a run is at
least about two waves of blocks; a run much shorter than that, above all a short last run, leaves its
heaviest blocks to start late and can be slower than launch order.

    python3 benchmarks/lpt_model.py
"""

import heapq
import random

SMS = 132


def makespan(costs: list, slots: int) -> float:
    free = [0.0] * slots
    for cost in costs:
        heapq.heappush(free, heapq.heappop(free) + cost)
    return max(free)


def orders(tiles: int, groups: int, work, overhead: float, group_size: int = 8) -> dict:
    """Block costs in each launch order; ``work(group, bx)``: the key tiles block ``bx`` of a group walks;
    the last order walks the groups (heads) ``group_size`` at a time, each run x slowest and reversed
    (``TILE2TRITON_HEAVY_FIRST_GROUP``), the last run the remainder."""
    in_runs = [
        overhead + work(g, tiles - 1 - bx)
        for first in range(0, groups, group_size)
        for bx in range(tiles)
        for g in range(first, min(groups, first + group_size))
    ]
    return {
        "launch order": [overhead + work(g, bx) for g in range(groups) for bx in range(tiles)],
        "x reversed": [overhead + work(g, tiles - 1 - bx) for g in range(groups) for bx in range(tiles)],
        "x slowest, reversed": [overhead + work(g, tiles - 1 - bx) for bx in range(tiles) for g in range(groups)],
        f"the same in runs of {group_size} heads": in_runs,
    }


def main() -> None:
    rng = random.Random(0)
    lengths = [rng.randint(750, 1500) for _ in range(3)]

    def varlen(g, bx):  # 3 sequences of up to 1500 tokens, 128-row tiles
        length = lengths[g % 3]
        return 0 if bx * 128 >= length else bx + 1

    cases = {  # name: (query tiles, groups, work, blocks an SM)
        "mha_fwd_bshd@2: 2 x 24 heads, 1024, 128-row tiles": (8, 48, lambda g, bx: bx + 1, 1),
        "gqa_fwd_bshd@2: 32 heads, 2048, 128-row tiles": (16, 32, lambda g, bx: bx + 1, 1),
        "mha_sink_fwd_bhsd@2: 40 heads, 1024, 128-row tiles": (8, 40, lambda g, bx: bx + 1, 1),
        "mha_fwd_varlen@2: 3 sequences x 8 heads": (12, 24, varlen, 1),
        # heavy_first_sweep.py's shapes past L2 (K and V of all heads 128-512 MB)
        "1 x 64 heads, 8192, 128-row tiles": (64, 64, lambda g, bx: bx + 1, 1),
        "2 x 32 heads, 16384, 128-row tiles": (128, 64, lambda g, bx: bx + 1, 1),
    }
    print("| case | overhead | launch order | x reversed | x slowest, reversed | in runs of 8 heads | bound |")
    print("|---|---|---|---|---|---|---|")
    for name, (tiles, groups, work, per_sm) in cases.items():
        for overhead in (0.5, 1.0):
            spans = {k: makespan(v, SMS * per_sm) for k, v in orders(tiles, groups, work, overhead).items()}
            bound = sum(orders(tiles, groups, work, overhead)["launch order"]) / (SMS * per_sm)
            cells = " | ".join(f"{v:.1f}" for v in spans.values())
            print(f"| {name} | {overhead} | {cells} | {bound:.1f} |")


if __name__ == "__main__":
    main()
