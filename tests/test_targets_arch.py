"""Every Triton target (issue 25): the one description of a card (runtime/target.Target), what code
generation takes from it, and `tile2triton show --target`.  Sources are generated for cards this
machine does not have (JITKernel.lowered_for); a few are compiled offline with Triton
(GPUTarget), which needs no GPU."""

import re

import pytest
import torch
from triton.backends.compiler import GPUTarget

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import cli
from tile2triton.errors import TileLangCompileError
from tile2triton.runtime import target as target_mod
from tile2triton.runtime import tuning
from tile2triton.runtime.kernel import JITKernel
from tile2triton.runtime.target import MATRIX, compile_offline, parse_target

# ---------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    "given, backend, arch, warp",
    [
        ("sm_80", "cuda", "sm_80", 32),
        ("sm_90a", "cuda", "sm_90", 32),
        ("cuda -arch=sm_100", "cuda", "sm_100", 32),
        ({"kind": "cuda", "arch": "sm_120"}, "cuda", "sm_120", 32),
        ("gfx942", "hip", "gfx942", 64),
        ({"kind": "hip", "arch": "gfx950"}, "hip", "gfx950", 64),
        ("gfx1100", "hip", "gfx1100", 32),  # RDNA: wave32
        ("gfx908", "hip", "gfx908", 64),  # unlisted CDNA: its family's wavefront
        ("sm_75", "cuda", "sm_75", 32),  # unlisted: no TMA, no e4m3fn
        ("cpu", "cpu", "", 32),
    ],
)
def test_parse_target(given, backend, arch, warp):
    t = parse_target(given)
    assert (t.backend, t.arch, t.warp_size) == (backend, arch, warp)


def test_target_limits_and_features():
    sm80, sm90, sm120, gfx942 = (parse_target(a) for a in ("sm_80", "sm_90", "sm_120", "gfx942"))
    assert sm90.tma and parse_target("sm_100").tma and sm120.tma
    assert not sm80.tma and not gfx942.tma and not parse_target("gfx950").tma
    assert sm90.smem == 232448 and sm120.smem == 101376 and gfx942.smem == 65536
    assert "float8_e4m3fn" not in sm80.fp8 and "float8_e4m3fn" in parse_target("sm_89").fp8
    assert sm90.capability == (9, 0) and gfx942.capability is None
    assert str(gfx942.gpu_target()) == str(GPUTarget("hip", "gfx942", 64))
    assert str(sm80.gpu_target()) == str(GPUTarget("cuda", 80, 32))


@pytest.mark.skipif(torch.cuda.is_available(), reason="the defaults of a machine without a GPU")
def test_bare_backends_name_the_reference_cards():
    assert parse_target("cuda").arch == "sm_90" and parse_target("auto").arch == "sm_90"
    assert parse_target("hip").arch == "gfx942" and parse_target("rocm").arch == "gfx942"


@pytest.mark.parametrize("given", ["hip", "rocm", "sm_80", "gfx942", "cuda -arch=sm_100"])
def test_target_kind_accepts_hip_and_arch_names(given):
    assert target_mod.target_kind(given) == "cuda"  # ROCm's torch names its devices "cuda" too


def test_unknown_target_is_an_error():
    with pytest.raises(ValueError, match=r"unknown target 'metal'.*'hip'.*'gfx942'"):
        target_mod.target_kind("metal")


# ---------------------------------------------------------------------------- kernels


@tilelang.jit(out_idx=[-1])
def add_one(n, threads):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, threads), threads=threads) as bx:
            for i in T.Parallel(threads):
                B[bx * threads + i] = A[bx * threads + i] + 1.0

    return main


@pytest.mark.parametrize("threads, arch, warps", [(128, "sm_90", 4), (128, "gfx942", 2), (128, "gfx1100", 4),
                                                  (256, "gfx950", 4), (64, "gfx942", 1), (32, "gfx942", 1)])  # fmt: skip
def test_num_warps_follow_the_warp_size(threads, arch, warps):
    """threads=128 is 4 warps of 32 lanes, or 2 wavefronts of 64 on CDNA (not 4 wavefronts: 256 lanes)."""
    module = add_one(300, threads).lowered_for(arch)
    assert module.launches[0].num_warps == warps


