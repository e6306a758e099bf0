"""T.reduce_sum / reduce_max / reduce_min / reduce_abssum / reduce_absmax with dim = 0, 1, -1
and clear = True / False (clear=False combines with the old destination)."""

import pytest
import torch
from t2t_util import assert_close, assert_equal

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty

# Each program bx reduces the (R, S) tile A[bx] along `dim` into a 1-D fragment that first
# holds Init[bx] (garbage for clear=True, the running value for clear=False), then writes it
# to C[bx].  R, S are not powers of two, so padded lanes must reduce with the identity.


def _out_len(R, S, dim):
    return S if dim == 0 else R


@tilelang.jit(out_idx=[-1])
def k_reduce_sum(G, R, S, dim, clear):
    L = _out_len(R, S, dim)

    @T.prim_func
    def main(A: T.Tensor((G, R, S), "float32"), Init: T.Tensor((G, L), "float32"), C: T.Tensor((G, L), "float32")):
        with T.Kernel(G, threads=128) as bx:
            F = T.alloc_fragment((R, S), "float32")
            out = T.alloc_fragment((L,), "float32")
            T.copy(A[bx, 0, 0], F)
            T.copy(Init[bx, 0], out)
            T.reduce_sum(F, out, dim=dim, clear=clear)
            T.copy(out, C[bx, 0])

    return main


@tilelang.jit(out_idx=[-1])
def k_reduce_max(G, R, S, dim, clear):
    L = _out_len(R, S, dim)

    @T.prim_func
    def main(A: T.Tensor((G, R, S), "float32"), Init: T.Tensor((G, L), "float32"), C: T.Tensor((G, L), "float32")):
        with T.Kernel(G, threads=128) as bx:
            F = T.alloc_fragment((R, S), "float32")
            out = T.alloc_fragment((L,), "float32")
            T.copy(A[bx, 0, 0], F)
            T.copy(Init[bx, 0], out)
            T.reduce_max(F, out, dim=dim, clear=clear)
            T.copy(out, C[bx, 0])

    return main


@tilelang.jit(out_idx=[-1])
def k_reduce_min(G, R, S, dim, clear):
    L = _out_len(R, S, dim)

    @T.prim_func
    def main(A: T.Tensor((G, R, S), "float32"), Init: T.Tensor((G, L), "float32"), C: T.Tensor((G, L), "float32")):
        with T.Kernel(G, threads=128) as bx:
            F = T.alloc_fragment((R, S), "float32")
            out = T.alloc_fragment((L,), "float32")
            T.copy(A[bx, 0, 0], F)
            T.copy(Init[bx, 0], out)
            T.reduce_min(F, out, dim=dim, clear=clear)
            T.copy(out, C[bx, 0])

    return main


@tilelang.jit(out_idx=[-1])
def k_reduce_absmax(G, R, S, dim, clear):
    L = _out_len(R, S, dim)

    @T.prim_func
    def main(A: T.Tensor((G, R, S), "float32"), Init: T.Tensor((G, L), "float32"), C: T.Tensor((G, L), "float32")):
        with T.Kernel(G, threads=128) as bx:
            F = T.alloc_fragment((R, S), "float32")
            out = T.alloc_fragment((L,), "float32")
            T.copy(A[bx, 0, 0], F)
            T.copy(Init[bx, 0], out)
            T.reduce_absmax(F, out, dim=dim, clear=clear)
            T.copy(out, C[bx, 0])

    return main


@tilelang.jit(out_idx=[-1])
def k_reduce_abssum(G, R, S, dim):
    L = _out_len(R, S, dim)

    @T.prim_func
    def main(A: T.Tensor((G, R, S), "float32"), Init: T.Tensor((G, L), "float32"), C: T.Tensor((G, L), "float32")):
        with T.Kernel(G, threads=128) as bx:
            F = T.alloc_fragment((R, S), "float32")
            out = T.alloc_fragment((L,), "float32")
            T.copy(A[bx, 0, 0], F)
            T.copy(Init[bx, 0], out)
            T.reduce_abssum(F, out, dim=dim)  # always clears
            T.copy(out, C[bx, 0])

    return main


