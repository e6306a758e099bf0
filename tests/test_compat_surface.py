"""TileLang's Python API beyond ``T`` (issue 12): ``tilelang.tvm``, dtypes as strings,
``tilelang.testing``, ``utils.tensor``, ``AutoTuner``, ``contrib.nvcc``, ``carver``, ``tools``,
``transform``, ``engine.callback``, ``PassConfigKey``, and the suite runner tools/tilelang_suite.py."""

import importlib.util
import json
import pickle
import subprocess
import sys
import textwrap

import pytest
import torch
from t2t_util import ROOT, assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import tvm
from tile2triton.errors import Tile2TritonError

pytestmark = pytest.mark.poison_empty

M, N = 70, 45  # never multiples of the blocks below


# ----------------------------------------------------------------------------- dtypes are strings
def test_dtypes_are_strings_torch_can_look_up():
    assert getattr(torch, T.float16) is torch.float16
    assert torch.__getattribute__(T.bfloat16) is torch.bfloat16
    assert getattr(torch, T.float) is torch.float32 and getattr(torch, T.int8) is torch.int8
    assert T.float16 == "float16" and isinstance(T.float16, str) and str(T.float16) == "float16"
    assert f"{T.int32}" == "int32" and repr(T.int32) == "T.int32"
    assert {T.float32: 1}["float32"] == 1
    again = pickle.loads(pickle.dumps(T.float16))
    assert again == T.float16 and again.bits == 16 and again.kind == "float"
    with pytest.raises(AttributeError):
        T.float16.bits = 8


def test_tfloat32_is_float32_storage():
    assert getattr(torch, T.tfloat32) is torch.float32
    assert T.tfloat32.as_torch() is torch.float32


@tilelang.jit(out_idx=[-1])
def tf32_gemm(M, N, K, block_M, block_N, block_K):
    @T.prim_func
    def main(A: T.Tensor((M, K), T.tfloat32), B: T.Tensor((K, N), T.tfloat32), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), T.tfloat32)
            B_s = T.alloc_shared((block_K, block_N), T.tfloat32)
            C_f = T.alloc_fragment((block_M, block_N), T.float32)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * block_M, bx * block_N])

    return main


def test_tfloat32_gemm(dev):
    K = 52
    a = torch.randn(M, K, device=dev)
    b = torch.randn(K, N, device=dev)
    c = tf32_gemm(M, N, K, 32, 32, 16)(a, b)
    # TF32 keeps 10 mantissa bits: the GPU result is within ~1e-3 relative of the fp64 product
    assert_close(c, a.double() @ b.double(), atol=2e-2, rtol=1e-2)


def test_fp8_fp4_names_exist_and_fail_only_in_a_kernel():
    for name in ("float4_e2m1fn", "float8_e8m0fnu", "float8_e4m3fnuz", "float6_e2m3fn", "int4"):
        assert getattr(T, name) == name  # usable as a name in host code
    assert T.float8_e4m3 == "float8_e4m3fn"
    assert T.float32x2 == "float32x2" and T.float4_e2m1fnx2 == "float4_e2m1fnx2" and T.bfloat16x8.bits == 16
    assert T.Tensor((4,), T.float16x2).dtype == "float16x2"  # a float16 tensor with a trailing lane axis
    with pytest.raises(TypeError, match="vector dtype"):
        T.Tensor((4,), T.float6_e2m3fnx2)

    @tilelang.jit(out_idx=[-1])
    def uses_fp6(n):
        @T.prim_func
        def main(A: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
            with T.Kernel(1, threads=32):
                tmp = T.alloc_fragment((n,), T.float6_e2m3fn)
                T.copy(A, tmp)
                T.copy(tmp, C)

        return main

    with pytest.raises(Tile2TritonError) as info:
        uses_fp6(16)
    text = str(info.value)
    assert "test_compat_surface.py" in text and "float6_e2m3fn" in text and "not support" in text


def test_fp8_annotation_error_names_the_dtype():
    with pytest.raises(TypeError, match="float8_e4m3fnuz.*does not support"):
        T.Tensor((4,), T.float8_e4m3fnuz)


@tilelang.jit(out_idx=[-1])
def lower_parallel(n, block):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=64) as bx:
            for i in T.parallel(block):
                C[bx * block + i] = A[bx * block + i] * 2.0 + 1.0

    return main


