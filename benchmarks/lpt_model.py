"""A model, not a measurement: how long a causal attention forward's grid takes in launch order, with
its query-tile axis reversed, and with that axis walked slowest and reversed (what
``TILE2TRITON_HEAVY_FIRST`` emits, codegen/block_order.py), on 132 SMs.

Each block costs ``overhead + key tiles`` (block ``bx`` of a causal forward walks ``bx + 1`` key
tiles; a varlen block past its sequence none); the GPU is modelled as greedy list scheduling, the
next block in launch order (x fastest) going to the first free slot.  Times are in key-tile units;
``bound`` is the total work over the slots (no order does better).  The shapes are the second
variant set's causal forwards (benchmarks/tilelang_regression_suite/variants.py) and four grids of many
waves, two of them benchmarks/heavy_first_sweep.py's past L2.  Session 51 (this model, no GPU): on the grids past L2 launch
order is already within 2-4% of the bound (8% and 16% on the 16-head grids), and heaviest first in runs of
8 heads (the blocks running together then read a few heads' keys and values, not all of them) comes within
1% of it on all four grids of many waves, but not on grids of one to three waves (mha_fwd_bshd@2: 17.5 against 15.5).  Runs much shorter than a wave can lose to launch
order: ``orders(64, 64, ..., 0.5, group_size=3)`` (runs of 3 heads, the last of one head) gives 1066.0
against 1064.5.  Equal runs of about two waves each (``2 x SMs / tiles`` heads a run, the larger runs
first) come within 2% of the whole-grid order in every row.

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
    # equal runs (the larger first) of about two waves of blocks each: 2 x SMs / tiles heads a run
    runs = max(1, groups // max(1, -(-2 * SMS // tiles)))
    base, extra = divmod(groups, runs)
    sizes = [base + 1] * extra + [base] * (runs - extra)
    starts = [sum(sizes[:i]) for i in range(runs)]
    equal_runs = [
        overhead + work(g, tiles - 1 - bx)
        for first, size in zip(starts, sizes)
        for bx in range(tiles)
        for g in range(first, first + size)
    ]
    return {
        "launch order": [overhead + work(g, bx) for g in range(groups) for bx in range(tiles)],
        "x reversed": [overhead + work(g, tiles - 1 - bx) for g in range(groups) for bx in range(tiles)],
        "x slowest, reversed": [overhead + work(g, tiles - 1 - bx) for bx in range(tiles) for g in range(groups)],
        f"the same in runs of {group_size} heads": in_runs,
        "in equal runs of about two waves": equal_runs,
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
        # heavy_first_sweep.py's shapes past L2 (K and V of all heads 128-512 MB), and two between
        "4 x 16 heads, 4096, 128-row tiles": (32, 64, lambda g, bx: bx + 1, 1),
        "1 x 16 heads, 8192, 128-row tiles": (64, 16, lambda g, bx: bx + 1, 1),
        "1 x 64 heads, 8192, 128-row tiles": (64, 64, lambda g, bx: bx + 1, 1),
        "2 x 32 heads, 16384, 128-row tiles": (128, 64, lambda g, bx: bx + 1, 1),
    }
    print(
        "| case | overhead | launch order | x reversed | x slowest, reversed | in runs of 8 heads"
        " | in equal runs of about two waves | bound |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, (tiles, groups, work, per_sm) in cases.items():
        for overhead in (0.5, 1.0):
            spans = {k: makespan(v, SMS * per_sm) for k, v in orders(tiles, groups, work, overhead).items()}
            bound = sum(orders(tiles, groups, work, overhead)["launch order"]) / (SMS * per_sm)
            cells = " | ".join(f"{v:.1f}" for v in spans.values())
            print(f"| {name} | {overhead} | {cells} | {bound:.1f} |")


if __name__ == "__main__":
    main()
