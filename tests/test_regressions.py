"""Minimal regression tests for tile2triton bugs found by the differential fuzzer (tests/test_fuzz.py).

Each was marked ``xfail(strict=True)`` while its bug was open; all are fixed now, and pytest
reports XPASS as a failure, so remove the marker (and the matching entry in
``tile2triton.oracle.fuzz.KNOWN_ISSUES``) together with the fix.
"""

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.oracle import reference


# ---------------------------------------------------------------------------- bug 1
@tilelang.jit(out_idx=[-1])
def copy_row_tile():
    @T.prim_func
    def main(A: T.Tensor((1, 53), "float32"), C: T.Tensor((1, 53), "float32")):
        with T.Kernel(2) as b:
            X = T.alloc_fragment((1, 32), "float32")
            T.copy(A[0, b * 32], X)
            T.copy(X, C[0, b * 32])

    return main


@tilelang.jit(out_idx=[-1])
def copy_column_tile():
    @T.prim_func
    def main(A: T.Tensor((30, 3), "float32"), C: T.Tensor((30, 3), "float32")):
        with T.Kernel(3) as b:
            X = T.alloc_shared((32, 1), "float32")
            T.copy(A[0, b], X)
            T.copy(X, C[0, b])

    return main


@pytest.mark.parametrize(
    "factory,shape", [(copy_row_tile, (1, 53)), (copy_column_tile, (30, 3))], ids=["row", "column"]
)
def test_copy_into_tile_with_unit_dim(factory, shape):
    a = torch.randn(*shape)
    c = factory()(a)
    torch.testing.assert_close(c, a)


# ---------------------------------------------------------------------------- bug 2
@tilelang.jit(out_idx=[-1])
def parallel_1x1():
    @T.prim_func
    def main(A: T.Tensor((1, 1), "float32"), C: T.Tensor((1, 1), "float32")):
        with T.Kernel(1):
            X = T.alloc_fragment((1, 1), "float32")
            for i, j in T.Parallel(1, 1):
                X[i, j] = A[i, j] * 2.0
            T.copy(X, C)

    return main


def test_parallel_1x1_writes_1x1_fragment():
    a = torch.randn(1, 1)
    c = parallel_1x1()(a)
    torch.testing.assert_close(c, a * 2)


# ---------------------------------------------------------------------------- bug 3
@tilelang.jit(out_idx=[-1])
def constant_tile():
    @T.prim_func
    def main(A: T.Tensor((4, 8), "float32"), C: T.Tensor((4, 8), "float32")):
        with T.Kernel(1):
            X = T.alloc_fragment((4, 8), "float32")
            for i, j in T.Parallel(4, 8):
                X[i, j] = 0.5
            T.copy(X, C)

    return main


def test_constant_store_to_whole_fragment():
    c = constant_tile()(torch.randn(4, 8))
    torch.testing.assert_close(c, torch.full((4, 8), 0.5))


def test_regression_kernels_run_in_the_reference():
    """The reference executor runs every repro above (so each stays a valid program)."""
    torch.testing.assert_close(reference.run(copy_row_tile(), a := torch.randn(1, 53)), a)
    torch.testing.assert_close(reference.run(copy_column_tile(), a := torch.randn(30, 3)), a)
    torch.testing.assert_close(reference.run(parallel_1x1(), a := torch.randn(1, 1)), a * 2)
    torch.testing.assert_close(reference.run(constant_tile(), torch.randn(4, 8)), torch.full((4, 8), 0.5))


# ---------------------------------------------------------------------------- provable conditions
@tilelang.jit(out_idx=[-1])
def guarded_tail(M, N, bn):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, bn), threads=128) as b:
            R = T.alloc_fragment((bn,), "float32")
            T.clear(R)
            for i in T.serial(M):
                for j in T.Parallel(bn):
                    # a condition the value ranges decide (always true here): no select, same result
                    R[j] += T.if_then_else(b * bn + j < N + bn, A[i, b * bn + j], 0.0)
            for j in T.Parallel(bn):
                if b * bn + j < N + bn:  # always true: the branch is taken without a mask
                    if b * bn + j < N:
                        C[b * bn + j] = R[j]

    return main


