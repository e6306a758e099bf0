"""Tensor-descriptor (TMA) loads of global boxes copied inside loops.

On the GPU they are on by default on Hopper; here the interpreter runs them with
TILE2TRITON_TENSOR_DESCRIPTORS=1 (Triton's interpreter implements descriptors, including the
zero fill of box parts outside the tensor).
"""

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


@pytest.fixture(autouse=True)
def descriptors_on(monkeypatch, request):
    # these tests' loops are short: descriptors for them whatever the TMA switches' defaults are
    monkeypatch.setenv("TILE2TRITON_TMA_MIN_TRIPS", "0")
    # descriptors in plain loops too (their loads are what these tests read), not only pipelined ones
    monkeypatch.setenv("TILE2TRITON_TMA_PIPELINED_ONLY", "0")
    monkeypatch.setenv("TILE2TRITON_TMA_VECTORS", "1")
    monkeypatch.setenv("TILE2TRITON_HOST_DESCRIPTORS", "0")  # descriptors built in the kernel, as read below
    if "dev" in request.fixturenames and request.getfixturevalue("dev") == "cpu":
        monkeypatch.setenv("TILE2TRITON_TENSOR_DESCRIPTORS", "1")


def gemm(M, N, K, bM, bN, bK, dtype="float16", stages=2):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            A_s = T.alloc_shared((bM, bK), dtype)
            B_s = T.alloc_shared((bK, bN), dtype)
            C_l = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=stages):
                T.copy(A[by * bM, k * bK], A_s)
                T.copy(B[k * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * bM, bx * bN])

    return main


def _uses_descriptors(kernel, dev) -> bool:
    return "tl.make_tensor_descriptor" in kernel.get_kernel_source(interpret=dev == "cpu")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_gemm_tails_zero_filled(dev, dtype):
    M, N, K = 72, 88, 104  # no multiple of the 32-wide tiles: the last boxes hang over every edge
    kernel = tilelang.compile(gemm(M, N, K, 32, 32, 32, dtype), out_idx=[-1])
    tdt = getattr(torch, dtype)
    a = torch.randn(M, K, device=dev).to(tdt)
    b = torch.randn(K, N, device=dev).to(tdt)
    c = kernel(a, b)
    assert _uses_descriptors(kernel, dev)
    tol = 1e-2 if dtype == "float32" else 5e-2  # fp32 dot may run as tf32 on the GPU
    torch.testing.assert_close(c.double(), a.double() @ b.double(), atol=tol, rtol=tol)


def block_sum(B, H, S, D, BN, shift):
    """Sum over a 4-D tensor's sequence blocks, each box starting ``shift`` rows early (negative
    first start), through a fp32 shared tile (a copy that casts)."""

    @T.prim_func
    def main(X: T.Tensor((B, H, S, D), "float16"), Out: T.Tensor((B, H, BN, D), "float32")):
        with T.Kernel(H, B, threads=128) as (by, bz):
            tile = T.alloc_shared((BN, D), "float32")
            acc = T.alloc_fragment((BN, D), "float32")
            T.clear(acc)
            for k in T.serial(T.ceildiv(S + shift, BN)):
                T.copy(X[bz, by, k * BN - shift : (k + 1) * BN - shift, :], tile)
                for i, j in T.Parallel(BN, D):
                    acc[i, j] += tile[i, j]
            T.copy(acc, Out[bz, by, :, :])

    return main


