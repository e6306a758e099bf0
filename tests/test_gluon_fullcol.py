"""Column-split attention loops (MLA decode) lowered to Gluon for Hopper (codegen/gluon_fullcol.py).

As in test_gluon_attention.py: which kernels take the route is checked on the CPU, the generated
module is compiled for sm_90 with the installed Triton (no GPU needed; run the compile tests with
Triton 3.6 too: PYTHONPATH=<triton 3.6> pytest -k compile), it runs against torch on a GPU of
compute capability 9.0, and the same kernels run through the tl lowering on the interpreter.
"""

import importlib.util
import sys

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton
import tile2triton.language as T
from tile2triton.codegen import gluon_fullcol
from tile2triton.codegen.emit import emit_module
from tile2triton.codegen.gluon_attention import NotAttention
from tile2triton.codegen.lower import LoweringOptions
from tile2triton.compiler import bind_kernel_source

HAS_GLUON = importlib.util.find_spec("triton.experimental.gluon") is not None
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


@pytest.mark.parametrize(
    "kwargs, reason",
    [
        (dict(block_n=32), "not measured faster"),
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
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    module = emit_module(
        bind_kernel_source(mla_decode(2, 128, FORMS[form], form=form)), LoweringOptions(gluon=True, tensor_descriptors=True)
    )
    name = f"generated_mla_{tmp_path.name}"
    path = tmp_path / f"{name}.py"
    path.write_text(module.source)
    spec = importlib.util.spec_from_file_location(name, path)
    generated = importlib.util.module_from_spec(spec)
    sys.modules[name] = generated
    spec.loader.exec_module(generated)
    kernel = getattr(generated, module.launches[0].name)
    signature = {a: "*fp16" for a in kernel.arg_names}
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(len(kernel.arg_names))}
    compiled = triton.compile(
        GluonASTSource(kernel, signature, {}, attrs), target=GPUTarget("cuda", 90, 32), options={"num_warps": 4}
    )
    ptx = compiled.asm["ptx"]
    assert ptx.count("wgmma.mma_async") > 0 and "wgmma.wait_group.sync.aligned 0;" in ptx
    assert compiled.metadata.shared <= 227 * 1024


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