def test_parallel_lower_case_alias(dev):
    a = torch.randn(M * 3, device=dev)
    assert_close(lower_parallel(M * 3, 64)(a), a.double() * 2 + 1, atol=1e-6, rtol=1e-6)


# ----------------------------------------------------------------------------- tilelang.tvm
def test_tvm_subset_host_objects():
    assert tilelang.tvm is tvm and tilelang.DataType is tvm.DataType
    dt = tvm.DataType("float16x4")
    assert (dt.bits, dt.lanes, dt.type_code) == (16, 4, tvm.datatype.DataTypeCode.FLOAT)
    assert tvm.DataType(T.bfloat16).bits == 16 and tvm.DataType("int8").bits == 8 and tvm.DataType("bool").bits == 1
    assert tvm.DataType("custom[float4_e2m1_unpacked]8").bits == 8
    t = tvm.target.Target({"kind": "cuda", "arch": "sm_90"})
    assert t.kind.name == "cuda" and t.arch == "sm_90"
    assert tvm.target.Target("cuda -arch=sm_80").arch == "sm_80"
    with tvm.transform.PassContext(config={"tl.disable_tma_lower": True}), tvm.target.Target("cuda"):
        assert tvm.transform.PassContext.current().config == {"tl.disable_tma_lower": True}
        assert tvm.target.Target.current().kind.name == "cuda"
    assert tvm.target.Target.current() is None
    assert issubclass(tvm.error.InternalError, tvm.TVMError) and issubclass(tvm.TVMError, RuntimeError)
    with pytest.raises(AttributeError, match="IRModule.*light subset"):
        tvm.IRModule  # noqa: B018
    with pytest.raises(AttributeError, match="decl_buffer"):
        tvm.tirx.decl_buffer  # noqa: B018
    assert tvm.tir is tvm.tirx
    with pytest.raises(TypeError, match=r"tirx\.BufferLoad\(\.\.\.\): .*light subset"):
        tvm.tirx.BufferLoad("int32", 3)
    # typed constants, as T.int32(3) / T.float32(0.5) (TileLang's vote tests build a FloatImm predicate)
    imm = tvm.tirx.IntImm("int32", 3)
    assert (str(imm.dtype), imm.value) == ("int32", 3) and isinstance(imm, tvm.tirx.PrimExpr)
    assert str(tvm.tirx.FloatImm("float32", 0.5).dtype) == "float32"


def test_target_object_picks_the_interpreter():
    from tile2triton.runtime.target import target_kind

    assert target_kind(tvm.target.Target("llvm")) == "cpu"
    assert target_kind(tvm.target.Target({"kind": "cuda", "arch": "sm_90"})) == "cuda"


@tilelang.jit(out_idx=[-1])
def tirx_ops(n, block):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=64) as bx:
            for i in T.Parallel(block):
                x = A[bx * block + i]
                bits = tvm.tirx.reinterpret("int32", x)  # TVM order: dtype first
                sign = tvm.tirx.Cast("float32", (bits >> 31) & tvm.tirx.const(1, "int32"))
                C[bx * block + i] = tvm.tirx.Select(x > tvm.tirx.const(0.5, "float32"), sign + 10.0, sign)

    return main


def test_tirx_helpers_in_a_kernel(dev):
    a = torch.randn(M * 2, device=dev)
    sign = (a < 0).double()  # randn never gives -0.0 here
    ref = torch.where(a.double() > 0.5, sign + 10.0, sign)
    assert_close(tirx_ops(M * 2, 64)(a), ref, atol=0, rtol=0)


