"""Per-thread loads in the thread view (``TILE2TRITON_PER_THREAD_LOADS``, runtime/tuning.py): a
global load whose address varies over fewer thread axes than the per-thread register it fills is
loaded at that register's full shape (every thread its own copy, as TileLang's threads load it)
instead of once and broadcast.  The results must not change; the block view's code must not
change at all."""

import pytest
import torch
from t2t_util import assert_close, poison
from test_local_loop_vectorize import gemv_threads

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.runtime import tuning

ENV = tuning.PER_THREAD_LOADS_ENV


def _code(kernel) -> str:
    src = kernel.get_kernel_source(interpret=False)
    return "\n".join(line for line in src.splitlines() if not line.strip().startswith("#"))


def _compiled(monkeypatch, on: bool, func):
    monkeypatch.setenv(ENV, "1" if on else "0")
    return tilelang.compile(func)


@pytest.mark.parametrize(
    "N, K, BLOCK_N, reduce_threads, TILE_K, dtype",
    [
        (150, 200, 2, 32, 8, "float16"),  # TileLang's configuration at sizes not multiples of the tile
        (37, 100, 4, 6, 6, "float32"),  # 6 elements per thread (padded to 8), 6 threads (padded to 8)
        (45, 90, 3, 8, 4, "bfloat16"),
    ],
)
def test_gemv_with_per_thread_loads(dev, monkeypatch, N, K, BLOCK_N, reduce_threads, TILE_K, dtype):
    kernel = _compiled(monkeypatch, True, gemv_threads(N, K, BLOCK_N, reduce_threads, TILE_K, dtype))
    tdt = getattr(torch, dtype)
    a = torch.randn(K, device=dev).to(tdt)
    b = torch.randn(N, K, device=dev).to(tdt)
    c = poison((N,), tdt, dev)
    kernel(a, b, c)
    assert_close(c, b.double() @ a.double(), atol=5e-2, rtol=2e-2)
    # the vector a (no row-thread axis) is loaded at the thread tile's shape, masked past K
    assert "A_local = tl.load(A + tl.broadcast_to(offs, (" in _code(kernel)


def test_switch_changes_only_the_spread_load(monkeypatch):
    func = gemv_threads(2 * 64, 16 * 256, 2, 32, 8)  # whole tiles: no masks
    off = _code(_compiled(monkeypatch, False, func)).splitlines()
    on = _code(_compiled(monkeypatch, True, func)).splitlines()
    changed = [(x, y) for x, y in zip(off, on) if x != y]
    assert len(off) == len(on) and changed == [
        (
            "        A_local = tl.broadcast_to(tl.load(A + offs), (32, 2, 8))",
            "        A_local = tl.load(A + tl.broadcast_to(offs, (32, 2, 8)))",
        )
    ]


def row_scale(M, N, TY, TX):
    """A per-thread scalar from a load along the row thread only, under a per-thread condition,
    on a thread block whose column axis is padded (TX = 6 threads in a tile of 8)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), S: T.Tensor((M,), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, TX), T.ceildiv(M, TY), threads=(TX, TY)) as (bx, by):
            tx = T.get_thread_binding(0)
            ty = T.get_thread_binding(1)
            s = T.alloc_local((1,), "float32")
            row = by * TY + ty
            col = bx * TX + tx
            s[0] = -1.0
            if row < M:
                s[0] = S[row]
            if col < N:
                B[row, col] = A[row, col] * s[0] if row < M else 0.0

    return main


def test_masked_per_thread_scalar(dev, monkeypatch):
    M, N, TY, TX = 37, 50, 8, 6
    kernel = _compiled(monkeypatch, True, row_scale(M, N, TY, TX))
    a = torch.randn(M, N, device=dev)
    s = torch.randn(M, device=dev)
    b = poison((M, N), device=dev)
    kernel(a, s, b)
    assert_close(b, a.double() * s.double()[:, None], atol=1e-6, rtol=1e-6)
    assert "tl.where(cond, tl.load(S + tl.broadcast_to(row, (8, 8)), mask=" in _code(kernel)


def weights_fill(M, N, TX):
    """A per-thread array filled from a vector every thread shares (masked: M = 5 in a tile of 8),
    then read element by element."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), W: T.Tensor((M,), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, TX), threads=TX) as bx:
            tx = T.get_thread_binding(0)
            L = T.alloc_local((M,), "float32")
            for i in T.serial(M):
                L[i] = W[i]
            for i in T.serial(M):
                if bx * TX + tx < N:
                    B[i, bx * TX + tx] = A[i, bx * TX + tx] * L[i]

    return main


def test_shared_vector_fill(dev, monkeypatch):
    M, N, TX = 5, 70, 24
    kernel = _compiled(monkeypatch, True, weights_fill(M, N, TX))
    a = torch.randn(M, N, device=dev)
    w = torch.randn(M, device=dev)
    b = poison((M, N), device=dev)
    kernel(a, w, b)
    assert_close(b, a.double() * w.double()[:, None], atol=1e-6, rtol=1e-6)
    assert "L = tl.load(W + tl.broadcast_to(i, (32, 8)), mask=mask, other=0)" in _code(kernel)


def bias_add(M, N, block_M, block_N):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), bias: T.Tensor((N,), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                B[by * block_M + i, bx * block_N + j] = A[by * block_M + i, bx * block_N + j] + bias[bx * block_N + j]

    return main


def test_block_view_unchanged(monkeypatch):
    func = bias_add(100, 70, 32, 16)
    assert _code(_compiled(monkeypatch, True, func)) == _code(_compiled(monkeypatch, False, func))


def test_switch(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    assert tuning.per_thread_loads() is tuning.PER_THREAD_LOADS
    monkeypatch.setenv(ENV, "1")
    assert tuning.per_thread_loads() is True
    monkeypatch.setenv(ENV, "off")
    assert tuning.per_thread_loads() is False