FACTORIES = {"sum": k_reduce_sum, "max": k_reduce_max, "min": k_reduce_min, "absmax": k_reduce_absmax}


def _ref(op, x, d, init, clear):
    if op == "sum":
        r = x.sum(d)
        return r if clear else r + init
    if op == "max":
        r = x.amax(d)
        return r if clear else torch.maximum(r, init)
    if op == "min":
        r = x.amin(d)
        return r if clear else torch.minimum(r, init)
    if op == "absmax":
        r = x.abs().amax(d)
        return r if clear else torch.maximum(r, init)
    if op == "abssum":
        return x.abs().sum(d)
    raise AssertionError(op)


G, R, S = 3, 48, 72


@pytest.mark.parametrize("clear", [True, False], ids=["clear", "noclear"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("op", ["sum", "max", "min", "absmax"])
def test_reduce(dev, op, dim, clear):
    L = _out_len(R, S, dim)
    a = torch.randn(G, R, S, device=dev) * 4.0
    init = torch.randn(G, L, device=dev) * 4.0
    if op == "absmax":
        init = init.abs()
    c = FACTORIES[op](G, R, S, dim, clear)(a, init)
    ref = _ref(op, a.double().cpu(), 1 + dim if dim >= 0 else -1, init.double().cpu(), clear)
    assert_close(c, ref, 1e-4, 1e-5, msg=f"reduce_{op} dim={dim} clear={clear}")


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_reduce_abssum(dev, dim):
    L = _out_len(R, S, dim)
    a = torch.randn(G, R, S, device=dev)
    init = torch.randn(G, L, device=dev) * 100.0
    c = k_reduce_abssum(G, R, S, dim)(a, init)
    assert_close(c, a.double().cpu().abs().sum(1 + dim if dim >= 0 else -1), 1e-4, 1e-5)


@tilelang.jit(out_idx=[-1])
def reduce_sum_plus_one(M, N):
    # TileLang's test_reduce_clear: fill(dst, 1); reduce_sum(src, dst, clear=False) == sum + 1
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M,), "float32")):
        with T.Kernel(1, threads=128):
            F = T.alloc_fragment((M, N), "float32")
            out = T.alloc_fragment((M,), "float32")
            T.copy(A, F)
            T.fill(out, 1.0)
            T.reduce_sum(F, out, dim=1, clear=False)
            T.copy(out, C)

    return main


def test_reduce_sum_clear_false_adds_to_filled(dev):
    M, N = 20, 50
    a = torch.randn(M, N, device=dev)
    c = reduce_sum_plus_one(M, N)(a)
    assert_close(c, a.double().sum(1) + 1.0, 1e-5, 1e-5)


@tilelang.jit(out_idx=[-1])
def reduce_padded_tile(M, N, bm):
    # the last row tile is partly out of bounds: its OOB rows are read as 0 and take part in
    # the column max (TileLang semantics), while OOB rows of a row-wise result are not stored
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), Cmax: T.Tensor((T.ceildiv(M, bm), N), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=128) as bx:
            F = T.alloc_fragment((bm, N), "float32")
            colmax = T.alloc_fragment((N,), "float32")
            T.copy(A[bx * bm, 0], F)
            T.reduce_max(F, colmax, dim=0)
            T.copy(colmax, Cmax[bx, 0])

    return main


def test_reduce_over_partially_oob_tile(dev):
    M, N, bm = 100, 72, 48
    a = torch.randn(M, N, device=dev) - 3.0  # mostly negative: padding zeros matter
    c = reduce_padded_tile(M, N, bm)(a)
    pad = torch.zeros(3 * bm, N, dtype=torch.float64)
    pad[:M] = a.double().cpu()
    assert_close(c, pad.view(3, bm, N).amax(1), 0, 0)


