"""Emit: assemble the Triton module AST for a PrimFunc and print it with ``ast.unparse``,
with a comment naming the TileLang line each group of statements comes from."""

from __future__ import annotations

import ast
import linecache
import os
import sys

from .. import ir
from ..ir import INT32
from ..language.dtypes import DTYPES
from ..passes.pipeline import run_kernel_passes
from . import block_order, gluon_routes, routes  # noqa: F401 - gluon_routes registers the Gluon routes
from . import pyast as P
from .fp4 import HELPERS as FP4_HELPERS
from .held import HeldMisread, open_held
from .intrinsics import check_fp8
from .libm import HELPERS as LIBM_HELPERS
from .lower import KernelLowerer, LoweringOptions
from .masks import HELPERS as MASK_HELPERS
from .module import KernelLaunch, TritonModule
from .on_chip import HELPERS as ON_CHIP_HELPERS
from .on_chip import OffChip
from .on_chip import wanted as on_chip_wanted
from .on_chip import wanted_after as on_chip_wanted_after
from .scratch import ONE_HOT_LIMIT, LanesMisread, NeedsScratch, ScratchState
from .scratch import prologue as scratch_prologue
from .threads import open_thread_view
from .tidy import drop_dead_assignments, merge_repeated_values
from .values import Tile, launch_warps, next_pow2
from .warp_atomics import HELPERS as WARP_ATOMIC_HELPERS

INT64 = DTYPES["int64"]

