"""Column-split attention loops (MLA decode) lowered to Gluon for Hopper (codegen/gluon_fullcol.py).

As in test_gluon_attention.py: which kernels take the route is checked on the CPU, the generated
module is compiled for sm_90 with the installed Triton (no GPU needed; run the compile tests with
Triton 3.6 too: PYTHONPATH=<triton 3.6> pytest -k compile), it runs against torch on a GPU of
compute capability 9.0, and the same kernels run through the tl lowering on the interpreter.
"""

import importlib.util

import pytest
import torch
from t2t_util import assert_close, compile_gluon_for_hopper, gluon_descriptor_types, poison

import tile2triton
import tile2triton.language as T
from tile2triton.codegen import gluon_fullcol
from tile2triton.codegen.emit import emit_module
from tile2triton.codegen.gluon_attention import NotAttention
from tile2triton.codegen.lower import LoweringOptions
from tile2triton.compiler import bind_kernel_source

HAS_GLUON = importlib.util.find_spec("triton.experimental.gluon") is not None
if HAS_GLUON:
    # Gluon imported at collection, before any interpreted launch: Triton's interpreter (3.6, 3.9)
    # first imports it from inside a launch, with triton.language patched, and Gluon keeps the
    # patched functions: every later sm_90 compile in the process that is not in Triton's cache
    # fails ("Did you forget to add @triton.gluon.jit ?")
    import triton.experimental.gluon.language  # noqa: F401
DIM, PE_DIM = 512, 64  # DeepSeek's latent and rotary widths


def mla_decode(batch, heads, seq, block_n=64, threads=256, form="masked", dim=DIM, pe_dim=PE_DIM):
    """TileLang's deepseek_mla/example_mla_decode.py (``main_no_split``): every query head attends
    to one latent K/V of width ``dim`` plus a rotary K of width ``pe_dim``; the latent tile is both
    K and V.  ``form``: "masked" starts S from a key mask (any ``seq``), "clear_accum" is the
    example's own gemm (``seq`` a multiple of ``block_n``), "p_fragment" multiplies V by a
    fragment P, "logsum_one" starts the running sum at 1 (the first iteration's scale, 0, clears it:
    the same result, but the row sum is traded every iteration instead of once after the loop),
    "p_read" also reads P's shared tile back (a kernel the route must refuse)."""
    block_h = 64
    scale = (dim + pe_dim) ** -0.5 * 1.44269504
    dtype, accum = "float16", "float"

    @T.prim_func
    def main(
        Q: T.Tensor([batch, heads, dim], dtype),
        Q_pe: T.Tensor([batch, heads, pe_dim], dtype),
        KV: T.Tensor([batch, seq, 1, dim], dtype),
        K_pe: T.Tensor([batch, seq, 1, pe_dim], dtype),
        Output: T.Tensor([batch, heads, dim], dtype),
    ):
        with T.Kernel(heads // block_h, batch, threads=threads) as (hid, bid):
            Q_shared = T.alloc_shared([block_h, dim], dtype)
            Q_pe_shared = T.alloc_shared([block_h, pe_dim], dtype)
            KV_shared = T.alloc_shared([block_n, dim], dtype)
            K_pe_shared = T.alloc_shared([block_n, pe_dim], dtype)
            S_shared = T.alloc_shared([block_h, block_n], dtype)
            O_shared = T.alloc_shared([block_h, dim], dtype)
            acc_s = T.alloc_fragment([block_h, block_n], accum)
            acc_s_cast = T.alloc_fragment([block_h, block_n], dtype)
            acc_o = T.alloc_fragment([block_h, dim], accum)
            scores_max = T.alloc_fragment([block_h], accum)
            scores_max_prev = T.alloc_fragment([block_h], accum)
            scores_scale = T.alloc_fragment([block_h], accum)
            scores_sum = T.alloc_fragment([block_h], accum)
            logsum = T.alloc_fragment([block_h], accum)

            T.copy(Q[bid, hid * block_h : (hid + 1) * block_h, :], Q_shared)
            T.copy(Q_pe[bid, hid * block_h : (hid + 1) * block_h, :], Q_pe_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 1 if form == "logsum_one" else 0)
            T.fill(scores_max, -T.infinity(accum))

            for k in T.Pipelined(T.ceildiv(seq, block_n), num_stages=2):
                T.copy(KV[bid, k * block_n : (k + 1) * block_n, 0, :], KV_shared)
                T.copy(K_pe[bid, k * block_n : (k + 1) * block_n, 0, :], K_pe_shared)
                if form == "clear_accum":
                    T.gemm(
                        Q_shared, KV_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullCol, clear_accum=True
                    )
                else:
                    for i, j in T.Parallel(block_h, block_n):
                        acc_s[i, j] = T.if_then_else(k * block_n + j < seq, 0, -T.infinity(accum))
                    T.gemm(Q_shared, KV_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullCol)
                T.gemm(Q_pe_shared, K_pe_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullCol)
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_h):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                for i in T.Parallel(block_h):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_h, block_n):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                if form == "p_fragment":
                    T.copy(acc_s, acc_s_cast)
                else:
                    T.copy(acc_s, S_shared)
                if form == "p_read":
                    T.copy(S_shared, acc_s_cast)
                for i in T.Parallel(block_h):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                for i, j in T.Parallel(block_h, dim):
                    acc_o[i, j] *= scores_scale[i]
                if form == "p_fragment":
                    T.gemm(acc_s_cast, KV_shared, acc_o, policy=T.GemmWarpPolicy.FullCol)
                else:
                    T.gemm(S_shared, KV_shared, acc_o, policy=T.GemmWarpPolicy.FullCol)
            for i, j in T.Parallel(block_h, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bid, hid * block_h : (hid + 1) * block_h, :])

    return main


