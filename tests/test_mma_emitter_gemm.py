"""The tensor-core emitter's gemm (TileLang's ``example_gemm_intrinsics.py`` family: ldmatrix_a/b and
mma over a k loop, stmatrix out) through the tile form of its fragment operations
(frontend/rules_fragments.py): fragments no other code touches are block tiles, and a k loop of
ldmatrix + mma is one ``tl.dot`` per shared tile.  Where other code reads or writes the fragments, the
exact per-thread form stays (and still computes the product)."""

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.cuda.intrinsics.macro.mma_macro_generator import TensorCoreIntrinEmitter

M, N, K = 192, 320, 96  # multiples of the blocks below (the emitter needs whole tiles), not powers of two


def emitter_gemm(in_dtype, accum_dtype, out_dtype, warps, a_t=False, b_t=True, chunk=32, store="4d",
                 touch_c=False, barrier_in_k_loop=False, k_pad=0, sizes=(M, N, K), atoms=None):  # fmt: skip
    """C = A @ B^T (A given transposed when ``a_t``, B as N x K when ``b_t``), as the example writes it.
    ``store``: stmatrix into a 4-D shared tile ("4d"), a 2-D one ("2d"), or global memory ("global").
    ``touch_c``: a thread-view loop also reads and writes C's fragments (they stay per thread).
    ``barrier_in_k_loop``: a T.sync_threads in the k loop (the tile form, without the k-loop rewrite).
    ``k_pad``: shared tiles ``k_pad`` columns wider than the chunk (the k loop covers a part of them).
    ``atoms``: mma_atom over every atom instead of mma, "grid" (one loop nest: it is mma) or "reversed"
    (columns in reverse: each atom is added where it belongs)."""
    M, N, K = sizes  # noqa: N806
    block_row_warps, block_col_warps, warp_row_tiles, warp_col_tiles = warps
    emitter = TensorCoreIntrinEmitter(
        a_dtype=in_dtype, b_dtype=in_dtype, accum_dtype=accum_dtype, a_transposed=a_t, b_transposed=b_t,
        block_row_warps=block_row_warps, block_col_warps=block_col_warps, warp_row_tiles=warp_row_tiles,
        warp_col_tiles=warp_col_tiles, chunk=chunk,
    )  # fmt: skip
    bm, bn = block_row_warps * warp_row_tiles, block_col_warps * warp_col_tiles
    mx, my = emitter.micro_size_x, emitter.micro_size_y
    kw = chunk + k_pad
    a_shape, a_tile = ((K, M), (kw, bm)) if a_t else ((M, K), (bm, kw))
    b_shape, b_tile = ((N, K), (bn, kw)) if b_t else ((K, N), (kw, bn))
    local_a = emitter.warp_rows * emitter.local_size_a
    local_b = emitter.warp_cols * emitter.local_size_b
    local_c = emitter.warp_rows * emitter.warp_cols * emitter.local_size_out

    @T.prim_func
    def main(A: T.Tensor(a_shape, in_dtype), B: T.Tensor(b_shape, in_dtype), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=emitter.threads) as (bx, by):
            A_shared = T.alloc_shared(a_tile, in_dtype)
            B_shared = T.alloc_shared(b_tile, in_dtype)
            C_shared4 = T.alloc_shared((bm // mx, bn // my, mx, my), out_dtype)
            C_shared2 = T.alloc_shared((bm, bn), out_dtype)
            A_local = T.alloc_local((local_a,), in_dtype)
            B_local = T.alloc_local((local_b,), in_dtype)
            C_local = T.alloc_local((local_c,), accum_dtype)
            T.clear(C_local)
            for ko in T.Pipelined(K // chunk, num_stages=2):
                if k_pad:
                    T.fill(A_shared, 3)  # junk in the columns the k loop does not cover
                    T.fill(B_shared, 3)
                for i, k in T.Parallel(bm, chunk):
                    if a_t:
                        A_shared[k, i] = A[ko * chunk + k, by * bm + i]
                    else:
                        A_shared[i, k] = A[by * bm + i, ko * chunk + k]
                for j, k in T.Parallel(bn, chunk):
                    if b_t:
                        B_shared[j, k] = B[bx * bn + j, ko * chunk + k]
                    else:
                        B_shared[k, j] = B[ko * chunk + k, bx * bn + j]
                for ki in T.serial(chunk // emitter.micro_size_k):
                    emitter.ldmatrix_a(A_local, A_shared, ki)
                    emitter.ldmatrix_b(B_local, B_shared, ki)
                    if barrier_in_k_loop:
                        T.sync_threads()
                    if atoms == "grid":
                        for i, j in T.grid(emitter.mma_num_inst_m, emitter.mma_num_inst_n):
                            emitter.mma_atom(A_local, B_local, C_local, i, j, ki)
                    elif atoms == "reversed":
                        for i, j in T.grid(emitter.mma_num_inst_m, emitter.mma_num_inst_n):
                            emitter.mma_atom(A_local, B_local, C_local, i, emitter.mma_num_inst_n - 1 - j, ki)
                    else:
                        emitter.mma(A_local, B_local, C_local)
            if touch_c:
                for n in T.serial(local_c):
                    C_local[n] = C_local[n] * 2
            if store == "global":
                emitter.stmatrix(C_local, C, pid_m=by, pid_n=bx)
            elif store == "2d":
                emitter.stmatrix(C_local, C_shared2)
                T.copy(C_shared2, C[by * bm, bx * bn])
            else:
                emitter.stmatrix(C_local, C_shared4)
                for i, j in T.Parallel(bm, bn):
                    C[by * bm + i, bx * bn + j] = C_shared4[i // mx, j // my, i % mx, j % my]

    return main


def _inputs(in_dtype, a_t, b_t, dev, M, N, K):  # noqa: N803
    torch_in = getattr(torch, in_dtype)
    if torch_in == torch.int8:
        a = torch.randint(-8, 8, (M, K), dtype=torch.int8, device=dev)
        b = torch.randint(-8, 8, (N, K), dtype=torch.int8, device=dev)
    else:
        a = torch.randn(M, K, device=dev).to(torch_in)
        b = torch.randn(N, K, device=dev).to(torch_in)
    args = (a.T.contiguous() if a_t else a, b if b_t else b.T.contiguous())
    return args, a.double() @ b.double().T


def _run(dev, in_dtype, accum_dtype, out_dtype, warps, factor=1, **kw):
    a_t, b_t = kw.get("a_t", False), kw.get("b_t", True)
    m, n, k = kw.get("sizes", (M, N, K))
    kernel = tilelang.compile(emitter_gemm(in_dtype, accum_dtype, out_dtype, warps, **kw))
    (a, b), ref = _inputs(in_dtype, a_t, b_t, dev, m, n, k)
    c = poison((m, n), getattr(torch, out_dtype), dev)
    kernel(a, b, c)
    exact = accum_dtype == T.int32
    tol = 0 if exact else (2e-2 if out_dtype == T.float16 else 1e-3)
    assert_close(c, ref * factor, atol=tol, rtol=tol)
    return kernel.get_kernel_source()


@pytest.mark.parametrize(
    "in_dtype, accum_dtype, out_dtype, warps, opts",
    [
        (T.float16, T.float32, T.float16, (2, 2, 32, 32), {}),  # the example's form, smaller tiles
        (T.float16, T.float32, T.float32, (1, 2, 64, 32), {"store": "2d"}),
        (T.float16, T.float32, T.float32, (2, 1, 48, 40), {"store": "global", "chunk": 48}),  # n_dim 8, 3 k steps
        (T.float16, T.float32, T.float32, (2, 2, 32, 16), {"a_t": True, "b_t": False}),
        (T.bfloat16, T.float32, T.float32, (2, 2, 32, 32), {"b_t": False, "store": "2d"}),
        (T.int8, T.int32, T.int32, (2, 2, 32, 32), {"chunk": 96}),  # m16n8k32: three k steps per chunk
    ],
)
def test_emitter_gemm_is_one_dot_per_k_tile(dev, monkeypatch, in_dtype, accum_dtype, out_dtype, warps, opts):
    monkeypatch.setenv("TILE2TRITON_SPLIT_DIMS", "0")  # a 96-wide chunk stays one dot (not 64 + 32)
    src = _run(dev, in_dtype, accum_dtype, out_dtype, warps, **opts)
    # the k loop of ldmatrix + mma is gone: one tl.dot of the shared tiles per chunk, no one-hot selects
    assert src.count("tl.dot(") == 1, src
    assert "for ki" not in src and "tl.sum(tl.where" not in src and "tl.gather" not in src, src
    assert "tx = tl.arange" not in src, src  # no thread view left


def test_shared_tiles_wider_than_the_k_loop(dev):
    """The k loop covers the first ``chunk`` of 48 columns: one gemm of that slice."""
    src = _run(dev, T.float16, T.float32, T.float32, (2, 2, 32, 32), k_pad=16, store="2d")
    assert src.count("tl.dot(") == 1, src


def test_tile_form_without_the_k_loop_rewrite(dev):
    """A statement between the loads and the mma keeps the k loop: each step's slices are copied
    (tl.gather along k) and multiplied into the C tile."""
    src = _run(dev, T.float16, T.float32, T.float32, (2, 2, 32, 32), barrier_in_k_loop=True)
    assert "for ki" in src and src.count("tl.dot(") == 1, src


def test_fragments_read_elsewhere_keep_the_exact_form(dev):
    """Code that reads and writes C's fragments per thread sees TileLang's layout: the exact form
    (slow on the interpreter: smaller sizes)."""
    src = _run(dev, T.float16, T.float32, T.float32, (2, 2, 32, 16), factor=2, touch_c=True, store="global",
               sizes=(64, 96, 64))  # fmt: skip
    assert "tx = tl.arange" in src, src


def test_atom_loops(dev):
    """mma_atom over every atom in one loop nest is mma (one dot); atoms at other indices keep the
    exact per-thread form (the tile form of a lone atom was wrong on the H200)."""
    src = _run(dev, T.float16, T.float32, T.float32, (2, 2, 32, 32), atoms="grid")
    assert src.count("tl.dot(") == 1 and "for ki" not in src, src
    src = _run(dev, T.float16, T.float32, T.float32, (2, 2, 32, 32), atoms="reversed", sizes=(64, 128, 64))
    assert "tx = tl.arange" in src, src