# module-level @triton.jit functions a kernel may call (the lowerer collects their names in
# ``helpers``); printed once per module, before the kernels
JIT_HELPER_SOURCES = {
    "_round_to_e4m3": """
@triton.jit
def _round_to_e4m3(x):
    # the interpreter's fp32 -> float8e4nv conversion rounds wrongly when rounding carries into
    # the next power of two: round to the e4m3 grid (nearest even, saturating at 448) here,
    # so the conversion after it is exact
    x = tl.minimum(tl.maximum(tl.cast(x, tl.float32), -448.0), 448.0)  # x may be a plain int
    bits = x.to(tl.uint32, bitcast=True)
    normal = ((bits + 0x7FFFF + ((bits >> 20) & 1)) & 0xFFF00000).to(tl.float32, bitcast=True)
    tiny = (x * 512.0 + 12582912.0 - 12582912.0) / 512.0
    return tl.where(tl.abs(x) < 0.015625, tiny, normal)
""",
    "_round_to_e5m2": """
@triton.jit
def _round_to_e5m2(x):
    # as _round_to_e4m3, for float8e5 (2 mantissa bits, largest finite 57344)
    x = tl.minimum(tl.maximum(tl.cast(x, tl.float32), -57344.0), 57344.0)
    bits = x.to(tl.uint32, bitcast=True)
    normal = ((bits + 0xFFFFF + ((bits >> 21) & 1)) & 0xFFE00000).to(tl.float32, bitcast=True)
    tiny = (x * 65536.0 + 12582912.0 - 12582912.0) / 65536.0
    return tl.where(tl.abs(x) < 0.00006103515625, tiny, normal)
""",
    "_round_to_e8m0": """
@triton.jit
def _round_to_e8m0(x):
    # float8_e8m0fnu values are held as float32: x rounded up to a power of two 2**(e - 127),
    # e in 0..254, as CUDA's __nv_cvt_float_to_e8m0(satfinite, round toward +inf) (the sign is
    # ignored, 0 gives 2**-127, inf the largest, NaN stays NaN)
    if x.dtype == tl.float64:  # from its own bits: through float32 it could round down first
        bits64 = x.to(tl.uint64, bitcast=True) & 0x7FFFFFFFFFFFFFFF
        e = (bits64 >> 52).to(tl.int32) - 896 + ((bits64 & 0xFFFFFFFFFFFFF) != 0).to(tl.int32)
        e = tl.minimum(tl.maximum(e, 0), 254).to(tl.uint32)
        nan = bits64 > 0x7FF0000000000000
    else:
        bits = tl.cast(x, tl.float32).to(tl.uint32, bitcast=True) & 0x7FFFFFFF
        e = bits >> 23
        m = bits & 0x7FFFFF
        up = (m != 0) & (e < 254) & ((e != 0) | (m > 0x400000))
        e = tl.minimum(e + up.to(tl.uint32), 254)
        nan = bits > 0x7F800000
    value = tl.where(e == 0, 0x400000, e << 23).to(tl.float32, bitcast=True)
    return tl.where(nan, float("nan"), value)
""",
    "_e8m0_to_float": """
@triton.jit
def _e8m0_to_float(b):
    # the uint8 storage of float8_e8m0fnu as its value: 2**(b - 127), 0xFF NaN
    e = b.to(tl.uint32)
    value = tl.where(e == 0, 0x400000, e << 23).to(tl.float32, bitcast=True)
    return tl.where(e == 255, float("nan"), value)
""",
    "_e8m0_bits": """
@triton.jit
def _e8m0_bits(x):
    # a float32 as its float8_e8m0fnu byte, rounded up first (_round_to_e8m0): values cast to it
    # are on its grid already, a sum of them is not
    bits = _round_to_e8m0(x).to(tl.uint32, bitcast=True) & 0x7FFFFFFF
    e = tl.where(bits > 0x7F800000, 255, tl.where(bits < 0x800000, 0, bits >> 23))
    return e.to(tl.uint8)
""",
    "_max_combine": """
@triton.jit
def _max_combine(a, b):
    return tl.maximum(a, b)
""",
    "_max_nan_combine": """
@triton.jit
def _max_nan_combine(a, b):
    # T.reduce_max(..., nan_propagate=True): a NaN wins.  Triton 3.6 computes a bf16 maximum in
    # float32: back to the operands' type, which a reduction's combine function must keep
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL).to(a.dtype)
""",
    "_min_nan_combine": """
@triton.jit
def _min_nan_combine(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL).to(a.dtype)
""",
    "_atomic_rmw_16bit": """
@triton.jit
def _atomic_rmw_16bit(ptr, value, mask, base, OP: tl.constexpr, ROUND_BF16: tl.constexpr):
    # an atomic add/max/min of 16-bit floats where Triton has none (max/min; bf16 add under the
    # interpreter): compare-and-swap the element's bits until no lane's exchange fails.  Masked-off
    # lanes exchange the tensor's first element with itself (atomic_cas has no mask).  Returns the
    # previous values
    bits_ptr = tl.where(mask, ptr, base).to(tl.pointer_type(tl.int16))
    seen = tl.load(bits_ptr)
    pending = (seen == seen) & mask
    prev = seen
    value = value.to(tl.float32)
    while tl.max(pending.to(tl.int32)) > 0:
        old = seen.to(ptr.dtype.element_ty, bitcast=True).to(tl.float32)
        if OP == "add":
            new = old + value
        elif OP == "max":
            new = tl.maximum(old, value)
        else:
            new = tl.minimum(old, value)
        if ROUND_BF16:
            new = _round_to_bf16(new)
        new = tl.where(pending, new, old).to(ptr.dtype.element_ty).to(tl.int16, bitcast=True)
        now = tl.atomic_cas(bits_ptr, seen, new)
        prev = tl.where(pending & (now == seen), seen, prev)
        pending = pending & (now != seen)
        seen = now
    return prev.to(ptr.dtype.element_ty, bitcast=True)
""",
    "_mul_combine": """
@triton.jit
def _mul_combine(a, b):
    return a * b
""",
    "_and_combine": """
@triton.jit
def _and_combine(a, b):
    return a & b
""",
    "_or_combine": """
@triton.jit
def _or_combine(a, b):
    return a | b
""",
    "_xor_combine": """
@triton.jit
def _xor_combine(a, b):
    return a ^ b
""",
    "_philox_draw": """
@triton.jit
def _philox_draw(seed, seq, draw):
    # draw number `draw` of curand's Philox4_32_10 stream curand_init(seed, seq, 0): lane draw % 4 of
    # Philox-4x32-10 at the 128-bit counter (draw // 4, seq) under the 64-bit key seed
    d = tl.cast(draw, tl.uint64)
    block = d >> 2
    s = tl.cast(seq, tl.uint64) + tl.zeros_like(block)
    r0, r1, r2, r3 = tl.philox(seed, (block & 0xFFFFFFFF).to(tl.uint32), (block >> 32).to(tl.uint32),
                               (s & 0xFFFFFFFF).to(tl.uint32), (s >> 32).to(tl.uint32))
    lane = d & 3
    return tl.where(lane == 0, r0, tl.where(lane == 1, r1, tl.where(lane == 2, r2, r3)))
""",
    "_philox_uniform": """
@triton.jit
def _philox_uniform(seed, seq, draw):
    # curand_uniform: the draw scaled into (0, 1], x * 2^-32 + 2^-33
    x = _philox_draw(seed, seq, draw).to(tl.float32)
    return tl.fma(x, 2.3283064365386963e-10, 1.1641532182693481e-10)
""",
    "_round_to_bf16": """
@triton.jit
def _round_to_bf16(x):
    # bf16 values are kept in fp32 under the interpreter, whose own fp32 -> bf16 truncates:
    # round to nearest even here, so the store's conversion is exact
    bits = tl.cast(x, tl.float32).to(tl.uint32, bitcast=True)  # x may be a plain int
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.to(tl.float32, bitcast=True)
""",
    "_tanh": """
@triton.jit
def _tanh(x):
    # core Triton has no tanh.  (1 - e) / (1 + e) with e = exp(-2|x|) cancels for small |x|, where
    # the odd Taylor series is exact to far below fp32's precision instead
    t = tl.abs(x)
    e = tl.exp(-2.0 * t)
    large = (1.0 - e) / (1.0 + e)
    x2 = x * x
    small = x * (1.0 + x2 * (-1.0 / 3.0 + x2 * (2.0 / 15.0 + x2 * (-17.0 / 315.0 + x2 * (62.0 / 2835.0)))))
    return tl.where(t < 0.125, small, tl.where(x < 0, -large, large))
""",
    "_rint": """
@triton.jit
def _rint(x):
    # nearbyint: round to nearest, ties to even.  Adding 2**23 (2**52 for fp64) leaves no fraction
    # bits, so the addition itself rounds as the FPU does; from there up every float is an integer
    if x.dtype == tl.float64:
        big = 4503599627370496.0
    else:
        big = 8388608.0
    a = tl.abs(x)
    r = tl.where(a < big, (a + big) - big, a)
    return tl.where(x < 0, -r, tl.where(x == 0, x, r))  # -0.0 stays -0.0
""",
    "_round_half_away": """
@triton.jit
def _round_half_away(x):
    # C roundf: ties away from zero; x - trunc(x) is exact, so the tie test is too
    t = tl.where(x >= 0, tl.floor(x), tl.ceil(x))
    return tl.where(tl.abs(x - t) >= 0.5, t + tl.where(x < 0, -1.0, 1.0).to(t.dtype), t)
""",
    "_two_sum": """
@triton.jit
def _two_sum(a, b):
    # Knuth's TwoSum: s = fl(a + b) and the part of a + b it lost, exactly (s + lost == a + b)
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)
""",
    "_ieee_round": """
@triton.jit
def _ieee_round(r, lost, mode: tl.constexpr):
    # the exact value r + lost (float64; |lost| below half an ulp of r) rounded to float32 in mode
    # 0 rn, 1 rz, 2 ru, 3 rd, as PTX's add.rn.f32 / add.rz.f32 / ... round their exact result
    c = r.to(tl.float32)  # to nearest, ties to even
    c64 = c.to(tl.float64)
    above = (c64 > r) | ((c64 == r) & (lost < 0))  # c is above the exact value
    below = (c64 < r) | ((c64 == r) & (lost > 0))
    # the next float32 down / up: the bits of a float order as sign and magnitude
    bits = c.to(tl.int32, bitcast=True)
    down = tl.where(c > 0, bits - 1, tl.where(c == 0, -2147483647, bits + 1)).to(tl.float32, bitcast=True)
    up = tl.where(c > 0, bits + 1, tl.where(c == 0, 1, bits - 1)).to(tl.float32, bitcast=True)
    if mode == 0:
        # r itself may be a tie between two float32 that the lost part decides
        lo = tl.where(c64 > r, down, c)
        hi = tl.where(c64 > r, c, up)
        tie = (lost != 0) & (c64 != r) & (lo.to(tl.float64) + hi.to(tl.float64) == 2.0 * r)
        return tl.where(tie, tl.where(lost > 0, hi, lo), c)
    toward_down = tl.where(above, down, c)
    toward_up = tl.where(below, up, c)
    if mode == 1:
        return tl.where(r > 0, toward_down, toward_up)
    if mode == 2:
        return toward_up
    return toward_down
""",
    "_div_rn_shared": """
@triton.jit
def _div_rn_shared(a, b, b_inv):
    # float32 a / b correctly rounded (div.rn.f32's bits), b_inv = RN(1 / b) taken once for the
    # numerators sharing b: q = RN(a * b_inv) is faithful, and one FMA correction
    # RN(q + (a - b * q) * b_inv) rounds it correctly (Markstein's theorem: b_inv within half an ulp
    # of 1 / b, q within an ulp of a / b, a - b * q exact in an FMA), given no underflow or overflow,
    # which holds where |b| and nonzero |a| lie in [2^-60, 2^60]; a zero a keeps a * b_inv (its sign).
    # div.rn.f32 per element is a reciprocal, a range check and a branch to a slow path, and ptxas
    # keeps each element's chain apart; here one branch for the whole tile: a tile with any element
    # outside that range (zeros, infinities, NaN, extreme exponents) takes div.rn.f32
    a, b = tl.broadcast(a, b)
    a, b_inv = tl.broadcast(a, b_inv)
    abs_a = tl.abs(a)
    abs_b = tl.abs(b)
    in_range = (abs_b >= 8.673617379884035e-19) & (abs_b <= 1.152921504606847e18) & (abs_a <= 1.152921504606847e18)
    in_range = in_range & ((abs_a >= 8.673617379884035e-19) | (a == 0))
    # decided first, so that each branch turns a into q in place; the common case first, so that it
    # is the code that follows the test (the other branch's is out of the way)
    if tl.min(in_range.to(tl.int32)) != 0:
        q = a * b_inv
        q = tl.where(a == 0, q, tl.fma(tl.fma(-b, q, a), b_inv, q))
    else:
        q = tl.math.div_rn(a, b)
    return q
""",
    "_floordiv": """
@triton.jit
def _floordiv(a, b):
    # TileLang's // rounds toward -inf; Triton's integer // truncates
    q = a // b
    return q - ((a % b != 0) & ((a < 0) != (b < 0))).to(q.dtype)
""",
    "_floormod": """
@triton.jit
def _floormod(a, b):
    r = a % b
    return r + tl.where((r != 0) & ((r < 0) != (b < 0)), b, 0)
""",
    "_fns": """
@triton.jit
def _fns(mask, base, offset):
    # CUDA __fns (PTX fns.b32): the position of the offset-th set bit of mask counting from bit base,
    # upward for offset > 0, downward for offset < 0 (offset 0: base if that bit is set); else 0xFFFFFFFF
    mask = mask.to(tl.uint32, bitcast=True)
    zero = (mask * 0).to(tl.int32) + base * 0 + offset * 0
    at_or_below_base = zero
    for pos in tl.static_range(32):
        at_or_below_base += ((mask >> pos) & 1).to(tl.int32) * (pos <= base)
    found = zero - 1
    from_base = zero  # set bits in [base, pos]
    below = zero  # set bits in [0, pos)
    for pos in tl.static_range(32):
        bit = ((mask >> pos) & 1).to(tl.int32)
        from_base += bit * (pos >= base)
        hit_up = (offset > 0) & (pos >= base) & (from_base == offset)
        hit_down = (offset < 0) & (pos <= base) & (at_or_below_base - below == -offset)
        hit_base = (offset == 0) & (pos == base)
        found = tl.where((bit != 0) & (hit_up | hit_down | hit_base), pos, found)
        below += bit
    return found.to(tl.uint32, bitcast=True)
""",
}
JIT_HELPER_SOURCES.update(FP4_HELPERS)  # packed fp4 loads, stores and conversions (codegen/fp4.py)
JIT_HELPER_SOURCES.update(LIBM_HELPERS)  # math functions core Triton lacks (codegen/libm.py)
JIT_HELPER_SOURCES.update(MASK_HELPERS)  # masks of 0 / -inf without booleans (codegen/masks.py)
JIT_HELPER_SOURCES.update(WARP_ATOMIC_HELPERS)  # warp-aggregated atomics' inline PTX (codegen/warp_atomics.py)
JIT_HELPER_SOURCES.update(ON_CHIP_HELPERS)  # the on-chip scratch area's inline PTX (codegen/on_chip.py)