FORMS = {"masked": 200, "clear_accum": 320, "p_fragment": 333, "logsum_one": 277}  # form -> a context length it is exact at


def plan_of(prim):
    func = bind_kernel_source(prim)
    return gluon_fullcol.plan(func.kernels[0], func)


@pytest.mark.parametrize("form", sorted(FORMS))
def test_mla_decode_takes_the_column_split_route(form):
    p = plan_of(mla_decode(1, 128, FORMS[form], form=form))
    assert (p.block_n, p.dim_v, p.stages) == (64, DIM, 2)
    assert [g.a.buffer.name for g in p.scores] == ["Q_shared", "Q_pe_shared"]
    assert [c.dst.buffer.name for c in p.ring_copies] == ["KV_shared", "K_pe_shared"]  # KV is K and V
    assert (p.p_copy is None) == (form == "p_fragment")
    assert p.widths[p.pv.b.buffer] == 256  # each consumer's half of V is one TMA box
    # the running sum is linear in the row sums: traded once after the loop where it starts at 0
    assert {r.dst.buffer.name: acc.name for r, acc in p.deferred.items()} == (
        {} if form == "logsum_one" else {"scores_sum": "logsum"}
    )


def test_32_key_tiles_take_the_column_split_route():
    """Measured faster at 512 columns with 32 keys a tile too (1.24x and 1.39x on the H200 sweep)."""
    p = plan_of(mla_decode(1, 128, 100, block_n=32))
    assert (p.block_n, p.dim_v) == (32, DIM)


@pytest.mark.parametrize(
    "kwargs, reason",
    [
        (dict(block_n=16), "not measured faster"),
        (dict(threads=128), "256 threads"),
        (dict(dim=256), "not measured faster"),
        (dict(form="p_read"), "read by P V only"),
    ],
)
def test_other_kernels_keep_the_tl_lowering(kwargs, reason):
    with pytest.raises(NotAttention, match=reason):
        plan_of(mla_decode(**(dict(batch=1, heads=128, seq=200) | kwargs)))


def test_the_row_split_route_does_not_take_mla():
    """64 rows and a 512-wide output: the row-split route refuses it, so emit tries this one."""
    from tile2triton.codegen import gluon_attention

    func = bind_kernel_source(mla_decode(1, 128, 200))
    with pytest.raises(NotAttention):
        gluon_attention.plan(func.kernels[0], func)
    source = emit_module(func, LoweringOptions(gluon=True, tensor_descriptors=True)).source
    assert source.startswith("# Gluon generated by tile2triton")
    assert "main_exchange(scores_max_part, scores_max_slots, scores_max_ready, it, part" in source
    assert "logsum = logsum + main_exchange(logsum, logsum_slots, logsum_ready, 0, part" in source
    assert "main_publish(acc_s.to(gl.float16)" in source


