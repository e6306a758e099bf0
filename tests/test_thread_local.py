"""Thread-view code that works on each thread's own local buffers: T.copy between a global slice
and a T.alloc_local (per thread, as TileLang copies local buffers), one-element locals indexed by a
per-thread value, and tuple assignments that swap (the right side is read before any store)."""

import torch
from t2t_util import poison

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.utils.sparse import compress, randn_semi_sparse


@tilelang.jit
def rows_reversed_in_pieces(S, D, rows, piece):
    """Each thread of a (rows, D // piece) block loads its piece of a row into a local buffer,
    reverses it in place with swaps, and stores it back."""

    @T.prim_func
    def main(A: T.Tensor((S, D), "float32"), B: T.Tensor((S, D), "float32")):
        with T.Kernel(T.ceildiv(S, rows), threads=(rows, D // piece)) as bz:
            tm = T.get_thread_binding(0)
            tn = T.get_thread_binding(1)
            mine = T.alloc_local([piece], "float32")
            T.copy(A[bz * rows + tm, tn * piece : (tn + 1) * piece], mine)
            for i in T.unroll(piece // 2):
                mine[i], mine[piece - 1 - i] = mine[piece - 1 - i], mine[i]
            T.copy(mine, B[bz * rows + tm, tn * piece : (tn + 1) * piece])

    return main


def test_per_thread_copy_through_a_local_buffer(dev):
    S, D, rows, piece = 37, 60, 6, 5  # 12 x 6 threads (padded to 16 x 8); 37 rows: the last block is partial
    a = torch.randn(S, D, device=dev)
    b = poison((S, D), device=dev)
    rows_reversed_in_pieces(S, D, rows, piece)(a, b)
    ref = a.cpu().view(S, D // piece, piece).flip(-1).reshape(S, D)
    torch.testing.assert_close(b.cpu(), ref, rtol=0, atol=0)


@tilelang.jit
def swap_scalars(N):
    @T.prim_func
    def main(A: T.Tensor((N,), "int32"), B: T.Tensor((N,), "int32")):
        with T.Kernel(1, threads=N):
            tx = T.get_thread_binding()
            x = A[tx]
            y = A[N - 1 - tx]
            x, y = y, x * 10
            B[tx] = x * 1000 + y

    return main


def test_tuple_assignment_reads_the_right_side_first(dev):
    N = 24
    a = torch.randint(1, 50, (N,), dtype=torch.int32, device=dev)
    b = poison((N,), torch.int32, dev)
    swap_scalars(N)(a, b)
    torch.testing.assert_close(b.cpu(), a.cpu().flip(0) * 1000 + a.cpu() * 10, rtol=0, atol=0)


@tilelang.jit(out_idx=[-2, -1])
def compress_fp16(S, D, rows):
    """A per-thread 2:4 compressor in the thread view (each thread: one row, 16 columns; int16
    metadata): first-nonzero position in a one-element local indexed by a per-thread count."""
    groups = 4

    @T.prim_func
    def main(dense: T.Tensor((S, D), "float16"), kept: T.Tensor((S, D // 2), "float16"),
             meta: T.Tensor((S, D // 16), "int16")):  # fmt: skip
        with T.Kernel(S // rows, threads=(rows, D // 16)) as bz:
            tm = T.get_thread_binding(0)
            tn = T.get_thread_binding(1)
            row = T.alloc_local([16], "float16")
            out = T.alloc_local([8], "float16")
            code = T.alloc_var(dtype="int32")
            first = T.alloc_local([1], "int32")
            count = T.alloc_var(dtype="int32")
            second = T.alloc_var(dtype="int32")
            T.copy(dense[bz * rows + tm, tn * 16 : (tn + 1) * 16], row)
            code = 0
            for g in T.unroll(groups):
                count = 0
                first[0] = 0
                second = 1
                for p in T.unroll(4):
                    if row[4 * g + p] != 0:
                        if count == 0:
                            first[count] = p
                        else:
                            second = p
                        count = count + 1
                if count == 1 and first[0] != 0:
                    first[0], second = 0, first[0]
                out[2 * g] = row[4 * g + first[0]]
                out[2 * g + 1] = row[4 * g + second]
                code = code | ((first[0] | (second << 2)) << (4 * g))
            T.copy(out, kept[bz * rows + tm, tn * 8 : (tn + 1) * 8])
            meta[bz * rows + tm, tn] = code

    return main


def test_thread_view_compressor_matches_the_host_compressor(dev):
    S, D = 24, 48
    A = randn_semi_sparse(S, D, dtype=torch.float16, device=dev)
    A[1, :16] = 0  # groups with no nonzero
    A[2, 0:4] = torch.tensor([0, 0, 3, 0])  # one nonzero, not at position 0
    A[2, 4:8] = torch.tensor([5, 0, 0, 0])  # one nonzero at position 0
    kept, meta = compress_fp16(S, D, 8)(A)
    ref_kept, ref_meta = compress(A, meta_dtype=torch.int16)
    torch.testing.assert_close(kept.cpu(), ref_kept.cpu(), rtol=0, atol=0)
    torch.testing.assert_close(meta.cpu(), ref_meta.cpu(), rtol=0, atol=0)


@tilelang.jit
def copy_in_under_a_condition(S, D, piece):
    @T.prim_func
    def main(A: T.Tensor((S, D), "float32"), B: T.Tensor((S, D), "float32")):
        with T.Kernel(1, threads=(S, D // piece)):
            tm = T.get_thread_binding(0)
            tn = T.get_thread_binding(1)
            mine = T.alloc_local([piece], "float32")
            for i in T.serial(piece):
                mine[i] = -1.0
            if tm % 3 == 1:  # only some threads load their piece; the others keep -1
                T.copy(A[tm, tn * piece : (tn + 1) * piece], mine)
            T.copy(mine, B[tm, tn * piece : (tn + 1) * piece])

    return main


def test_per_thread_copy_under_a_per_thread_condition(dev):
    S, D, piece = 10, 12, 4
    a = torch.randn(S, D, device=dev)
    b = poison((S, D), device=dev)
    copy_in_under_a_condition(S, D, piece)(a, b)
    ref = torch.full((S, D), -1.0)
    ref[1::3] = a.cpu()[1::3]
    torch.testing.assert_close(b.cpu(), ref, rtol=0, atol=0)
