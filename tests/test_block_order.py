"""Heaviest blocks first (TILE2TRITON_HEAVY_FIRST, codegen/block_order.py): the grid axis whose block
index lengthens the kernel's loops is walked slowest and from its last index; other kernels keep
their order, and the reordered grid computes the same result.  The snake order
(TILE2TRITON_SNAKE_ORDER): a grid that starts whole has every other round of SMs' launch slots
walked back, so an SM gets a heavy and a light block."""

from dataclasses import replace

import pytest
import torch
from test_short_loops import sink_attention, sink_ref

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.runtime.target import parse_target

pytestmark = pytest.mark.poison_empty

REVERSED = "heaviest blocks first"
# an sm_90 of 4 SMs: the tests' small grids take several waves (a grid of a block an SM keeps its order)
FEW_SMS = replace(parse_target("sm_90"), sms=4)


def tile_sums(M, N, block, loop):
    """Each block of ``block`` rows sums the row tiles ``k`` of A in its loop's range into its rows
    of Out (rows past M read as 0): ``grow`` walks tiles 0..bx (a causal prefix), ``shrink`` bx..end,
    ``flat`` all of them, ``while`` 0..bx through a while loop; ``scalar``: a loop of scalars counts
    0..bx (bx + 1) and the block's own tile is scaled by it."""
    tiles = T.ceildiv(M, block)

    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), Out: T.Tensor((M, N), T.float32)):
        with T.Kernel(tiles, threads=128) as bx:
            acc = T.alloc_fragment([block, N], T.float32)
            T.fill(acc, 0)
            if loop == "scalar":
                count = T.alloc_var(T.float32)
                count = 0.0
                for k in T.serial(bx + 1):
                    count += 1.0
                for i, j in T.Parallel(block, N):
                    if bx * block + i < M:
                        acc[i, j] = A[bx * block + i, j] * count
            elif loop == "while":
                k = T.alloc_var(T.int32)
                k = 0
                while k <= bx:
                    for i, j in T.Parallel(block, N):
                        if k * block + i < M:
                            acc[i, j] += A[k * block + i, j]
                    k += 1
            else:
                lo = bx if loop == "shrink" else 0
                hi = bx + 1 if loop == "grow" else tiles
                for k in T.serial(lo, hi):
                    for i, j in T.Parallel(block, N):
                        if k * block + i < M:
                            acc[i, j] += A[k * block + i, j]
            T.copy(acc, Out[bx * block : (bx + 1) * block, :])

    return main


