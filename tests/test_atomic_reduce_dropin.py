"""Atomics and reductions as TileLang's own tests use them (issue 12): 16-bit atomic max/min,
bf16 atomic add, the vector atomics' previous values.

Each kernel is checked against a torch reference in float64, with random inputs and NaN-filled
outputs where the kernel writes a fresh tensor.
"""

import pytest
import torch
from t2t_util import assert_close, assert_equal, poison

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


@tilelang.jit
def half_atomic_minmax(M, N, rows, dtype, block_M=16, block_N=16):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), Mx: T.Tensor((rows, N), dtype), Mn: T.Tensor((rows, N), dtype),
             Prev: T.Tensor((M, N), dtype)):  # fmt: skip
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), threads=32) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                r, c = bx * block_M + i, by * block_N + j
                if r < M and c < N:
                    # several rows collide in one slot of Mx / Mn
                    Prev[r, c] = T.atomic_max(Mx[r % rows, c], A[r, c], return_prev=True)
                    T.atomic_min(Mn[r % rows, c], A[r, c], memory_order="relaxed")

    return main


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_atomic_max_min(dev, dtype):
    M, N, rows = 37, 21, 5
    tdt = getattr(torch, dtype)
    a = torch.randn(M, N, device=dev).to(tdt)
    mx0, mn0 = torch.randn(rows, N, device=dev).to(tdt), torch.randn(rows, N, device=dev).to(tdt)
    mx, mn, prev = mx0.clone(), mn0.clone(), poison((M, N), tdt, dev)
    half_atomic_minmax(M, N, rows, dtype)(a, mx, mn, prev)
    groups = a.double().reshape(-1)  # rows r, r + rows, ... collide
    ref_mx, ref_mn = mx0.double().clone(), mn0.double().clone()
    for r in range(M):
        ref_mx[r % rows] = torch.maximum(ref_mx[r % rows], groups.view(M, N)[r])
        ref_mn[r % rows] = torch.minimum(ref_mn[r % rows], groups.view(M, N)[r])
    assert_equal(mx, ref_mx)
    assert_equal(mn, ref_mn)
    # each previous value is what the slot held at some point: at most the final max, at least its start
    p = prev.double()
    assert not torch.isnan(p).any()
    start = mx0.double()[torch.arange(M) % rows]
    assert (p >= start).all() and (p <= ref_mx[torch.arange(M) % rows]).all()


@tilelang.jit
def half_scalar_minmax(dtype, value):
    @T.prim_func
    def main(Hi: T.Tensor((1,), dtype), Lo: T.Tensor((1,), dtype), Old: T.Tensor((2,), dtype)):
        with T.Kernel(1, threads=1):
            T.atomic_max(Hi[0], value)  # a Python float (fp32) into a 16-bit element
            Old[1] = T.atomic_min(Lo[0], value, return_prev=True)
            Old[0] = Hi[0]

    return main


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_atomic_max_min_of_a_literal(dev, dtype):
    tdt = getattr(torch, dtype)
    hi, lo = torch.full((1,), -1e4, dtype=tdt, device=dev), torch.full((1,), 1e4, dtype=tdt, device=dev)
    old = poison((2,), tdt, dev)
    half_scalar_minmax(dtype, 42.5)(hi, lo, old)
    assert_equal(hi, torch.tensor([42.5]))
    assert_equal(lo, torch.tensor([42.5]))
    assert_equal(old, torch.tensor([42.5, float(torch.tensor(1e4).to(tdt))]))


