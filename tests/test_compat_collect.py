"""Names of TileLang's Python API that TileLang's own test files import (issue 12): layout hints and
``SwizzleMode``, ``T.wgmma_gemm`` / ``T.wait_wgmma``, ``T.annotate_safe_value``, ``T.Var``, ``T.cast``'s
rounding options, ``tilelang.language.{kernel,dtypes,tir,eager}``, ``tilelang.transform.simplify``,
``tvm_ffi`` and the error a bare ``tvm`` gives for what it does not provide."""

import importlib.util
import subprocess
import sys
import textwrap

import pytest
import torch
from t2t_util import ROOT, assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.errors import Tile2TritonError

pytestmark = pytest.mark.poison_empty


# ----------------------------------------------------------------------------- T.wgmma_gemm
@tilelang.jit
def sliced_wgmma(M, N, K, k_tile):
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), D: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((M, K), T.float16)
            B_s = T.alloc_shared((N, K), T.float16)
            C_f = T.alloc_fragment((M, N), T.float32)
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(C_f)
            for j in T.serial(K // k_tile):
                T.wgmma_gemm(A_s[:, j * k_tile : (j + 1) * k_tile], B_s[:, j * k_tile : (j + 1) * k_tile], C_f,
                             transpose_B=True)  # fmt: skip
            T.wait_wgmma(0)
            T.copy(C_f, D)

    return main


def test_wgmma_gemm_is_gemm_on_sub_regions(dev):
    M, N, K = 48, 40, 96
    a = torch.randn(M, K, device=dev, dtype=torch.float16)
    b = torch.randn(N, K, device=dev, dtype=torch.float16)
    d = poison((M, N), device=dev)
    sliced_wgmma(M, N, K, 32)(a, b, d)
    assert_close(d, a.double() @ b.double().T, atol=2e-2, rtol=1e-2)


# ----------------------------------------------------------------------------- T.annotate_safe_value
@tilelang.jit(out_idx=[1])
def padded_copy(M, N, PM, PN, block, src, dst, pad):
    @T.prim_func
    def main(A: T.Tensor((M, N), src), B: T.Tensor((PM, PN), dst)):
        with T.Kernel(T.ceildiv(PN, block), T.ceildiv(PM, block), threads=128) as (bx, by):
            if pad is not None:
                T.annotate_safe_value({A: pad})
            T.copy(A[by * block : (by + 1) * block, bx * block : (bx + 1) * block],
                   B[by * block : (by + 1) * block, bx * block : (bx + 1) * block])  # fmt: skip

    return main


@pytest.mark.parametrize("pad", [None, -7.5, 3])
def test_annotate_safe_value_fills_out_of_bounds_reads(dev, pad):
    M, N, block = 37, 45, 16
    PM, PN = 48, 48
    a = torch.randn(M, N, device=dev)
    b = padded_copy(M, N, PM, PN, block, T.float32, T.float16, pad)(a)
    ref = torch.full((PM, PN), 0.0 if pad is None else float(pad), dtype=torch.float64)
    ref[:M, :N] = a.half().double().cpu()
    assert_close(b, ref, atol=0, rtol=0)


@tilelang.jit(out_idx=[1])
def gathered_with_safe_value(n, m):
    @T.prim_func
    def main(A: T.Tensor((n,), T.int32), B: T.Tensor((m,), T.int32)):
        with T.Kernel(1, threads=64):
            T.annotate_safe_value({A: -1})
            for i in T.Parallel(m):
                B[i] = A[i * 2]

    return main


def test_annotate_safe_value_on_element_loads(dev):
    n, m = 29, 23
    a = torch.randint(0, 100, (n,), device=dev, dtype=torch.int32)
    b = gathered_with_safe_value(n, m)(a)
    ref = torch.tensor([int(a[2 * i]) if 2 * i < n else -1 for i in range(m)], dtype=torch.int32)
    assert torch.equal(b.cpu(), ref)


def test_annotate_safe_value_errors_name_the_line():
    @T.prim_func
    def two_values(A: T.Tensor((20,), T.float32), B: T.Tensor((20,), T.float32)):
        with T.Kernel(1, threads=32):
            T.annotate_safe_value({A: 1.0})
            T.annotate_safe_value({A: 2.0})
            T.copy(A, B)

    with pytest.raises(Tile2TritonError, match=r"test_compat_collect.py:\d+.*already has the safe value 1.0"):
        tilelang.compile(two_values)

    @T.prim_func
    def shared_key(A: T.Tensor((20,), T.float32), B: T.Tensor((20,), T.float32)):
        with T.Kernel(1, threads=32):
            S = T.alloc_shared((20,), T.float32)
            T.annotate_safe_value({S: 0.5})
            T.copy(A, S)
            T.copy(S, B)

    with pytest.raises(Tile2TritonError, match="keys must be global tensors"):
        tilelang.compile(shared_key)


# ----------------------------------------------------------------------------- layout hints
@tilelang.jit(out_idx=[1])
def hinted_copy(m, n):
    from tile2triton.layout import make_fully_replicated_layout_fragment, make_gemm_fragment_8x8_transposed

    @T.prim_func
    def main(A: T.Tensor((m, n), T.float32), B: T.Tensor((m, n), T.float32)):
        with T.Kernel(1, threads=32):
            frag = T.alloc_fragment((m, n), T.float32)
            idx = T.alloc_fragment((2,), T.float32)
            T.annotate_layout({frag: make_gemm_fragment_8x8_transposed().repeat([2, 1], repeat_on_thread=False),
                               idx: make_fully_replicated_layout_fragment(idx, 32)})  # fmt: skip
            for i, j in T.Parallel(m, n):
                frag[i, j] = A[i, j] * 3.0
            T.copy(frag, B)

    return main


def test_layout_helpers_are_hints(dev):
    a = torch.randn(13, 7, device=dev)
    assert_close(hinted_copy(13, 7)(a), a.double() * 3, atol=1e-6, rtol=1e-6)


def test_layout_module_surface():
    from tile2triton.layout import Fragment, Layout, SwizzleMode, make_gemm_fragment_8x8, swizzle

    frag = make_gemm_fragment_8x8().replicate(2)
    assert isinstance(frag, Fragment) and isinstance(swizzle.make_quarter_bank_swizzled_layout("buf"), Layout)
    with pytest.raises(NotImplementedError, match="only as T.annotate_layout hints"):
        frag.map_forward_index([0, 0])
    modes = [SwizzleMode.NONE, SwizzleMode.SWIZZLE_32B, SwizzleMode.SWIZZLE_64B, SwizzleMode.SWIZZLE_128B]
    assert [m.wgmma_layout_type() for m in modes] == [0, 3, 2, 1]
    assert [m.tcgen05_layout_type() for m in modes] == [0, 6, 4, 2]
    assert [m.swizzle_byte_size() for m in modes] == [1, 32, 64, 128]
    assert [m.swizzle_atom_size() for m in modes] == [1, 2, 4, 8]
    assert [m.smem_alignment() for m in modes] == [128, 256, 512, 1024]
    assert [SwizzleMode.from_ordinal(i) for i in range(4)] == modes and SwizzleMode.SWIZZLE_64B.is_swizzle_64b()
    from tile2triton.cuda.intrinsics.macro.wgmma_macro_generator import compute_gmma_descriptor

    with pytest.raises(NotImplementedError, match="WGMMA"):
        compute_gmma_descriptor(frag, None, transposed=False)


# ----------------------------------------------------------------------------- T.cast options
def test_cast_options_validated_like_tilelang():
    from tile2triton.language.tir.ir import _VALID_CAST_ROUNDING_MODES

    assert _VALID_CAST_ROUNDING_MODES == {"", "rn", "rz", "rp", "rm", "rs"}
    with pytest.raises(ValueError, match="Invalid round"):
        T.cast(1.0, "float8_e4m3fn", round="invalid")
    with pytest.raises(ValueError, match="Invalid sat"):
        T.cast(1.0, "float8_e4m3fn", sat="invalid")
    with pytest.raises(ValueError, match="rbits is required"):
        T.cast(1.0, "float8_e4m3fn", round="rs")
    with pytest.raises(ValueError, match="rbits is only valid"):
        T.cast(1.0, "float8_e4m3fn", round="rn", rbits=T.int32(42))
    lit = T.cast(T.float32(1.5), "float16", round="rn")
    assert (lit.dtype, lit.value) == (T.float16, 1.5)
    with pytest.raises(NotImplementedError, match="round='rz'"):
        T.cast(0.1, "float16", round="rz")
    with pytest.raises(NotImplementedError, match="sat=False"):
        T.cast(1000.0, "float8_e4m3fn", sat=False)
    # a number the target holds exactly: every rounding / saturation mode gives the number itself
    for mode in ("rz", "rp", "rm"):
        assert T.cast(T.float32(1.5), "float8_e4m3fn", round=mode).value == 1.5
    assert T.cast(-2.0, "float8_e4m3fn", sat=False).value == -2.0


@tilelang.jit(out_idx=[1])
def rounded_cast(n, rnd, sat):
    @T.prim_func
    def main(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float16)):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(n):
                B[i] = T.cast(A[i], T.float16, round=rnd, sat=sat) + T.cast(1, T.float16, round=rnd)

    return main


