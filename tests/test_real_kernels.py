"""Patterns from real TileLang kernels (tile-ai/tilelang examples, TileLang puzzles) that an
earlier tile2triton refused or miscompiled, reduced to a few lines each."""

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


@tilelang.jit(out_idx=[-1], pass_configs={tilelang.PassConfigKey.TL_DISABLE_TMA_LOWER: True})
def copy_with_pass_configs(N):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(N):
                B[i] = A[i]

    return main


def test_pass_config_keys_are_accepted(dev):
    a = torch.randn(24, device=dev)
    torch.testing.assert_close(copy_with_pass_configs(24)(a), a)


@tilelang.jit(out_idx=[-1])
def macro_with_scope_annotations(N):
    @T.macro
    def inc(S: T.SharedBuffer([N], "float32"), F: T.FragmentBuffer([N], "float32")):
        for i in T.Parallel(N):
            F[i] = S[i] + 1

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            S = T.alloc_shared((N,), "float32")
            F = T.alloc_fragment((N,), "float32")
            T.copy(A, S)
            inc(S, F)
            T.copy(F, B)

    return main


def test_macro_parameters_annotated_with_buffer_scopes(dev):
    a = torch.randn(20, device=dev)
    torch.testing.assert_close(macro_with_scope_annotations(20)(a), a + 1)


@tilelang.jit(out_idx=[-1])
def fragment_layout_with_lambda(N):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            F = T.alloc_fragment((N,), "float32")
            T.annotate_layout({F: T.Fragment(F.shape, forward_thread_fn=lambda i: i)})
            T.copy(A, F)
            T.copy(F, B)

    return main


def test_layout_annotation_with_a_lambda_is_accepted(dev):
    a = torch.randn(100, device=dev)
    torch.testing.assert_close(fragment_layout_with_lambda(100)(a), a)