def numel_padded(buf: ir.Buffer) -> int:
    """Elements of ``buf`` as a register tile (each extent padded to a power of two)."""
    n = 1
    for d in buf.shape:
        n *= next_pow2(d)
    return n


def lower_kernel(
    kernel: ir.Kernel, func: ir.PrimFunc, options: LoweringOptions
) -> tuple[ast.FunctionDef, KernelLaunch, set]:
    """Lower one kernel after the kernel passes its options turn on (passes/pipeline.py); where the
    register path hands a shared buffer over to global scratch (scratch.py), lower it again with
    that buffer there, and with the area on chip where its accesses in loops ask for it
    (on_chip.wanted_after)."""
    rewritten = run_kernel_passes(kernel, options)
    kernel = rewritten.kernel
    # a buffer a pass's block copies store past the one-hot limit stays in scratch, where the lane
    # space put it: as a register tile (a KV ring of [2, 64, 1024]) it spills, and its sub-box reads
    # become gathers
    choice = {b for b in rewritten.stored if numel_padded(b) > ONE_HOT_LIMIT}
    on_chip = on_chip_wanted(options, kernel)
    off_chip = False  # an access the on-chip area does not serve was met (OffChip)
    lanes_own = options.user_syncs
    not_held = set()
    while True:
        try:
            state = ScratchState(choice=choice, on_chip=on_chip, lanes_own=lanes_own)
            lowered = _lower_kernel(kernel, func, options, state, frozenset(not_held))
            if not off_chip and on_chip_wanted_after(options, state):  # area accessed in loops: on chip
                on_chip = True
                continue
            return lowered
        except HeldMisread as misread:  # an access held.py did not foresee: that array as a tile
            not_held.add(misread.buffer)
        except NeedsScratch as need:
            if need.buffer in choice:  # cannot happen: its accesses no longer take the register path
                raise (need.__cause__ or need) from None
            choice.add(need.buffer)
        except OffChip:  # an access the on-chip scratch area does not serve: the area in global memory
            on_chip = False
            off_chip = True  # and no second try after lowering
        except LanesMisread:  # scratch barriers as without TL_DISABLE_THREAD_STORAGE_SYNC
            if not lanes_own:  # cannot happen: nothing is checked without it
                raise
            lanes_own = False


