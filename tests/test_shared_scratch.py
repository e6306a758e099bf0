"""Shared memory's universal fallback: shared buffers in a per-program global scratch area, with
``tl.debug_barrier()`` at ``T.sync_threads()`` and between dependent scratch accesses
(tile2triton/codegen/scratch.py).  Chosen where the register path would be too costly or cannot
express an access; forced for every shared buffer by TILE2TRITON_SHARED_SCRATCH=1."""

import importlib.util
import pathlib

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.codegen import scratch as codegen_scratch
from tile2triton.runtime import scratch as runtime_scratch


@pytest.fixture(autouse=True)
def _global_scratch(monkeypatch):
    """These tests are of the scratch area in global memory (the form on AMD and the interpreter, and
    wherever the on-chip one does not serve): the on-chip form has its own, tests/test_on_chip_scratch.py."""
    monkeypatch.setenv("TILE2TRITON_ON_CHIP_SCRATCH", "0")


THREAD_VIEW = pathlib.Path(__file__).with_name("test_thread_view.py")


def poison(shape, dtype=torch.float32, device="cpu"):
    return torch.full(shape, float("nan"), dtype=dtype, device=device)


def code_of(src: str) -> str:
    return "\n".join(line for line in src.splitlines() if not line.strip().startswith("#"))


# ------------------------------------------------------------------------------ forced everywhere
@pytest.fixture
def forced(monkeypatch):
    """test_thread_view.py loaded afresh (new kernel caches) with every shared buffer in scratch."""
    monkeypatch.setenv("TILE2TRITON_SHARED_SCRATCH", "1")
    spec = importlib.util.spec_from_file_location("thread_view_in_scratch", THREAD_VIEW)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "name",
    [
        "test_shared_memory_block_reversal",
        "test_hand_written_tree_reduction",
        "test_neighbour_stencil",
        "test_thread_view_gemv_with_local_accumulators",
        "test_two_dimensional_thread_bindings",
        "test_thread_view_copy_is_one_masked_tile",
        "test_while_loop",
    ],
)
def test_thread_view_tests_with_scratch_forced(dev, forced, name):
    getattr(forced, name)(dev)


def test_forced_scratch_is_used(forced):
    for kernel in (forced.shared_reverse(384, 128), forced.tree_sum(5, 300, 128), forced.stencil(200, 64)):
        code = code_of(kernel.get_kernel_source(interpret=False))
        assert "def main_kernel(A, " in code and ", scratch_ptr):" in code
        assert "S = scratch.to(tl.pointer_type(tl.float32), bitcast=True)" in code
        assert "tl.store(S + " in code and "tl.load(S + " in code and "tl.debug_barrier()" in code
    # no shared buffer: nothing changes
    assert "scratch_ptr" not in forced.thread_gemv(150, 70, 64, 4).get_kernel_source(interpret=False)


# ------------------------------------------------------------------------------ chosen per buffer
@pytest.fixture
def automatic(monkeypatch):
    """The fallback as chosen per buffer (even when the suite runs with TILE2TRITON_SHARED_SCRATCH=1)."""
    monkeypatch.delenv("TILE2TRITON_SHARED_SCRATCH", raising=False)


