"""Inline PTX: T.inline_asm and the ready helpers.  Under the interpreter the helpers use their
pure-Triton fallbacks (checked against torch); the GPU source is checked for the asm itself; on a
CUDA machine (the `cuda` parametrization) the PTX results are checked against torch too."""

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.errors import TileLangCompileError

N = 300
UNARY = {
    "ptx_ex2": (lambda x: torch.exp2(x), 2e-6),
    "ptx_tanh": (torch.tanh, 2e-3),  # tanh.approx: max abs error ~2**-10.9
    "ptx_rcp": (lambda x: 1.0 / x, 1e-6),
    "ptx_rsqrt": (lambda x: torch.rsqrt(x.abs() + 0.5), 1e-6),
}


@tilelang.jit(out_idx=[-1])
def unary_helper(n, name):
    helper = getattr(T, name)

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if name == "ptx_rsqrt":
                    B[bx * 128 + i] = helper(T.abs(A[bx * 128 + i]) + 0.5)
                else:
                    B[bx * 128 + i] = helper(A[bx * 128 + i])

    return main


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_helpers(dev, name):
    ref, tol = UNARY[name]
    a = torch.randn(N, device=dev) * 3
    if name == "ptx_rcp":
        a = a + torch.sign(a)  # away from 0
    out = unary_helper(N, name)(a)
    torch.testing.assert_close(out.cpu().double(), ref(a.cpu().double()), rtol=tol, atol=tol)


@tilelang.jit(out_idx=[-2, -1])
def special_registers(threads):
    @T.prim_func
    def main(A: T.Tensor((threads,), "int32"), L: T.Tensor((threads,), "int32"), W: T.Tensor((threads,), "int32")):
        with T.Kernel(1, threads=threads) as bx:
            tx = T.get_thread_binding(0)
            L[tx] = T.ptx_laneid() + A[tx] * 0
            W[tx] = T.ptx_warpid()

    return main


def test_lane_and_warp_ids(dev):
    a = torch.randint(0, 5, (128,), dtype=torch.int32, device=dev)
    lane, warp = special_registers(128)(a)
    lane, warp = lane.cpu(), warp.cpu()
    assert ((lane >= 0) & (lane < 32)).all() and ((warp >= 0) & (warp < 32)).all()
    if dev == "cpu":  # the fallback is the logical thread's lane and warp
        idx = torch.arange(128, dtype=torch.int32)
        assert torch.equal(lane, idx % 32) and torch.equal(warp, idx // 32)
    else:  # the hardware registers: each warp's 32 lanes appear once per warp
        assert sorted(lane.tolist()) == sorted(list(range(32)) * 4)


@tilelang.jit(out_idx=[-1])
def timers(n):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), C: T.Tensor((4,), "int64")):
        with T.Kernel(1, threads=32) as bx:
            t0 = T.ptx_clock64()
            g0 = T.ptx_globaltimer()
            acc = T.alloc_var("float32", 0.0)
            for k in T.serial(n):
                acc = acc + A[k]
            C[0] = T.ptx_clock64() - t0 + T.cast(acc * 0.0, "int64")
            C[1] = T.ptx_globaltimer() - g0
            C[2] = T.ptx_smid()
            C[3] = t0 * 0 + 7

    return main


def test_clock_globaltimer_smid(dev):
    c = timers(64)(torch.randn(64, device=dev)).cpu()
    assert c[3] == 7
    if dev == "cpu":
        assert c[0] == 0 and c[1] == 0 and c[2] == 0
    else:
        assert c[0] > 0 and c[1] >= 0 and 0 <= c[2] < 1024


@tilelang.jit(out_idx=[-1])
def raw_asm(n):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                B[bx * 128 + i] = T.inline_asm("ex2.approx.f32 $0, $1;", "=r,r", A[bx * 128 + i], dtype="float32")

    return main


def test_raw_inline_asm_generated_source():
    src = raw_asm(N).get_kernel_source(interpret=False)
    assert "tl.inline_asm_elementwise('ex2.approx.f32 $0, $1;', '=r,r', [tl.load(A + offs, mask=mask, other=0)]" in src
    assert "dtype=tl.float32, is_pure=True, pack=1)" in src


def test_helpers_generated_source():
    src = unary_helper(N, "ptx_tanh").get_kernel_source(interpret=False)
    assert "tl.inline_asm_elementwise('tanh.approx.f32 $0, $1;', '=r,r', [" in src
    src = special_registers(128).get_kernel_source(interpret=False)
    assert "'mov.u32 $0, %laneid;', '=r,r'" in src and "is_pure=False" in src
    src = timers(8).get_kernel_source(interpret=False)
    assert "'mov.u64 $0, %clock64;', '=l,r'" in src and "dtype=tl.int64" in src


def test_raw_inline_asm_under_the_interpreter_names_the_line():
    with pytest.raises(TileLangCompileError) as err:
        raw_asm(N)(torch.randn(N))
    assert "T.inline_asm cannot run under Triton's interpreter" in str(err.value)
    assert f"test_ptx.py:{raw_asm.__wrapped__.__code__.co_firstlineno + 6}" in str(err.value)


def test_raw_inline_asm_runs_on_the_gpu(dev):
    if dev == "cpu":
        pytest.skip("inline assembly needs the GPU")
    a = torch.randn(N, device=dev)
    torch.testing.assert_close(raw_asm(N)(a).cpu(), torch.exp2(a.cpu()), rtol=2e-6, atol=2e-6)


@tilelang.jit(out_idx=[-1])
def logical_lane_warp(threads):
    @T.prim_func
    def main(A: T.Tensor((threads,), "int32"), C: T.Tensor((threads,), "int32")):
        with T.Kernel(1, threads=threads) as bx:
            tx = T.get_thread_binding(0)
            C[tx] = T.get_lane_idx() * 1000 + T.get_warp_idx() + A[tx]

    return main


def test_tilelang_get_lane_and_warp_idx(dev):
    a = torch.randint(0, 3, (96,), dtype=torch.int32, device=dev)
    idx = torch.arange(96, dtype=torch.int32)
    out = logical_lane_warp(96)(a).cpu()
    assert torch.equal(out, (idx % 32) * 1000 + idx // 32 + a.cpu())
