"""Launch parameters chosen for speed from the user's own source (issue 14).

A TileLang kernel names its threads and its ``T.Pipelined`` stage count; the literal translation
launches ``threads / 32`` warps and pipelines with that stage count.  TileLang's compiler and
Triton's schedule the same tile program differently, so the literal numbers are not always
Triton's fastest for that program (BENCHMARKS.md measures by how much).  Tile sizes and
results never change here: only ``num_warps``, the pipeline depth and Triton's warp
specialization, which a Triton programmer would tune for the same kernel.

Two routes, in this order:

* ``heuristic`` -- a table measured on an H200 by kernel shape (``KernelShape``): what the
  program's pipelined loop holds (two dependent ``T.gemm`` = attention, one = GEMM) and its tiles.
  No cold-start cost.  ``BENCHMARKS.md`` has the measurements behind each entry.
* ``search`` -- with ``TILE2TRITON_TUNE=search``, the first call on a GPU compiles a few
  candidates around the heuristic's choice (``candidates``), times each on the call's own
  arguments and keeps the fastest, remembered on disk per kernel source, GPU and Triton version
  (``<TILE2TRITON_CACHE_DIR>/tuning.json``).  Only kernels whose every global write goes to an
  output the runtime allocates (no atomics, no in-place updates) are searched, since a candidate
  runs several times.

``TILE2TRITON_TUNE=0`` turns both off (the literal ``threads / 32`` warps and stage count).
``PER_THREAD_LOADS`` / ``TILE2TRITON_PER_THREAD_LOADS`` is a code choice beside them (thread
view: shared global loads issued by every thread, see ``per_thread_loads``), independent of the
mode and in force under the interpreter too.
Under Triton's interpreter nothing is chosen: launch parameters do not exist there.

Fitting shared memory (``FIT_STEPS``): Triton's and TileLang's shared-memory plans differ (Triton
keeps a copy of a gemm operand per operand layout, and software pipelining multiplies the
loop's copies), so a kernel TileLang fits may not fit as Triton compiles it.  When Triton reports
``OutOfResources`` for shared memory at the first launch, the runtime lowers the kernel again with
its small-M gemms as wgmma past the register budget (codegen/gemm_kinds.transposed_dot), then with
fewer pipeline stages (2, then 1, for every loop), then with its shared buffers in global scratch
memory (codegen/scratch.py, where each gemm loads its operands itself), and only then reports
what does not fit.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
import time
from dataclasses import dataclass, replace

from .. import ir, settings
from ..codegen import block_order
from ..codegen.gemm_kinds import WGMMA_ROWS  # a tile of fewer rows: mma.sync, from registers
from ..codegen.values import next_pow2
from ..ir.exprs import static, static_trips
from ..passes.analysis import ACC_REGS_PER_THREAD, Ranges, buffer_accesses, kernel_ranges
from ..passes.row_split import split_rows, split_rows_for

ENV = "TILE2TRITON_TUNE"


@dataclass(frozen=True)
class LaunchChoice:
    """Triton launch parameters for one kernel; ``None`` keeps what the source says."""

    num_warps: int | None = None
    num_stages: int | None = None  # replaces every T.Pipelined loop's num_stages
    warp_specialize: bool = False
    # the rows split past half a wave (_rows_split's wave rule): the lowering splits as TILE2TRITON_ROW_SPLIT=always
    split_rows: bool = False

    def lowering(self) -> dict:
        """The ``LoweringOptions`` fields this choice sets."""
        fields = {
            "num_warps": self.num_warps,
            "num_stages": self.num_stages,
            "warp_specialize": self.warp_specialize,
        }
        return {**fields, "row_split": "always"} if self.split_rows else fields

    def label(self) -> str:
        parts = [
            f"w{self.num_warps}" if self.num_warps else "w=src",
            f"s{self.num_stages}" if self.num_stages else "s=src",
        ]
        if self.warp_specialize:
            parts.append("ws")
        if self.split_rows:
            parts.append("rows/2")
        return " ".join(parts)


LITERAL = LaunchChoice()


def mode() -> str:
    """``"off"``, ``"heuristic"`` (the default) or ``"search"``, from ``TILE2TRITON_TUNE``."""
    return settings.current().tune


def fast_math(pass_configs) -> bool:
    """``pass_configs={"tl.enable_fast_math": True}`` (``PassConfigKey.TL_ENABLE_FAST_MATH``)."""
    return _pass_flag(pass_configs, "tl.enable_fast_math")


def user_syncs(pass_configs) -> bool:
    """``pass_configs={"tl.disable_thread_storage_sync": True}`` (``TL_DISABLE_THREAD_STORAGE_SYNC``)."""
    return _pass_flag(pass_configs, "tl.disable_thread_storage_sync")


def _pass_flag(pass_configs, key: str) -> bool:
    if not pass_configs:
        return False
    return dict(pass_configs).get(key, False) not in (False, 0, None, "0", "false", "False")


# ------------------------------------------------------------------------------ per-thread loads
PER_THREAD_LOADS_ENV = "TILE2TRITON_PER_THREAD_LOADS"
# In the thread view, a global load whose address varies over fewer thread axes than the values it
# meets (``A_local[k] = A[tk * 8 + k]`` next to ``B[tn, tk * 8 + k]`` with threads=(tn, tk)) is
# loaded by every thread (codegen/registers.py, broadcast_lanes), as TileLang's threads load it,
# instead of once and spread.  The spread load gets its own Triton layout and meets the others'
# through shared memory and two barriers every time it runs.  Measured on an H200
# (benchmarks/gemv_thread_view_variants.py, gpu_logs/2026-12-01_s6_gemv_variants.log): TileLang's
# thread-view GEMV 0.151 -> 0.134 ms at its own 2 warps (cuBLAS 0.133).
PER_THREAD_LOADS = True


def per_thread_loads() -> bool:
    """``PER_THREAD_LOADS``, or ``TILE2TRITON_PER_THREAD_LOADS=1`` / ``=0``.  A code-generation
    choice, not a launch parameter: it holds under the interpreter too."""
    return settings.current().per_thread_loads and PER_THREAD_LOADS


# ------------------------------------------------------------------------------ kernel shape
SMEM_LIMIT = 232448  # bytes of shared memory one block may use on sm_90
SMEM_SLACK = 2048  # barriers and Triton's own scratch (1856 bytes in the attention loops measured)
REGS_PER_THREAD = ACC_REGS_PER_THREAD  # accumulator elements per thread above which the loop spills (measured)
SHORT_LOOP = 16  # iterations at most for which occupancy beats pipeline depth (heuristic)
FEW_TRIPS = 5  # iterations at most for which an attention forward's third stage is not repaid (measured)
REGS_PER_SM = 65536
SMEM_PER_SM = 233472  # shared memory of one sm_90 SM, for all its blocks
# tile registers a thread holds before Triton's kernel spills: Triton keeps a tile once per layout
# its uses need (mhc_pre's x tile: the dot operand and a reduction's), so estimated 168 a thread
# compiled (sm_90, Triton 3.9) to 255 registers and a stack at 4 warps, 205 at 8
TILE_REGS_PER_THREAD = 128
REG_OVERHEAD = 64  # registers a thread holds beside the accumulators (operands, indices), estimated
SAFE_REG_OVERHEAD = 96  # the same where an estimate must not count too many blocks an SM (blocks_per_sm)
SMS = 132  # SMs of an H200 (the card the table was measured on): a target's where its device gave none (sms_of)
WARPS_PER_SM, BLOCKS_PER_SM, MAX_WARPS = 64, 32, 32  # sm_90: threads and blocks an SM holds; 1024 threads a block
# bytes that blocks resident together may read before reading them again and still find them in L2: a fifth
# of the H100/H200's 50 MB (the second pass's writes and the other blocks' first passes pass through it too).
# Measured (benchmarks/reduce_warps_sweep.py, rms_norm_splitk, 7 shapes): the fastest warps kept 4.3-8.6 MB
# resident wherever a choice did, 17 MB ran 4-10% slower, 34 MB 20-35% slower (_reuse_warps)
L2_REUSE_BYTES = 10 << 20


@dataclass(frozen=True)
class KernelShape:
    """What the heuristic looks at: the gemms of the loop with the most of them, and the threads."""

    kind: str  # "attention" (>= 2 gemms in one loop), "gemm" (1), "other"
    threads: int
    acc_elems: int  # elements of the loop's gemm accumulators together
    stages: int  # the loop's num_stages (0 when it has none)
    stage_bytes: int = 0  # shared bytes the loop's global->shared copies fill per iteration
    fixed_bytes: int = 0  # other shared gemm operands (a Q tile loaded once)
    trips: int | None = None  # the loop's iteration count where it is static
    most_trips: int | None = None  # the most iterations any block runs: ``trips``, or bounded by value ranges
    kernels: int = 1  # kernels in the prim_func (a split-K decode has a combine kernel too)
    blocks: int | None = None  # blocks of the loop's kernel's grid, where static
    tile_elems: int = 0  # 32-bit registers the loop's tiles take (accumulators, fragments, gemm operands)
    held_elems: int = 0  # 32-bit registers of the fragments the loop touches (its accumulators among them)
    gemms: int = 0  # gemms in the loop (2: an attention forward's scores and output)


def shape_of(func: ir.PrimFunc) -> KernelShape:
    kernels = len(func.kernels)
    best, best_key = KernelShape("other", func.kernels[0].threads if kernels else 128, 0, 0, kernels=kernels), (0, 0)
    loops = [(kernel, st) for kernel in func.kernels for st in ir.walk(kernel.body) if isinstance(st, ir.For)]
    for kernel, st in loops:
        body = list(ir.walk(st.body))
        gemms = [g for g in body if isinstance(g, ir.Gemm)]
        if not gemms:
            continue
        accs = {g.c.buffer for g in gemms}
        filled = {c.dst.buffer for c in body if isinstance(c, ir.Copy) and _global_to_shared(c)}
        operands = {r.buffer for g in gemms for r in (g.a, g.b) if r.buffer.scope == ir.SHARED}
        key = (len(gemms), sum(_elems(b.shape) for b in accs))
        if key > best_key:
            best_key = key
            best = KernelShape(
                "attention" if len(gemms) >= 2 else "gemm",
                kernel.threads,
                key[1],
                st.num_stages or 0,
                sum(_bytes(b) for b in filled),
                sum(_bytes(b) for b in operands - filled),
                static_trips(st),
                _most_trips(kernel, st),
                kernels,
                blocks=_grid_blocks(kernel),
                tile_elems=_tile_registers(st, gemms),
                held_elems=_held_registers(st),
                gemms=len(gemms),
            )
    return best


def _most_trips(kernel: ir.Kernel, loop: ir.For) -> int | None:
    """The most iterations ``loop`` runs in any block: its static count, else the span of its bounds over
    the block indices of a static grid and the lets before it (a sliding window's ``start`` and ``end``
    both follow ``bx``: 2 tiles in every block, where their intervals allow the whole sequence)."""
    trips, step = static_trips(loop), static(loop.step)
    if trips is not None or not step or step < 0:
        return trips
    before = []
    for st in ir.walk(kernel.body):
        if st is loop:
            break
        before.append(st)
    ranges = kernel_ranges(kernel, before, Ranges(floor_below_zero=True))  # (bx * 128 - w) // 128
    return ranges.most_trips(loop.start, loop.stop, step)


def _tile_registers(loop: ir.For, gemms: list) -> int:
    """32-bit registers (all threads together) that a loop's tiles take while it runs, where one
    of its gemms has fewer than WGMMA_ROWS rows (Triton's mma.sync path, both operands in
    registers; else 0): its gemms' accumulators and operands, and the fragments the loop
    allocates; 16-bit elements pack two to a register."""
    if not any(_rows(g) < WGMMA_ROWS for g in gemms):
        return 0
    buffers = {r.buffer for g in gemms for r in (g.a, g.b, g.c)}
    buffers |= {s.buffer for s in ir.walk(loop.body) if isinstance(s, ir.Alloc) and s.buffer.scope != ir.SHARED}
    return _registers(b for b in buffers if b.scope != ir.GLOBAL)


def _held_registers(loop: ir.For) -> int:
    """32-bit registers (all threads together) of the register buffers a loop reads or writes: its
    gemms' accumulators and every other fragment or local buffer (a second accumulator the gemm's
    partial sums are added into, a fragment of scales)."""
    read, written = buffer_accesses(loop.body)
    return _registers(b for b in read | written if b.scope in (ir.FRAGMENT, ir.LOCAL))


def _registers(buffers) -> int:
    """32-bit registers of ``buffers`` (all threads together): 16-bit elements pack two to a register."""
    return sum(-(-_elems(b.shape) * min(32, b.dtype.bits) // 32) for b in buffers)


def _rows(g: ir.Gemm) -> int:
    """The rows (M) of a gemm's accumulator, where known when compiling."""
    shape = [d for d in g.c.buffer.shape if isinstance(d, int)]
    return shape[-2] if len(shape) >= 2 else WGMMA_ROWS


