"""Warp-level primitives in the thread view (codegen/warp.py): reductions, votes, ballots,
shuffles, matches, lane/warp ids and the CUDA bit intrinsics, checked against references that
follow CUDA's definitions (a warp: 32 consecutive threads in TileLang's linear order
``tx + ty * X``).  Thread counts are multiples of 32 that are not powers of two (96, 160) and a
2-D block whose x extent is not a power of two (its lanes are gathered into linear order)."""

import pytest
import torch
from t2t_util import poison

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.errors import TileLangCompileError

WARP = 32


def warps(x: torch.Tensor) -> torch.Tensor:
    """(blocks, threads) -> (blocks, warps, 32)."""
    return x.reshape(x.shape[0], -1, WARP)


# ----------------------------------------------------------------------------- reductions
@tilelang.jit
def warp_reduce(op, dtype, blocks, threads):
    @T.prim_func
    def main(X: T.Tensor((blocks, threads), dtype), Y: T.Tensor((blocks, threads), dtype)):
        with T.Kernel(blocks, threads=threads) as bx:
            tx = T.get_thread_binding()
            v = T.alloc_local([1], dtype)
            v[0] = X[bx, tx]
            if op == "sum":
                Y[bx, tx] = T.warp_reduce_sum(v[0])
            elif op == "max":
                Y[bx, tx] = T.warp_reduce_max(v[0])
            elif op == "min":
                Y[bx, tx] = T.warp_reduce_min(v[0])
            elif op == "bitand":
                Y[bx, tx] = T.warp_reduce_bitand(v[0])
            else:
                Y[bx, tx] = T.warp_reduce_bitor(v[0])

    return main


def _reduce_ref(op, x):
    w = warps(x)
    if op == "sum":
        r = w.to(torch.float64).sum(-1, keepdim=True) if x.is_floating_point() else w.sum(-1, keepdim=True)
    elif op == "max":
        r = w.amax(-1, keepdim=True)
    elif op == "min":
        r = w.amin(-1, keepdim=True)
    else:
        r = w[..., :1].clone()
        for k in range(1, WARP):
            r = (r & w[..., k : k + 1]) if op == "bitand" else (r | w[..., k : k + 1])
    return r.expand_as(w).reshape(x.shape)


