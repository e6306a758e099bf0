"""Raw pointers: ``T.ptr`` / ``T.handle`` parameters and ``T.make_tensor`` (TileLang's
``testing/python/language/test_tilelang_language_ptr.py`` and its ptr-table grouped GEMM example).

A ``T.ptr`` parameter takes a tensor or its ``data_ptr()``; ``T.make_tensor(p, shape, dtype)``
views memory through it.  A ``T.Tensor([G], T.ptr)`` table holds int64 addresses, and
``T.make_tensor(table[g], ...)`` views the tensor group ``g`` points at.  Under the interpreter
the addresses of CPU tensors are host addresses Triton's interpreter reads directly.
"""

import inspect
import math
import os
import re
import subprocess
import sys

import pytest
import torch
from t2t_util import ROOT, assert_close, assert_equal, gemm_tol, poison

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import ir
from tile2triton.errors import KernelCallError, TileLangCompileError


def ptr_matmul(M, N, block_M, block_N, block_K, dtype=T.float16, accum_dtype=T.float32):
    """C = A @ B.T over three pointers, with run-time extents m, n, k (TileLang's matmul_test)."""

    @T.prim_func
    def main(a_ptr: T.ptr, b_ptr: T.ptr, c_ptr: T.handle, m: T.int32, n: T.int32, k: T.int32):
        A = T.make_tensor(a_ptr, (m, k), dtype)
        B = T.make_tensor(b_ptr, (n, k), dtype)
        C = T.make_tensor(c_ptr, (m, n), accum_dtype)
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_N, block_K), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(k, block_K), num_stages=2):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[bx * block_N, ko * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def grouped_gemm_ptr(batch_sizes, N, K, block_M, block_N, block_K, dtype=T.float16, accum_dtype=T.float32):
    """Per group g: C_g = A_g @ B_g, each group's tensors reached through a table of pointers."""
    groups = len(batch_sizes)
    max_M = max(batch_sizes)
    total_m_blocks = sum(math.ceil(s / block_M) for s in batch_sizes)

    @T.prim_func
    def main(
        a_ptrs: T.Tensor([groups], T.ptr),
        b_ptrs: T.Tensor([groups], T.ptr),
        c_ptrs: T.Tensor([groups], T.ptr),
        tile_offsets: T.Tensor([groups], T.int32),
    ):
        with T.Kernel(total_m_blocks, T.ceildiv(N, block_N), threads=64) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            group = T.alloc_var(dtype=T.int32)
            first_tile = T.alloc_var(dtype=T.int32)
            group = 0
            first_tile = 0
            for g in range(groups):
                started = bx >= tile_offsets[g]
                group = T.if_then_else(started, g, group)
                first_tile = T.if_then_else(started, tile_offsets[g], first_tile)
            m_start = (bx - first_tile) * block_M
            A = T.make_tensor(a_ptrs[group], (max_M, K), dtype)
            B = T.make_tensor(b_ptrs[group], (K, N), dtype)
            C = T.make_tensor(c_ptrs[group], (max_M, N), dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=1):
                T.copy(A[m_start, ko * block_K], A_shared)
                T.copy(B[ko * block_K, by * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[m_start, by * block_N])

    return main


def strided_gather(G, R, C, dtype=T.float32):
    """out[g] = 2 * (the R x C block at each table entry, rows ``ld`` elements apart), then a second
    kernel adds 1 through a T.ptr to ``out``: make_tensor before the kernels serves both."""

    @T.prim_func
    def main(
        src_ptrs: T.Tensor([G], T.ptr),
        out_ptr: T.ptr,
        ld: T.int32,
        res: T.Tensor([G, R, C], dtype),
    ):
        Out = T.make_tensor(out_ptr, (G, R, C), dtype)
        with T.Kernel(G, threads=32) as g:
            Src = T.make_tensor(src_ptrs[g], (R, C), dtype, strides=(ld, 1))
            for i, j in T.Parallel(R, C):
                Out[g, i, j] = Src[i, j] * 2
        with T.Kernel(G, threads=32) as g:
            for i, j in T.Parallel(R, C):
                res[g, i, j] = Out[g, i, j] + 1

    return main


@tilelang.jit
def eager_ptr_matmul(A: T.ptr, B: T.ptr, C: T.ptr, M: int, N: int, K: int, dtype: T.dtype, out_dtype: T.dtype):
    """The eager style (TileLang's test_jit2_gemm_ptr): pointers, compile-time extents."""
    A = T.make_tensor(A, (M, K), dtype)
    B = T.make_tensor(B, (K, N), dtype)
    C = T.make_tensor(C, (M, N), out_dtype)
    with T.Kernel(T.ceildiv(M, 32), T.ceildiv(N, 32), threads=128) as (bx, by):
        A_shared = T.alloc_shared((32, 32), dtype)
        B_shared = T.alloc_shared((32, 32), dtype)
        C_local = T.alloc_fragment((32, 32), out_dtype)
        T.clear(C_local)
        for k in T.Pipelined(T.ceildiv(K, 32), num_stages=2):
            T.copy(A[bx * 32, k * 32], A_shared)
            T.copy(B[k * 32, by * 32], B_shared)
            T.gemm(A_shared, B_shared, C_local)
        T.copy(C_local, C[bx * 32, by * 32])


# ------------------------------------------------------------------ execution
def test_ptr_params_matmul(dev):
    """Tensors, then addresses, then tensors again: the generic call path and the launcher
    generated once the kernel is warm take both."""
    M, N, K = 50, 40, 70
    kernel = tilelang.compile(ptr_matmul(M, N, 32, 32, 32))
    for as_address in (False, True, False, True):
        a = torch.randn(M, K, dtype=torch.float16, device=dev)
        b = torch.randn(N, K, dtype=torch.float16, device=dev)
        c = poison((M, N), torch.float32, dev)
        if as_address:
            kernel(a.data_ptr(), b.data_ptr(), c.data_ptr(), M, N, K)
        else:
            kernel(a, b, c, M, N, K)
        assert_close(c, a.double() @ b.double().T, *gemm_tol(torch.float16, dev), msg=f"as_address={as_address}")


def test_pointer_table_grouped_gemm(dev):
    sizes, N, K, block_M = [9, 20, 13], 24, 40, 16
    kernel = tilelang.compile(grouped_gemm_ptr(sizes, N, K, block_M, 16, 16))
    max_M = max(sizes)
    a_list = [torch.zeros(max_M, K, dtype=torch.float16, device=dev) for _ in sizes]
    for a, s in zip(a_list, sizes):
        a[:s] = torch.randn(s, K, dtype=torch.float16, device=dev)
    b_list = [torch.randn(K, N, dtype=torch.float16, device=dev) for _ in sizes]
    c_list = [poison((max_M, N), torch.float16, dev) for _ in sizes]
    offsets = [0]
    for s in sizes[:-1]:
        offsets.append(offsets[-1] + math.ceil(s / block_M))

    def table(tensors):
        return torch.tensor([t.data_ptr() for t in tensors], dtype=torch.int64, device=dev)

    kernel(table(a_list), table(b_list), table(c_list), torch.tensor(offsets, dtype=torch.int32, device=dev))
    for g, (a, b, c, s) in enumerate(zip(a_list, b_list, c_list, sizes)):
        assert_close(c[:s], a[:s].double() @ b.double(), *gemm_tol(torch.float16, dev), msg=f"group {g}")


def test_strided_make_tensor_before_two_kernels(dev):
    G, R, C, ld = 3, 7, 13, 21
    kernel = tilelang.compile(strided_gather(G, R, C))
    bases = [torch.randn(R + 2, ld, device=dev) for _ in range(G)]
    blocks = [base[1 : 1 + R, 5 : 5 + C] for base in bases]  # rows ld apart: not contiguous
    src_ptrs = torch.tensor([blk.data_ptr() for blk in blocks], dtype=torch.int64, device=dev)
    out = poison((G, R, C), torch.float32, dev)
    res = poison((G, R, C), torch.float32, dev)
    kernel(src_ptrs, out, ld, res)
    want = torch.stack(blocks) * 2
    assert_equal(out, want)
    assert_equal(res, want + 1)


def test_eager_ptr_params(dev):
    M, N, K = 45, 37, 70
    a = torch.randn(M, K, dtype=torch.float16, device=dev)
    b = torch.randn(K, N, dtype=torch.float16, device=dev)
    c = poison((M, N), torch.float32, dev)
    eager_ptr_matmul(a, b, c, M, N, K, torch.float16, torch.float32)
    assert_close(c, a.double() @ b.double(), *gemm_tol(torch.float16, dev))


def test_par_compile_with_ptr_configs(dev):
    """TileLang's ``jit.par_compile``: T.ptr() stands for the pointer arguments of each config."""
    M, N, K = 45, 37, 70
    configs = [
        {"A": T.ptr(), "B": T.ptr(), "C": T.ptr(), "M": M, "N": N, "K": K, "dtype": dt, "out_dtype": T.float32}
        for dt in (T.float16, T.float32)
    ]
    kernels = eager_ptr_matmul.par_compile(configs)
    assert [[p.name for p in k.params] for k in kernels] == [["A", "B", "C"]] * 2
    for kernel, dt in zip(kernels, (torch.float16, torch.float32)):
        a = torch.randn(M, K, dtype=dt, device=dev)
        b = torch.randn(K, N, dtype=dt, device=dev)
        c = poison((M, N), torch.float32, dev)
        kernel(a, b, c)
        assert_close(c, a.double() @ b.double(), *gemm_tol(dt, dev), msg=str(dt))
    with pytest.warns(UserWarning, match="par_compile: config"):
        assert eager_ptr_matmul.par_compile([{"A": T.ptr(), "M": M}], ignore_error=True) == [None]


def handle_scale(M, N, block):
    @T.prim_func
    def main(a: T.handle, b: T.handle):
        A = T.match_buffer(a, (M, N), T.float32)
        B = T.match_buffer(b, [M, N], dtype=T.float32, align=16)
        with T.Kernel(T.ceildiv(M, block), threads=64) as bx:
            for i, j in T.Parallel(block, N):
                B[bx * block + i, j] = A[bx * block + i, j] * 2 + 1

    return main


def test_match_buffer_on_handle_params(dev):
    """T.match_buffer turns a T.handle parameter into a tensor parameter (TileLang's buffer map):
    its shape and dtype are checked at every call."""
    M, N = 45, 19
    kernel = tilelang.compile(handle_scale(M, N, 16))
    a = torch.randn(M, N, device=dev)
    b = poison((M, N), torch.float32, dev)
    kernel(a, b)
    assert_equal(b, a * 2 + 1)
    with pytest.raises(KernelCallError, match=r"parameter 'a' expects shape \(45, 19\)"):
        kernel(torch.randn(M, N + 1, device=dev), b)
    with pytest.raises(KernelCallError, match="parameter 'b' expects a torch.Tensor"):
        kernel(a, b.data_ptr())


def test_match_buffer_needs_a_handle_before_the_kernel():
    @T.prim_func
    def main(a: T.handle, B: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=32):
            A = T.match_buffer(a, (8,), T.float32)  # inside the kernel
            for i in T.Parallel(8):
                B[i] = A[i]

    with pytest.raises(TileLangCompileError, match="T.match_buffer binds a T.handle parameter") as err:
        tilelang.compile(main).get_kernel_source()
    assert err.value.loc.line == _marker_line("# inside the kernel")


# ------------------------------------------------------------------ declarations and errors
def test_ptr_names():
    assert T.ptr is T.handle
    assert T.ptr(T.float16) is T.ptr  # TileLang's T.ptr(dtype): the same annotation
    assert T.Tensor([4], T.ptr).dtype == "int64"  # a table of pointers holds 64-bit addresses
    func = tilelang.compile(ptr_matmul(50, 40, 32, 32, 32)).prim_func
    assert [type(p) for p in func.params] == [ir.Var] * 6 and func.params[0].dtype.kind == "ptr"


@pytest.mark.parametrize("bad", [1.5, "0x1000", None, -8, True, [1, 2]])
def test_ptr_param_rejects_non_addresses(bad):
    kernel = tilelang.compile(ptr_matmul(50, 40, 32, 32, 32))
    a = torch.randn(50, 70, dtype=torch.float16)
    with pytest.raises(KernelCallError, match=r"parameter 'b_ptr' \(T.ptr\) expects a torch.Tensor or an address"):
        kernel(a, bad, a, 50, 40, 70)


def test_out_idx_must_name_a_tensor():
    @T.prim_func
    def main(src: T.ptr, out: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=32):
            S = T.make_tensor(src, (8,), T.float32)
            for i in T.Parallel(8):
                out[i] = S[i]

    with pytest.raises(TileLangCompileError, match="out_idx 0 names parameter 'src', which is not a T.Tensor"):
        tilelang.compile(main, out_idx=[0])


def test_make_tensor_address_per_parallel_lane_is_an_error():
    @T.prim_func
    def main(src_ptrs: T.Tensor([3], T.ptr), out: T.Tensor([3, 8], T.float32)):
        with T.Kernel(1, threads=32):
            for g, i in T.Parallel(3, 8):
                S = T.make_tensor(src_ptrs[g], (8,), T.float32)  # one address per lane
                out[g, i] = S[i]

    with pytest.raises(TileLangCompileError, match="the address of T.make_tensor must be the same") as err:
        tilelang.compile(main).get_kernel_source()
    assert err.value.loc.line == _marker_line("# one address per lane")


def test_pointer_table_needs_int64():
    kernel = tilelang.compile(strided_gather(3, 7, 13))
    out = torch.empty(3, 7, 13)
    with pytest.raises(KernelCallError, match="parameter 'src_ptrs' expects dtype torch.int64"):
        kernel(torch.zeros(3, dtype=torch.int32), out, 21, out)


def bad_make_tensor(case: str):
    @T.prim_func
    def bad(p: T.ptr, n: T.int32, A: T.Tensor((8,), T.float32), out: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=32):
            if case == "tensor":
                S = T.make_tensor(A, (8,), T.float32)  # case tensor
            elif case == "int32":
                S = T.make_tensor(n, (8,), T.float32)  # case int32
            elif case == "constant":
                S = T.make_tensor(4096, (8,), T.float32)  # case constant
            else:
                S = T.make_tensor(p + 4, (8,), T.float32)  # case arithmetic
            for i in T.Parallel(8):
                out[i] = S[i]

    return bad


@pytest.mark.parametrize(
    "case, message",
    [
        ("tensor", "T.make_tensor takes a T.ptr parameter or an int64 address, got the tensor 'A'"),
        ("int32", "an address is 64 bits wide, got a value of dtype int32"),
        ("constant", "T.make_tensor takes a T.ptr parameter or an int64 address, got 4096"),
        ("arithmetic", "a T.ptr parameter is an address, not a number"),
    ],
)
def test_make_tensor_rejects_non_addresses(case, message):
    with pytest.raises(TileLangCompileError, match=re.escape(message)) as err:
        tilelang.compile(bad_make_tensor(case)).get_kernel_source()
    assert err.value.loc.line == _marker_line(f"# case {case}")


def _marker_line(marker: str) -> int:
    """The line of this file that ends with ``marker`` (where an error should point)."""
    lines = inspect.getsource(sys.modules[__name__]).splitlines()
    return 1 + next(n for n, line in enumerate(lines) if line.endswith(marker))


# ------------------------------------------------------------------ the GPU source compiles for sm_90
def test_gpu_source_compiles_for_hopper(tmp_path):
    """tools/compile_check.py on the GPU lowering (Triton's type checks run there, not under the
    interpreter): an int64 address from a table and a T.ptr parameter become typed pointers."""
    kernels = [
        tilelang.compile(ptr_matmul(50, 40, 32, 32, 32)),
        tilelang.compile(grouped_gemm_ptr([9, 20], 24, 40, 16, 16, 16)),
    ]
    for n, kernel in enumerate(kernels):
        module = kernel.lowered(False)
        sigs = []
        for launch in module.launches:
            parts = []
            for a in launch.args:
                if isinstance(a, ir.Buffer):
                    parts.append(f"{a.name}=*{'i64' if a.dtype.name == 'int64' else 'i32'}")
                else:  # an address is an int64 scalar; a run-time extent an int32
                    parts.append(f"{a.name}={'i64' if a.dtype.kind == 'ptr' else 'i32'}")
            sigs.append(f"# sig {launch.name}: {' '.join(parts)}")
        path = tmp_path / f"gpu_source_{n}.py"
        path.write_text(module.source + "\n" + "\n".join(sigs) + "\n")
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        done = subprocess.run([sys.executable, str(ROOT / "tools" / "compile_check.py"), str(path)], env=env,
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0 and "ok   " in done.stdout, done.stdout + done.stderr


def test_contiguous_table_tensor_is_hinted_aligned():
    """A contiguous T.make_tensor over a table element is hinted 16-byte aligned (Triton then copies 16 bytes
    at a time, as TileLang does); a strided view over one is not (its base need not be aligned), nor one over a
    T.ptr parameter (Triton specialises the integer's divisibility itself)."""
    hinted = tilelang.compile(grouped_gemm_ptr([9, 20], 24, 40, 16, 16, 16)).lowered(False).source
    assert hinted.count("tl.multiple_of(") == 3  # A, B and C
    strided = tilelang.compile(strided_gather(3, 7, 13)).lowered(False).source
    assert "tl.multiple_of(" not in strided  # a strided view over a table element; Out is a T.ptr parameter