@tilelang.jit
def half_tile_atomic_max(M, N, block_M, block_N, dtype):
    @T.prim_func
    def main(A: T.Tensor((3, M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), 3, threads=32) as (bx, by, bz):
            S = T.alloc_shared((block_M, block_N), dtype)
            T.copy(A[bz, bx * block_M, by * block_N], S)
            T.atomic_max(B[bx * block_M, by * block_N], S)

    return main


def test_16_bit_tile_atomic_max(dev):
    a = torch.randn(3, 45, 30, device=dev).half()
    b0 = torch.randn(45, 30, device=dev).half()
    b = b0.clone()
    half_tile_atomic_max(45, 30, 16, 16, "float16")(a, b)
    assert_equal(b, torch.maximum(b0.double(), a.double().amax(0)))


@tilelang.jit
def bf16_contended_add(N, threads):
    @T.prim_func
    def main(A: T.Tensor((N,), "bfloat16"), Out: T.Tensor((1,), "bfloat16")):
        with T.Kernel(1, threads=threads):
            for i in T.Parallel(N):
                T.atomic_add(Out[0], A[i])

    return main


def test_bf16_atomic_add_into_one_element(dev):
    # small integers: every partial sum is exact in bf16, whatever the order
    a = torch.randint(-3, 4, (90,), device=dev).to(torch.bfloat16)
    out = torch.full((1,), 5.0, dtype=torch.bfloat16, device=dev)
    bf16_contended_add(90, 64)(a, out)
    assert_equal(out, a.double().sum(0, keepdim=True) + 5)


@tilelang.jit
def vector_add_prev(N, lanes, dtype):
    add = T.atomic_addx2 if lanes == 2 else T.atomic_addx4

    @T.prim_func
    def main(Dst: T.Tensor((N,), dtype), Val: T.Tensor((N,), dtype), Prev: T.Tensor((N,), dtype)):
        with T.Kernel(1, threads=32):
            for i in T.serial(N // lanes):
                Prev[i * lanes : i * lanes + lanes] = add(
                    Dst[i * lanes : i * lanes + lanes], Val[i * lanes], return_prev=True
                )
            for i in T.serial(N // lanes):  # a second round: the previous values are the first round's sums
                d = Dst[i * lanes : i * lanes + lanes]
                old = add(d, Val[i * lanes : i * lanes + lanes], return_prev=True)
                Val[i * lanes : i * lanes + lanes] = old

    return main


@pytest.mark.parametrize("lanes,dtype", [(2, "float32"), (4, "float32"), (2, "float16"), (4, "bfloat16")])
def test_vector_atomic_add_return_prev(dev, lanes, dtype):
    N = 12 * lanes
    tdt = getattr(torch, dtype)
    dst0 = torch.randint(-8, 8, (N,), device=dev).to(tdt)
    val0 = torch.randint(-8, 8, (N,), device=dev).to(tdt)
    dst, val, prev = dst0.clone(), val0.clone(), poison((N,), tdt, dev)
    vector_add_prev(N, lanes, dtype)(dst, val, prev)
    assert_equal(prev, dst0)
    assert_equal(val, dst0.double() + val0.double())
    assert_equal(dst, dst0.double() + val0.double() * 2)


def test_vector_return_prev_into_a_region_of_another_length_is_a_clear_error():
    @T.prim_func
    def main(Dst: T.Tensor((4,), "float32"), Val: T.Tensor((4,), "float32"), Prev: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1):
            Prev[0:4] = T.atomic_addx2(Dst[0:2], Val[0:2], return_prev=True)

    with pytest.raises(tilelang.TileLangCompileError) as info:
        tilelang.compile(main)
    assert "a vector of 2 elements" in str(info.value) and "Prev[0:4] = T.atomic_addx2" in str(info.value)


@tilelang.jit(out_idx=[-1])
def nan_row_reduce(M, N, op, dtype, clear):
    reduce_fn = {"max": T.reduce_max, "min": T.reduce_min, "absmax": T.reduce_absmax}[op]

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M,), dtype)):
        with T.Kernel(1, threads=64):
            src = T.alloc_fragment((M, N), dtype)
            dst = T.alloc_fragment((M,), dtype)
            T.copy(A, src)
            T.fill(dst, -0.5)
            reduce_fn(src, dst, dim=1, clear=clear, nan_propagate=True)
            T.copy(dst, B)

    return main