@tilelang.jit(out_idx=[-1])
def conv1d_naive(L, KL):
    @T.prim_func
    def main(X: T.Tensor((L,), "float32"), K: T.Tensor((KL,), "float32"), O: T.Tensor((L,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            Acc = T.alloc_fragment((L,), "float32")
            T.clear(Acc)
            for j in T.Parallel(L):
                for k in T.serial(KL):
                    if j + k < L:
                        Acc[j] += X[j + k] * K[k]
            T.copy(Acc, O)

    return main


def test_serial_loop_with_a_guard_inside_parallel(dev):
    x, w = torch.randn(37, device=dev), torch.randn(5, device=dev)
    ref = torch.nn.functional.conv1d(torch.nn.functional.pad(x.cpu(), (0, 4))[None, None], w.cpu()[None, None])[0, 0]
    torch.testing.assert_close(conv1d_naive(37, 5)(x, w).cpu(), ref, rtol=1e-5, atol=1e-5)


@tilelang.jit(out_idx=[-1])
def unpack_int4(BK, BN):
    @T.prim_func
    def main(B: T.Tensor((BK, BN // 2), "uint8"), C: T.Tensor((BK, BN), "float16")):
        with T.Kernel(1, threads=128) as bx:
            P = T.alloc_shared((BK, BN // 2), "uint8")
            D = T.alloc_shared((BK, BN), "float16")
            T.copy(B, P)
            for kk, j in T.Parallel(BK, BN // 2):
                D[kk, 2 * j] = T.cast((P[kk, j] & 0x0F) - 8.0, "float16")
                D[kk, 2 * j + 1] = T.cast(((P[kk, j] >> 4) & 0x0F) - 8.0, "float16")
            T.copy(D, C)

    return main


def test_interleaved_writes_scatter_along_one_dim(dev):
    # a 64x128 tile: the one-hot scatter over the whole flattened tile would exceed Triton's tensor size
    b = torch.randint(0, 255, (64, 64), dtype=torch.uint8, device=dev)
    ref = torch.stack([(b & 15).half() - 8, ((b >> 4) & 15).half() - 8], -1).view(64, 128)
    assert torch.equal(unpack_int4(64, 128)(b), ref)
    src = unpack_int4(64, 128).get_kernel_source(interpret=False)
    assert "tl.arange(0, 8192)" not in src  # no flattened 64x128 one-hot


def test_disable_cache_and_utils():
    tilelang.disable_cache()
    try:
        assert not tilelang.is_cache_enabled()
    finally:
        tilelang.enable_cache()
    assert tilelang.is_cache_enabled()
    tilelang.utils.torch_assert_close(torch.ones(3), torch.ones(3))


@tilelang.autotune(configs=[{"block": 32}, {"block": 64}], warmup=1, rep=1)
@tilelang.jit(out_idx=[-1])
def tuned_scale(N, block=None):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] * 2.0

    return main


def test_autotune_picks_a_config_and_runs():
    kernel = tuned_scale(100)
    assert kernel.config in ({"block": 32}, {"block": 64}) and kernel.latency > 0
    a = torch.randn(100)
    torch.testing.assert_close(kernel(a), a * 2)
    assert tuned_scale(100, block=32)(a).shape == (100,)


@tilelang.jit(out_idx=[-1])
def cast_to(N, dtype):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), dtype)):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(N):
                Y[i] = X[i]

    return main


@pytest.mark.parametrize(
    "dtype, torch_dtype, limit",
    [("float8_e4m3fn", torch.float8_e4m3fn, 448.0), ("float8_e5m2", torch.float8_e5m2, 57344.0)],
)
def test_fp8_conversion_rounds_to_nearest(dev, dtype, torch_dtype, limit):
    # normals, values whose rounding carries into the next power of two (124.3 -> 128), subnormals
    x = torch.cat([torch.randn(300) * 100, torch.tensor([124.3, 125.6, 250.0]), torch.randn(100) * 1e-3]).to(dev)
    out = cast_to(x.numel(), dtype)(x).float().cpu()
    assert torch.equal(out, x.cpu().clamp(-limit, limit).to(torch_dtype).float())


@tilelang.jit(out_idx=[-1])
def reshape_fragment():
    @T.prim_func
    def main(A: T.Tensor((8, 16), "float32"), B: T.Tensor((2, 4, 16), "float32")):
        with T.Kernel(1, threads=128) as bx:
            F = T.alloc_fragment((8, 16), "float32")
            T.copy(A, F)
            R = T.reshape(F, (2, 4, 16))
            for i, j, k in T.Parallel(2, 4, 16):
                R[i, j, k] = R[i, j, k] * 2.0  # writes through the view
            for i, j in T.Parallel(8, 16):
                F[i, j] = F[i, j] + 1.0  # and the view sees the buffer's writes
            T.copy(R, B)

    return main


def test_reshape_of_a_fragment_is_a_view(dev):
    a = torch.randn(8, 16, device=dev)
    torch.testing.assert_close(reshape_fragment()(a), (a * 2 + 1).view(2, 4, 16))


@tilelang.jit(out_idx=[-1])
def gemm_cleared_inside_a_loop(M, N, K):
    @T.macro
    def tile_gemm(A, B, C_local, k0):
        T.clear(C_local)
        for ko in T.serial(2):
            A_s = T.alloc_shared((16, 16), "float16")
            B_s = T.alloc_shared((16, 16), "float16")
            T.copy(A[0, k0 + ko * 16], A_s)
            T.copy(B[k0 + ko * 16, 0], B_s)
            T.gemm(A_s, B_s, C_local)

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128) as bx:
            C_local = T.alloc_fragment((16, 16), "float32")
            it = T.alloc_var("int32", 0)
            while it < 1:
                tile_gemm(A, B, C_local, it * 32)
                it = it + 1
            T.copy(C_local, C)

    return main


def test_no_uninitialized_gemm_warning_when_cleared_in_a_loop(dev, recwarn):
    a, b = torch.randn(16, 32, device=dev).half(), torch.randn(32, 16, device=dev).half()
    out = gemm_cleared_inside_a_loop(16, 16, 32)(a, b)
    torch.testing.assert_close(out.cpu().double(), (a.double() @ b.double()).cpu(), rtol=1e-2, atol=1e-2)
    assert not [w for w in recwarn if "never cleared" in str(w.message)]


@tilelang.jit(out_idx=[-1])
def irregular_first_dim(M, N):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((2 * N, M), "float32")):
        with T.Kernel(1, threads=128) as bx:
            F = T.alloc_fragment((N, M), "float32")
            G = T.alloc_fragment((2 * N, M), "float32")
            for i, j in T.Parallel(M, N):
                F[j, i] = A[i, j]
            for i, j in T.Parallel(2 * N, M):
                G[i, j] = 0.0
            for j, i in T.Parallel(N, M):
                G[2 * j + 1, i] = F[j, i]  # scatter along the first dim
            for i, j in T.Parallel(2 * N, M):
                B[i, j] = G[i, j] + F[i // 2, j]  # gather along the first dim

    return main


def test_gather_and_scatter_along_the_first_dim(dev):
    a = torch.randn(8, 16, device=dev)
    expected = a.t().repeat_interleave(2, 0).clone()
    expected[1::2] *= 2
    torch.testing.assert_close(irregular_first_dim(8, 16)(a), expected, rtol=0, atol=0)


@tilelang.jit(out_idx=[-1])
def with_function_attrs(N, attrs):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        T.func_attr(attrs)
        with T.Kernel(T.ceildiv(N, 32), threads=32) as bx:
            for i in T.Parallel(32):
                B[bx * 32 + i] = A[bx * 32 + i] + 1

    return main


def test_function_attribute_hints_are_accepted(dev):
    """MACE's kernels (and TileLang's examples) start with ``T.func_attr({"tir.noalias": True})``,
    ``{"tl.copy_vectorize": 4}``: hints, kept in the function's attrs; an attribute TileLang's passes
    act on is refused at the line."""
    a = torch.randn(50, device=dev)
    kernel = with_function_attrs(50, {"tir.noalias": True, "tl.copy_vectorize": 4})
    torch.testing.assert_close(kernel(a), a + 1)
    assert kernel.prim_func.attrs["tir.noalias"] is True
    with pytest.raises(tilelang.TileLangCompileError, match=r"test_real_kernels.py:\d+.*'clusterIdx.y' is not supported"):
        with_function_attrs(50, {"clusterIdx.y": 2})


@tilelang.jit(out_idx=[-1])
def with_import_source(N, source=None):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, 32), threads=32) as bx:
            T.import_source(source)
            for i in T.Parallel(32):
                B[bx * 32 + i] = A[bx * 32 + i] * 2.0

    return main


def test_import_source_of_none_does_nothing(dev):
    """tilelang-benchmark's dequantize GEMV calls ``T.import_source(None)`` when its CUDA C decode is
    off: nothing, as in TileLang; CUDA C itself is refused at the line."""
    a = torch.randn(45, device=dev)
    torch.testing.assert_close(with_import_source(45)(a), a * 2)
    with pytest.raises(tilelang.TileLangCompileError, match=r"test_real_kernels.py:\d+.*T.import_source is not supported"):
        with_import_source(45, "__device__ int f() { return 1; }")
