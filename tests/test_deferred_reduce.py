"""``T.reduce_*(x, acc, dim, clear=False)`` in a loop that touches ``acc`` nowhere else combines ``x``
element-wise into a tile of its shape and reduces it into ``acc`` once after the loop
(TILE2TRITON_DEFER_REDUCES, codegen/reductions._deferring_loop): fp8 block mean pooling's shape of kernel
(a tile's rows summed into a column accumulator a step), at odd sizes, with the switch on and off."""

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T


def pooled(n, D, chunk, block, kind="sum", dim=0, src_dtype="float32", acc_dtype="float32", read_inside=False):
    """Y[c] = reduce over the chunks of ``chunk`` rows of X (``block`` rows a step, the tail masked to the
    reduction's identity by the loop itself) of T.reduce_<kind>(tile, acc, dim); ``read_inside``: the loop
    also stores the running accumulator every step (nothing may be deferred)."""
    steps = -(-chunk // block)
    acc_len = D if dim == 0 else block
    fill = {"sum": 0.0, "abssum": 0.0, "absmax": 0.0, "max": -1e30, "min": 1e30}[kind]
    reduce = getattr(T, f"reduce_{kind}")

    @T.prim_func
    def main(
        X: T.Tensor((n, D), src_dtype),
        Y: T.Tensor((T.ceildiv(n, chunk), acc_len), acc_dtype),
        R: T.Tensor((T.ceildiv(n, chunk), steps), acc_dtype),
    ):
        with T.Kernel(T.ceildiv(n, chunk), threads=128) as bx:
            acc = T.alloc_fragment((acc_len,), acc_dtype)
            tile = T.alloc_fragment((block, D), src_dtype)
            T.fill(acc, fill)
            for b in T.serial(steps):
                for i, j in T.Parallel(block, D):
                    row = bx * chunk + b * block + i
                    tile[i, j] = T.if_then_else((row < n) & (b * block + i < chunk), X[row, j], fill)
                reduce(tile, acc, dim=dim, clear=False)
                if read_inside:
                    R[bx, b] = acc[0]
            for j in T.Parallel(acc_len):
                Y[bx, j] = acc[j]

    return main


def _reference(x, chunk, block, kind, dim):
    n, D = x.shape
    x = x.double().cpu()
    chunks = []
    for c in range(-(-n // chunk)):
        rows = x[c * chunk : min((c + 1) * chunk, n)]
        if kind.startswith("abs"):
            rows = rows.abs()
        combine = {"sum": torch.sum, "abssum": torch.sum}.get(kind)
        if dim == 0:
            chunks.append(
                combine(rows, 0) if combine else (rows.max(0).values if "max" in kind else rows.min(0).values)
            )
        else:  # per row of the step's tile: step b's row i lands in acc[i]
            fill = {"sum": 0.0, "abssum": 0.0, "absmax": 0.0, "max": -1e30, "min": 1e30}[kind]
            steps = -(-chunk // block)
            padded = torch.full((steps * block, D), fill, dtype=torch.float64)
            padded[: rows.shape[0]] = rows
            tiles = padded.view(steps, block, D)
            if combine:
                chunks.append(tiles.sum(2).sum(0))
            else:
                per = tiles.max(2).values.max(0).values if "max" in kind else tiles.min(2).values.min(0).values
                chunks.append(per)
    return torch.stack(chunks)


@pytest.mark.parametrize("switch", ["1", "0"])
@pytest.mark.parametrize("kind, dim", [("sum", 0), ("max", 0), ("absmax", 0), ("min", 1), ("sum", 1)])
def test_reduce_into_accumulator(dev, monkeypatch, switch, kind, dim):
    monkeypatch.setenv("TILE2TRITON_DEFER_REDUCES", switch)
    n, D, chunk, block = 150, 40, 52, 12  # 5 steps of 12 rows (the last 4 of 12 past the chunk), 3 chunks
    kernel = tilelang.compile(pooled(n, D, chunk, block, kind, dim), out_idx=[1, 2])
    torch.manual_seed(1)
    x = torch.randn(n, D, device=dev)
    y, _ = kernel(x)
    assert_close(y, _reference(x, chunk, block, kind, dim), atol=1e-4, rtol=1e-5)
    if dev == "cpu":
        source = kernel.get_kernel_source(interpret=True)
        assert ("acc_parts = " in source) == (switch == "1"), source


def test_fp8_rows_summed_in_float32(dev):
    """fp8 elements summed into a float32 accumulator: the parts tile is float32 (each element cast first)."""
    if dev == "cpu" and not hasattr(torch, "float8_e4m3fn"):
        pytest.skip("no float8 in this torch")
    n, D, chunk, block = 130, 24, 40, 16
    kernel = tilelang.compile(pooled(n, D, chunk, block, src_dtype="float8_e4m3", acc_dtype="float32"), out_idx=[1, 2])
    torch.manual_seed(2)
    x = torch.randn(n, D, device=dev).to(torch.float8_e4m3fn)
    y, _ = kernel(x)
    assert_close(y, _reference(x.float(), chunk, block, "sum", 0), atol=1e-4, rtol=1e-5)
    if dev == "cpu":
        source = kernel.get_kernel_source(interpret=True)
        assert "acc_parts = tl.zeros([16, 32], tl.float32)" in source, source


@pytest.mark.parametrize("case", ["read_inside", "float16"])
def test_not_deferred(dev, case):
    """The loop reads the running accumulator, or the sum is in 16 bits (its rounding a step is kept):
    reduced every iteration, as written."""
    n, D, chunk, block = 100, 20, 36, 10
    kw = {"read_inside": True} if case == "read_inside" else {"src_dtype": "float16", "acc_dtype": "float16"}
    kernel = tilelang.compile(pooled(n, D, chunk, block, **kw), out_idx=[1, 2])
    torch.manual_seed(3)
    x = torch.randn(n, D, device=dev).to(torch.float16 if case == "float16" else torch.float32)
    y, r = kernel(x)
    tol = 2e-2 if case == "float16" else 1e-4
    assert_close(y, _reference(x.float(), chunk, block, "sum", 0), atol=tol, rtol=tol)
    if case == "read_inside":  # acc[0] after each step: the running sum of column 0
        xd = x.double().cpu()
        want = poison(r.shape, torch.float64)
        for c in range(r.shape[0]):
            for b in range(r.shape[1]):
                want[c, b] = xd[c * chunk : min(c * chunk + min((b + 1) * block, chunk), n), 0].sum()
        assert_close(r, want, atol=1e-4, rtol=1e-5)
    if dev == "cpu":
        source = kernel.get_kernel_source(interpret=True)
        assert "acc_parts" not in source, source


def gemm_row_sums(n, k, block_k):
    """S[i] = the sum over K steps of the row sums of A[:, step] @ B[step, :] (a gemm a step, its product's
    rows summed into acc)."""

    @T.prim_func
    def main(A: T.Tensor((n, k), "float16"), B: T.Tensor((k, 32), "float16"), S: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 32), threads=128) as bx:
            a = T.alloc_shared((32, block_k), "float16")
            b = T.alloc_shared((block_k, 32), "float16")
            c = T.alloc_fragment((32, 32), "float32")
            acc = T.alloc_fragment((32,), "float32")
            T.clear(acc)
            for s in T.Pipelined(T.ceildiv(k, block_k), num_stages=2):
                T.copy(A[bx * 32, s * block_k], a)
                T.copy(B[s * block_k, 0], b)
                T.gemm(a, b, c, clear_accum=True)
                T.reduce_sum(c, acc, dim=1, clear=False)
            for i in T.Parallel(32):
                S[bx * 32 + i] = acc[i]

    return main


def test_loop_with_a_gemm_is_not_deferred(dev):
    """A loop with a gemm keeps its reduction every step (the tile held across the loop would compete with
    the gemm's registers: measured slower there)."""
    n, k, block_k = 70, 96, 32
    kernel = tilelang.compile(gemm_row_sums(n, k, block_k), out_idx=[2])
    torch.manual_seed(4)
    a = torch.randn(n, k, device=dev).half()
    b = torch.randn(k, 32, device=dev).half()
    s = kernel(a, b)
    assert_close(s, (a.double().cpu() @ b.double().cpu()).sum(1), atol=2e-2, rtol=1e-3)
    if dev == "cpu":
        source = kernel.get_kernel_source(interpret=True)
        assert "acc_parts" not in source and "tl.sum(c, axis=1)" in source, source