@tilelang.jit
def scrambled_transpose(M, N, threads, BLOCK):
    """C = A^T through a (BLOCK, BLOCK) shared tile, each thread writing and reading elements at
    irregular positions in both dims (every element exactly once per phase)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((N, M), "float32")):
        with T.Kernel(T.ceildiv(N, BLOCK), T.ceildiv(M, BLOCK), threads=threads) as (bx, by):
            S = T.alloc_shared((BLOCK, BLOCK), "float32")
            tx = T.get_thread_binding(0)
            for k in T.serial(BLOCK * BLOCK // threads):
                e = k * threads + tx
                r = e // BLOCK
                c = ((e % BLOCK) * 7 + r) % BLOCK  # a permutation of each row
                S[r, c] = A[by * BLOCK + r, bx * BLOCK + c]
            T.sync_threads()
            for k in T.serial(BLOCK * BLOCK // threads):
                e = k * threads + tx
                p = e // BLOCK
                q = ((e % BLOCK) * 5 + 3) % BLOCK
                if bx * BLOCK + p < N and by * BLOCK + q < M:
                    C[bx * BLOCK + p, by * BLOCK + q] = S[q, p]

    return main


@pytest.mark.parametrize("vectorize", ["1", "0"])
def test_large_irregular_shared_buffer_runs_from_scratch(dev, monkeypatch, automatic, vectorize):
    # 256 threads x 128*128 positions: the register path's one-hot scatter would be a 2**22-element
    # tile (Triton refuses tensors over 2**20 elements)
    monkeypatch.setenv("TILE2TRITON_VECTORIZE_LOOPS", vectorize)
    M, N = 200, 300  # not multiples of the 128 x 128 tile
    # a fresh compilation under this setting (@tilelang.jit caches kernels per arguments)
    kernel = tilelang.compile(scrambled_transpose.func(M, N, 256, 128))
    a = torch.randn(M, N, device=dev)
    c = poison((N, M), device=dev)
    kernel(a, c)
    torch.testing.assert_close(c.cpu(), a.cpu().t(), rtol=0, atol=0)
    src = kernel.get_kernel_source(interpret=False)
    assert "scratch_ptr" in src


def test_scratch_source_has_stores_loads_and_barriers(automatic):
    src = scrambled_transpose(200, 300, 256, 128).get_kernel_source(interpret=False)
    code = code_of(src)
    assert "def main_kernel(A, C, scratch_ptr):" in code
    # each program's slice: its linear program id times the bytes per program (128 * 128 * 4)
    assert "program = tl.program_id(0) + tl.program_id(1) * tl.num_programs(0)" in code
    assert "scratch = scratch_ptr + program.to(tl.int64) * 65536" in code
    assert "S = scratch.to(tl.pointer_type(tl.float32), bitcast=True)" in code
    # the stores, a barrier after them, then the loads (the store loop keeps its iterations: their
    # scrambled indices are not proven distinct, so a barrier also orders them)
    store = code.index("tl.store(S + ")
    sync = code.index("tl.debug_barrier()", store)
    assert store < sync < code.index("tl.load(S + ", sync)
    # the write loop became one (64, 256) store; the T.sync_threads() barrier is the only one needed
    assert code.count("tl.debug_barrier()") == 1
    # origin comments name the TileLang lines
    assert "# test_shared_scratch.py:" in src and "S = T.alloc_shared((BLOCK, BLOCK), 'float32')" in src.replace(
        '"', "'"
    )


@tilelang.jit
def shared_reverse(N, threads):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, threads), threads=threads) as bx:
            S = T.alloc_shared((threads,), "float32")
            tx = T.get_thread_binding()
            S[tx] = A[bx * threads + tx]
            T.sync_threads()
            B[bx * threads + tx] = S[threads - 1 - tx]

    return main


def test_one_irregular_dim_gathers_in_registers(dev, automatic):
    # S[threads - 1 - tx]: one dim at a lane-dependent position stays in registers at any size: a
    # one-hot select while that is small (128 x 128), a tl.gather past ONE_HOT_LIMIT (256 x 256;
    # Triton 3.6's gather layout pass asserts on some small gathers, so they stay one-hot)
    assert 128 * 128 <= codegen_scratch.ONE_HOT_LIMIT < 256 * 256
    small, large = shared_reverse(384, 128), shared_reverse(1000, 256)
    for kernel, gathers in ((small, False), (large, True)):
        source = kernel.get_kernel_source(interpret=False)
        assert "scratch_ptr" not in source and ("tl.gather(S, " in source) == gathers
    for kernel, n, t in ((small, 384, 128), (large, 1000, 256)):
        a = torch.randn(n, device=dev)
        b = poison((n,), device=dev)
        kernel(a, b)
        full = (n // t) * t
        ref = a.cpu()[:full].view(-1, t).flip(1).reshape(-1)
        torch.testing.assert_close(b.cpu()[:full], ref, rtol=0, atol=0)


@tilelang.jit(out_idx=[-1])
def broadcast_through_shared(N, threads):
    """Thread 0 publishes one value to the block: a one-element shared buffer written under a
    per-thread condition (the register path refuses it)."""

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, threads), threads=threads) as bx:
            first = T.alloc_shared((1,), "float32")
            tx = T.get_thread_binding(0)
            if tx == 0:
                first[0] = A[bx * threads]
            T.sync_threads()
            if bx * threads + tx < N:
                B[bx * threads + tx] = A[bx * threads + tx] - first[0]

    return main


def test_refused_pattern_runs_from_scratch(dev, automatic):
    N, threads = 300, 64
    a = torch.randn(N, device=dev)
    out = broadcast_through_shared(N, threads)(a)
    firsts = a.cpu()[::threads].repeat_interleave(threads)[:N]
    torch.testing.assert_close(out.cpu(), a.cpu() - firsts, rtol=0, atol=0)
    assert "scratch_ptr" in broadcast_through_shared(N, threads).get_kernel_source(interpret=False)


@tilelang.jit(out_idx=[-1])
def block_histogram(N, threads, BINS):
    """Shared-memory atomics: a per-block histogram (colliding bins: a one-hot scatter-reduce in
    registers, rules.py _shared_scatter_reduce)."""

    @T.prim_func
    def main(A: T.Tensor((N,), "int32"), H: T.Tensor((T.ceildiv(N, threads), BINS), "int32")):
        with T.Kernel(T.ceildiv(N, threads), threads=threads) as bx:
            hist = T.alloc_shared((BINS,), "int32")
            tx = T.get_thread_binding(0)
            if tx < BINS:
                hist[tx] = 0
            T.sync_threads()
            if bx * threads + tx < N:
                T.atomic_add(hist[A[bx * threads + tx] % BINS], 1)
            T.sync_threads()
            if tx < BINS:
                H[bx, tx] = hist[tx]

    return main


def test_shared_memory_atomics(dev, automatic):
    N, threads, bins = 500, 128, 10
    a = torch.randint(0, 1000, (N,), dtype=torch.int32, device=dev)
    out = block_histogram(N, threads, bins)(a).cpu()
    ref = torch.zeros(out.shape, dtype=torch.int32)
    for i, v in enumerate(a.cpu().tolist()):
        ref[i // threads, v % bins] += 1
    assert out.tolist() == ref.tolist()


# ------------------------------------------------------------------------------ block view, tile ops
@tilelang.jit(out_idx=[-1])
def parallel_scramble(M, N, BLOCK):
    """Block view: a shared tile written at irregular positions of one dim by T.Parallel, then used
    by tile operations (copy to a fragment, row sums)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, BLOCK), threads=128) as bx:
            S = T.alloc_shared((BLOCK, BLOCK), "float32")
            F = T.alloc_fragment((BLOCK, BLOCK), "float32")
            R = T.alloc_fragment((BLOCK,), "float32")
            for i, j in T.Parallel(BLOCK, BLOCK):
                S[i, (j * 3) % BLOCK] = T.if_then_else(j < N, A[bx * BLOCK + i, j], 0.0) * (j + 1)
            T.copy(S, F)
            T.reduce_sum(F, R, dim=1)
            T.copy(R, C[bx * BLOCK])

    return main


