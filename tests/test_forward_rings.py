"""Hand-pipelined rings (passes/forward_rings.py, ``TILE2TRITON_FORWARD_RINGS``) and thread-view
branches every thread decides alike (codegen/rules._uniform_branch, ``TILE2TRITON_UNIFORM_BRANCHES``).

The kernels gather row tiles of ``A`` by an index list, as MInference's column loop does: a
prologue stores the first tile(s) into a ring of shared slots, the loop stores the tile of a later
iteration while it uses the slot stored earlier, an epilogue uses the last slot(s).  The result,
``sum_t tile(t) * (t + 1)``, depends on every tile reaching the right iteration.
"""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import ir
from tile2triton.passes.forward_rings import forward_rings

pytestmark = pytest.mark.poison_empty
BN = 16


def fresh(factory, *args, **kwargs):
    """The kernel compiled anew (a ``@tilelang.jit`` factory keeps one per arguments, lowered under
    the switches of its first call)."""
    return tilelang.compile(factory(*args, **kwargs), out_idx=[-1])


def ring_gather(M, N, D, L, depth=2, form="parallel", read="copy", wrong_prologue=False, extra_write=False,
                thread_view=False, guard=0, half=False):  # fmt: skip
    LP = 8  # the index list padded to a power of two
    ahead = depth - 1  # how many iterations ahead the loop stores

    @T.prim_func
    def main(
        A: T.Tensor((N, D), T.float32),
        Idx: T.Tensor((M, L), T.int32),
        Count: T.Tensor((M,), T.int32),
        Out: T.Tensor((M, BN, D), T.float32),
    ):
        with T.Kernel(M, threads=128) as bm:
            idx_s = T.alloc_shared((LP,), T.int32)
            ring = T.alloc_shared((depth, BN, D), T.float16 if half else T.float32)
            frag = T.alloc_fragment((BN, D), T.float32)
            acc = T.alloc_fragment((BN, D), T.float32)
            count = T.alloc_var(T.int32)
            count = Count[bm]
            for v in T.Parallel(LP):
                if v < L:
                    idx_s[v] = Idx[bm, v]
            T.clear(acc)

            @T.macro
            def fill(slot, t):  # ring[slot] = tile(t)
                if form == "parallel":
                    for r, c in T.Parallel(BN, D):
                        ring[slot, r, c] = T.if_then_else(t < count, A[idx_s[t] + r, c], 0)
                else:
                    T.copy(A[idx_s[t] : idx_s[t] + BN, :], ring[slot, :, :])

            @T.macro
            def use(slot, t):  # acc += ring[slot] * (t + 1)
                if read == "copy":
                    T.copy(ring[slot, :, :], frag)
                    for r, c in T.Parallel(BN, D):
                        acc[r, c] += frag[r, c] * (t + 1)
                else:
                    for r, c in T.Parallel(BN, D):
                        acc[r, c] += ring[slot, r, c] * (t + 1)

            @T.macro
            def guarded():  # every iteration in the loop, the next tile fetched under `if t + guard < count`
                if count >= 1:
                    fill(0, 0)
                    for t in T.serial(count):
                        if t + guard < count:
                            fill((t + 1) % 2, t + 1)
                        use(t % 2, t)

            @T.macro
            def body():
                if count >= ahead:
                    fill(0, 1 if wrong_prologue else 0)  # prologue: tiles 0 .. ahead - 1
                    if ahead == 2:
                        fill(1, 1)
                    for t in T.serial(count - ahead):
                        fill((t + ahead) % depth, t + ahead)
                        if extra_write:
                            ring[t % depth, 0, 0] = 0
                        use(t % depth, t)
                    if ahead == 2:  # epilogue: the last ``ahead`` tiles
                        use((count - 2) % depth, count - 2)
                    use((count - 1) % depth, count - 1)

            if thread_view:
                tx = T.get_thread_binding()
                if tx < 128:
                    body()
            elif guard:
                guarded()
            else:
                body()
            T.copy(acc, Out[bm, :, :])

    return main