def test_cast_round_nearest_in_a_kernel(dev):
    a = torch.randn(41, device=dev)
    assert_close(rounded_cast(41, "rn", True)(a), (a.half() + 1).double(), atol=0, rtol=0)
    assert_close(rounded_cast(41, "", False)(a), (a.half() + 1).double(), atol=0, rtol=0)  # sat only affects fp8


@pytest.mark.parametrize("rnd, match", [("rz", "round='rz'.*not supported"), ("up", "Invalid round 'up'")])
def test_cast_unsupported_rounding_is_a_compile_error(rnd, match):
    with pytest.raises(Tile2TritonError, match=rf"test_compat_collect.py:\d+.*{match}"):
        rounded_cast(41, rnd, True)


# ----------------------------------------------------------------------------- small modules
def test_language_kernel_normalize_threads():
    from tile2triton.language.kernel import _normalize_threads

    assert _normalize_threads(None) == [128, 1, 1] and _normalize_threads(96) == [96, 1, 1]
    assert _normalize_threads([32, 3]) == [32, 3, 1] and _normalize_threads((8, 2, 5)) == [8, 2, 5]
    for bad in (-1, 0, [-1], [128, 0], (128, 1, -2)):
        with pytest.raises(ValueError, match="threads must be positive"):
            _normalize_threads(bad)