def test_4d_boxes_with_unit_dims_and_negative_starts(dev):
    B, H, S, D, BN, shift = 2, 3, 50, 16, 16, 5
    kernel = tilelang.compile(block_sum(B, H, S, D, BN, shift), out_idx=[-1])
    x = torch.randn(B, H, S, D, device=dev).half()
    out = kernel(x)
    assert _uses_descriptors(kernel, dev)
    blocks = -(-(S + shift) // BN)
    padded = torch.zeros(B, H, blocks * BN, D, dtype=torch.float64, device=dev)
    padded[:, :, shift : shift + S] = x.double()
    ref = padded.view(B, H, blocks, BN, D).sum(2)
    torch.testing.assert_close(out.double(), ref, atol=1e-3, rtol=1e-3)


def test_misaligned_base_runs_the_pointer_variant(dev):
    M, N, K = 40, 48, 64
    kernel = tilelang.compile(gemm(M, N, K, 16, 16, 16), out_idx=[-1])
    storage = torch.randn(M * K + 1, device=dev).half()
    a = storage[1:].view(M, K)  # contiguous, but 2 bytes past a 16-byte boundary
    assert a.data_ptr() % 16
    b = torch.randn(K, N, device=dev).half()
    c = kernel(a, b)
    torch.testing.assert_close(c.double(), a.double() @ b.double(), atol=5e-2, rtol=5e-2)
    aligned = a.clone()
    torch.testing.assert_close(kernel(aligned, b), c)


def test_unaligned_strides_keep_the_pointer_path(dev):
    M, N, K = 40, 48, 100  # fp16 rows of 200 bytes: not a multiple of 16, no descriptor for A
    kernel = tilelang.compile(gemm(M, N, K, 16, 16, 16), out_idx=[-1])
    a = torch.randn(M, K, device=dev).half()
    b = torch.randn(K, N, device=dev).half()
    c = kernel(a, b)
    source = kernel.get_kernel_source(interpret=dev == "cpu")
    assert "A_desc" not in source
    assert ("B_desc" in source) == _uses_descriptors(kernel, dev)
    torch.testing.assert_close(c.double(), a.double() @ b.double(), atol=5e-2, rtol=5e-2)


def test_generated_source(monkeypatch):
    monkeypatch.setenv("TILE2TRITON_TENSOR_DESCRIPTORS", "1")
    kernel = tilelang.compile(gemm(72, 88, 104, 32, 32, 32), out_idx=[-1])
    source = kernel.get_kernel_source(interpret=True)
    header, loop = source.split("for k in tl.range")
    # created once per program, before the loop; loaded per iteration at the box's start
    assert "A_desc = tl.make_tensor_descriptor(A, shape=[72, 104], strides=[104, 1], block_shape=[32, 32])" in header
    assert "A_s = A_desc.load([by * 32, k * 32])" in loop
    assert "B_s = B_desc.load([k * 32, bx * 32])" in loop
    assert "tl.store(C + offs" in loop  # the epilogue (after the loop) stays a masked pointer store


def test_disable_tma_keeps_pointer_loads(monkeypatch, dev):
    """``T.copy(..., disable_tma=True)``: that copy loads through pointers, the others still by descriptor."""
    monkeypatch.setenv("TILE2TRITON_TENSOR_DESCRIPTORS", "1")
    M, N, K, b = 72, 88, 104, 32

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, b), T.ceildiv(M, b), threads=128) as (bx, by):
            A_s = T.alloc_shared((b, b), "float16")
            B_s = T.alloc_shared((b, b), "float16")
            C_l = T.alloc_fragment((b, b), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, b), num_stages=2):
                T.copy(A[by * b, k * b], A_s, disable_tma=True)
                T.copy(B[k * b, bx * b], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * b, bx * b])

    kernel = tilelang.compile(main, out_idx=[-1])
    source = kernel.get_kernel_source(interpret=True)
    assert "A_desc" not in source and "A_s = tl.load(A + " in source
    assert "B_s = B_desc.load(" in source
    a = torch.randn(M, K, dtype=torch.float16, device=dev)
    w = torch.randn(K, N, dtype=torch.float16, device=dev)
    torch.testing.assert_close(kernel(a, w), a.double().matmul(w.double()).float(), rtol=2e-3, atol=2e-3)


def test_off_by_default_in_the_interpreter(monkeypatch):
    monkeypatch.delenv("TILE2TRITON_TENSOR_DESCRIPTORS", raising=False)
    kernel = tilelang.compile(gemm(72, 88, 104, 32, 32, 32), out_idx=[-1])
    assert "make_tensor_descriptor" not in kernel.get_kernel_source(interpret=True)