@tilelang.jit(out_idx=[-1], pass_configs={"tl.enable_fast_math": True})
def ptx_everywhere(n):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding(0)
            x = A[tx]
            B[tx] = T.ptx_ex2(x) + T.fast_rcp(x + 4.0) + T.tanh(x) + T.sin(x) + T.ptx_laneid() + T.ptx_warpid()

    return main


@pytest.mark.parametrize("arch", MATRIX)
def test_no_inline_ptx_reaches_a_hip_target(arch):
    source = ptx_everywhere(128).lowered_for(arch).source
    if parse_target(arch).backend == "hip":
        assert "inline_asm" not in source and "%laneid" not in source and ".approx" not in source
        assert "tl.exp2" in source and "% 32" in source and "// 32" in source
    else:
        assert source.count("tl.inline_asm_elementwise") >= 5, source  # ex2, rcp, tanh, sin, laneid, warpid
        assert "mov.u32 $0, %laneid;" in source and "tanh.approx.f32" in source


@pytest.mark.parametrize("arch", ["gfx942", "gfx1100"])
def test_hip_source_assembles(arch):
    """The portable lowerings compile with Triton's AMD backend (offline: its own LLVM)."""
    (kernel,) = compile_offline(ptx_everywhere(128).lowered_for(arch), arch, registers_too=False)
    assert kernel["bytes"] > 0


@pytest.mark.parametrize("helper", ["ptx_clock64", "ptx_smid", "ptx_globaltimer"])
def test_ptx_only_registers_on_hip_are_a_clear_error(helper):
    @tilelang.jit(out_idx=[-1])
    def read(n):
        @T.prim_func
        def main(A: T.Tensor((n,), "int64"), B: T.Tensor((n,), "int64")):
            with T.Kernel(1, threads=128) as bx:
                tx = T.get_thread_binding(0)
                B[tx] = A[tx] + T.Cast("int64", getattr(T, helper)())

        return main

    kernel = read(128)
    assert "inline_asm" in kernel.lowered_for("sm_90").source
    with pytest.raises(TileLangCompileError, match=rf"T\.{helper} reads .* on the hip target gfx942") as err:
        kernel.lowered_for("gfx942")
    assert "test_targets_arch.py" in str(err.value)


def test_raw_inline_asm_on_hip_is_a_clear_error():
    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(128):
                B[i] = T.inline_asm("mov.b32 $0, $1;", "=r,r", A[i], dtype="float32")

    kernel = tilelang.compile(main, out_idx=[-1])
    assert "mov.b32" in kernel.lowered_for("sm_80").source
    with pytest.raises(TileLangCompileError, match=r"T\.inline_asm holds PTX, which the hip target gfx950"):
        kernel.lowered_for("gfx950")


# ---------------------------------------------------------------------------- fp8 per target


@tilelang.jit(out_idx=[-1])
def to_fp8(n, dtype):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                B[bx * 128 + i] = T.Cast(dtype, A[bx * 128 + i] * 2.0)

    return main


@pytest.mark.parametrize("arch", MATRIX)
def test_fp8_formats_per_target(arch):
    e5m2 = to_fp8(200, "float8_e5m2").lowered_for(arch).source
    assert "tl.float8e5" in e5m2  # every target has e5m2
    kernel = to_fp8(200, "float8_e4m3fn")
    if arch == "sm_80":
        with pytest.raises(TileLangCompileError, match=r"float8_e4m3fn is not an fp8 format .* sm_80") as err:
            kernel.lowered_for(arch)
        assert "test_targets_arch.py" in str(err.value)  # at the user's line
    else:
        assert "tl.float8e4nv" in kernel.lowered_for(arch).source


def test_fp8_compiles_where_it_is_accepted():
    kernel = to_fp8(200, "float8_e4m3fn")
    for arch in ("sm_89", "gfx942"):
        assert compile_offline(kernel.lowered_for(arch), arch, registers_too=False)[0]["bytes"] > 0


# ---------------------------------------------------------------------------- descriptors, tables


