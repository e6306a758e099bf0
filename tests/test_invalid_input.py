"""Invalid input gets one clear error at the user's line, never a silent wrong answer
(docs/tilelang_suite.md, "Invalid input", lists each case TileLang's own tests reject);
and T.reduce_max/min(..., nan_propagate=True) make a NaN win."""

import pytest
import torch
from t2t_util import assert_equal

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import TileLangCompileError

THIS_FILE = "test_invalid_input.py"


def _compile_error(prim_func, match):
    with pytest.raises(TileLangCompileError, match=match) as info:
        tilelang.compile(prim_func)
    assert THIS_FILE in str(info.value)  # names the user's file and line


@pytest.mark.parametrize("order", ["release", "acq_rel", "invalid"])
def test_atomic_load_rejects_memory_order(order):
    # at decoration, as TileLang (which builds the prim_func then)
    with pytest.raises(TileLangCompileError, match="atomic_load does not support memory_order") as info:

        @T.prim_func
        def kernel(source: T.Tensor((3,), T.int32), output: T.Tensor((3,), T.int32)):
            with T.Kernel(1, threads=1):
                output[0] = T.atomic_load(source[0], memory_order=order)

    assert THIS_FILE in str(info.value)


@pytest.mark.parametrize("order", ["consume", "acquire", "acq_rel", "invalid"])
def test_atomic_store_rejects_memory_order(order):
    with pytest.raises(TileLangCompileError, match="atomic_store does not support memory_order") as info:

        @T.prim_func
        def kernel(destination: T.Tensor((3,), T.int32)):
            with T.Kernel(1, threads=1):
                T.atomic_store(destination[0], 1, memory_order=order)

    assert THIS_FILE in str(info.value)


def test_atomic_load_store_valid_orders_run(dev):
    @T.prim_func
    def kernel(source: T.Tensor((3,), T.int32), output: T.Tensor((3,), T.int32)):
        with T.Kernel(1, threads=1):
            T.atomic_store(output[1], source[2] + 5, memory_order="release")
            output[0] = T.atomic_load(source[1], memory_order="acquire")

    source = torch.randint(-100, 100, (3,), dtype=torch.int32, device=dev)
    output = torch.full((3,), -7777, dtype=torch.int32, device=dev)
    tilelang.compile(kernel)(source, output)
    assert_equal(output, torch.stack([source[1], source[2] + 5, output.new_tensor(-7777)]))