def accumulate_in_place(M, N, BM, dtype):
    """Reads boxes of a tensor the kernel also writes, and of a bool tensor: neither through TMA (a
    TMA read after a store needs a proxy fence; bool has no descriptor element type)."""

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Keep: T.Tensor((M, N), "bool"), Out: T.Tensor((BM, N), dtype)):
        with T.Kernel(1, threads=128) as bx:
            tile = T.alloc_shared((BM, N), dtype)
            keep = T.alloc_shared((BM, N), "bool")
            acc = T.alloc_fragment((BM, N), "float32")
            T.clear(acc)
            for k in T.serial(T.ceildiv(M, BM)):
                T.copy(X[k * BM, 0], tile)
                T.copy(Keep[k * BM, 0], keep)
                for i, j in T.Parallel(BM, N):
                    acc[i, j] += T.if_then_else(keep[i, j], T.cast(tile[i, j], "float32"), 0.0)
                T.copy(tile, X[k * BM, 0])
            T.copy(acc, Out[0, 0])

    return main


def test_no_descriptors_for_written_or_bool_tensors(dev):
    M, N, BM = 40, 32, 16
    kernel = tilelang.compile(accumulate_in_place(M, N, BM, "float16"), out_idx=[-1])
    x = torch.randn(M, N, device=dev).half()
    keep = torch.rand(M, N, device=dev) > 0.5
    out = kernel(x, keep)
    source = kernel.get_kernel_source(interpret=dev == "cpu")
    assert "X_desc" not in source and "Keep_desc" not in source
    padded = torch.zeros(48, N, dtype=torch.float64, device=dev)
    padded[:M] = torch.where(keep, x.double(), 0)
    torch.testing.assert_close(out.double(), padded.view(3, BM, N).sum(0), atol=1e-2, rtol=1e-2)