def _lower_kernel(
    kernel: ir.Kernel, func: ir.PrimFunc, options: LoweringOptions, state: ScratchState, not_held: frozenset
) -> tuple[ast.FunctionDef, KernelLaunch, set]:
    lw = KernelLowerer(kernel, func.params, options, scratch=state, not_held=not_held)
    lw.scope.ranges.floor_below_zero = options.trip_bounds  # a loop's bounds from (bx * b - w) // b
    lw.scope.ranges.exact_spans = options.exact_ranges
    args = []
    arg_names = []
    for p in list(func.params) + list(func.sizes):
        n = lw.names.fresh(p.name)
        if isinstance(p, ir.Buffer):
            lw.pointers[p] = n
        else:
            lw.scope.env[p] = Tile(P.name(n), p.dtype)
            if p.kind == "size":
                lw.scope.ranges.set(p, 0, 2 ** (p.dtype.bits - 1) - 1)
        args.append(p)
        arg_names.append(n)
    lw.origin = kernel.loc
    lw.once_lets, lw.let_count = block_order.let_bindings(kernel)
    # a tensor of 2**31 elements or more: block offsets (bx * block) would overflow int32
    block_dtype = INT64 if _needs_64bit_offsets(func) else INT32
    # block indices other than the program ids: T.use_swizzle's, else the heaviest-first order's
    # (grid_order is None when swizzled)
    order = None
    if options.heavy_first:
        snake = options.snake_order
        order = block_order.grid_order(kernel, lw.once_lets, options.sms, options.blocks_per_sm, snake)
    first_block_stmt = len(lw.out)
    if kernel.swizzle:
        remapped = swizzle_block_ids(lw, kernel)
    else:
        remapped = block_order.block_ids(lw, kernel, order) if order is not None else {}
    for axis, var in enumerate(kernel.block_vars):
        block_id = remapped.get(axis, P.call("tl.program_id", axis))
        n = lw.assign(var.name, block_id if block_dtype == INT32 else P.to(block_id, INT64))
        lw.scope.env[var] = Tile(P.name(n), block_dtype)
        extent = kernel.grid[axis]
        if isinstance(extent, ir.Const):
            lw.scope.ranges.set(var, 0, extent.value - 1)
        elif lw.scope.ranges.of(extent) is not None:
            lw.scope.ranges.set(var, 0, lw.scope.ranges.of(extent)[1] - 1)
    if order is not None:
        note = "heaviest blocks first: this index " + ("lengthens" if order.last_first else "shortens") + " the loops"
        if order.snake_sms:
            note += f"; odd rounds of {order.snake_sms} launch slots reversed, a heavy and a light block an SM"
        lw.out[first_block_stmt].t2t_note = note + " (codegen/block_order.py)"
    if kernel.thread_vars:
        open_thread_view(lw, kernel)
        open_held(lw, kernel)
    prologue_at = len(lw.out)
    lw.lower_stmts(kernel.body)
    host_descriptors = [(name, args.index(buf), box) for name, buf, box in lw.descriptors.host]
    arg_names += [name for name, _, _ in host_descriptors]
    if lw.scratch.bytes:
        lw.out[prologue_at:prologue_at] = scratch_prologue(lw, kernel)
        if lw.scratch.param is not None:  # global scratch: the hidden argument
            arg_names.append(lw.scratch.param)
    multiples = _size_multiples(func, args) if options.size_multiples else []
    params = [ast.arg(n) for n in arg_names]
    rounding = []
    for index in multiples:
        size = arg_names[index]
        multiple = lw.names.fresh(f"{size}_multiple")
        params.append(ast.arg(multiple, annotation=P.attr("tl", "constexpr")))
        # the launch passes a power of two that divides the size: rounding down to a multiple of it
        # changes nothing and tells Triton's alignment analysis (offsets, masks: vector loads)
        rounding.append(P.assign(size, P.binop("*", P.binop("//", P.name(size), P.name(multiple)), P.name(multiple))))
    fn = ast.FunctionDef(
        name=lw.names.fresh(kernel.name + "_kernel"),
        args=ast.arguments([], params, None, [], [], None, []),
        body=rounding + lw.descriptors.prologue + lw.out or [ast.Pass()],
        decorator_list=[P.attr("triton", "jit")],
        returns=None,
        type_params=[],
        lineno=0,
    )
    fn.t2t_origin = kernel.loc
    merge_repeated_values(fn)
    drop_dead_assignments(fn)
    check_fp8(lw, kernel, func.params)
    num_warps = launch_warps(lw.options, kernel.threads)
    aligned = [p for p in args if p in lw.descriptors.aligned]
    on_chip_bytes = lw.scratch.bytes if lw.scratch.on_chip else 0
    launch = KernelLaunch(
        fn.name, list(kernel.grid), num_warps, args, aligned, lw.scratch.bytes - on_chip_bytes, lw.scratch.param,
        host_descriptors, multiples, static_shared=on_chip_bytes,
    )  # fmt: skip
    return fn, launch, lw.helpers