def tile_sums_ref(a, block, loop):
    M = a.shape[0]
    tiles = -(-M // block)
    padded = torch.zeros(tiles * block, a.shape[1], dtype=torch.float64)
    padded[:M] = a.double()
    per_tile = padded.view(tiles, block, -1)
    out = torch.empty_like(per_tile)
    for bx in range(tiles):
        if loop == "scalar":
            out[bx] = per_tile[bx] * (bx + 1)
            continue
        lo = bx if loop == "shrink" else 0
        hi = tiles if loop in ("shrink", "flat") else bx + 1
        out[bx] = per_tile[lo:hi].sum(0)
    return out.view(tiles * block, -1)[:M]


def _source(loop, target=FEW_SMS):
    kernel = tilelang.jit(out_idx=[-1])(tile_sums)(150, 24, 32, loop)
    return kernel.lowered_for(target).source


def test_a_causal_prefix_walks_its_blocks_in_reverse():
    source = _source("grow")
    assert REVERSED in source
    assert "bx = 4 - tl.program_id(0)" in source


@pytest.mark.parametrize("loop", ["shrink", "flat", "while", "scalar"])
def test_other_loops_keep_the_grid_order(loop):
    """Loops that shorten with the index (already longest first), do not depend on it, a kernel
    whose blocks could wait on one another (a while loop), a loop of scalars only."""
    source = _source(loop)
    assert REVERSED not in source
    assert "bx = tl.program_id(0)" in source


def test_a_grid_of_a_block_an_sm_keeps_its_order():
    """5 blocks on an sm_90 of 132 SMs all start at once, in any order (on 4 SMs: reversed, above)."""
    assert REVERSED not in _source("grow", "sm_90")


def test_the_switch_off_keeps_the_order(monkeypatch):
    monkeypatch.setenv("TILE2TRITON_HEAVY_FIRST", "0")
    assert REVERSED not in _source("grow")


@pytest.mark.parametrize("loop", ["grow", "shrink", "while", "scalar"])
def test_reversed_or_not_the_sums_are_right(loop):
    a = torch.randn(150, 24)
    kernel = tilelang.jit(out_idx=[-1])(tile_sums)(150, 24, 32, loop)
    out = kernel(a)
    torch.testing.assert_close(out.double(), tile_sums_ref(a, 32, loop), rtol=1e-5, atol=1e-5)


def test_causal_attention_reordered_matches_the_reference(monkeypatch):
    """TileLang's attention-sink forward (causal: block bx walks bx + 1 key tiles; grid (3, heads))
    with its query tiles walked slowest, last first: every head's longest block at the launch's
    head; on the interpreter.  (Its 6 blocks would start whole on 4 SMs: the snake order is off here,
    ``test_a_grid_that_starts_whole_*`` below have it.)"""
    monkeypatch.setenv("TILE2TRITON_SNAKE_ORDER", "0")
    heads, seq, dim = 2, 70, 32
    args = (heads, seq, seq, dim, None, 32, 32)
    kernel = tilelang.jit(out_idx=[-1])(sink_attention)(*args)
    source = kernel.lowered_for(FEW_SMS).source
    assert REVERSED in source
    assert "launch_idx = tl.program_id(0) + tl.program_id(1) * 3" in source
    assert "bx = 2 - launch_idx // 2" in source and "by = launch_idx % 2" in source
    q, k, v = (torch.randn(heads, seq, dim, dtype=torch.float16) for _ in range(3))
    sinks = torch.randn(heads, dtype=torch.float16)
    out = kernel(q, k, v, sinks)
    torch.testing.assert_close(out.double(), sink_ref(q, k, v, sinks, None), rtol=2e-2, atol=2e-2)


def batched_tile_sums(B, H, M, N, block, heavy_at):
    """``tile_sums``' causal prefix (``grow``) per (batch, head), on a 3-D grid whose tile index is
    the first axis (``heavy_at`` 0) or the middle one (1)."""
    tiles = T.ceildiv(M, block)
    grid = (tiles, H, B) if heavy_at == 0 else (H, tiles, B)

    @T.prim_func
    def main(A: T.Tensor((B, H, M, N), T.float32), Out: T.Tensor((B, H, M, N), T.float32)):
        with T.Kernel(*grid, threads=128) as (b0, b1, bz):
            bx, by = (b0, b1) if heavy_at == 0 else (b1, b0)
            acc = T.alloc_fragment([block, N], T.float32)
            T.fill(acc, 0)
            for k in T.serial(bx + 1):
                for i, j in T.Parallel(block, N):
                    if k * block + i < M:
                        acc[i, j] += A[bz, by, k * block + i, j]
            T.copy(acc, Out[bz, by, bx * block : (bx + 1) * block, :])

    return main


@pytest.mark.parametrize("heavy_at", [0, 1])
def test_a_3d_grid_walks_its_tile_axis_slowest(heavy_at):
    B, H, M, N, block = 3, 2, 70, 16, 32
    kernel = tilelang.jit(out_idx=[-1])(batched_tile_sums)(B, H, M, N, block, heavy_at)
    source = kernel.lowered_for(FEW_SMS).source
    assert REVERSED in source and "launch_idx" in source and "within" in source
    a = torch.randn(B, H, M, N)
    out = kernel(a)
    ref = torch.stack([torch.stack([tile_sums_ref(a[b, h], block, "grow") for h in range(H)]) for b in range(B)])
    torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("group", [1, 4, 15])
def test_heads_walked_in_groups_heaviest_first(monkeypatch, group):
    """TILE2TRITON_HEAVY_FIRST_GROUP: the other axes' 15 (batch, head) blocks in groups of ``group``
    (4: a partial last group of 3), each group heaviest first; 15 or more is one group."""
    monkeypatch.setenv("TILE2TRITON_HEAVY_FIRST_GROUP", str(group))
    B, H, M, N, block = 3, 5, 70, 16, 32
    kernel = tilelang.jit(out_idx=[-1])(batched_tile_sums)(B, H, M, N, block, 0)
    source = kernel.lowered_for(FEW_SMS).source
    assert REVERSED in source and ("this_run" in source) == (group < B * H)
    a = torch.randn(B, H, M, N)
    out = kernel(a)
    ref = torch.stack([torch.stack([tile_sums_ref(a[b, h], block, "grow") for h in range(H)]) for b in range(B)])
    torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-5)


