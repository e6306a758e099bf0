"""GPU probe (session 10, issue 23) for two cases of TileLang's regression suite through tile2triton:

- ``mhc_pre`` (examples/deepseek_mhc/example_mhc_pre.py): its two kernels, ``gemm_sqrsum`` (a
  32 x 256 tile a step, tf32 ``T.gemm`` from a fragment, 128 threads) and ``big_fuse`` (96 threads),
  each alone and both as the suite times them; torch reference ``mhc_pre_ref``.
- ``vs_sparse_attn`` (examples/minference/example_vertical_slash_sparse_attn.py): the
  warp-specialized kernel (a 128-thread TMA producer, a 128-thread consumer with a manual cp.async
  pipeline); torch reference: dense attention under the index lists' mask.  Also MInference's own
  Triton kernel from the same file (``_triton_mixed_sparse_attention``: what Triton reaches).

Rows per case: the lowering under switches (vs_sparse_attn: ``TILE2TRITON_WS_WARPS``,
``TILE2TRITON_FORWARD_STAGES``, ``TILE2TRITON_GLOBAL_MIRRORS``; mhc_pre, session 11: the defaults,
then ``TILE2TRITON_DEFER_SUMS`` and ``TILE2TRITON_GEMM_PARTS`` (codegen/deferred.py) each off and
both off, which is session 10's code: the example module is loaded again under each, so each gets
its own kernels).  For mhc_pre's gemm_sqrsum also a hand-written Triton kernel
(``hand_gemm_sqrsum``: what Triton reaches for this tile program; TileLang's 32-token tile and a
16-token one, K parts, stages, warps) and the generated text at 4 stages and at 8 warps.  Timer:
``triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")``, microseconds.  ``err``:
max abs error against the torch reference (gemm_sqrsum rows: the larger relative max error of the
gemm and of the sqrsum).

The index lists of the sparse attention are built by a Python port of the example's CUDA
extension (``ops/vertical_slash_index.cu``), so no extension is compiled here.

    PYTHONPATH=. python3 benchmarks/mhcminf_probe.py [/path/to/tilelang/examples] [vs|mhc|all]

(``vs``, the default: the sparse attention alone, at seq 16384 (the suite's), 8192 and 32768.)
Session 11 rows: ``defaults`` (``TILE2TRITON_FORWARD_RINGS`` and ``TILE2TRITON_UNIFORM_BRANCHES``
on) against each off and both off (session 10's lowering); each row also names the compiled
kernel's registers, spills and shared memory.  Then the default lowering's Triton text at seq 16384
with its slash loop under other pipelining (``tl.range`` num_stages 2 / 4, warp_specialize) and at
8 warps, launched directly: what the next step for the slash loop (55-145 blocks a row) could be.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import tempfile
import time

import torch
import triton
import triton.language as tl

from tile2triton.cli import install_tilelang_alias

ARGS = [a for a in sys.argv[1:] if a not in ("vs", "mhc", "all")]
EXAMPLES = ARGS[0] if ARGS else "/work/tl/examples"
START = time.time()
SWITCHES = (
    "TILE2TRITON_FORWARD_RINGS",
    "TILE2TRITON_UNIFORM_BRANCHES",
    "TILE2TRITON_WS_WARPS",
    "TILE2TRITON_FORWARD_STAGES",
    "TILE2TRITON_GLOBAL_MIRRORS",
    "TILE2TRITON_REG_WARPS",
    "TILE2TRITON_SECTION_WARPS",
    "TILE2TRITON_DEFER_SUMS",
    "TILE2TRITON_GEMM_PARTS",
)


def bench(fn) -> float:
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median") * 1000.0


def row(case: str, variant: str, us: float | None, err: float | None = None, extra: str = "") -> None:
    t = f"{us:9.1f}" if us is not None else "     fail"
    e = f"{err:9.2e}" if err is not None else "         "
    print(f"{case:<28} {variant:<44} {t} {e}  {extra}  [{time.time() - START:5.1f}s]", flush=True)


@contextlib.contextmanager
def switches(**values):
    saved = {k: os.environ.get(k) for k in SWITCHES}
    for k in SWITCHES:
        os.environ.pop(k, None)
    for k, v in values.items():
        os.environ[f"TILE2TRITON_{k.upper()}"] = v
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


_LOADED = 0


def load(rel: str):
    """The example module, loaded again (fresh kernels, lowered under the switches now set)."""
    global _LOADED
    _LOADED += 1
    path = os.path.join(EXAMPLES, rel)
    sys.path.insert(0, os.path.dirname(path))
    spec = importlib.util.spec_from_file_location(f"probe_example_{_LOADED}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------ mhc_pre
def mhc_case(m, n: int, hidden: int, hc: int = 4):
    data = m.generate_test_data(n=n, hc_mult=hc, hidden_size=hidden)
    residual, fn, scale, base = data["residual"], data["fn"], data["hc_scale"], data["hc_base"]
    hc3 = hc * 2 + hc * hc
    dev = residual.device
    out = {
        "post": torch.full((n, hc), float("nan"), device=dev),
        "comb": torch.full((n, hc * hc), float("nan"), device=dev),
        "layer": torch.full((n, hidden), float("nan"), dtype=torch.bfloat16, device=dev),
        "gemm": torch.full((1, n, hc3), float("nan"), device=dev),
        "sqrsum": torch.full((1, n), float("nan"), device=dev),
    }
    eps = (data["rms_eps"], data["hc_pre_eps"], data["hc_sinkhorn_eps"], data["hc_post_mult_value"])
    x = residual.view(n, hc * hidden)

    def gemm():
        m.mhc_pre_gemm_sqrsum_tilelang(x, fn, out["gemm"].squeeze(0), out["sqrsum"].squeeze(0), hc3, hc * hidden)

    def fuse():
        m.mhc_pre_big_fuse_tilelang(
            out["gemm"], out["sqrsum"], scale, base, residual, out["post"], out["comb"], out["layer"], hidden,
            *eps, data["sinkhorn_repeat"], 1, hc,
        )  # fmt: skip

    def both():
        gemm()
        fuse()

    both()
    torch.cuda.synchronize()
    ref = m.mhc_pre_ref(**data)
    err = max(
        (a.reshape(b.shape).float() - b.float()).abs().max().item()
        for a, b in zip((out["post"], out["comb"], out["layer"]), ref)
    )
    ref_x = x.float()
    gemm_ref = ref_x @ fn.T
    gemm_err = (out["gemm"][0] - gemm_ref).abs().max().item() / gemm_ref.abs().max().item()
    sq_err = ((out["sqrsum"][0] - ref_x.square().sum(-1)).abs().max() / ref_x.square().sum(-1).max()).item()
    fuse_args = (out["gemm"], out["sqrsum"], scale, base, residual, out["post"], out["comb"], out["layer"], hidden,
                 *eps, data["sinkhorn_repeat"], 1, hc)  # fmt: skip
    return gemm, fuse, both, err, max(gemm_err, sq_err), (x, fn, out, hc3, fuse_args)


MHC_VARIANTS = (  # (label, switches): session 11's defaults, each switch off, both off (session 10's code)
    ("defaults", {}),
    ("DEFER_SUMS=0", {"defer_sums": "0"}),
    ("GEMM_PARTS=0", {"gemm_parts": "0"}),
    ("DEFER_SUMS=0 GEMM_PARTS=0", {"defer_sums": "0", "gemm_parts": "0"}),
)


def mhc_rows(n: int, hidden: int, text_variants: bool, variants=MHC_VARIANTS) -> None:
    case = f"mhc_pre n={n} h={hidden}"
    hand_done = False
    for label, env in variants:
        try:
            with switches(**env):
                m = load("deepseek_mhc/example_mhc_pre.py")
                gemm, fuse, both, err, gerr, args = mhc_case(m, n, hidden)
            row(case, f"{label}: both kernels", bench(both), err)
            row(case, f"{label}: gemm_sqrsum", bench(gemm), gerr, "(rel err gemm/sqrsum)")
            if not env:
                row(case, f"{label}: big_fuse", bench(fuse))
        except Exception as e:  # keep the probe going
            row(case, label, None, extra=f"{type(e).__name__}: {str(e)[:200]}")
            continue
        if not hand_done:
            hand_rows(case, args)
            hand_done = True
        if text_variants and not env:
            gemm_text_variants(case, m, args)


# ------------------------------------------------------------------ gemm_sqrsum by hand
@triton.jit
def hand_gemm_sqrsum(x_desc, fn_desc, out, sq, n, K: tl.constexpr, N_OUT: tl.constexpr, BM: tl.constexpr,
                     BK: tl.constexpr, PARTS: tl.constexpr, STAGES: tl.constexpr):  # fmt: skip
    """gemm_sqrsum as a Triton programmer writes it: TMA tiles of x (bf16) and fn (fp32, 32 rows
    of which fn has N_OUT: the rest read 0), a tf32 dot with K split into PARTS accumulators (one
    batched dot), x * x added element-wise, both reduced once after the loop."""
    pid = tl.program_id(0)
    acc = tl.zeros([PARTS, BM, 32], tl.float32)
    sq_acc = tl.zeros([BM, BK], tl.float32)
    for k in tl.range(0, K // BK, num_stages=STAGES):
        xa = x_desc.load([pid * BM, k * BK]).to(tl.float32)
        f = fn_desc.load([0, k * BK])
        sq_acc += xa * xa
        if PARTS == 1:
            acc += tl.reshape(tl.dot(xa, tl.trans(f)), (1, BM, 32))
        else:
            a3 = tl.permute(tl.reshape(xa, (BM, PARTS, BK // PARTS)), (1, 0, 2))
            b3 = tl.permute(tl.reshape(f, (32, PARTS, BK // PARTS)), (1, 2, 0))
            acc = tl.dot(a3, b3, acc)
    rows = pid * BM + tl.arange(0, BM)
    tl.store(sq + rows, tl.sum(sq_acc, 1), mask=rows < n)
    cols = tl.arange(0, 32)
    tl.store(out + rows[:, None] * N_OUT + cols[None, :], tl.sum(acc, 0),
             mask=(rows[:, None] < n) & (cols[None, :] < N_OUT))  # fmt: skip


HAND_VARIANTS = (  # (bm, parts, stages, warps): TileLang's 32-token tile first; 16 tokens: twice the blocks
    (32, 4, 3, 4),
    (32, 4, 4, 4),
    (32, 4, 3, 8),
    (32, 1, 3, 4),
    (32, 1, 3, 8),
    (32, 2, 3, 8),
    (16, 4, 3, 4),
    (16, 4, 4, 4),
)


def _checked(case: str, label: str, run, o, s, x, fn) -> None:
    """Run once, check gemm and sqrsum against torch (relative max error), time it, print the row."""
    gemm_ref = x.float() @ fn.T
    sq_ref = x.float().square().sum(-1)
    compiled = run()
    torch.cuda.synchronize()
    err = max(
        ((o - gemm_ref).abs().max() / gemm_ref.abs().max()).item(),
        ((s - sq_ref).abs().max() / sq_ref.max()).item(),
    )
    regs = f"regs {getattr(compiled, 'n_regs', '?')} spills {getattr(compiled, 'n_spills', '?')}"
    row(case, label, bench(run), err, regs)


def hand_rows(case: str, args) -> None:
    """The hand kernel's variants (what Triton reaches for this tile program), outputs checked."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    x, fn, _, hc3, _ = args
    n, k = x.shape
    for bm, parts, stages, warps in HAND_VARIANTS:
        label = f"hand: {bm} tokens, {parts} K parts, {stages} stages, {warps} warps"
        try:
            x_desc = TensorDescriptor(x, list(x.shape), list(x.stride()), [bm, 256])
            fn_desc = TensorDescriptor(fn, list(fn.shape), list(fn.stride()), [32, 256])
            o = torch.full((n, hc3), float("nan"), device=x.device)
            s = torch.full((n,), float("nan"), device=x.device)

            def run():
                return hand_gemm_sqrsum[(triton.cdiv(n, bm),)](
                    x_desc, fn_desc, o, s, n, k, hc3, bm, 256, parts, stages, num_warps=warps
                )

            _checked(case, label, run, o, s, x, fn)
        except Exception as e:
            row(case, label, None, extra=f"{type(e).__name__}: {str(e)[:200]}")