def _size_multiples(func: ir.PrimFunc, args: list) -> list[int]:
    """The indices in ``args`` of the sizes in a global tensor parameter's strides (``K`` of an
    ``(M, K)`` tensor): Triton specialises an int argument divisible by 16, so with a row of 1000
    halves it knows no alignment of the rows and loads them 2 bytes at a time, though every row
    starts 16-byte aligned.  Such a size is taken as a multiple of the largest power of two up to 8
    that divides it at launch (TILE2TRITON_SIZE_MULTIPLES)."""
    in_strides = set()
    for p in func.params:
        if isinstance(p, ir.Buffer) and p.scope == ir.GLOBAL and p.strides:
            for stride in p.strides:
                if isinstance(stride, ir.Expr):
                    in_strides |= {e.var for e in ir.iter_expr_tree(stride) if isinstance(e, ir.VarRef)}
    return [i for i, a in enumerate(args) if isinstance(a, ir.Var) and a.kind == "size" and a in in_strides]


def _needs_64bit_offsets(func: ir.PrimFunc) -> bool:
    """Whether a global tensor of ``func`` may hold 2**31 elements or more: a static shape that
    large, or a symbolic size declared int64 (``T.symbolic("n", "int64")``)."""
    if any(v.dtype.bits > 32 for v in func.sizes):
        return True
    made = [s.buffer for k in func.kernels for s in ir.walk(k.body) if isinstance(s, ir.MakeTensor)]
    for p in [*func.params, *made]:  # parameters, and the tensors T.make_tensor views
        if isinstance(p, ir.Buffer) and all(isinstance(d, int) for d in p.shape):
            count = 1
            for d in p.shape:
                count *= d
            if count >= 2**31:
                return True
    return False


