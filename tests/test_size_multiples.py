"""Sizes taken as multiples (codegen/emit._size_multiples, ``TILE2TRITON_SIZE_MULTIPLES``).

A dynamic size in a global tensor's strides (``K`` of an ``(M, K)`` tensor) gets a trailing
``tl.constexpr`` parameter, the largest of 1, 2, 4, 8 dividing it, computed at launch from the
value (runtime/launch_args.size_multiple, part of every launch key), and the kernel rounds the size
down to a multiple of it (the identity), so Triton's alignment analysis sees rows 16 bytes apart
where they are (K = 1000 halves) though Triton itself specialises only a multiple of 16.
"""

import re

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.runtime.launch_args import size_multiple


def dynamic_gemm(block_M=32, block_N=32, block_K=16, trans_B=False):
    """TileLang's examples/dynamic_shape/example_dynamic.py at small blocks (B optionally (N, K))."""
    M, N, K = T.dynamic("m"), T.dynamic("n"), T.dynamic("k")
    b_shape = (N, K) if trans_B else (K, N)
    b_shared = (block_N, block_K) if trans_B else (block_K, block_N)

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor(b_shape, "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "float16")
            B_shared = T.alloc_shared(b_shared, "float16")
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_shared)
                if trans_B:
                    T.copy(B[bx * block_N, k * block_K], B_shared)
                else:
                    T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local, False, trans_B)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def test_size_multiple():
    for v in range(-70, 300):
        m = size_multiple(v)
        assert m in (1, 2, 4, 8) and v % m == 0, v
        assert m == 8 or v % (2 * m), v  # the largest such power of two
        assert size_multiple(v + 8) == m  # a function of the last 3 bits, which launch keys hold


def test_source(monkeypatch):
    monkeypatch.setenv("TILE2TRITON_SIZE_MULTIPLES", "1")
    source = tilelang.compile(dynamic_gemm(), out_idx=[2]).lowered_for("sm_90").source
    # K and N are row strides, M is not
    assert "k_multiple: tl.constexpr, n_multiple: tl.constexpr):" in source
    assert "k = k // k_multiple * k_multiple" in source
    assert "m_multiple" not in source
    monkeypatch.setenv("TILE2TRITON_SIZE_MULTIPLES", "0")
    source = tilelang.compile(dynamic_gemm(), out_idx=[2]).lowered_for("sm_90").source
    assert "k_multiple" not in source and "n_multiple" not in source


# sizes whose multiples are 1, 2, 4 and 8 in turn, none a multiple of the blocks
SIZES = [(70, 52, 44), (67, 41, 40), (90, 38, 30), (45, 73, 57), (33, 44, 36)]


@pytest.mark.parametrize("switch", ["0", "1"])
@pytest.mark.parametrize("trans_B", [False, True])
@pytest.mark.parametrize("scratch", ["0", "1"])
def test_results(dev, monkeypatch, switch, trans_B, scratch):
    """One kernel called at sizes of every multiple, twice each (the generated launcher after the
    generic path); with shared buffers in global scratch too (its hidden argument comes before the
    multiples)."""
    monkeypatch.setenv("TILE2TRITON_SIZE_MULTIPLES", switch)
    monkeypatch.setenv("TILE2TRITON_SHARED_SCRATCH", scratch)
    kernel = tilelang.compile(dynamic_gemm(trans_B=trans_B), out_idx=[2])
    for M, N, K in SIZES:
        a = torch.randn(M, K, dtype=torch.float16, device=dev)
        b = torch.randn(*((N, K) if trans_B else (K, N)), dtype=torch.float16, device=dev)
        ref = a.double() @ (b.double().T if trans_B else b.double())
        for _ in range(2):
            assert_close(kernel(a, b), ref, atol=2e-2, rtol=2e-2, msg=str((M, N, K)))