@tilelang.jit(out_idx=[-1])
def reduce_shared_src(M, N, bm):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=128) as bx:
            S = T.alloc_shared((bm, N), "float32")
            out = T.alloc_fragment((bm,), "float32")
            T.copy(A[bx * bm, 0], S)
            T.reduce_sum(S, out, dim=1)  # shared source
            T.copy(out, C[bx * bm])

    return main


def test_reduce_from_shared(dev):
    M, N, bm = 100, 90, 32
    a = torch.randn(M, N, device=dev)
    c = reduce_shared_src(M, N, bm)(a)
    assert_close(c, a.double().sum(1), 1e-5, 1e-5)


@tilelang.jit(out_idx=[-2, -1])
def reduce_int(M, N, bm):
    @T.prim_func
    def main(A: T.Tensor((M, N), "int32"), Csum: T.Tensor((M,), "int32"), Cmax: T.Tensor((M,), "int32")):
        with T.Kernel(T.ceildiv(M, bm), threads=128) as bx:
            F = T.alloc_fragment((bm, N), "int32")
            s = T.alloc_fragment((bm,), "int32")
            m = T.alloc_fragment((bm,), "int32")
            T.copy(A[bx * bm, 0], F)
            T.reduce_sum(F, s, dim=1)
            T.reduce_max(F, m, dim=1)
            T.copy(s, Csum[bx * bm])
            T.copy(m, Cmax[bx * bm])

    return main


def test_reduce_int32(dev):
    M, N, bm = 70, 60, 32
    a = torch.randint(-1000, -1, (M, N), device=dev, dtype=torch.int32)  # all negative
    s, m = reduce_int(M, N, bm)(a)
    assert_equal(s, a.long().sum(1))
    assert_equal(m, a.amax(1))


@tilelang.jit
def reduce_into_var(N, op, clear):
    # T.reduce_*(buffer, var): a T.alloc_var receives a 1-D reduction (TileLang's scalar form)
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=32):
            src = T.alloc_fragment((N,), "float32")
            acc = T.alloc_var("float32", init=0.5)
            T.copy(A, src)
            getattr(T, "reduce_" + op)(src, acc, dim=0, clear=clear)
            B[0] = acc

    return main


@pytest.mark.parametrize("op,clear", [("sum", True), ("max", True), ("sum", False), ("min", False)])
def test_reduce_into_alloc_var(dev, op, clear):
    N = 37
    a = torch.randn(N, device=dev)
    b = torch.full((1,), float("nan"), device=dev)
    reduce_into_var(N, op, clear)(a, b)
    x = a.double()
    want = {"sum": x.sum(), "max": x.max(), "min": x.min()}[op]
    if not clear:
        want = want + 0.5 if op == "sum" else torch.minimum(want, torch.tensor(0.5, dtype=torch.float64))
    assert_close(b, want.reshape(1), 1e-5, 1e-5)


@tilelang.jit(out_idx=[-1])
def column_sum(n, dim, dtype, kind="sum"):
    @T.prim_func
    def main(K: T.Tensor((n, dim), dtype), Out: T.Tensor((dim,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            f = T.alloc_fragment((n, dim), dtype)
            acc = T.alloc_fragment((dim,), "float32")
            T.copy(K, f)
            if kind == "sum":
                T.reduce_sum(f, acc, dim=0)
            else:
                T.reduce_abssum(f, acc, dim=0)
            T.copy(acc, Out)

    return main


@pytest.mark.parametrize("kind", ["sum", "abssum"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_narrow_sum_accumulates_in_the_output_type(dev, dtype, kind):
    """TileLang casts each element to the output's type and sums there: 1024 + 0.5 is 1024.5 in a float32
    output, where a float16 sum rounds it to 1024 (a bfloat16 one 256 + 0.5 to 256)."""
    big = 1024.0 if dtype == "float16" else 256.0
    k = torch.full((5, 21), 0.5, dtype=getattr(torch, dtype), device=dev)
    k[0] = -big if kind == "abssum" else big
    out = column_sum(5, 21, dtype, kind)(k)
    assert torch.equal(out, torch.full((21,), big + 2.0, device=dev))
