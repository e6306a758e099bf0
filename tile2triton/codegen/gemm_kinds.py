"""How Triton runs a gemm on the target, and the register budget of a kernel's accumulators: the
facts the gemm rule (``tile_ops.py``) and the loop rule (``rules.py``) both decide by.

On sm_90 Triton issues ``tl.dot`` as wgmma (operands read from shared memory through descriptors)
where M is at least a warpgroup's 64 rows, and as mma.sync (operands in registers) below that;
``transposed_dot`` says where a gemm of fewer rows is written as its transposed product instead."""

from __future__ import annotations

import ast

from .. import ir
from ..ir.exprs import static
from ..passes import analysis
from . import pyast as P
from .values import Lowerer, launch_warps, next_pow2

WGMMA_ROWS = 64  # rows of one warpgroup's wgmma: Triton lowers a dot of fewer rows to mma.sync


def hopper(opts) -> bool:
    """sm_90's wgmma rules (and the interpreter's, so that the CPU runs the code the GPU does)."""
    return (opts.backend == "cuda" and opts.arch.startswith("sm_90")) or opts.interpret


def accumulators_past_budget(lw: Lowerer) -> bool:
    """Whether the kernel's gemm accumulators (each buffer counted once, padded to powers of two)
    take more registers a thread than ACC_REGS_PER_THREAD."""
    return analysis.accumulators_past_budget(lw.kernel, launch_warps(lw.options, lw.kernel.threads))


def runs_as_mma_sync(lw: Lowerer, g: ir.Gemm) -> bool:
    """Whether Triton issues the gemm as mma.sync (on sm_90): every dim at least 16 (a smaller gemm
    is a multiply and a sum), and fewer than a warpgroup of warps, or fewer than WGMMA_ROWS rows
    and not written as its transposed product."""
    m, n = (next_pow2(static(d) or 1) for d in g.c.buffer.shape[-2:])
    dims = [e for e in g.a.extents if static(e) != 1] or list(g.a.extents)  # the 2-D tile of A
    k = next_pow2(static(dims[0 if g.trans_a else -1]) or 1)
    if min(m, n, k) < 16:
        return False
    if launch_warps(lw.options, lw.kernel.threads) < 4:
        return True
    if m >= WGMMA_ROWS:
        return False
    return not (g.c.buffer.dtype.name in ("float32", "int32") and transposed_dot(lw, g, m, n))


def transposed_dot(lw: Lowerer, s: ir.Gemm, m: int, n: int) -> bool:
    """Whether a gemm of m x n (padded) is written as its transposed product ``C^T = B^T A^T``
    (TILE2TRITON_TRANSPOSED_DOTS), so that Triton issues a wgmma with the wide side as M.

    On sm_90 Triton runs ``tl.dot`` as wgmma only where M is at least a warpgroup's 64 rows; below
    that it takes mma.sync, which (1) among wgmma dots makes ptxas wait after every wgmma
    instruction of the kernel (attention backward's dQ = dS^T K of 32 query rows), and (2) loads
    the whole B operand into registers and keeps a second shared copy of an operand also used by
    a wgmma (sparse MLA backward: 288 KiB of shared memory, which sent every buffer to scratch).
    Taken when, on sm_90 with a warpgroup or more (under the interpreter too, so that the CPU runs
    the code the GPU does):
    - A is a 16-bit shared buffer: it becomes wgmma's B, read from shared memory (a fragment A, P
      of a softmax, is better left in registers as mma.sync's A);
    - the kernel has a wgmma-sized gemm (where every gemm is small, decoding's 16-row heads, there
      is nothing to serialize);
    - the gemms' accumulators leave room for the transposed product and its way back (H200 probe:
      gqa_bwd varlen, 216 accumulator registers a thread, spilled 68 -> 120 and ran 45.9 -> 58.1
      us), unless the kernel did not fit shared memory with mma.sync's second copies: the first
      shared-memory fit step (runtime/tuning.FIT_STEPS) transposes past the budget."""
    opts = lw.options
    warps = launch_warps(opts, lw.kernel.threads)
    a, b = s.a.buffer, s.b.buffer
    if not (opts.transposed_dots and hopper(opts) and warps >= 4 and m < WGMMA_ROWS <= n):
        return False
    if not (a.scope == ir.SHARED and a.dtype.bits == b.dtype.bits == 16):
        return False
    gemms = [g for g in ir.walk(lw.kernel.body) if isinstance(g, ir.Gemm)]
    if not any(next_pow2(static(g.c.buffer.shape[-2]) or 0) >= WGMMA_ROWS for g in gemms):
        return False
    return not accumulators_past_budget(lw) or opts.transposed_dots_past_budget


# Triton 3.6 on sm_90: the most pipeline stages for a loop whose one gemm multiplies a register tile the loop
# computes (T.gemm_sp's rebuilt dense A) while some of its tiles come in by pointer loads (cp.async), not TMA
REGISTER_A_STAGES = 2


def register_a_race(lw: Lowerer, loop: ir.For, body: list) -> bool:
    """Whether ``loop`` (lowered to ``body``) must run with at most REGISTER_A_STAGES stages.  At 3,
    Triton 3.6 keeps a K step's wgmmas in flight into the next step, which rebuilds their register A
    operand, and gemm_sp's 128 x 128 x 64 config (A by TMA, its metadata tile by cp.async) got 2.6-3.0%
    of its outputs wrong, a different count each call; at 2 every output agreed
    (gpu_logs/2026-12-06_s42_h100/gemm_sp_race.md).  The dequantizing GEMMs that compute their operand
    from TMA loads alone (example_dequant_gemm_fp4_hopper, w4a8, mhc_pre) agree at 3 in every suite run,
    so they keep it."""
    if not hopper(lw.options):
        return False
    gemms = [g for g in ir.walk(loop.body) if isinstance(g, ir.Gemm)]
    if len(gemms) != 1:
        return False
    a = gemms[0].a.buffer.root
    _, written = analysis.buffer_accesses(loop.body)
    if a.scope not in (ir.FRAGMENT, ir.LOCAL) or a not in written:
        return False
    return any(P.is_tl_call(n, "load") for stmt in body for n in ast.walk(stmt))