@pytest.mark.parametrize("op,clear", [("max", True), ("min", False), ("absmax", False)])
def test_bf16_nan_propagating_reduce(dev, op, clear, tmp_path):
    M, N = 11, 45
    a = torch.randn(M, N, device=dev).to(torch.bfloat16)
    a[3, 17] = float("nan")
    kernel = nan_row_reduce(M, N, op, "bfloat16", clear)
    b = kernel(a)
    x = a.double().abs() if op == "absmax" else a.double()
    if not clear:
        x = torch.cat([x, torch.full((M, 1), -0.5, dtype=torch.float64, device=dev)], dim=1)
    ref = x.amin(dim=1) if op == "min" else x.amax(dim=1)  # torch's amax/amin propagate NaN
    assert torch.equal(b.double().isnan(), ref.isnan())
    assert_equal(b.double()[~ref.isnan()], ref[~ref.isnan()])
    if dev == "cpu":  # the GPU source: Triton 3.6 computed the bf16 combine in float32 and refused it
        from test_fuzz_regressions import compile_for_hopper

        compile_for_hopper(kernel, tmp_path)


@tilelang.jit(out_idx=[-1])
def grouped_row_sums(rows, groups, group_k, threads=128):
    hidden = groups * group_k

    @T.prim_func
    def main(A: T.Tensor((rows, hidden), "float32"), B: T.Tensor((rows, hidden), "float32"),
             C: T.Tensor((rows, groups), "float32")):  # fmt: skip
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((rows, hidden), "float32")
            dst = T.alloc_fragment((rows, groups), "float32")
            T.copy(A, src)
            view = T.reshape(src, (rows, groups, group_k))  # extents that are not powers of two
            T.reduce_sum(view, dst, dim=2)
            for i, g, k in T.Parallel(rows, groups, group_k):  # a write through the view reaches src
                view[i, g, k] = view[i, g, k] * 2.0 + g
            T.copy(src, B)
            T.copy(dst, C)

    return main


def test_fragment_reshape_with_extents_not_powers_of_two(dev):
    rows, groups, group_k = 3, 6, 20
    a = torch.randn(rows, groups * group_k, device=dev)
    b = poison((rows, groups * group_k), device=dev)
    c = grouped_row_sums(rows, groups, group_k)(a, b)
    grouped = a.double().reshape(rows, groups, group_k)
    assert_close(c, grouped.sum(2), 1e-5, 1e-5)
    ref_b = grouped * 2 + torch.arange(groups, dtype=torch.float64, device=dev)[None, :, None]
    assert_close(b, ref_b.reshape(rows, -1), 1e-6, 1e-6)


def _atomic_load_with_order(order):
    @T.prim_func
    def main(Src: T.Tensor((4,), "int32"), Out: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=4):
            for i in T.Parallel(4):
                Out[i] = T.atomic_load(Src[i], memory_order=order)

    return main


def test_atomic_memory_order_is_checked_at_definition():
    # TileLang builds the prim_func at decoration and raises ValueError there
    with pytest.raises(ValueError) as info:
        _atomic_load_with_order("release")
    assert isinstance(info.value, tilelang.TileLangCompileError)
    assert "T.atomic_load does not support memory_order='release'" in str(info.value)
    assert "T.atomic_load(Src[i], memory_order=order)" in str(info.value)
    with pytest.raises(ValueError, match="T.atomic_store does not support memory_order='acquire'"):

        @T.prim_func
        def store(Dst: T.Tensor((4,), "int32")):
            with T.Kernel(1, threads=1):
                T.atomic_store(Dst[0], 1, "acquire")


def test_atomic_load_with_a_valid_order_runs(dev):
    src = torch.randint(-50, 50, (4,), dtype=torch.int32, device=dev)
    out = poison((4,), torch.int32, dev)
    tilelang.compile(_atomic_load_with_order("acquire"))(src, out)
    assert_equal(out, src)


@pytest.mark.parametrize("batch", [0, -2])
def test_finalize_reducer_batch_below_one_is_a_value_error(batch):
    @T.prim_func
    def main(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32):
            acc = T.alloc_reducer(8, "float32", op="sum", replication="all")
            T.clear(acc)
            for i, j in T.Parallel(8, 8):
                acc[i] += A[i, j]
            T.finalize_reducer(acc, batch=batch)
            T.copy(acc, B)

    with pytest.raises(ValueError, match="batch must be >= 1") as info:
        tilelang.compile(main)
    assert "T.finalize_reducer(acc, batch=batch)" in str(info.value)