@tilelang.jit(out_idx=[-1])
def matmul(M, N, K, bm, bn, bk):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_f = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * bm, bx * bn])

    return main


@pytest.mark.parametrize("arch", MATRIX)
def test_tensor_descriptors_only_with_tma(arch, monkeypatch):
    monkeypatch.delenv("TILE2TRITON_TENSOR_DESCRIPTORS", raising=False)
    monkeypatch.setenv("TILE2TRITON_TMA_MIN_TRIPS", "0")  # a 4-iteration loop: descriptors wherever TMA is
    monkeypatch.setenv("TILE2TRITON_HOST_DESCRIPTORS", "0")  # built in the kernel, where this test can see them
    source = matmul(256, 192, 128, 64, 64, 32).lowered_for(arch).source
    assert ("make_tensor_descriptor" in source) == parse_target(arch).tma


def test_h200_launch_table_only_on_sm_90():
    func = matmul(256, 192, 128, 64, 64, 32).prim_func
    assert tuning.heuristic(func, parse_target("sm_90")) == tuning.LaunchChoice(None, 3)
    assert tuning.heuristic(func, (9, 0)) == tuning.LaunchChoice(None, 3)  # a capability still works
    for arch in ("sm_80", "sm_100", "sm_120", "gfx942", "gfx950", "gfx1100"):
        assert tuning.heuristic(func, parse_target(arch)) == tuning.LITERAL, arch
    assert "num_stages=3" in matmul(256, 192, 128, 64, 64, 32).lowered_for("sm_90").source
    assert "num_stages=2" in matmul(256, 192, 128, 64, 64, 32).lowered_for("sm_120").source


@pytest.mark.parametrize("arch", ["sm_90", "sm_80", "gfx942"])
def test_a_device_lowers_as_its_named_card(arch, monkeypatch):
    """On a GPU the runtime reads the card from the device: the source it launches is the one
    lowered_for names (H200: sm_90's, byte for byte)."""
    from tile2triton.runtime import kernel as kernel_mod

    monkeypatch.delenv("TILE2TRITON_TENSOR_DESCRIPTORS", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for module in (kernel_mod, target_mod):
        monkeypatch.setattr(module, "device_target", lambda index=None: parse_target(arch))
    for factory in (matmul(256, 192, 128, 64, 64, 32), add_one(300, 128)):
        kernel = JITKernel(factory.prim_func, out_idx=[-1])  # a fresh kernel: lowerings are cached per kernel
        module = kernel.lowered(False)
        assert module.source == kernel.lowered_for(arch).source
        assert module.launches[0].num_warps == kernel.lowered_for(arch).launches[0].num_warps


def test_interpreter_target_is_the_interpreter_variant():
    kernel = add_one(300, 128)
    assert kernel.lowered_for("cpu").source == kernel.lowered(True).source


# ---------------------------------------------------------------------------- show --target

EXAMPLE = ["show", "examples/elementwise.py::elementwise_op", "--arg", "M=150", "--arg", "N=200",
           "--arg", "block_M=32", "--arg", "block_N=64", "--arg", "threads=128", "--color", "never"]  # fmt: skip


@pytest.mark.parametrize("arch", MATRIX)
def test_show_target(arch, capsys):
    assert cli.main([*EXAMPLE, "--target", arch]) == 0
    out = capsys.readouterr().out
    assert "@triton.jit" in out and "def main_kernel" in out


@pytest.mark.parametrize("arch, binary", [("gfx942", "hsaco"), ("sm_80", "cubin")])
def test_show_target_compile_reports_the_binary(arch, binary, capsys):
    assert cli.main([*EXAMPLE, "--target", arch, "--compile"]) == 0
    out = capsys.readouterr().out
    report = re.search(rf"# compiled for {arch}: main_kernel: ([\d,]+) bytes of {binary}, (\d+) registers", out)
    assert report, out
    assert int(report.group(1).replace(",", "")) > 0 and int(report.group(2)) > 0


def test_show_unknown_target_is_a_usage_error(capsys):
    assert cli.main([*EXAMPLE, "--target", "metal"]) == 2
    assert "--target metal" in capsys.readouterr().err
