"""cp.async groups (issue 26): ``T.async_copy`` (a global -> shared copy committed and not waited for),
``T.ptx_cp_async`` with ``T.ptx_commit_group`` / ``T.ptx_wait_group``.  Here every copy is complete
when issued (Triton pipelines its loads on its own), so each read after a copy sees its data: the
kernels read the shared tile right after the copy, in a pipelined loop, and at a partial last tile.
The kernels were checked to be valid TileLang 0.1.15 (compiled for sm_90a)."""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import TileLangCompileError

pytestmark = pytest.mark.poison_empty


def _async_rows(m, k, block_m, block_k):
    @T.prim_func
    def main(A: T.Tensor((m, k), T.float16), B: T.Tensor((m,), T.float32)):
        with T.Kernel(T.ceildiv(m, block_m), threads=128) as bx:
            S = T.alloc_shared((block_m, block_k), T.float16)
            acc = T.alloc_fragment((block_m,), T.float32)
            part = T.alloc_fragment((block_m,), T.float32)
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(k, block_k), num_stages=2):
                T.async_copy(A[bx * block_m, ko * block_k], S)
                T.ptx_wait_group(0)
                T.sync_threads()
                T.reduce_sum(S, part, dim=1)
                for i in T.Parallel(block_m):
                    acc[i] += part[i]
            T.copy(acc, B[bx * block_m])

    return main


def test_async_copy_rows(dev):
    m, k = 70, 90
    kernel = tilelang.compile(_async_rows(m, k, 32, 32), out_idx=[1])
    a = torch.randn(m, k, device=dev).half()
    assert_close(kernel(a), a.float().sum(1), atol=2e-2, rtol=1e-3)


def _cp_async_elements(n):
    @T.prim_func
    def main(A: T.Tensor((n,), T.float16), B: T.Tensor((n,), T.float16)):
        with T.Kernel(1, threads=32):
            S = T.alloc_shared((n,), T.float16)
            for i in T.serial(n // 4):  # 4 halves: an 8-byte cp.async
                T.ptx_cp_async(T.access_ptr(S[i * 4], "w", 4), T.access_ptr(A[i * 4], "r", 4), 4)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            for i in T.Parallel(n):
                B[i] = S[n - 1 - i] * 2

    return main


def test_cp_async_groups(dev):
    n = 40
    kernel = tilelang.compile(_cp_async_elements(n), out_idx=[1])
    a = torch.randn(n, device=dev).half()
    assert_close(kernel(a), a.flip(0) * 2, atol=0, rtol=0)


def _async_shared_to_shared():
    @T.prim_func
    def main(A: T.Tensor((4,), T.float16), B: T.Tensor((4,), T.float16)):
        with T.Kernel(1, threads=1):
            S0 = T.alloc_shared((4,), T.float16)
            S1 = T.alloc_shared((4,), T.float16)
            T.copy(A[0:4], S0)
            T.async_copy(S0, S1)
            T.copy(S1, B[0:4])

    return main


def test_async_copy_of_shared_is_an_error():
    with pytest.raises(TileLangCompileError, match="only supports global->shared"):
        tilelang.compile(_async_shared_to_shared())


@tilelang.jit(out_idx=[1])
def _cp_async_tvm_access_ptr(rows, cols, vec):
    """TileOPs' layer norm: cp.async by ``T.tvm_access_ptr`` into a 2-D shared buffer, at flat offsets."""

    @T.prim_func
    def main(A: T.Tensor((rows, cols), T.float16), B: T.Tensor((rows, cols), T.float16)):
        with T.Kernel(1, threads=32):
            S = T.alloc_shared((rows, cols), T.float16)
            for i in T.serial(rows * cols // vec):
                T.ptx_cp_async(
                    T.tvm_access_ptr(T.type_annotation(T.float16), S.data, i * vec, vec, 2),
                    T.tvm_access_ptr(T.type_annotation("float16"), A.data, i * vec, vec, 1),
                    vec,  # elements (TileLang derives the byte width: 8 here)
                )
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            for r, c in T.Parallel(rows, cols):
                B[r, c] = S[r, c] * 2

    return main


def test_cp_async_tvm_access_ptr(dev):
    A = torch.randn(5, 24, device=dev).half()
    assert_close(_cp_async_tvm_access_ptr(5, 24, 4)(A), A.double() * 2, atol=0, rtol=0)
