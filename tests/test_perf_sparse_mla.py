"""The index-gathered producer of TileLang's DeepSeek-V3.2 pipelined sparse MLA forward, at small
sizes: each thread reads a row index from an Indices tensor into a per-thread variable and copies
its piece of that row with ``T.ptx_cp_async`` in a loop (``for u: cp.async of V elements``).  The
nest of copy loops becomes trailing tile axes (codegen/local_loops.py, ``_memory_nest``) instead of
one element per thread per iteration.  Each kernel runs under the interpreter against torch, with
NaN-prefilled outputs, sizes that are not tile multiples and invalid indices that must not be read."""

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T


def gathered_rows(N, D, R, threads, lanes_per_row, vec, to_global):
    """Rows ``Idx[r]`` of KV (N x D) into a shared tile (R x D), ``lanes_per_row`` threads a row,
    ``vec`` elements per cp.async, then the tile to Out; rows whose index is out of range stay 0.
    ``to_global``: the copies go straight to Out (a global destination) instead."""
    rows_per_round = threads // lanes_per_row
    rounds = T.ceildiv(R, rows_per_round)
    step = lanes_per_row * vec

    @T.prim_func
    def main(KV: T.Tensor((N, D), "float32"), Idx: T.Tensor((R,), "int32"), Out: T.Tensor((R, D), "float32")):
        with T.Kernel(1, threads=threads):
            S = T.alloc_shared((R, D), "float32")
            idx = T.alloc_var("int32")
            tx = T.get_thread_binding()
            T.fill(S, 0)
            T.sync_threads()
            for r in T.serial(rounds):
                row = r * rows_per_round + tx // lanes_per_row
                if row < R:
                    idx = Idx[row]
                    if idx >= 0 and idx < N:
                        for u in T.serial(T.ceildiv(D, step)):
                            if to_global:
                                T.ptx_cp_async(
                                    T.access_ptr(Out[row, step * u + tx % lanes_per_row * vec], "w", vec),
                                    T.access_ptr(KV[idx, step * u + tx % lanes_per_row * vec], "r", vec),
                                    vec,
                                )
                            else:
                                T.ptx_cp_async(
                                    T.access_ptr(S[row, step * u + tx % lanes_per_row * vec], "w", vec),
                                    T.access_ptr(KV[idx, step * u + tx % lanes_per_row * vec], "r", vec),
                                    vec,
                                )
            T.sync_threads()
            if not to_global:
                T.copy(S, Out)

    return main


def _code(kernel) -> str:
    """The generated source without its comments (they quote the TileLang lines)."""
    return "\n".join(line for line in kernel.get_kernel_source().splitlines() if not line.strip().startswith("#"))


def _reference(kv, idx, R, D, fill):
    ref = torch.full((R, D), fill, dtype=torch.float64)
    for r in range(R):
        i = int(idx[r])
        if 0 <= i < kv.shape[0]:
            ref[r] = kv[i].double().cpu()
    return ref


@pytest.mark.parametrize(
    "N, D, R, threads, lanes_per_row, vec",
    [
        (50, 80, 40, 48, 2, 8),  # 5 copies of 16 a row (a padded axis of 8), 24 rows a round
        (33, 48, 19, 40, 4, 4),  # 3 copies a row, rows a round (10) do not divide R
    ],
)
@pytest.mark.parametrize("to_global", [False, True])
def test_gathered_rows(dev, N, D, R, threads, lanes_per_row, vec, to_global):
    torch.manual_seed(0)
    kernel = tilelang.compile(gathered_rows(N, D, R, threads, lanes_per_row, vec, to_global))
    kv = torch.randn(N, D, device=dev)
    idx = torch.randint(0, N, (R,), dtype=torch.int32)
    idx[::7] = -1  # invalid: skipped
    idx[3] = N  # past the end: skipped
    idx = idx.to(dev)
    out = poison((R, D), torch.float32, dev)
    kernel(kv, idx, out)
    ref = _reference(kv, idx.cpu(), R, D, float("nan") if to_global else 0.0)
    if to_global:  # rows never written keep the NaN prefill: compare the written ones
        valid = torch.tensor([0 <= int(i) < N for i in idx.cpu()])
        assert torch.isnan(out.cpu()[~valid]).all()
        assert_close(out[valid.to(out.device)], ref[valid], 0, 0)
    else:
        assert_close(out, ref, 0, 0)


