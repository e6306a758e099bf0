"""Barriers among blocks (issue 12): ``T.sync_grid`` splits the kernel into consecutive launches
(passes/grid_split.py), thread-block cluster barriers and ``T.block_rank_in_cluster`` (language/_grid_sync.py),
and the clear errors where a value other than in global memory would cross a grid barrier.  Also
``T.CUDASourceCodeKernel`` stays a compile error at the user's line."""

import inspect

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import TileLangCompileError

THIS_FILE = "test_grid_barriers.py"
N = 300  # not a multiple of the block, not a power of two
BLOCK = 64


def _line_of(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def mirror_kernel(n, block):
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            base = bx * block  # recomputed after the barrier: block indices only
            for i in T.Parallel(block):
                if base + i < n:
                    A[base + i] = X[base + i] * 2.0 + 1.0
            T.sync_grid()
            # every block reads what other blocks wrote before the barrier
            for i in T.Parallel(block):
                if base + i < n:
                    B[base + i] = A[base + i] + A[n - 1 - base - i]

    return main


def test_sync_grid_orders_every_block(dev):
    x = torch.randn(N, device=dev)
    a, b = poison((N,), device=dev), poison((N,), device=dev)
    kernel = tilelang.compile(mirror_kernel(N, BLOCK))
    kernel(x, a, b)
    a_ref = x.double() * 2 + 1
    assert_close(a, a_ref, atol=1e-6, rtol=1e-6)
    assert_close(b, a_ref + a_ref.flip(0), atol=1e-5, rtol=1e-6)
    source = kernel.get_kernel_source()
    assert "def main_kernel(" in source and "def main_after_barrier1_kernel(" in source


def test_sync_grid_inside_a_parallel_splits_it(dev):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, BLOCK), threads=128) as bx:
            for i in T.Parallel(BLOCK):
                if bx * BLOCK + i < N:
                    A[bx * BLOCK + i] = X[bx * BLOCK + i] - 0.5
                T.sync_grid()
                if bx * BLOCK + i < N:
                    B[bx * BLOCK + i] = A[bx * BLOCK + i] * A[N - 1 - bx * BLOCK - i]

    x = torch.randn(N, device=dev)
    a, b = poison((N,), device=dev), poison((N,), device=dev)
    tilelang.compile(main)(x, a, b)
    first = x.double() - 0.5
    assert_close(b, first * first.flip(0), atol=1e-5, rtol=1e-6)


def test_sync_grid_carries_block_buffers_across_it(dev):
    """TileLang's grid-sync test kernel: a fragment read before the barrier is used after it (it
    crosses in a per-block workspace); a 2-D grid and a shared buffer too."""
    gx, gy, block = 3, 2, 50  # N = 300: six blocks of 50

    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), A: T.Tensor((N,), "float32")):
        with T.Kernel(gx, gy, threads=128) as (bx, by):
            base = (by * gx + bx) * block
            A_frag = T.alloc_fragment((block,), "float32")
            S = T.alloc_shared((2, block), "float32")
            for i in T.Parallel(block):
                A[base + i] = X[base + i] + 1.0
            T.sync_grid()
            for i in T.Parallel(block):
                A_frag[i] = A[N - 1 - base - i]
                S[1, i] = A[base + i] * 2.0
                T.sync_grid()
                A[base + i] = A[base + i] + A_frag[i] * S[1, i]

    x = torch.randn(N, device=dev)
    a = poison((N,), device=dev)
    kernel = tilelang.compile(main)
    kernel(x, a)
    first = x.double() + 1
    assert_close(a, first + first.flip(0) * first * 2, atol=1e-5, rtol=1e-6)
    assert "A_frag_across_barrier" in kernel.get_kernel_source()


def test_sync_grid_refuses_a_threads_local_live_across_it():
    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, BLOCK), threads=BLOCK) as bx:
            tx = T.get_thread_binding()
            mine = T.alloc_local((1,), "float32")
            mine[0] = A[N - 1 - bx * BLOCK - tx]
            T.sync_grid()
            A[bx * BLOCK + tx] = mine[0]

    with pytest.raises(TileLangCompileError, match="'mine' \\(local\\) holds a value across T.sync_grid") as info:
        tilelang.compile(main)
    assert f"{THIS_FILE}:{_line_of(main.func, 'T.sync_grid()')}:" in str(info.value)


def test_sync_grid_refuses_a_scalar_read_from_memory_before_it():
    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, BLOCK), threads=128) as bx:
            first = A[bx]
            T.sync_grid()
            A[bx + 1] = first

    with pytest.raises(TileLangCompileError, match="'first' is computed before T.sync_grid"):
        tilelang.compile(main)


def test_sync_grid_in_a_loop_is_an_error():
    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, BLOCK), threads=128) as bx:
            for k in T.serial(3):
                A[bx] = A[bx] + 1.0
                T.sync_grid()

    with pytest.raises(TileLangCompileError, match="inside a loop or a condition") as info:
        tilelang.compile(main)
    assert f"{THIS_FILE}:{_line_of(main.func, 'T.sync_grid()')}:" in str(info.value)


@pytest.mark.parametrize("cluster", [(3, 1, 1), (3, 2, 1)])
def test_block_rank_in_cluster(dev, cluster):
    gx, gy = 12, 4

    @T.prim_func
    def main(A: T.Tensor((gy, gx), "int32")):
        with T.ClusterKernel(gx, gy, threads=32, cluster_dims=cluster) as (bx, by):
            T.cluster_arrive()
            T.cluster_wait()
            rank = T.block_rank_in_cluster()
            if T.get_thread_binding() == 0:
                A[by, bx] = rank
            T.cluster_sync()

    out = poison((gy, gx), torch.int32, dev)
    kernel = tilelang.compile(main)
    kernel(out)
    bx = torch.arange(gx).view(1, gx)
    by = torch.arange(gy).view(gy, 1)
    ref = bx % cluster[0] + cluster[0] * (by % cluster[1])
    assert torch.equal(out.cpu().long(), ref)
    assert "after_barrier" not in kernel.get_kernel_source()  # no global value crosses: block barriers


def test_cluster_sync_that_orders_global_memory_splits(dev):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.ClusterKernel(T.ceildiv(N, 20), threads=32, cluster_dims=(1,)) as bx:
            for i in T.Parallel(20):
                if bx * 20 + i < N:
                    A[bx * 20 + i] = X[bx * 20 + i] + 3.0
            T.cluster_sync()
            for i in T.Parallel(20):
                if bx * 20 + i < N:
                    B[bx * 20 + i] = A[N - 1 - bx * 20 - i]

    x = torch.randn(N, device=dev)
    a, b = poison((N,), device=dev), poison((N,), device=dev)
    tilelang.compile(main)(x, a, b)
    assert_close(b, (x.double() + 3).flip(0), atol=1e-6, rtol=1e-6)


def test_cuda_source_kernel_is_an_error_at_the_users_line():
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        T.CUDASourceCodeKernel(T.ceildiv(N, 128), threads=128, source_code_or_path="...", entry_name="copy")

    with pytest.raises(TileLangCompileError, match="CUDASourceCodeKernel is not supported") as info:
        tilelang.compile(main)
    assert f"{THIS_FILE}:{_line_of(main.func, 'T.CUDASourceCodeKernel(')}:" in str(info.value)
