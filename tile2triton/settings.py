"""tile2triton's settings: every environment variable the package reads, parsed in one place.

``current()`` is a frozen :class:`Settings` made from the environment as it is now (one parser for
every on/off switch), cached until a variable changes, so a test's ``monkeypatch.setenv`` or a
script's ``os.environ[...] = ...`` takes effect at the next compile. Only the runtime and the
surfaces read it: code generation is handed what it needs in ``LoweringOptions``.

| variable | values | effect |
|---|---|---|
| ``TILE2TRITON_CACHE_DIR`` | a folder | where generated sources are kept (default ``~/.cache/tile2triton``) |
| ``TILE2TRITON_DISABLE_CACHE`` | on/off | generated sources go to a private temporary folder |
| ``TILE2TRITON_DEBUG`` | on/off | errors keep tile2triton's internal frames |
| ``TILE2TRITON_TUNE`` | ``heuristic`` (default), ``off``, ``search`` | launch parameters (runtime/tuning.py) |
| ``TILE2TRITON_PER_THREAD_LOADS`` | on/off (default on) | thread-view loads made by every thread |
| ``TILE2TRITON_THREAD_COPY_TILES`` | on/off (default off) | per-thread copy nests of thread-range sections as block copies |
| ``TILE2TRITON_FORWARD_SHARED`` | on/off (default on) | a warp-specialized producer's shared ring forwarded into the consumers' reads (the gathers feed the dots; passes/forward_shared.py) |
| ``TILE2TRITON_TENSOR_DESCRIPTORS`` | on/off (default: the card decides) | TMA loads through tensor descriptors |
| ``TILE2TRITON_GLUON`` | on (default), off, ``log``, ``force`` | the Gluon attention routes; ``log`` says why a kernel keeps ``tl``; ``force`` takes them wherever they apply, past the measured cost model (for sweeps) |
| ``TILE2TRITON_GLUON_SCHEDULE`` | ``auto`` (default), ``rotated``, ``serial`` | the consumers' loop in the Gluon rows route (codegen/gluon_plan.SCHEDULES): ``auto`` takes the rotated one where the loop provably runs, else the serial one; the others for sweeps |
| ``TILE2TRITON_TMA_VECTORS`` | on/off (default on) | one-axis boxes (a row statistic: lse, Delta) load through TMA too; off: through pointers |
| ``TILE2TRITON_TMA_PIPELINED_ONLY`` | on/off (default on) | copies inside loops load through tensor descriptors only where Triton software-pipelines the loop (``num_stages`` of two or more) or its gemms read the boxes from shared memory; elsewhere (synchronous TMA into registers, a barrier set up, waited on and invalidated per copy) through pointers |
| ``TILE2TRITON_TMA_STAGES`` | on/off (default on) | a box copied into one stage of a ring whose stages are forwarded as tiles (``T.tma_copy(K[.., k:k + n, :], K_shared[bi % 2, :, :])``) loads through a descriptor too, not only a copy into a whole buffer |
| ``TILE2TRITON_TMA_MIN_TRIPS`` | an integer (default 0) | copies in loops of fewer iterations (known when compiling) load through pointers: each program builds its descriptors at its start, a cost a short loop does not repay |
| ``TILE2TRITON_SPLIT_DIMS`` | on/off (default on) | shared/fragment buffers with a dim that is not a power of two (192) as power-of-two parts (128 + 64), a gemm per part, not padded (passes/pow2_split.py) |
| ``TILE2TRITON_TRANSPOSED_DOTS`` | on/off (default on) | on sm_90, a gemm of fewer than 64 rows and at least 64 columns (beside a wgmma-sized gemm, accumulators within the register budget) computed as ``tl.trans(tl.dot(B^T, A^T))``: a wgmma, not an mma.sync that makes ptxas serialize the kernel's wgmmas |
| ``TILE2TRITON_TRIP_BOUNDS`` | on/off (default on) | a loop whose bounds have value ranges (``end = T.min(2, ...)``) counts at most that many iterations for ``TMA_MIN_TRIPS`` and ``SPLIT_MIN_TRIPS``, counted block by block where the bounds come from few block indices (a sliding window's ``end - start``); else only constant bounds count |
| ``TILE2TRITON_HEAVY_FIRST`` | on/off (default on) | the one grid axis whose block index lengthens the kernel's top-level loops of tile work (causal attention's query tiles), and shortens none, is walked slowest and from its last index, so every head's longest block starts first, the heads in runs (``TILE2TRITON_HEAVY_FIRST_GROUP``); kernels whose blocks could wait on one another, with ``T.use_swizzle``, or whose grid is known to fit a block an SM keep their order (codegen/block_order.py; timed in session 53, BENCHMARKS.md) |
| ``TILE2TRITON_HEAVY_FIRST_GROUP`` | count or ``waves`` (default ``waves``) | with ``TILE2TRITON_HEAVY_FIRST``, the other axes' blocks (heads) in runs of this many, one run after another, each walked heaviest first, so the blocks running together read fewer heads' keys and values; ``waves``: runs of about two waves of the device's SMs (codegen/block_order.run_width); 0: the whole grid one run |
| ``TILE2TRITON_SNAKE_ORDER`` | on/off (default on) | a static grid whose blocks all start at once (more blocks than SMs, no more than the SMs hold by the launch's estimated occupancy, on CUDA) and whose one block axis lengthens or shortens the loops: the blocks ranked heaviest first, launch slots ``j`` and ``j + SMs`` (which the GPU hands out round-robin, so to one SM) get a heavy and a light block (every other round of SMs walked back), not two heavy ones (codegen/block_order.py; probed in session 59, timed through the runtime in session 60: BENCHMARKS.md) |
| ``TILE2TRITON_EXACT_RANGES`` | on/off (default off) | a let's value range and an integer comparison also from the exact span of the block indices and loop variables they are computed from (enumerated where they number at most 4096), where intervals are loose: ``k_end - k_start`` with ``k_end = T.min(k_start + 128, n)`` is one value in every block, so the loop over it has a constant trip count and its row masks fold (codegen/rules._same_everywhere) |
| ``TILE2TRITON_SPLIT_MIN_TRIPS`` | an integer (default 4) | loops of fewer iterations (known or bounded when compiling) are not split at their masks (passes/split.py): a second loop is a second pipeline fill a short loop does not repay |
| ``TILE2TRITON_GRID_STAGES`` | on/off (default on) | the short-loop stage choice (runtime/tuning.py) counts only the blocks a static grid puts on one SM: a grid of at most one block an SM takes the deepest pipeline that fits |
| ``TILE2TRITON_OCCUPANCY_STAGES`` | on/off (default on) | an attention loop of unknown or long trip count on a grid of more blocks than SMs takes the stage count (3 or 2) that lets the most blocks share an SM (ties: 3), as short loops do (runtime/tuning.py) |
| ``TILE2TRITON_FEW_TRIP_STAGES`` | on/off (default on) | an attention forward loop (two gemms) that runs at most ``FEW_TRIPS`` (5) iterations in every block (known or bounded when compiling: a sliding window, causal attention over a short sequence), on a grid of more blocks than SMs, takes 2 pipeline stages where 3 would let no more blocks share an SM: a third stage's deeper prefetch is not repaid by so few tiles (runtime/tuning.py) |
| ``TILE2TRITON_HOST_DESCRIPTORS`` | on/off (default on) | descriptors of kernel parameters made on the host per call and passed as arguments, not built by every program (the tl lowering's and the Gluon routes') |
| ``TILE2TRITON_HOST_DESCRIPTOR_CACHE`` | on/off (default on) | with host descriptors, each descriptor's encoded tensormap kept per tensor (address, shape, strides, dtype) and passed to Triton's C launcher directly (runtime/host_descriptors.py) |
| ``TILE2TRITON_KEEP_WORKSPACES`` | on/off (default on) | a ``T.alloc_global`` workspace, and a direct launch's global scratch area, kept between calls per thread and stream, not a ``torch.empty`` per call (runtime/workspaces.py) |
| ``TILE2TRITON_VECTORIZE_LOOPS`` | on/off (default on) | loops without carried dependences as tile axes |
| ``TILE2TRITON_BLOCK_SLICES`` | on/off (default on) | a register tile read at an aligned block of rows (``acc[:4, :]``) through ``tl.reshape`` |
| ``TILE2TRITON_DIGIT_READS`` | on/off (default on) | a register tile read at digit fields of lane variables (``B[i, j // 2]``, ``E[i, k // 16]``, ``A[i, k // 4 * 2 + 1]``) as a reshape and a broadcast, not a ``tl.gather``; a write using every digit of its lanes once (``C[i // 16, j // 16, i % 16, j % 16] = v``) as the tile's digits permuted, not a scatter |
| ``TILE2TRITON_UNIT_RESHAPES`` | on/off (default on) | unit axes of register tiles (a (1, N) fragment, a ``T.Parallel(1, N)`` lane space) inserted and dropped by ``tl.reshape``, which keeps a loaded row's layout, not by ``x[None, :]`` / a sum over the unit axis, which Triton serves through shared memory |
| ``TILE2TRITON_PROVEN_MIN_MAX`` | on/off (default on) | an integer ``T.min`` / ``T.max`` whose value ranges decide it for every block (``T.min(bx * 128 + 128, seq_len)`` with ``bx * 128 + 128 <= seq_len``) is that operand, as TileLang's simplifier folds it: Triton then sees constant trip counts and extents |
| ``TILE2TRITON_SPECULATE_COPIES`` | on/off (default on) | copies under an ``if`` in a pipelined loop issued before it, masked by its condition |
| ``TILE2TRITON_GRID_WARPS`` | on/off (default on) | an attention forward loop (two gemms) whose static grid has at most one block an SM launches with the source's warps (up to 8), not the fewest that hold its accumulators (runtime/tuning.py) |
| ``TILE2TRITON_SHARED_DIVISORS`` | on/off (default on) | without fast math, a float32 ``/`` whose divisor is shared by a row of numerators (``acc_o[i, j] /= logsum[i]``, outside loops, at least 64 quotients a thread) takes the divisor's correctly rounded reciprocal once and corrects each quotient with one FMA pair, one tile-wide range test choosing ``div.rn.f32`` for tiles with extreme values: the bits ``div.rn.f32`` gives (codegen/emit._div_rn_shared; CUDA targets) |
| ``TILE2TRITON_ARITHMETIC_MASKS`` | on/off (default on) | ``T.if_then_else(cond, 0, -inf)`` over a tile, ``cond`` integer comparisons joined by and/or whose differences the value ranges bound, as float arithmetic without a boolean tile (``_neg_inf_unless``: 0 where a margin ``float(a - b) + 0.5`` is positive): the same values, without the bit-packed comparisons LLVM makes of ``tl.where`` (codegen/masks.py; CUDA targets) |
| ``TILE2TRITON_FEW_WARPS`` | on/off (default off) | attention loops of a 1- or 2-warp source keep its warps (runtime/tuning.py) |
| ``TILE2TRITON_REUSE_WARPS`` | on/off (default on) | a block-view kernel without gemms or reductions in its loops that reads global memory in a loop and the same tensor again after it launches with the fewest warps (from the source's) whose resident blocks' re-read bytes fit a fifth of the L2, so the second pass finds them there, else 32 (runtime/tuning.py) |
| ``TILE2TRITON_TILE_WARPS`` | on/off (default on) | a block-view kernel without gemms whose largest tile has fewer elements than its threads launches with one element a thread of it (runtime/tuning.py) |
| ``TILE2TRITON_WS_WARPS`` | on/off (default on) | a warp-specialized source launches with its consumer sections' warps, not its producer's too (runtime/tuning.py) |
| ``TILE2TRITON_SECTION_WARPS`` | on/off (default on) | a kernel that is one chain of thread-range sections without barriers (``if tx < 32: ... else: ...``) launches with its widest section's warps (runtime/tuning.py) |
| ``TILE2TRITON_FORWARD_STAGES`` | on/off (default on) | a copy out of one stage of a staged buffer (``K_shared[bi % 2]``) written whole earlier in the same block reads the written tile, not a select of the buffer (codegen/tile_ops.py) |
| ``TILE2TRITON_GLOBAL_MIRRORS`` | on/off (default on) | a shared buffer that only holds a copy of global elements (an index list) is read from the global tensor after the copy (passes/analysis.py) |
| ``TILE2TRITON_REG_WARPS`` | on/off (default off) | a one-gemm loop whose register tiles a thread of the source's warps cannot hold takes more warps (runtime/tuning.py) |
| ``TILE2TRITON_HELD_WARPS`` | on/off (default on) | a one-gemm loop of wgmma-sized gemms whose fragments (accumulators, a second accumulator) a thread of the source's warps cannot hold takes more warps, up to 8 (runtime/tuning.py) |
| ``TILE2TRITON_DEFER_SUMS`` | on/off (default on) | a loop's sum over a widened axis that only adds into an accumulator the enclosing loop touches nowhere else is added element-wise there and reduced once after that loop (codegen/deferred.py) |
| ``TILE2TRITON_DEFER_REDUCES`` | on/off (default on) | the same for ``T.reduce_sum`` / ``T.reduce_max`` / ... ``(x, acc, dim, clear=False)``: the loop combines ``x`` element-wise into a tile of its shape and reduces it into ``acc`` once after the loop, one cross-thread reduction, not one per iteration (codegen/reductions.py) |
| ``TILE2TRITON_DEFER_REDUCERS`` | on/off (default on) | the same for a reducer's ``acc[i] += v`` summed over the lanes of its ``T.Parallel(i, j)`` that ``i`` does not name (gemv_alloc_reducer: a cross-thread ``tl.sum`` every step otherwise; codegen/atomics._defer_reduction) |
| ``TILE2TRITON_ROW_ONCE`` | on/off (default on) | a row of a global buffer that several ``T.Parallel`` statements of one block read along a lane (an index list: the score mask's and the gathers' ``Indices[..., base + j]``) is loaded once into a fragment before the first of them, each read taking the fragment (passes/row_once.py) |
| ``TILE2TRITON_GLOBAL_COPY_CHUNKS`` | on/off (default on) | a ``T.copy`` from global to global memory larger than 64 elements a thread (padded) runs as a loop of exact parts of its region (a dim that is not a power of two cut into its powers of two first), not as one padded tile loaded whole (passes/global_copy_chunks.py) |
| ``TILE2TRITON_BRANCH_COPIES`` | on/off (default on) | an ``if`` / ``else`` whose branches copy tiles of one global tensor into the same whole buffers from two places is one copy whose start the condition picks, so the software pipeliner stages it (passes/branch_copies.py) |
| ``TILE2TRITON_HELD_LOCALS`` | on/off (default on) | in the thread view, a local array of at most 256 elements whose every index is a constant once the loops that index it are unrolled is held one value per element, those loops unrolled, as nvcc holds it; not one ``[threads, n]`` tile whose element accesses are one-hot selects (passes/held_locals.py, codegen/held.py) |
| ``TILE2TRITON_COMPACT_GUARDED_LOOPS`` | on/off (default on) | a ``T.Pipelined`` loop whose body is one ``if`` on a mask read at the iteration (block-sparse GEMM's ``if BlockMask[by, bx, k]``) runs over the active iterations only, its body unguarded, as TileLang's pipeline counts its stages in active iterations (passes/compact_guarded.py) |
| ``TILE2TRITON_PREFETCH_INDICES`` | on/off (default on) | a loop that reads an element of an index list at its iteration (``k = block_offset[bi]``, then tiles at ``k``) loads the next iteration's element at the top of each iteration into a register the loop carries: its latency runs under an iteration, not before the tile loads (passes/prefetch_indices.py) |
| ``TILE2TRITON_LICM_GUARD`` | on/off (default on) | on sm_90, a loop whose gemms all run as wgmma and read a shared operand stored before it, in a kernel whose gemm accumulators pass the register budget, keeps its loop-invariant values in the loop (``tl.range(..., disable_licm=True)``): hoisted, each wgmma step's shared-memory descriptor of an operand loaded before the loop is a 64-bit register live through it (codegen/rules.keeps_invariants_in_loop) |
| ``TILE2TRITON_GEMM_PARTS`` | on/off (default on) | an mma.sync gemm with few accumulator tiles a warp, accumulating in a loop that touches its accumulator nowhere else, runs its K as parts with an accumulator each (one batched ``tl.dot``), summed once after the loop (codegen/deferred.py) |
| ``TILE2TRITON_SHARED_SCRATCH`` | on/off (default off) | every shared buffer in global scratch (testing) |
| ``TILE2TRITON_ON_CHIP_SCRATCH`` | ``loops`` (default), ``atomics``, ``on``, ``off`` | on CUDA, the scratch area of shared buffers the register path cannot hold (codegen/scratch.py) is a static ``.shared`` array (codegen/on_chip.py) that inline PTX loads, stores and updates (``ld/st/atom.shared``), not per-program global memory: in kernels with atomics on shared buffers or accesses to the area inside loops (``loops``), with atomics only (``atomics``), in every kernel with such an area (``on``), or never (``off``) |
| ``TILE2TRITON_SCRATCH_CTA_ATOMICS`` | on/off (default on) | relaxed atomics on a scratch-backed shared buffer are block-scoped (``scope="cta"``) |
| ``TILE2TRITON_SCRATCH_BLOCK_CLAIMS`` | on/off (default off) | a shared counter's slot claims as one atomic per block and a cumsum (else one atomic per lane) |
| ``TILE2TRITON_VECTORIZE_ATOMIC_LOOPS`` | on/off (default off) | loops whose bodies are branches and commuting atomics with no result also as tile axes |
| ``TILE2TRITON_SCRATCH_HISTOGRAM`` | on/off (default off) | a shared histogram's atomics as ``tl.histogram`` and one atomic per bin |
| ``TILE2TRITON_WARP_AGGREGATED_ATOMICS`` | on/off (default off) | on CUDA, an integer ``T.atomic_add`` into a scratch-backed shared buffer with a value the same in every lane (a histogram, a slot claim) as one atomic per distinct address in each warp (``match.any.sync``; codegen/warp_atomics.py) |
| ``TILE2TRITON_COLUMN_SPLIT`` | on/off (default on) | a shared/fragment buffer used only as static column blocks (``Q[:, :512]``, ``Q[:, 512:]``) as one buffer per block (passes/column_split.py) |
| ``TILE2TRITON_COLUMN_CHUNKS`` | on/off (default on) | in a kernel past the accumulators' register budget, shared/fragment buffers of 256 or more columns (a multiple of 128) that gemms use are computed 128 columns at a time, the statements of one chunk side by side (the gemms reading one shared tile, a dKV chunk's atomics right after its gemms; passes/column_chunks.py) |
| ``TILE2TRITON_ROW_SPLIT`` | ``on`` (default), ``off``, ``always`` | on sm_90, an attention forward (a loop of two gemms or more) on a static grid of at most half the card's SMs in blocks runs each block's query rows as two blocks of half the rows on half the threads, where every statement keeps the rows apart; the Gluon attention routes give way there (passes/row_split.py); ``always``: on any grid and target, the interpreter too (tests) |
| ``TILE2TRITON_ROW_SPLIT_BACKWARD`` | on/off (default on) | with ``TILE2TRITON_ROW_SPLIT``, also an attention backward: rows a gemm sums over where that gemm's product only feeds atomic adds into global memory (dQ: each half adds its part) and rows at a per-block offset (a varlen sequence's start) are split too (passes/row_split.py; H100, session 61: grids of 32-64 blocks 3-21% faster, the two suite backwards it takes 6% faster) |
| ``TILE2TRITON_ROW_SPLIT_WAVES`` | on/off (default on) | with ``TILE2TRITON_ROW_SPLIT=on``, the launch heuristic also splits the rows of a one-kernel attention forward on a larger static grid where the split kernel's blocks, at the launch it would take, run in no more waves than the whole kernel's (blocks an SM holds by registers and shared memory), and where that launch keeps a pipeline, past one wave only where no block index lengthens the loop (not causal): on a 132-SM card, head dim 64 at 96-384 blocks of 128 x 128 tiles, head dim 128 at those tiles not (runtime/tuning.py) |
| ``TILE2TRITON_DEAD_PARTS`` | on/off (default on) | a shared/fragment tile whose every store into global memory puts the elements past a power of two outside the tensor, in every block, is cut there with its gemm, copy and ``T.Parallel`` partners, and what only fed the cut part is not computed (a 256-column convolution tile over 128 filters; passes/dead_parts.py) |
| ``TILE2TRITON_STAGED_ATOMICS`` | on/off (default on) | atomics that read a shared/fragment staging buffer read the values stored into it instead (the stage and its loop go: one ``tl.atomic_add`` of the accumulator; passes/staged_atomics.py) |
| ``TILE2TRITON_SCRATCH_ATOMIC_BARRIERS`` | ``reductions`` (default), ``atomics``, ``keep`` | which barriers between two atomics on one scratch buffer are left out (codegen/scratch.py) |
| ``TRITON_INTERPRET`` | ``1`` | Triton's own switch; read to know the interpreter's mode |
| ``T2T_SUITE_CUDA_AS_CPU`` | ``1`` | ``tile2triton run --device cpu`` / the suite runner: CUDA is mapped onto the CPU |
| ``NO_COLOR`` | any | the command's diagnostics without colour |
| ``TILELANG_TMP_DIR``, ``TILELANG_DEFAULT_TARGET``, ``CUDA_HOME`` / ``CUDA_PATH`` | | ``tilelang.env``'s values, as TileLang reads them |
| ``TL_PERF_REGRESSION_ONLY``, ``TL_PERF_REGRESSION_FORMAT`` | | ``tilelang.testing.regression()``: which cases, ``text`` or ``json`` |

On/off values: ``1``, ``on``, ``true``, ``yes`` and ``0``, ``off``, ``false``, ``no`` (any case); an
empty value is the default. Anything else is an error naming the variable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

# Defaults of the two TMA switches (issue 23, attention backward): behaviour as before until the
# H200 probe (benchmarks/attnbwd_probe.py) has measured them.  Offline (sm_90 SASS, Triton 3.9),
# mha_bwd_bhsd's main kernel at 8 iterations a program: 1352 instructions with descriptors, 808
# without (four in-kernel tensormap creations gone), 12 -> 4 BAR.SYNC an iteration.
TMA_VECTORS_DEFAULT = True
TMA_STAGES_DEFAULT = True
# codegen/descriptors._qualifies: H100, the switch off -> on (gpu_logs/2026-12-06_s44_h100/): kda chunk_bwd_intra
# 714.8 -> 369.5 us, chunk_intra_token_parallel 538.1 -> 274.5, fp8 block mean pooling 24.9 -> 20.3; the suite's
# flash-attention backwards (their preprocess loop) 18.3 / 18.1 / 31.4 -> 18.7 / 18.0 / 31.2. kda chunk_bwd_intra's
# pipelined i_j loops (gemms) went 715 -> 888 us with pointer loads (session 43), so loops Triton pipelines keep TMA
TMA_PIPELINED_ONLY_DEFAULT = True
TMA_MIN_TRIPS_DEFAULT = 17  # H200 probe: no descriptors 26.7 -> 18.8 us at 8 iterations, 159.6 -> 142.0 at 32
# the same probe: gqa_bwd's 192-wide head dim as 128 + 64: 43.2 -> 30.4 us (30 -> 0 spills), varlen 74.5 -> 45.9
SPLIT_DIMS_DEFAULT = True
# the same probe: the 32-row dQ dot as a wgmma (no serialized wgmmas): mha sink 45.2 -> 39.7 us, gqa sink
# 29.7 -> 26.9, mha window 27.7 -> 26.9; gqa_bwd split 30.4 -> 29.8 but varlen 45.9 -> 58.1 (more
# spills): not where the accumulators fill the registers (codegen/gemm_kinds.transposed_dot)
TRANSPOSED_DOTS_DEFAULT = True
# issue 23, short attention loops (attention-sink forward: 1-2 iterations a block; split-KV decode:
# a 64-block grid).  The H200 probe (benchmarks/sinkfwd_probe.py) ran but its output was lost, so
# these defaults rest on offline sm_90 builds and earlier measurements:
# - trip bounds: the sink loop (at most 2 iterations) then loads as main's measured short-loop rule
#   (TMA_MIN_TRIPS) loads static loops: no in-kernel tensormaps (TTGIR: 4 -> 0 tensormap ops,
#   cp.async pipelined), the structure of mha_fwd_bshd at the suite's size (1.47x of TileLang);
# - split minimum 3: a loop of at most 2 iterations split in two has nothing to pipeline in
#   either part (the second part's loads wait for the first part to drain);
# - grid stages: only where the occupancy rule chose 1 stage (no prefetch at all): GQA forward
#   and split-KV decode at the suite's sizes, 1 -> 3 stages; no other kernel of the suite changes.
# H200 probe (benchmarks/attnbwd_probe.py, gpu_logs/2026-12-02_s10_probe_attnbwd.log): the attention-sink
# backward loops (4-16 iterations a block, counted from their ranges) through pointers: mha 59.1 -> 45.2 us,
# gqa 41.9 -> 29.7, mha window 35.8 -> 27.7 (the same rule as the sink forward's T.min-bounded loops)
TRIP_BOUNDS_DEFAULT = True
# on: runs of about two waves heaviest first against launch order (H100, session 53, benchmarks/heavy_first_sweep.py):
# causal mha forwards 1.00x (64 blocks), 1.31x, 1.19x, 1.02x, 1.05x, 1.00x (8192 blocks, 512 MB of keys and values);
# the suite's causal forwards (two pairs each) mha_fwd_bshd 1.34x, gqa_fwd_bshd 1.15x, mha_sink_fwd 1.19x, mha_fwd_varlen
# 1.20x; block-sparse attention (128 blocks, under one wave) 0.0092 / 0.0087 -> 0.0094 / 0.0092 ms, now left in order
HEAVY_FIRST_DEFAULT = True
HEAVY_FIRST_GROUP_DEFAULT = None  # runs of about two waves (codegen/block_order.run_width)
# on: the causal attention backward of example_mha_bwd_bshd (2 x 8 heads x 1024, 64 x 64 tiles: 256 blocks, two an SM on
# 132 SMs) 39.99 -> 33.35 us (TileLang 31.66) on an H100 (session 59, benchmarks/hand_variants/bwd_pairing_probe.py,
# which also recorded each block's SM: launch slots j and j + 132 ran on one SM, both of the heaviest blocks in launch order)
SNAKE_ORDER_DEFAULT = True
# off: block mean pooling (dsa_hisa), its 2-step loop a constant range(2) with the masks folded, ran 0.0220 ms against
# 0.0204 as before on an H100 (ptxas issued the second step's load after the first step's conversions;
# gpu_logs/2026-12-06_s46_h100/probes.md); no kernel measured faster yet
EXACT_RANGES_DEFAULT = False
# benchmarks/split_probe.py --three (H100, Triton 3.6, session 35): loops of 3 tiles split 2 + 1 against whole,
# kernel us: causal 384 keys dim 64 10.02 vs 9.54, dim 128 21.43 vs 19.47, window 256 dim 128 29.62 vs 28.31,
# window 256 dim 64 26.81 vs 27.22: whole in 3 of 4, so 3 tiles stay whole
SPLIT_MIN_TRIPS_DEFAULT = 4
GRID_STAGES_DEFAULT = True
OCCUPANCY_STAGES_DEFAULT = True
# benchmarks/window_warps_sweep.py (H100, Triton 3.6, session 48): the sink forward at 2-3 key tiles a block, 2 stages
# faster than 3 in 15 of 18 pairs (4 and 8 warps, 64-2048 blocks; 1-10%), at 5 tiles in 7 of 8 (1-4%), at 9 slower
# in 3 of 4 (mha_inference's 8-iteration split: 3 stages, 2 -> 3: 23.7 -> 19.0 us).  Session 49 (H100): on the
# suite's 64-block forwards (1-2 tiles) 2 stages were 4-8% slower (mha_fwd_bhsd 10.1 -> 10.9 us), where the sweep's
# 64-block rows had 2 faster by 2-7%: mixed there, so the rule takes only grids of more blocks than SMs (9 of 9
# sweep rows there faster on 2)
FEW_TRIP_STAGES_DEFAULT = True
GRID_WARPS_DEFAULT = True
# on: kernel time down (probe), but about 20 us more host time per call on Triton 3.6 (suite part 1).
# Session 10 probe (H200, Triton 3.6, a flash-attention forward B1 H32 S256 D64, 2 descriptors):
# with the encoded maps cached the host cost is gone (event 18.46 -> 10.50 us) but pointers still
# win there (event 10.08 us, kernel 6.14 vs 6.37 us under CUDA graphs).  On by default (coordinator):
# session 9's suite part 1 measured the kernels of the suite's flash-attention cases with host
# descriptors (mha_bwd kernel 0.54x -> 0.91x of TileLang, mha_fwd_bhsd 0.68x -> 0.87x); the cost
# that kept them off was the ~20 us of host time the cache now removes
HOST_DESCRIPTORS_DEFAULT = True
# same probe: per-call loop 37.2 -> 24.8 us, do_bench event 18.46 -> 10.50 us, kernel unchanged
HOST_DESCRIPTOR_CACHE_DEFAULT = True
# KEEP_WORKSPACES (session 28, H200 host): torch.empty from Python 5.7 us a tensor; example_mha_inference's
# call makes two workspaces and its output
KEEP_WORKSPACES_DEFAULT = True

# issue 23 (mhc_pre, minference): launch warps and staged reads from the source's structure.
# H200 probe (benchmarks/mhcminf_probe.py, gpu_logs/2026-12-02_s10_probe_mhcminf.log):
# SECTION_WARPS: mhc_pre's big_fuse 94.2 -> 29.9 us (n=2048, h=4096), 35.5 -> 15.6 (n=1024, h=2560);
# FORWARD_STAGES + GLOBAL_MIRRORS + WS_WARPS together: minference's kernel 258.4 -> 232.9 us
# (seq 16384; each alone or the first two without WS_WARPS: 263-283); REG_WARPS: mhc_pre's
# gemm_sqrsum 98.5 -> 105.9 and 64.5 -> 68.1 us, so it stays off
WS_WARPS_DEFAULT = True
REG_WARPS_DEFAULT = False
# HELD_WARPS (wgmma loops; benchmarks/gemm_warps_sweep.py, session 27): a 128 x 256 accumulator at 128
# threads 4.6-7.9x faster at 8 warps on every grid; gemm_fp8_2xAcc's second accumulator 7-20% faster on
# grids of at most one block an SM, slower past it (kept there)
HELD_WARPS_DEFAULT = True
SECTION_WARPS_DEFAULT = True
FORWARD_STAGES_DEFAULT = True
GLOBAL_MIRRORS_DEFAULT = True

# passes/forward_shared.py: on from offline evidence (the session 10 probe did not run): the sparse MLA
# forward's kernel compiles (Triton 3.6, sm_90) to 8 warps, 255 registers, no spills, 221440 B of shared
# memory, as the hand block-view kernel measured at 50 us on the H200 (this lowering without it: 814-904 us)
FORWARD_SHARED_DEFAULT = True

# codegen/deferred.py (issue 23, mhc_pre's gemm_sqrsum): from offline evidence (sm_90) and the session
# 10 probe's hand edit of the generated text (the sqrsum added element-wise: 98.5 -> 88.5 us). The main
# loop a warp runs per iteration (4 warps, Triton 3.9): 1023 instructions as before, 725 with DEFER_SUMS
# (no shuffles; 27 spill stores), 512 with GEMM_PARTS too (4 K parts: 8 independent mma chains of 8,
# not 2 of 32; no spills); Triton 3.6: 1021 -> 513.  H200 probe (benchmarks/mhcminf_probe.py, Triton 3.6,
# gpu_logs/2026-12-02_s11_probes2.log): gemm_sqrsum at the suite's n=2048 h=4096 100.0 us both off, 77.2
# with one of them on (GEMM_PARTS=0: 88.1, DEFER_SUMS=0: 77.2), 61.5 both on; n=1024 h=2560 64.3 -> 39.7
DEFER_SUMS_DEFAULT = True
# codegen/atomics._defer_reduction: TileLang's gemv_alloc_reducer (4096 x 4096, 32 blocks) ran 183 us against
# TileLang's 24 us in session 15's suite run (gpu_logs/2026-12-02_s15_regression_json, gemv's sixth kernel), a
# cross-thread tl.sum of a 128 x 128 tile every step; deferred, one after the loop.  H200 probe
# (benchmarks/reducer_probe.py, Triton 3.6, gpu_logs/2026-12-02_s16_gpu_checks.log), off -> on, us: 4096 x 4096
# 185.1 -> 43.1, 8192 x 1024 51.8 -> 15.5, 1000 x 3000 140.4 -> 32.7, 16384 x 8192 401.4 -> 95.2
DEFER_REDUCERS_DEFAULT = True
# codegen/reductions._deferring_loop: fp8 block mean pooling (dsa_hisa, a 64 x 128 fp8 tile summed over its rows into
# acc every iteration, 8 warps), H100: 31.0 -> 25.0 us (TileLang 14.9); Nsight Compute put 80% of the kernel's
# shared-load wavefronts in bank conflicts, Triton's cross-warp step of the axis-0 sum.  At 5 shapes 12-30% faster
DEFER_REDUCES_DEFAULT = True
GEMM_PARTS_DEFAULT = True
# codegen/rules.keeps_invariants_in_loop: sparse MLA backward (Nsight Compute, H200, session 17: TileLang 171 us,
# 50 MB of local-memory loads; tile2triton 288 us, 534 MB): LLVM's LICM hoists every wgmma step's descriptor of the
# operands loaded before the loop (Q, dO, their transposes: about 100 64-bit values) out of it, and ptxas spills
# them; offline (Triton 3.9, sm_90) the loop's LDL 198 -> 73, spill stores/loads 1152/1216 -> 460/472 bytes
LICM_GUARD_DEFAULT = True
# passes/prefetch_indices.py: minference's vertical-slash kernel (H200, Triton 3.6, session 18, hand edit of the
# generated kernel at seq 16384): its slash loop stalled 11% of its samples on the scalar block_offset load at
# the loop head; loaded one iteration ahead, 213.9 -> 190.6 us
PREFETCH_INDICES_DEFAULT = True
# passes/compact_guarded.py (H100, Triton 3.6, session 35, benchmarks/hand_variants/blocksparse_gemm_variants.py
# --compact-source): TileLang's block-sparse GEMM as generated against its compacted form, kernel us at 3 shapes x
# mask densities 0.2 / 0.5 / 0.8: 1024^3 11.7/12.6/14.0 -> 7.8/9.7/11.9, 2048x1024x2560 24.1/28.9/33.2 ->
# 16.0/21.1/28.3, 4096^2x2048 86.9/104.4/119.9 -> 46.4/80.7/115.4 (TileLang 9.0/11.5/14.1, 17.0/22.9/30.3,
# 84.2/136.6/186.6); the suite's kernel ratios with it: blocksparse_gemm 1.21x, seer block_sparse_attn 1.10x
COMPACT_GUARDED_LOOPS_DEFAULT = True
# passes/row_once.py: TileLang's pipelined sparse MLA forward (H200, Triton 3.6, session 20, hand edit of the
# generated kernel at the suite's shape, benchmarks/hand_variants/mla_pipe_variants.py): the iteration's index
# list loaded once instead of seven times, 56.5 -> 53.2 us
ROW_ONCE_DEFAULT = True
# passes/global_copy_chunks.py: sparse MLA backward's postprocess (64 x 576 fp32 -> bf16, 128 threads) was one
# 64 x 1024 tile, 5.7 KB of spills a thread offline (Triton 3.6, sm_90); as a loop of 16 x 512 copies and a 64 x 64 one, none
GLOBAL_COPY_CHUNKS_DEFAULT = True
# passes/held_locals.py: example_hadamard (256 threads, 128 floats a thread) ran at 0.01x of TileLang with its array
# as one [256, 128] tile, every element access a one-hot select
HELD_LOCALS_DEFAULT = True
# passes/branch_copies.py: block_causal_varlen_fwd (0.82x of TileLang) copied K and V under an if/else, unpipelined
BRANCH_COPIES_DEFAULT = True
# codegen/registers.split_read: example_dequant_gemm_fp4_hopper's nibble read B[i, j // 2] was a tl.gather, 64
# shuffles a thread per K step (offline SASS, Triton 3.6, sm_90); gemm_sp rebuilt A by two gathers a step;
# example_gemm_intrinsics' epilogue staged C through global scratch (a 4-D block buffer written at i // 16, i % 16)
DIGIT_READS_DEFAULT = True
# codegen/registers.with_unit_axes: rms_norm_splitk's (1, 512) row tiles (0.69x of TileLang on an H100) and layernorm's
# (1, 8192) (0.79x) took an expand_dims of each loaded row, a layout conversion through shared memory a K step
UNIT_RESHAPES_DEFAULT = True
# codegen/intrinsics.lower_call: block_mean_pooling's k_end = T.min(k_start + 128, seq_len) left its loop's trip count
# to run time, where TileLang's simplifier folds it to 2 iterations
PROVEN_MIN_MAX_DEFAULT = True
# runtime/tuning._tile_warps: gdn cumsum (64 elements, 256 threads) 0.0384 -> 0.0279 ms on an H100 (TileLang 0.0254); none
# of the 60 TileLang-suite kernels built offline (session 40) takes the rule
TILE_WARPS_DEFAULT = True
# runtime/tuning._reuse_warps: rms_norm_splitk (fp32, 512-element tiles, 128 threads, its second pass re-reading the
# row), H100 (benchmarks/reduce_warps_sweep.py, gpu_logs/2026-12-06_s43_h100/): at 8192 x 8192 4 warps 261.5 us, 8
# 242.7, 16 198.9, 32 183.9 (TileLang 180.8: 79 registers, 6 blocks an SM); Nsight Compute: both DRAM-bound,
# tile2triton moving ~1.4x TileLang's bytes at 4 warps.  At all 7 shapes swept the rule's choice was the fastest
REUSE_WARPS_DEFAULT = True
# passes/staged_atomics.py (H200 probe benchmarks/mlabwd_probe.py, Triton 3.6: sparse MLA bwd 0.462 -> 0.245
# ms at S=256 SKV=512 topk=256, 1.759 -> 0.905 at S=512 SKV=2048 topk=512; hand-T 0.251 / 0.912): TileLang's
# sparse MLA backward's dKV atomics read the accumulator, as the hand kernel's do, not a 32 KiB stage per program in global scratch behind a
# gather and a one-hot scatter; at the regression size spills 2020/2468 -> 1156/1200 bytes (st/ld),
# barriers 36 -> 26, st.shared 153 -> 60; at one pipeline stage the kernel matches hand-T's counts
# (184320 B shared, 176 wgmma, 18 red.v4, 78 ld.global)
STAGED_ATOMICS_DEFAULT = True
# passes/column_chunks.py (H200 probe benchmarks/mlabwd_interleave_probe.py, Triton 3.6, session 25: hand-written
# chunked sparse MLA backward, 128-column chunks with S's and dP's gemms side by side, against the generated
# kernel): 0.1857 -> 0.1424 ms at S=256 SKV=512 topk=256, 0.6688 -> 0.5006 at 512/2048/512, 0.3871 -> 0.2928 at
# 384/1024/384; offline, the loop's local loads 83 -> 0 (the KV tile's wgmma descriptors no longer spilled)
COLUMN_CHUNKS_DEFAULT = True
# passes/dead_parts.py (H100, session 54): example_convolution_autotune's 128 x 256 tile over F = 128 filters
# computed 128 wide, 0.6404 -> 0.2847 ms (TileLang 0.5970: 0.92x -> 2.00x); F = 192 was not cut (two dots slower)
DEAD_PARTS_DEFAULT = True
# passes/row_split.py (H100, session 55, benchmarks/row_split_probe.py: the sink forward at 64-row tiles on 128
# threads against 128-row tiles on 256): grids of 32 and 64 blocks 15-25% faster in six of six shapes (the suite's
# 13.54 -> 11.42 us); head dim 128 at 128 blocks 15.14 -> 17.18 and 256 blocks 38.91 -> 41.18 slower (dim 64 at 256
# blocks 21.70 -> 16.80 faster): only grids under half a wave
ROW_SPLIT_DEFAULT = "on"
# passes/row_split.py's backward rows (H100, session 61, tools/gpu_pending_checks.sh part s60,
# gpu_logs/2026-12-08_s61_h100/): TileLang's varlen GQA backward source at 64-row key tiles on 128 threads against
# 128 on 256, grids of 32-64 blocks: 3-21% faster through tile2triton (7 of 7 shapes), 6-19% through TileLang; at 128
# blocks and more (past half a wave, where the pass's grid rule stops) 79-94% slower; the two suite backwards it
# takes, on / off: example_gqa_bwd_tma_reduce_varlen 35.0 -> 33.0 us, example_gqa_bwd 31.6 -> 29.7 us
ROW_SPLIT_BACKWARD_DEFAULT = True
# runtime/tuning._rows_split past half a wave (H100, session 56, benchmarks/row_split_probe.py, the sink forward and
# example_mha_fwd_bhsd, gpu_logs/2026-12-07_s56_h100/row_split_sweep_*.md): split forced against whole (--sweep grids),
# where the split grid needs no more waves (96-192 blocks of head dim 64) 3-23% faster in 6 of 6 shapes, where it
# needs more (dim 128 at 96-1024 blocks, dim 64 at 256-1024) up to 45% slower, or faster by 5-25% in 3 of 16 (not
# taken); the rule on against off (--sweep waves, 160-384 blocks of dim 64 split): 8 of 10 shapes 1-30% faster, 2 of
# 10 3-6% slower (the sink forward at 384 blocks of 6-8 key tiles); dim 128 (not split) within 2%.  Session 57: the
# mha source on 128 threads 14-24% faster at 160-384 blocks, example_mha_fwd_bshd@2 (causal, 384 blocks) 6% slower:
# past one wave only loops of the same trips in every block (or a sliding window's) are split
ROW_SPLIT_WAVES_DEFAULT = True
# passes/forward_rings.py: on from offline evidence (Triton 3.9, sm_90): minference's vertical-slash kernel
# 255 -> 123 registers, its column loop's gathers pipelined (cp.async) instead of a [2, 64, 64] ring carried in
# registers through both loops; H200 probe (benchmarks/mhcminf_probe.py, Triton 3.6, with UNIFORM_BRANCHES):
# seq 8192 150.1 -> 140.8 us, 32768 381.2 -> 304.6 us (MInference's own Triton kernel: 279.0)
FORWARD_RINGS_DEFAULT = True
# codegen/rules._uniform_branch: the same kernel's column loop sits under `if column_count != 0:`; as a mask on
# each statement its body became three `if any_thread:` branches, which Triton's pipeliner does not look into
UNIFORM_BRANCHES_DEFAULT = True
# codegen/emit._size_multiples: example_dynamic at M, N, K = 3000, 2600, 1000 (offline, Triton 3.9, sm_90):
# without it 2-byte ld.global, one stage, 255 registers; with it 16-byte cp.async, 3 stages, 168 registers.
# H200, Triton 3.6 (benchmarks/dynamic_probe.py, session 13): 3000 x 2600 x 1000 0.1168 -> 0.0625 ms (TileLang
# 0.079), 4096^3 0.2413 -> 0.2454 ms, 3001 x 2601 x 1001 (odd: multiple 1) 0.1172 -> 0.1179 ms, outputs unchanged
SIZE_MULTIPLES_DEFAULT = True
# codegen/intrinsics.shared_divisor_div_rn: div.rn.f32 is per element a reciprocal, a range check (FCHK) and a
# branch to a slow path, and ptxas keeps each element's chain apart (an attention epilogue's 128 quotients a
# thread: about 40 cycles each, one after another).  Session 15's form (inline PTX with that branch per element)
# saved nothing; session 23's (codegen/emit._div_rn_shared: one tile-wide test, then an FMA correction per
# quotient; H200, Triton 3.6, gpu_logs/2026-12-04_s23_division.log): mha_inference's split kernel 25.9 -> 24.1 us
# (fast math's approximate `/` 22.0; the fast path without its test 22.2: the test is what is left), the sink
# forward with 64-key tiles 43.1 -> 38.9 us, mha_bhsd 49.9 -> 49.0, bits unchanged; softmax rows of 8 quotients
# a thread 14.6 -> 16.0 us and vertical-slash's 32 a thread no faster, hence its minimum of 64 a thread
# (SHARED_DIVISOR_MIN_PER_THREAD)
SHARED_DIVISORS_DEFAULT = True
# attention masks as float arithmetic (codegen/masks.py): on the H200 (Triton 3.6, session 31,
# gpu_logs/2026-12-04_s31_calls.log, kernel us) the sink forward 10.61 -> 10.25 (1x32 heads, 256 keys, window
# 128), 20.64 -> 19.45 (2x24, 384/640, window 128), 25.86 -> 25.61 (causal), mha_fwd_bhsd 12.96 -> 12.52
# (2x16, 384/640) and 17.73 -> 16.83 (1x16, 1024), outputs bit for bit the same; none slower
ARITHMETIC_MASKS_DEFAULT = True
# the scratch area of shared buffers as a static .shared array on CUDA (codegen/on_chip.py), where the kernel has
# atomics on shared buffers: the H200 probe (gpu_logs/2026-12-02_s15_on_chip.log, benchmarks/topk_probe.py) ran
# TileLang's topk_selector 79.4 -> 32.5 us at 64 x 32768, 113.0 -> 52.5 at 32 x 65536 (recall 1.0000), its
# histograms 1.3-3.4x faster; but the suite's example_gemm_intrinsics, whose only scratch access is its epilogue
# tile staged through a permuted shared buffer (plain element stores and loads), went 17.4 -> 18.6 us kernel time
# on chip (unvectorized inline-PTX accesses where global scratch has vector stores through L2). "loops" adds kernels
# that access the area inside a loop: H100, default / on / off (gpu_logs/2026-12-06_s44_h100/probes.md): dsa
# indexer_topk_reducesum's bitonic sort 5.18 / 4.20 / 5.20 ms; hadamard, whose two row exchanges are made once,
# 0.238 / 0.343 / 0.238 (it keeps global memory)
ON_CHIP_SCRATCH_DEFAULT = "loops"

_ON = ("1", "on", "true", "yes")
_OFF = ("0", "off", "false", "no")

VARIABLES = (
    "TILE2TRITON_CACHE_DIR",
    "TILE2TRITON_DISABLE_CACHE",
    "TILE2TRITON_DEBUG",
    "TILE2TRITON_TUNE",
    "TILE2TRITON_PER_THREAD_LOADS",
    "TILE2TRITON_THREAD_COPY_TILES",
    "TILE2TRITON_FORWARD_SHARED",
    "TILE2TRITON_FORWARD_RINGS",
    "TILE2TRITON_UNIFORM_BRANCHES",
    "TILE2TRITON_SIZE_MULTIPLES",
    "TILE2TRITON_SHARED_DIVISORS",
    "TILE2TRITON_ARITHMETIC_MASKS",
    "TILE2TRITON_TENSOR_DESCRIPTORS",
    "TILE2TRITON_TMA_VECTORS",
    "TILE2TRITON_TMA_MIN_TRIPS",
    "TILE2TRITON_TMA_STAGES",
    "TILE2TRITON_TMA_PIPELINED_ONLY",
    "TILE2TRITON_SPLIT_DIMS",
    "TILE2TRITON_TRANSPOSED_DOTS",
    "TILE2TRITON_HOST_DESCRIPTORS",
    "TILE2TRITON_TRIP_BOUNDS",
    "TILE2TRITON_HEAVY_FIRST",
    "TILE2TRITON_HEAVY_FIRST_GROUP",
    "TILE2TRITON_SNAKE_ORDER",
    "TILE2TRITON_EXACT_RANGES",
    "TILE2TRITON_SPLIT_MIN_TRIPS",
    "TILE2TRITON_GRID_STAGES",
    "TILE2TRITON_OCCUPANCY_STAGES",
    "TILE2TRITON_FEW_TRIP_STAGES",
    "TILE2TRITON_GRID_WARPS",
    "TILE2TRITON_HOST_DESCRIPTOR_CACHE",
    "TILE2TRITON_KEEP_WORKSPACES",
    "TILE2TRITON_GLUON",
    "TILE2TRITON_GLUON_SCHEDULE",
    "TILE2TRITON_VECTORIZE_LOOPS",
    "TILE2TRITON_DEFER_SUMS",
    "TILE2TRITON_DEFER_REDUCERS",
    "TILE2TRITON_DEFER_REDUCES",
    "TILE2TRITON_GEMM_PARTS",
    "TILE2TRITON_LICM_GUARD",
    "TILE2TRITON_PREFETCH_INDICES",
    "TILE2TRITON_COMPACT_GUARDED_LOOPS",
    "TILE2TRITON_ROW_ONCE",
    "TILE2TRITON_GLOBAL_COPY_CHUNKS",
    "TILE2TRITON_HELD_LOCALS",
    "TILE2TRITON_BRANCH_COPIES",
    "TILE2TRITON_SHARED_SCRATCH",
    "TILE2TRITON_ON_CHIP_SCRATCH",
    "TILE2TRITON_BLOCK_SLICES",
    "TILE2TRITON_DIGIT_READS",
    "TILE2TRITON_UNIT_RESHAPES",
    "TILE2TRITON_PROVEN_MIN_MAX",
    "TILE2TRITON_SPECULATE_COPIES",
    "TILE2TRITON_FEW_WARPS",
    "TILE2TRITON_WS_WARPS",
    "TILE2TRITON_TILE_WARPS",
    "TILE2TRITON_REUSE_WARPS",
    "TILE2TRITON_REG_WARPS",
    "TILE2TRITON_HELD_WARPS",
    "TILE2TRITON_SECTION_WARPS",
    "TILE2TRITON_FORWARD_STAGES",
    "TILE2TRITON_GLOBAL_MIRRORS",
    "TILE2TRITON_SCRATCH_CTA_ATOMICS",
    "TILE2TRITON_SCRATCH_ATOMIC_BARRIERS",
    "TILE2TRITON_SCRATCH_BLOCK_CLAIMS",
    "TILE2TRITON_SCRATCH_HISTOGRAM",
    "TILE2TRITON_WARP_AGGREGATED_ATOMICS",
    "TILE2TRITON_VECTORIZE_ATOMIC_LOOPS",
    "TILE2TRITON_COLUMN_SPLIT",
    "TILE2TRITON_STAGED_ATOMICS",
    "TILE2TRITON_COLUMN_CHUNKS",
    "TILE2TRITON_DEAD_PARTS",
    "TILE2TRITON_ROW_SPLIT",
    "TILE2TRITON_ROW_SPLIT_WAVES",
    "TILE2TRITON_ROW_SPLIT_BACKWARD",
    "TRITON_INTERPRET",
    "T2T_SUITE_CUDA_AS_CPU",
    "NO_COLOR",
    "TILELANG_TMP_DIR",
    "TILELANG_DEFAULT_TARGET",
    "CUDA_HOME",
    "CUDA_PATH",
    "TL_PERF_REGRESSION_ONLY",
    "TL_PERF_REGRESSION_FORMAT",
)


class SettingError(ValueError):
    """An environment variable of tile2triton's with a value it does not understand."""


