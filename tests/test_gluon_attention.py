"""Attention loops lowered to Gluon for Hopper (codegen/gluon_attention.py).

Which kernels take the Gluon route is checked on the CPU; the generated module is compiled for
sm_90 with the installed Triton (no GPU needed); it runs against torch on a GPU of compute
capability 9.0.
"""

import importlib.util
import math
import sys

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton
import tile2triton.language as T
from tile2triton.codegen import gluon_attention
from tile2triton.codegen.emit import emit_module
from tile2triton.codegen.lower import LoweringOptions
from tile2triton.compiler import bind_kernel_source

HAS_GLUON = importlib.util.find_spec("triton.experimental.gluon") is not None


def attention(batch, heads, seq, dim, causal, layout="bhsd", block_m=128, block_n=128, threads=256, extra=False):
    """TileLang's flash-attention forward (examples/flash_attention), BHSD or BSHD."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504
    shape = [batch, heads, seq, dim] if layout == "bhsd" else [batch, seq, heads, dim]
    dtype, accum = "float16", "float"

    def box(t, b, h, start, rows):
        return t[b, h, start : start + rows, :] if layout == "bhsd" else t[b, start : start + rows, h, :]

    @T.prim_func
    def main(
        Q: T.Tensor(shape, dtype),
        K: T.Tensor(shape, dtype),
        V: T.Tensor(shape, dtype),
        Output: T.Tensor(shape, dtype),
        Bias: T.Tensor([seq], accum),
    ):
        with T.Kernel(T.ceildiv(seq, block_m), heads, batch, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_m, dim], dtype)
            K_shared = T.alloc_shared([block_n, dim], dtype)
            V_shared = T.alloc_shared([block_n, dim], dtype)
            O_shared = T.alloc_shared([block_m, dim], dtype)
            acc_s = T.alloc_fragment([block_m, block_n], accum)
            acc_s_cast = T.alloc_fragment([block_m, block_n], dtype)
            acc_o = T.alloc_fragment([block_m, dim], accum)
            scores_max = T.alloc_fragment([block_m], accum)
            scores_max_prev = T.alloc_fragment([block_m], accum)
            scores_scale = T.alloc_fragment([block_m], accum)
            scores_sum = T.alloc_fragment([block_m], accum)
            logsum = T.alloc_fragment([block_m], accum)
            T.copy(box(Q, bz, by, bx * block_m, block_m), Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum))
            loop_range = (
                T.min(T.ceildiv(seq, block_n), T.ceildiv((bx + 1) * block_m, block_n))
                if causal
                else T.ceildiv(seq, block_n)
            )
            for k in T.Pipelined(loop_range, num_stages=2):
                T.copy(box(K, bz, by, k * block_n, block_n), K_shared)
                if causal:
                    for i, j in T.Parallel(block_m, block_n):
                        acc_s[i, j] = T.if_then_else(bx * block_m + i >= k * block_n + j, 0, -T.infinity(accum))
                else:
                    for i, j in T.Parallel(block_m, block_n):
                        acc_s[i, j] = T.if_then_else(k * block_n + j >= seq, -T.infinity(accum), 0)
                if extra:
                    for i, j in T.Parallel(block_m, block_n):
                        acc_s[i, j] += Bias[k * block_n + j]
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_m):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                for i in T.Parallel(block_m):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_m, block_n):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_m):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_m, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(box(V, bz, by, k * block_n, block_n), V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_m, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, box(Output, bz, by, bx * block_m, block_m))

    return main


def plan_of(prim):
    func = bind_kernel_source(prim)
    return gluon_attention.plan(func.kernels[0], func)


@pytest.mark.parametrize("layout", ["bhsd", "bshd"])
@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_takes_the_gluon_route(causal, layout):
    p = plan_of(attention(1, 2, 200, 128, causal, layout))
    assert (p.block_n, p.dim, p.dim_v, p.stages) == (128, 128, 128, 3)
    assert [type(s).__name__ for s in p.loop_head] == ["Parallel"]  # the mask; the K/V copies go to the loader


@pytest.mark.parametrize(
    "kwargs, reason",
    [
        (dict(dim=64), "head dim 128"),  # measured slower than the tl lowering at head dim 64
        (dict(threads=128, block_m=64), "256 threads"),
        (dict(extra=True), "row-major fragments"),  # a global read (an attention bias) in the loop
    ],
)
def test_other_kernels_keep_the_tl_lowering(kwargs, reason):
    args = dict(batch=1, heads=2, seq=200, dim=128, causal=False) | kwargs
    with pytest.raises(gluon_attention.NotAttention, match=reason):
        plan_of(attention(**args))


def _gluon_module(prim):
    func = bind_kernel_source(prim)
    module = emit_module(func, LoweringOptions(gluon=True, tensor_descriptors=True))
    assert module.source.startswith("# Gluon generated by tile2triton")
    return module


@pytest.mark.skipif(not HAS_GLUON, reason="this Triton has no Gluon")
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_module_compiles_for_hopper(causal, tmp_path):
    """The generated module compiles for sm_90 with this machine's Triton (no GPU needed)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    module = _gluon_module(attention(2, 3, 333, 128, causal, "bshd"))
    path = tmp_path / "generated_attention.py"
    path.write_text(module.source)
    spec = importlib.util.spec_from_file_location("generated_attention", path)
    generated = importlib.util.module_from_spec(spec)
    sys.modules["generated_attention"] = generated
    spec.loader.exec_module(generated)
    kernel = getattr(generated, module.launches[0].name)
    signature = {a: "*fp16" if a != "Bias" else "*fp32" for a in kernel.arg_names}
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(len(kernel.arg_names))}
    compiled = triton.compile(
        GluonASTSource(kernel, signature, {}, attrs), target=GPUTarget("cuda", 90, 32), options={"num_warps": 4}
    )
    ptx = compiled.asm["ptx"]
    assert ptx.count("wgmma.mma_async") > 0 and "wgmma.wait_group.sync.aligned 1;" in ptx
    assert compiled.metadata.shared <= 227 * 1024


def _reference(q, k, v, causal, layout):
    if layout == "bshd":
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    scores = q.double() @ k.double().transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[-2]
        scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    out = torch.softmax(scores, dim=-1) @ v.double()
    return out.transpose(1, 2) if layout == "bshd" else out


@pytest.mark.gpu
@pytest.mark.skipif(
    not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0),
    reason="the Gluon attention route is for sm_90",
)
@pytest.mark.parametrize("layout", ["bhsd", "bshd"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seq", [200, 333])
def test_gluon_attention_matches_torch(seq, causal, layout):
    batch, heads, dim = 2, 3, 128
    kernel = tile2triton.compile(attention(batch, heads, seq, dim, causal, layout))
    assert kernel.get_kernel_source().startswith("# Gluon generated"), "the attention loop should take the Gluon route"
    shape = (batch, heads, seq, dim) if layout == "bhsd" else (batch, seq, heads, dim)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.float16) for _ in range(3))
    out = poison(shape, torch.float16, "cuda")
    bias = torch.randn(seq, device="cuda")
    kernel(q, k, v, out, bias)
    assert_close(out, _reference(q, k, v, causal, layout), atol=2e-3, rtol=2e-3)