def swizzle_block_ids(lw: KernelLowerer, kernel: ir.Kernel) -> dict:
    """``T.use_swizzle(panel)``: TileLang's ``rasterization2DRow/Column`` (a bijection on the grid
    that walks it in panels of ``panel`` rows, serpentine), so neighbouring programs share tiles in L2."""
    panel, order = kernel.swizzle
    gx, gy = (lw.ev(g).node for g in kernel.grid[:2])
    major, minor = (gx, gy) if order == "row" else (gy, gx)
    block = lw.assign(
        "block_idx", P.binop("+", P.call("tl.program_id", 0), P.binop("*", P.call("tl.program_id", 1), gx))
    )
    panel_size = P.binop("*", P.const(panel), major)
    panel_idx = lw.assign("panel_idx", P.binop("//", P.name(block), panel_size))
    offset = lw.assign("panel_offset", P.binop("%", P.name(block), panel_size))
    stride = lw.assign(
        "panel_rows",
        P.call("tl.minimum", P.const(panel), P.binop("-", minor, P.binop("*", P.name(panel_idx), P.const(panel)))),
    )
    along = P.binop("//", P.name(offset), P.name(stride))
    serpentine = P.call("tl.where", P.binop("==", P.binop("%", P.name(panel_idx), P.const(2)), P.const(1)),
                        P.binop("-", P.binop("-", major, P.const(1)), along), along)  # fmt: skip
    across = P.binop("+", P.binop("%", P.name(offset), P.name(stride)), P.binop("*", P.name(panel_idx), P.const(panel)))
    return {0: serpentine, 1: across} if order == "row" else {0: across, 1: serpentine}


