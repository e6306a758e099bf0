"""Lowering of TileLang code as TileLang's own examples write it (issue 12, lowering side):
tile operations under a condition that picks a range of threads, ..."""

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.errors import TileLangCompileError
from tile2triton.oracle import reference


@tilelang.jit
def copy_by_some_threads(M, N, block_M, block_N, threads, tile_op, lo):
    """TileLang's mask_op test: only threads lo..threads/2 load the tile; they load all of it."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_N), "float32")
            tx = T.get_thread_binding(0)
            if tx < threads // 2 and tx >= lo:
                if tile_op:
                    T.copy(A[by * block_M, bx * block_N], A_shared)
                else:
                    for i, k in T.Parallel(block_M, block_N):
                        A_shared[i, k] = A[by * block_M + i, bx * block_N + k] * 2.0
            T.copy(A_shared, B[by * block_M, bx * block_N])

    return main


@pytest.mark.parametrize("tile_op", [True, False])
def test_tile_op_under_thread_range(dev, tile_op):
    M, N = 45, 70
    a = torch.randn(M, N, device=dev)
    b = poison((M, N), device=dev)
    copy_by_some_threads(M, N, 16, 24, 48, tile_op, 3)(a, b)
    assert_close(b, a if tile_op else 2 * a, 0, 0)


@tilelang.jit(out_idx=[-1])
def copy_by_odd_threads(N, threads):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, threads), threads=threads) as bx:
            A_shared = T.alloc_shared((threads,), "float32")
            tx = T.get_thread_binding(0)
            if tx % 2 == 1:
                T.copy(A[bx * threads], A_shared)
            T.copy(A_shared, B[bx * threads])

    return main


def test_tile_op_under_other_thread_condition_is_refused():
    with pytest.raises(TileLangCompileError, match="per-thread condition"):
        copy_by_odd_threads(100, 32)(torch.randn(100))


@tilelang.jit
def gemv_allreduce(N, K, block_N, reduce_threads, tile_k, bind_style):
    """TileLang's examples/gemv split-K GEMV: each thread sums a slice of K, then
    T.tvm_thread_allreduce (in its T.attr reduce scope) adds the slices of the threads in a row."""

    @T.prim_func
    def main(A: T.Tensor((K,), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), threads=(block_N, reduce_threads)) as bn:
            if bind_style == "tir":
                tn = T.thread_binding(0, block_N, thread="threadIdx.x")
                tk = T.thread_binding(0, reduce_threads, thread="threadIdx.y")
            else:
                tn = T.get_thread_binding(0)
                tk = T.get_thread_binding(1)
            acc = T.alloc_local((1,), "float32")
            reduced = T.alloc_local((1,), "float32")
            T.clear(acc)
            for bk in T.serial(T.ceildiv(K, reduce_threads * tile_k)):
                for k in T.serial(tile_k):
                    kk = bk * reduce_threads * tile_k + tk * tile_k + k
                    if kk < K:
                        acc[0] += A[kk].astype("float32") * B[bn * block_N + tn, kk].astype("float32")
            with T.attr(
                T.comm_reducer(lambda x, y: x + y, [T.cast(0, "float32")]),
                "reduce_scope",
                T.reinterpret(T.uint64(0), dtype="handle"),
            ):
                T.evaluate(T.tvm_thread_allreduce(T.uint32(1), acc[0], True, reduced[0], tk, dtype="handle"))
            if bn * block_N + tn < N:
                C[bn * block_N + tn] = reduced[0]

    return main


@pytest.mark.parametrize("bind_style", ["tir", "view"])
def test_gemv_thread_allreduce(dev, bind_style):
    N, K = 45, 150
    a = torch.randn(K, device=dev).half()
    b = torch.randn(N, K, device=dev).half()
    c = poison((N,), device=dev)
    gemv_allreduce(N, K, 8, 6, 4, bind_style)(a, b, c)
    assert_close(c, b.double() @ a.double(), 1e-3, 1e-3)


@tilelang.jit
def allreduce_all_threads(n, threads, dtype, combine):
    """TileLang's issue-2628 test: one warp reduces its values with a closure's combiner; thread
    0..n-1 each hold one value (T.thread_binding as a loop), the rest hold the identity."""

    @T.prim_func
    def main(A: T.Tensor((n,), dtype), C: T.Tensor((threads,), dtype)):
        with T.Kernel(1, threads=threads):
            for tx in T.thread_binding(0, threads, thread="threadIdx.x"):
                v = T.alloc_local((1,), dtype)
                v[0] = A[tx] if tx < n else T.cast(1 if combine == "prod" else 0, dtype)
                r = T.alloc_local((1,), dtype)
                with T.attr(T.comm_reducer(COMBINERS[combine], [T.cast(0, dtype)]), "reduce_scope", 0):
                    T.evaluate(T.tvm_thread_allreduce(T.uint32(1), v[0], True, r[0], tx, dtype="handle"))
                C[tx] = r[0]

    return main


COMBINERS = {"sum": lambda x, y: x + y, "prod": lambda x, y: x * y, "max": max}


@pytest.mark.parametrize("dtype,combine", [("int8", "sum"), ("int32", "prod"), ("float32", "max"), ("int16", "sum")])
def test_allreduce_closure_combiners(dev, dtype, combine):
    n, threads = 11, 24
    tdtype = getattr(torch, dtype)
    a = (
        torch.randint(1, 4, (n,), device=dev).to(tdtype)
        if combine == "prod"
        else torch.randint(-60, 60, (n,), device=dev).to(tdtype)
    )
    c = poison((threads,), dtype=tdtype, device=dev)
    allreduce_all_threads(n, threads, dtype, combine)(a, c)
    wide = a.cpu().to(torch.int64) if dtype != "float32" else a.cpu().double()
    ref = {"sum": wide.sum(), "prod": wide.prod(), "max": wide.max()}[combine].to(tdtype)
    assert_close(c, ref.expand(threads), 0, 0)


@tilelang.jit
def block_sparse_scale(M, N, D, block_M, source, reducer):
    """Rows of block ``by`` are copied (times 2) when any/all of the mask's entries for ``by`` are
    set, otherwise negated: TileLang's any_of/all_of tests, on a global region, a shared buffer and
    a local buffer."""
    check = T.any_of if reducer == "any" else T.all_of

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), Mask: T.Tensor((T.ceildiv(M, block_M), 2, D), "bool"),
             B: T.Tensor((M, N), "float32")):  # fmt: skip
        with T.Kernel(T.ceildiv(M, block_M), threads=64) as by:
            mask_shared = T.alloc_shared((D,), "bool")
            mask_local = T.alloc_local((D,), "bool")
            for i in T.serial(D):
                mask_shared[i] = Mask[by, 1, i]
                mask_local[i] = Mask[by, 1, i]
            tile = T.alloc_fragment((block_M, N), "float32")
            T.copy(A[by * block_M, 0], tile)
            if source == "global":
                hit = check(Mask[by, 1, :])
            elif source == "shared":
                hit = check(mask_shared)
            else:
                hit = check(mask_local[0:D])
            if hit:
                for i, j in T.Parallel(block_M, N):
                    tile[i, j] = tile[i, j] * 2.0
            else:
                for i, j in T.Parallel(block_M, N):
                    tile[i, j] = -tile[i, j]
            T.copy(tile, B[by * block_M, 0])

    return main


@pytest.mark.parametrize("source", ["global", "shared", "local"])
@pytest.mark.parametrize("reducer", ["any", "all"])
def test_any_of_all_of(dev, source, reducer):
    M, N, D, block_M = 70, 24, 5, 16
    blocks = -(-M // block_M)
    a = torch.randn(M, N, device=dev)
    mask = torch.rand(blocks, 2, D, device=dev) < 0.5
    mask[0, 1] = False  # cover every case: none, all, and some set
    mask[1, 1] = True
    mask[2, 1] = torch.tensor([False, True, False, False, True])
    b = poison((M, N), device=dev)
    block_sparse_scale(M, N, D, block_M, source, reducer)(a, mask, b)
    hit = mask[:, 1].any(dim=-1) if reducer == "any" else mask[:, 1].all(dim=-1)
    rows = hit.repeat_interleave(block_M)[:M, None].cpu()
    assert_close(b, torch.where(rows, 2 * a.cpu(), -a.cpu()), 0, 0)


@tilelang.jit
def cumsum_with_unit_dims(R, N, reverse, dim):
    """TileLang's examples/gdn chunk cumsum: a (R, 1, N) shared tile (unit dims are dropped from the
    register tile) scanned along ``dim``."""

    @T.prim_func
    def main(A: T.Tensor((R, 1, N), "float32"), B: T.Tensor((R, 1, N), "float32")):
        with T.Kernel(1, threads=64):
            S = T.alloc_shared((R, 1, N), "float32")
            T.copy(A, S)
            T.cumsum(S, dim=dim, reverse=reverse)
            T.copy(S, B)

    return main


@pytest.mark.parametrize("R", [1, 3])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dim", [1, 2])
def test_cumsum_with_unit_dims(dev, R, reverse, dim):
    N = 50
    a = torch.randn(R, 1, N, device=dev)
    b = poison((R, 1, N), device=dev)
    cumsum_with_unit_dims(R, N, reverse, dim)(a, b)
    wide = a.cpu().double()
    ref = wide.flip(dim).cumsum(dim).flip(dim) if reverse else wide.cumsum(dim)
    assert_close(b, ref, 1e-5, 1e-5)


@tilelang.jit
def half_from_bytes(N):
    """fp16 built from the bits of two bytes, as fp4/int4 dequantization examples do: the integer
    expression is uint16 in TileLang, and T.reinterpret reads its bits (also of a literal)."""

    @T.prim_func
    def main(Lo: T.Tensor((N,), "uint8"), Hi: T.Tensor((N,), "uint8"), C: T.Tensor((N,), "float16"),
             D: T.Tensor((N,), "float32")):  # fmt: skip
        with T.Kernel(1, threads=32):
            for i in T.Parallel(N):
                bits = (Hi[i].astype("uint16") << T.uint16(8)) | Lo[i]
                C[i] = T.reinterpret(bits, "float16") + T.reinterpret(T.uint16(0x3C00), "float16")
                D[i] = T.reinterpret(bits.astype("int32") * 65536, "float32")

    return main


def test_reinterpret_integer_expressions(dev):
    N = 77
    lo = torch.randint(0, 256, (N,), dtype=torch.uint8, device=dev)
    hi = torch.randint(0, 0x7B, (N,), dtype=torch.uint8, device=dev)  # finite halves
    c = poison((N,), dtype=torch.float16, device=dev)
    d = poison((N,), device=dev)
    half_from_bytes(N)(lo, hi, c, d)
    bits = hi.cpu().to(torch.int32) << 8 | lo.cpu().to(torch.int32)
    want = bits.to(torch.int16).view(torch.float16)
    assert_close(c, (want.double() + 1.0).half(), 0, 0)
    assert_close(d, (bits << 16).view(torch.float32), 0, 0)


@tilelang.jit
def unsigned_not(N, dtype):
    """``~x`` of unsigned integers, masked back as topk_selector's radix keys are (``~bits & 0xFFFF``)."""

    @T.prim_func
    def main(X: T.Tensor((N,), "int32"), Y: T.Tensor((N,), "int32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(N):
                bits = T.cast(X[i], dtype)
                Y[i] = T.cast(~bits, "int32") & 0xFFFF

    return main


@pytest.mark.parametrize("dtype, bits", [("uint8", 8), ("uint16", 16), ("uint32", 32)])
def test_unsigned_not(dev, dtype, bits):
    # Triton 3.6's interpreter refused ~x of an unsigned x (numpy's -1 out of bounds for uint16)
    N = 83
    x = torch.randint(0, 1 << 16, (N,), dtype=torch.int32, device=dev)
    y = poison((N,), dtype=torch.int32, device=dev)
    unsigned_not(N, dtype)(x, y)
    want = (~(x.cpu().to(torch.int64) & ((1 << bits) - 1)) & ((1 << bits) - 1)) & 0xFFFF
    assert_close(y, want.to(torch.int32), 0, 0)


@tilelang.jit
def split_column_sums(R, N, splits, block_N):
    """A split reduction through a T.alloc_global workspace shared by two T.Kernel blocks (the
    flash-decoding examples' partial outputs): block (bx, s) sums its rows into partial[s], the
    second kernel adds the partials."""
    rows = -(-R // splits)

    @T.prim_func
    def main(A: T.Tensor((R, N), "float32"), B: T.Tensor((N,), "float32")):
        partial = T.alloc_global((splits, N), "float32")
        with T.Kernel(T.ceildiv(N, block_N), splits, threads=32) as (bx, s):
            acc = T.alloc_fragment((block_N,), "float32")
            T.clear(acc)
            for r in T.serial(rows):
                for j in T.Parallel(block_N):
                    if s * rows + r < R:
                        acc[j] += A[s * rows + r, bx * block_N + j]
            T.copy(acc, partial[s, bx * block_N])
        with T.Kernel(T.ceildiv(N, block_N), threads=32) as bx:
            total = T.alloc_fragment((block_N,), "float32")
            T.clear(total)
            for k in T.serial(splits):
                for j in T.Parallel(block_N):
                    total[j] += partial[k, bx * block_N + j]
            T.copy(total, B[bx * block_N])

    return main


def test_alloc_global_workspace_shared_by_kernels(dev):
    R, N = 37, 90
    kernel = split_column_sums(R, N, 3, 16)
    assert [p.name for p in kernel.params] == ["A", "B"]  # the workspace is the runtime's
    for _ in range(2):  # the second call takes the generated launcher
        a = torch.randn(R, N, device=dev)
        b = poison((N,), device=dev)
        kernel(a, b)
        assert_close(b, a.double().sum(0), 1e-4, 1e-4)
    ref_out = poison((N,))
    reference.run(kernel, a.cpu(), ref_out)  # the oracle allocates the workspace too
    assert_close(ref_out, a.cpu().double().sum(0), 1e-4, 1e-4)


def test_alloc_global_profiler_supplies_only_inputs():
    R, N = 21, 40

    @T.prim_func
    def main(A: T.Tensor((R, N), "float32"), B: T.Tensor((N,), "float32")):
        partial = T.alloc_global((N,), "float32")
        with T.Kernel(1, threads=32):
            T.copy(A[3, 0:N], partial[0:N])
        with T.Kernel(1, threads=32):
            T.copy(partial[0:N], B[0:N])

    profiler = tilelang.compile(main, out_idx=[-1]).get_profiler()
    profiler.assert_allclose(lambda a: a[3], rtol=0, atol=0)


def test_alloc_global_inside_kernel_is_refused():
    @T.prim_func
    def main(A: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32):
            W = T.alloc_global((8,), "float32")
            T.copy(A, W)

    with pytest.raises(TileLangCompileError, match="alloc_global stands before"):
        tilelang.compile(main)


@tilelang.jit
def sum_unless_flagged(extent, threads):
    """A block-uniform branch (on a value loaded per block) around tile ops in a thread-view kernel:
    the fragment allocated and written in the branch is read by one thread after it."""

    @T.prim_func
    def main(A: T.Tensor((extent,), "float32"), S: T.Tensor((3,), "int32"), B: T.Tensor((3,), "float32")):
        with T.Kernel(3, threads=threads) as bx:
            src = T.alloc_fragment((extent,), "float32")
            T.copy(A, src)
            if S[bx] < 0:
                if T.get_thread_binding() == 0:
                    B[bx] = -1.0
            else:
                total = T.alloc_fragment((1,), "float32")
                T.reduce_sum(src, total, dim=0)
                if T.get_thread_binding() == 0:
                    B[bx] = total[0] * S[bx]

    return main


def test_tile_ops_under_block_uniform_branch(dev):
    a = torch.randn(10, device=dev)
    s = torch.tensor([-2, 3, 1], dtype=torch.int32, device=dev)
    b = poison((3,), device=dev)
    sum_unless_flagged(10, 48)(a, s, b)
    total = a.cpu().double().sum()
    assert_close(b, torch.stack([torch.tensor(-1.0, dtype=torch.float64), 3 * total, total]), 1e-5, 1e-5)
