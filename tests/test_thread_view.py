"""Thread view (``T.get_thread_binding``) lowered by lane vectorization, run under the interpreter."""

import torch

import tile2triton as tilelang
import tile2triton.language as T


def poison(shape, dtype=torch.float32, device="cpu"):
    return torch.full(shape, float("nan"), dtype=dtype, device=device)


@tilelang.jit(out_idx=[-1])
def thread_copy(N, BLOCK_N, threads):
    @T.prim_func
    def main(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16")):
        with T.Kernel(T.ceildiv(N, BLOCK_N), threads=threads) as bx:
            tx = T.get_thread_binding(0)
            for i in T.serial(T.ceildiv(BLOCK_N, threads)):
                idx = bx * BLOCK_N + i * threads + tx
                B[idx] = A[idx]

    return main


def test_thread_view_copy_is_one_masked_tile(dev):
    N = 1000  # not a multiple of BLOCK_N = 1024... nor of the 256 threads
    kernel = thread_copy(N, 1024, 256)
    a = torch.randn(N, device=dev).half()
    torch.testing.assert_close(kernel(a), a, rtol=0, atol=0)
    src = kernel.get_kernel_source(interpret=False)
    assert "tx = tl.arange(0, 256)" in src
    # no per-element loop: the serial loop has no carried dependence, so it became a second tile axis
    # and the whole block moves with one masked (4, 256) load and store, as in the block view
    assert src.count("tl.load(") == 1 and src.count("tl.store(") == 1
    code = [line for line in src.split("def main_kernel")[1].splitlines() if not line.strip().startswith("#")]
    assert not any(line.strip().startswith("for ") for line in code)
    assert "i = tl.arange(0, 4)[:, None]" in src


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


def test_shared_memory_block_reversal(dev):
    N, threads = 384, 128
    a = torch.randn(N, device=dev)
    b = poison((N,), device=dev)
    shared_reverse(N, threads)(a, b)
    torch.testing.assert_close(b.cpu(), a.cpu().view(-1, threads).flip(1).reshape(-1), rtol=0, atol=0)


@tilelang.jit(out_idx=[-1])
def tree_sum(M, N, threads):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M,), "float32")):
        with T.Kernel(M, threads=threads) as bx:
            S = T.alloc_shared((threads,), "float32")
            tx = T.get_thread_binding(0)
            acc = T.alloc_local((1,), "float32")
            acc[0] = 0.0
            for k in T.serial(T.ceildiv(N, threads)):
                col = k * threads + tx
                if col < N:
                    acc[0] += A[bx, col]
            S[tx] = acc[0]
            T.sync_threads()
            for step in T.unroll(7):
                stride = (threads // 2) >> step
                if tx < stride:
                    S[tx] = S[tx] + S[tx + stride]
                T.sync_threads()
            if tx == 0:
                C[bx] = S[0]

    return main


def test_hand_written_tree_reduction(dev):
    M, N = 5, 300
    a = torch.randn(M, N, device=dev)
    out = tree_sum(M, N, 128)(a)
    torch.testing.assert_close(out.double().cpu(), a.double().sum(1).cpu(), rtol=1e-5, atol=1e-4)


@tilelang.jit
def stencil(N, threads):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, threads), threads=threads) as bx:
            S = T.alloc_shared((threads + 2,), "float32")
            tx = T.get_thread_binding(0)
            g = bx * threads + tx
            S[tx + 1] = A[g]
            if tx == 0:
                S[0] = T.if_then_else(g > 0, A[g - 1], 0.0)
            if tx == threads - 1:
                S[threads + 1] = T.if_then_else(g + 1 < N, A[g + 1], 0.0)
            T.sync_threads()
            if g < N:
                B[g] = S[tx] + 2.0 * S[tx + 1] + S[tx + 2]

    return main


def test_neighbour_stencil(dev):
    N, threads = 200, 64
    a = torch.randn(N, device=dev)
    b = poison((N,), device=dev)
    stencil(N, threads)(a, b)
    padded = torch.nn.functional.pad(a.double().cpu(), (1, 1))
    ref = padded[:-2] + 2 * padded[1:-1] + padded[2:]
    torch.testing.assert_close(b.double().cpu(), ref, rtol=1e-6, atol=1e-6)