def gemm_text_variants(case: str, m, args) -> None:
    """The generated gemm_sqrsum text at other launch parameters (4 pipeline stages; 8 warps)."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    x, fn, out, hc3, _ = args
    n = x.shape[0]
    src = m.mhc_pre_gemm_sqrsum_tilelang.get_kernel_source(x, fn, out["gemm"].squeeze(0), out["sqrsum"].squeeze(0), hc3,
                                                           x.shape[1])  # fmt: skip
    for label, text, warps in (
        ("text: as generated, 4 stages", src.replace("num_stages=3)", "num_stages=4)"), 4),
        ("text: as generated, 8 warps", src, 8),
    ):
        try:
            kernel = _load_text(text, "mhc_pre_gemm_sqrsum_tilelang_kernel")
            o, s = torch.full((n, hc3), float("nan"), device=x.device), torch.full((n,), float("nan"), device=x.device)
            extra = []
            if "x_desc" in kernel.arg_names:  # host descriptors, as the runtime passes them
                extra = [TensorDescriptor(x, list(x.shape), list(x.stride()), [32, 256]),
                         TensorDescriptor(fn, list(fn.shape), list(fn.stride()), [32, 256])]  # fmt: skip

            def run():
                return kernel[(triton.cdiv(n, 32),)](x, fn, o, s, n, *extra, num_warps=warps)

            _checked(case, label, run, o, s, x, fn)
        except Exception as e:
            row(case, label, None, extra=f"{type(e).__name__}: {str(e)[:200]}")


_TEXTS = []


def _load_text(text: str, name: str):
    d = tempfile.mkdtemp(prefix="mhcminf_probe_")
    path = os.path.join(d, f"variant_{len(_TEXTS)}.py")
    with open(path, "w") as f:
        f.write(text)
    spec = importlib.util.spec_from_file_location(f"mhcminf_variant_{len(_TEXTS)}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    _TEXTS.append(module)
    return getattr(module, name)


# ------------------------------------------------------------------ vertical-slash sparse attention
def convert_indexes(seq_len: int, v_idx: list, s_idx: list, nnz_v: int, nnz_s: int, bm: int = 64, bn: int = 64):
    """A Python port of ops/vertical_slash_index.cu for one (batch, head)."""
    rows = (seq_len + bm - 1) // bm
    block_count, column_count = [0] * rows, [0] * rows
    block_offset = [[0] * nnz_s for _ in range(rows)]
    column_index = [[0] * nnz_v for _ in range(rows)]
    for r in range(rows):
        start_m = r * bm
        end_m = start_m + bm
        offs, cols = block_offset[r], column_index[r]
        ncol = nblk = 0
        s = v = 0
        v_i = v_idx[v]
        v += 1
        s_i = s_idx[s]
        s += 1
        while s_i >= end_m:
            s_i = s_idx[s]
            s += 1
        s_i = max(end_m - s_i, bm)
        range_start, range_end = s_i - bm, s_i
        while True:
            if v_i < range_end:
                if v_i < range_start:
                    cols[ncol] = v_i
                    ncol += 1
                if v < nnz_v:
                    v_i = v_idx[v]
                    v += 1
                else:
                    v_i = end_m + bm
            else:
                if s < nnz_s:
                    s_i = max(end_m - s_idx[s], bm)
                    s += 1
                else:
                    for idx in range(range_start, range_end, bn):
                        offs[nblk] = idx
                        nblk += 1
                    break
                if s_i > range_end + bm:
                    for idx in range(range_start, range_end, bn):
                        offs[nblk] = idx
                        nblk += 1
                    range_start, range_end = s_i - bm, s_i
                elif s_i > range_end:
                    range_end += bm
        block_count[r], column_count[r] = nblk, ncol
    return block_count, block_offset, column_count, column_index


def vs_inputs(m, seq_len: int, dim: int = 64, vertical: int = 1000, slash: int = 200):
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 1, seq_len, dim, device="cuda", dtype=torch.float16) for _ in range(3))
    vertical, slash = min(seq_len, vertical), min(seq_len, slash)
    last_q = 64
    qk = torch.einsum("bhmk, bhnk -> bhmn", q[:, :, -last_q:, :], k)
    arange = torch.arange(last_q, device="cuda")
    qk[:, :, :, -last_q:] = torch.where(arange[None, None, :, None] >= arange[None, None, None, :], qk[:, :, :, -last_q:],
                                        -torch.inf)  # fmt: skip
    qk = torch.nn.functional.softmax(qk, dim=-1, dtype=torch.float32)
    vert = qk.sum(-2, keepdim=True)
    vert[..., :30] = torch.inf
    v_idx = torch.topk(vert, vertical, -1).indices
    sl = m.sum_all_diagonal_matrix(qk)[..., : -last_q + 1]
    sl[..., -30:] = torch.inf
    s_idx = (seq_len - 1) - torch.topk(sl, slash, -1).indices
    v_idx = v_idx.to(torch.int32).reshape(-1).sort(descending=False)[0].tolist()
    s_idx = s_idx.to(torch.int32).reshape(-1).sort(descending=True)[0].tolist()
    bc, bo, cc, ci = convert_indexes(seq_len, v_idx, s_idx, vertical, slash)
    rows = len(bc)
    as_tensor = lambda x, shape: torch.tensor(x, dtype=torch.int32, device="cuda").reshape(shape)  # noqa: E731
    idx = (
        as_tensor(bc, (1, 1, rows)),
        as_tensor(bo, (1, 1, rows, slash)),
        as_tensor(cc, (1, 1, rows)),
        as_tensor(ci, (1, 1, rows, vertical)),
    )
    return q, k, v, idx, vertical, slash


def vs_reference(q, k, v, idx) -> torch.Tensor:
    """Dense attention (fp32) under the mask the index lists describe: slash blocks causally,
    vertical columns below the row block's column count."""
    block_count, block_offset, column_count, column_index = (t[0, 0] for t in idx)
    seq_len, dim = q.shape[2], q.shape[3]
    rows = block_count.shape[0]
    scale = (1.0 / dim) ** 0.5
    out = torch.empty(seq_len, dim, device=q.device, dtype=torch.float32)
    qf, kf, vf = q[0, 0].float(), k[0, 0].float(), v[0, 0].float()
    ar = torch.arange(64, device=q.device)
    for r0 in range(0, rows, 16):
        r1 = min(rows, r0 + 16)
        n = r1 - r0
        blocks = torch.zeros(n, seq_len + 64, dtype=torch.bool, device=q.device)
        valid = torch.arange(block_offset.shape[1], device=q.device)[None, :] < block_count[r0:r1, None]
        cols = torch.where(valid[:, :, None], block_offset[r0:r1, :, None] + ar, seq_len + 63).clamp(0, seq_len + 63)
        blocks.scatter_(1, cols.reshape(n, -1).long(), True)
        blocks = blocks[:, :seq_len]
        vert = torch.zeros(n, seq_len + 1, dtype=torch.bool, device=q.device)
        valid = torch.arange(column_index.shape[1], device=q.device)[None, :] < column_count[r0:r1, None]
        vert.scatter_(1, torch.where(valid, column_index[r0:r1].long(), seq_len), True)
        vert = vert[:, :seq_len]
        row_ids = torch.arange(r0 * 64, r1 * 64, device=q.device)
        causal = torch.arange(seq_len, device=q.device)[None, :] <= row_ids[:, None]
        mask = (blocks.repeat_interleave(64, 0) & causal) | vert.repeat_interleave(64, 0)
        s = (qf[r0 * 64 : r1 * 64] @ kf.T) * scale
        s = s.masked_fill(~mask, float("-inf"))
        out[r0 * 64 : r1 * 64] = torch.softmax(s, -1) @ vf
    return out


