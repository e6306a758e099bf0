"""TILE2TRITON_ROW_ONCE (passes/row_once.py): a row of a global index list that several T.Parallel
statements of one block read along a lane (a score mask along the columns, a gather along the
rows, its validity test) is loaded once into a fragment, each read taking it at its lane.

Each kernel runs under the interpreter (or CUDA) against a float64 torch reference; some indices
are past the valid limit (masked rows), sizes are not powers of two.  The refusals (the list written
in the kernel, one read only, the switch off) keep their results."""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T

DEV = "cuda" if torch.cuda.is_available() else "cpu"
P, N, R, IT, D = 3, 40, 6, 3, 20  # programs, rows of X, rows an iteration, iterations, columns
LIMIT = 31  # indices above it are invalid: their rows read as 0 and score 0


def sparse_rows(mask_read=True, writes_list=False, thread_range=False):
    """Out[bx, i, :] = sum over iterations it of X[Idx[bx, it*R + i]] (0 where the index is past
    LIMIT) * (the number of valid indices among Idx[bx, it*R : it*R + R]); ``mask_read``: that count
    read from the row (else R); ``writes_list``: the kernel stores Idx[bx, 0] = 0 at its end;
    ``thread_range``: a thread-view kernel whose loop runs under ``if tx < 128``."""

    @T.prim_func
    def main(
        X: T.Tensor((N, D), "float32"),
        Idx: T.Tensor((P, IT * R), "int32"),
        Out: T.Tensor((P, R, D), "float32"),
    ):
        with T.Kernel(P, threads=128) as bx:
            acc = T.alloc_fragment((R, D), "float32")
            score = T.alloc_fragment((R, R), "float32")
            valid = T.alloc_fragment((R,), "float32")
            rows = T.alloc_fragment((R, D), "float32")
            T.clear(acc)

            @T.macro
            def walk():
                for it in T.serial(IT):
                    for i, j in T.Parallel(R, R):
                        if mask_read:
                            score[i, j] = T.if_then_else(Idx[bx, it * R + j] <= LIMIT, 1.0, 0.0)
                        else:
                            score[i, j] = 1.0
                    T.reduce_sum(score, valid, dim=1)
                    for i, d in T.Parallel(R, D):
                        rows[i, d] = T.if_then_else(Idx[bx, it * R + i] <= LIMIT, X[Idx[bx, it * R + i], d], 0)
                    for i, d in T.Parallel(R, D):
                        acc[i, d] += rows[i, d] * valid[i]

            if thread_range:
                tx = T.get_thread_binding()
                if tx < 128:
                    walk()
            else:
                walk()
            T.copy(acc, Out[bx, :, :])
            if writes_list:
                Idx[bx, 0] = 0

    return main


def _run(**kw):
    torch.manual_seed(0)
    kernel = tilelang.compile(sparse_rows(**kw))
    x = torch.randn(N, D, device=DEV)
    idx = torch.randint(0, N, (P, IT * R), dtype=torch.int32, device=DEV)
    out = torch.full((P, R, D), float("nan"), device=DEV)
    idx_in = idx.clone().cpu()
    kernel(x, idx, out)
    ref = torch.zeros(P, R, D, dtype=torch.float64)
    xd = x.cpu().double()
    for p in range(P):
        for it in range(IT):
            block = idx_in[p, it * R : it * R + R].long()
            ok = block <= LIMIT
            count = ok.sum().item() if kw.get("mask_read", True) else R
            ref[p] += torch.where(ok[:, None], xd[block.clamp(max=N - 1)], 0.0) * count
    assert_close(out.cpu(), ref, 1e-5, 1e-5)
    return "\n".join(line for line in kernel.get_kernel_source().splitlines() if not line.strip().startswith("#"))


def test_row_loaded_once():
    src = _run()
    assert "Idx_row = tl.load(Idx" in src
    assert src.count("tl.load(Idx") == 1  # the mask's three reads and the gather's rows: one load
    assert "Idx_row[None, :]" in src and "Idx_row[:, None]" in src  # read along columns, then rows


def test_row_under_a_thread_range():
    # a producer/consumer kernel's consumer section (as forward_shared leaves it): the row is the block's
    assert _run(thread_range=True).count("tl.load(Idx") == 1


def test_one_statement_reading_twice():
    # the gather alone reads the row twice (the test and the rows): loaded once
    assert _run(mask_read=False).count("tl.load(Idx") == 1


def test_list_written_in_the_kernel_is_read_in_place():
    src = _run(writes_list=True)
    assert "Idx_row" not in src


def test_switch_off(monkeypatch):
    monkeypatch.setenv("TILE2TRITON_ROW_ONCE", "0")
    src = _run()
    assert "Idx_row" not in src
    assert src.count("tl.load(Idx") >= 2


@pytest.mark.parametrize("extent", [R, R + 1])
def test_rows_of_other_extents_are_separate(extent):
    """A read along a lane of another extent reads other elements: its own row (or none)."""

    @T.prim_func
    def main(Idx: T.Tensor((R + 1,), "int32"), A: T.Tensor((R,), "int32"), B: T.Tensor((extent,), "int32")):
        with T.Kernel(1, threads=32) as _:
            for i in T.Parallel(R):
                A[i] = Idx[i] * 2
            for i in T.Parallel(extent):
                B[i] = Idx[i] + 1

    kernel = tilelang.compile(main)
    idx = torch.randint(-50, 50, (R + 1,), dtype=torch.int32, device=DEV)
    a = torch.full((R,), -7, dtype=torch.int32, device=DEV)
    b = torch.full((extent,), -7, dtype=torch.int32, device=DEV)
    kernel(idx, a, b)
    assert torch.equal(a.cpu(), idx[:R].cpu() * 2)
    assert torch.equal(b.cpu(), idx[:extent].cpu() + 1)
    src = kernel.get_kernel_source()
    assert ("Idx_row" in src) == (extent == R)


def test_kernel_past_its_register_budget_reads_in_place():
    """A fragment live across gemms whose accumulators already pass the register budget costs
    spills (sparse MLA backward was slower with it): the rows stay where they are read."""

    def kernel(rows):
        @T.prim_func
        def main(
            A: T.Tensor((rows, 32), "float16"),
            B: T.Tensor((32, 64), "float16"),
            Idx: T.Tensor((R,), "int32"),
            X: T.Tensor((R,), "int32"),
            C: T.Tensor((rows, 64), "float32"),
        ):
            with T.Kernel(1, threads=32) as _:
                a = T.alloc_shared((rows, 32), "float16")
                b = T.alloc_shared((32, 64), "float16")
                acc = T.alloc_fragment((rows, 64), "float32")
                T.copy(A, a)
                T.copy(B, b)
                for i in T.Parallel(R):
                    X[i] = Idx[i] * 2
                T.gemm(a, b, acc, clear_accum=True)
                for i in T.Parallel(R):
                    X[i] = X[i] + Idx[i]
                T.copy(acc, C)

        return tilelang.compile(main).get_kernel_source()

    # one warp: 192 x 32 accumulator elements fit; 16 x 64 do, 128 x 64 do not
    assert "Idx_row" in kernel(16)
    assert "Idx_row" not in kernel(128)