def test_block_view_irregular_shared_and_tile_ops(dev, automatic):
    M, N, BLOCK = 150, 64, 64  # 4096 lanes x 64 positions: over the limit
    a = torch.randn(M, N, device=dev)
    out = parallel_scramble(M, N, BLOCK)(a)
    ref = (a.double().cpu() * torch.arange(1, N + 1, dtype=torch.float64)).sum(1)
    torch.testing.assert_close(out.double().cpu(), ref, rtol=1e-5, atol=1e-4)
    assert "scratch_ptr" in parallel_scramble(M, N, BLOCK).get_kernel_source(interpret=False)


@tilelang.jit(out_idx=[-1])
def gemm_through_shared(M, N, K, BM, BN, BK):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), threads=128) as (bx, by):
            A_s = T.alloc_shared((BM, BK), "float16")
            B_s = T.alloc_shared((BK, BN), "float16")
            acc = T.alloc_fragment((BM, BN), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, BK), num_stages=2):
                T.copy(A[by * BM, k * BK], A_s)
                T.copy(B[k * BK, bx * BN], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C[by * BM, bx * BN])

    return main


def test_forced_gemm_operands_in_scratch(dev, monkeypatch):
    monkeypatch.setenv("TILE2TRITON_SHARED_SCRATCH", "1")
    M, N, K = 70, 50, 90
    kernel = tilelang.compile(gemm_through_shared.func(M, N, K, 32, 32, 32), out_idx=[-1])
    a, b = torch.randn(M, K, device=dev).half(), torch.randn(K, N, device=dev).half()
    torch.testing.assert_close(kernel(a, b).cpu(), (a.float() @ b.float()).cpu(), rtol=1e-3, atol=1e-3)
    code = code_of(kernel.get_kernel_source(interpret=False))
    # the copies store into scratch, the gemm loads each operand whole
    assert "A_s_tile = tl.load(A_s + " in code and "B_s_tile = tl.load(B_s + " in code
    assert "tl.dot(A_s_tile, B_s_tile, acc)" in code
    # not software-pipelined: the next iteration's scratch loads must not overtake this one's stores
    assert "for k in tl.range(0, 3, num_stages=1):" in code and "num_stages=2" not in code