def test_reshape_of_global_must_keep_its_size():
    N, M = 30, 6

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N // M, M + 1), T.float32)):
        with T.Kernel(1):
            A_reshaped = T.reshape(A, [N // M, M + 1])  # 35 elements of a 30-element tensor
            T.copy(A_reshaped, B)

    _compile_error(main, "T.reshape of 'A' .* changes its size")


@pytest.mark.parametrize(("dtype", "init"), [(T.float32, 1e300), (T.float16, -7e4), (T.int8, 300), (T.uint8, -1)])
def test_alloc_var_initializer_must_fit(dtype, init):
    @T.prim_func
    def kernel(A: T.Tensor((1,), dtype)):
        with T.Kernel(1):
            value = T.alloc_var(dtype, init=init)
            A[0] = value

    _compile_error(kernel, "initial value .* (exceeds maximum of|does not fit in)")


@pytest.mark.parametrize("batch", [0, -1, 128, 3])
def test_finalize_reducer_batch_must_divide(batch):
    block_M = 64

    @T.prim_func
    def kernel(A: T.Tensor((block_M, 20), T.float32), B: T.Tensor((block_M,), T.float32)):
        with T.Kernel(1, threads=128):
            acc = T.alloc_reducer(block_M, T.float32, op="sum", replication="all")
            T.clear(acc)
            A_frag = T.alloc_fragment((block_M, 20), T.float32)
            T.copy(A, A_frag)
            for i, j in T.Parallel(block_M, 20):
                acc[i] += A_frag[i, j]
            T.finalize_reducer(acc, batch=batch)
            T.copy(acc, B)

    _compile_error(kernel, "batch must be >= 1|exceeds total output elements|must evenly divide")


@tilelang.jit(out_idx=[-1])
def nan_reduce(M, N, op, dtype, nan_propagate, clear):
    reduce_fn = {"max": T.reduce_max, "min": T.reduce_min, "absmax": T.reduce_absmax}[op]

    @T.prim_func
    def kernel(A: T.Tensor((M, N), dtype), Init: T.Tensor((M,), dtype), B: T.Tensor((M,), dtype)):
        with T.Kernel(1, threads=128):
            src = T.alloc_fragment((M, N), dtype)
            dst = T.alloc_fragment((M,), dtype)
            T.copy(A, src)
            T.copy(Init, dst)
            reduce_fn(src, dst, dim=1, clear=clear, nan_propagate=nan_propagate)
            T.copy(dst, B)

    return kernel


@pytest.mark.parametrize("op", ["max", "min", "absmax"])
@pytest.mark.parametrize("dtype", [T.float16, T.float32])
@pytest.mark.parametrize("clear", [True, False])
def test_reduce_nan_propagate(dev, op, dtype, clear):
    M, N = 13, 37
    torch_dtype = getattr(torch, dtype)
    A = torch.randn(M, N, device=dev).to(torch_dtype)
    A[2, 7] = float("nan")
    A[5, 36] = float("nan")
    Init = torch.randn(M, device=dev).to(torch_dtype)
    Init[9] = float("nan")  # clear=False: a NaN already in the destination stays
    kernel = nan_reduce(M, N, op, dtype, True, clear)
    # the interpreter's maximum propagates NaN anyway; a GPU's does only when asked
    assert "propagate_nan=tl.PropagateNan.ALL" in kernel.get_kernel_source()
    B = kernel(A, Init)
    x = A.double().abs() if op == "absmax" else A.double()
    if not clear:
        x = torch.cat([x, Init.double()[:, None]], dim=1)
    # torch's amax/amin propagate NaN: the reference
    ref = x.amin(dim=1) if op == "min" else x.amax(dim=1)
    assert torch.equal(B.double().isnan(), ref.isnan()), (B, ref)
    keep = ~ref.isnan()
    assert_equal(B.double()[keep], ref[keep])


def test_reduce_nan_propagate_must_be_static():
    @T.prim_func
    def kernel(A: T.Tensor((5, 7), T.float32), flag: T.int32, B: T.Tensor((5,), T.float32)):
        with T.Kernel(1):
            src = T.alloc_fragment((5, 7), T.float32)
            dst = T.alloc_fragment((5,), T.float32)
            T.copy(A, src)
            T.reduce_max(src, dst, dim=1, nan_propagate=flag)
            T.copy(dst, B)

    _compile_error(kernel, "nan_propagate must be a compile-time bool")


def _reducer_kernel(init: bool, in_parallel: bool, op="sum"):
    @T.prim_func
    def kernel(A: T.Tensor((11,), T.float32), B: T.Tensor((1,), T.float32)):
        with T.Kernel(1, threads=128):
            src = T.alloc_fragment((11,), T.float32)
            T.copy(A, src)
            acc = T.alloc_reducer((1,), T.float32, op=op)
            if init:
                T.reducer_init(acc)
            if in_parallel:
                for i in T.Parallel(11):
                    T.reducer_update(acc[0], src[i])
            else:
                T.reducer_update(acc[0], src[0])
            result = T.alloc_fragment((1,), T.float32)
            T.finalize_reducer(acc, result)
            B[0] = result[0]

    return kernel


def test_reducer_update_before_init():
    # nothing gives the reducer a starting value: a max would start from whatever the registers hold
    _compile_error(_reducer_kernel(init=False, in_parallel=True, op="max"), "before T.reducer_init")


def test_reducer_update_outside_parallel():
    # every thread of the block would contribute src[0]: TileLang calls it ambiguous, so do we
    _compile_error(_reducer_kernel(init=True, in_parallel=False), "outside any T.Parallel")


def test_reducer_legacy_update_before_clear():
    @T.prim_func
    def kernel(A: T.Tensor((11,), T.float32), B: T.Tensor((1,), T.float32)):
        with T.Kernel(1, threads=128):
            acc = T.alloc_reducer((1,), T.float32, op="sum")
            for i in T.Parallel(11):
                acc[0] += A[i]
            T.finalize_reducer(acc)
            T.copy(acc, B)

    _compile_error(kernel, "before T.reducer_init")


@pytest.mark.parametrize("op", ["sum", "max"])
def test_reducer_valid_lifecycle_runs(dev, op):
    A = torch.randn(11, device=dev)
    B = torch.full((1,), float("nan"), device=dev)
    tilelang.compile(_reducer_kernel(init=True, in_parallel=True, op=op))(A, B)
    ref = A.double().sum() if op == "sum" else A.double().max()
    assert torch.allclose(B.double(), ref.reshape(1), atol=1e-5, rtol=1e-5)


@tilelang.jit
def fill_int64_sized(value: float):
    n = T.symbolic("n", "int64")
    block_n = 96

    @T.prim_func
    def main(x: T.Tensor[n, T.bfloat16]):
        with T.Kernel(T.ceildiv(n, block_n), threads=128) as bx:
            for i in T.Parallel(block_n):
                if bx * block_n + i < n:
                    x[bx * block_n + i] = value

    return main


def test_int64_size_uses_64bit_block_offsets(dev):
    """A symbolic size declared int64 may pass 2**31 elements, where ``bx * block_n`` in int32
    wraps (TileLang's test_tilelang_language_int64.py: an illegal memory access on the GPU)."""
    kernel = fill_int64_sized(1.5)
    assert "tl.program_id(0).to(tl.int64)" in kernel.get_kernel_source()
    x = torch.randn(1000, device=dev).to(torch.bfloat16)
    kernel(x)
    assert_equal(x, torch.full_like(x, 1.5))


def test_int32_size_keeps_32bit_block_offsets():
    kernel = tilelang.compile(_reducer_kernel(init=True, in_parallel=True))
    assert "program_id(0).to(" not in kernel.get_kernel_source()


@pytest.mark.parametrize("name", ["atomic_add", "atomic_max", "atomic_min", "atomic_or"])
def test_atomic_rmw_rejects_unknown_memory_order(name):
    atomic = getattr(T, name)

    @T.prim_func
    def kernel(destination: T.Tensor((3,), T.int32)):
        with T.Kernel(1, threads=1):
            atomic(destination[0], 1, memory_order="seq-cst")

    _compile_error(kernel, f"{name} does not support memory_order='seq-cst'")


def test_atomic_rmw_valid_memory_order_runs(dev):
    @T.prim_func
    def kernel(destination: T.Tensor((3,), T.int32)):
        with T.Kernel(1, threads=1):
            T.atomic_add(destination[1], 5, memory_order="acq_rel")
            T.atomic_max(destination[2], 40, memory_order="relaxed")

    destination = torch.tensor([-3, 11, 17], dtype=torch.int32, device=dev)
    tilelang.compile(kernel)(destination)
    assert_equal(destination, torch.tensor([-3, 16, 40], dtype=torch.int32, device=dev))