def test_tvm_alias_never_shadows_a_real_tvm(monkeypatch):
    monkeypatch.delitem(sys.modules, "tvm", raising=False)
    real = importlib.util.find_spec

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "tvm" else real(name, *a))
    assert tvm.install_as_tvm() is False and "tvm" not in sys.modules
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tvm" else real(name, *a))
    for name in ("tvm.tirx", "tvm.tir", "tvm.target", "tvm.transform", "tvm.error"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    assert tvm.install_as_tvm() is True
    assert sys.modules["tvm"] is tvm and sys.modules["tvm.tirx"] is tvm.tirx
    for name in [k for k in sys.modules if k == "tvm" or k.startswith("tvm.")]:
        monkeypatch.delitem(sys.modules, name)


# ----------------------------------------------------------------------------- tilelang.testing
def test_testing_exports_what_tilelang_testing_exports():
    import tile2triton.testing as tt

    for name in ("requires_cuda", "requires_package", "requires_cuda_compute_version", "process_func", "regression",
                 "torch_assert_close", "set_random_seed", "main", "requires_cdna", "requires_gfx950"):  # fmt: skip
        assert hasattr(tt, name), name
    for op in ("ge", "gt", "le", "lt", "eq"):
        mark = getattr(tt, f"requires_cuda_compute_version_{op}")(9, 0)
        assert mark.name == "skipif"
    assert isinstance(tt.requires_cuda.marks(), list)
    tt.set_random_seed(3)
    x = torch.rand(4)
    tt.set_random_seed(3)
    assert torch.equal(x, torch.rand(4))


def test_compute_version_marks_follow_the_device(monkeypatch):
    import tile2triton.testing as tt

    monkeypatch.setattr(tt, "_cuda", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (9, 0))
    assert not tt.requires_cuda_compute_version_ge(9, 0).args[0]  # skipif(False): runs
    assert tt.requires_cuda_compute_version_eq(8, 0).args[0]  # skipif(True)
    assert not tt.requires_cuda_compute_version_gt(8, 9).args[0]
    assert tt.requires_cuda_compute_version_lt(9, 0).args[0]


def test_process_func_and_regression(capsys, monkeypatch):
    import tile2triton.testing as tt

    calls = []

    def bench(size):
        calls.append(size)
        return 0.25 * size

    ns = {"regression_b": lambda: tt.process_func(bench, "regression_b", size=4),
          "regression_a": lambda: tt.process_func(bench, size=2), "other": lambda: calls.append("no")}  # fmt: skip
    monkeypatch.setenv("TL_PERF_REGRESSION_FORMAT", "json")
    exec("import tile2triton.testing as tt\ntt.regression()", ns)  # noqa: S102 - the caller's globals hold the cases
    out = capsys.readouterr().out
    assert calls == [2, 4]
    line = next(x for x in out.splitlines() if x.startswith("__TILELANG_PERF_RESULTS_JSON__="))
    results = json.loads(line.split("=", 1)[1])
    assert [r["latency"] for r in results] == [0.5, 1.0] and results[1]["name"] == "b"


def test_torch_assert_close_ratio():
    from tile2triton.testing import torch_assert_close

    a = torch.randn(1000)
    b = a.clone()
    b[:3] += 1.0
    torch_assert_close(a, b, max_mismatched_ratio=0.01)
    with pytest.raises(AssertionError):
        torch_assert_close(a, b, max_mismatched_ratio=0.001)


# ----------------------------------------------------------------------------- utils.tensor
def test_get_tensor_supply():
    from tile2triton.utils.tensor import TensorSupplyType, get_tensor_supply

    class Param:
        shape = (33, 7)
        dtype = T.float16

    t = get_tensor_supply(TensorSupplyType.Integer)(Param())
    assert t.shape == (33, 7) and t.dtype == torch.float16 and bool((t == t.round()).all())
    one = get_tensor_supply(TensorSupplyType.One)(Param())
    assert bool((one == 1).all())
    assert tilelang.TensorSupplyType is TensorSupplyType


# ----------------------------------------------------------------------------- autotuner
def scale_kernel(n, block=None, threads=None):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=threads) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] * 3.0

    return main