def flag(name: str, raw: str | None, default: bool | None) -> bool | None:
    """The one parser of on/off switches: ``default`` when unset or empty."""
    value = (raw or "").strip().lower()
    if not value:
        return default
    if value in _ON:
        return True
    if value in _OFF:
        return False
    raise SettingError(f"{name}={raw!r}: expected one of {', '.join(_ON + _OFF)}")


def _count(name: str, raw: str | None, default: int) -> int:
    """A non-negative integer: ``default`` when unset or empty."""
    value = (raw or "").strip()
    if not value:
        return default
    if not value.isdigit():
        raise SettingError(f"{name}={raw!r}: expected a non-negative integer")
    return int(value)


def _run_count(name: str, raw: str | None, default: int | None) -> int | None:
    """A non-negative integer, or None for ``waves``: ``default`` when unset or empty."""
    value = (raw or "").strip().lower()
    if not value:
        return default
    return None if value == "waves" else _count(name, value, 0)


def _choice(name: str, raw: str | None, choices: dict[str, str], default: str) -> str:
    value = (raw or "").strip().lower()
    if not value:
        return default
    if value in choices:
        return choices[value]
    raise SettingError(f"{name}={raw!r}: expected one of {', '.join(sorted(choices))}")


_TUNE = {**dict.fromkeys(_OFF, "off"), **dict.fromkeys(("heuristic", "1", "on", "true", "yes"), "heuristic")}
_TUNE.update({"search": "search", "2": "search"})
_GLUON = {**dict.fromkeys(_OFF, "off"), **dict.fromkeys(_ON, "on"), "log": "log", "force": "force"}
_SCHEDULES = {"auto": "auto", "rotated": "rotated", "serial": "serial"}  # codegen/gluon_plan.SCHEDULES
_ATOMIC_BARRIERS = {"reductions": "reductions", "atomics": "atomics", "keep": "keep"}
_ROW_SPLIT = {**dict.fromkeys(_OFF, "off"), **dict.fromkeys(_ON, "on"), "always": "always"}
_ON_CHIP = {**dict.fromkeys(_OFF, "off"), **dict.fromkeys(_ON, "on"), "atomics": "atomics", "loops": "loops"}


