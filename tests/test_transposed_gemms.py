"""TILE2TRITON_TRANSPOSED_DOTS: on sm_90 a gemm of a shared A with fewer than 64 rows and at least 64
columns, beside a wgmma-sized gemm, is written as its transposed product (codegen/gemm_kinds.transposed_dot),
so Triton issues wgmma from shared memory instead of mma.sync (the 32-row dKV gemms of sparse MLA
backward beside its 64-row dQ gemm)."""

import os
from unittest import mock

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.codegen import gemm_kinds

pytestmark = pytest.mark.poison_empty


def dkv_like(blocks, M, N, K, threads=128):
    """Per block: C = X^T Y + P^T Z (transposed-A gemms of shared buffers), E = W Z + W Z + 1/2
    (the second with W in a fragment: not transposed), G = V Z (64 rows: a wgmma as written)."""
    dt = "bfloat16"

    @T.prim_func
    def main(
        X: T.Tensor((blocks, K, M), dt),
        Y: T.Tensor((blocks, K, N), dt),
        P: T.Tensor((blocks, K, M), dt),
        Z: T.Tensor((blocks, K, N), dt),
        W: T.Tensor((blocks, M, K), dt),
        C: T.Tensor((blocks, M, N), "float32"),
        E: T.Tensor((blocks, M, N), "float32"),
        V: T.Tensor((blocks, 64, K), dt),
        G: T.Tensor((blocks, 64, N), "float32"),
    ):
        with T.Kernel(blocks, threads=threads) as bx:
            X_s = T.alloc_shared((K, M), dt)
            Y_s = T.alloc_shared((K, N), dt)
            P_s = T.alloc_shared((K, M), dt)
            Z_s = T.alloc_shared((K, N), dt)
            W_s = T.alloc_shared((M, K), dt)
            C_f = T.alloc_fragment((M, N), "float32")
            E_f = T.alloc_fragment((M, N), "float32")
            W_f = T.alloc_fragment((M, K), dt)
            V_s = T.alloc_shared((64, K), dt)
            G_f = T.alloc_fragment((64, N), "float32")
            T.copy(X[bx, :, :], X_s)
            T.copy(Y[bx, :, :], Y_s)
            T.copy(P[bx, :, :], P_s)
            T.copy(Z[bx, :, :], Z_s)
            T.copy(W[bx, :, :], W_s)
            T.gemm(X_s, Y_s, C_f, transpose_A=True, clear_accum=True)
            T.gemm(P_s, Z_s, C_f, transpose_A=True)
            T.fill(E_f, 0.5)
            T.gemm(W_s, Z_s, E_f)
            T.copy(W_s, W_f)
            T.gemm(W_f, Z_s, E_f)
            T.copy(V[bx, :, :], V_s)
            T.gemm(V_s, Z_s, G_f, clear_accum=True)
            T.copy(C_f, C[bx, :, :])
            T.copy(E_f, E[bx, :, :])
            T.copy(G_f, G[bx, :, :])

    return main


SHAPES = [(3, 24, 96, 48), (2, 20, 112, 40)]  # blocks, M (rows < 64), N (>= 64 padded), K: within the budget


@pytest.mark.parametrize("shape", SHAPES)
def test_transposed_product_matches_torch(shape, monkeypatch):
    """The transposed form (forced on: the interpreter has no sm_90) computes the same gemms."""
    monkeypatch.setattr(gemm_kinds, "hopper", lambda opts: True)
    blocks, M, N, K = shape
    kernel = tilelang.compile(dkv_like(*shape))
    assert kernel.get_kernel_source().count("tl.trans(tl.dot(") == 3
    g = torch.Generator().manual_seed(1)

    def rnd(*s):
        return torch.randn(*s, generator=g).to(torch.bfloat16)

    x, y, p, z, w = rnd(blocks, K, M), rnd(blocks, K, N), rnd(blocks, K, M), rnd(blocks, K, N), rnd(blocks, M, K)
    v = rnd(blocks, 64, K)
    c = torch.full((blocks, M, N), float("nan"))
    e = torch.full((blocks, M, N), float("nan"))
    gg = torch.full((blocks, 64, N), float("nan"))
    kernel(x, y, p, z, w, c, e, v, gg)
    d = [t.double() for t in (x, y, p, z, w)]
    ref_c = d[0].transpose(1, 2) @ d[1] + d[2].transpose(1, 2) @ d[3]
    ref_e = 2 * (d[4] @ d[3]) + 0.5
    assert_close(c, ref_c, atol=1e-2, rtol=1e-2)
    assert_close(e, ref_e, atol=1e-2, rtol=1e-2)
    assert_close(gg, v.double() @ d[3], atol=1e-2, rtol=1e-2)


