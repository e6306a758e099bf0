"""TILE2TRITON_PREFETCH_INDICES (passes/prefetch_indices.py): a loop's index element, read at its
iteration (``k = Off[bx, bi]``, then a tile at ``k``), is loaded one iteration ahead into a register
the loop carries.

Each kernel runs under the interpreter (or CUDA) against a float64 torch reference, with lists of
several lengths: empty, full (the last prefetch is clamped to the list), and in between; sizes are
not powers of two.  The refusals (a loop that writes the list, the switch off) keep their results."""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T

DEV = "cuda" if torch.cuda.is_available() else "cpu"
P, N, L, B, D = 5, 70, 6, 12, 20  # programs, rows of X, list length, rows a tile, columns


def gather_blocks(lag=0, writes_list=False, as_value=False, ordered=False, thread_range=False):
    """Out[bx] = sum over bi < Count[bx] of (bi + 1) * X[Off[bx, bi - lag] : + B, :], bi from ``lag``;
    ``as_value``: of Off[bx, bi] * X[:B, :] (the element is no address); ``ordered``: the loop also
    adds 0 to Count[bx] with an acq_rel atomic (it may order the list's reads after other blocks' writes);
    ``thread_range``: a thread-view kernel whose loop runs under ``if tx < 128``."""

    @T.prim_func
    def main(
        X: T.Tensor((N, D), "float32"),
        Off: T.Tensor((P, L), "int32"),
        Count: T.Tensor((P,), "int32"),
        Out: T.Tensor((P, B, D), "float32"),
    ):
        with T.Kernel(P, threads=128) as bx:
            tile = T.alloc_shared((B, D), "float32")
            acc = T.alloc_fragment((B, D), "float32")
            T.clear(acc)

            @T.macro
            def walk():
                for bi in T.serial(lag, Count[bx] + lag):
                    k = Off[bx, bi - lag]
                    if as_value:
                        for i, j in T.Parallel(B, D):
                            tile[i, j] = X[i, j] * k
                    else:
                        T.copy(X[k : k + B, :], tile)
                    for i, j in T.Parallel(B, D):
                        acc[i, j] += tile[i, j] * (bi - lag + 1)
                    if writes_list:
                        Off[bx, bi - lag] = k + 1
                    if ordered:
                        T.atomic_add(Count[bx], 0, memory_order="acq_rel")

            if thread_range:
                tx = T.get_thread_binding()
                if tx < 128:
                    walk()
            else:
                walk()
            T.copy(acc, Out[bx, :, :])

    return main


def _run(**kw):
    torch.manual_seed(0)
    kernel = tilelang.compile(gather_blocks(**kw))
    x = torch.randn(N, D, device=DEV)
    off = torch.randint(0, N - B + 1, (P, L), dtype=torch.int32, device=DEV)
    count = torch.tensor([0, L, 3, 1, L - 1], dtype=torch.int32, device=DEV)
    out = torch.full((P, B, D), float("nan"), device=DEV)
    off_in = off.clone()
    kernel(x, off, count, out)
    ref = torch.zeros(P, B, D, dtype=torch.float64)
    for p in range(P):
        for bi in range(int(count[p])):
            k = int(off_in[p, bi])
            rows = x[:B].cpu().double() * k if kw.get("as_value") else x[k : k + B].cpu().double()
            ref[p] += rows * (bi + 1)
    assert_close(out.cpu(), ref, 1e-5, 1e-5)
    if kw.get("writes_list"):
        assert torch.equal(off.cpu(), off_in.cpu() + (torch.arange(L) < count.cpu()[:, None]).int())
    return "\n".join(line for line in kernel.get_kernel_source().splitlines() if not line.strip().startswith("#"))


@pytest.mark.parametrize("lag", [0, 2])
def test_index_loaded_one_iteration_ahead(lag):
    src = _run(lag=lag)
    assert "next_Off = tl.load(" in src  # before the loop
    assert "Off_now = next_Off" in src  # the carried value, then the next one loaded
    assert src.count("tl.load(Off") == 2


def test_loop_that_writes_the_list_reads_it_in_place():
    # on CUDA this raced before passes/order_global.py (every warp loads Off[bx, bi], one thread
    # stores it): a warp running behind read the new value
    src = _run(writes_list=True)
    assert "next_Off" not in src


def test_loop_that_orders_memory_reads_the_list_in_place():
    assert "next_Off" not in _run(ordered=True)


def test_loop_under_a_thread_range_reads_the_list_in_place():
    # the carried register would be written under a per-thread condition: one value per thread
    assert "next_Off" not in _run(thread_range=True)


def test_element_that_is_no_address_is_read_in_place():
    # a value (or a branch's condition) does not hold the tile loads back
    assert "next_Off" not in _run(as_value=True)


def test_switch_off(monkeypatch):
    monkeypatch.setenv("TILE2TRITON_PREFETCH_INDICES", "0")
    assert "next_Off" not in _run()