# ------------------------------------------------------------------ reducer epochs (TileLang's reducer v2 rules)
def _epoch_kernel(case):
    @T.prim_func
    def main(A: T.Tensor((4, 8), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32):
            acc = T.alloc_reducer((4,), "float32", op="sum")
            res = T.alloc_fragment((4,), "float32")
            if case == "clear":
                T.clear(acc)
            elif case == "typed_seed":
                T.reducer_init(acc, T.float16(1.0))
            else:
                T.reducer_init(acc)
            if case == "double_init":
                T.reducer_init(acc)
            for i, j in T.Parallel(4, 8):
                if case == "plus_equals":
                    acc[i] += A[i, j]
                else:
                    T.reducer_update(acc[i], A[i, j])
            if case == "read":
                B[0] = acc[0]
            if case == "finalize_in_loop":
                for _ in T.serial(2):
                    T.finalize_reducer(acc, res)
            elif case != "no_finalize":
                T.finalize_reducer(acc, res)
            T.copy(res, B)

    return main


@pytest.mark.parametrize(
    "case,message,line",
    [
        ("clear", "illegal store to reducer 'acc'", "T.clear(acc)"),
        ("plus_equals", "illegal store to reducer 'acc'", "acc[i] += A[i, j]"),
        ("read", "illegal read of reducer 'acc'", "B[0] = acc[0]"),
        ("double_init", "double T.reducer_init on reducer 'acc'", "T.reducer_init(acc)"),
        ("no_finalize", "reducer 'acc' is initialized but never finalized", "T.reducer_init(acc)"),
        ("finalize_in_loop", "is not in the scope of its T.reducer_init", "T.finalize_reducer(acc, res)"),
        ("typed_seed", "init value dtype float16 does not match reducer 'acc' dtype float32", "T.float16(1.0)"),
    ],
)
def test_reducer_epoch_misuse_is_a_clear_error(case, message, line):
    with pytest.raises(tilelang.TileLangCompileError) as info:
        tilelang.compile(_epoch_kernel(case))
    assert message in str(info.value) and line in str(info.value)


@tilelang.jit(out_idx=[-1])
def epoch_per_iteration(M, N, rounds):
    @T.prim_func
    def main(A: T.Tensor((rounds, M, N), "float32"), Flag: T.Tensor((rounds,), "int32"),
             B: T.Tensor((rounds, M), "float32")):  # fmt: skip
        with T.Kernel(1, threads=64):
            res = T.alloc_fragment((M,), "float32")
            acc = T.alloc_reducer((M,), "float32", op="max")
            for r in T.serial(rounds):  # one epoch per iteration, closed in a branch nested in it
                T.reducer_init(acc, -2.5)
                for i, j in T.Parallel(M, N):
                    T.reducer_update(acc[i], A[r, i, j])
                T.fill(res, 7.0)
                if Flag[r] > 0:
                    T.finalize_reducer(acc, res)
                T.copy(res, B[r, 0])

    return main


def test_reducer_epoch_reopened_per_iteration(dev):
    rounds, M, N = 3, 5, 19
    a = torch.randn(rounds, M, N, device=dev)
    flag = torch.tensor([1, 0, 1], dtype=torch.int32, device=dev)
    b = epoch_per_iteration(M, N, rounds)(a, flag)
    ref = torch.maximum(a.double().amax(2), torch.tensor(-2.5, dtype=torch.float64))
    ref[1] = 7.0  # not finalized in that iteration: res keeps its fill
    assert_close(b, ref, 0, 0)


def test_bitwise_reducer_of_floats_fails_at_definition():
    # TileLang asserts it while building the prim_func: an AssertionError at the user's line
    with pytest.raises(AssertionError, match="bitwise reducer op 'bitor' requires an integer dtype") as info:

        @T.prim_func
        def main(A: T.Tensor((8,), "float32"), B: T.Tensor((1,), "float32")):
            with T.Kernel(1, threads=32):
                acc = T.alloc_reducer((1,), T.float32, op="bitor")
                T.reducer_init(acc)
                for i in T.Parallel(8):
                    T.reducer_update(acc[0], A[i])
                res = T.alloc_fragment((1,), "float32")
                T.finalize_reducer(acc, res)
                B[0] = res[0]

    assert isinstance(info.value, tilelang.TileLangCompileError)
    assert 'acc = T.alloc_reducer((1,), T.float32, op="bitor")' in str(info.value)