def _compiled_info(kernel) -> str:
    """Registers, spills and shared memory of the compiled kernel (informative only)."""
    try:
        for lowered in kernel._compiled.values():
            for direct in lowered.direct:
                for c in (direct.kernels or {}).values() if direct is not None else ():
                    return f"regs {c.n_regs} spills {c.n_spills} smem {c.metadata.shared}"
            for fn, *_ in lowered.launches:
                for cache in getattr(fn, "device_caches", {}).values():
                    for c in cache[0].values():
                        return f"regs {c.n_regs} spills {c.n_spills} smem {c.metadata.shared}"
    except Exception as exc:
        return f"(no info: {type(exc).__name__})"
    return "-"


def _hand_info(m) -> str:
    try:
        for cache in m._triton_mixed_sparse_attn_fwd_kernel.device_caches.values():
            c = list(cache[0].values())[-1]
            return f"regs {c.n_regs} spills {c.n_spills} smem {c.metadata.shared}"
    except Exception as exc:
        return f"(no info: {type(exc).__name__})"
    return "-"


def vs_rows(seq_len: int, variants) -> None:
    case = f"vs_sparse_attn seq={seq_len}"
    m = load("minference/example_vertical_slash_sparse_attn.py")
    q, k, v, idx, vertical, slash = vs_inputs(m, seq_len)
    ref = vs_reference(q, k, v, idx)
    seqlens = torch.tensor([seq_len], dtype=torch.int32, device="cuda")

    def hand():
        return m._triton_mixed_sparse_attention(q, k, v, seqlens, *idx, 64**-0.5, 64, 64)

    label = "MInference's Triton kernel (hand-written)"
    try:
        got = hand()
        row(case, label, bench(hand), (got[0, 0].float() - ref).abs().max().item(), _hand_info(m))
    except Exception as e:
        row(case, label, None, extra=f"{type(e).__name__}: {str(e)[:200]}")
    for label, env in variants:
        try:
            with switches(**env):
                mm = load("minference/example_vertical_slash_sparse_attn.py")
                kernel = mm._tl_vs_sparse_flashattn(1, 1, seq_len, 64, vertical, slash)

                def run():
                    return kernel(q, k, v, *idx)

                got = run()
                torch.cuda.synchronize()
            row(case, label, bench(run), (got[0, 0].float() - ref).abs().max().item(), _compiled_info(kernel))
        except Exception as e:
            row(case, label, None, extra=f"{type(e).__name__}: {str(e)[:200]}")