@dataclass(frozen=True)
class Settings:
    cache_dir: str
    disable_cache: bool
    debug: bool
    tune: str  # "heuristic", "off" or "search"
    per_thread_loads: bool
    thread_copy_tiles: bool  # passes/thread_copies.py
    forward_shared: bool  # passes/forward_shared.py (implies the thread copies)
    forward_rings: bool  # passes/forward_rings.py
    uniform_branches: bool  # codegen/rules._uniform_branch
    size_multiples: bool  # codegen/emit._size_multiples
    shared_divisors: bool  # codegen/intrinsics.shared_divisor_div_rn
    arithmetic_masks: bool  # codegen/masks.py
    tensor_descriptors: bool | None  # None: the card decides (runtime/target.py)
    gluon: str  # "on", "off", "log" or "force"
    gluon_schedule: str  # "auto", "rotated" or "serial"
    tma_vectors: bool  # one-axis boxes through tensor descriptors as well
    tma_min_trips: int  # loops of fewer static iterations load through pointers (0: no minimum)
    tma_stages: bool  # a box copied into one forwarded stage of a ring through a descriptor too
    tma_pipelined_only: bool  # descriptors only in loops Triton software-pipelines
    split_dims: bool  # passes/pow2_split.py
    transposed_dots: bool  # codegen/tile_ops.py: small-M gemms as their transposes on sm_90
    host_descriptors: bool  # descriptors of kernel parameters made on the host
    trip_bounds: bool  # loop iterations bounded by value ranges, not only constant bounds
    heavy_first: bool  # codegen/block_order.py: the axis that lengthens the loops walked slowest, last first
    heavy_first_group: int | None  # ... in runs of this many blocks of the other axes (0: one run; None: ~2 waves)
    snake_order: bool  # codegen/block_order.py: a grid that starts whole, heavy and light blocks paired on the SMs
    exact_ranges: bool  # lets' ranges and comparisons from exact spans (passes/analysis.Ranges.span)
    split_min_trips: int  # loops of fewer iterations are not index-set split (0: any)
    grid_stages: bool  # the short-loop stage choice counts the blocks a static grid puts on an SM
    occupancy_stages: bool  # longer attention loops on large grids: the stages that let the most blocks share an SM
    few_trip_stages: bool  # attention forward loops of at most FEW_TRIPS iterations: 2 stages, not 3
    grid_warps: bool  # an attention forward on a grid of at most one block an SM keeps the source's warps
    host_descriptor_cache: bool  # their encoded tensormaps kept per tensor (runtime/host_descriptors.py)
    keep_workspaces: bool  # T.alloc_global buffers kept between calls per thread and stream (runtime/workspaces.py)
    vectorize_loops: bool
    shared_scratch: bool
    on_chip_scratch: str  # codegen/on_chip.py (CUDA): "atomics", "on" or "off"
    block_slices: bool
    digit_reads: bool  # codegen/registers.split_read
    unit_reshapes: bool  # codegen/registers.with_unit_axes
    proven_min_max: bool  # codegen/intrinsics.lower_call
    speculate_copies: bool
    few_warps: bool
    ws_warps: bool
    tile_warps: bool  # runtime/tuning._tile_warps
    reuse_warps: bool  # runtime/tuning._reuse_warps
    reg_warps: bool
    held_warps: bool
    section_warps: bool
    forward_stages: bool
    global_mirrors: bool
    scratch_cta_atomics: bool
    scratch_atomic_barriers: str  # "reductions", "atomics" or "keep"
    scratch_block_claims: bool
    scratch_histogram: bool
    warp_aggregated_atomics: bool  # codegen/warp_atomics.py
    vectorize_atomic_loops: bool
    column_split: bool
    defer_sums: bool
    defer_reducers: bool
    defer_reduces: bool  # codegen/reductions._deferring_loop
    gemm_parts: bool
    licm_guard: bool  # codegen/rules.keeps_invariants_in_loop
    prefetch_indices: bool  # passes/prefetch_indices.py
    compact_guarded_loops: bool  # passes/compact_guarded.py
    row_once: bool  # passes/row_once.py
    global_copy_chunks: bool  # passes/global_copy_chunks.py
    held_locals: bool  # passes/held_locals.py
    branch_copies: bool  # passes/branch_copies.py
    staged_atomics: bool  # passes/staged_atomics.py
    column_chunks: bool  # passes/column_chunks.py
    dead_parts: bool  # passes/dead_parts.py
    row_split: str  # passes/row_split.py: "on", "off" or "always"
    row_split_waves: bool  # runtime/tuning._rows_split: past half a wave where the split adds no wave
    row_split_backward: bool  # passes/row_split.py: partial sums into atomics, rows at an offset
    interpret_env: bool  # TRITON_INTERPRET=1 is set
    cuda_as_cpu: bool
    no_color: bool
    tilelang_tmp_dir: str | None
    tilelang_default_target: str
    cuda_home: str | None
    regression_only: tuple  # lower-case case-name fragments; empty: all
    regression_format: str  # "text" or "json"

    @classmethod
    def from_environment(cls, env) -> Settings:
        get = env.get
        return cls(
            cache_dir=get("TILE2TRITON_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "tile2triton"),
            disable_cache=flag("TILE2TRITON_DISABLE_CACHE", get("TILE2TRITON_DISABLE_CACHE"), False),
            debug=flag("TILE2TRITON_DEBUG", get("TILE2TRITON_DEBUG"), False),
            tune=_choice("TILE2TRITON_TUNE", get("TILE2TRITON_TUNE"), _TUNE, "heuristic"),
            per_thread_loads=flag("TILE2TRITON_PER_THREAD_LOADS", get("TILE2TRITON_PER_THREAD_LOADS"), True),
            thread_copy_tiles=flag("TILE2TRITON_THREAD_COPY_TILES", get("TILE2TRITON_THREAD_COPY_TILES"), False),
            forward_shared=flag(
                "TILE2TRITON_FORWARD_SHARED", get("TILE2TRITON_FORWARD_SHARED"), FORWARD_SHARED_DEFAULT
            ),
            forward_rings=flag("TILE2TRITON_FORWARD_RINGS", get("TILE2TRITON_FORWARD_RINGS"), FORWARD_RINGS_DEFAULT),
            uniform_branches=flag(
                "TILE2TRITON_UNIFORM_BRANCHES", get("TILE2TRITON_UNIFORM_BRANCHES"), UNIFORM_BRANCHES_DEFAULT
            ),
            size_multiples=flag(
                "TILE2TRITON_SIZE_MULTIPLES", get("TILE2TRITON_SIZE_MULTIPLES"), SIZE_MULTIPLES_DEFAULT
            ),
            shared_divisors=flag(
                "TILE2TRITON_SHARED_DIVISORS", get("TILE2TRITON_SHARED_DIVISORS"), SHARED_DIVISORS_DEFAULT
            ),
            arithmetic_masks=flag(
                "TILE2TRITON_ARITHMETIC_MASKS", get("TILE2TRITON_ARITHMETIC_MASKS"), ARITHMETIC_MASKS_DEFAULT
            ),
            tensor_descriptors=flag("TILE2TRITON_TENSOR_DESCRIPTORS", get("TILE2TRITON_TENSOR_DESCRIPTORS"), None),
            tma_vectors=flag("TILE2TRITON_TMA_VECTORS", get("TILE2TRITON_TMA_VECTORS"), TMA_VECTORS_DEFAULT),
            tma_min_trips=_count("TILE2TRITON_TMA_MIN_TRIPS", get("TILE2TRITON_TMA_MIN_TRIPS"), TMA_MIN_TRIPS_DEFAULT),
            tma_stages=flag("TILE2TRITON_TMA_STAGES", get("TILE2TRITON_TMA_STAGES"), TMA_STAGES_DEFAULT),
            tma_pipelined_only=flag(
                "TILE2TRITON_TMA_PIPELINED_ONLY", get("TILE2TRITON_TMA_PIPELINED_ONLY"), TMA_PIPELINED_ONLY_DEFAULT
            ),
            split_dims=flag("TILE2TRITON_SPLIT_DIMS", get("TILE2TRITON_SPLIT_DIMS"), SPLIT_DIMS_DEFAULT),
            transposed_dots=flag(
                "TILE2TRITON_TRANSPOSED_DOTS", get("TILE2TRITON_TRANSPOSED_DOTS"), TRANSPOSED_DOTS_DEFAULT
            ),
            host_descriptors=flag(
                "TILE2TRITON_HOST_DESCRIPTORS", get("TILE2TRITON_HOST_DESCRIPTORS"), HOST_DESCRIPTORS_DEFAULT
            ),
            trip_bounds=flag("TILE2TRITON_TRIP_BOUNDS", get("TILE2TRITON_TRIP_BOUNDS"), TRIP_BOUNDS_DEFAULT),
            heavy_first=flag("TILE2TRITON_HEAVY_FIRST", get("TILE2TRITON_HEAVY_FIRST"), HEAVY_FIRST_DEFAULT),
            heavy_first_group=_run_count(
                "TILE2TRITON_HEAVY_FIRST_GROUP", get("TILE2TRITON_HEAVY_FIRST_GROUP"), HEAVY_FIRST_GROUP_DEFAULT
            ),
            snake_order=flag("TILE2TRITON_SNAKE_ORDER", get("TILE2TRITON_SNAKE_ORDER"), SNAKE_ORDER_DEFAULT),
            exact_ranges=flag("TILE2TRITON_EXACT_RANGES", get("TILE2TRITON_EXACT_RANGES"), EXACT_RANGES_DEFAULT),
            split_min_trips=_count(
                "TILE2TRITON_SPLIT_MIN_TRIPS", get("TILE2TRITON_SPLIT_MIN_TRIPS"), SPLIT_MIN_TRIPS_DEFAULT
            ),
            grid_stages=flag("TILE2TRITON_GRID_STAGES", get("TILE2TRITON_GRID_STAGES"), GRID_STAGES_DEFAULT),
            occupancy_stages=flag(
                "TILE2TRITON_OCCUPANCY_STAGES", get("TILE2TRITON_OCCUPANCY_STAGES"), OCCUPANCY_STAGES_DEFAULT
            ),
            few_trip_stages=flag(
                "TILE2TRITON_FEW_TRIP_STAGES", get("TILE2TRITON_FEW_TRIP_STAGES"), FEW_TRIP_STAGES_DEFAULT
            ),
            grid_warps=flag("TILE2TRITON_GRID_WARPS", get("TILE2TRITON_GRID_WARPS"), GRID_WARPS_DEFAULT),
            host_descriptor_cache=flag(
                "TILE2TRITON_HOST_DESCRIPTOR_CACHE",
                get("TILE2TRITON_HOST_DESCRIPTOR_CACHE"),
                HOST_DESCRIPTOR_CACHE_DEFAULT,
            ),
            keep_workspaces=flag(
                "TILE2TRITON_KEEP_WORKSPACES", get("TILE2TRITON_KEEP_WORKSPACES"), KEEP_WORKSPACES_DEFAULT
            ),
            gluon=_choice("TILE2TRITON_GLUON", get("TILE2TRITON_GLUON"), _GLUON, "on"),
            gluon_schedule=_choice("TILE2TRITON_GLUON_SCHEDULE", get("TILE2TRITON_GLUON_SCHEDULE"), _SCHEDULES, "auto"),
            vectorize_loops=flag("TILE2TRITON_VECTORIZE_LOOPS", get("TILE2TRITON_VECTORIZE_LOOPS"), True),
            shared_scratch=flag("TILE2TRITON_SHARED_SCRATCH", get("TILE2TRITON_SHARED_SCRATCH"), False),
            on_chip_scratch=_choice(
                "TILE2TRITON_ON_CHIP_SCRATCH", get("TILE2TRITON_ON_CHIP_SCRATCH"), _ON_CHIP, ON_CHIP_SCRATCH_DEFAULT
            ),
            block_slices=flag("TILE2TRITON_BLOCK_SLICES", get("TILE2TRITON_BLOCK_SLICES"), True),
            digit_reads=flag("TILE2TRITON_DIGIT_READS", get("TILE2TRITON_DIGIT_READS"), DIGIT_READS_DEFAULT),
            unit_reshapes=flag("TILE2TRITON_UNIT_RESHAPES", get("TILE2TRITON_UNIT_RESHAPES"), UNIT_RESHAPES_DEFAULT),
            proven_min_max=flag(
                "TILE2TRITON_PROVEN_MIN_MAX", get("TILE2TRITON_PROVEN_MIN_MAX"), PROVEN_MIN_MAX_DEFAULT
            ),
            speculate_copies=flag("TILE2TRITON_SPECULATE_COPIES", get("TILE2TRITON_SPECULATE_COPIES"), True),
            few_warps=flag("TILE2TRITON_FEW_WARPS", get("TILE2TRITON_FEW_WARPS"), False),
            ws_warps=flag("TILE2TRITON_WS_WARPS", get("TILE2TRITON_WS_WARPS"), WS_WARPS_DEFAULT),
            tile_warps=flag("TILE2TRITON_TILE_WARPS", get("TILE2TRITON_TILE_WARPS"), TILE_WARPS_DEFAULT),
            reuse_warps=flag("TILE2TRITON_REUSE_WARPS", get("TILE2TRITON_REUSE_WARPS"), REUSE_WARPS_DEFAULT),
            reg_warps=flag("TILE2TRITON_REG_WARPS", get("TILE2TRITON_REG_WARPS"), REG_WARPS_DEFAULT),
            held_warps=flag("TILE2TRITON_HELD_WARPS", get("TILE2TRITON_HELD_WARPS"), HELD_WARPS_DEFAULT),
            section_warps=flag("TILE2TRITON_SECTION_WARPS", get("TILE2TRITON_SECTION_WARPS"), SECTION_WARPS_DEFAULT),
            forward_stages=flag(
                "TILE2TRITON_FORWARD_STAGES", get("TILE2TRITON_FORWARD_STAGES"), FORWARD_STAGES_DEFAULT
            ),
            global_mirrors=flag(
                "TILE2TRITON_GLOBAL_MIRRORS", get("TILE2TRITON_GLOBAL_MIRRORS"), GLOBAL_MIRRORS_DEFAULT
            ),
            scratch_cta_atomics=flag("TILE2TRITON_SCRATCH_CTA_ATOMICS", get("TILE2TRITON_SCRATCH_CTA_ATOMICS"), True),
            scratch_atomic_barriers=_choice(
                "TILE2TRITON_SCRATCH_ATOMIC_BARRIERS",
                get("TILE2TRITON_SCRATCH_ATOMIC_BARRIERS"),
                _ATOMIC_BARRIERS,
                "reductions",
            ),
            # off from the H200 probe: topk_selector 114 -> 80 us with one claim per lane (as TileLang)
            scratch_block_claims=flag(
                "TILE2TRITON_SCRATCH_BLOCK_CLAIMS", get("TILE2TRITON_SCRATCH_BLOCK_CLAIMS"), False
            ),
            scratch_histogram=flag("TILE2TRITON_SCRATCH_HISTOGRAM", get("TILE2TRITON_SCRATCH_HISTOGRAM"), False),
            # off: exact on the H200 but not a consistent win (benchmarks/topk_probe.py, session 12: topk 82.4 ->
            # 73.9 us at 64 x 32768, 118.1 -> 128.6 us at 32 x 65536)
            warp_aggregated_atomics=flag(
                "TILE2TRITON_WARP_AGGREGATED_ATOMICS", get("TILE2TRITON_WARP_AGGREGATED_ATOMICS"), False
            ),
            vectorize_atomic_loops=flag(
                "TILE2TRITON_VECTORIZE_ATOMIC_LOOPS", get("TILE2TRITON_VECTORIZE_ATOMIC_LOOPS"), False
            ),
            # on from the H200 probe (gpu_logs/2026-12-02_s10_probe_mlabwd.log): sparse MLA bwd 0.81 -> 0.46 ms
            # (both switches; 3.07 -> 1.70 at S=512), flash-attention bwd with 32-row dQ 0.105 -> 0.093 ms
            # on from the same probe: sparse MLA fwd 0.070 -> 0.051 ms (0.223 -> 0.156 at S=512)
            column_split=flag("TILE2TRITON_COLUMN_SPLIT", get("TILE2TRITON_COLUMN_SPLIT"), True),
            defer_sums=flag("TILE2TRITON_DEFER_SUMS", get("TILE2TRITON_DEFER_SUMS"), DEFER_SUMS_DEFAULT),
            defer_reducers=flag(
                "TILE2TRITON_DEFER_REDUCERS", get("TILE2TRITON_DEFER_REDUCERS"), DEFER_REDUCERS_DEFAULT
            ),
            defer_reduces=flag("TILE2TRITON_DEFER_REDUCES", get("TILE2TRITON_DEFER_REDUCES"), DEFER_REDUCES_DEFAULT),
            gemm_parts=flag("TILE2TRITON_GEMM_PARTS", get("TILE2TRITON_GEMM_PARTS"), GEMM_PARTS_DEFAULT),
            licm_guard=flag("TILE2TRITON_LICM_GUARD", get("TILE2TRITON_LICM_GUARD"), LICM_GUARD_DEFAULT),
            prefetch_indices=flag(
                "TILE2TRITON_PREFETCH_INDICES", get("TILE2TRITON_PREFETCH_INDICES"), PREFETCH_INDICES_DEFAULT
            ),
            row_once=flag("TILE2TRITON_ROW_ONCE", get("TILE2TRITON_ROW_ONCE"), ROW_ONCE_DEFAULT),
            global_copy_chunks=flag(
                "TILE2TRITON_GLOBAL_COPY_CHUNKS", get("TILE2TRITON_GLOBAL_COPY_CHUNKS"), GLOBAL_COPY_CHUNKS_DEFAULT
            ),
            held_locals=flag("TILE2TRITON_HELD_LOCALS", get("TILE2TRITON_HELD_LOCALS"), HELD_LOCALS_DEFAULT),
            branch_copies=flag("TILE2TRITON_BRANCH_COPIES", get("TILE2TRITON_BRANCH_COPIES"), BRANCH_COPIES_DEFAULT),
            compact_guarded_loops=flag(
                "TILE2TRITON_COMPACT_GUARDED_LOOPS",
                get("TILE2TRITON_COMPACT_GUARDED_LOOPS"),
                COMPACT_GUARDED_LOOPS_DEFAULT,
            ),
            staged_atomics=flag(
                "TILE2TRITON_STAGED_ATOMICS", get("TILE2TRITON_STAGED_ATOMICS"), STAGED_ATOMICS_DEFAULT
            ),
            column_chunks=flag("TILE2TRITON_COLUMN_CHUNKS", get("TILE2TRITON_COLUMN_CHUNKS"), COLUMN_CHUNKS_DEFAULT),
            dead_parts=flag("TILE2TRITON_DEAD_PARTS", get("TILE2TRITON_DEAD_PARTS"), DEAD_PARTS_DEFAULT),
            row_split=_choice("TILE2TRITON_ROW_SPLIT", get("TILE2TRITON_ROW_SPLIT"), _ROW_SPLIT, ROW_SPLIT_DEFAULT),
            row_split_waves=flag(
                "TILE2TRITON_ROW_SPLIT_WAVES", get("TILE2TRITON_ROW_SPLIT_WAVES"), ROW_SPLIT_WAVES_DEFAULT
            ),
            row_split_backward=flag(
                "TILE2TRITON_ROW_SPLIT_BACKWARD", get("TILE2TRITON_ROW_SPLIT_BACKWARD"), ROW_SPLIT_BACKWARD_DEFAULT
            ),
            interpret_env=get("TRITON_INTERPRET") == "1",
            cuda_as_cpu=get("T2T_SUITE_CUDA_AS_CPU") == "1",
            no_color=bool(get("NO_COLOR")),
            tilelang_tmp_dir=get("TILELANG_TMP_DIR") or None,
            tilelang_default_target=get("TILELANG_DEFAULT_TARGET") or "auto",
            cuda_home=get("CUDA_HOME") or get("CUDA_PATH") or None,
            regression_only=tuple(
                x.strip().lower() for x in (get("TL_PERF_REGRESSION_ONLY") or "").split(",") if x.strip()
            ),
            regression_format=(get("TL_PERF_REGRESSION_FORMAT") or "text").strip().lower(),
        )


_cached: tuple[tuple, Settings] | None = None


def current() -> Settings:
    """The settings of the environment as it is now (re-parsed only when a variable changed)."""
    global _cached
    raw = tuple(os.environ.get(name) for name in VARIABLES)
    cached = _cached
    if cached is not None and cached[0] == raw:
        return cached[1]
    made = Settings.from_environment(dict(zip(VARIABLES, raw)))
    _cached = (raw, made)
    return made