@pytest.mark.poison_empty
def test_conditions_decided_by_value_ranges(dev):
    kernel = guarded_tail(7, 60, 8)  # N = 60 is no multiple of 8: the last block's tail is guarded
    a = torch.randn(7, 60, device=dev)
    torch.testing.assert_close(kernel(a).double(), a.double().sum(0), atol=1e-5, rtol=1e-5)
    source = kernel.get_kernel_source(interpret=dev == "cpu")
    code = "\n".join(line for line in source.splitlines() if not line.strip().startswith("#"))
    # both provable conditions folded away: no select but the one of the loop axis's padded lane
    # (the loop is summed as a tile axis of 8 for its 7 iterations)
    assert "< 68" not in code and code.count("tl.where") == code.count("tl.where(i < 7,")
    assert "< 60" in code  # the real guard stays


# ---------------------------------------------------------------------------- review of the split/folding work
@tilelang.jit(out_idx=[-1])
def rebound_let_in_loop():
    @T.prim_func
    def main(A: T.Tensor((4,), "float32"), Out: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            x = bx  # (0, 0) at its first binding, but rebound below: no range to fold with
            acc = T.alloc_fragment((4,), "float32")
            T.clear(acc)
            for kk in T.serial(4):
                for i in T.Parallel(4):
                    acc[i] += T.if_then_else(x < 2, A[i], 0.0)
                x = x + 1
            for i in T.Parallel(4):
                Out[i] = acc[i]

    return main


@tilelang.jit
def rebound_index_stays_guarded():
    @T.prim_func
    def main(Out: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            x = bx
            for kk in T.serial(3):
                for i in T.Parallel(4):
                    Out[x + i] = 1.0 * kk  # x grows: the bound check must stay
                x = x + 2

    return main


@tilelang.jit(out_idx=[-1])
def let_rebound_after_use_in_split_loop(B, NK):
    @T.prim_func
    def main(A: T.Tensor((B,), "int32"), Out: T.Tensor((B,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            acc = T.alloc_fragment((B,), "float32")
            T.clear(acc)
            x = A[0] - 100
            for kk in T.serial(NK):
                for i in T.Parallel(B):
                    acc[i] += T.if_then_else(x >= kk * B + i, 1.0, 0.0)
                    x = bx * B + 2 * B  # rebinding after the use: the use sees the old value first
            for i in T.Parallel(B):
                Out[i] = acc[i]

    return main


@tilelang.jit(out_idx=[-1])
def let_under_lane_if_in_split_loop(G, B, NK):
    @T.prim_func
    def main(A: T.Tensor((G * B, NK * B), "float32"), Out: T.Tensor((G * B, B), "float32")):
        with T.Kernel(G, threads=32) as bx:
            acc = T.alloc_fragment((B, B), "float32")
            T.clear(acc)
            for kk in T.serial(NK):
                for i, j in T.Parallel(B, B):
                    if bx * B + i >= kk * B + j:
                        v = A[bx * B + i, kk * B + j] * 2.0
                        acc[i, j] += v
            T.copy(acc, Out[bx * B, 0])

    return main


@tilelang.jit(out_idx=[-1])
def folded_conditions():
    @T.prim_func
    def main(A: T.Tensor((4,), "float32"), Out: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            acc = T.alloc_fragment((4,), "float32")
            T.clear(acc)
            for kk in T.serial(5):  # a split bound of constants only
                for i in T.Parallel(4):
                    if -3 * kk + i - 4 >= kk - i + 3:
                        acc[i] += kk * 10 + 1.0
                    else:
                        acc[i] += 1000.0
            for i in T.Parallel(4):
                y = T.cast(bx + 300, "uint8")  # 44: a wrapping cast keeps no range
                Out[i] = acc[i] + T.if_then_else(y < 100, A[i], -1.0) + T.if_then_else(~(i < 100), 100.0, 0.0)

    return main


def test_rebound_names_keep_their_checks(dev):
    a = torch.randn(4, device=dev)
    torch.testing.assert_close(rebound_let_in_loop()(a), 2 * a)
    out = torch.full((12,), float("nan"), device=dev)
    rebound_index_stays_guarded()(out[:4])
    assert out[4:].isnan().all()  # nothing written past the tensor
    torch.testing.assert_close(out[:4], torch.tensor([0.0, 0.0, 1.0, 1.0], device=dev))


def test_split_loops_with_rebound_and_conditional_lets(dev):
    B, NK = 4, 3
    a = torch.zeros(B, dtype=torch.int32, device=dev)
    # x = -100 at kk = 0 (i.e. never >= kk*B+i), then 2B = 8 >= kk*B+i for the rest of the entries
    cols = torch.arange(B * NK, device=dev).view(NK, B)
    ref = (cols[1:] <= 2 * B).sum(0).float()
    torch.testing.assert_close(let_rebound_after_use_in_split_loop(B, NK)(a), ref)
    G = 3
    x = torch.randn(G * B, NK * B, device=dev)
    rows = torch.arange(G * B, device=dev)[:, None]
    keep = (rows >= torch.arange(NK * B, device=dev)[None, :]).double()
    ref = (2 * x.double() * keep).view(G * B, NK, B).sum(1)
    torch.testing.assert_close(let_under_lane_if_in_split_loop(G, B, NK)(x).double(), ref, atol=1e-5, rtol=1e-5)


def test_folded_constants_casts_and_negations(dev):
    a = torch.randn(4, device=dev)
    kk = torch.arange(5, device=dev)[:, None].double()
    i = torch.arange(4, device=dev)[None, :].double()
    acc = torch.where(-3 * kk + i - 4 >= kk - i + 3, kk * 10 + 1, 1000.0).sum(0)
    torch.testing.assert_close(folded_conditions()(a).double(), acc + a.double())


# ---------------------------------------------------------------------------- bf16 intermediates
@tilelang.jit(out_idx=[-1])
def bf16_compare_of_math(N):
    @T.prim_func
    def main(A: T.Tensor((N,), "bfloat16"), C: T.Tensor((N,), "bfloat16")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(N):
                a = A[i]
                C[i] = T.if_then_else(T.tanh(a) > a, 0.5, a)  # tanh(a) rounded to bf16 first

    return main


def test_bf16_intermediate_results_are_rounded(dev):
    # found by the random fuzzer: tanh(-0.0727) is -0.07262 in fp32 but -0.0727 in bf16, so the
    # comparison is false on the GPU; the interpreter (bf16 kept in fp32) must round as well
    a = torch.full((5,), -0.07275390625, device=dev).bfloat16()
    a[1:] = torch.tensor([-0.5, 0.25, -3.0, 1.0], device=dev).bfloat16()
    t = torch.tanh(a.float()).bfloat16()
    ref = torch.where(t > a, torch.tensor(0.5, device=dev).bfloat16(), a)
    torch.testing.assert_close(bf16_compare_of_math(5)(a), ref, atol=0, rtol=0)


# ---------------------------------------------------------------------------- fragment read past its extent
@tilelang.jit(out_idx=[1])
def broadcast_through_short_fragment(heads, block_M):
    """TileLang's attention-sink example: a ``[heads]`` fragment filled and read in
    ``T.Parallel(block_M)`` loops longer than it (TileLang keeps per-thread storage there); both
    the one-hot and the tl.gather read answer past the end with the last element."""

    @T.prim_func
    def main(S: T.Tensor((heads,), "float32"), O: T.Tensor((heads, block_M), "float32")):
        with T.Kernel(heads, threads=128) as by:
            sinks = T.alloc_fragment((heads,), "float32")
            acc = T.alloc_fragment((block_M,), "float32")
            for i in T.Parallel(block_M):
                sinks[i] = S[by]
            for i in T.Parallel(block_M):
                acc[i] = sinks[i] * 2.0 + i
            T.copy(acc, O[by, :])

    return main


def test_fragment_read_past_its_extent(dev):
    s = torch.randn(6, device=dev)
    out = torch.full((6, 40), float("nan"), device=dev)
    out.copy_(broadcast_through_short_fragment(6, 40)(s))
    expected = s.double()[:, None] * 2 + torch.arange(40, device=dev, dtype=torch.float64)[None, :]
    torch.testing.assert_close(out.double(), expected)


# ---------------------------------------------------------------------------- float constants into integers
@tilelang.jit
def float_constants_into_integers():
    """TileLang's frontend_v2 test stores ``1.0`` into an int32 tensor: on the GPU Triton's tl.full
    took no float for an integer type (the H200 rejected the generated code); converted when
    compiling instead, toward zero."""
    A = T.empty((6,), T.int32)
    B = T.empty((3,), T.int8)
    with T.Kernel(1) as _:
        for i in range(0, 6, 2):
            A[i] = 1.0
        for i in range(1, 6, 2):
            A[i] = -2.0
        B[0] = -2.7
        B[1] = 2.9
        B[2] = 7.0
    return A, B


def test_float_constants_stored_into_integer_tensors():
    a, b = float_constants_into_integers()
    assert a.tolist() == [1, -2, 1, -2, 1, -2]
    assert b.tolist() == [-2, 2, 7]