@pytest.mark.parametrize("threads", [96, 160])
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_warp_reduce_float(dev, op, threads):
    blocks = 3
    x = torch.randn(blocks, threads, device=dev)
    y = poison((blocks, threads), device=dev)
    warp_reduce(op, "float32", blocks, threads)(x, y)
    torch.testing.assert_close(y.cpu().double(), _reduce_ref(op, x.cpu()).double(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("op", ["bitand", "bitor", "sum", "max"])
def test_warp_reduce_int(dev, op, dtype):
    blocks, threads = 2, 96
    tdt = getattr(torch, dtype)
    high = 2**62 if dtype == "int64" else 2**30
    x = torch.randint(-high, high, (blocks, threads), dtype=tdt, device=dev)
    if op in ("bitand", "bitor"):  # denser bits, so that the and is not always 0
        x = x | torch.randint(0, 2**20, (blocks, threads), dtype=tdt, device=dev) if op == "bitand" else x
    y = poison((blocks, threads), tdt, device=dev)
    warp_reduce(op, dtype, blocks, threads)(x, y)
    ref = _reduce_ref(op, x.cpu())
    if op == "sum" and dtype == "int32":  # wraps around, as the GPU's 32-bit adds do
        ref = ((ref.long() + 2**31) % 2**32 - 2**31).int()
    assert torch.equal(y.cpu(), ref)


@tilelang.jit
def warp_sum_2d(X_EXT, Y_EXT):
    @T.prim_func
    def main(A: T.Tensor((Y_EXT, X_EXT), "float32"), B: T.Tensor((Y_EXT, X_EXT), "float32")):
        with T.Kernel(1, threads=(X_EXT, Y_EXT)):
            tx = T.get_thread_binding(0)
            ty = T.get_thread_binding(1)
            B[ty, tx] = T.warp_reduce_sum(A[ty, tx]) + T.get_warp_idx() * 1000

    return main


def test_warp_reduce_2d_block_follows_linear_thread_order(dev):
    # x extent 24 is padded to 32 lanes: warps cross rows of the (ty, tx) tile
    X_EXT, Y_EXT = 24, 4
    a = torch.randn(Y_EXT, X_EXT, device=dev)
    b = poison((Y_EXT, X_EXT), device=dev)
    kernel = warp_sum_2d(X_EXT, Y_EXT)
    kernel(a, b)
    flat = a.cpu().reshape(1, -1)
    ref = _reduce_ref("sum", flat) + (torch.arange(flat.shape[1]) // WARP) * 1000
    torch.testing.assert_close(b.cpu().reshape(1, -1).double(), ref.double(), rtol=1e-5, atol=1e-4)
    assert "tl.gather" in kernel.get_kernel_source(interpret=False)


@tilelang.jit
def warp_sum_in_loop(rows, threads):
    @T.prim_func
    def main(A: T.Tensor((rows, threads), "float32"), B: T.Tensor((rows, threads), "float32")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            for i in T.serial(rows):
                B[i, tx] = T.warp_reduce_max(A[i, tx])

    return main


def test_warp_reduce_inside_a_loop(dev):
    rows, threads = 5, 96
    a = torch.randn(rows, threads, device=dev)
    b = poison((rows, threads), device=dev)
    warp_sum_in_loop(rows, threads)(a, b)
    torch.testing.assert_close(b.cpu(), _reduce_ref("max", a.cpu()), rtol=0, atol=0)


@tilelang.jit
def warp_ops_under_block_conditions(blocks, threads):
    @T.prim_func
    def main(A: T.Tensor((blocks, threads), "float32"), B: T.Tensor((blocks, 2, threads), "float32")):
        with T.Kernel(blocks, threads=threads) as bx:
            tx = T.get_thread_binding()
            B[bx, 0, tx] = T.warp_reduce_sum(1.0)  # the same operand in every thread
            B[bx, 1, tx] = -7.0
            if bx == 1:  # the whole block takes the branch
                B[bx, 1, tx] = T.warp_reduce_max(A[bx, tx])

    return main


def test_warp_reduce_of_a_uniform_value_and_under_a_block_condition(dev):
    blocks, threads = 3, 96
    a = torch.randn(blocks, threads, device=dev)
    b = poison((blocks, 2, threads), device=dev)
    warp_ops_under_block_conditions(blocks, threads)(a, b)
    ref = torch.full((blocks, 2, threads), -7.0)
    ref[:, 0] = 32.0
    ref[1, 1] = _reduce_ref("max", a.cpu())[1]
    torch.testing.assert_close(b.cpu(), ref, rtol=0, atol=0)


# ----------------------------------------------------------------------------- votes and ballots
@tilelang.jit
def votes(threads, mask):
    @T.prim_func
    def main(P: T.Tensor((threads,), "int32"), Out: T.Tensor((6, threads), "int64")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            p = P[tx]
            Out[0, tx] = T.any_sync(p)
            Out[1, tx] = T.all_sync(p > -5)
            Out[2, tx] = T.cast(T.ballot_sync(p), "int64")
            Out[3, tx] = T.cast(T.ballot_sync(p, mask), "int64")
            Out[4, tx] = T.syncthreads_count(p)
            Out[5, tx] = T.syncthreads_and(p > -5) * 10 + T.syncthreads_or(p > 2)

    return main


def test_votes_and_ballots(dev):
    threads, mask = 160, 0x0F0F00FF
    p = torch.randint(-5, 3, (threads,), dtype=torch.int32)
    p[32:64] = 0  # a warp where no lane votes
    p[96:128] = 1  # a warp where every lane votes
    out = poison((6, threads), torch.int64, device=dev)
    votes(threads, mask)(p.to(dev), out)
    w = p.reshape(-1, WARP) != 0
    bit = 2 ** torch.arange(WARP, dtype=torch.int64)
    ballot = (w.long() * bit).sum(-1, keepdim=True)
    lanes = torch.arange(WARP)
    in_mask = ((mask >> lanes) & 1).bool()
    ref = torch.stack([
        w.any(-1, keepdim=True).long().expand(-1, WARP).reshape(-1),
        (p.reshape(-1, WARP) > -5).all(-1, keepdim=True).long().expand(-1, WARP).reshape(-1),
        ballot.expand(-1, WARP).reshape(-1),
        (ballot & mask).expand(-1, WARP).reshape(-1),
        torch.full((threads,), int((p != 0).sum())),
        torch.full((threads,), int((p > -5).all()) * 10 + int((p > 2).any())),
    ])  # fmt: skip
    assert in_mask.sum() == 16
    assert torch.equal(out.cpu(), ref)


@tilelang.jit
def masked_any(threads, mask):
    @T.prim_func
    def main(P: T.Tensor((threads,), "int32"), Out: T.Tensor((threads,), "int32")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            Out[tx] = T.any_sync(P[tx], mask) * 2 + T.all_sync(P[tx], mask)

    return main


def test_vote_mask_selects_the_lanes_taking_part(dev):
    threads, mask = 96, 0x0000FFFF
    p = torch.zeros(threads, dtype=torch.int32)
    p[20] = 1  # outside the mask: no vote
    p[40] = 1  # warp 1, inside the mask
    p[64:80] = 1  # warp 2: every lane in the mask votes
    out = poison((threads,), torch.int32, device=dev)
    masked_any(threads, mask)(p.to(dev), out)
    ref = torch.tensor([0, 2, 3]).repeat_interleave(WARP).int()
    assert torch.equal(out.cpu(), ref)


@tilelang.jit
def active_lanes(threads):
    @T.prim_func
    def main(Out: T.Tensor((threads,), "int64")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            Out[tx] = -1
            if tx % 3 == 0:
                Out[tx] = T.cast(T.activemask(), "int64")

    return main


def test_activemask_under_a_condition(dev):
    threads = 96
    out = poison((threads,), torch.int64, device=dev)
    active_lanes(threads)(out)
    lanes = torch.arange(threads)
    per_warp = ((lanes.reshape(-1, WARP) % 3 == 0).long() * 2 ** torch.arange(WARP)).sum(-1)
    ref = torch.where(lanes % 3 == 0, per_warp.repeat_interleave(WARP), torch.tensor(-1))
    assert torch.equal(out.cpu(), ref)


# ----------------------------------------------------------------------------- shuffles
@tilelang.jit
def shuffles(threads, width):
    @T.prim_func
    def main(
        V: T.Tensor((threads,), "float32"), S: T.Tensor((threads,), "int32"), Out: T.Tensor((5, threads), "float32")
    ):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            v = V[tx]
            Out[0, tx] = T.shfl_sync(v, S[tx], width)
            Out[1, tx] = T.shfl_xor(v, 5, width)
            Out[2, tx] = T.shfl_down(v, 3, width)
            Out[3, tx] = T.shfl_up(v, 6, width)
            Out[4, tx] = T.shfl_sync(v, 27)

    return main


def _shuffle_ref(v, src, width):
    """PTX shfl.sync with CUDA's segment clamp (c = ((32 - width) << 8) | 31; up: no low bits)."""
    out = torch.empty(5, v.numel())
    for t in range(v.numel()):
        base, lane = t - t % WARP, t % WARP
        start, end = lane - lane % width, lane - lane % width + width - 1
        j_idx = start + (int(src[t]) & (width - 1))
        j_xor = lane ^ 5
        j_down = lane + 3
        j_up = lane - 6
        picks = [
            j_idx,
            j_xor if j_xor <= end else lane,
            j_down if j_down <= end else lane,
            j_up if j_up >= start else lane,
            27,
        ]
        for k, j in enumerate(picks):
            out[k, t] = v[base + j]
    return out


@pytest.mark.parametrize("width", [32, 8])
def test_shuffles(dev, width):
    threads = 96
    v = torch.randn(threads)
    src = torch.randint(-40, 40, (threads,), dtype=torch.int32)
    out = poison((5, threads), device=dev)
    shuffles(threads, width)(v.to(dev), src.to(dev), out)
    torch.testing.assert_close(out.cpu(), _shuffle_ref(v, src, width), rtol=0, atol=0)


@tilelang.jit
def butterfly_sum(threads):
    @T.prim_func
    def main(V: T.Tensor((threads,), "float32"), Out: T.Tensor((threads,), "float32")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            acc = T.alloc_var("float32")
            acc = V[tx]
            for k in T.unroll(5):
                acc = acc + T.shfl_xor(acc, 16 >> k)
            Out[tx] = acc

    return main


def test_butterfly_reduction_with_shfl_xor(dev):
    threads = 160
    v = torch.randn(threads)
    out = poison((threads,), device=dev)
    butterfly_sum(threads)(v.to(dev), out)
    torch.testing.assert_close(out.cpu().double(), _reduce_ref("sum", v.reshape(1, -1)).reshape(-1).double(),
                               rtol=1e-5, atol=1e-5)  # fmt: skip


# ----------------------------------------------------------------------------- matches
@tilelang.jit
def matches(threads):
    @T.prim_func
    def main(V: T.Tensor((threads,), "int32"), Out: T.Tensor((2, threads), "int64")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            Out[0, tx] = T.cast(T.match_any_sync(V[tx]), "int64")
            Out[1, tx] = T.cast(T.match_all_sync(V[tx]), "int64")

    return main


def test_match_any_and_all(dev):
    threads = 96
    v = torch.randint(0, 4, (threads,), dtype=torch.int32)
    v[32:64] = 7  # warp 1: all agree
    out = poison((2, threads), torch.int64, device=dev)
    matches(threads)(v.to(dev), out)
    w = v.reshape(-1, WARP)
    bit = 2 ** torch.arange(WARP, dtype=torch.int64)
    peers = ((w[:, :, None] == w[:, None, :]).long() * bit).sum(-1).reshape(-1)
    agree = torch.tensor([0, 0xFFFFFFFF, 0]).repeat_interleave(WARP)
    assert torch.equal(out.cpu(), torch.stack([peers, agree]))


# ----------------------------------------------------------------------------- ids and bit intrinsics
@tilelang.jit(out_idx=[-1])
def thread_ids(X_EXT, Y_EXT):
    @T.prim_func
    def main(Out: T.Tensor((5, Y_EXT, X_EXT), "int32")):
        with T.Kernel(1, threads=(X_EXT, Y_EXT)):
            tx, ty = T.get_thread_binding(0), T.get_thread_binding(1)
            Out[0, ty, tx] = T.get_lane_idx()
            Out[1, ty, tx] = T.get_warp_idx_sync(20)
            Out[2, ty, tx] = T.get_warp_group_idx(32, 3)
            Out[3, ty, tx] = T.shuffle_elect(48)
            Out[4, ty, tx] = T.shuffle_elect(0)

    return main


def test_lane_warp_ids_of_a_2d_block(dev):
    X_EXT, Y_EXT = 40, 7
    out = thread_ids(X_EXT, Y_EXT)()
    t = torch.arange(X_EXT * Y_EXT).reshape(Y_EXT, X_EXT)
    ref = torch.stack([t % 32, t // 20, t // 96, (t % 48 == 0).long(), (t == 0).long()]).int()
    assert torch.equal(out.cpu(), ref)


@tilelang.jit
def bit_search(n):
    @T.prim_func
    def main(
        M: T.Tensor((n,), "int64"), B: T.Tensor((n,), "int32"), F: T.Tensor((n,), "int32"), Out: T.Tensor((3, n), "int64")
    ):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding()
            Out[0, tx] = T.__ffs(M[tx])
            Out[1, tx] = T.__ffs(T.cast(M[tx], "int32"))
            Out[2, tx] = T.cast(T.__fns(T.cast(M[tx], "uint32"), B[tx], F[tx]), "int64")

    return main


def _fns_ref(mask, base, offset):
    mask &= 0xFFFFFFFF
    if offset == 0:
        return base if (mask >> base) & 1 else 0xFFFFFFFF
    step, count, pos = (1 if offset > 0 else -1), abs(offset), base
    while 0 <= pos < 32:
        if (mask >> pos) & 1:
            count -= 1
            if count == 0:
                return pos
        pos += step
    return 0xFFFFFFFF


def test_ffs_and_fns(dev):
    n = 96
    m = torch.randint(-(2**62), 2**62, (n,), dtype=torch.int64)
    m = m & torch.randint(-(2**62), 2**62, (n,), dtype=torch.int64)  # sparser bits
    m[0], m[1], m[2] = 0, -(2**63), 1 << 40
    base = torch.randint(0, 32, (n,), dtype=torch.int32)
    offset = torch.randint(-6, 7, (n,), dtype=torch.int32)
    b, f = base.tolist(), offset.tolist()
    out = poison((3, n), torch.int64, device=dev)
    bit_search(n)(m.to(dev), base.to(dev), offset.to(dev), out)

    def ffs(x, bits):
        x &= 2**bits - 1
        return (x & -x).bit_length()

    ref = torch.tensor([
        [ffs(x, 64) for x in m.tolist()],
        [ffs(x, 32) for x in m.tolist()],
        [_fns_ref(x, b[i], f[i]) for i, x in enumerate(m.tolist())],
    ])  # fmt: skip
    assert torch.equal(out.cpu(), ref)


# ----------------------------------------------------------------------------- host calls, errors
def test_vote_in_host_code_checks_its_predicate():
    from tile2triton.tvm import tirx

    with pytest.raises(TypeError, match="requires an integer or boolean predicate"):
        T.ballot_sync(tirx.FloatImm("float32", 0.5))
    assert isinstance(T.syncthreads_count(True), tirx.Call)


@tilelang.jit
def warp_op_in_parallel():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                A[i] = T.warp_reduce_sum(A[i])

    return main


@tilelang.jit
def float_vote():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            A[tx] = T.any_sync(A[tx])

    return main


@tilelang.jit
def odd_width():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            A[tx] = T.shfl_down(A[tx], 1, 12)

    return main


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (warp_op_in_parallel, "T.warp_reduce_sum is a warp-level primitive: use it in a thread-view kernel"),
        (float_vote, "T.any_sync requires an integer or boolean predicate, but got float32"),
        (odd_width, "T.shfl_down: width must be a compile-time power of two from 1 to 32, got 12"),
    ],
)
def test_misuse_is_a_clear_error_at_the_line(factory, message):
    with pytest.raises(TileLangCompileError, match=message) as info:
        factory().get_kernel_source(interpret=True)
    assert "test_warp.py" in str(info.value)
