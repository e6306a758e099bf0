"""passes/order_global.py: a block-view statement that could overtake another statement's access to
the same global buffer waits at a barrier (TileLang's threads run statements in order; Triton's
layouts put one element on other threads in two statements, a scalar is stored by one thread).

Each kernel runs under the interpreter (or CUDA) against a float64 torch reference (inputs random,
outputs NaN before the call, sizes no multiple of the tiles), and the generated source is read for
the barriers placed, and for none where no statement could overtake another."""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T

DEV = "cuda" if torch.cuda.is_available() else "cpu"
P, R, D = 3, 37, 20  # blocks, rows a block owns, columns


def _barriers(kernel) -> int:
    return kernel.get_kernel_source().count("tl.debug_barrier()")


def shift_rows():
    """Each block moves rows 1..R-1 of its slab G[bx] up by one (row r gets row r + 1) in place,
    through a fragment: the store of row r must wait for every thread's load of it."""

    @T.prim_func
    def main(G: T.Tensor((P, R, D), "float32")):
        with T.Kernel(P, threads=128) as bx:
            rows = T.alloc_fragment((R - 1, D), "float32")
            T.copy(G[bx, 1:R, :], rows)
            T.copy(rows, G[bx, 0 : R - 1, :])

    return main


def test_tile_stored_over_rows_another_statement_read():
    kernel = tilelang.compile(shift_rows())
    g = torch.randn(P, R, D, device=DEV)
    ref = g.double().cpu().clone()
    ref[:, : R - 1] = ref[:, 1:].clone()
    kernel(g)
    assert_close(g.cpu(), ref, 0, 0)
    assert _barriers(kernel) == 1


def running_counter(n_steps=7):
    """Count[bx] is read, and stored plus one, at every step of a loop; each step adds the value it
    read, times X[bx, step], into an accumulator: a load after the previous step's store."""

    @T.prim_func
    def main(
        X: T.Tensor((P, n_steps), "float32"),
        Count: T.Tensor((P,), "int32"),
        Out: T.Tensor((P,), "float32"),
    ):
        with T.Kernel(P, threads=96) as bx:
            acc = T.alloc_var("float32")
            acc = 0.0
            for s in T.serial(n_steps):
                c = Count[bx]
                acc += T.cast(c, "float32") * X[bx, s]
                Count[bx] = c + 1
            Out[bx] = acc

    return main


def test_scalar_read_then_updated_in_a_loop():
    kernel = tilelang.compile(running_counter())
    x = torch.randn(P, 7, device=DEV)
    count = torch.randint(-5, 9, (P,), dtype=torch.int32, device=DEV)
    out = torch.full((P,), float("nan"), device=DEV)
    start = count.clone().cpu().double()
    kernel(x, count, out)
    steps = torch.arange(7, dtype=torch.float64)
    ref = ((start[:, None] + steps[None, :]) * x.cpu().double()).sum(1)
    assert_close(out.cpu(), ref, 1e-5, 1e-5)
    assert torch.equal(count.cpu(), (start + 7).int())
    # before the store (after this step's load) and at the loop's top (after the last step's store)
    assert _barriers(kernel) == 2


def disjoint_kernels(case):
    @T.prim_func
    def main(A: T.Tensor((R, D), "float32"), B: T.Tensor((R, 2 * D), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tile = T.alloc_fragment((R, D), "float32")
            T.copy(A, tile)
            for i, j in T.Parallel(R, D):
                tile[i, j] = tile[i, j] * 2.0 + 1.0
            if case == "two_halves":  # two stores to one buffer: disjoint, left unordered
                T.copy(tile, B[:, 0:D])
                T.copy(tile, B[:, D : 2 * D])
            elif case == "in_place":  # one statement's loads feed its own store
                for i, j in T.Parallel(R, D):
                    B[i, j] = B[i, j] + tile[i, j]
            else:  # atomics after atomics commute
                T.atomic_add(B[:, 0:D], tile)
                T.atomic_add(B[:, D : 2 * D], tile)
                T.atomic_add(B[:, 0:D], tile)

    return main


@pytest.mark.parametrize("case", ["two_halves", "in_place", "atomics"])
def test_no_barrier_where_no_statement_overtakes_another(case):
    kernel = tilelang.compile(disjoint_kernels(case))
    a = torch.randn(R, D, device=DEV)
    b = torch.randn(R, 2 * D, device=DEV) if case != "two_halves" else torch.full((R, 2 * D), float("nan"), device=DEV)
    tile = a.cpu().double() * 2 + 1
    ref = b.cpu().double().clone()
    if case == "two_halves":
        ref = torch.cat([tile, tile], 1)
    elif case == "in_place":
        ref[:, :D] += tile
    else:
        ref[:, :D] += 2 * tile
        ref[:, D:] += tile
    kernel(a, b)
    assert_close(b.cpu(), ref, 1e-5, 1e-5)
    assert _barriers(kernel) == 0


def thread_view_counter():
    """The thread view: its threads are TileLang's own, and ordering them is the program's."""

    @T.prim_func
    def main(Count: T.Tensor((P,), "int32"), Out: T.Tensor((P, 32), "int32")):
        with T.Kernel(P, threads=32) as bx:
            tx = T.get_thread_binding()
            c = Count[bx]
            Out[bx, tx] = c + tx
            if tx == 0:
                Count[bx] = c + 1

    return main


def test_thread_view_is_left_to_the_program():
    kernel = tilelang.compile(thread_view_counter())
    count = torch.randint(0, 50, (P,), dtype=torch.int32, device=DEV)
    out = torch.full((P, 32), -7, dtype=torch.int32, device=DEV)
    start = count.clone().cpu()
    kernel(count, out)
    assert torch.equal(out.cpu(), start[:, None] + torch.arange(32, dtype=torch.int32)[None, :])
    assert torch.equal(count.cpu(), start + 1)
    assert _barriers(kernel) == 0