@tilelang.jit(out_idx=[-1])
def thread_gemv(N, K, threads, BLOCK_K):
    @T.prim_func
    def main(A: T.Tensor((K,), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, threads), threads=threads) as bn:
            tx = T.get_thread_binding(0)
            partial = T.alloc_local((BLOCK_K,), "float32")
            total = T.alloc_var("float32", 0.0)
            row = bn * threads + tx
            for j in T.serial(BLOCK_K):
                partial[j] = 0.0
            for ko in T.serial(T.ceildiv(K, BLOCK_K)):
                for j in T.serial(BLOCK_K):
                    k = ko * BLOCK_K + j
                    partial[j] += A[k].astype("float32") * B[row, k].astype("float32")
            for j in T.serial(BLOCK_K):
                total = total + partial[j]
            C[row] = total

    return main


def test_thread_view_gemv_with_local_accumulators(dev):
    N, K = 150, 70
    a, b = torch.randn(K, device=dev).half(), torch.randn(N, K, device=dev).half()
    out = thread_gemv(N, K, 64, 4)(a, b)
    torch.testing.assert_close(out.double().cpu(), (b.double() @ a.double()).cpu(), rtol=1e-4, atol=1e-3)


@tilelang.jit(out_idx=[-1])
def transpose_2d_threads(M, N):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((N, M), "float32")):
        with T.Kernel(T.ceildiv(N, 16), T.ceildiv(M, 8), threads=(16, 8)) as (bx, by):
            S = T.alloc_shared((8, 16), "float32")
            tx = T.get_thread_binding(0)
            ty = T.get_thread_binding(1)
            S[ty, tx] = A[by * 8 + ty, bx * 16 + tx]
            T.sync_threads()
            B[bx * 16 + tx, by * 8 + ty] = S[ty, tx]

    return main


def test_two_dimensional_thread_bindings(dev):
    M, N = 37, 50
    a = torch.randn(M, N, device=dev)
    torch.testing.assert_close(transpose_2d_threads(M, N)(a).cpu(), a.cpu().t(), rtol=0, atol=0)
    src = transpose_2d_threads(M, N).get_kernel_source(interpret=False)
    assert "ty = tl.arange(0, 8)[:, None]" in src and "tx = tl.arange(0, 16)[None, :]" in src


@tilelang.jit(out_idx=[-1])
def collatz_steps(N):
    @T.prim_func
    def main(A: T.Tensor((N,), "int32"), C: T.Tensor((N,), "int32")):
        with T.Kernel(N, threads=32) as bx:
            x = T.alloc_var("int32", 0)
            steps = T.alloc_var("int32", 0)
            x = A[bx]
            while x != 1:
                x = T.if_then_else(x % 2 == 0, x // 2, 3 * x + 1)
                steps = steps + 1
            C[bx] = steps

    return main


def _collatz(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def test_while_loop(dev):
    a = torch.randint(1, 60, (13,), dtype=torch.int32, device=dev)
    out = collatz_steps(13)(a).cpu()
    assert out.tolist() == [_collatz(int(v)) for v in a.cpu()]
    from tile2triton.oracle import reference

    assert reference.run(collatz_steps(13), a.cpu()).tolist() == out.tolist()


# ----------------------------------------------------------------------------- fragments kept per thread
@tilelang.jit(out_idx=[1])
def per_thread_fragment(n):
    """A fragment read and written element by element outside T.Parallel, with values that differ
    between threads (TileLang's sparse_mla_fwd_seesaw prefetches indices so): TileLang keeps it per
    thread; as one block-wide tile the threads' writes collided (a wrong answer)."""

    @T.prim_func
    def main(Idx: T.Tensor((n,), "int32"), Out: T.Tensor((n, 2), "int32")):
        with T.Kernel(1, threads=n) as _:
            tx = T.get_thread_binding()
            pre = T.alloc_fragment((2,), "int32")
            pre[0] = Idx[tx]
            if tx % 3 == 0:
                pre[1] = Idx[(tx + 1) % n] * 2
            else:
                pre[1] = -pre[0]
            Out[tx, 0] = pre[0]
            Out[tx, 1] = pre[1]

    return main


def test_fragment_written_per_thread_is_per_thread(dev):
    n = 45
    idx = torch.randint(-1000, 1000, (n,), dtype=torch.int32, device=dev)
    out = per_thread_fragment(n)(idx)
    second = torch.where(torch.arange(n, device=dev) % 3 == 0, idx.roll(-1) * 2, -idx)
    assert torch.equal(out, torch.stack([idx, second], 1))