def ring_ref(a, idx, count, wrong_prologue=False, half=False):
    out = torch.zeros(idx.shape[0], BN, a.shape[1], dtype=torch.float64)
    a = a.half() if half else a  # a float16 ring rounds the tiles
    for m in range(idx.shape[0]):
        for t in range(int(count[m])):
            tile = 1 if wrong_prologue and t == 0 else t  # fill(slot, t) stores zeros unless t < count
            if tile < int(count[m]):
                r = int(idx[m, tile])
                out[m] += a[r : r + BN].double().cpu() * (t + 1)
    return out


def _inputs(dev, m=5, n=100, d=24, length=7):
    a = torch.randn(n, d, device=dev)
    idx = torch.randint(0, n - BN, (m, length), dtype=torch.int32, device=dev)
    count = torch.tensor([7, 3, 1, 2, 5][:m], dtype=torch.int32, device=dev)
    return a, idx, count


def _ring_stores(kernel) -> int:
    """Statements writing a buffer named ``ring`` in the kernel after the pass."""
    body = forward_rings(kernel.prim_func.kernels[0]).body
    found = 0
    for s in ir.walk(body):
        if isinstance(s, ir.Store) and s.buffer.name == "ring":
            found += 1
        if isinstance(s, ir.Copy) and getattr(s.dst, "buffer", None) is not None and s.dst.buffer.name == "ring":
            found += 1
    return found


@pytest.mark.parametrize("forward", ["1", "0"])
@pytest.mark.parametrize(
    "depth, form, read, thread_view",
    [
        (2, "parallel", "copy", False),
        (2, "copy", "copy", False),
        (2, "parallel", "load", False),
        (3, "parallel", "copy", False),
        (3, "copy", "load", False),
        (2, "parallel", "copy", True),
    ],
)
def test_ring_results(dev, monkeypatch, forward, depth, form, read, thread_view):
    monkeypatch.setenv("TILE2TRITON_FORWARD_RINGS", forward)
    a, idx, count = _inputs(dev)
    if depth == 3:
        count = torch.tensor([7, 3, 2, 4, 5], dtype=torch.int32, device=dev)  # the prologue needs 2 tiles
    kernel = fresh(ring_gather, 5, 100, 24, 7, depth, form, read, thread_view=thread_view)
    assert_close(kernel(a, idx, count), ring_ref(a, idx, count), 1e-4, 1e-5)


@pytest.mark.parametrize("depth, form, read", [(2, "parallel", "copy"), (2, "copy", "load"), (3, "parallel", "copy")])
def test_ring_stores_go(depth, form, read):
    kernel = fresh(ring_gather, 5, 100, 24, 7, depth, form, read)
    before = sum(
        1 for s in ir.walk(kernel.prim_func.kernels[0].body) if isinstance(s, (ir.Parallel, ir.Copy))
    )  # the pass leaves the bound IR as it was
    assert _ring_stores(kernel) == 0
    assert before == sum(1 for s in ir.walk(kernel.prim_func.kernels[0].body) if isinstance(s, (ir.Parallel, ir.Copy)))


def test_refusals_keep_the_ring(dev):
    # a prologue that stores another tile than the loop's iteration -1 would, and a second write
    # into the ring in the loop: read as they are (the stores stay), results as the source's
    a, idx, count = _inputs(dev)
    wrong = fresh(ring_gather, 5, 100, 24, 7, wrong_prologue=True)
    assert _ring_stores(wrong) == 2
    assert_close(wrong(a, idx, count), ring_ref(a, idx, count, wrong_prologue=True), 1e-4, 1e-5)
    extra = fresh(ring_gather, 5, 100, 24, 7, extra_write=True)
    assert _ring_stores(extra) == 3


