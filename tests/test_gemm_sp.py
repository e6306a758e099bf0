"""T.gemm_sp (2:4 structured-sparse GEMM) against the dense GEMM of the decompressed matrix, and the
host-side 2:4 helpers of tilelang.utils.sparse."""

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.cuda.intrinsics.sparse_layout import get_e_factor
from tile2triton.errors import TileLangCompileError
from tile2triton.utils.sparse import compress, decompress, randint_semi_sparse, randn_semi_sparse


def sparse_matmul(M, N, K, block_M, block_N, block_K, trans_A, trans_B, in_dtype, accum_dtype, meta_dtype, a_in_regs=False,
                  ring=False):  # fmt: skip
    """ring: A_sparse, E and B as two-slot rings in shared memory, each step's tiles one stage of them
    (``A_shared[k % 2, :, :]``), as a hand-pipelined kernel writes them."""
    e_factor = get_e_factor(in_dtype, meta_dtype)
    A_shape = (K // 2, M) if trans_A else (M, K // 2)
    E_shape = (K // e_factor, M) if trans_A else (M, K // e_factor)
    B_shape = (N, K) if trans_B else (K, N)
    A_tile = (block_K // 2, block_M) if trans_A else (block_M, block_K // 2)
    E_tile = (block_K // e_factor, block_M) if trans_A else (block_M, block_K // e_factor)
    B_tile = (block_N, block_K) if trans_B else (block_K, block_N)
    A_ring_shape, E_ring_shape, B_ring_shape = ((2, *tile) for tile in (A_tile, E_tile, B_tile))

    @T.prim_func
    def main(A_sparse: T.Tensor(A_shape, in_dtype), E: T.Tensor(E_shape, meta_dtype), B: T.Tensor(B_shape, in_dtype),
             C: T.Tensor((M, N), accum_dtype)):  # fmt: skip
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared(A_tile, in_dtype)
            A_frag = T.alloc_fragment(A_tile, in_dtype)
            E_shared = T.alloc_shared(E_tile, meta_dtype)
            B_shared = T.alloc_shared(B_tile, in_dtype)
            C_frag = T.alloc_fragment((block_M, block_N), accum_dtype)
            A_ring = T.alloc_shared(A_ring_shape, in_dtype)
            E_ring = T.alloc_shared(E_ring_shape, meta_dtype)
            B_ring = T.alloc_shared(B_ring_shape, in_dtype)
            T.clear(C_frag)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                if trans_A:
                    T.copy(E[k * block_K // e_factor, by * block_M], E_shared)
                    T.copy(A_sparse[k * block_K // 2, by * block_M], A_shared)
                else:
                    T.copy(E[by * block_M, k * block_K // e_factor], E_shared)
                    T.copy(A_sparse[by * block_M, k * block_K // 2], A_shared)
                if trans_B:
                    T.copy(B[bx * block_N, k * block_K], B_shared)
                else:
                    T.copy(B[k * block_K, bx * block_N], B_shared)
                if ring:
                    T.copy(A_shared, A_ring[k % 2, :, :])
                    T.copy(E_shared, E_ring[k % 2, :, :])
                    T.copy(B_shared, B_ring[k % 2, :, :])
                    T.gemm_sp(A_ring[k % 2, :, :], E_ring[k % 2, :, :], B_ring[k % 2, :, :], C_frag, trans_A, trans_A, trans_B)
                elif a_in_regs:
                    T.copy(A_shared, A_frag)
                    T.gemm_sp(A_frag, E_shared, B_shared, C_frag, trans_A, trans_A, trans_B)
                else:
                    T.gemm_sp(A_shared, E_shared, B_shared, C_frag, trans_A, trans_A, trans_B)
            T.copy(C_frag, C[by * block_M, bx * block_N])

    return main


def run_sparse_matmul(dev, M, N, K, block_M, block_N, block_K, trans_A, trans_B, in_dtype, accum_dtype, meta_dtype, **kw):
    kernel = tilelang.compile(sparse_matmul(M, N, K, block_M, block_N, block_K, trans_A, trans_B, in_dtype, accum_dtype,
                                            meta_dtype, **kw))  # fmt: skip
    torch_in = getattr(torch, in_dtype)
    if torch_in == torch.int8:
        A = randint_semi_sparse(M, K, -8, 8, dtype=torch_in, device=dev)
        B = torch.randint(-8, 8, (N, K) if trans_B else (K, N), dtype=torch_in, device=dev)
    else:
        A = randn_semi_sparse(M, K, dtype=torch_in, device=dev)
        B = torch.randn((N, K) if trans_B else (K, N), device=dev).to(torch_in)
    A_sparse, E = compress(A, meta_dtype=getattr(torch, meta_dtype))
    assert torch.equal(decompress(A_sparse, E).float(), A.float())
    if trans_A:
        A_sparse, E = A_sparse.t().contiguous(), E.t().contiguous()
    C = poison((M, N), getattr(torch, accum_dtype), dev)
    kernel(A_sparse, E, B, C)
    ref = A.double().cpu() @ (B.t() if trans_B else B).double().cpu()
    assert_close(C, ref, atol=1e-2, rtol=1e-2)


# sizes: K a multiple of the metadata's e_factor, never of block_K; M, N not multiples of the tile
@pytest.mark.parametrize(
    "M, N, K, block_M, block_N, block_K, trans_A, trans_B, in_dtype, accum_dtype, meta_dtype",
    [
        (50, 70, 80, 32, 32, 32, False, False, "float16", "float32", "int16"),
        (50, 70, 80, 32, 32, 32, False, True, "float16", "float32", "int16"),
        (44, 36, 96, 16, 32, 64, True, False, "float16", "float32", "int16"),
        (44, 36, 96, 16, 32, 64, True, True, "bfloat16", "float32", "int16"),
        (40, 24, 48, 16, 16, 32, False, True, "float16", "float32", "int8"),
        (40, 24, 56, 16, 16, 16, False, False, "float32", "float32", "int16"),
        (40, 24, 56, 16, 16, 16, False, True, "float32", "float32", "int8"),
        (36, 20, 96, 16, 16, 64, False, True, "int8", "int32", "int32"),
        (36, 20, 80, 16, 16, 32, False, False, "int8", "int32", "int16"),
    ],
)
def test_gemm_sp(dev, M, N, K, block_M, block_N, block_K, trans_A, trans_B, in_dtype, accum_dtype, meta_dtype):
    run_sparse_matmul(dev, M, N, K, block_M, block_N, block_K, trans_A, trans_B, in_dtype, accum_dtype, meta_dtype)


def test_gemm_sp_a_in_registers(dev):
    run_sparse_matmul(dev, 50, 40, 80, 32, 16, 32, False, True, "float16", "float32", "int16", a_in_regs=True)


@pytest.mark.parametrize("trans_A, trans_B", [(False, True), (True, False)])
def test_gemm_sp_operands_as_stages_of_a_ring(dev, trans_A, trans_B):
    """A_sparse, E and B given as one stage of a shared ring each: staged as 2-D tiles, as T.gemm's are."""
    run_sparse_matmul(dev, 44, 36, 96, 16, 32, 32, trans_A, trans_B, "float16", "float32", "int16", ring=True)


def test_gemm_sp_every_position_pair(dev):
    """Each of the 6 pairs of kept positions (and 1 or 0 nonzeros, which compress pads with zeros)
    lands on the right column of B: B is the identity, so C is the dense A itself."""
    pairs = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3), (2,), (3,), ()]
    M, K = 18, 48
    A = torch.zeros(M, K)
    for r in range(M):
        for g in range(K // 4):
            for p in pairs[(r + g) % len(pairs)]:
                A[r, 4 * g + p] = torch.rand(()).item() + 0.5
    A = A.half().to(dev)
    A_sparse, E = compress(A)
    kernel = tilelang.compile(sparse_matmul(M, K, K, 16, 16, 32, False, False, "float16", "float32", "int16"))
    C = poison((M, K), torch.float32, dev)
    kernel(A_sparse, E, torch.eye(K, device=dev).half(), C)
    assert_close(C, A.float(), atol=0, rtol=0)


def test_compress_format():
    """One group by hand: positions 1 and 3 kept -> code 0b1101 in the lowest nibble."""
    A = torch.zeros(1, 16, dtype=torch.float16)
    A[0, 1], A[0, 3], A[0, 4] = 2.0, 3.0, 5.0
    A_sparse, E = compress(A, meta_dtype=torch.int16)
    assert A_sparse[0, :4].tolist() == [2.0, 3.0, 5.0, 0.0]
    # group 0: (1, 3); group 1: one nonzero at 0 -> (0, 1); groups 2, 3: none -> (0, 1)
    assert E.item() == (0b1101 | 0b0100 << 4 | 0b0100 << 8 | 0b0100 << 12)
    A32 = torch.tensor([[0.0, 7.0, 6.0, 0.0, 0.0, 0.0, 0.0, 0.0]])
    A32_sparse, E32 = compress(A32, meta_dtype=torch.int8)
    assert A32_sparse.tolist() == [[7.0, 6.0, 0.0, 0.0]]
    assert E32.view(torch.uint8).tolist() == [[0b0100_1110, 0b0100_0100]]


def test_compress_rejects_dense_groups():
    with pytest.raises(ValueError, match="more than 2 nonzeros"):
        compress(torch.ones(4, 16, dtype=torch.float16))


def test_gemm_sp_metadata_shape_mismatch_is_reported():
    @T.prim_func
    def bad(A_sparse: T.Tensor((32, 16), "float16"), E: T.Tensor((32, 4), "int16"), B: T.Tensor((32, 32), "float16"),
            C: T.Tensor((32, 32), "float32")):  # fmt: skip
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((32, 16), "float16")
            E_s = T.alloc_shared((32, 4), "int16")  # 32 K columns need 2 int16 per row, not 4
            B_s = T.alloc_shared((32, 32), "float16")
            C_f = T.alloc_fragment((32, 32), "float32")
            T.copy(A_sparse, A_s)
            T.copy(E, E_s)
            T.copy(B, B_s)
            T.gemm_sp(A_s, E_s, B_s, C_f, clear_accum=True)
            T.copy(C_f, C)

    with pytest.raises(TileLangCompileError, match=r"E has shape \(32, 4\).*needs \(32, 2\)") as info:
        tilelang.compile(bad)(torch.zeros(32, 16).half(), torch.zeros(32, 4, dtype=torch.int16),
                              torch.zeros(32, 32).half(), torch.zeros(32, 32))  # fmt: skip
    assert "test_gemm_sp.py" in str(info.value)


def metadata_annotated(M, N, K, on_global):
    from tile2triton.layout import make_cutlass_metadata_layout

    block = 32

    @T.prim_func
    def main(A_sparse: T.Tensor((M, K // 2), "float16"), E: T.Tensor((M, K // 16), "int16"),
             B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):  # fmt: skip
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=128) as (bx, by):
            A_s = T.alloc_shared((block, block // 2), "float16")
            E_s = T.alloc_shared((block, block // 16), "int16")
            B_s = T.alloc_shared((block, block), "float16")
            C_f = T.alloc_fragment((block, block), "float32")
            if on_global:
                T.annotate_layout({E: make_cutlass_metadata_layout(E, mma_dtype="float16", arch="8.0")})
            else:
                T.annotate_layout({E_s: make_cutlass_metadata_layout(E_s, mma_dtype="float16", arch="8.0")})
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, block), num_stages=1):
                T.copy(A_sparse[by * block, k * block // 2], A_s)
                T.copy(E[by * block, k * block // 16], E_s)
                T.copy(B[k * block, bx * block], B_s)
                T.gemm_sp(A_s, E_s, B_s, C_f)
            T.copy(C_f, C[by * block, bx * block])

    return main


def test_metadata_layout_on_shared_is_a_placement_hint(dev):
    M, N, K = 40, 36, 80
    A = randn_semi_sparse(M, K, dtype=torch.float16, device=dev)
    B = torch.randn(K, N, device=dev).half()
    A_sparse, E = compress(A)
    C = poison((M, N), torch.float32, dev)
    tilelang.compile(metadata_annotated(M, N, K, on_global=False))(A_sparse, E, B, C)
    assert_close(C, A.double().cpu() @ B.double().cpu(), atol=1e-2, rtol=1e-2)


def test_metadata_layout_on_the_global_tensor_is_refused():
    with pytest.raises(TileLangCompileError, match="metadata layout on the global tensor 'E'") as info:
        tilelang.compile(metadata_annotated(32, 32, 32, on_global=True))(
            torch.zeros(32, 16).half(), torch.zeros(32, 2, dtype=torch.int16), torch.zeros(32, 32).half(), torch.zeros(32, 32)
        )
    assert "test_gemm_sp.py" in str(info.value)


def test_gemm_sp_reference_executor_agrees():
    from tile2triton.oracle import reference

    M, N, K = 20, 24, 48
    A = randn_semi_sparse(M, K, dtype=torch.float16, device="cpu")
    B = torch.randn(N, K).half()
    A_sparse, E = compress(A, meta_dtype=torch.int8)
    kernel = tilelang.compile(sparse_matmul(M, N, K, 16, 16, 32, False, True, "float16", "float32", "int8"), out_idx=[3])
    expected = A.double() @ B.double().t()
    assert_close(reference.run(kernel, A_sparse, E, B), expected, atol=1e-2, rtol=1e-2)
    assert_close(kernel(A_sparse, E, B), expected, atol=1e-2, rtol=1e-2)


def test_compress_refuses_the_older_cutlass_signature():
    with pytest.raises(TypeError, match="CUTLASS's interleaved order"):
        compress(randn_semi_sparse(16, 32, device="cpu"), transposed=False, arch="8.0")


def test_decompression_has_no_small_gather():
    """Triton 3.6's gather layout pass asserts (``isWarpLocal``, PassManager::run failed on the H200)
    on a small ``tl.gather`` with a long index, which is what the decompression's read of A_sparse
    was: the register path selects with a one-hot while that is small (codegen/registers.py
    ``gather_read``).  Compiling the forced-gather source with Triton 3.6 offline reproduces it."""
    kernel = tilelang.compile(sparse_matmul(50, 70, 80, 32, 32, 32, False, False, "float16", "float32", "int16"))
    assert "tl.gather" not in kernel.get_kernel_source(interpret=False)


def computed_a_gemm(M, N, K, bm, bn, bk, stages):
    """A gemm whose A operand the loop computes in registers from a tile it loads, as T.gemm_sp does."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            A_f = T.alloc_fragment((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_f = T.alloc_fragment((bm, bn), "float")
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, ko * bk], A_s)
                for i, k in T.Parallel(bm, bk):
                    A_f[i, k] = A_s[i, k] * 2
                T.copy(B[ko * bk, bx * bn], B_s)
                T.gemm(A_f, B_s, C_f)
            T.copy(C_f, C[by * bm, bx * bn])

    return main


def test_computed_a_gemm_with_pointer_loads_takes_at_most_two_stages(dev):
    """codegen/gemm_kinds.register_a_race: on an H100 (Triton 3.6) gemm_sp's 128 x 128 x 64 config, its
    metadata tile loaded by pointers, got 2.6-3.0% of its outputs wrong at 3 stages (the launch heuristic's
    choice) and none at 2 (gpu_logs/2026-12-06_s42_h100/gemm_sp_race.md)."""
    # K = 120 and 200: rows of 240 / 400 bytes are no multiple of 16, so the tiles come by pointer loads
    M, N, K = 70, 50, 120
    kernel = tilelang.jit(out_idx=[])(computed_a_gemm)(M, N, K, 64, 64, 32, 3)
    hopper = kernel.lowered_for("sm_90").source
    assert "num_stages=2" in hopper and "num_stages=3" not in hopper, hopper
    assert "num_stages=3" in kernel.lowered_for("sm_80").source  # no wgmma there
    torch.manual_seed(3)
    a, b = torch.randn(M, K, device=dev).half(), torch.randn(K, N, device=dev).half()
    out = poison((M, N), device=dev)
    kernel(a, b, out)
    assert_close(out, (a.cpu().double() * 2) @ b.cpu().double(), atol=1e-2, rtol=1e-3)


def test_gemm_sp_with_pointer_loaded_metadata_takes_at_most_two_stages():
    # E's 64 x 4 int16 tile (8-byte rows) is below TMA's 16 bytes: it comes by pointer loads
    kernel = tilelang.compile(sparse_matmul(130, 70, 192, 64, 64, 64, False, False, "float16", "float32", "int16"))
    hopper = kernel.lowered_for("sm_90").source
    assert "num_stages=2" in hopper and "num_stages=3" not in hopper, hopper
