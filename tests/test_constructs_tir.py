"""TIR-style TileLang (issue 26): ``T.match_buffer`` on ``T.handle`` parameters, the launch loops
``for bx in T.thread_binding(n, thread="blockIdx.x")`` / ``threadIdx.x`` that open a kernel outside
``T.Kernel``, ``T.launch_thread`` inside one, ``T.unroll(0, 16, step=4)`` / ``unroll_factor=`` and a
region stored into a region (``A[0, 4:8] = A[0, 0:4]``).  The kernels were checked to be valid
TileLang 0.1.15 (compiled for sm_90a)."""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import TileLangCompileError

pytestmark = pytest.mark.poison_empty


def _tir_kernel(rows, cols):
    @T.prim_func
    def main(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (rows, cols), dtype=T.float32)
        B = T.match_buffer(B_ptr, (rows, cols), dtype=T.float32)
        for bx in T.thread_binding(rows, thread="blockIdx.x"):
            for tx in T.thread_binding(64, thread="threadIdx.x"):
                if tx < cols:
                    B[bx, tx] = A[bx, tx] * 2
                for i in T.unroll(0, 16, step=4):
                    if tx == 0:
                        B[bx, i + 1] = A[bx, i + 1] + 100
                for i in T.unroll(0, 4, unroll_factor=2):
                    if tx == 1:
                        B[bx, 20 + i] = 7.0

    return main


def test_tir_launch_loops_and_unroll_steps(dev):
    rows, cols = 3, 40
    kernel = tilelang.compile(_tir_kernel(rows, cols))
    a = torch.randn(rows, cols, device=dev)
    b = torch.full((rows, cols), float("nan"), device=dev)
    kernel(a, b)
    ref = a * 2
    ref[:, 1:17:4] = a[:, 1:17:4] + 100
    ref[:, 20:24] = 7
    assert_close(b, ref, atol=1e-6, rtol=1e-6)


def _launch_thread_kernel(n):
    @T.prim_func
    def main(A: T.Tensor((n,), T.int32), B: T.Tensor((3,), T.int32)):
        with T.Kernel(3, threads=n) as (bx,):
            tx = T.launch_thread("threadIdx.x", n)
            by = T.launch_thread("blockIdx.x", 3)
            if bx == 0:
                A[tx] = tx % 4 + tx * 10
            if tx == 0:
                B[by] = by * 2

    return main


def test_launch_thread_is_the_thread_index(dev):
    n = 96
    a, b = tilelang.compile(_launch_thread_kernel(n), out_idx=[0, 1])()
    t = torch.arange(n)
    assert torch.equal(a.cpu(), (t % 4 + t * 10).to(torch.int32))
    assert b.cpu().tolist() == [0, 2, 4]


def _launch_thread_wrong_extent():
    @T.prim_func
    def main(A: T.Tensor((64,), T.int32)):
        with T.Kernel(1, threads=64):
            tx = T.launch_thread("threadIdx.x", 32)
            A[tx] = 1

    return main


def test_launch_thread_of_part_of_the_threads_is_an_error():
    with pytest.raises(TileLangCompileError, match="must span the kernel's 64 threads"):
        tilelang.compile(_launch_thread_wrong_extent())


@tilelang.jit
def _region_store(A: T.Tensor((16, 16), dtype=T.float32)):
    for _blockIdx in T.thread_binding(1, thread="blockIdx.x"):
        for _threadIdx in T.thread_binding(128, thread="threadIdx.x"):
            b = A[0, 0:4]
            A[0, 4:8] = b


def test_region_stored_into_a_region(dev):
    a = torch.randn(16, 16, device=dev)
    ref = a.clone()
    ref[0, 4:8] = a[0, 0:4]
    _region_store(a)
    assert torch.equal(a, ref)