@pytest.mark.skipif(not HAS_GLUON, reason="this Triton has no Gluon")
@pytest.mark.parametrize("form", sorted(FORMS))
def test_column_split_module_compiles_for_hopper(form, tmp_path):
    """The generated module compiles for sm_90 with the installed Triton (no GPU needed)."""
    module = emit_module(
        bind_kernel_source(mla_decode(2, 128, FORMS[form], form=form)), LoweringOptions(gluon=True, tensor_descriptors=True)
    )
    compiled = compile_gluon_for_hopper(module, tmp_path)
    ptx = compiled.asm["ptx"]
    assert ptx.count("wgmma.mma_async") > 0 and "wgmma.wait_group.sync.aligned 0;" in ptx
    assert compiled.metadata.shared <= 227 * 1024


@pytest.mark.skipif(not HAS_GLUON, reason="this Triton has no Gluon")
def test_host_made_descriptors_are_entry_parameters(tmp_path):
    """With host descriptors the entry takes every TMA descriptor (Q's and its rope part's, and the
    ring's) as a parameter the host makes per call; the kernel writes no tensormap."""
    func = bind_kernel_source(mla_decode(2, 128, 200))
    module = emit_module(func, LoweringOptions(gluon=True, tensor_descriptors=True, host_descriptors=True))
    launch = module.launches[0]
    names = [name for name, _, _ in launch.host_descriptors]
    assert launch.gluon_descriptors and len(names) == 4 and "make_tensor_descriptor" not in module.source
    assert f"def main_kernel(Q, Q_pe, KV, K_pe, Output, {', '.join(names)}):" in module.source
    compiled = compile_gluon_for_hopper(module, tmp_path, "*fp16", gluon_descriptor_types(launch))
    assert "tensormap" not in compiled.asm["ptx"] and compiled.asm["ptx"].count("cp.async.bulk.tensor") >= 4


def _reference(q, q_pe, kv, k_pe):
    latent, rope = kv[:, :, 0].double(), k_pe[:, :, 0].double()
    scores = (q.double() @ latent.transpose(1, 2) + q_pe.double() @ rope.transpose(1, 2)) * (DIM + PE_DIM) ** -0.5
    return torch.softmax(scores, -1) @ latent


def _run(device, batch, heads, seq, form):
    kernel = tile2triton.compile(mla_decode(batch, heads, seq, form=form))
    if device == "cuda":
        assert kernel.get_kernel_source().startswith("# Gluon generated"), "MLA should take the Gluon route"
    shapes = ((batch, heads, DIM), (batch, heads, PE_DIM), (batch, seq, 1, DIM), (batch, seq, 1, PE_DIM))
    q, q_pe, kv, k_pe = (torch.randn(s, device=device, dtype=torch.float16) for s in shapes)
    out = poison((batch, heads, DIM), torch.float16, device)
    kernel(q, q_pe, kv, k_pe, out)
    assert_close(out, _reference(q, q_pe, kv, k_pe), atol=2e-3, rtol=2e-3)


ON_HOPPER = pytest.mark.skipif(
    not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0),
    reason="the Gluon attention routes are for sm_90",
)


@pytest.mark.gpu
@ON_HOPPER
@pytest.mark.parametrize("form", sorted(FORMS))
def test_column_split_matches_torch(form):
    _run("cuda", 3, 192, FORMS[form], form)


@pytest.mark.parametrize("form", sorted(FORMS))
def test_mla_kernels_match_torch_on_the_interpreter(form):
    """The same kernels through the tl lowering: the source and the reference the GPU test uses agree."""
    _run("cpu", 1, 64, FORMS[form], form)