def test_gathered_rows_wider_destination_keeps_padding_out(dev):
    """The copy loop's padded lanes (5 trips padded to 8) must not store: Out is wider than what
    the loop writes, and the columns past it keep their NaN."""
    N, D, R, threads = 20, 80, 12, 24

    @T.prim_func
    def main(KV: T.Tensor((N, D), "float32"), Idx: T.Tensor((R,), "int32"), Out: T.Tensor((R, 128), "float32")):
        with T.Kernel(1, threads=threads):
            idx = T.alloc_var("int32")
            tx = T.get_thread_binding()
            if tx < R * 2:
                idx = Idx[tx // 2]
                for u in T.serial(D // 16):
                    T.ptx_cp_async(
                        T.access_ptr(Out[tx // 2, 16 * u + tx % 2 * 8], "w", 8),
                        T.access_ptr(KV[idx, 16 * u + tx % 2 * 8], "r", 8),
                        8,
                    )

    kernel = tilelang.compile(main)
    kv = torch.randn(N, D, device=dev)
    idx = torch.randperm(N)[:R].to(torch.int32).to(dev)
    out = poison((R, 128), torch.float32, dev)
    kernel(kv, idx, out)
    assert_close(out[:, :D], kv.cpu()[idx.cpu().long()].double(), 0, 0)
    assert torch.isnan(out.cpu()[:, D:]).all()


def test_gathered_rows_source_copies_whole_nest():
    """The nest (5 copies of 8) is one [threads, 8, 8] load and store; the round loop stays."""
    src = _code(tilelang.compile(gathered_rows(50, 80, 40, 48, 2, 8, False), target="cuda"))
    assert "for u in" not in src and "for v in" not in src
    assert "u = tl.arange(0, 8)[None, :]" in src and "v = tl.arange(0, 8)[None, None, :]" in src
    assert src.count("for ") == 1  # the rounds


@pytest.mark.parametrize(
    "D, threads, whole",
    [
        (1024, 256, False),  # [256, 64, 8]: 256 elements a thread
        (256, 512, True),  # [512, 16, 8]: 128 elements a thread (the pipelined producer's budget)
        (512, 128, False),  # [128, 32, 8]: 256 elements a thread
    ],
)
def test_copy_nest_budget(D, threads, whole):
    """A nest whose widened tile would pass the budget (MOVE_LIMIT, or MOVE_PER_THREAD elements
    a launched thread) keeps its outer loop; its inner loop still becomes an axis."""
    kernel = tilelang.compile(gathered_rows(50, D, 40, threads, 2, 8, True), target="cuda")
    src = _code(kernel)
    assert ("for u in" not in src) == whole
    assert "v = tl.arange(0, 8)[None, " in src


def scatter_add_rows(N, D, BS, threads, lanes, tail):
    """The sparse MLA backward's dKV accumulation: a block of BS gradient rows (computed here as a
    scaled copy of G) is added into dKV rows picked by Indices, ``lanes`` columns per
    ``T.atomic_addx{lanes}``; ``tail`` more columns past D come from a register fragment, read
    through a shared tile, as the kernel's tail does.  Indices repeat, so rows collide."""
    add = T.atomic_addx4 if lanes == 4 else T.atomic_addx2

    @T.prim_func
    def main(
        G: T.Tensor((BS, D + tail), "float32"),
        Idx: T.Tensor((BS,), "int32"),
        dKV: T.Tensor((N, D + tail), "float32"),
    ):
        with T.Kernel(2, threads=threads) as bx:
            acc = T.alloc_fragment((BS, D), "float32")
            acc_tail = T.alloc_fragment((BS, tail), "float32")
            acc_shared = T.alloc_shared((BS, D), "float32")
            tail_shared = T.alloc_shared((BS, tail), "float32")
            for i, j in T.Parallel(BS, D):
                acc[i, j] = G[i, j] * (bx + 1)
            for i, j in T.Parallel(BS, tail):
                acc_tail[i, j] = G[i, D + j] * (bx + 1)
            T.copy(acc, acc_shared)
            T.copy(acc_tail, tail_shared)
            for i, j in T.Parallel(BS, D // lanes):
                add(dKV[Idx[i], j * lanes], acc_shared[i, j * lanes])
            for i, j in T.Parallel(BS, tail // lanes):
                add(dKV[Idx[i], D + j * lanes], tail_shared[i, j * lanes])

    return main


@pytest.mark.parametrize("N, D, BS, threads, lanes, tail", [(30, 80, 12, 64, 4, 16), (17, 48, 10, 32, 2, 6)])
def test_atomic_addx_rows(dev, N, D, BS, threads, lanes, tail):
    torch.manual_seed(1)
    kernel = tilelang.compile(scatter_add_rows(N, D, BS, threads, lanes, tail))
    g = torch.randn(BS, D + tail, device=dev)
    idx = torch.randint(0, N, (BS,), dtype=torch.int32)
    idx[1] = idx[0]  # two rows add into one
    idx = idx.to(dev)
    base = torch.randn(N, D + tail, device=dev)
    dkv = base.clone()
    kernel(g, idx, dkv)
    ref = base.double().cpu().index_add(0, idx.cpu().long(), g.double().cpu() * 3)  # blocks 0 and 1
    assert_close(dkv, ref, 1e-5, 1e-5)


def test_atomic_addx4_is_one_vector_atomic():
    """Each T.atomic_addx4 is one tl.atomic_add over a trailing axis of 4 consecutive columns
    (Triton makes it a v4 atomic), not four strided atomics."""
    src = _code(tilelang.compile(scatter_add_rows(30, 80, 12, 64, 4, 16), target="cuda"))
    assert src.count("tl.atomic_add(") == 2
    assert "tl.arange(0, 4)[None, None, :]" in src