def test_autotuner_from_kernel_run():
    from tile2triton.autotuner import AutoTuner

    n = 333
    configs = [{"block": 64, "threads": 64}, {"block": 128, "threads": 128}]
    result = (
        AutoTuner.from_kernel(kernel=lambda **cfg: scale_kernel(n, **cfg), configs=configs)
        .set_compile_args(out_idx=[-1], target="auto")
        .set_profile_args(ref_prog=lambda a: a * 3.0, skip_check=False)
        .run(warmup=1, rep=2)
    )
    assert result.config in configs and result.latency > 0 and result.ref_latency > 0
    a = torch.randn(n)
    assert_close(result.kernel(a), a.double() * 3, atol=1e-6, rtol=1e-6)


def test_autotuner_check_failure_is_reported():
    from tile2triton.autotuner import AutoTuner

    tuner = AutoTuner.from_kernel(kernel=lambda **cfg: scale_kernel(100, **cfg), configs=[{"block": 32, "threads": 32}])
    tuner.set_compile_args(out_idx=[-1]).set_profile_args(ref_prog=lambda a: a * 2.0)
    with pytest.raises(AssertionError):
        tuner.run(warmup=1, rep=1)


def test_set_autotune_inputs_feeds_the_tuner():
    from tile2triton.autotuner import AutoTuner, get_autotune_inputs, set_autotune_inputs

    n = 190
    given = torch.randn(n)
    seen = []

    def ref(a):
        seen.append(a)
        return a * 3.0

    assert get_autotune_inputs() is None
    with set_autotune_inputs([given]):
        assert get_autotune_inputs() == [given]
        tuner = AutoTuner.from_kernel(
            kernel=lambda **cfg: scale_kernel(n, **cfg), configs=[{"block": 64, "threads": 64}]
        )
        tuner.set_compile_args(out_idx=[-1]).set_profile_args(ref_prog=ref).run(warmup=1, rep=1)
    assert seen and all(a is given for a in seen)
    assert get_autotune_inputs() is None


# ----------------------------------------------------------------------------- other modules
def test_contrib_nvcc():
    from tile2triton.contrib import nvcc

    assert nvcc.parse_compute_version("8.6") == (8, 6)
    assert nvcc.get_target_arch("9.0") == "sm_90a" and nvcc.get_target_arch((8, 0)) == "sm_80"
    assert nvcc.get_target_compute_version(tvm.target.Target("cuda -arch=sm_89")) == "8.9"
    if not torch.cuda.is_available():
        with pytest.raises(ValueError):
            nvcc.get_target_compute_version()


def test_carver_transform_tools_engine(monkeypatch):
    from tile2triton.carver.arch import CDNA, CUDA, driver
    from tile2triton.carver.template import MatmulTemplate
    from tile2triton.engine.callback import register_cuda_postproc_callback
    from tile2triton.tools import Analyzer
    from tile2triton.transform import PassConfigKey, simplify_prim_func

    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="no CUDA device"):
            driver.get_num_sms()
        monkeypatch.setenv("T2T_SUITE_CUDA_AS_CPU", "1")
    assert driver.get_num_sms() > 0 and CUDA("cuda").compute_max_core == driver.get_num_sms()
    with pytest.raises(RuntimeError, match="CDNA"):
        CDNA("hip")
    with pytest.raises(NotImplementedError, match="roller"):
        MatmulTemplate(M=16, N=16, K=16)
    with pytest.raises(NotImplementedError, match="Analyzer"):
        Analyzer.analysis(None, None)
    with pytest.warns(RuntimeWarning, match="never called"):

        @register_cuda_postproc_callback
        def hook(code, target):
            return code

    assert PassConfigKey is tilelang.PassConfigKey
    factory = simplify_prim_func(lambda n: scale_kernel(n, 64, 64))
    kernel = tilelang.compile(factory(150), out_idx=[-1])
    a = torch.randn(150)
    assert_close(kernel(a), a.double() * 3, atol=1e-6, rtol=1e-6)