def _hopper_source(env: str) -> str:
    with mock.patch.dict(os.environ, {"TILE2TRITON_TRANSPOSED_DOTS": env}):
        return tilelang.compile(dkv_like(*SHAPES[0])).lowered_for("sm_90").source


def test_switch_and_target_decide():
    on, off = _hopper_source("1"), _hopper_source("0")
    assert "C_f = tl.trans(tl.dot(tl.trans(Y_s), X_s))" in on
    assert "C_f = tl.trans(tl.dot(tl.trans(Z_s), P_s, tl.trans(C_f)))" in on
    assert "E_f = tl.trans(tl.dot(tl.trans(Z_s), tl.trans(W_s), tl.trans(E_f)))" in on
    assert "W_f, 0), Z_s, E_f)" in on  # a fragment A stays mma.sync's register operand
    assert "tl.trans(tl.dot(" not in off
    ampere = tilelang.compile(dkv_like(*SHAPES[0])).lowered_for("sm_80").source
    assert "tl.trans(tl.dot(" not in ampere  # mma.sync has no such limit there: left as written
    one_warp = tilelang.compile(dkv_like(*SHAPES[0], threads=32)).lowered_for("sm_90").source
    assert "tl.trans(tl.dot(" not in one_warp  # below a warpgroup Triton takes mma.sync anyway


def _ptx_for_hopper(module, tmp_path) -> str:
    import importlib.util
    import sys

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from tile2triton.runtime.target import triton_signature

    (launch,) = module.launches
    path = tmp_path / f"transposed_{abs(hash(module.source))}.py"
    path.write_text(module.source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    generated = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = generated
    try:
        spec.loader.exec_module(generated)
        fn = getattr(generated, launch.name)
        types = triton_signature(launch)
        attrs = {(i,): [["tt.divisibility", 16]] for i, t in enumerate(types) if t.startswith("*")}
        compiled = triton.compile(
            ASTSource(fn, dict(zip(fn.arg_names, types)), {}, attrs),
            target=GPUTarget("cuda", 90, 32),
            options={"num_warps": launch.num_warps},
        )
    finally:
        sys.modules.pop(path.stem, None)
    return compiled.asm["ptx"]


def test_transposed_product_compiles_to_wgmma(tmp_path):
    """Offline for sm_90: with the switch the gemms of shared operands are wgmma; without, mma.sync."""
    ptx = {}
    for env in ("1", "0"):
        with mock.patch.dict(os.environ, {"TILE2TRITON_TRANSPOSED_DOTS": env}):
            ptx[env] = _ptx_for_hopper(tilelang.compile(dkv_like(*SHAPES[0])).lowered_for("sm_90"), tmp_path)
    assert ptx["1"].count("wgmma.mma_async") > ptx["0"].count("wgmma.mma_async")
    assert ptx["1"].count("mma.sync") < ptx["0"].count("mma.sync")


def test_past_the_register_budget_only_as_a_shared_memory_fit_step():
    # 32 x 256 + 32 x 256 + 64 x 256 accumulators exceed 192 registers a thread of 4 warps: kept as
    # written, unless the kernel did not fit shared memory (runtime/tuning.FIT_STEPS' first step)
    kernel = tilelang.compile(dkv_like(2, 32, 160, 40))
    assert "tl.trans(tl.dot(" not in kernel.lowered_for("sm_90").source
    kernel.shared_memory_fit = dict(tilelang.runtime.tuning.FIT_STEPS[0])
    assert kernel.lowered_for("sm_90").source.count("tl.trans(tl.dot(") == 3