def test_resolve_torch_storage_dtype():
    from tile2triton.language.dtypes import resolve_torch_storage_dtype

    assert resolve_torch_storage_dtype(T.float16) == T.float16 and resolve_torch_storage_dtype(torch.bfloat16) == "bfloat16"
    assert resolve_torch_storage_dtype(T.int4) == T.int8 and T.int4.as_torch() is torch.int8
    fp4 = T.float4_e2m1fnx2 if hasattr(torch, "float4_e2m1fn_x2") else T.int8
    assert resolve_torch_storage_dtype(T.float4_e2m1fn) == fp4


def test_var_is_the_class_of_dynamic_sizes():
    assert isinstance(T.dynamic("NN"), T.Var) and not isinstance(64, T.Var)


def test_transform_simplify_and_eager_ast_modules():
    from tile2triton.language.eager.ast import BaseBuilder, mutate
    from tile2triton.transform.simplify import apply_simplify

    assert apply_simplify(hinted_copy) is hinted_copy
    with pytest.raises(NotImplementedError, match="eager AST rewriter"):
        mutate(lambda: None)
    with pytest.raises(NotImplementedError, match="eager AST rewriter"):
        BaseBuilder()


def test_tvm_ffi_alias_never_shadows_a_real_one(monkeypatch):
    from tile2triton import tvm

    monkeypatch.delitem(sys.modules, "tvm_ffi", raising=False)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "tvm_ffi" else real(name, *a))
    assert tvm.install_as_tvm_ffi() is False and "tvm_ffi" not in sys.modules
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tvm_ffi" else real(name, *a))
    assert tvm.install_as_tvm_ffi() is True and sys.modules["tvm_ffi"] is tvm.ffi
    monkeypatch.delitem(sys.modules, "tvm_ffi")
    with pytest.raises(KeyError):
        tvm.ffi.Map({"b": 1})["a"]
    with pytest.raises(AttributeError, match="only tvm_ffi.Map and tvm_ffi.Array"):
        tvm.ffi.register_global_func  # noqa: B018


