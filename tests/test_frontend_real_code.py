"""Binding fixes found by running other repositories' TileLang kernels (session 34): a helper's local
named like its caller's, ``T.ws`` in the thread view, a bare ``return`` ending a kernel,
``T.builtin`` and TVM's ``T.And`` / ``T.Or`` / ``T.Not``; (session 35) a host-side value computed
before ``T.Kernel``."""

import pytest
import torch
from t2t_util import assert_close, assert_equal, poison

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import TileLangCompileError

pytestmark = pytest.mark.poison_empty


def _scaled(x):
    w = x * 2.0  # the caller's local is named `w` too
    return w + 1.0


@T.macro
def _scaled_macro(x):
    w = x * 2.0
    return w + 1.0


def _outer(x):
    w = T.cast(x, T.float32)
    return w * _scaled(w)


def _outer_macro(x):
    w = T.cast(x, T.float32)
    return w * _scaled_macro(w)


@tilelang.jit(out_idx=[-2, -1])
def helpers(N):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32), C: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, 64), threads=64) as bx:
            for i in T.Parallel(64):
                if bx * 64 + i < N:
                    B[bx * 64 + i] = _outer(A[bx * 64 + i])
                    C[bx * 64 + i] = _outer_macro(A[bx * 64 + i])

    return main


def test_helper_locals_do_not_rebind_the_callers(dev):
    """An inlined helper's assignment makes its own local, as in Python: the caller's `w` keeps x
    (it was rebound to the helper's 2x, giving 2x(2x + 1); TileLang's gelu example read gelu(x / sqrt 2))."""
    N = 150
    A = torch.randn(N, device=dev)
    B, C = helpers(N)(A)
    ref = A.double() * (2 * A.double() + 1)
    assert_close(B, ref, atol=1e-5, rtol=1e-5)
    assert_close(C, ref, atol=1e-5, rtol=1e-5)


@T.prim_func
def warp_group_sections(x: T.Tensor((384,), T.int32), y: T.Tensor((384,), T.int32)):
    with T.Kernel(1, threads=384):
        tx = T.get_thread_binding()
        for q in T.Parallel(384):
            y[q] = x[q]
        with T.ws(1):
            y[tx] = x[tx] + 1000 + tx
        with T.ws(0, 2):
            y[tx] = y[tx] - 7


def test_ws_in_the_thread_view_runs_its_warp_groups_threads(dev):
    """``with T.ws(k)``: threads 128 k .. 128 k + 127 run it, with their own thread index."""
    x = torch.randint(-50, 50, (384,), dtype=torch.int32, device=dev)
    y = poison((384,), torch.int32, dev)
    tilelang.compile(warp_group_sections)(x, y)
    tx = torch.arange(384, dtype=torch.int32)
    ref = x.cpu() - 7
    ref[128:256] = x.cpu()[128:256] + 1000 + tx[128:256]
    assert_equal(y, ref)


@T.prim_func
def ends_with_return(x: T.Tensor((200,), T.float32), y: T.Tensor((200,), T.float32)):
    with T.Kernel(T.ceildiv(200, 64), threads=64) as bx:
        for i in T.Parallel(64):
            if bx * 64 + i < 200:
                y[bx * 64 + i] = x[bx * 64 + i] * 3.0
        return


def test_bare_return_ends_the_kernel(dev):
    x = torch.randn(200, device=dev)
    y = poison((200,), torch.float32, dev)
    tilelang.compile(ends_with_return)(x, y)
    assert_close(y, x.double() * 3, atol=1e-6, rtol=1e-6)


def test_return_under_an_if_in_a_kernel_is_refused():
    @T.prim_func
    def main(x: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            if bx == 0:
                return
            for i in T.Parallel(64):
                x[i] = 1.0

    with pytest.raises(TileLangCompileError, match="ends the kernel"):
        tilelang.compile(main)


@tilelang.jit(out_idx=[-1])
def logical(M, N):
    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), B: T.Tensor((8, 64), T.float32)):
        with T.Kernel(1, threads=128) as _:
            S = T.alloc_shared((8, 64), T.float32)
            for i, j in T.Parallel(8, 64):
                S[i, j] = T.if_then_else(T.And(i < M, T.Not(j >= N)), A[i, j], 0.0)
            T.builtin.sync_threads()
            for i, j in T.Parallel(8, 64):
                B[i, j] = T.if_then_else(T.Or(i == 7, j == 63), 2.0, S[7 - i, 63 - j])

    return main


def test_tvm_logical_operators_and_t_builtin(dev):
    M, N = 6, 45
    A = torch.randn(M, N, device=dev)
    B = logical(M, N)(A)
    S = torch.zeros(8, 64, dtype=torch.float64)
    S[:M, :N] = A.cpu().double()
    ref = S.flip(0).flip(1)
    ref[7, :] = 2.0
    ref[:, 63] = 2.0
    assert_close(B, ref, atol=0, rtol=0)


@tilelang.jit
def host_values(BLOCK=48):
    @T.prim_func
    def main(A: T.Tensor((300,), T.float32), B: T.Tensor((300,), T.float32), n: T.int32):
        num_tiles = T.ceildiv(n, BLOCK)  # computed on the host, before T.Kernel, from a scalar parameter
        last = num_tiles - 1
        with T.Kernel(num_tiles, threads=64) as bx:
            for i in T.Parallel(BLOCK):
                if bx * BLOCK + i < n:
                    B[bx * BLOCK + i] = A[bx * BLOCK + i] * 2.0 + T.if_then_else(bx == last, 1.0, 0.0)

    return main


def test_host_values_before_the_kernel(dev):
    """A name assigned before T.Kernel stands for its expression of sizes and scalar parameters, as in
    TileLang (it was refused: "kernel values can only be computed inside T.Kernel")."""
    n = 250  # 6 tiles of 48: the last covers 240..249
    A = torch.randn(300, device=dev)
    B = poison((300,), torch.float32, dev)
    host_values()(A, B, n)
    ref = A.double() * 2
    ref[240:n] += 1
    assert_close(B[:n], ref[:n], atol=1e-6, rtol=1e-6)
    assert B[n:].isnan().all()


def test_buffer_read_before_the_kernel_is_refused():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32)):
        first = A[0]
        with T.Kernel(1, threads=64) as _:
            for i in T.Parallel(64):
                B[i] = A[i] + first

    with pytest.raises(TileLangCompileError, match="only be read inside T.Kernel") as err:
        tilelang.compile(main)
    assert "test_frontend_real_code.py" in str(err.value)