def test_offline_sm90(monkeypatch):
    """The specialization reaches Triton: rows 16 bytes apart load by 16-byte cp.async, pipelined
    (3 stages of A and B tiles in shared memory); an odd K keeps the element-wise loads."""
    from tile2triton.runtime.target import compile_offline

    monkeypatch.setenv("TILE2TRITON_SIZE_MULTIPLES", "1")
    module = tilelang.compile(dynamic_gemm(128, 128, 32), out_idx=[2]).lowered_for("sm_90")
    kwargs = {"registers_too": False, "ptx": True}
    aligned = compile_offline(module, "sm_90", sizes={"m": 3000, "n": 2600, "k": 1000}, **kwargs)[0]["ptx"]
    odd = compile_offline(module, "sm_90", sizes={"m": 3000, "n": 2600, "k": 1001}, **kwargs)[0]["ptx"]
    assert re.search(r"cp\.async\.cg\.shared\.global \[[^]]*\], \[[^]]*\], 0x10", aligned)
    assert "ld.global.b16" not in aligned and "st.global.v4" in aligned
    assert "ld.global.b16" in odd  # A's rows: no alignment, one half at a time


def row_add(block=16):
    M, K = T.dynamic("M"), T.dynamic("K")

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((M, K), T.float16)):
        with T.Kernel(T.ceildiv(K, block), T.ceildiv(M, block), threads=32) as (bx, by):
            for i, j in T.Parallel(block, block):
                B[by * block + i, bx * block + j] = A[by * block + i, bx * block + j] + 1.0

    return main


def test_direct_launches_pass_the_multiples(monkeypatch):
    """On the GPU path (CUDA faked: Triton compiles for sm_90, nothing runs), the generic path and
    the generated launcher pass each K's multiple as the last argument, and a K of another multiple
    launches another compiled kernel: the one ``JITFunction.run`` picks for it."""
    from test_launcher_direct import CALLS, _Recording, launch_cost

    from tile2triton.runtime.kernel import JITKernel

    monkeypatch.setenv("TILE2TRITON_SIZE_MULTIPLES", "1")
    CALLS.clear()
    ks = [40, 44, 42, 41, 40, 44, 56, 42]  # multiples 8, 4, 2, 1, ...
    with launch_cost.fake_cuda() as drv:
        drv.launcher_cls = _Recording
        kernel = JITKernel(row_add(), out_idx=[1])
        for k in ks:
            kernel(torch.randn(5, k).half())
        assert "v1 & 15 | " in kernel._entry.source  # K's key part: its last bits too
        direct = [(function, args[-1]) for _, function, args in CALLS]
        lowered = kernel._compile(False)
        fn, _, _, _, num_warps = lowered.launches[0]
        CALLS.clear()
        for k in ks:
            a = torch.randn(5, k).half()
            fn.run(a, torch.empty(5, k).half(), 5, k, grid=(-(-k // 16), 1, 1), warmup=False, num_warps=num_warps)
        by_run = [(function, args[-1]) for _, function, args in CALLS]
    assert [m for _, m in direct] == [size_multiple(k) for k in ks]
    assert direct == by_run
    assert len({f for f, _ in direct}) == 4  # one compiled kernel per multiple


def test_target_matrix_compiles_a_kernel_with_multiples(monkeypatch):
    """tools/target_matrix.py compiles each collected kernel offline from its signature alone: the
    multiples' constexpr parameters get 1 (no known divisibility), as compile_offline gives a size
    it is not told; without a value they reached the kernel as None."""
    import importlib.util
    from pathlib import Path

    monkeypatch.setenv("TILE2TRITON_SIZE_MULTIPLES", "1")
    path = Path(__file__).resolve().parents[1] / "tools" / "target_matrix.py"
    spec = importlib.util.spec_from_file_location("target_matrix", path)
    matrix = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(matrix)
    module = tilelang.compile(row_add(), out_idx=[1]).lowered_for("sm_90")
    kernels = matrix._launches(module)
    assert kernels[0][1][-1] == "constexpr"  # K's multiple, last
    assert matrix._compile_job(("sm_90", module.source, kernels)) == ("sm_90", None)