_SLASH_LOOP = "    for bi in range(block_count):"


def vs_text_variants(seq_len: int) -> None:
    """The default lowering's Triton text, its slash loop (the kernel's long loop: 55-145 blocks a
    row) under other pipelining: Triton 3.9 issues each block's K/V copies at the end of the
    iteration before (an indirect load: the block offset is loaded a stage earlier), so they overlap
    little compute; TileLang's TMA producer issues them an iteration ahead."""
    case = f"vs_sparse_attn seq={seq_len}"
    m = load("minference/example_vertical_slash_sparse_attn.py")
    q, k, v, idx, vertical, slash = vs_inputs(m, seq_len)
    ref = vs_reference(q, k, v, idx)
    kernel = m._tl_vs_sparse_flashattn(1, 1, seq_len, 64, vertical, slash)
    src = kernel.lowered(False).source
    name = kernel.lowered(False).launches[0].name
    grid = (triton.cdiv(seq_len, 64), 1, 1)
    for label, loop, warps in (
        ("text: slash loop num_stages=2", "    for bi in tl.range(block_count, num_stages=2):", 4),
        ("text: slash loop num_stages=4", "    for bi in tl.range(block_count, num_stages=4):", 4),
        ("text: slash loop warp_specialize", "    for bi in tl.range(block_count, warp_specialize=True):", 4),
        ("text: as generated, 8 warps", _SLASH_LOOP, 8),
    ):
        try:
            if _SLASH_LOOP not in src:
                raise RuntimeError("the slash loop's line is not in the generated source")
            fn = _load_text(src.replace(_SLASH_LOOP, loop), name)
            out = torch.full_like(q, float("nan"))

            def run():
                return fn[grid](q, k, v, out, *idx, num_warps=warps)

            compiled = run()
            torch.cuda.synchronize()
            regs = f"regs {getattr(compiled, 'n_regs', '?')} spills {getattr(compiled, 'n_spills', '?')}"
            row(case, label, bench(run), (out[0, 0].float() - ref).abs().max().item(), regs)
        except Exception as e:
            row(case, label, None, extra=f"{type(e).__name__}: {str(e)[:200]}")


def main() -> None:
    install_tilelang_alias()
    only = sys.argv[2] if len(sys.argv) > 2 else "vs"
    print(f"{'case':<28} {'variant':<44} {'us':>9} {'err':>9}", flush=True)
    # session 11: the hand-pipelined column loop read at its source (FORWARD_RINGS) and its
    # `if column_count != 0:` as a Triton `if` (UNIFORM_BRANCHES); both off is session 10's default
    rings, branches = {"forward_rings": "0"}, {"uniform_branches": "0"}
    vs_variants = [  # most telling first
        ("defaults", {}),
        ("FORWARD_RINGS=0 UNIFORM_BRANCHES=0", rings | branches),
        ("FORWARD_RINGS=0", rings),
        ("UNIFORM_BRANCHES=0", branches),
    ]
    if only in ("vs", "all"):
        vs_rows(16384, vs_variants)  # the suite's size
        vs_rows(8192, vs_variants[:2])
        vs_rows(32768, vs_variants[:2])
        vs_text_variants(16384)
    if only in ("mhc", "all"):
        mhc_rows(2048, 4096, text_variants=True)  # the suite's size
        mhc_rows(1024, 2560, text_variants=False)


if __name__ == "__main__":
    main()