def row_scaled_gemm(M, N, K, bM, bN, bK, dtype="float16"):
    """C = (A @ B) - rowstat[None, :] per column block: a 2-D box and a one-axis box (a row
    statistic, as attention backward's lse and Delta) copied in the same pipelined loop."""

    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        S: T.Tensor((K,), "float32"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            A_s = T.alloc_shared((bM, bK), dtype)
            B_s = T.alloc_shared((bK, bN), dtype)
            s_s = T.alloc_shared((bK,), "float32")
            C_l = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                T.copy(A[by * bM, k * bK], A_s)
                T.copy(B[k * bK, bx * bN], B_s)
                T.copy(S[k * bK], s_s)
                T.gemm(A_s, B_s, C_l)
                for i, j in T.Parallel(bM, bN):
                    C_l[i, j] -= s_s[j % bK]
            T.copy(C_l, C[by * bM, bx * bN])

    return main


@pytest.mark.parametrize(
    "env, descs",
    [
        ({}, {"A_desc", "B_desc", "S_desc"}),
        ({"TILE2TRITON_TMA_VECTORS": "0"}, {"A_desc", "B_desc"}),  # the one-axis box through pointers
        ({"TILE2TRITON_TMA_MIN_TRIPS": "4"}, {"A_desc", "B_desc", "S_desc"}),  # 4 iterations: enough
        ({"TILE2TRITON_TMA_MIN_TRIPS": "5"}, set()),  # 4 iterations: fewer than asked, all through pointers
    ],
)
def test_tma_vectors_and_min_trips(monkeypatch, dev, env, descs):
    M, N, K, bM, bN, bK = 72, 40, 128, 32, 32, 32  # 4 iterations of the K loop
    # explicit values, whatever settings' defaults are
    for name, value in {"TILE2TRITON_TMA_VECTORS": "1", "TILE2TRITON_TMA_MIN_TRIPS": "0", **env}.items():
        monkeypatch.setenv(name, value)
    kernel = tilelang.compile(row_scaled_gemm(M, N, K, bM, bN, bK), out_idx=[-1])
    a = torch.randn(M, K, device=dev).half()
    b = torch.randn(K, N, device=dev).half()
    s = torch.randn(K, device=dev)
    c = kernel(a, b, s)
    source = kernel.get_kernel_source(interpret=dev == "cpu")
    if _uses_descriptors(kernel, dev) or not descs:
        assert {d for d in ("A_desc", "B_desc", "S_desc") if f"{d} = tl.make_tensor_descriptor" in source} == descs
    ref = a.double() @ b.double()
    # column j of every K block subtracts s[k * bK + j % bK]: bN == bK here
    ref = ref - s.double().view(K // bK, bK).sum(0)[torch.arange(N, device=dev) % bK][None, :]
    torch.testing.assert_close(c.double(), ref, atol=5e-2, rtol=5e-2)


@pytest.mark.parametrize("shift", [0, 1])  # 1: A's base 2 bytes past a 16-byte boundary, the pointer variant
def test_host_descriptors(monkeypatch, dev, shift):
    """TILE2TRITON_HOST_DESCRIPTORS=1: the kernel takes its descriptors as arguments, made per call
    from the tensors passed (the 4-D boxes with unit dims and out-of-bounds starts of block_sum,
    a gemm beside a one-axis box); the second call goes through the generated launcher."""
    monkeypatch.setenv("TILE2TRITON_HOST_DESCRIPTORS", "1")
    B, H, S, D, BN = 2, 3, 50, 16, 16
    kernel = tilelang.compile(block_sum(B, H, S, D, BN, 5), out_idx=[-1])
    x = torch.randn(B, H, S, D, device=dev).half()
    padded = torch.zeros(B, H, 4 * BN, D, dtype=torch.float64, device=dev)
    padded[:, :, 5 : 5 + S] = x.double()
    for _ in range(2):
        torch.testing.assert_close(kernel(x).double(), padded.view(B, H, 4, BN, D).sum(2), atol=1e-3, rtol=1e-3)
    M, N, K = 72, 40, 128
    gemm_kernel = tilelang.compile(row_scaled_gemm(M, N, K, 32, 32, 32), out_idx=[-1])
    storage = torch.randn(M * K + shift, device=dev).half()
    a = storage[shift:].view(M, K)
    b = torch.randn(K, N, device=dev).half()
    s = torch.randn(K, device=dev)
    ref = a.double() @ b.double() - s.double().view(4, 32).sum(0)[torch.arange(N, device=dev) % 32][None, :]
    for _ in range(2):
        torch.testing.assert_close(gemm_kernel(a, b, s).double(), ref, atol=5e-2, rtol=5e-2)
    source = gemm_kernel.get_kernel_source(interpret=dev == "cpu")
    if _uses_descriptors(gemm_kernel, dev) or "A_desc" in source:
        assert "make_tensor_descriptor" not in source
        assert "(A, B, S, C, A_desc, B_desc, S_desc)" in source  # after the kernel's own arguments


def test_host_descriptors_compile_for_sm90(monkeypatch):
    """Offline, no GPU: the parameters' tensordesc types (runtime/target.triton_signature)."""
    from tile2triton.runtime.target import compile_offline

    monkeypatch.setenv("TILE2TRITON_HOST_DESCRIPTORS", "1")
    kernel = tilelang.compile(row_scaled_gemm(72, 40, 128, 32, 32, 32), out_idx=[-1])
    module = kernel.lowered_for("sm_90")
    assert [(n, i, b) for n, i, b in module.launches[0].host_descriptors] == [
        ("A_desc", 0, (32, 32)), ("B_desc", 1, (32, 32)), ("S_desc", 2, (32,))
    ]  # fmt: skip
    (compiled,) = compile_offline(module, "sm_90", registers_too=False)
    assert compiled["bytes"] > 0


def suffix_block_sum(R, C, BR, BC):
    """out[by-th row block] = sum of A's row blocks by .. end: a loop whose start is the block index
    (a causal backward's), so its trip count is known only as a range (1 .. R / BR)."""
    nb = T.ceildiv(R, BR)

    @T.prim_func
    def main(A: T.Tensor((R, C), "float16"), Out: T.Tensor((nb * BR, C), "float32")):
        with T.Kernel(T.ceildiv(C, BC), nb, threads=128) as (bx, by):
            a_s = T.alloc_shared((BR, BC), "float16")
            acc = T.alloc_fragment((BR, BC), "float32")
            T.clear(acc)
            for k in T.Pipelined(by, nb, num_stages=2):
                T.copy(A[k * BR, bx * BC], a_s)
                for i, j in T.Parallel(BR, BC):
                    acc[i, j] += a_s[i, j]
            T.copy(acc, Out[by * BR, bx * BC])

    return main


@pytest.mark.parametrize(
    "env, descs",
    [
        ({"TILE2TRITON_TMA_MIN_TRIPS": "3"}, True),  # at most 3 iterations a block, by the ranges: enough
        ({"TILE2TRITON_TMA_MIN_TRIPS": "4"}, False),  # fewer than asked: through pointers
        ({"TILE2TRITON_TMA_MIN_TRIPS": "4", "TILE2TRITON_TRIP_BOUNDS": "0"}, True),  # unknown: descriptors
    ],
)
def test_min_trips_by_block_ranges(monkeypatch, dev, env, descs):
    R, C, BR, BC = 40, 72, 16, 32  # 3 row blocks (the last one ragged), 3 column blocks
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    kernel = tilelang.compile(suffix_block_sum(R, C, BR, BC), out_idx=[-1])
    a = torch.randn(R, C, device=dev).half()
    out = kernel(a)
    source = kernel.get_kernel_source(interpret=dev == "cpu")
    assert ("A_desc = tl.make_tensor_descriptor" in source) == descs
    padded = torch.zeros(3 * BR, C, dtype=torch.float64, device=dev)
    padded[:R] = a.double()
    blocks = padded.view(3, BR, C)
    ref = torch.cat([blocks[b:].sum(0) for b in range(3)])
    torch.testing.assert_close(out.double(), ref, atol=1e-2, rtol=1e-2)


def gathered_blocks(S, D, BN, count):
    """Vertical-slash attention's slash loop, reduced: per program, ``count`` row blocks of K at
    offsets read from a table (negative and past the end too) copied into one stage of a two-stage
    ring, each stage read back by a gemm with Q."""

    @T.prim_func
    def main(
        Q: T.Tensor((BN, D), "float16"),
        K: T.Tensor((S, D), "float16"),
        Offsets: T.Tensor((3, count), "int32"),
        Out: T.Tensor((3, BN, BN), "float32"),
    ):
        with T.Kernel(3, threads=128) as bx:
            Q_s = T.alloc_shared((BN, D), "float16")
            K_s = T.alloc_shared((2, BN, D), "float16")
            acc = T.alloc_fragment((BN, BN), "float32")
            T.copy(Q, Q_s)
            T.clear(acc)
            for bi in T.serial(count):
                k = Offsets[bx, bi]
                T.copy(K[k : k + BN, :], K_s[bi % 2, :, :])
                T.gemm(Q_s, K_s[bi % 2, :, :], acc, transpose_B=True)
            T.copy(acc, Out[bx, :, :])

    return main


@pytest.mark.parametrize("stages", ["1", "0"])
def test_box_into_one_stage_of_a_ring(monkeypatch, dev, stages):
    """TILE2TRITON_TMA_STAGES: a box copied into ``K_s[bi % 2, :, :]`` (a stage forwarded as a tile)
    loads through a descriptor, with the zero fill of rows outside K; off: through pointers."""
    monkeypatch.setenv("TILE2TRITON_TMA_STAGES", stages)
    S, D, BN, count = 90, 64, 32, 5  # a box dim is a power of two (D); S is not a multiple of BN
    kernel = tilelang.compile(gathered_blocks(S, D, BN, count), out_idx=[-1])
    q = torch.randn(BN, D, device=dev).half()
    k = torch.randn(S, D, device=dev).half()
    offsets = torch.tensor([[0, 7, 58, -9, 33], [70, 1, 45, 2, 64], [-31, 80, 12, 29, 5]], dtype=torch.int32, device=dev)
    out = kernel(q, k, offsets)
    assert _uses_descriptors(kernel, dev) == (stages == "1")
    padded = torch.zeros(S + 2 * BN, D, dtype=torch.float64, device=dev)
    padded[BN : BN + S] = k.double()
    rows = padded[(offsets.long() + BN)[:, :, None] + torch.arange(BN, device=dev)]  # [3, count, BN, D]
    ref = torch.einsum("md,bcnd->bmn", q.double(), rows)
    torch.testing.assert_close(out.double(), ref, atol=5e-2, rtol=5e-2)