def test_bare_tvm_names_what_it_lacks():
    """Under the tilelang alias with no real TVM: `from tvm import arith` / `import tvm.script...` say why."""
    code = textwrap.dedent("""
        import importlib.util, sys
        from tile2triton.cli import install_tilelang_alias
        install_tilelang_alias()
        if importlib.util.find_spec("tvm").origin.find("tile2triton") < 0:
            print("REAL TVM"); sys.exit(0)
        for stmt in ("from tvm import arith", "from tvm.script.parser import tir"):  # (IRBuilderFrame exists)
            try:
                exec(stmt)
            except ModuleNotFoundError as exc:
                print(exc)
        from tvm import tirx, DataType
        import tvm_ffi
        print(tirx.__name__, DataType("float16").bits, tvm_ffi.Map.__module__)
        try:
            from tilelang.ir import get_buffer_span  # TileLang's IR spans, not tile2triton.ir
        except ModuleNotFoundError as exc:
            print(exc)
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    if out.stdout.startswith("REAL TVM"):
        pytest.skip("a real tvm is installed")
    lines = out.stdout.splitlines()
    assert lines[0].startswith("No module named 'tvm.arith': tile2triton provides only the light subset")
    assert lines[1].startswith("No module named 'tvm.script.parser': tile2triton provides only the light subset")
    assert lines[2] == "tile2triton.tvm.tirx 16 tile2triton.tvm.ffi"
    assert lines[3].startswith("No module named 'tilelang.ir': tile2triton does not provide tilelang.ir")


# ----------------------------------------------------------------------------- T.dp4a, apply_simplify
@tilelang.jit(out_idx=[-1])
def dp4a_dot(n, k, simplify):
    from tile2triton.transform import apply_simplify

    @T.prim_func
    def main(A: T.Tensor((n, k), T.int8), B: T.Tensor((n, k), T.int8), Unused: T.Tensor((n,), T.float32),
             C: T.Tensor((n,), T.int32)):  # fmt: skip
        with T.Kernel(n, threads=32) as bx:
            a = T.alloc_local((k,), T.int8)
            b = T.alloc_local((k,), T.int8)
            acc = T.alloc_local((1,), T.int32)
            acc[0] = 7
            for v in T.serial(k):
                a[v] = A[bx, v]
                b[v] = B[bx, v]
            for q in T.serial(k // 4):
                T.dp4a(a[q * 4], b[q * 4], acc[0])
            C[bx] = acc[0]

    return apply_simplify(main) if simplify else main


def test_dp4a_and_apply_simplify_drops_unused_tensors(dev):
    n, k = 11, 12
    a = torch.randint(-128, 128, (n, k), dtype=torch.int8, device=dev)
    b = torch.randint(-128, 128, (n, k), dtype=torch.int8, device=dev)
    ref = (a.long() * b.long()).sum(1) + 7
    c = dp4a_dot(n, k, True)(a, b)  # TileLang's Simplify: `Unused` leaves the signature
    assert torch.equal(c.cpu().long(), ref.cpu())
    unused = torch.randn(n, device=dev)
    assert torch.equal(dp4a_dot(n, k, False)(a, b, unused).cpu().long(), ref.cpu())


def test_dp4a_checks_dtypes():
    @T.prim_func
    def wrong(A: T.Tensor((8,), T.int16), C: T.Tensor((1,), T.int32)):
        with T.Kernel(1, threads=32):
            a = T.alloc_local((8,), T.int16)
            acc = T.alloc_local((1,), T.int32)
            T.dp4a(a[0], a[4], acc[0])
            C[0] = acc[0]

    with pytest.raises(Tile2TritonError, match=r"test_compat_collect.py:\d+.*dp4a requires inputs, got A.dtype='int16'"):
        tilelang.compile(wrong)


def test_jitkernel_takes_a_prim_func_as_in_tilelang(dev):
    from tile2triton import JITKernel

    @T.prim_func
    def scale(A: T.Tensor((19,), T.float32), B: T.Tensor((19,), T.float32)):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(19):
                B[i] = A[i] * 2.0

    a = torch.randn(19, device=dev)
    assert_close(JITKernel(scale, [1])(a), a.double() * 2, atol=0, rtol=0)
    out = poison((19,), device=dev)
    JITKernel(scale, target="auto")(a, out)
    assert_close(out, a.double() * 2, atol=0, rtol=0)


# ----------------------------------------------------------------------------- tuple assignment
@tilelang.jit
def tuple_swaps(n):
    @T.prim_func
    def main(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32), S: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(n):
                A[i], B[i] = B[i], A[i] * 2.0
            a = T.alloc_var(T.float32, S[0])
            b = T.alloc_var(T.float32, S[1])
            a, b = b, a + b
            x = S[2]
            y = S[3]
            x, y = y, x - y
            S[0], S[1], S[2], S[3] = a, b, x, y

    return main


def test_tuple_assignment_reads_the_whole_right_side_first(dev):
    """Python semantics: `A[i], B[i] = B[i], A[i]` and `a, b = b, a + b` evaluate the right side
    before assigning (tile2triton used to store the first target before reading the second value)."""
    n = 37
    a = torch.randn(n, device=dev)
    b = torch.randn(n, device=dev)
    s = torch.randn(4, device=dev)
    a0, b0, s0 = a.clone(), b.clone(), s.clone().double()
    tuple_swaps(n)(a, b, s)
    assert_close(a, b0.double(), atol=0, rtol=0)
    assert_close(b, a0.double() * 2, atol=0, rtol=0)
    ref = torch.stack([s0[1], s0[0] + s0[1], s0[3], s0[2] - s0[3]])
    assert_close(s, ref, atol=1e-6, rtol=1e-6)