def test_pass_config_keys_of_tilelang():
    for name in ("TL_SIMPLIFY", "TL_PTXAS_REGISTER_USAGE_LEVEL", "TL_DISABLE_TMA_LOWER", "TIR_DISABLE_VECTORIZE",
                 "TL_ENABLE_LOWER_LDGSTG", "CUDA_KERNELS_OUTPUT_DIR", "TL_DYNAMIC_ALIGNMENT"):  # fmt: skip
        assert isinstance(getattr(tilelang.PassConfigKey, name), str)
    assert tilelang.PassConfigKey["TL_ENABLE_FAST_MATH"] == "tl.enable_fast_math"
    assert len(list(tilelang.PassConfigKey)) >= 56

    @tilelang.jit(out_idx=[-1], pass_configs={tilelang.PassConfigKey.TL_PTXAS_REGISTER_USAGE_LEVEL: 5})
    def k(n, block=32):
        @T.prim_func
        def main(A: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
            with T.Kernel(T.ceildiv(n, block), threads=32) as bx:
                for i in T.Parallel(block):
                    C[bx * block + i] = A[bx * block + i] * 3.0

        return main

    a = torch.randn(77)
    out = k(77)(a)
    assert_close(out, a.double() * 3, atol=1e-6, rtol=1e-6)


def test_alias_resolves_tilelang_submodules():
    code = textwrap.dedent(
        """
        from tile2triton.cli import install_tilelang_alias
        install_tilelang_alias()
        import tilelang, tilelang.testing
        from tilelang import tvm
        from tilelang.autotuner import *
        from tilelang.carver.arch import driver
        from tilelang.contrib import nvcc
        from tilelang.utils.tensor import get_tensor_supply, TensorSupplyType
        from tilelang.language.fp8 import determine_fp8_type
        from tilelang.transform import PassConfigKey
        from tilelang.engine.callback import register_cuda_postproc_callback
        from tilelang.tools import Analyzer
        from tilelang.tileop.base import GemmWarpPolicy  # TileLang's AMD examples import it from here
        import tilelang.language as T
        assert GemmWarpPolicy is T.GemmWarpPolicy
        assert AutoTuner and set_autotune_inputs and autotune
        assert str(determine_fp8_type("e5m2")) == "float8_e5m2"
        print("ok", tvm.DataType("float16").bits)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ok", "16"]


def test_kernel_params_make_inputs_as_in_tilelang():
    """``kernel.params``: TileLang's ``KernelParam`` (dtype, shape), which scripts use to make inputs
    (qwen-in-tilelang's tests: ``torch.randn(p.shape, dtype=...)`` for all params but the output)."""
    from tile2triton.engine.param import KernelParam

    @tilelang.jit(out_idx=[-1])
    def scale(m, n, block=32):
        @T.prim_func
        def main(A: T.Tensor((m, n), "float16"), s: T.float32, C: T.Tensor((m, n), "float32")):
            with T.Kernel(T.ceildiv(m, block), threads=32) as bx:
                for i, j in T.Parallel(block, n):
                    C[bx * block + i, j] = A[bx * block + i, j] * s

        return main

    kernel = scale(M, N)
    params = kernel.params
    assert all(isinstance(p, KernelParam) for p in params)
    assert [(p.dtype, p.shape, p.is_scalar()) for p in params] == [
        ("float16", [M, N], False), ("float32", [], True), ("float32", [M, N], False),
    ]  # fmt: skip
    assert params[0].torch_dtype() is torch.float16 and not params[0].is_float8() and not params[0].is_unsigned()
    a = torch.randn(params[0].shape, dtype=params[0].torch_dtype())
    assert_close(kernel(a, 1.5), a.double() * 1.5, atol=1e-6, rtol=1e-6)


def test_importing_a_submodule_keeps_the_decorator():
    """``from tilelang.jit import JITImpl`` (qwen-in-tilelang's tests) must not rebind ``tilelang.jit``
    to the module: TileLang's package imports its submodule at init, so Python never rebinds it."""
    code = textwrap.dedent(
        """
        from tile2triton.cli import install_tilelang_alias
        install_tilelang_alias()
        import tilelang
        from tilelang.jit import JITImpl, JITKernel
        import tilelang.profiler, tilelang.language
        assert callable(tilelang.jit) and not isinstance(tilelang.jit, type(tilelang)), tilelang.jit
        assert tilelang.jit.__module__.startswith("tile2triton")
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ok"]


# ----------------------------------------------------------------------------- the suite runner
def test_suite_runner_on_a_small_checkout(tmp_path):
    (tmp_path / "examples" / "demo").mkdir(parents=True)
    (tmp_path / "testing" / "python" / "language").mkdir(parents=True)
    (tmp_path / "examples" / "demo" / "example_scale.py").write_text(
        textwrap.dedent(
            """
            import torch
            import tilelang
            import tilelang.language as T

            @tilelang.jit(out_idx=[-1])
            def scale(n, block=64):
                @T.prim_func
                def main(A: T.Tensor((n,), T.float32), C: T.Tensor((n,), T.float32)):
                    with T.Kernel(T.ceildiv(n, block), threads=64) as bx:
                        for i in T.Parallel(block):
                            C[bx * block + i] = A[bx * block + i] * 2.0
                return main

            def main(n=100):
                a = torch.randn(n, device="cuda")
                torch.testing.assert_close(scale(n)(a), a * 2)
            """
        )
    )
    (tmp_path / "examples" / "demo" / "test_example_scale.py").write_text(
        textwrap.dedent(
            """
            import pytest
            import tilelang.testing
            import example_scale

            def test_scale():
                example_scale.main()

            def test_wrong():
                assert getattr(__import__("torch"), tilelang.language.float16) is None

            @tilelang.testing.requires_cuda_compute_version_ge(9, 0)
            def test_hopper_only():
                pass
            """
        )
    )
    (tmp_path / "testing" / "python" / "language" / "test_broken.py").write_text("import tilelang.no_such_module\n")
    out_json = tmp_path / "out.json"
    cmd = [sys.executable, str(ROOT / "tools" / "tilelang_suite.py"), str(tmp_path), "--timeout", "200",
           "--cuda-as-cpu", "--json", str(out_json)]  # fmt: skip
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=400)
    assert run.returncode == 0, run.stderr
    report = json.loads(out_json.read_text())
    files = {f["file"]: f for f in report["files"]}
    demo = files["examples/demo/test_example_scale.py"]
    outcomes = {i["nodeid"].split("::")[-1]: i["outcome"] for i in demo["items"]}
    # the runner asks the machine: on a Hopper GPU the Hopper-only test runs
    hopper = torch.cuda.is_available() and torch.cuda.get_device_capability() >= (9, 0)
    expected = {"test_scale": "passed", "test_wrong": "failed", "test_hopper_only": "passed" if hopper else "skipped"}
    assert outcomes == expected, run.stdout
    assert demo["status"] == "failed"
    broken = files["testing/python/language/test_broken.py"]
    assert broken["status"] == "collection error" and "no_such_module" in broken["collect_errors"][0]["msg"]
    assert ("items: failed 1, passed 2" if hopper else "items: failed 1, passed 1, skipped 1") in run.stdout


# ----------------------------------------------------------------------------- tilelang.cuda.intrinsics
from tile2triton.cuda.intrinsics import make_mma_swizzle_layout  # noqa: E402


@tilelang.jit(out_idx=[-1])
def swizzled_gemm(M, N, K, block_M, block_N, block_K):
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), T.float16)
            B_s = T.alloc_shared((block_K, block_N), T.float16)
            C_f = T.alloc_fragment((block_M, block_N), T.float32)
            T.annotate_layout({A_s: make_mma_swizzle_layout(A_s), B_s: make_mma_swizzle_layout(B_s)})
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * block_M, bx * block_N])

    return main


def test_mma_swizzle_layout_is_a_hint(dev):
    K = 40
    a = torch.randn(M, K, device=dev, dtype=torch.float16)
    b = torch.randn(K, N, device=dev, dtype=torch.float16)
    c = swizzled_gemm(M, N, K, 32, 32, 16)(a, b)
    assert_close(c, a.double() @ b.double(), atol=1e-2, rtol=1e-2)


def test_mma_emitters_and_fragment_layout_helpers():
    from tile2triton.cuda.intrinsics import TensorCoreIntrinEmitter, get_mma_micro_size
    from tile2triton.cuda.intrinsics.layout import mma_layout

    assert get_mma_micro_size("float16") == (16, 16, 16) and get_mma_micro_size(T.int8) == (16, 16, 32)
    # the emitter is provided (tests/test_mma_atoms.py); TileLang's default warp tile (8) is too small
    with pytest.raises(ValueError, match="multiple of 16"):
        TensorCoreIntrinEmitter(a_dtype="float16")
    with pytest.raises(NotImplementedError, match="below Triton"):
        mma_layout.shared_16x16_to_mma_32x8_layout_sr_a(0, 0)


def test_env_settings():
    from tile2triton.runtime.cache import cache_dir

    assert tilelang.env.TILELANG_CACHE_DIR == str(cache_dir())
    from tile2triton.env import env

    assert env.TILELANG_TMP_DIR.startswith(env.TILELANG_CACHE_DIR) or "TILELANG_TMP_DIR" in __import__("os").environ
    assert env.is_cache_enabled() in (True, False)


def test_tilelang_0_1_intrinsics_path_is_the_cuda_one():
    """TileLang 0.1.x code imports the MMA helpers from ``tilelang.intrinsics``; newer TileLang from
    ``tilelang.cuda.intrinsics``: the same objects under both paths."""
    import tile2triton.cuda.intrinsics as new
    import tile2triton.intrinsics as old
    from tile2triton.intrinsics.mma_macro_generator import TensorCoreIntrinEmitter
    from tile2triton.intrinsics.utils import get_mma_micro_size

    assert old.TensorCoreIntrinEmitter is new.TensorCoreIntrinEmitter is TensorCoreIntrinEmitter
    assert get_mma_micro_size is new.get_mma_micro_size


def _backend_copy(n):
    @T.prim_func
    def main(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
        with T.Kernel(T.ceildiv(n, 32), threads=32) as bx:
            for i in T.Parallel(32):
                B[bx * 32 + i] = A[bx * 32 + i] + 1.0

    return main


def test_backend_target(dev):
    """``tilelang.backend.target.determine_target``, which TileLang's warp-specialization tests import:
    the enclosing Target, else the device torch sees; explicit targets checked and handed back."""
    from tile2triton.backend.target import determine_target, list_target_detectors
    from tile2triton.engine.lower import lower

    assert lower is tilelang.lower  # TileLang's issue tests import it from tilelang.engine.lower

    assert determine_target() == ("cuda" if torch.cuda.is_available() else "cpu")
    assert "torch" in list_target_detectors()
    with tvm.target.Target("cuda -arch=sm_90"):
        assert str(determine_target()) == "cuda -arch=sm_90"
    hopper = determine_target({"kind": "cuda", "arch": "sm_90"}, return_object=True)
    assert isinstance(hopper, tvm.target.Target) and hopper.arch == "sm_90"
    assert determine_target("cuda") == "cuda"
    with pytest.raises(AssertionError, match="is not supported"):
        determine_target("")
    a = torch.randn(45, device=dev)
    target = determine_target() if dev == "cpu" else "cuda"
    kernel = tilelang.compile(_backend_copy(45), target=target, out_idx=[-1])
    assert_close(kernel(a), a.double().cpu() + 1, 1e-6, 1e-6)