@pytest.mark.parametrize("forward", ["1", "0"])
def test_guarded_prefetch(dev, monkeypatch, forward):
    # `if t + 1 < count:` holds at every iteration whose tile is read (t <= count - 2): forwarded
    monkeypatch.setenv("TILE2TRITON_FORWARD_RINGS", forward)
    a, idx, count = _inputs(dev)
    kernel = fresh(ring_gather, 5, 100, 24, 7, guard=1)
    assert_close(kernel(a, idx, count), ring_ref(a, idx, count), 1e-4, 1e-5)
    assert _ring_stores(kernel) == 0


def test_guard_too_short(dev, monkeypatch):
    # `if t + 2 < count:` skips the store the last iteration reads (its slot keeps an older tile):
    # not forwarded, and the result is the source's
    a, idx, count = _inputs(dev)
    kernel = fresh(ring_gather, 5, 100, 24, 7, guard=2)
    assert _ring_stores(kernel) == 2
    monkeypatch.setenv("TILE2TRITON_FORWARD_RINGS", "0")
    plain = fresh(ring_gather, 5, 100, 24, 7, guard=2)(a, idx, count)
    monkeypatch.setenv("TILE2TRITON_FORWARD_RINGS", "1")
    assert_close(kernel(a, idx, count), plain, 0, 0)


@pytest.mark.parametrize("read", ["copy", "load"])
def test_half_ring(dev, monkeypatch, read):
    # a float16 ring between float32 tensors: the forwarded tile rounds as the stored one did (an
    # element read multiplies in float16, as TileLang's half * int does: the same with and without)
    a, idx, count = _inputs(dev)
    kernel = fresh(ring_gather, 5, 100, 24, 7, read=read, half=True)
    assert _ring_stores(kernel) == 0
    out = kernel(a, idx, count)
    monkeypatch.setenv("TILE2TRITON_FORWARD_RINGS", "0")
    assert_close(out, fresh(ring_gather, 5, 100, 24, 7, read=read, half=True)(a, idx, count), 0, 0)
    tol = 1e-5 if read == "copy" else 2e-2
    assert_close(out, ring_ref(a, idx, count, half=True), tol, tol)


def test_ring_source(monkeypatch):
    monkeypatch.setenv("TILE2TRITON_FORWARD_RINGS", "0")
    plain = fresh(ring_gather, 5, 100, 24, 7).lowered_for("sm_90").source
    monkeypatch.setenv("TILE2TRITON_FORWARD_RINGS", "1")
    forwarded = fresh(ring_gather, 5, 100, 24, 7).lowered_for("sm_90").source
    # without: the ring is a [2, 16, 32] tile carried through the loop, each slot selected out of it
    assert "tl.zeros([2, 16, 32]" in plain and "tl.arange(0, 2)[:, None, None]" in plain
    # with: each iteration loads its tile where it is used (the index list read at t, then at the last t)
    assert "tl.zeros([2, 16, 32]" not in forwarded and "tl.arange(0, 2)[:, None, None]" not in forwarded
    assert forwarded.count("tl.load(A + ") == 2  # the loop's and the epilogue's, no prologue load


# ------------------------------------------------------------------ uniform branches in the thread view
def sectioned_sum(M, N, leave=False):
    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), Count: T.Tensor((M,), T.int32), Out: T.Tensor((M, 32), T.float32)):
        with T.Kernel(M, threads=128) as bm:
            acc = T.alloc_fragment((32,), T.float32)
            count = T.alloc_var(T.int32)
            count = Count[bm]
            tx = T.get_thread_binding()
            T.clear(acc)
            if tx < 64:
                if count > 0:  # the same in every thread
                    for t in T.serial(count):
                        if leave and t == 2:
                            break
                        for j in T.Parallel(32):
                            acc[j] += T.if_then_else(t * 32 + j < N, A[bm, T.min(t * 32 + j, N - 1)], 0)
            T.copy(acc, Out[bm, 0])

    return main