# ------------------------------------------------------------------------------ runtime
@tilelang.jit(out_idx=[-1])
def leftovers(N, threads):
    """Reads its shared buffer before writing it (undefined in TileLang): with a zeroed scratch area,
    every program must see zeros, i.e. no program sees another program's slice."""

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((3, N), "float32")):
        with T.Kernel(T.ceildiv(N, threads), 3, threads=threads) as (bx, by):
            S = T.alloc_shared((threads,), "float32")
            tx = T.get_thread_binding(0)
            B[by, bx * threads + tx] = S[threads - 1 - tx]
            T.sync_threads()
            S[tx] = A[bx * threads + tx] + 1.0

    return main


def test_each_program_has_its_own_slice(dev, monkeypatch):
    monkeypatch.setenv("TILE2TRITON_SHARED_SCRATCH", "1")
    zeroed = []

    def scratch_tensor(bytes_per_program, grid, device):
        zeroed.append((bytes_per_program, tuple(grid)))
        n = 1
        for g in grid:
            n *= g
        return torch.zeros(n * bytes_per_program, dtype=torch.uint8, device=device)

    monkeypatch.setattr(runtime_scratch, "scratch_tensor", scratch_tensor)
    N, threads = 256, 64
    kernel = tilelang.compile(leftovers.func(N, threads), out_idx=[-1])
    out = kernel(torch.randn(N, device=dev))
    assert out.cpu().tolist() == [[0.0] * N] * 3
    assert zeroed == [(threads * 4, (N // threads, 3))]


@tilelang.jit(out_idx=[-1])
def reshape_shared(M, N):
    """T.reshape of a shared buffer whose extents are not powers of two (the register path needs them)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((N, M), "float32")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((M, N), "float32")
            T.copy(A, S)
            R = T.reshape(S, (N, M))
            for i, j in T.Parallel(N, M):
                R[i, j] = R[i, j] * 2.0  # writes through the view
            T.copy(R, B)

    return main


def test_reshape_of_a_shared_buffer_with_odd_extents(dev, automatic):
    a = torch.randn(6, 10, device=dev)
    torch.testing.assert_close(reshape_shared(6, 10)(a).cpu(), (a.cpu() * 2).reshape(10, 6), rtol=0, atol=0)
    assert "scratch_ptr" in reshape_shared(6, 10).get_kernel_source(interpret=False)