def _grid_blocks(kernel: ir.Kernel) -> int | None:
    extents = [static(e) for e in kernel.grid]
    return None if any(e is None for e in extents) else math.prod(extents)


def _global_to_shared(c: ir.Copy) -> bool:
    src, dst = c.src, c.dst
    return (
        isinstance(src, ir.Region)
        and isinstance(dst, ir.Region)
        and src.buffer.scope == ir.GLOBAL
        and dst.buffer.scope == ir.SHARED
    )


def _elems(shape) -> int:
    n = 1
    for d in shape:
        n *= d if isinstance(d, int) else 1
    return n


def _bytes(buffer: ir.Buffer) -> int:
    return _elems(buffer.shape) * max(1, buffer.dtype.bits // 8)


# ------------------------------------------------------------------------------ tables per architecture
# The heuristic below was measured on an H200 (sm_90) and holds only there: every other card
# launches as the source says (threads / its warp size, T.Pipelined's stages) until a table is
# measured on it.  sm_100 keeps sm_90's shared memory but not its tensor cores (tcgen05),
# sm_120 has about 99 KB of shared memory a block, AMD 64 KB of LDS (160 KB on gfx950) and,
# on CDNA, 64-wide wavefronts: SMEM_LIMIT and the register counts are H200 numbers.
MEASURED_ARCHS = ("sm_90",)


def _arch(target) -> str | None:
    """The architecture of a runtime/target.Target, or of a CUDA capability tuple ((9, 0): sm_90)."""
    if target is None:
        return None
    arch = getattr(target, "arch", None)
    if arch is not None:
        return arch
    major, minor = target
    return f"sm_{major}{minor}"


def _capability(target) -> tuple[int, int] | None:
    return getattr(target, "capability", None) if hasattr(target, "arch") else target


def sms_of(target) -> int:
    """The SMs the grid rules count a grid's blocks against: the device's (runtime/target.Target.sms),
    else ``SMS`` (an architecture named offline, a capability tuple)."""
    return getattr(target, "sms", 0) or SMS


# ------------------------------------------------------------------------------ the heuristic
def heuristic(func: ir.PrimFunc, capability) -> LaunchChoice:
    """The table measured on an H200 with Triton 3.6 (BENCHMARKS.md, "Launch parameters"):

    * a loop with two dependent gemms (attention): the fewest warps (4, 8, 16) that hold its
      accumulators in at most REGS_PER_THREAD registers a thread (``_acc_budget``: fewer where
      the register file gives a thread less), else the warps that hold the most of them, and 3
      pipeline stages where they fit in shared memory (else 2; 4 was slower wherever it fit);
      with two gemms (a forward) on a static grid of at most one block an SM, the source's warps
      up to 8 where those are more (``TILE2TRITON_GRID_WARPS``);
    * a loop with one gemm: the source's warps, and at least 3 stages where they fit (2 stages
      were slower than 3 on every GEMM measured; more than 3 gained nothing, so more stay);
    * a short loop (at most SHORT_LOOP iterations, known when compiling: a split-K decode's
      slice) takes the stage count that lets the most blocks share an SM (ties: more stages):
      with few iterations the pipeline's fill and drain are not repaid, and a second resident
      block overlaps them instead (GQA decode, 8 iterations: 1 stage 0.74 ms, 2 stages 0.98 ms,
      3 stages 0.84 ms, gpu_logs/2026-12-01_s5_perf_variants.log); with
      ``TILE2TRITON_GRID_STAGES``, only as many blocks count as a static grid gives an SM
      (the device's SMs, ``sms_of``), so a grid that never puts two blocks on one SM takes the deepest pipeline;
    * a longer attention loop on a grid of more blocks than SMs (or a grid not known when compiling)
      takes, of 3 and 2 stages, the one that lets the most blocks share an SM (ties: 3;
      ``TILE2TRITON_OCCUPANCY_STAGES``): block-causal attention's backward (4-warp dQ and dK/dV blocks of
      up to 64 iterations, 2048 of them) 0.860 -> 0.631 ms on an H100, its varlen form 1.243 -> 0.898;
      the suite's flash-attention and attention-sink kernels within their noise (H100, session 46);
    * an attention forward (two gemms) whose loop runs at most FEW_TRIPS iterations in every block
      (static, or bounded by its bounds' values over the block indices: a sliding window), on a grid
      of more blocks than SMs, takes 2 stages where the rules above chose 3
      (``TILE2TRITON_FEW_TRIP_STAGES``): the sink forward at 2-5 key tiles a block 1-5% faster, at 9
      tiles slower (H100, session 48); on 64 blocks the suite's forwards were 4-8% slower (session 49);
    * a prim_func of several kernels keeps every kernel's own warps (the choice is global);
    * a block-view kernel without gemms whose largest tile is smaller than its threads: a warp per
      32 elements of it (``_tile_warps``, TILE2TRITON_TILE_WARPS);
    * a block-view kernel without gemms or reductions in its loops that reads global memory in a
      loop and reads the same tensor again after it (a split row norm's second pass): the fewest
      warps, from the source's, whose resident blocks' re-read bytes fit ``L2_REUSE_BYTES``, else
      the most (``_reuse_warps``, TILE2TRITON_REUSE_WARPS);
    * everything else (reductions, element-wise) as written: measured at parity or faster.

    ``capability``: a runtime/target.Target or a CUDA capability tuple; the table applies to sm_90
    only (``MEASURED_ARCHS``).  Wherever a rule counts a grid's blocks against the SMs, they are the
    device's (an H100 PCIe's 114, an H20's 78), else an H200's 132 (``sms_of``): the rules were measured
    as waves of blocks, not as block counts.
    """
    if _arch(capability) not in MEASURED_ARCHS:
        return LITERAL  # measured on the H200 only: elsewhere the literal translation
    sms = sms_of(capability)
    func, split_past_grid_rule = _rows_split(func, _arch(capability), sms)
    choice = replace(_by_shape(func, sms), split_rows=split_past_grid_rule)
    if choice == LITERAL and settings.current().tile_warps:
        choice = _tile_warps(func) or choice
    if choice == LITERAL and settings.current().reuse_warps:
        choice = _reuse_warps(func, sms) or choice
    consumers = _consumer_warps(func)
    widest = _section_warps(func)
    if widest is not None and (consumers is None or widest < consumers):
        # TILE2TRITON_SECTION_WARPS: thread-range sections without barriers (mhc_pre's fused
        # kernel: a 32-thread Sinkhorn, a 64-thread mix of 4 x 512 tiles) run one after another
        # here, each on tiles sized for its own threads: more warps only spread them thinner
        consumers = widest
    if consumers is not None and (choice.num_warps is None or choice.num_warps > consumers):
        # TILE2TRITON_WS_WARPS: a warp-specialized source (a producer section that only issues
        # copies into shared memory) runs its sections one after another here, and Triton
        # pipelines the copies itself: the consumers' warps compute the tiles, the producer's
        # would only split them further (minference's 64 x 64 attention tile over 8 warps)
        choice = replace(choice, num_warps=consumers)
    return choice


def _rows_split(func: ir.PrimFunc, arch: str | None, sms: int) -> tuple[ir.PrimFunc, bool]:
    """``func`` as the lowering will run it where passes/row_split.py splits a kernel's rows: the launch
    is chosen for the half tiles (the sink forward's 64-row tiles hold their accumulators on 4 warps).
    With the second value True, the split is this rule's own, past the pass's grid rule
    (TILE2TRITON_ROW_SPLIT_WAVES): a one-kernel forward whose split blocks, at the launch this heuristic
    gives them, run in no more waves than its whole blocks at theirs (``_waves``).  Measured (H100,
    session 56, benchmarks/row_split_probe.py --sweep grids / waves): head dim 64 at 96-192 blocks of 128
    rows 3-26% faster split (the split's 4-warp blocks: three an SM, the whole 8-warp ones one or two), at
    320-384 blocks (two waves either way) 8 of 10 shapes 1-30% faster, 2 of 10 3-6% slower; head dim 128
    at 96 blocks and more not split (its split blocks' shared memory leaves one an SM: more waves), nor
    dim 64 at 256 blocks (25% faster on one source, 14% slower on the other).  Past one wave only loops of
    the same trips in every block are split: a causal forward's there ran 6% slower to 8% faster (session 57)."""
    env = settings.current()
    mode = env.row_split
    kernels = [split_rows_for(k, mode, arch, sms, env.row_split_backward) for k in func.kernels]
    if any(new is not old for new, old in zip(kernels, func.kernels)):
        return replace(func, kernels=kernels), False
    if mode != "on" or len(func.kernels) != 1 or not env.row_split_waves:  # heuristic: sm_90 only
        return func, False
    split = split_rows(func.kernels[0], sms, always=True)
    if split is func.kernels[0]:
        return func, False
    halves = replace(func, kernels=[split])
    whole_waves, split_waves = _waves(func, sms), _waves(halves, sms)
    if whole_waves is None or split_waves is None or split_waves > whole_waves:
        return func, False
    kernel = func.kernels[0]
    if whole_waves > 1 and block_order.heavy_axis(kernel, block_order.let_bindings(kernel)[0]) is not None:
        # a causal loop (trips growing with a block index) past one wave: its blocks, heaviest first, already
        # fill the waves' tails, and the split gained nothing there on average (H100, session 57: head dim 64 at
        # 320-384 blocks, -6% to +8%, against +14-30% for the same grids not causal)
        return func, False
    return halves, True


def _waves(func: ir.PrimFunc, sms: int) -> int | None:
    """Waves of a one-kernel attention forward's static grid at the launch ``_by_shape`` gives it: its
    blocks over the SMs times the blocks an SM holds (``_blocks_per_sm``); None where unknown, or where
    that launch runs the loop unpipelined (the short-loop rule's 1 stage: blocks an SM holds bought with
    the pipeline; the split head-dim-128 forward of 8 key tiles at 1 stage, 256-1024 blocks, ran 38-45%
    slower than the whole one at 3, session 56)."""
    shape = shape_of(func)
    if shape.kind != "attention" or not shape.blocks or not shape.stages:
        return None
    choice = resolve(_by_shape(func, sms), LaunchChoice(next_pow2(max(1, shape.threads // 32)), shape.stages))
    held = _blocks_per_sm(shape, choice.num_warps, choice.num_stages)
    if held < 1 or choice.num_stages < 2:
        return None
    return -(-shape.blocks // (sms * held))


def _tile_warps(func: ir.PrimFunc) -> LaunchChoice | None:
    """TILE2TRITON_TILE_WARPS (on; settings.py has the measurement): a block-view kernel without gemms whose every tile (buffers, T.Parallel
    spaces, copied regions; padded) has fewer elements than its threads launches with the warps that
    give each thread one element of the largest (gdn's chunk cumsum: a 64-element scan on 256 threads,
    each element held by four).  None where the rule does not apply."""
    if len(func.kernels) != 1:
        return None
    kernel = func.kernels[0]
    if kernel.thread_vars:
        return None
    largest = 1
    for s in ir.walk(kernel.body):
        if isinstance(s, ir.Gemm):
            return None
        if isinstance(s, ir.Alloc) and s.buffer.scope != ir.GLOBAL:
            tiles = [s.buffer.shape]
        elif isinstance(s, ir.Parallel):
            tiles = [s.extents]
        elif isinstance(s, (ir.Copy, ir.Fill, ir.Reduce, ir.Scan, ir.Atomic)):
            tiles = [r.extents for r in vars(s).values() if isinstance(r, ir.Region)]
        else:
            continue
        for extents in tiles:
            sizes = [static(x) for x in extents]
            if None in sizes:
                return None
            largest = max(largest, math.prod(next_pow2(x) for x in sizes))
    warps = max(1, largest // 32)
    return LaunchChoice(warps) if warps < max(1, kernel.threads // 32) else None


def _reuse_warps(func: ir.PrimFunc, sms: int) -> LaunchChoice | None:
    """TILE2TRITON_REUSE_WARPS (on; settings.py has the measurement): a block-view kernel without gemms
    whose blocks read global memory in a loop and read the same tensor again after it (``_reread_bytes``:
    rms_norm_splitk's second pass over its row, in reverse so that the last tiles are still in L2) finds
    the first pass in L2 only while the blocks resident together have read no more than L2 holds.  An
    SM holds at most WARPS_PER_SM // warps blocks by threads, so more warps a block keep fewer blocks
    resident: the fewest warps from the source's (up to MAX_WARPS) whose resident blocks' re-read bytes
    fit ``L2_REUSE_BYTES``, else MAX_WARPS (the fewest blocks; rows of 64-128 KB: 32 warps 12-27% faster
    than 4).  None where the source's warps fit.  Not where a loop reduces across the block: each
    reduction's cross-warp step grows with the warps (online_softmax, 8 steps of 1024: 4 warps 136 us,
    8 127, 16 206)."""
    if len(func.kernels) != 1:
        return None
    kernel = func.kernels[0]
    if kernel.thread_vars or ir.has_gemm(kernel.body):
        return None
    reducing = (ir.Reduce, ir.Scan, ir.ThreadAllReduce, ir.Atomic)
    loops = [s for s in ir.walk(kernel.body) if isinstance(s, ir.For)]
    if any(isinstance(s, reducing) for loop in loops for s in ir.walk(loop.body)):
        return None
    reread = _reread_bytes(kernel.body)
    if not reread:
        return None
    source = next_pow2(max(1, kernel.threads // 32))
    blocks = _grid_blocks(kernel)
    for warps in (w for w in (1, 2, 4, 8, 16, 32) if source <= w <= MAX_WARPS):
        resident = sms * min(BLOCKS_PER_SM, WARPS_PER_SM // warps)
        if (resident if blocks is None else min(resident, blocks)) * reread <= L2_REUSE_BYTES:
            return None if warps == source else LaunchChoice(warps)
    return LaunchChoice(MAX_WARPS) if source < MAX_WARPS else None


def _reread_bytes(body: list) -> int:
    """The most bytes of global memory one block reads in a loop of static trip count and reads again
    in the statements after it (beside the loop): per tensor, the smaller of the two passes' bytes."""
    most = 0
    for stmts in [body] + [getattr(s, a) for s in ir.walk(body) for a in ("body", "then_body", "else_body")
                           if getattr(s, a, None)]:  # fmt: skip
        for i, st in enumerate(stmts):
            if not (isinstance(st, ir.For) and static_trips(st)):
                continue
            first, later = _global_reads([st]), _global_reads(stmts[i + 1 :])
            most = max(most, sum(min(n, later[root]) for root, n in first.items() if root in later))
    return most


def _global_reads(stmts: list) -> dict:
    """Bytes of each global tensor (by root buffer) that ``stmts`` read (copies and element reads of
    T.Parallel), loops of static trip count counted that many times (others once)."""
    reads: dict = {}

    def add(buffer: ir.Buffer, elems: int, times: int) -> None:
        reads[buffer.root] = reads.get(buffer.root, 0) + times * elems * max(1, buffer.dtype.bits // 8)

    def visit(body: list, times: int) -> None:
        for s in body:
            if isinstance(s, ir.Copy) and isinstance(s.src, ir.Region) and s.src.buffer.scope == ir.GLOBAL:
                add(s.src.buffer, _elems(s.src.extents), times)
            elif isinstance(s, ir.Parallel):
                for load in (ld for inner in ir.walk(s.body) for ld in ir.loads_in(inner)):
                    if load.buffer.scope == ir.GLOBAL:
                        add(load.buffer, math.prod(s.extents), times)
                continue
            inner = times * (static_trips(s) or 1) if isinstance(s, ir.For) else times
            for attr in ("body", "then_body", "else_body"):
                if getattr(s, attr, None):
                    visit(getattr(s, attr), inner)

    visit(stmts, 1)
    return reads


def _consumer_warps(func: ir.PrimFunc) -> int | None:
    """The warps of a warp-specialized kernel's consumer sections (``Kernel.compute_threads``),
    where ``TILE2TRITON_WS_WARPS`` is on and the prim_func has one kernel."""
    if not settings.current().ws_warps or len(func.kernels) != 1:
        return None
    threads = func.kernels[0].compute_threads
    return next_pow2(max(1, -(-threads // 32))) if threads else None


def _section_warps(func: ir.PrimFunc) -> int | None:
    """The warps of the widest thread-range section (``Kernel.section_threads``), where
    ``TILE2TRITON_SECTION_WARPS`` is on and the prim_func has one kernel."""
    if not settings.current().section_warps or len(func.kernels) != 1:
        return None
    threads = func.kernels[0].section_threads
    return next_pow2(max(1, -(-threads // 32))) if threads else None


def _by_shape(func: ir.PrimFunc, sms: int) -> LaunchChoice:
    shape = shape_of(func)
    if not shape.stages or shape.kind == "other":
        return LITERAL
    fits = [n for n in (3, 2) if n * shape.stage_bytes + shape.fixed_bytes <= SMEM_LIMIT - SMEM_SLACK]
    if shape.kind == "gemm":
        stages = 3 if shape.stages < 3 and 3 in fits else None
        warps = _register_warps(shape) if settings.current().reg_warps else None
        if warps is None and settings.current().held_warps and shape.tile_elems == 0:  # wgmma-sized gemms only
            warps = _held_warps(shape, sms)
        return LaunchChoice(warps, stages) if warps or stages else LITERAL
    holds = [w for w in (4, 8, 16) if shape.acc_elems <= _acc_budget(w) * 32 * w]
    warps = holds[0] if holds else max((4, 8, 16), key=lambda w: (_acc_budget(w) * 32 * w, -w))
    source = max(1, shape.threads // 32)
    if settings.current().few_warps and source < warps and shape.acc_elems <= _acc_budget(source) * 32 * source:
        # TILE2TRITON_FEW_WARPS: a source of one or two warps (NSA's 32 threads) whose accumulators
        # fit keeps them: its tiles (16 query rows) give four warps a sliver each and a
        # cross-warp reduction through shared memory per softmax step
        warps = source
    wider = min(source, 8)
    if (
        settings.current().grid_warps
        and shape.gemms == 2
        and shape.blocks is not None
        and shape.blocks <= sms
        and wider > warps
        and shape.acc_elems <= _acc_budget(wider) * 32 * wider
    ):
        # TILE2TRITON_GRID_WARPS: a grid of at most one block an SM leaves each SM one block's
        # warps to hide its latencies; the source's (up to 8) beat the fewest that hold the
        # accumulators there (attention forward, 64-96 blocks: 4-20% faster), and lost wherever
        # an SM got a second block (144-1024 blocks; benchmarks/attn_warps_sweep.py)
        warps = wider
    stages = fits[0] if fits else shape.stages
    short = shape.trips is not None and shape.trips <= SHORT_LOOP
    spare_blocks = settings.current().occupancy_stages and (shape.blocks is None or shape.blocks > sms)
    if fits and (short or spare_blocks):
        # blocks an SM holds at once (ties: more stages).  A short loop may drop its pipeline (1 stage):
        # with few iterations a second resident block overlaps the pipeline's fill and drain.
        # TILE2TRITON_GRID_STAGES counts only the blocks a static grid gives an SM: a grid of at most one
        # block an SM gains nothing from occupancy and takes the deepest pipeline that fits
        # (mha_inference's split kernel, 128 blocks of 8 iterations: 2 -> 3 stages 23.7 -> 19.0 us, 4
        # stages 19.4; gpu_logs/2026-12-04_s24_stages.log).  TILE2TRITON_OCCUPANCY_STAGES: a longer loop
        # on a grid with blocks to spare keeps a pipeline (3 or 2 stages): a third stage that leaves a
        # second block no room costs that block's overlap (block-causal attention's dK/dV kernel, 2048
        # blocks of 4 warps, 132 -> 100 KB of shared memory: the backward 0.857 -> 0.652 ms on an H100,
        # gpu_logs/2026-12-06_s46_h100/probes.md)
        wanted = -(-shape.blocks // sms) if short and settings.current().grid_stages and shape.blocks else None
        stages = max(fits + [1] if short else fits, key=lambda n: (_resident(shape, warps, n, wanted), n))
    few = shape.most_trips is not None and shape.most_trips <= FEW_TRIPS
    waves = shape.blocks is not None and shape.blocks > sms
    if settings.current().few_trip_stages and shape.gemms == 2 and few and waves and stages == 3 and 2 in fits:
        # TILE2TRITON_FEW_TRIP_STAGES: a forward that runs a few key tiles a block (a sliding window: 2 or
        # 3) on a grid of more blocks than SMs does not repay a third stage's deeper prefetch, and 2 stages
        # never hold fewer blocks an SM (benchmarks/window_warps_sweep.py, 320-2048 blocks at the
        # heuristic's 4 warps: 2 stages 1-5% faster in 9 of 9 rows of 2-5 tiles).  A grid of at most one
        # block an SM keeps 3: the suite's 64-block forwards of 1-2 tiles ran 4-8% slower on 2 (session 49)
        stages = 2
    return LaunchChoice(warps if shape.kernels == 1 else None, stages)


def _register_warps(shape: KernelShape) -> int | None:
    """``TILE2TRITON_REG_WARPS``: the fewest warps, from the source's up to 8, whose threads hold
    the loop's register tiles (``KernelShape.tile_elems``: accumulators, fragments and the shared
    operands an mma.sync gemm loads into registers) within TILE_REGS_PER_THREAD registers; None
    where the source's warps already do (or none up to 8 does: more warps only cost more)."""
    source = next_pow2(max(1, shape.threads // 32))
    for warps in (w for w in (1, 2, 4, 8) if w >= source):
        if shape.tile_elems <= TILE_REGS_PER_THREAD * 32 * warps:
            return None if warps == source else warps
    return None


def _held_warps(shape: KernelShape, sms: int) -> int | None:
    """``TILE2TRITON_HELD_WARPS``: for a loop of wgmma-sized gemms whose fragments
    (``KernelShape.held_elems``: its accumulators and the fragments it reads or writes) a thread of
    the source's warps cannot hold within ``_acc_budget``, the fewest warps up to 8 that hold them
    (8 where none does: they spill least); None where the source's warps keep them.

    A wgmma accumulator is spread over the block's warpgroups, so more warps give each thread
    fewer of its registers.  Measured on the H200 (benchmarks/gemm_warps_sweep.py, 4 against 8
    warps; gpu_logs/2026-12-04_s27_gemm_warps_sweep.log):

    * the gemm's own accumulator too large (one 128 x 256 fp32 accumulator, 256 registers a thread
      of 4 warps): 8 warps 4.6-7.9x faster at every grid, 12 to 2048 blocks;
    * only a fragment beside it too large (gemm_fp8_2xAcc's second 128 x 128 accumulator, spilled
      and reloaded once per promotion): 8 warps 7-20% faster on static grids of at most one block
      an SM (24-132 blocks), 8-33% slower on grids of 156-4096 blocks, where the spilling 4-warp
      block shares its SM with a second one.  So that case takes more warps only on a static grid
      of at most one block an SM (``sms`` blocks), as ``GRID_WARPS`` does for attention."""
    source = next_pow2(max(1, shape.threads // 32))

    def holds(warps: int, elems: int) -> bool:
        return elems <= _acc_budget(warps) * 32 * warps

    if holds(source, shape.held_elems):
        return None
    if holds(source, shape.acc_elems) and (shape.blocks is None or shape.blocks > sms):
        return None
    return next((w for w in (2, 4, 8) if w > source and holds(w, shape.held_elems)), 8 if source < 8 else None)


def _acc_budget(warps: int) -> int:
    """Accumulator registers a thread of a ``warps``-warp block can hold: REGS_PER_THREAD, or less
    where the register file gives each thread fewer than that plus REG_OVERHEAD (16 warps: 65536 /
    512 = 128 registers a thread, 64 for accumulators).  Accumulators that no block holds go to the
    warps whose threads hold the most of them: past that, more warps only spill more (attention
    backward's dK/dV kernel at 128 x 192 + 128 x 128 accumulators, compiled for sm_90: 16 warps
    ~250 spill instructions, 8 warps ~60)."""
    return min(REGS_PER_THREAD, REGS_PER_SM // (32 * warps) - REG_OVERHEAD)


def _resident(shape: KernelShape, warps: int, stages: int, wanted: int | None) -> int:
    held = _blocks_per_sm(shape, warps, stages)
    return held if wanted is None else min(held, wanted)


def _blocks_per_sm(shape: KernelShape, warps: int, stages: int) -> int:
    """Blocks of this kernel one SM holds, by registers (the accumulators plus REG_OVERHEAD a
    thread) and by shared memory."""
    threads = warps * 32
    by_registers = REGS_PER_SM // (threads * (-(-shape.acc_elems // threads) + REG_OVERHEAD))
    by_shared = SMEM_PER_SM // (stages * shape.stage_bytes + shape.fixed_bytes + SMEM_SLACK)
    return min(by_registers, by_shared)


def blocks_per_sm(func: ir.PrimFunc, num_warps: int | None, num_stages: int | None, target) -> int:
    """Blocks of ``func``'s one kernel an SM of ``target`` holds at this launch (``None``: the source's
    warps or stages), estimated from its gemm loop, for the snake order (codegen/block_order.py,
    which needs the blocks that start at once, and does harm where it counts more than there are);
    0 where not estimated: a card other than CUDA (the order rests on NVIDIA's round-robin
    dispatch), several kernels, no loop of gemms with stages.  Erring low: shared memory counts every
    shared buffer the kernel allocates (the loop's copies once a stage), not only gemm operands
    (Triton stages an output tile or a layout change there too: the block-sparse attention of
    variant set 2 took 131,072 bytes where its operands are 114,688), registers the accumulators plus
    ``SAFE_REG_OVERHEAD``.  An SM's shared memory is a block's most (``Target.smem``) plus the 1 KB
    the CUDA runtime reserves per block: 228 KB on sm_90, 164 KB on sm_80, 100 KB on sm_86/89/120."""
    if getattr(target, "backend", None) != "cuda" or not getattr(target, "smem", 0) or len(func.kernels) != 1:
        return 0
    shape = shape_of(func)
    stages = num_stages or shape.stages
    if shape.kind == "other" or not stages or not shape.acc_elems:
        return 0
    warps = num_warps or next_pow2(max(1, shape.threads // 32))
    threads = warps * 32
    # a thread has at most 255 registers (ptxas spills past them), allocated 8 at a time
    by_registers = target.regs // (threads * min(256, -(-shape.acc_elems // threads) + SAFE_REG_OVERHEAD))
    shared = stages * shape.stage_bytes + _shared_bytes(func.kernels[0]) - shape.stage_bytes + SMEM_SLACK
    by_shared = (target.smem + 1024) // shared
    return max(0, min(by_registers, by_shared, WARPS_PER_SM // warps, BLOCKS_PER_SM))


def _shared_bytes(kernel: ir.Kernel) -> int:
    """Bytes of every shared buffer the kernel allocates, once each."""
    return sum(
        _bytes(s.buffer) for s in ir.walk(kernel.body) if isinstance(s, ir.Alloc) and s.buffer.scope == ir.SHARED
    )


def candidates(func: ir.PrimFunc, capability, wide: bool = False) -> list[LaunchChoice]:
    """What a first-call search times: the literal launch, the heuristic's choice and its
    neighbours (2 or 3 stages; warp specialization with 8 warps or more, where Triton 3.6 builds
    it).  ``wide`` (benchmarks/vs_tilelang.py --sweep wide): also 1 and 4 stages and half and
    double the warps, for measuring the table."""
    shape = shape_of(func)
    warp = getattr(capability, "warp_size", 32)
    literal = LaunchChoice(next_pow2(max(1, shape.threads // warp)), shape.stages or None)
    base = resolve(heuristic(func, capability), literal)
    out = [literal, base]
    if shape.kind in ("attention", "gemm") and shape.stages:
        warps = [base.num_warps]
        if wide:
            warps += [w for w in (base.num_warps // 2, base.num_warps * 2) if 4 <= w <= 8]
        for w in warps:
            for stages in (1, 2, 3, 4) if wide else (2, 3):
                out.append(LaunchChoice(w, stages, split_rows=base.split_rows))
            cc = _capability(capability)
            if cc is not None and cc >= (9, 0) and (wide or w >= 8):
                for stages in (2, 3) if wide else (base.num_stages,):
                    out.append(LaunchChoice(w, stages, True, base.split_rows))
    unique: list = []
    for c in out:
        if c not in unique:
            unique.append(c)
    return unique


def resolve(choice: LaunchChoice, literal: LaunchChoice) -> LaunchChoice:
    """``choice`` with the source's values filled in where it keeps them."""
    return replace(
        choice, num_warps=choice.num_warps or literal.num_warps, num_stages=choice.num_stages or literal.num_stages
    )


# ------------------------------------------------------------------------------ first-call search
_lock = threading.Lock()


def searchable(func: ir.PrimFunc) -> bool:
    """Every global write goes to a runtime-allocated output, and none is an atomic."""
    outputs = {func.params[i] for i in func.out_idx}
    workspaces = {func.params[i] for i in func.workspaces}  # allocated afresh for every call
    for kernel in func.kernels:
        for st in ir.walk(kernel.body):
            if isinstance(st, ir.Atomic):
                return False
            if isinstance(st, ir.Store) and st.buffer.scope == ir.GLOBAL and st.buffer.root not in outputs | workspaces:
                return False
            dst = getattr(st, "dst", None)
            if (
                isinstance(dst, ir.Region)
                and dst.buffer.scope == ir.GLOBAL
                and dst.buffer.root not in outputs | workspaces
            ):
                return False
    return bool(outputs)


def _cache_path() -> str:
    from .cache import cache_dir

    return os.path.join(cache_dir(), "tuning.json")


def _device_key() -> str:
    import torch
    import triton

    return f"{torch.cuda.get_device_name()}|triton {triton.__version__}"


def cache_key(source: str) -> str:
    return hashlib.sha256(f"{_device_key()}\n{source}".encode()).hexdigest()[:24]


def load_cached(key: str) -> LaunchChoice | None:
    try:
        with open(_cache_path()) as f:
            entry = json.load(f).get(key)
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict):
        return None
    try:
        return LaunchChoice(
            entry.get("num_warps"),
            entry.get("num_stages"),
            bool(entry.get("warp_specialize")),
            entry.get("row_split") == "always",
        )
    except TypeError:
        return None


def store_cached(key: str, choice: LaunchChoice, timings: dict) -> None:
    path = _cache_path()
    with _lock:
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError):
            data = {}
        data[key] = {**choice.lowering(), "timings_ms": timings}
        tmp = f"{path}.{os.getpid()}.tmp"
        try:
            with open(tmp, "w") as f:
                json.dump(data, f, indent=1, sort_keys=True)
            os.replace(tmp, path)
        except OSError:  # an unwritable cache: the choice still holds for this process
            pass


def time_launch(run, reps: int = 10) -> float:
    """Median milliseconds of ``run()`` on the current CUDA stream (after one warm-up)."""
    import torch

    run()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


@dataclass
class SearchReport:
    """What the last search of a kernel did (``JITKernel.tuning``)."""

    choice: LaunchChoice
    timings_ms: dict
    seconds: float
    from_cache: bool


def search(compile_choice, launch, func: ir.PrimFunc, capability) -> SearchReport:
    """Time each candidate: ``compile_choice(choice)`` -> launcher, ``launch(launcher)`` runs it."""
    t0 = time.perf_counter()
    timings: dict = {}
    best, best_ms = None, float("inf")
    for choice in candidates(func, capability):
        try:
            launcher = compile_choice(choice)
            ms = time_launch(lambda launcher=launcher: launch(launcher))
        except Exception:  # a candidate Triton cannot build (shared memory, warp specialization): skip it
            continue
        timings[choice.label()] = round(ms, 4)
        if ms < best_ms:
            best, best_ms = choice, ms
    if best is None:
        best = LITERAL
    return SearchReport(best, timings, time.perf_counter() - t0, False)


# ------------------------------------------------------------------------------ fitting shared memory
# lowering options tried in turn on a kernel Triton cannot fit in shared memory (each keeps the
# results; only speed is given up)
FIT_STEPS: tuple[dict, ...] = (
    # small-M gemms as wgmma past the register budget: mma.sync's second shared copies of its operands
    # are what overflowed (H200 probe, sparse MLA backward: 288 -> 180 KiB, 0.81 -> 0.58 ms, no scratch)
    {"transposed_dots_past_budget": True},
    {"transposed_dots_past_budget": True, "max_stages": 2},
    {"transposed_dots_past_budget": True, "max_stages": 1},
    {"transposed_dots_past_budget": True, "max_stages": 1, "shared_scratch": True},
)


def shared_memory_shortfall(exc: BaseException | None) -> tuple[int, int] | None:
    """(bytes required, bytes a block may use) when ``exc`` or an exception it came from is
    Triton's ``OutOfResources`` for shared memory; else None."""
    seen: set = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if type(exc).__name__ == "OutOfResources" and "shared" in str(getattr(exc, "name", "")):
            try:
                return int(exc.required), int(exc.limit)
            except (TypeError, ValueError):
                return None
        exc = exc.__cause__ or exc.__context__
    return None


def next_fit(current: dict) -> dict | None:
    """The fitting step after ``current`` (the options tried last; {} for none), or None."""
    steps = list(FIT_STEPS)
    if current in steps:
        steps = steps[steps.index(current) + 1 :]
    return steps[0] if steps else None


def describe_fit(options: dict) -> str:
    stages = options.get("max_stages")
    text = f"{stages} pipeline stage{'s' if stages != 1 else ''}" if stages else "the source's pipeline stages"
    return text + (" and its shared buffers in global memory" if options.get("shared_scratch") else "")
