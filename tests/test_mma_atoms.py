"""TileLang's per-warp tensor-core emitter (``tilelang.cuda.language.intrinsics.TensorCoreIntrinEmitter``,
tile2triton/cuda/intrinsics/macro/mma_atoms.py): ldmatrix into per-thread fragments, one MMA atom at a
time, stmatrix out, as TileLang's atom-level GEMM test writes it (issue 12).  Also a function defined
inside a helper a kernel calls (the test's swizzle-layout helper does that)."""

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.cuda.intrinsics.layout.mma_layout import get_swizzle_layout
from tile2triton.cuda.language.intrinsics import TensorCoreIntrinEmitter

M, N, K = 40, 56, 50  # not multiples of the 32 x 32 block or of the k chunk


def swizzled(shared_buf):
    """TileLang's test helper: a layout function defined inside a helper (a hint here)."""
    shape = shared_buf.shape
    if shape[-1] * T.dtype(shared_buf.dtype).bits == 512:

        def transform_func(i, j):
            return get_swizzle_layout(i, j, shape[-1], shared_buf.dtype)

        return T.Layout(shape, transform_func)
    return T.Layout(shape, lambda *args: args)


def atom_gemm(in_dtype, accum_dtype, a_transposed, b_transposed, warp_col_tiles, to_global):
    block_row_warps, block_col_warps, warp_row_tiles = 1, 2, 32
    block_m, block_n = warp_row_tiles * block_row_warps, warp_col_tiles * block_col_warps
    chunk = 16 if in_dtype == T.float16 else 32
    emitter = TensorCoreIntrinEmitter(
        a_dtype=in_dtype, b_dtype=in_dtype, accum_dtype=accum_dtype, a_transposed=a_transposed,
        b_transposed=b_transposed, block_row_warps=block_row_warps, block_col_warps=block_col_warps,
        warp_row_tiles=warp_row_tiles, warp_col_tiles=warp_col_tiles, chunk=chunk,
    )  # fmt: skip
    a_shape = (K, M) if a_transposed else (M, K)
    b_shape = (N, K) if b_transposed else (K, N)
    a_tile = (chunk, block_m) if a_transposed else (block_m, chunk)
    b_tile = (block_n, chunk) if b_transposed else (chunk, block_n)
    local_c = emitter.warp_rows * emitter.warp_cols * emitter.local_size_out

    @T.prim_func
    def main(A: T.Tensor(a_shape, in_dtype), B: T.Tensor(b_shape, in_dtype), C: T.Tensor((M, N), accum_dtype)):
        with T.Kernel(T.ceildiv(N, block_n), T.ceildiv(M, block_m), threads=emitter.threads) as (bx, by):
            A_shared = T.alloc_shared(a_tile, in_dtype)
            B_shared = T.alloc_shared(b_tile, in_dtype)
            C_shared = T.alloc_shared((block_m, block_n), accum_dtype)
            A_local = T.alloc_local((emitter.warp_rows * emitter.local_size_a,), in_dtype)
            B_local = T.alloc_local((emitter.warp_cols * emitter.local_size_b,), in_dtype)
            C_local = T.alloc_local((local_c,), accum_dtype)
            T.annotate_layout({A_shared: swizzled(A_shared)})
            T.clear(C_local)
            for ko in T.serial(T.ceildiv(K, chunk)):
                if a_transposed:
                    T.copy(A[ko * chunk, by * block_m], A_shared)
                else:
                    T.copy(A[by * block_m, ko * chunk], A_shared)
                if b_transposed:
                    T.copy(B[bx * block_n, ko * chunk], B_shared)
                else:
                    T.copy(B[ko * chunk, bx * block_n], B_shared)
                for ki in T.serial(chunk // emitter.micro_size_k):
                    emitter.ldmatrix_a(A_local, A_shared, ki)
                    emitter.ldmatrix_b(B_local, B_shared, ki)
                    for i, j in T.grid(emitter.mma_num_inst_m, emitter.mma_num_inst_n):
                        emitter.mma_atom(A_local, B_local, C_local, i, j, ki)
            if to_global:
                emitter.stmatrix(C_local, C, pid_m=by, pid_n=bx)
            else:
                emitter.stmatrix(C_local, C_shared)
                T.copy(C_shared, C[by * block_m, bx * block_n])

    return main


@pytest.mark.parametrize(
    "in_dtype, accum_dtype, a_t, b_t, warp_col_tiles, to_global",
    [
        (T.float16, T.float32, False, True, 16, False),  # TileLang's test: m16n8k16, two n8 halves per atom
        (T.float16, T.float32, True, False, 8, True),  # transposed operands, one n8 atom, C straight to global
        (T.int8, T.int32, False, True, 16, False),  # m16n8k32
    ],
)
def test_mma_atom_gemm(dev, in_dtype, accum_dtype, a_t, b_t, warp_col_tiles, to_global):
    torch_in = getattr(torch, in_dtype)
    if torch_in == torch.int8:
        a = torch.randint(-8, 8, (M, K), dtype=torch.int8, device=dev)
        b = torch.randint(-8, 8, (N, K), dtype=torch.int8, device=dev)
    else:
        a = torch.randn(M, K, dtype=torch_in, device=dev)
        b = torch.randn(N, K, dtype=torch_in, device=dev)
    c = poison((M, N), getattr(torch, accum_dtype), dev)
    kernel = tilelang.compile(atom_gemm(in_dtype, accum_dtype, a_t, b_t, warp_col_tiles, to_global))
    kernel(a.T.contiguous() if a_t else a, b if b_t else b.T.contiguous(), c)
    ref = a.double() @ b.double().T
    assert_close(c, ref, atol=1e-3 if accum_dtype == T.float32 else 0, rtol=1e-3 if accum_dtype == T.float32 else 0)


def test_fragments_hold_tensor_core_layouts(dev):
    """What ldmatrix_a puts in each thread's local array is TileLang's m16n8k16 A fragment."""
    emitter = TensorCoreIntrinEmitter(a_dtype=T.float16, b_dtype=T.float16, accum_dtype=T.float32,
                                      block_row_warps=1, block_col_warps=1, warp_row_tiles=16, warp_col_tiles=16,
                                      chunk=16)  # fmt: skip

    @T.prim_func
    def main(A: T.Tensor((16, 16), "float16"), Out: T.Tensor((32, 8), "float16")):
        with T.Kernel(1, threads=32):
            A_shared = T.alloc_shared((16, 16), "float16")
            A_local = T.alloc_local((8,), "float16")
            T.copy(A, A_shared)
            emitter.ldmatrix_a(A_local, A_shared, 0)
            tx = T.get_thread_binding()
            for e in T.serial(8):
                Out[tx, e] = A_local[e]

    a = torch.randn(16, 16, dtype=torch.float16, device=dev)
    out = poison((32, 8), torch.float16, dev)
    tilelang.compile(main)(a, out)
    lane = torch.arange(32).view(32, 1)
    e = torch.arange(8).view(1, 8)
    rows = lane // 4 + 8 * (e % 4 // 2)
    cols = (lane % 4) * 2 + e % 2 + 8 * (e // 4)
    assert torch.equal(out.cpu(), a.cpu()[rows, cols])


def test_emitter_outside_a_kernel_and_unsupported_forms():
    emitter = TensorCoreIntrinEmitter(block_row_warps=2, block_col_warps=2, warp_row_tiles=32, warp_col_tiles=32)
    assert (emitter.warp_rows, emitter.warp_cols, emitter.local_size_a, emitter.local_size_out) == (2, 2, 8, 8)
    assert emitter.threads == 128 and emitter.mma_prefix == "m16n8k16"
    with pytest.raises(T.KernelOnlyError):
        emitter.ldmatrix_a(None, None, 0)
    with pytest.raises(NotImplementedError, match="fp64"):
        TensorCoreIntrinEmitter(a_dtype=T.float64, b_dtype=T.float64, accum_dtype=T.float64, warp_row_tiles=16)
    with pytest.raises(ValueError, match="multiple of 16"):
        TensorCoreIntrinEmitter(warp_row_tiles=24)


def test_get_swizzle_layout_matches_tilelangs_table():
    # 64-byte rows of float16: 16-byte vectors XOR-permuted by (row % 8) // 2
    assert [get_swizzle_layout(r, 8, 32, "float16")[2] for r in range(8)] == [8, 8, 0, 0, 24, 24, 16, 16]
    # 128-byte rows: column 70 is vector 8 (second 8-vector tile, vector 0), element 6; row 9 XORs it with 1
    assert get_swizzle_layout(9, 70, 64, "float16") == (1, 9, 1 * 8 + 6)


# ----------------------------------------------------------------------------- WGMMA atoms
WM, WN, WK = 100, 40, 50  # inside one 128 x 48 block; K over two 32-wide chunks, not a multiple


def wgmma_atom_gemm(b_transposed: bool, a_in_registers: bool):
    from tile2triton.cuda.language.intrinsics import WGMMATensorCoreIntrinEmitter

    chunk = 32
    emi = WGMMATensorCoreIntrinEmitter(
        a_dtype=T.float16, b_dtype=T.float16, accum_dtype=T.float32, b_transposed=b_transposed,
        block_row_warps=8, block_col_warps=1, warp_row_tiles=16, warp_col_tiles=48, chunk=chunk,
    )  # fmt: skip  (two warpgroups along M, one n48 instruction)
    block_m, block_n = 128, 48
    b_shape = (WN, WK) if b_transposed else (WK, WN)
    b_tile = (block_n, chunk) if b_transposed else (chunk, block_n)

    @T.prim_func
    def main(A: T.Tensor((WM, WK), "float16"), B: T.Tensor(b_shape, "float16"), C: T.Tensor((WM, WN), "float32")):
        with T.Kernel(1, threads=256):
            A_shared = T.alloc_shared((block_m, chunk), "float16")
            A_regs = T.alloc_fragment((block_m, chunk), "float16")
            B_shared = T.alloc_shared(b_tile, "float16")
            C_local = T.alloc_fragment((block_m, block_n), "float32")
            desc_a = T.alloc_wgmma_desc()
            desc_b = T.alloc_wgmma_desc()
            for ko in T.serial(T.ceildiv(WK, chunk)):
                T.copy(A[0, ko * chunk], A_shared)
                if b_transposed:
                    T.copy(B[0, ko * chunk], B_shared)
                else:
                    T.copy(B[ko * chunk, 0], B_shared)
                emi.init_wgmma_a_desc(desc_a, A_shared, emi.compute_wgmma_a_desc_params(A_shared))
                emi.init_wgmma_b_desc(desc_b, B_shared, emi.compute_wgmma_b_desc_params(B_shared))
                emi.wgmma_fence_c(C_local)
                emi.wgmma_arrive()
                if a_in_registers:
                    T.copy(A_shared, A_regs)
                for n in T.unroll(emi.wgmma_num_inst_n):
                    for m in T.unroll(emi.wgmma_num_inst_m):
                        for ki in T.unroll(emi.wgmma_num_k_atoms):
                            if a_in_registers:
                                emi.wgmma_rs_atom(A_regs, desc_b, C_local, m, n, ki, None, ko == 0)
                            else:
                                emi.wgmma_ss_atom(desc_a, desc_b, C_local, m, n, ki, None, None, ko == 0)
                emi.wgmma_commit()
                emi.wgmma_wait(0)
            T.copy(C_local, C[0:WM, 0:WN])

    return main, emi


@pytest.mark.parametrize("b_transposed, a_in_registers", [(False, False), (True, False), (False, True)])
def test_wgmma_atom_gemm(dev, b_transposed, a_in_registers):
    main, emi = wgmma_atom_gemm(b_transposed, a_in_registers)
    assert (emi.wgmma_inst_n, emi.wgmma_num_inst_m, emi.wgmma_num_inst_n, emi.wgmma_num_k_atoms) == (48, 1, 1, 2)
    a = torch.randn(WM, WK, dtype=torch.float16, device=dev)
    b = torch.randn(WN, WK, dtype=torch.float16, device=dev)
    c = poison((WM, WN), torch.float32, dev)
    tilelang.compile(main)(a, b if b_transposed else b.T.contiguous(), c)
    assert_close(c, a.double() @ b.double().T, atol=1e-3, rtol=1e-3)