@tilelang.jit(out_idx=[-1])
def dynamic_tile_sums(N, block, copies):
    """``tile_sums``' causal prefix over a ``T.dynamic`` row count (the grid's extent known only at
    launch), written ``copies`` times scaled by ``by + 1`` (a second grid axis)."""
    M = T.dynamic("M")

    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), Out: T.Tensor((copies, M, N), T.float32)):
        with T.Kernel(T.ceildiv(M, block), copies, threads=128) as (bx, by):
            acc = T.alloc_fragment([block, N], T.float32)
            T.fill(acc, 0)
            for k in T.serial(bx + 1):
                for i, j in T.Parallel(block, N):
                    if k * block + i < M:
                        acc[i, j] += A[k * block + i, j] * (by + 1)
            T.copy(acc, Out[by, bx * block : (bx + 1) * block, :])

    return main


@pytest.mark.parametrize("group", [0, 2])
def test_a_dynamic_grid_extent(monkeypatch, group):
    """The tile axis's extent known only at launch; with runs of 2 of the 3 copies, a run's blocks are
    a product with that extent and the last run is one copy."""
    monkeypatch.setenv("TILE2TRITON_HEAVY_FIRST_GROUP", str(group))
    kernel = dynamic_tile_sums(16, 32, 3)
    source = kernel.lowered_for(FEW_SMS).source
    assert ("this_run" in source) if group else ("launch_idx // 3" in source)
    for M in (70, 97, 150):
        a = torch.randn(M, 16)
        ref = tile_sums_ref(a, 32, "grow")
        torch.testing.assert_close(
            kernel(a).double(), torch.stack([ref * (b + 1) for b in range(3)]), rtol=1e-5, atol=1e-5
        )


@pytest.mark.parametrize(
    ("tiles", "heads", "sms", "width"),
    [
        (8, 8, 132, 8),  # session 52's sweep rows (H100 SXM's 132 SMs): 64 blocks, one run
        (8, 48, 132, 24),  # 33 heads fill two waves: two runs of 24
        (16, 32, 132, 16),
        (32, 64, 132, 8),
        (64, 64, 132, 4),
        (128, 64, 132, 2),
        (512, 7, 132, 1),  # a head's tiles past two waves: one head at a time
        (7, 11, 14, 4),  # 4 heads a run: runs of 4, 4, 3
        (7, 9, 14, 3),  # 4 heads a run would leave a run of 1: three runs of 3
        (5, 30, 0, 0),  # SMs unknown (the interpreter): the whole grid one run
    ],
)
def test_runs_of_about_two_waves(tiles, heads, sms, width):
    from tile2triton.codegen.block_order import run_width

    assert run_width(None, tiles, heads, sms) == width


@pytest.fixture
def few_sms(monkeypatch):
    """Launches on the interpreter lowered as for a card of 4 SMs: runs of a few heads."""
    from tile2triton.runtime.kernel import JITKernel

    launch_options = JITKernel._launch_options
    monkeypatch.setattr(
        JITKernel, "_launch_options", lambda self, interpret: {**launch_options(self, interpret), "sms": 4}
    )


def test_runs_of_two_waves_on_a_static_grid(few_sms):
    """15 (batch, head) blocks of 3 query tiles, 4 SMs: runs of 2 heads (the last of 1)."""
    B, H, M, N, block = 3, 5, 70, 16, 32
    kernel = tilelang.jit(out_idx=[-1])(batched_tile_sums)(B, H, M, N, block, 0)
    a = torch.randn(B, H, M, N)
    out = kernel(a)
    source = kernel.get_kernel_source()
    assert "this_run = tl.minimum(2, 15 - run_first)" in source
    ref = torch.stack([torch.stack([tile_sums_ref(a[b, h], block, "grow") for h in range(H)]) for b in range(B)])
    torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-5)


def test_runs_of_two_waves_on_a_dynamic_grid(few_sms):
    """The run width computed at launch from the tile count: 70 rows (3 tiles) runs of 2 and 1 of the 3
    copies, 150 rows (5 tiles) runs of 1, 40 rows (2 tiles) one run."""
    kernel = dynamic_tile_sums(15, 32, 3)  # not the kernel the tests above compiled for 132 SMs
    for M in (70, 150, 40):
        a = torch.randn(M, 15)
        ref = tile_sums_ref(a, 32, "grow")
        out = kernel(a)
        assert "run_width = tl.cdiv(3, runs)" in kernel.get_kernel_source()
        torch.testing.assert_close(out.double(), torch.stack([ref * (b + 1) for b in range(3)]), rtol=1e-5, atol=1e-5)


@pytest.fixture
def resident(monkeypatch):
    """Launches on the interpreter lowered as for a card of 4 SMs holding ``resident.blocks`` blocks each."""
    from tile2triton.runtime.kernel import JITKernel

    launch_options = JITKernel._launch_options

    class Held:
        blocks = 2

    def options(self, interpret):
        return {**launch_options(self, interpret), "sms": 4, "blocks_per_sm": Held.blocks}

    monkeypatch.setattr(JITKernel, "_launch_options", options)
    return Held