def sectioned_ref(a, count, leave=False):
    m, n = a.shape
    out = torch.zeros(m, 32, dtype=torch.float64)
    for r in range(m):
        for t in range(int(count[r])):
            if leave and t == 2:
                break
            for j in range(32):
                if t * 32 + j < n:
                    out[r, j] += a[r, t * 32 + j].double().cpu()
    return out


@pytest.mark.parametrize("uniform", ["1", "0"])
@pytest.mark.parametrize("leave", [False, True])
def test_uniform_branch_results(dev, monkeypatch, uniform, leave):
    monkeypatch.setenv("TILE2TRITON_UNIFORM_BRANCHES", uniform)
    a = torch.randn(3, 150, device=dev)
    count = torch.tensor([5, 0, 3], dtype=torch.int32, device=dev)
    assert_close(fresh(sectioned_sum, 3, 150, leave)(a, count), sectioned_ref(a, count, leave), 1e-4, 1e-5)


def test_uniform_branch_source(monkeypatch):
    monkeypatch.setenv("TILE2TRITON_UNIFORM_BRANCHES", "0")
    masked = fresh(sectioned_sum, 3, 150).lowered_for("sm_90").source
    monkeypatch.setenv("TILE2TRITON_UNIFORM_BRANCHES", "1")
    branch = fresh(sectioned_sum, 3, 150).lowered_for("sm_90").source
    # masked: a block-level test (a reduction over the threads) inside the loop; a branch: the loop
    # stands in `if count > 0:`, its body without a test
    assert "any_thread" in masked and "any_thread" not in branch
    assert "\n    if count > 0:" in branch and "\n    if count > 0:" not in masked
    # inside the loop a uniform `if` (here one holding a `break`) stays a mask, the body straight-line
    # code for Triton's pipeliner; the branch around that loop is a Triton `if` still
    leaving = fresh(sectioned_sum, 3, 150, True).lowered_for("sm_90").source
    assert "\n    if count > 0:" in leaving and "t_running = t_running & ~cond_1" in leaving


def scoped_names(M, N):
    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), Count: T.Tensor((M,), T.int32), Out: T.Tensor((M, 32), T.float32)):
        with T.Kernel(M, threads=128) as bm:
            count = T.alloc_var(T.int32)
            count = Count[bm]
            tx = T.get_thread_binding()  # noqa: F841 - the thread view
            acc = T.alloc_fragment((32,), T.float32)
            T.clear(acc)
            base = 0
            if count > 0:
                base = count * 2  # bound in the branch, read after it (Python's scoping, as TileLang's)
                extra = T.alloc_fragment((32,), T.float32)
                T.fill(extra, 1.0)
                for t in T.serial(count):
                    for j in T.Parallel(32):
                        acc[j] += A[bm, T.min(t * 32 + j, N - 1)]
            for j in T.Parallel(32):
                Out[bm, j] = acc[j] + base + extra[j]

    return main


def test_uniform_branch_keeps_names_it_binds(dev):
    # a name or buffer of the branch used after it: the masks stay (a Triton name bound in one
    # branch is undefined after it), so the kernel compiles for the GPU
    from tile2triton.runtime.target import compile_offline

    kernel = fresh(scoped_names, 3, 150)
    source = kernel.lowered_for("sm_90").source
    assert "\n    if count > 0:" not in source  # (the comment naming the TileLang line has it too)
    compile_offline(kernel.lowered_for("sm_90"), "sm_90", registers_too=False)
    a = torch.randn(3, 150, device=dev)
    count = torch.tensor([2, 1, 3], dtype=torch.int32, device=dev)
    ref = torch.zeros(3, 32, dtype=torch.float64)
    for r in range(3):
        for t in range(int(count[r])):
            ref[r] += a[r, torch.clamp(torch.arange(32) + t * 32, max=149)].double().cpu()
        ref[r] += int(count[r]) * 2 + 1.0
    assert_close(kernel(a, count), ref, 1e-4, 1e-5)
