"""A ``T.alloc_var`` allocated outside a ``T.Parallel`` and written by every iteration (TileLang's
issue 1549): TileLang keeps one copy per thread, so each iteration reads what it wrote itself;
tile2triton gives each iteration its own copy (passes/parallel_vars.py).  The uses that depend on
which iterations share a thread are errors at the user's line."""

import pytest
import torch
from t2t_util import assert_close, assert_equal

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import TileLangCompileError

pytestmark = pytest.mark.poison_empty


@tilelang.jit
def issue_1549(M):
    @T.prim_func
    def main(Data: T.Tensor((M,), T.int32)):
        with T.Kernel(1, threads=64) as _:
            idx = T.alloc_var(T.int32)
            for i in T.Parallel(M):
                idx = i
                Data[i] = idx

    return main


def test_issue_1549(dev):
    M = 301
    data = torch.randint(-100, 100, (M,), dtype=torch.int32, device=dev)
    issue_1549(M)(data)
    assert_equal(data, torch.arange(M, dtype=torch.int32))


@tilelang.jit(out_idx=[-1])
def per_iteration_dot(M, N, K):
    """A per-iteration accumulator declared outside the T.Parallel, carried through a serial loop,
    rewritten under a per-iteration condition, then written again after the loop and read."""

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float32), B: T.Tensor((K, N), T.float32), Out: T.Tensor((M + 1, N), T.float32)):
        with T.Kernel(1, threads=128) as _:
            s = T.alloc_var(T.float32)
            for i, j in T.Parallel(M, N):
                s = 0.0
                for k in T.serial(K):
                    s += A[i, k] * B[k, j]
                if s < 0:
                    s = -2 * s
                Out[i, j] = s
            s = 1.5  # the block's own value again after the loop
            for j in T.Parallel(N):
                Out[M, j] = s * j

    return main


def test_per_iteration_accumulator(dev):
    M, N, K = 13, 19, 7
    a, b = torch.randn(M, K, device=dev), torch.randn(K, N, device=dev)
    dot = a.double().cpu() @ b.double().cpu()
    ref = torch.cat([torch.where(dot < 0, -2 * dot, dot), 1.5 * torch.arange(N, dtype=torch.float64)[None]])
    assert_close(per_iteration_dot(M, N, K)(a, b), ref, 1e-5, 1e-5)


@tilelang.jit(out_idx=[-1])
def shared_flag(N):
    """A value every iteration shares (no lane dependence) keeps the one variable, read after the loop."""

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), Out: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=32) as _:
            scale = T.alloc_var(T.float32)
            scale = 1.0
            for i in T.Parallel(N):
                scale = 3.0
                Out[i] = A[i]
            for i in T.Parallel(N):
                Out[i] = Out[i] * scale

    return main


def test_shared_value_keeps_one_variable(dev):
    a = torch.randn(23, device=dev)
    assert_close(shared_flag(23)(a), 3.0 * a.double().cpu(), 1e-6, 1e-6)


def test_read_before_write_in_an_iteration_is_refused():
    @T.prim_func
    def main(A: T.Tensor((40,), T.float32), B: T.Tensor((40,), T.int32)):
        with T.Kernel(1, threads=32) as _:
            idx = T.alloc_var(T.int32)
            idx = 0
            for i in T.Parallel(40):
                if A[i] > 0:
                    idx = i
                B[i] = idx

    with pytest.raises(TileLangCompileError, match="may read it before writing it") as info:
        tilelang.compile(main)
    assert "test_parallel_vars.py" in str(info.value)


def test_read_after_the_loop_is_refused():
    @T.prim_func
    def main(A: T.Tensor((40,), T.int32), B: T.Tensor((1,), T.int32)):
        with T.Kernel(1, threads=32) as _:
            idx = T.alloc_var(T.int32)
            for i in T.Parallel(40):
                idx = A[i]
                A[i] = idx + 1
            B[0] = idx

    with pytest.raises(TileLangCompileError, match="its own last iteration"):
        tilelang.compile(main)


def test_read_in_the_next_iteration_of_an_outer_loop_is_refused():
    @T.prim_func
    def main(A: T.Tensor((40,), T.int32)):
        with T.Kernel(1, threads=32) as _:
            idx = T.alloc_var(T.int32)
            idx = 0
            for r in T.serial(3):
                A[r] = idx
                for i in T.Parallel(40):
                    idx = A[i] + r
                    A[i] = idx

    with pytest.raises(TileLangCompileError, match="its own last iteration"):
        tilelang.compile(main)


@tilelang.jit(out_idx=[-1])
def array_scratch(M, N):
    """A local array of N elements declared outside the T.Parallel, filled by each iteration before
    it reads it (found in a sparse-metadata compressor): per-iteration scratch, as each thread's."""

    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), B: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=32) as _:
            tmp = T.alloc_local((N,), T.float32)
            for i in T.Parallel(M):
                for j in T.serial(N):
                    tmp[j] = A[i, j] * 2.0
                for j in T.serial(N):
                    B[i, j] = tmp[N - 1 - j] + tmp[j]

    return main


def test_local_array_written_first_is_per_iteration(dev):
    M, N = 45, 3
    A = torch.randn(M, N, device=dev)
    B = array_scratch(M, N)(A)
    ref = A.double() * 2
    assert_close(B, ref.flip(1) + ref, atol=1e-5, rtol=1e-5)


@tilelang.jit(out_idx=[-1])
def array_scratch_nested(M, G):
    """The compressor's shape: an outer serial loop whose body clears the array element by element,
    then writes it at a data-dependent position and reads it."""

    @T.prim_func
    def main(A: T.Tensor((M, 4 * G), T.float32), Pos: T.Tensor((M, 2 * G), T.int32)):
        with T.Kernel(1, threads=64) as _:
            found = T.alloc_local((2,), T.int32)
            count = T.alloc_local((1,), T.int32)
            for r in T.Parallel(M):
                for g in T.serial(G):
                    count[0] = 0
                    for e in T.serial(2):
                        found[e] = -1
                    for k in T.serial(4):
                        if A[r, g * 4 + k] > 0 and count[0] < 2:
                            found[count[0]] = k
                            count[0] += 1
                    for e in T.serial(2):
                        Pos[r, g * 2 + e] = found[e]

    return main


def test_local_array_cleared_in_an_outer_loop_is_per_iteration(dev):
    M, G = 37, 5
    A = torch.randn(M, 4 * G, device=dev)
    Pos = array_scratch_nested(M, G)(A)
    ref = torch.full((M, 2 * G), -1, dtype=torch.int32)
    for r in range(M):
        for g in range(G):
            hits = [k for k in range(4) if A[r, g * 4 + k] > 0][:2]
            ref[r, g * 2 : g * 2 + len(hits)] = torch.tensor(hits, dtype=torch.int32)
    assert_equal(Pos, ref)