def wide_attention(batch, heads, seq, dim=192, dtype="float16", form="plain"):
    """Attention with a 512-wide V of its own (K is ``dim`` wide: not a power of two at 192, three
    TMA boxes of 64), written to catch what the MLA kernel does not: the block index is called
    ``parity`` (a name the generated entry uses), the last block's rows may run past the heads
    (``heads`` not a multiple of 64: Q's box is zero-filled there, the stores masked), the loop
    starts at 1, P is a fragment whose row sum is reduced in 16 bits (traded through 16-bit slots,
    and not deferred: TileLang adds the rounded whole sum), and after the loop O's row max is added
    to the last iteration's P, whose tile is first assigned in the loop.  ``form``: "carry_s"
    zeroes S before the loop only (the score gemm then accumulates over the iterations);
    "mirrored" and "first_column" read S at columns the other consumer holds (refused)."""
    block_h = block_n = 64
    dim_v = DIM
    accum = "float"

    @T.prim_func
    def main(
        Q: T.Tensor([batch, heads, dim], dtype),
        K: T.Tensor([batch, seq, dim], dtype),
        V: T.Tensor([batch, seq, dim_v], dtype),
        Output: T.Tensor([batch, heads, dim_v], dtype),
        Last: T.Tensor([batch, heads, block_n], dtype),
    ):
        with T.Kernel(T.ceildiv(heads, block_h), batch, threads=256) as (parity, bid):
            Q_shared = T.alloc_shared([block_h, dim], dtype)
            K_shared = T.alloc_shared([block_n, dim], dtype)
            V_shared = T.alloc_shared([block_n, dim_v], dtype)
            acc_s = T.alloc_fragment([block_h, block_n], accum)
            P = T.alloc_fragment([block_h, block_n], dtype)
            acc_o = T.alloc_fragment([block_h, dim_v], accum)
            m = T.alloc_fragment([block_h], accum)
            m_prev = T.alloc_fragment([block_h], accum)
            row_sum = T.alloc_fragment([block_h], accum)
            denom = T.alloc_fragment([block_h], accum)
            o_max = T.alloc_fragment([block_h], accum)
            T.copy(Q[bid, parity * block_h : (parity + 1) * block_h, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(denom, 0)
            T.fill(m, -T.infinity(accum))
            if form == "carry_s":
                T.fill(acc_s, 0)
            for k in T.Pipelined(1, T.ceildiv(seq, block_n), num_stages=2):
                key = (k - 1) * block_n
                T.copy(K[bid, key : key + block_n, :], K_shared)
                T.copy(V[bid, key : key + block_n, :], V_shared)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, clear_accum=form != "carry_s")
                T.copy(m, m_prev)
                T.reduce_max(acc_s, m, dim=1, clear=False)
                for i, j in T.Parallel(block_h, block_n):
                    acc_s[i, j] = T.exp2(acc_s[i, j] - m[i])
                T.copy(acc_s, P)
                if form == "mirrored":  # another consumer's column
                    for i, j in T.Parallel(block_h, block_n):
                        P[i, j] = acc_s[i, block_n - 1 - j]
                if form == "first_column":  # a row value from one column, not a reduction
                    for i in T.Parallel(block_h):
                        m[i] = acc_s[i, 0]
                T.reduce_sum(P, row_sum, dim=1)
                for i in T.Parallel(block_h):
                    denom[i] = denom[i] * T.exp2(m_prev[i] - m[i]) + row_sum[i]
                for i, j in T.Parallel(block_h, dim_v):
                    acc_o[i, j] *= T.exp2(m_prev[i] - m[i])
                T.gemm(P, V_shared, acc_o)
            for i, j in T.Parallel(block_h, dim_v):
                acc_o[i, j] /= denom[i]
            T.reduce_max(acc_o, o_max, dim=1)
            for i, j in T.Parallel(block_h, block_n):
                acc_s[i, j] = acc_s[i, j] + o_max[i]
            T.copy(acc_s, Last[bid, parity * block_h : (parity + 1) * block_h, :])
            T.copy(acc_o, Output[bid, parity * block_h : (parity + 1) * block_h, :])

    return main


def _gluon_source(prim) -> str:
    return emit_module(bind_kernel_source(prim), LoweringOptions(gluon=True, tensor_descriptors=True)).source


WIDE = {"fp16_192": dict(dim=192), "bf16_96": dict(dim=96, dtype="bfloat16")}  # name -> kernel arguments
WIDE_RUNS = WIDE | {"carry_s": dict(dim=192, form="carry_s")}  # the kernels run (and compiled)


@pytest.mark.parametrize("name", sorted(WIDE))
def test_wide_attention_takes_the_column_split_route(name):
    p = plan_of(wide_attention(1, 128, 200, **WIDE[name]))
    dim = WIDE[name]["dim"]
    assert [c.dst.buffer.name for c in p.ring_copies] == ["K_shared", "V_shared"]
    assert p.widths[p.scores[0].b.buffer] == dim // 3  # a shared layout's width is a power of two
    assert p.deferred == {}  # the row sum of 16-bit P is rounded whole before it is added
    source = _gluon_source(wide_attention(1, 128, 200, **WIDE[name]))
    half = "gl.bfloat16" if "bf16" in name else "gl.float16"
    assert f"row_sum_slots = gl.allocate_shared_memory({half}, [4, 64]" in source  # P's partial sums are 16-bit
    assert "parity_1 = gl.program_id(0)" in source and "(Output, Last, parity_1, bid," in source
    assert "acc_s = gl.full([64, 32], 0, gl.float32, s_layout)  # assigned in the loop, read after it" in source


def test_s_zeroed_before_the_loop_accumulates_in_it():
    """Only the loop's own statements may zero S for its score gemm: a fill before the loop holds
    for the first iteration, and TileLang's gemm adds to S in every later one."""
    source = _gluon_source(wide_attention(1, 128, 200, form="carry_s"))
    assert source.startswith("# Gluon generated")
    assert "use_acc=False" not in source
    assert "acc_s = warpgroup_mma(Q_shared_smem.index(0).reshape([64, 64]), K_shared_smem.index(stage * 3)" in source


@pytest.mark.parametrize(
    "kwargs, reason",
    [
        # 40 columns: a shared layout's width is a power of two, and wgmma's K step 16
        (dict(dim=40), "TMA boxes of 16 to 256 columns"),
        (dict(form="mirrored"), "reads fragments at its own lanes"),
        (dict(form="first_column"), "reads fragments at its own lanes"),
    ],
)
def test_other_wide_kernels_keep_the_tl_lowering(kwargs, reason):
    with pytest.raises(NotAttention, match=reason):
        plan_of(wide_attention(1, 128, 200, **kwargs))


def _compile_for_hopper(prim, tmp_path, dtype):
    module = emit_module(bind_kernel_source(prim), LoweringOptions(gluon=True, tensor_descriptors=True))
    assert module.source.startswith("# Gluon generated"), "the kernel should take the Gluon route"
    return compile_gluon_for_hopper(module, tmp_path, "*bf16" if dtype == "bfloat16" else "*fp16")


@pytest.mark.skipif(not HAS_GLUON, reason="this Triton has no Gluon")
@pytest.mark.parametrize("name", sorted(WIDE_RUNS) + ["mla_bf16_grouped"])
def test_wide_module_compiles_for_hopper(name, tmp_path):
    if name == "mla_bf16_grouped":
        prim, dtype = mla_grouped(2, 128, 200, dtype="bfloat16"), "bfloat16"
    else:
        prim, dtype = wide_attention(2, 128, 200, **WIDE_RUNS[name]), WIDE_RUNS[name].get("dtype", "float16")
    compiled = _compile_for_hopper(prim, tmp_path, dtype)
    ptx = compiled.asm["ptx"]
    assert ptx.count("wgmma.mma_async") > 0 and "wgmma.wait_group.sync.aligned 0;" in ptx
    assert compiled.metadata.shared <= 227 * 1024


def _wide_reference(q, k, v, seq):
    """exp2-softmax over the keys of the loop's iterations (1 .. ceil(seq / 64) - 1: whole tiles),
    and the last iteration's P plus O's row max."""
    keys = (-(-seq // 64) - 1) * 64
    scores = q.double() @ k[:, :keys].double().transpose(1, 2)
    p = torch.exp2(scores - scores.amax(-1, keepdim=True))
    out = (p @ v[:, :keys].double()) / p.sum(-1, keepdim=True)
    return out, p[..., -64:] + out.amax(-1, keepdim=True)


def _carried_reference(q, k, v, seq):
    """The "carry_s" kernel, tile by tile: S is zeroed once, before the loop, so each iteration's
    scores are added to the last one's exp2(S - max)."""
    q, k, v = q.double(), k.double(), v.double()
    rows = q.shape[:2]
    s = torch.zeros(*rows, 64, dtype=torch.float64)
    m = torch.full(rows, -torch.inf, dtype=torch.float64)
    denom = torch.zeros(rows, dtype=torch.float64)
    out = torch.zeros(*rows, v.shape[-1], dtype=torch.float64)
    for key in range(0, (-(-seq // 64) - 1) * 64, 64):
        s = s + q @ k[:, key : key + 64].transpose(1, 2)
        m_prev, m = m, torch.maximum(m, s.amax(-1))
        s = torch.exp2(s - m[..., None])
        rescale = torch.exp2(m_prev - m)
        denom = denom * rescale + s.sum(-1)
        out = out * rescale[..., None] + s @ v[:, key : key + 64]
    out = out / denom[..., None]
    return out, s + out.amax(-1, keepdim=True)


def _run_wide(device, batch, heads, seq, dim, dtype="float16", form="plain"):
    kernel = tile2triton.compile(wide_attention(batch, heads, seq, dim=dim, dtype=dtype, form=form))
    if device == "cuda":
        assert kernel.get_kernel_source().startswith("# Gluon generated"), "should take the Gluon route"
    dt = getattr(torch, dtype)
    q = (torch.randn(batch, heads, dim, device=device) * dim**-0.5).to(dt)
    k, v = (torch.randn(batch, seq, d, device=device).to(dt) for d in (dim, DIM))
    out, last = poison((batch, heads, DIM), dt, device), poison((batch, heads, 64), dt, device)
    kernel(q, k, v, out, last)
    ref_out, ref_last = (_carried_reference if form == "carry_s" else _wide_reference)(q.cpu(), k.cpu(), v.cpu(), seq)
    tol = 2e-3 if dtype == "float16" else 1.6e-2
    assert_close(out, ref_out, atol=tol, rtol=tol)
    assert_close(last, ref_last, atol=tol, rtol=tol)


@pytest.mark.gpu
@ON_HOPPER
@pytest.mark.parametrize("name", sorted(WIDE_RUNS))
def test_wide_attention_matches_torch(name):
    _run_wide("cuda", 3, 160, 333, **WIDE_RUNS[name])


@pytest.mark.parametrize("name", sorted(WIDE_RUNS))
def test_wide_kernels_match_torch_on_the_interpreter(name):
    _run_wide("cpu", 1, 96, 200, **WIDE_RUNS[name])


def mla_grouped(batch, heads, seq, kv_heads=2, dtype="float16"):
    """MLA decode with several latent heads, as TileLang's example picks one: ``cur_kv_head``, a let
    of the block index the loader recomputes for its boxes, and a loop bound from a let."""
    block_h, block_n = 64, 64
    groups = heads // kv_heads
    scale = (DIM + PE_DIM) ** -0.5 * 1.44269504
    accum = "float"

    @T.prim_func
    def main(
        Q: T.Tensor([batch, heads, DIM], dtype),
        Q_pe: T.Tensor([batch, heads, PE_DIM], dtype),
        KV: T.Tensor([batch, seq, kv_heads, DIM], dtype),
        K_pe: T.Tensor([batch, seq, kv_heads, PE_DIM], dtype),
        Output: T.Tensor([batch, heads, DIM], dtype),
    ):
        with T.Kernel(heads // block_h, batch, threads=256) as (hid, bid):
            Q_shared = T.alloc_shared([block_h, DIM], dtype)
            Q_pe_shared = T.alloc_shared([block_h, PE_DIM], dtype)
            KV_shared = T.alloc_shared([block_n, DIM], dtype)
            K_pe_shared = T.alloc_shared([block_n, PE_DIM], dtype)
            S_shared = T.alloc_shared([block_h, block_n], dtype)
            acc_s = T.alloc_fragment([block_h, block_n], accum)
            acc_o = T.alloc_fragment([block_h, DIM], accum)
            scores_max = T.alloc_fragment([block_h], accum)
            scores_max_prev = T.alloc_fragment([block_h], accum)
            scores_scale = T.alloc_fragment([block_h], accum)
            scores_sum = T.alloc_fragment([block_h], accum)
            logsum = T.alloc_fragment([block_h], accum)

            cur_kv_head = hid // (groups // block_h)
            loop_range = T.ceildiv(seq, block_n)
            T.copy(Q[bid, hid * block_h : (hid + 1) * block_h, :], Q_shared)
            T.copy(Q_pe[bid, hid * block_h : (hid + 1) * block_h, :], Q_pe_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum))
            for k in T.Pipelined(loop_range, num_stages=2):
                kv_start = k * block_n
                T.copy(KV[bid, kv_start : kv_start + block_n, cur_kv_head, :], KV_shared)
                T.copy(K_pe[bid, kv_start : kv_start + block_n, cur_kv_head, :], K_pe_shared)
                for i, j in T.Parallel(block_h, block_n):
                    acc_s[i, j] = T.if_then_else(kv_start + j < seq, 0, -T.infinity(accum))
                T.gemm(Q_shared, KV_shared, acc_s, transpose_B=True)
                T.gemm(Q_pe_shared, K_pe_shared, acc_s, transpose_B=True)
                T.copy(scores_max, scores_max_prev)
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_h):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_h, block_n):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                T.copy(acc_s, S_shared)
                for i in T.Parallel(block_h):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                for i, j in T.Parallel(block_h, DIM):
                    acc_o[i, j] *= scores_scale[i]
                T.gemm(S_shared, KV_shared, acc_o)
            for i, j in T.Parallel(block_h, DIM):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, Output[bid, hid * block_h : (hid + 1) * block_h, :])

    return main


def test_grouped_mla_takes_the_column_split_route():
    p = plan_of(mla_grouped(1, 128, 200, dtype="bfloat16"))
    assert {r.dst.buffer.name: acc.name for r, acc in p.deferred.items()} == {"scores_sum": "logsum"}
    source = _gluon_source(mla_grouped(1, 128, 200, dtype="bfloat16"))
    loader = source[source.index("def main_loader") : source.index("def main_kernel")]
    # the loader recomputes the lets its boxes use, before and in the loop
    assert "cur_kv_head = hid" in loader and "kv_start = (k * 64)" in loader
    assert "[bid, kv_start, cur_kv_head, 256]" in loader


def _run_grouped(device, batch, heads, seq, kv_heads, dtype):
    kernel = tile2triton.compile(mla_grouped(batch, heads, seq, kv_heads, dtype))
    if device == "cuda":
        assert kernel.get_kernel_source().startswith("# Gluon generated"), "MLA should take the Gluon route"
    dt = getattr(torch, dtype)
    shapes = ((batch, heads, DIM), (batch, heads, PE_DIM), (batch, seq, kv_heads, DIM), (batch, seq, kv_heads, PE_DIM))
    q, q_pe, kv, k_pe = (torch.randn(s, device=device).to(dt) for s in shapes)
    out = poison((batch, heads, DIM), dt, device)
    kernel(q, q_pe, kv, k_pe, out)
    group = heads // kv_heads
    ref = torch.cat(
        [
            _reference(q[:, h * group : (h + 1) * group], q_pe[:, h * group : (h + 1) * group], kv[:, :, h : h + 1], k_pe[:, :, h : h + 1])
            for h in range(kv_heads)
        ],
        dim=1,
    )
    tol = 2e-3 if dtype == "float16" else 1.6e-2
    assert_close(out, ref, atol=tol, rtol=tol)


@pytest.mark.gpu
@ON_HOPPER
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_grouped_mla_matches_torch(dtype):
    _run_grouped("cuda", 2, 256, 333, 2, dtype)


def test_grouped_mla_matches_torch_on_the_interpreter():
    _run_grouped("cpu", 1, 128, 150, 2, "bfloat16")
