"""Lower one TileIR kernel to a Triton function AST.

Model: shared, fragment and local buffers live in registers as Triton tiles whose extents
are padded to powers of two (padded lanes hold junk and are masked where they could be
observed: reductions, dot products, stores).  ``T.Parallel`` opens a *lane space*: its loop
variables become broadcast ``tl.arange`` tiles and the body is evaluated once, as tile
expressions.  Global memory is reached through masked pointer arithmetic.

``KernelLowerer.lower_stmts`` drives the statement rules (``rules_base.LOWERINGS``, one per TileIR
statement, registered by rules.py, tile_ops.py, reductions.py and atomics.py, imported here);
they, and the helpers for scratch, threads, descriptors, intrinsics and PTX, are handed the
lowerer and see it through ``values.Lowerer``: none of them imports this module.  Register-tile
access is ``registers.RegisterAccess``, a base class of ``KernelLowerer``.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import keyword
import math
import struct
from dataclasses import dataclass, field

from .. import ir
from ..errors import TileLangCompileError
from ..ir import BOOL, FLOAT32, INT32
from ..ir.evaluate import HOST_OPS, INT_BIT_OPS
from ..ir.exprs import binary_dtype
from ..language.dtypes import DType
from ..passes.analysis import global_mirrors, known_below, known_nonneg
from ..passes.held_locals import NOTHING, HeldLocals
from . import atomics, e8m0, exits, fp4, on_chip, reductions, rules, scopes, scratch, tile_ops  # noqa: F401 - rule modules register on import
from . import pyast as P
from .descriptors import DescriptorState
from .intrinsics import lower_call, shared_divisor_div_rn
from .masks import neg_inf_mask
from .ptx import lower_inline_asm
from .registers import RegisterAccess
from .rules_base import LOWERINGS
from .scratch import ScratchState
from .values import (
    Lowered,
    Scope,
    Tile,
    convert,
    ir_expr,
    is_bool_literal,
    is_fp8,
    is_literal,
    literal_value,
    load_other,
    safe_values,
)
from .warp import lower_warp_op

E8M0 = "float8_e8m0fnu"  # uint8 in memory, float32 in registers (emit.py's _e8m0_* helpers)
RESERVED = {"tl", "triton", "range", "float", "int", "min", "max", "abs", "len", "print"}


def _held_in_16_bits(value, dt: DType) -> float | None:
    """The value a finite constant has as a float16 or bfloat16 (rounded to nearest even, through float32
    for bfloat16 as C++'s ``bfloat16_t(c)``), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    try:
        if dt.name == "float16":
            return struct.unpack("<e", struct.pack("<e", value))[0]
        if dt.name == "bfloat16":
            bits = struct.unpack("<I", struct.pack("<f", value))[0]
            bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
            return struct.unpack("<f", struct.pack("<I", bits))[0]
    except OverflowError:  # past the format's largest finite value
        return math.copysign(math.inf, value)
    return None


def _float_to_int(value: float, dt: DType) -> int:
    """A float constant converted to an integer dtype when compiling, as CUDA's ``cvt.rzi.sat``
    does at run time (toward zero, saturating, NaN to 0): on the GPU Triton's ``tl.full`` takes
    no float for an integer type."""
    if math.isnan(value):
        return 0
    lo, hi = dt.int_range
    return lo if value <= lo else hi if value >= hi else int(value)


class Names:
    def __init__(self):
        self.taken: set[str] = set(RESERVED)

    def fresh(self, hint: str) -> str:
        base = hint if hint.isidentifier() and not keyword.iskeyword(hint) else "v"
        candidate, n = base, 1
        while candidate in self.taken:
            candidate = f"{base}_{n}"
            n += 1
        self.taken.add(candidate)
        return candidate


@dataclass
class LoweringOptions:
    interpret: bool = False  # generating for Triton's interpreter (bf16 arithmetic upcast)
    # the card compiled for (runtime/target.py's Target.lowering): "cuda" / "hip", its architecture
    # ("" when unnamed), its warp size, and the fp8 dtypes Triton has there (None: all of them)
    backend: str = "cuda"
    arch: str = ""
    warp_size: int = 32
    fp8: tuple[str, ...] | None = None
    # a float's unary minus as ``x * -1.0`` and T.abs as ``tl.abs``: IEEE's sign operations (-(+0) is
    # -0, where Triton 3.6's ``-x`` is ``0 - x``), which LLVM may emit as an xor / and of the bits.
    # False where the card's ptxas folds such a bit operation on a wgmma accumulator to the value the
    # register held before the wgmmas (runtime/target.ptxas_keeps_wgmma_sign_flips): kernels with
    # gemms then negate as ``-x`` and take magnitudes as ``tl.maximum(x, -x)`` (KernelLowerer.arithmetic_signs)
    bitwise_signs: bool = True
    # sequential loops without carried dependences become tile axes (TILE2TRITON_VECTORIZE_LOOPS=0: keep them)
    vectorize_loops: bool = True
    # global boxes copied inside loops load through tensor descriptors (TMA); the runtime sets it
    # for cards and Triton versions that have them
    tensor_descriptors: bool = False
    # ... including one-axis boxes (a row statistic such as lse or Delta, a few hundred bytes): off
    # (TILE2TRITON_TMA_VECTORS=0), those load through pointers and need no descriptor or mbarrier
    tma_vectors: bool = True
    # ... only in loops of at least this many iterations, where known when compiling (0: any): a
    # program builds each descriptor at its start (a tensormap written to global memory and
    # fenced), a cost few iterations do not repay (TILE2TRITON_TMA_MIN_TRIPS)
    tma_min_trips: int = 0
    # ... also into one stage of a ring whose stages are forwarded as tiles (``K_shared[bi % 2, :, :]``,
    # tile_ops._stage_key), not only into a whole buffer (TILE2TRITON_TMA_STAGES)
    tma_stages: bool = True
    # ... only in loops Triton software-pipelines or whose gemms read the boxes (Scope.loop_tma;
    # TILE2TRITON_TMA_PIPELINED_ONLY)
    tma_pipelined_only: bool = True
    # shared/fragment buffers with a dim that is not a power of two held as power-of-two parts
    # (passes/pow2_split.py: 192 = 128 + 64, a gemm per part) instead of padded (TILE2TRITON_SPLIT_DIMS)
    split_dims: bool = True
    # on sm_90, a gemm of fewer than 64 rows and at least 64 columns as the transpose of its
    # transposed product (a wgmma, not mma.sync; codegen/tile_ops.py, TILE2TRITON_TRANSPOSED_DOTS)
    transposed_dots: bool = True
    # ... and count a loop's iterations where value ranges bound them (``end = T.min(2, ...)``),
    # not only where its bounds are constants (TILE2TRITON_TRIP_BOUNDS): an upper bound
    trip_bounds: bool = True
    # ... and prove a let's range and a comparison from the exact span of what they are computed from
    # (``Ranges.span``: block indices and loop variables enumerated) where intervals are loose
    # (TILE2TRITON_EXACT_RANGES): ``k_end - k_start`` a constant, ``T.min(k_start + (i + 1) * 64, k_end)`` decided
    exact_ranges: bool = False
    # loops of fewer iterations than this (known or bounded) are not split at their masks
    # (passes/split.py): the second loop is a second pipeline fill (TILE2TRITON_SPLIT_MIN_TRIPS)
    split_min_trips: int = 4
    # the grid axis whose block index lengthens the kernel's loops (causal attention's query tiles)
    # walked slowest and last index first, the longest blocks first (codegen/block_order.py,
    # TILE2TRITON_HEAVY_FIRST)
    heavy_first: bool = True
    # ... in runs of this many blocks of the other axes (heads), each run heaviest first; 0: the whole
    # grid one run; None: runs of about two waves of ``sms`` (block_order.run_width;
    # TILE2TRITON_HEAVY_FIRST_GROUP)
    heavy_first_group: int | None = None
    # a static grid whose blocks all start at once (more than ``sms``, at most ``sms * blocks_per_sm``) and
    # whose one block axis lengthens or shortens the loops: every other round of ``sms`` launch slots walked
    # back, so the round-robin dispatch pairs heavy blocks with light ones on an SM (codegen/block_order.py,
    # TILE2TRITON_SNAKE_ORDER)
    snake_order: bool = True
    # blocks of the kernel one SM holds at this launch, estimated (runtime/tuning.blocks_per_sm); 0 unknown
    blocks_per_sm: int = 0
    # the SMs a launch's blocks are spread over: the device's, else an H200's for a card named
    # offline (runtime/tuning.sms_of); 0 for the interpreter
    sms: int = 0
    # descriptors of kernel parameters made on the host and passed as arguments
    # (TILE2TRITON_HOST_DESCRIPTORS): no per-program tensormap creation and fence
    host_descriptors: bool = False
    # every shared buffer in per-program global scratch (TILE2TRITON_SHARED_SCRATCH=1; see scratch.py)
    shared_scratch: bool = False
    # on CUDA, that scratch area as a static .shared array read, written and updated by inline PTX
    # (on_chip.py; TILE2TRITON_ON_CHIP_SCRATCH): "loops" (in kernels with atomics on shared
    # buffers or accesses to the area inside loops), "atomics" (atomics only), "on" or "off"; the
    # interpreter and HIP keep global memory
    on_chip_scratch: str = "loops"
    # a register tile read at an aligned block of a dim (``acc_o[:4, :]`` of 64 rows) as a
    # tl.reshape and a select over the blocks, not a one-hot over every row (TILE2TRITON_BLOCK_SLICES)
    block_slices: bool = True
    # a register tile read at digit fields of lane variables (``B[i, j // 2]``, ``E[i, k // 16]``)
    # as a reshape and a broadcast over the digits, not a tl.gather, and written at all of them
    # once as the tile's digits permuted, not a scatter (TILE2TRITON_DIGIT_READS)
    digit_reads: bool = True
    # unit axes of register tiles (a (1, N) fragment, a T.Parallel(1, N) lane space) inserted and
    # dropped by tl.reshape, not x[None, :] / tl.sum over the unit axis (TILE2TRITON_UNIT_RESHAPES;
    # registers.with_unit_axes)
    unit_reshapes: bool = True
    # an integer T.min / T.max whose ranges decide it for every block emitted as that operand
    # (TILE2TRITON_PROVEN_MIN_MAX; intrinsics.lower_call)
    proven_min_max: bool = True
    # copies of global tiles under a block-uniform `if` in a software-pipelined loop are issued
    # before the `if`, masked by its condition, so Triton's pipeliner prefetches them
    # (TILE2TRITON_SPECULATE_COPIES; codegen/speculate.py)
    speculate_copies: bool = True
    # atomics on a scratch-backed shared buffer (scratch.py): relaxed ones block-scoped, as shared
    # memory's are (TILE2TRITON_SCRATCH_CTA_ATOMICS), and which barriers between two atomics on one
    # buffer are left out: "reductions", "atomics" or "keep" (TILE2TRITON_SCRATCH_ATOMIC_BARRIERS)
    scratch_cta_atomics: bool = True
    scratch_atomic_barriers: str = "reductions"
    # pos = T.atomic_add(S[k], v, return_prev=True) with k, v the same in every lane: one atomic per
    # block and an exclusive cumsum (atomics._claimed_add), else one atomic per lane
    # (TILE2TRITON_SCRATCH_BLOCK_CLAIMS)
    scratch_block_claims: bool = False
    # T.atomic_add(S[bin], v) at lane-dependent bins: tl.histogram and one atomic per bin
    # (atomics._histogram_add; TILE2TRITON_SCRATCH_HISTOGRAM)
    scratch_histogram: bool = False
    # on CUDA, an integer T.atomic_add into scratch with a lane-uniform value as one atomic per
    # distinct address a warp (match.any.sync; codegen/warp_atomics.py, TILE2TRITON_WARP_AGGREGATED_ATOMICS)
    warp_aggregated_atomics: bool = False
    # a loop of branches and commuting atomics whose previous values are unused is a map loop too
    # (rules._is_map_loop; TILE2TRITON_VECTORIZE_ATOMIC_LOOPS)
    vectorize_atomic_loops: bool = False
    # a copy out of one stage of a register buffer (``K_shared[bi % 2, :, :]``) that a copy into
    # that whole stage wrote earlier in the same statement list reads the written tile
    # (tile_ops.py; TILE2TRITON_FORWARD_STAGES)
    forward_stages: bool = True
    # a shared buffer that only holds a copy of global elements (an index list) is read from the
    # global tensor after the copy (passes/analysis.global_mirrors; TILE2TRITON_GLOBAL_MIRRORS)
    global_mirrors: bool = True
    # the first shared-memory fit step (runtime/tuning.FIT_STEPS): small-M gemms as wgmma past the
    # register budget of TILE2TRITON_TRANSPOSED_DOTS (codegen/gemm_kinds.transposed_dot)
    transposed_dots_past_budget: bool = False
    # a shared/fragment buffer used only as static column blocks, one buffer per block
    # (passes/column_split.py, TILE2TRITON_COLUMN_SPLIT): no padding of 512 + 64 columns to 1024
    column_split: bool = True
    # accumulations a loop only adds into, reduced once after it (codegen/deferred.py):
    # TILE2TRITON_DEFER_SUMS (sums over a widened loop axis), TILE2TRITON_GEMM_PARTS (mma.sync gemms' K parts)
    defer_sums: bool = True
    # ... and a reducer's sum over T.Parallel lanes (codegen/atomics._defer_reduction; TILE2TRITON_DEFER_REDUCERS)
    defer_reducers: bool = True
    # ... and a T.reduce_* with clear=False into an accumulator (reductions._deferring_loop; TILE2TRITON_DEFER_REDUCES)
    defer_reduces: bool = True
    gemm_parts: bool = True
    # a loop of wgmma gemms on an operand stored before it, past the accumulators' register budget, keeps
    # its invariants in it (rules.keeps_invariants_in_loop; TILE2TRITON_LICM_GUARD)
    licm_guard: bool = True
    # a loop's per-iteration index element loaded one iteration ahead, carried in a register
    # (passes/prefetch_indices.py; TILE2TRITON_PREFETCH_INDICES)
    prefetch_indices: bool = True
    # a pipelined loop whose body is one masked branch runs over its active iterations
    # (passes/compact_guarded.py; TILE2TRITON_COMPACT_GUARDED_LOOPS)
    compact_guarded_loops: bool = True
    # a global row several T.Parallel statements of one block read, loaded once into a fragment
    # (passes/row_once.py; TILE2TRITON_ROW_ONCE)
    row_once: bool = True
    # a global-to-global T.copy past 64 elements a thread as a loop of exact parts of its region
    # (passes/global_copy_chunks.py; TILE2TRITON_GLOBAL_COPY_CHUNKS)
    global_copy_chunks: bool = True
    # if/else branches that copy one global tensor's tiles into the same buffers from two places, as
    # one copy from the place the condition picks (passes/branch_copies.py; TILE2TRITON_BRANCH_COPIES)
    branch_copies: bool = True
    # thread view: small local arrays indexed by constants once their loops are unrolled, held one
    # value per element, those loops unrolled (passes/held_locals.py, codegen/held.py; TILE2TRITON_HELD_LOCALS)
    held_locals: bool = True
    # atomics reading a staging buffer read the values stored into it; a loop of such atomics is
    # an axis of their T.Parallel (passes/staged_atomics.py, TILE2TRITON_STAGED_ATOMICS)
    staged_atomics: bool = True
    # past the register budget, wide columns computed 128 at a time, a chunk's gemms side by side
    # (passes/column_chunks.py, TILE2TRITON_COLUMN_CHUNKS)
    column_chunks: bool = True
    # the part of a tile past a power of two that every store puts outside its tensor, not computed
    # (passes/dead_parts.py, TILE2TRITON_DEAD_PARTS)
    dead_parts: bool = True
    # an attention forward on a grid under half a wave: its query rows over twice the blocks
    # (passes/row_split.py, TILE2TRITON_ROW_SPLIT: "on", "off" or "always", any grid)
    row_split: str = "on"
    # with row_split, an attention backward's rows too (TILE2TRITON_ROW_SPLIT_BACKWARD)
    row_split_backward: bool = True
    # launch parameters chosen for speed (runtime/tuning.py): None keeps threads / 32 warps and
    # T.Pipelined's own stage count; warp_specialize asks Triton to warp-specialize pipelined loops
    num_warps: int | None = None
    num_stages: int | None = None
    warp_specialize: bool = False
    # at most this many pipeline stages for every loop (T.Pipelined's and Triton's launch default for
    # the others): the runtime's retry of a kernel that does not fit in shared memory (runtime/kernel.py)
    max_stages: int | None = None
    # pass_configs' TL_ENABLE_FAST_MATH: approximate PTX for the functions Triton computes accurately
    fast_math: bool = False
    # pass_configs' TL_DISABLE_THREAD_STORAGE_SYNC: the program's own T.sync_threads() order its threads'
    # shared accesses; scratch barriers only where Triton's thread of an element is not TileLang's (scratch.py)
    user_syncs: bool = False
    # attention loops as Gluon with Hopper's asynchronous wgmma (codegen/gluon_attention.py); the
    # runtime sets it on sm_90 when Triton has Gluon (runtime/target.py)
    gluon: bool = False
    # TILE2TRITON_GLUON=log: say on stderr which route each kernel takes, and why the others refused it
    gluon_log: bool = False
    # a Gluon route is taken only where its cost model (measured on the GPU) says it is faster;
    # TILE2TRITON_GLUON=force clears it, to measure the routes wherever they apply
    gluon_cost_model: bool = True
    # the Gluon rows route's consumer schedule (codegen/gluon_plan.SCHEDULES); TILE2TRITON_GLUON_SCHEDULE
    gluon_schedule: str = "auto"
    # thread view: a global load that threads of several lanes need is loaded by each of them, as in
    # TileLang (registers.broadcast_lanes); the runtime sets it from runtime/tuning.py's per_thread_loads
    per_thread_loads: bool = False
    # thread view: a thread-range section's per-thread copy nest lowered as the block-level copies
    # it makes (passes/thread_copies.py); the runtime sets it from TILE2TRITON_THREAD_COPY_TILES
    thread_copy_tiles: bool = False
    # ... and a warp-specialized producer's shared ring forwarded into the consumers' reads
    # (passes/forward_shared.py, after the copies above); TILE2TRITON_FORWARD_SHARED
    forward_shared: bool = False
    # a hand-pipelined ring (a prologue store, a loop storing the next iteration's slot and reading
    # this one's, an epilogue) read where it is used, its stores dropped (passes/forward_rings.py;
    # TILE2TRITON_FORWARD_RINGS)
    forward_rings: bool = True
    # thread view: an `if` every thread decides alike, outside any loop and around one, is a Triton
    # `if`, not a mask on each statement under it (rules._uniform_branch; TILE2TRITON_UNIFORM_BRANCHES)
    uniform_branches: bool = True
    # sizes in a global tensor's strides taken as multiples of the power of two (up to 8) that
    # divides them at launch, a constexpr parameter each (emit._size_multiples;
    # TILE2TRITON_SIZE_MULTIPLES): Triton itself only knows a size divisible by 16
    size_multiples: bool = True
    # float32 `/` by a divisor a row of numerators shares: its reciprocal once, two FMAs a quotient,
    # correctly rounded (intrinsics.shared_divisor_div_rn; TILE2TRITON_SHARED_DIVISORS)
    shared_divisors: bool = False
    # on CUDA targets, select(integer comparisons, 0, -inf) as float arithmetic, no boolean tile
    # (codegen/masks.py; TILE2TRITON_ARITHMETIC_MASKS)
    arithmetic_masks: bool = False

    def pipeline_kwargs(self, source_stages: int) -> dict:
        """``tl.range`` keywords of a ``T.Pipelined`` loop: its stage count, unless one was chosen."""
        stages = self.num_stages or source_stages
        kwargs = {"num_stages": min(stages, self.max_stages) if self.max_stages else stages}
        if self.warp_specialize and not self.interpret:
            kwargs["warp_specialize"] = True
        return kwargs


@dataclass
class KernelLowerer(RegisterAccess):
    kernel: ir.Kernel
    params: list  # Buffer / Var of the PrimFunc, in order
    options: LoweringOptions
    let_count: dict = field(default_factory=dict)  # let Var -> how many times it is bound (the whole kernel)
    once_lets: dict = field(default_factory=dict)  # let Var bound once in the kernel -> its value
    # what the statement being lowered sees (values, lane space, masks); saved and restored whole
    scope: Scope = field(default_factory=Scope)
    # where values live
    regs: dict = field(default_factory=dict)  # ir.Buffer -> RegBuf
    pointers: dict = field(default_factory=on_chip.PointerTable)  # global ir.Buffer -> Triton name
    scratch: ScratchState = field(default_factory=ScratchState)  # shared buffers in global scratch
    descriptors: DescriptorState = field(default_factory=DescriptorState)  # tensor descriptors (TMA)
    # the code being generated
    names: Names = field(default_factory=Names)
    out: list = field(default_factory=list)  # statements of the body being lowered
    origin: ir.Loc | None = None  # the TileLang statement being lowered
    helpers: set = field(default_factory=set)  # module-level @triton.jit helpers used
    uniform_vars: frozenset = frozenset()  # thread view: private scalars the same in every thread (one scalar)
    private_fragments: frozenset = frozenset()  # thread view: fragments kept per thread (passes/uniform.py)
    block_tests: dict = field(default_factory=dict)  # thread view: id(statement list) -> (list, {test: name})
    following: list = field(default_factory=list)  # statements after the one being lowered
    statement_names: dict = field(default_factory=dict)  # named offsets/masks of the statement being lowered
    statement_serial: int = 0  # counts the TileLang statements lowered so far
    # register buffer -> (stage key, name of the tile its whole stage was last written with), for
    # this statement list only (tile_ops.py, forward_stages)
    forwards: dict = field(default_factory=dict)
    # shared buffer -> passes.analysis.Mirror, once its copy is lowered (global_mirrors)
    mirrors: dict = field(default_factory=dict)
    # thread view: local arrays held one value per element (held.py): which, and their elements
    held: HeldLocals = NOTHING
    not_held: frozenset = frozenset()  # arrays an earlier lowering of the kernel could not hold
    held_elements: dict = field(default_factory=dict)  # ir.Buffer -> [RegBuf per element, row-major]

    # ------------------------------------------------------------------ plumbing
    @functools.cached_property
    def arithmetic_signs(self) -> bool:
        """Float negations and magnitudes as arithmetic (``-x``, ``tl.maximum(x, -x)``), not IEEE's
        bit operations: in kernels with gemms, where ptxas folds those (LoweringOptions.bitwise_signs)."""
        return not self.options.bitwise_signs and ir.has_gemm(self.kernel.body)

    def magnitude(self, node: ast.expr) -> ast.expr:
        """``|x|`` of a float tile: ``tl.abs``, or arithmetic where ``arithmetic_signs``."""
        if not self.arithmetic_signs:
            return P.call("tl.abs", node)
        if not isinstance(node, ast.Name) and not self.scope.inline_only:
            node = P.name(self.assign("magnitude_of", node))
        return P.call("tl.maximum", node, ast.UnaryOp(ast.USub(), node))

    def error(self, message: str, loc: ir.Loc | None = None) -> TileLangCompileError:
        return TileLangCompileError(message, loc or self.origin)

    def emit(self, stmt: ast.stmt) -> None:
        stmt.t2t_origin = self.origin
        self.out.append(stmt)

    @contextlib.contextmanager
    def scoped(self, **changes):
        """Lower something with these ``Scope`` fields changed; they are put back after."""
        saved = {name: getattr(self.scope, name) for name in changes}
        for name, value in changes.items():
            setattr(self.scope, name, value)
        try:
            yield
        finally:
            for name, value in saved.items():
                setattr(self.scope, name, value)

    def assign(self, hint: str, value: ast.expr) -> str:
        n = self.names.fresh(hint)
        self.emit(P.assign(n, value))
        return n

    def block(self, stmts, fn=None) -> list:
        """Lower ``stmts`` into a fresh statement list (a loop or branch body)."""
        saved, self.out = self.out, []
        self.forwards = {}  # a loop body runs again after its own writes; a branch may not run
        try:
            with scratch.body(self, stmts if fn is None else None):
                if fn is not None:
                    fn()
                else:
                    self.lower_stmts(stmts)
            return self.out or [ast.Pass()]
        finally:
            self.out = saved
            self.forwards = {}

    def lower_stmts(self, stmts) -> None:
        for position, s in enumerate(stmts):
            self.following = stmts[position + 1 :]
            self.statement_names = {}
            self.statement_serial += 1
            rule = LOWERINGS.get(type(s))
            if rule is None:
                raise self.error(f"{type(s).__name__} is not supported by tile2triton yet", s.loc)
            saved = self.origin
            self.origin = s.loc
            try:
                fp4.check_stmt(s, self.error)
                rule(self, s)
                if self.options.global_mirrors and isinstance(s, ir.Parallel):
                    for buf, mirror in global_mirrors(self.kernel).items():
                        if mirror.copy is s:  # reads after the copy read the global elements it copied
                            self.mirrors[buf] = mirror
                if self.scope.exits is not None and exits.leaves(s):  # the rest runs unless it left
                    if exits.guard_rest(self, stmts[position + 1 :]):
                        return
            finally:
                self.origin = saved

    def storage_dtype(self, dt: DType) -> DType:
        """The dtype a register tile is kept in (bf16 arithmetic is wrong in the interpreter)."""
        if (self.options.interpret and dt.name == "bfloat16") or dt.name == E8M0:
            return FLOAT32
        if fp4.is_packed_fp4(dt):  # an fp4 value in registers is its 4-bit code
            return fp4.UINT8
        if fp4.is_packed_int4(dt):  # int4 / uint4: the value, in int8 / uint8
            return fp4.int_storage(dt)
        return dt

    def narrowed(self, node: ast.expr, dt: DType) -> ast.expr:
        """``node``, a ``tl.max``/``tl.min`` over values of ``dt``, back in ``dt``'s storage dtype:
        those widen 8- and 16-bit values to 32 bits, and a register tile assigned in a loop must keep
        its type on the GPU (Triton rejects a loop-carried fp16 tile re-assigned as fp32)."""
        storage = self.storage_dtype(dt)
        return P.to(node, storage) if storage.bits < 32 else node

    def cast(self, t: Tile, dt: DType) -> Tile:
        """``t`` converted to ``dt`` (kept in ``dt``'s storage dtype)."""
        if t.dtype == dt:
            return t
        if fp4.is_packed_fp4(t.dtype):  # an fp4 code: decode, then convert the float
            return self.cast(fp4.decode(self, t), dt)
        if fp4.is_packed_fp4(dt):
            return Tile(fp4.encode(self, t).node, dt, t.axes)
        if fp4.is_packed_int4(t.dtype):  # an int4 / uint4 value: convert its int8 / uint8 register
            return self.cast(Tile(t.node, fp4.int_storage(t.dtype), t.axes), dt)
        if fp4.is_packed_int4(dt):  # as an int32 first (floats truncate toward zero), then its low 4 bits
            return fp4.to_int4(self, self.cast(t, INT32), dt)
        if is_literal(t):
            value = literal_value(t.node)
            if e8m0.is_e8m0(dt) and not isinstance(value, bool):  # a constant rounds here, as at run time
                return Tile(P.const(e8m0.round_literal(value)), dt, t.axes)
            held = _held_in_16_bits(value, dt)
            if held is not None and held != value:  # the value the 16-bit float holds, as TileLang's cast
                return Tile(P.const(held), dt, t.axes)
            if dt.is_float or (dt.is_int and isinstance(value, int)):
                return Tile(t.node, dt, t.axes)  # Triton literals adopt their operand's type
            if dt.is_int and isinstance(value, float):  # A[i] = 1.0 into an int32 tensor
                return Tile(P.const(_float_to_int(value, dt)), dt, t.axes)
            if dt == BOOL and isinstance(value, float):
                return Tile(P.const(value != 0), dt, t.axes)
            return Tile(P.call("tl.full", P.list_([]), t.node, P.dtype(self.storage_dtype(dt))), dt, t.axes)
        if self.options.interpret and dt.name == "bfloat16":
            self.helpers.add("_round_to_bf16")
            return Tile(P.call("_round_to_bf16", t.node), dt, t.axes)
        if dt.name == E8M0:  # held as float32 on its grid (its uint8 bits only in memory)
            self.helpers.add("_round_to_e8m0")
            # an integer first as float32, as the helper would take it: under the interpreter a
            # range loop's variable is a Python int, which has no dtype for the helper to ask
            node = t.node if t.dtype.is_float else convert(t.node, FLOAT32, t.axes)
            return Tile(P.call("_round_to_e8m0", node), dt, t.axes)
        if self.options.interpret and dt.name in ("float8_e4m3fn", "float8_e5m2"):
            helper = "_round_to_e4m3" if dt.name == "float8_e4m3fn" else "_round_to_e5m2"
            self.helpers.add(helper)
            return Tile(convert(P.call(helper, t.node), dt, t.axes), dt, t.axes)
        want, have = self.storage_dtype(dt), self.storage_dtype(t.dtype)
        if have == want:
            return Tile(t.node, dt, t.axes)
        node = t.node
        if (is_fp8(want) and not have.is_float) or (is_fp8(have) and not want.is_float):
            node = convert(node, FLOAT32, t.axes)  # Triton casts integers to and from fp8 only through a float
        return Tile(convert(node, want, t.axes), dt, t.axes)

    # ------------------------------------------------------------------ lane spaces
    def lane_mask(self, axes, within: bool = False) -> ast.expr | None:
        """Padding masks of ``axes`` and the active ``if`` conditions (with ``within``, only the
        conditions that vary along ``axes`` alone: enough to keep a load in bounds)."""
        parts = []
        if self.scope.lanes is not None:
            for k in sorted(axes):
                if self.scope.lanes.padded[k] != self.scope.lanes.extents[k]:
                    parts.append(P.binop("<", P.name(self.scope.lanes.names[k]), P.const(self.scope.lanes.extents[k])))
        parts += [c.node for c in self.active_conds(axes, within)]
        return P.and_all(parts)

    def active_conds(self, axes, within: bool = False) -> list[Tile]:
        """The ``if`` masks ``lane_mask`` joins for an access along ``axes``."""
        return [c for c in self.scope.conds if not within or c.axes <= frozenset(axes)]

    def guard_facts(self, axes, within: bool = False) -> list:
        """The comparisons (ir.Compare) of the ``if`` conditions in ``lane_mask(axes, within)``."""
        return [f for c in self.active_conds(axes, within) for f in self.scope.cond_facts.get(ast.dump(c.node), ())]

    def cond_axes(self) -> frozenset:
        axes = frozenset()
        for c in self.scope.conds:
            axes |= c.axes
        return axes

    # ------------------------------------------------------------------ expressions
    def ev(self, e) -> Tile:
        if isinstance(e, Lowered):  # a value the rule already lowered
            return e.tile
        if isinstance(e, ir.Const):
            if fp4.is_packed_fp4(e.dtype):  # T.float4_e2m1fn(1.5): its code
                return fp4.literal(e.value, e.dtype)
            if fp4.is_packed_int4(e.dtype) and isinstance(e.value, (int, float)):  # T.int4(9): -7
                return Tile(P.const(fp4.wrap_value(e.value, e.dtype)), e.dtype)
            if e8m0.is_e8m0(e.dtype) and not isinstance(e.value, bool):  # T.cast(3, e8m0): 4.0
                return Tile(P.const(e8m0.round_literal(e.value)), e.dtype)
            # T.bfloat16(1.0117): 1.0156, as TileLang's cast (a bare literal takes its operand's type there)
            held = None if e.weak else _held_in_16_bits(e.value, e.dtype)
            return Tile(P.const(e.value if held is None else held), e.dtype)
        if isinstance(e, ir.VarRef):
            if e.var not in self.scope.env:
                raise self.error(f"'{e.var.name}' is used outside the region where it is defined")
            return self.scope.env[e.var]
        if isinstance(e, ir.Load):
            if e.buffer.scope == ir.GLOBAL:
                return self.global_load(e.buffer, [self.ev(i) for i in e.indices], e.indices)
            mirror = self.mirrors.get(e.buffer)
            if mirror is not None and len(e.indices) == 1:  # a staged copy of global elements: read them
                return self.ev(mirror.at(e.indices[0]))
            if e.buffer in self.scratch.views:
                return scratch.load(self, e.buffer, e.indices)
            with scratch.register_path(self, e.buffer):
                return self.reg_read(e.buffer, e.indices)
        if fp4.touches(e):  # arithmetic on fp4 / int4 values: on their floats / in int32
            return self.ev(fp4.widened(e, self.error))
        if isinstance(e, ir.BinOp):
            return self.rounded(self.ev_binop(e))
        if isinstance(e, ir.Compare):
            known = self.scope.decided(e)
            if known is not None:  # e.g. a key index that never reaches the sequence's end
                return Tile(P.const(known), BOOL)
            a, b = self.ev(e.lhs), self.ev(e.rhs)
            dt = binary_dtype(e.op, e.lhs, e.rhs)  # the dtype the operands are compared in
            if is_fp8(dt):  # in float32 (exact): Triton 3.6 refuses fp8 against an int literal, 3.9's
                dt = FLOAT32  # GPU lowering any comparison of fp8 tensors
                a, b = (x if is_literal(x) else self.cast(x, dt) for x in (a, b))
            if dt.is_float:  # half < 0.1 compares in float32, as TVM types it
                a, b = (x if is_literal(x) or not x.dtype.is_float else self.cast(x, dt) for x in (a, b))
            a, b = _literal_in(a, dt), _literal_in(b, dt)
            return Tile(P.binop(e.op, a.node, b.node), BOOL, a.axes | b.axes)
        if isinstance(e, ir.UnaryOp):
            a = self.ev(e.operand)
            if is_bool_literal(a) and e.op != "-":  # ~True is -2 in Python: fold the negation here
                return Tile(P.const(not a.node.value), BOOL)
            if e.op == "-":
                if e.dtype.is_float and self.arithmetic_signs:
                    return Tile(ast.UnaryOp(ast.USub(), a.node), e.dtype, a.axes)
                return Tile(P.negate(a.node, e.dtype), e.dtype, a.axes)
            if e.op == "~":
                if self.options.interpret and e.dtype.kind == "uint":
                    # Triton 3.6's interpreter builds ~x as x ^ -1, which numpy refuses for unsigned x
                    ones = P.call("tl.full", P.list_([]), P.const((1 << e.dtype.bits) - 1), P.dtype(e.dtype))
                    return Tile(P.binop("^", a.node, ones), e.dtype, a.axes)
                return Tile(ast.UnaryOp(ast.Invert(), a.node), e.dtype, a.axes)
            return Tile(P.binop("==", a.node, P.const(0)), BOOL, a.axes)
        if isinstance(e, ir.Cast):
            return self.cast(self.ev(e.value), e.dtype)
        if isinstance(e, ir.Select):
            mask = neg_inf_mask(self, e)
            if mask is not None:
                return mask
            c = self.ev(e.cond)
            if is_bool_literal(c):
                return self.cast(self.ev(e.true_value if c.node.value else e.false_value), e.dtype)
            if self.options.forward_shared and c.axes and _masked_load(e):
                # select(c, G[i], 0): the load masked by c reads the 0 itself (and only the rows kept)
                name = c.node.id if isinstance(c.node, ast.Name) else self.assign("keep", c.node)
                self.scope.conds.append(Tile(P.name(name), BOOL, c.axes))
                try:
                    return self.cast(self.ev(e.true_value), e.dtype)
                finally:
                    self.scope.conds.pop()
            a, b = self.ev(e.true_value), self.ev(e.false_value)
            a, b = self.cast(a, e.dtype), self.cast(b, e.dtype)
            return Tile(P.call("tl.where", c.node, a.node, b.node), e.dtype, c.axes | a.axes | b.axes)
        if isinstance(e, ir.Call):
            return self.rounded(lower_call(self, e))
        if isinstance(e, ir.InlineAsm):
            return lower_inline_asm(self, e)
        if isinstance(e, ir.WarpOp):
            return lower_warp_op(self, e)
        raise self.error(f"cannot lower expression {e!r}")

    def rounded(self, t: Tile) -> Tile:
        """Under the interpreter bf16 values are kept in fp32: round each bf16 result, as the GPU's
        bf16 arithmetic does, so that comparisons of intermediate values agree with it."""
        if t.dtype.name == E8M0 and not is_literal(t):  # held as float32: back on its grid
            self.helpers.add("_round_to_e8m0")
            return Tile(P.call("_round_to_e8m0", t.node), t.dtype, t.axes)
        if not (self.options.interpret and t.dtype.name == "bfloat16") or is_literal(t):
            return t
        self.helpers.add("_round_to_bf16")
        return Tile(P.call("_round_to_bf16", t.node), t.dtype, t.axes)

    def ev_binop(self, e: ir.BinOp) -> Tile:
        a, b = self.ev(e.lhs), self.ev(e.rhs)
        axes = a.axes | b.axes
        op = e.op
        x, y = literal_value(a.node), literal_value(b.node)
        if e.dtype.kind == "int" and type(x) is int and type(y) is int and op in HOST_OPS and (y or op in "+-*"):
            return Tile(P.const(HOST_OPS[op](x, y)), e.dtype)  # e.g. a split bound of constants
        if e.dtype.kind == "int" and type(x) is int and type(y) is int and op in INT_BIT_OPS:
            value = INT_BIT_OPS[op](x, y) if 0 <= y < e.dtype.bits or op not in ("<<", ">>") else None
            lo, hi = e.dtype.int_range
            if value is not None and lo <= value <= hi:  # ``1 << (i + 1)`` in an unrolled iteration
                return Tile(P.const(value), e.dtype)
        if op in ("and", "or") or (op in ("&", "|") and a.dtype == b.dtype == BOOL):
            conjunction = op in ("and", "&")
            for known, other in ((a, b), (b, a)):
                if is_bool_literal(known):  # x & True is x, x & False is False (and dually for |)
                    return other if known.node.value == conjunction else known
            node = P.binop("&" if conjunction else "|", a.node, b.node)
            if bool(a.axes) != bool(b.axes):  # a 0-d operand: the interpreter's `&` yields int data
                node = self.scalar_mask(node)
            return Tile(node, BOOL, axes)
        kept = _int_identity(op, a, b, e.dtype)
        if kept is not None:
            return kept
        if op in ("//", "%") and e.dtype.is_int:
            if not (self.scope.ranges.nonneg(e.lhs) and self.scope.ranges.nonneg(e.rhs)):
                helper = "_floordiv" if op == "//" else "_floormod"
                self.helpers.add(helper)
                lhs = a.node
                if not a.axes:  # a scalar argument equal to 1 arrives as a constexpr, which has no .to()
                    lhs = P.call("tl.full", P.list_([]), lhs, P.dtype(self.storage_dtype(e.dtype)))
                return Tile(P.call(helper, lhs, b.node), e.dtype, axes)
            return Tile(P.binop(op, a.node, b.node), e.dtype, axes)
        if op == "/" and e.dtype.is_int:
            return Tile(P.binop("//", a.node, b.node), e.dtype, axes)  # TVM int division truncates
        if e.dtype.is_float and a.dtype != b.dtype:  # a literal adopts the other operand's type in Triton
            a, b = (t if is_literal(t) else self.cast(t, e.dtype) for t in (a, b))
        if op == "//" and e.dtype.is_float:  # TVM's floordiv of floats: the floor of the quotient
            q = self.rounded(self.float_quotient(a, b, e.dtype, axes))  # bf16 under the interpreter
            storage = self.storage_dtype(e.dtype)
            if storage.bits >= 32:
                return Tile(P.call("tl.floor", q.node), e.dtype, axes)
            # tl.floor takes float32 and float64; the floor of a 16-bit float is one too
            return Tile(convert(P.call("tl.floor", convert(q.node, FLOAT32, axes)), storage, axes), e.dtype, axes)
        if op == "%" and e.dtype.is_float:  # floor modulo (the divisor's sign), as float // floors
            x, y = literal_value(a.node), literal_value(b.node)
            if isinstance(x, (int, float)) and isinstance(y, (int, float)) and y:
                return Tile(P.const(float(x) % float(y)), e.dtype)
            self.helpers.add("_floormod")  # Triton's float % is C's fmod (the dividend's sign)
            return self.rounded(Tile(P.call("_floormod", a.node, b.node), e.dtype, axes))
        if op == "/" and e.dtype.name in ("float16", "bfloat16", "float32"):
            shared = None
            if e.dtype == FLOAT32 and not self.options.fast_math and not (is_literal(a) or is_literal(b)):
                shared = shared_divisor_div_rn(self, a, b, axes)
            return shared or self.float_quotient(a, b, e.dtype, axes)
        if e.dtype.is_int and a.dtype.is_int and b.dtype.is_int and a.dtype.kind != b.dtype.kind:
            # uint32 with int32: TVM computes in the signed type, Triton would in the unsigned one
            if a.dtype.bits == b.dtype.bits and not (is_literal(a) or is_literal(b)):
                a, b = self.cast(a, e.dtype), self.cast(b, e.dtype)
        if e.dtype.is_int:
            # a narrow integer beside a wider one (uint8 + an int32 loop index): TVM computes in the wider
            # type; Triton would in the tensor's, where the other is a Python int or constexpr (T.unroll)
            a, b = (self.cast(t, e.dtype) if _narrower_int(t, e.dtype) else t for t in (a, b))
        return Tile(P.binop(op, a.node, b.node), e.dtype, axes)

    def float_quotient(self, a: Tile, b: Tile, dt: DType, axes) -> Tile:
        """``a / b`` of floats rounded as TileLang's: Triton's float32 ``/`` is the approximate
        div.full.f32, TileLang's (nvcc without --use_fast_math) rounds correctly, which decides e.g.
        an fp8 quantization's ties and the floor of an exact quotient; Triton divides 16-bit floats
        in float32 and keeps the float32 quotient, TileLang's (CUDA's __hdiv) rounds it to their
        type, which a comparison of the quotient sees. A correctly rounded float32 quotient rounded
        again is the correctly rounded 16-bit one (24 >= 2 * 11 + 2 bits)."""
        if is_literal(a) and is_literal(b) or dt.name not in ("float16", "bfloat16", "float32"):
            return Tile(P.binop("/", a.node, b.node), dt, axes)
        wide = [
            t.node if is_literal(t) or self.storage_dtype(t.dtype) == FLOAT32 else convert(t.node, FLOAT32, t.axes)
            for t in (a, b)
        ]
        quotient = P.binop("/", *wide) if self.options.fast_math else P.call("tl.math.div_rn", *wide)
        storage = self.storage_dtype(dt)
        return Tile(quotient if storage == FLOAT32 else convert(quotient, storage, axes), dt, axes)

    def scalar(self, e, what: str) -> Tile:
        t = self.ev(e)
        if t.axes:
            raise self.error(f"{what} must be the same for every T.Parallel iteration / thread")
        return t

    # ------------------------------------------------------------------ global memory
    def pointer(self, buf: ir.Buffer) -> str:
        return self.pointers[buf.root]

    def global_address(self, buf: ir.Buffer, idx: list[Tile], idx_ir: list, extra_axes=frozenset(), load=False):
        """Offsets and mask of ``buf[idx]``: bounds per dimension unless provable.  A load needs only
        the conditions of its own lanes (its value is used under all of them anyway)."""
        offs = None
        axes = frozenset(extra_axes).union(*(t.axes for t in idx))
        facts = self.guard_facts(axes, within=load)  # `if k < n:` bounds k: its mask is part of this one
        mask_parts = []
        scalar_parts = False
        for d, (t, e) in enumerate(zip(idx, idx_ir)):
            if _loads(t.node):  # a data-dependent index (``H[A[i] % n]``): loaded once, named
                t = Tile(self.named(t.node, "idx"), t.dtype, t.axes)
            stride = buf.strides[d]
            term = t.node
            if not (isinstance(stride, int) and stride == 1):
                scale = self.ev(ir_expr(stride)).node
                index, factor = literal_value(t.node), literal_value(scale)
                if type(index) is int and type(factor) is int:
                    term = P.const(index * factor)  # a constant index: its offset, not ``1 * 96``
                elif type(index) is int and index == 1:
                    term = scale
                else:
                    term = P.binop("*", t.node, scale)
            if not (isinstance(t.node, ast.Constant) and t.node.value == 0):  # no `0 * stride` terms
                offs = term if offs is None else P.binop("+", offs, term)
            in_bounds = []
            if e is None or not (self.scope.ranges.below(e, buf.shape[d]) or known_below(facts, e, buf.shape[d])):
                in_bounds.append(P.binop("<", t.node, self.ev(ir_expr(buf.shape[d])).node))
            if e is None or not (self.scope.ranges.nonneg(e) or known_nonneg(facts, e)):
                in_bounds.append(P.binop(">=", t.node, P.const(0)))
            mask_parts += in_bounds
            scalar_parts = scalar_parts or (bool(in_bounds) and not t.axes)
        if load and self.scope.load_guard is not None:  # a copy run ahead of its `if` (speculate.py)
            mask_parts.append(self.scope.load_guard)
            scalar_parts = True
        lane = self.lane_mask(axes, within=load)
        # a block-uniform `if` (0-d) joined with per-lane parts: the interpreter's `&` yields int data
        scalar_parts = scalar_parts or (lane is not None and any(not c.axes for c in self.scope.conds))
        mask = P.and_all(mask_parts + ([lane] if lane is not None else []))
        if scalar_parts and mask is not None:
            mask = self.scalar_mask(mask, block=bool(axes))
        return self.named(offs, "offs") if offs is not None else P.const(0), self.named(mask, "mask"), axes

    def named(self, node: ast.expr | None, hint: str) -> ast.expr | None:
        """Give an offset or mask expression a name, once per TileLang statement (the same mask
        serves a statement's loads and its store), as a person writing Triton would."""
        if node is None or isinstance(node, (ast.Name, ast.Constant)) or self.scope.inline_only:
            return node
        key = ast.dump(node)
        if key not in self.statement_names:
            self.statement_names[key] = self.assign(hint, node)
        return P.name(self.statement_names[key])

    def global_load(self, buf: ir.Buffer, idx: list[Tile], idx_ir: list) -> Tile:
        offs, mask, axes = self.global_address(buf, idx, idx_ir, load=True)
        if buf in self.scratch.addresses:  # a shared buffer in the on-chip scratch area
            return Tile(on_chip.load(self, buf, offs, mask), buf.dtype, axes)
        if fp4.is_packed(buf.dtype):
            whole = fp4.pairs_whole(self, buf, idx, idx_ir)
            return fp4.load(self, buf, offs, mask, axes, fp4.pair_offsets(self, buf, idx, idx_ir) if whole else None)
        ptr = self.named_offsets(buf, offs)
        kwargs = {}
        if mask is not None:  # out of bounds reads 0, or the tensor's T.annotate_safe_value
            kwargs = {"mask": mask, "other": load_other(buf.dtype, safe_values(self).get(buf.root, 0))}
        node = P.call("tl.load", ptr, **kwargs)
        if buf.dtype.name == E8M0:
            self.helpers.add("_e8m0_to_float")
            node = P.call("_e8m0_to_float", node)
        elif self.storage_dtype(buf.dtype) != buf.dtype:
            node = P.to(node, self.storage_dtype(buf.dtype))
        return Tile(node, buf.dtype, axes)

    def named_offsets(self, buf: ir.Buffer, offs: ast.expr) -> ast.expr:
        ptr = P.name(self.pointer(buf))
        if buf.dtype != buf.root.dtype:  # T.view with another dtype: the same bytes, reinterpreted
            ptr = P.call(P.attr(ptr, "to"), P.call("tl.pointer_type", P.dtype(buf.dtype)), bitcast=True)
        if isinstance(offs, ast.Constant) and offs.value == 0:
            return ptr
        return P.binop("+", ptr, offs)

    def global_store(self, buf: ir.Buffer, idx: list[Tile], idx_ir: list, value: Tile) -> None:
        offs, mask, axes = self.global_address(buf, idx, idx_ir, value.axes | self.cond_axes())
        if (value.axes | self.cond_axes()) - frozenset().union(*(t.axes for t in idx)):
            # several iterations write one element (TileLang leaves the winner unspecified)
            spread = [self.scope.lanes.padded[k] if k in axes else 1 for k in range(self.scope.lanes.rank)]
            offs = P.binop("+", offs, P.call("tl.zeros", P.list_(spread), P.dtype(INT32)))
        if buf in self.scratch.addresses:  # a shared buffer in the on-chip scratch area
            on_chip.store(self, buf, offs, mask, self.cast(value, buf.dtype).node)
            return
        if fp4.is_packed(buf.dtype):
            whole = fp4.pairs_whole(self, buf, idx, idx_ir)
            code = self.cast(value, buf.dtype)
            code = code if fp4.is_packed_fp4(buf.dtype) else fp4.nibble(code)
            packed = fp4.pair_offsets(self, buf, idx, idx_ir) if whole else None
            fp4.store(self, buf, offs, code, mask, axes, packed)
            return
        ptr = self.named_offsets(buf, offs)
        node = self.cast(value, buf.dtype).node
        if buf.dtype.name == E8M0:
            node = e8m0.encode(self, node)
        kwargs = {"mask": mask} if mask is not None else {}
        self.emit(P.expr_stmt(P.call("tl.store", ptr, node, **kwargs)))


def _loads(node: ast.expr) -> bool:
    """Does ``node`` load memory (``tl.load``, or the on-chip scratch area's ``_shared_load``)?"""
    return any(
        P.is_tl_call(n, "load")
        or isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id == "_shared_load"
        for n in ast.walk(node)
    )


def _literal_in(t: Tile, dt: DType) -> Tile:
    """A float literal in a comparison typed 16-bit (a constant of that type, or folded from them; a
    Python float makes the comparison float32) is that dtype's value: round it here, as Triton compares
    a literal with the other operand's full value (kept in fp32 under the interpreter for bf16)."""
    value = literal_value(t.node) if is_literal(t) else None
    if not isinstance(value, float) or not dt.is_float or dt.bits != 16 or value != value or abs(value) == float("inf"):
        return t
    try:
        if dt.name == "bfloat16":  # round the fp32 bits to nearest even
            single = struct.unpack("<I", struct.pack("<f", value))[0]
            single = (single + 0x7FFF + ((single >> 16) & 1)) & 0xFFFF0000
            rounded = struct.unpack("<f", struct.pack("<I", single))[0]
        else:
            rounded = struct.unpack("<e", struct.pack("<e", value))[0]
    except OverflowError:  # beyond the dtype's range
        rounded = float("inf") if value > 0 else float("-inf")
    return t if rounded == value else Tile(P.const(rounded), t.dtype, t.axes)


# integer operations that leave one operand as it is: ``x op right[op]`` and ``left[op] op x``
_RIGHT_IDENTITY = {"+": 0, "-": 0, "*": 1, "//": 1, "/": 1}
_LEFT_IDENTITY = {"+": 0, "*": 1}


def _int_identity(op: str, a: Tile, b: Tile, dtype) -> Tile | None:
    """The operand an integer identity leaves (``i + past_len`` with past_len = 0, ``bz // NH`` with
    NH = 1, ``0 + i``), where it already has the result's dtype; else None."""
    if not dtype.is_int:
        return None
    if op in _RIGHT_IDENTITY and literal_value(b.node) == _RIGHT_IDENTITY[op] and a.dtype == dtype:
        return a
    if op in _LEFT_IDENTITY and literal_value(a.node) == _LEFT_IDENTITY[op] and b.dtype == dtype:
        return b
    return None


def _narrower_int(t: Tile, dtype) -> bool:
    """An integer tile of fewer bits than ``dtype`` (not a literal: a literal adopts the other operand's type)."""
    return t.dtype.is_int and t.dtype.bits < dtype.bits and not is_literal(t)


def _masked_load(e: ir.Select) -> bool:
    """``select(c, G[i], 0)`` with G global and a zero of the load's own dtype: a load masked by c."""
    f, t = e.false_value, e.true_value
    return (
        isinstance(t, ir.Load)
        and t.buffer.scope == ir.GLOBAL
        and t.dtype == e.dtype
        and isinstance(f, ir.Const)
        and not isinstance(f.value, bool)
        and f.value == 0
    )