def emit_module(func: ir.PrimFunc, options: LoweringOptions) -> TritonModule:
    """The module of the first registered route (codegen/routes.py) that takes the function, else
    the ``tl`` lowering of each of its kernels."""
    refusals = []
    for route in routes.ROUTES:
        planned = route.plan(func, options)
        if isinstance(planned, routes.Refusal):
            refusals.append(planned)
            continue
        if options.gluon_log:
            print(f"tile2triton: {func.name} ({_origin(func)}) lowered to {route.description}", file=sys.stderr)
        return route.emit(planned, options)
    reasons = [r.reason for r in refusals if r.tried]
    if options.gluon_log and reasons:
        print(
            f"tile2triton: {func.name} ({func.loc.file}:{func.loc.line}) keeps the tl lowering: {'; '.join(reasons)}",
            file=sys.stderr,
        )
    return _tl_module(func, options)


def _origin(func: ir.PrimFunc) -> str:
    return f"{os.path.basename(func.loc.file)}:{func.loc.line}" if func.loc.line else func.name


def _tl_module(func: ir.PrimFunc, options: LoweringOptions) -> TritonModule:
    functions, launches, helpers = [], [], set()
    for kernel in func.kernels:
        fn, launch, used = lower_kernel(kernel, func, options)
        functions.append(fn)
        launches.append(launch)
        helpers |= used
    header = f"# Triton generated by tile2triton from {func.name} ({_origin(func)})\nimport triton\nimport triton.language as tl\n"
    helper_src = "".join(JIT_HELPER_SOURCES[h] for h in sorted(helpers))
    printer = _Printer()
    body = "\n\n".join(printer.render(fn) for fn in functions)
    source = header + helper_src + "\n\n" + body + "\n"
    offset = source[: source.index(body)].count("\n") if body else 0
    line_map = {offset + k: v for k, v in printer.line_map.items()}
    return TritonModule(source, launches, line_map)


class _Printer(ast._Unparser):  # noqa: SLF001 - the stdlib printer, plus origin comments
    def __init__(self):
        super().__init__()
        self.line_map: dict = {}
        self._last_origin = None

    def render(self, node) -> str:
        self._last_origin = None
        self._source = []
        self.traverse(ast.fix_missing_locations(node))
        return "".join(self._source).lstrip("\n")

    def traverse(self, node):
        origin = getattr(node, "t2t_origin", None) if isinstance(node, ast.stmt) else None
        quoted = origin is not None and origin.line and not getattr(node, "t2t_repeat", False)
        if quoted and origin != self._last_origin and not isinstance(node, ast.FunctionDef):
            self._last_origin = origin
            text = linecache.getline(origin.file, origin.line).strip()
            if text:
                self.fill(f"# {os.path.basename(origin.file)}:{origin.line}: {text}")
        note = getattr(node, "t2t_note", None) if isinstance(node, ast.stmt) else None
        if note:
            self.fill(f"# {note}")
        if isinstance(node, ast.stmt) and origin is not None:
            line = "".join(self._source).count("\n") + 1
            self.line_map[line] = origin
        return super().traverse(node)