@pytest.mark.parametrize("loop", ["grow", "shrink"])
def test_a_grid_that_starts_whole_snakes(resident, loop):
    """5 blocks, 4 SMs of 2: all start at once; slots 4.. walked back.  ``grow`` heaviest first from
    its last index, ``shrink`` (launch order before) from its first."""
    kernel = tilelang.jit(out_idx=[-1])(tile_sums)(150, 24, 32, loop)
    a = torch.randn(150, 24)
    out = kernel(a)
    source = kernel.get_kernel_source()
    assert "launch_idx = tl.where(launch_slot < 4, launch_slot, 8 - launch_slot)" in source
    assert ("bx = 4 - launch_idx" if loop == "grow" else "bx = launch_idx") in source
    assert ("lengthens" if loop == "grow" else "shortens") in source
    torch.testing.assert_close(out.double(), tile_sums_ref(a, 32, loop), rtol=1e-5, atol=1e-5)


def test_three_rounds_of_slots(resident):
    """10 blocks on 4 SMs of 3: rounds of 4, 4 and 2 slots, the middle one walked back."""
    resident.blocks = 3
    kernel = tilelang.jit(out_idx=[-1])(tile_sums)(300, 24, 32, "shrink")
    a = torch.randn(300, 24)
    out = kernel(a)
    assert "launch_round = launch_slot // 4" in kernel.get_kernel_source()
    torch.testing.assert_close(out.double(), tile_sums_ref(a, 32, "shrink"), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("loop", ["grow", "shrink"])
def test_a_grid_past_what_the_sms_hold_is_not_snaked(resident, loop):
    """5 blocks on 4 SMs of 1: the fifth starts when one ends, so heaviest first only (``grow``) or
    launch order (``shrink``)."""
    resident.blocks = 1
    kernel = tilelang.jit(out_idx=[-1])(tile_sums)(150, 24, 32, loop)
    a = torch.randn(150, 24)
    out = kernel(a)
    source = kernel.get_kernel_source()
    assert "launch_slot" not in source
    assert ("bx = 4 - tl.program_id(0)" if loop == "grow" else "bx = tl.program_id(0)") in source
    torch.testing.assert_close(out.double(), tile_sums_ref(a, 32, loop), rtol=1e-5, atol=1e-5)


def key_block_backward(B, H, M, D, block):
    """The block-order shape of a causal attention backward: block ``by`` of keys walks the query
    tiles from its own to the end (two gemms a step), on a (heads, key tiles, batch) grid."""
    tiles = T.ceildiv(M, block)

    @T.prim_func
    def main(
        K: T.Tensor((B, M, H, D), T.float16),
        Q: T.Tensor((B, M, H, D), T.float16),
        dK: T.Tensor((B, M, H, D), T.float32),
    ):
        with T.Kernel(H, tiles, B, threads=128) as (bx, by, bz):
            K_shared = T.alloc_shared([block, D], T.float16)
            q = T.alloc_shared([block, D], T.float16)
            scores = T.alloc_fragment([block, block], T.float32)
            scores_cast = T.alloc_fragment([block, block], T.float16)
            dk = T.alloc_fragment([block, D], T.float32)
            T.copy(K[bz, by * block : (by + 1) * block, bx, :], K_shared)
            T.clear(dk)
            for k in T.Pipelined(by, tiles, num_stages=2):
                T.copy(Q[bz, k * block : (k + 1) * block, bx, :], q)
                T.clear(scores)
                T.gemm(K_shared, q, scores, transpose_B=True)
                T.copy(scores, scores_cast)
                T.gemm(scores_cast, q, dk)
            T.copy(dk, dK[bz, by * block : (by + 1) * block, bx, :])

    return main


def _block_of_slot(source: str, grid: tuple) -> dict:
    """Run the kernel's block-index lines (from ``launch_slot`` to the block indices) in Python for
    every launch slot: slot -> (bx, by, bz)."""
    lines = source.splitlines()
    first = next(i for i, line in enumerate(lines) if line.strip().startswith("launch_slot ="))
    last = next(i for i, line in enumerate(lines) if line.strip().startswith("bz ="))
    code = "\n".join(line.strip() for line in lines[first : last + 1])

    class FakeTl:
        @staticmethod
        def where(cond, a, b):
            return a if cond else b

        minimum = staticmethod(min)

    out = {}
    for z in range(grid[2]):
        for y in range(grid[1]):
            for x in range(grid[0]):
                slot = x + grid[0] * (y + grid[1] * z)
                ids = [x, y, z]
                env = {"tl": FakeTl}
                FakeTl.program_id = staticmethod(lambda a, ids=ids: ids[a])
                exec(code, env)  # noqa: S102 - the kernel's own index arithmetic, on ints
                out[slot] = (env["bx"], env["by"], env["bz"])
    return out


def test_the_backward_pairs_heavy_and_light_blocks():
    """2 x 8 heads x 16 key tiles (256 blocks) on an sm_90 of 132 SMs, several blocks an SM: a
    bijection of the grid in which the SM that runs slots j and j + 132 walks 16 or 17 query tiles
    (launch order: up to 32, both of the heaviest blocks)."""
    kernel = tilelang.jit(out_idx=[-1])(key_block_backward)(2, 8, 1024, 64, 64)
    source = kernel.lowered_for("sm_90").source
    assert "shortens the loops; odd rounds of 132 launch slots reversed" in source
    grid = (8, 16, 2)
    blocks = _block_of_slot(source, grid)
    assert sorted(blocks.values()) == sorted((x, y, z) for x in range(8) for y in range(16) for z in range(2))
    tiles = {slot: 16 - by for slot, (_, by, _) in blocks.items()}
    assert [tiles[j] for j in range(0, 132, 16)] == [16, 15, 14, 13, 12, 11, 10, 9, 8]  # heaviest first
    per_sm = [tiles[j] + tiles.get(j + 132, 0) for j in range(132)]
    assert max(per_sm) == 17 and min(per_sm[:124]) >= 16, per_sm


def test_the_backward_in_launch_order_without_the_switch(monkeypatch):
    monkeypatch.setenv("TILE2TRITON_SNAKE_ORDER", "0")
    kernel = tilelang.jit(out_idx=[-1])(key_block_backward)(2, 8, 1024, 64, 64)
    source = kernel.lowered_for("sm_90").source
    assert "launch_slot" not in source and "by = tl.program_id(1)" in source


def test_the_backward_snaked_matches_the_reference(resident):
    """A small grid of the backward's shape (2 x 3 heads x 3 key tiles = 18 blocks; 4 SMs of 5), on
    the interpreter: dK of every block against float64."""
    resident.blocks = 5
    B, H, M, D, block = 2, 3, 70, 32, 32
    kernel = tilelang.jit(out_idx=[-1])(key_block_backward)(B, H, M, D, block)
    k, q = (torch.randn(B, M, H, D, dtype=torch.float16) for _ in range(2))
    out = kernel(k, q)
    assert "launch_round" in kernel.get_kernel_source()
    tiles = -(-M // block)
    ref = torch.zeros(B, M, H, D, dtype=torch.float64)
    for b in range(B):
        for h in range(H):
            qd, kd = q[b, :, h].double(), k[b, :, h].double()
            for t in range(tiles):
                rows = slice(t * block, min(M, (t + 1) * block))
                qs = qd[t * block :]  # the query tiles from this key tile's own to the end
                scores = (kd[rows] @ qs.T).half().double()  # the kernel casts the scores to fp16
                ref[b, rows, h] = scores @ qs
    torch.testing.assert_close(out.double(), ref, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_the_occupancy_estimate_errs_low(arch):
    """The snake order needs every block of the grid on an SM at once, so the runtime's estimate of the
    blocks an SM holds (runtime/tuning.blocks_per_sm) must not pass what the compiled kernel holds: the
    backward above compiled offline (Triton's registers and shared bytes), snaked, at no more blocks
    an SM than its code allows."""
    import re

    from tile2triton.runtime import tuning
    from tile2triton.runtime.target import compile_offline

    kernel = tilelang.jit(out_idx=[-1])(key_block_backward)(2, 8, 1024, 64, 64)
    spec = parse_target(arch)
    module = kernel.lowered_for(spec)
    assert "launch_slot" in module.source
    launch = module.launches[0]
    stages = int(re.search(r"num_stages=(\d+)", module.source).group(1))
    estimate = tuning.blocks_per_sm(kernel.prim_func, launch.num_warps, stages, spec)
    (compiled,) = compile_offline(module, spec)
    if compiled["registers"] is None:
        pytest.skip("this Triton wheel has no cuobjdump to read registers with")
    threads = launch.num_warps * 32
    by_registers = spec.regs // (-(-compiled["registers"] // 8) * 8 * threads)
    by_shared = (spec.smem + 1024) // (compiled["shared"] + 1024)
    assert 2 <= estimate <= min(by_registers, by_shared), (estimate, compiled)
