"""TILE2TRITON_STAGED_ATOMICS (passes/staged_atomics.py): atomics that read a shared staging
buffer read the values stored into it, a loop of such atomics is an axis of their T.Parallel, and
the loop's axis merges with the row axis it offsets: TileLang's sparse MLA backward adds its dKV
accumulator with one ``tl.atomic_add``, not through a stage in registers or global scratch.

Each kernel runs under the interpreter against a float64 torch reference, at sizes that are not
powers of two; the refusals (a value changed after the store, a stage read by a copy, a loop whose
atomics read their destination) must keep their results."""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.compiler import bind_kernel_source
from tile2triton.passes.staged_atomics import stage_atomics


def staged_rows(N, D, BS, tail, split, threads=64, touch_after=False, copy_stage=False):
    """The sparse MLA backward's dKV epilogue: ``acc`` (BS x D) and ``acc_tail`` (BS x tail), made
    from G, are added into the rows ``Idx[r]`` of dKV through shared stages of BS // split rows,
    ``split`` at a time, with ``T.atomic_addx4`` (``T.atomic_addx2`` for the tail).
    ``touch_after``: acc changes between the stage's store and its atomics (the atomics must
    read the stage, not the new acc).  ``copy_stage``: the stage is also copied to Out."""
    part = BS // split

    @T.prim_func
    def main(
        G: T.Tensor((BS, D + tail), "float32"),
        Idx: T.Tensor((BS,), "int32"),
        dKV: T.Tensor((N, D + tail), "float32"),
        Out: T.Tensor((part, D), "float32"),
    ):
        with T.Kernel(2, threads=threads) as bx:
            acc = T.alloc_fragment((BS, D), "float32")
            acc_tail = T.alloc_fragment((BS, tail), "float32")
            stage = T.alloc_shared((part, D), "float32")
            stage_tail = T.alloc_shared((part, tail), "float32")
            for i, j in T.Parallel(BS, D):
                acc[i, j] = G[i, j] * (bx + 1)
            for i, j in T.Parallel(BS, tail):
                acc_tail[i, j] = G[i, D + j] * (bx + 1)
            for s in range(split):
                for i, j in T.Parallel(BS, D):
                    if i < part:
                        stage[i, j] = acc[i + s * part, j]
                for i, j in T.Parallel(BS, tail):
                    if i < part:
                        stage_tail[i, j] = acc_tail[i + s * part, j]
                if touch_after:
                    for i, j in T.Parallel(BS, D):
                        acc[i, j] = acc[i, j] * 2
                for i, j in T.Parallel(part, D // 4):
                    T.atomic_addx4(dKV[Idx[i + s * part], j * 4], stage[i, j * 4])
                for i, j in T.Parallel(part, tail // 2):
                    T.atomic_addx2(dKV[Idx[i + s * part], D + j * 2], stage_tail[i, j * 2])
            if copy_stage:
                T.copy(stage, Out)

    return main


def _reference(g, idx, base, D, split, touch_after):
    """dKV after both blocks (bx = 0, 1 scale G by 1 and 2); rows of out-of-range indices dropped.
    ``touch_after``: stage s holds acc as doubled s times."""
    part = g.shape[0] // split
    keep = (idx >= 0) & (idx < base.shape[0])
    out = base.double().clone()
    for scale in (1, 2):
        add = g.double() * scale
        if touch_after:
            for s in range(split):
                add[s * part : (s + 1) * part, :D] *= 2**s
        out.index_add_(0, idx[keep].long(), add[keep])
    return out


def _run(N, D, BS, tail, split, **kw):
    torch.manual_seed(0)
    kernel = tilelang.compile(staged_rows(N, D, BS, tail, split, **kw))
    g = torch.randn(BS, D + tail)
    idx = torch.randint(0, N, (BS,), dtype=torch.int32)
    idx[1] = idx[0]  # two rows add into one
    idx[-1] = N + 3  # out of range: masked off (TileLang's atomic would write past the tensor)
    base = torch.randn(N, D + tail)
    dkv = base.clone()
    out = torch.full((BS // split, D), float("nan"))
    kernel(g, idx, dkv, out)
    assert_close(dkv, _reference(g, idx, base, D, split, kw.get("touch_after", False)), 1e-5, 1e-5)
    return kernel, out


def _code(kernel) -> str:
    return "\n".join(line for line in kernel.get_kernel_source().splitlines() if not line.strip().startswith("#"))


@pytest.mark.parametrize(
    "N, D, BS, tail, split",
    [
        (30, 40, 24, 12, 2),  # MLA's shape, scaled down: rows 24 (padded 32), 12 a stage
        (17, 36, 21, 6, 3),  # three stages of 7 rows
    ],
)
def test_staged_atomics_read_the_accumulator(N, D, BS, tail, split):
    kernel, _ = _run(N, D, BS, tail, split)
    src = _code(kernel)
    # one vector atomic per T.atomic_addx statement, over every row at once, straight from acc
    assert src.count("tl.atomic_add(") == 2
    assert "for s" not in src and "scratch" not in src and "tl.gather" not in src
    assert f"tl.arange(0, {1 << (BS - 1).bit_length()})" in src  # the rows as one axis


def test_switch_off_keeps_the_stage(monkeypatch):
    monkeypatch.setenv("TILE2TRITON_STAGED_ATOMICS", "0")
    kernel, _ = _run(30, 40, 24, 12, 2)
    assert "for s" in _code(kernel)


def test_value_changed_after_the_store_is_not_forwarded():
    kernel, _ = _run(30, 40, 24, 12, 2, touch_after=True)
    assert "for s" in _code(kernel)  # the stage (of D columns) stays, and with it the loop


def test_stage_read_by_a_copy_stays():
    kernel, out = _run(30, 40, 24, 12, 2, copy_stage=True)
    # the last stage's rows, doubled by the second block, are what the copy reads
    torch.manual_seed(0)
    g = torch.randn(24, 52)
    assert_close(out, g[12:, :40] * 2, 1e-6, 1e-6)


def atomic_loop(N, D, reads_dst):
    """A loop of T.Parallel atomics; ``reads_dst``: each atomic also reads its destination."""

    @T.prim_func
    def main(G: T.Tensor((3, D), "float32"), Out: T.Tensor((N, D), "float32")):
        with T.Kernel(1, threads=32) as _:
            for s in range(3):
                for i, j in T.Parallel(N, D):
                    if reads_dst:
                        T.atomic_add(Out[i, j], Out[(i + 1) % N, j] * 0 + G[s, j])
                    else:
                        T.atomic_add(Out[i, j], G[s, j] * (i + 1))

    return main


@pytest.mark.parametrize("reads_dst", [False, True])
def test_loop_of_atomics_folds_unless_it_reads_the_destination(reads_dst):
    kernel = tilelang.compile(atomic_loop(13, 7, reads_dst))
    assert ("for s" in _code(kernel)) == reads_dst
    torch.manual_seed(2)
    g = torch.randn(3, 7)
    base = torch.randn(13, 7)
    out = base.clone()
    kernel(g, out)
    rows = torch.ones(13, 1, dtype=torch.float64) if reads_dst else torch.arange(1, 14, dtype=torch.float64)[:, None]
    assert_close(out, base.double() + rows * g.double().sum(0), 1e-5, 1e-5)


def test_mixed_atomic_kinds_do_not_fold():
    @T.prim_func
    def main(G: T.Tensor((2, 9), "float32"), Out: T.Tensor((9,), "float32")):
        with T.Kernel(1, threads=32) as _:
            for s in range(2):
                for j in T.Parallel(9):
                    T.atomic_add(Out[j], G[s, j])
                for j in T.Parallel(9):
                    T.atomic_max(Out[j], G[s, j])

    kernel = stage_atomics(bind_kernel_source(main).kernels[0])
    assert any(type(s).__name__ == "For" for s in kernel.body)
    compiled = tilelang.compile(main)
    torch.manual_seed(3)
    g = torch.randn(2, 9)
    out = torch.randn(9)
    ref = out.double().clone()
    for s in range(2):
        ref = torch.maximum(ref + g[s].double(), g[s].double())
    compiled(g, out)
    assert_close(out, ref, 1e-6, 1e-6)


def sparse_mla_bwd(S, SKV, H, D, DT, topk, BS):
    """TileLang's deepseek_v32 sparse MLA backward (one kv group), at small sizes: dQ in registers,
    dKV by x4 atomics staged through shared memory in two halves."""
    sm_scale = (D + DT) ** -0.5
    scale_log2 = sm_scale * 1.44269504
    half = BS // 2
    bf, f32 = "bfloat16", "float32"

    @T.prim_func
    def bwd(
        Q: T.Tensor([1, S, H, D + DT], bf),
        KV: T.Tensor([1, SKV, 1, D + DT], bf),
        dO: T.Tensor([1, S, H, D], bf),
        Indices: T.Tensor([1, S, 1, topk], "int32"),
        Lse: T.Tensor([1, S, H], f32),
        Delta: T.Tensor([1, S, H], f32),
        dKV: T.Tensor([1, SKV, 1, D + DT], f32),
        dQ: T.Tensor([1, S, H, D + DT], bf),
    ):
        with T.Kernel(S, 1, 1, threads=128) as (s_i, by, bz):
            Q_shared = T.alloc_shared([H, D + DT], bf)
            KV_shared = T.alloc_shared([BS, D], bf)
            KV_tail_shared = T.alloc_shared([BS, DT], bf)
            dO_shared = T.alloc_shared([H, D], bf)
            mask = T.alloc_fragment([BS], "bool")
            P_shared = T.alloc_shared([H, BS], bf)
            dP_shared = T.alloc_shared([H, BS], bf)
            acc_p = T.alloc_fragment([H, BS], f32)
            acc_dp = T.alloc_fragment([H, BS], f32)
            acc_dq = T.alloc_fragment([H, D], f32)
            acc_dq_tail = T.alloc_fragment([H, DT], f32)
            acc_dkv = T.alloc_fragment([BS, D], f32)
            acc_dkv_tail = T.alloc_fragment([BS, DT], f32)
            dkv_stage = T.alloc_shared([half, D], f32)
            dkv_tail_stage = T.alloc_shared([half, DT], f32)
            T.copy(Q[by, s_i, 0:H, :D], Q_shared[:, :D])
            T.copy(Q[by, s_i, 0:H, D:], Q_shared[:, D:])
            T.copy(dO[by, s_i, 0:H, :D], dO_shared)
            T.clear(acc_dq)
            T.clear(acc_dq_tail)
            for i_i in T.Pipelined(topk // BS, num_stages=0):
                for j in T.Parallel(BS):
                    mask[j] = Indices[by, s_i, bz, i_i * BS + j] <= s_i
                for h, j in T.Parallel(H, BS):
                    acc_p[h, j] = T.if_then_else(mask[j], 0, -T.infinity(f32))
                for j, d in T.Parallel(BS, D):
                    KV_shared[j, d] = KV[by, Indices[by, s_i, bz, i_i * BS + j], bz, d]
                T.gemm(Q_shared[:, :D], KV_shared, acc_p, transpose_B=True)
                for j, d in T.Parallel(BS, DT):
                    KV_tail_shared[j, d] = KV[by, Indices[by, s_i, bz, i_i * BS + j], bz, D + d]
                T.gemm(Q_shared[:, D:], KV_tail_shared, acc_p, transpose_B=True)
                for h, j in T.Parallel(H, BS):
                    acc_p[h, j] = T.exp2(acc_p[h, j] * scale_log2 - Lse[by, s_i, h])
                T.copy(acc_p, P_shared)
                T.gemm(dO_shared, KV_shared, acc_dp, transpose_B=True, clear_accum=True)
                for h, j in T.Parallel(H, BS):
                    acc_dp[h, j] = acc_p[h, j] * (acc_dp[h, j] - Delta[by, s_i, h]) * sm_scale
                T.copy(acc_dp, dP_shared)
                T.gemm(dP_shared, KV_shared, acc_dq)
                T.gemm(dP_shared, KV_tail_shared, acc_dq_tail)
                T.gemm(dP_shared, Q_shared[:, :D], acc_dkv, transpose_A=True, clear_accum=True)
                T.gemm(P_shared, dO_shared, acc_dkv, transpose_A=True)
                T.clear(acc_dkv_tail)
                T.gemm(dP_shared, Q_shared[:, D:], acc_dkv_tail, transpose_A=True)
                for s in range(2):
                    for j, d in T.Parallel(BS, D):
                        if j < half:
                            dkv_stage[j, d] = acc_dkv[j + s * half, d]
                    for j, d in T.Parallel(BS, DT):
                        if j < half:
                            dkv_tail_stage[j, d] = acc_dkv_tail[j + s * half, d]
                    for j, d in T.Parallel(half, D // 4):
                        T.atomic_addx4(
                            dKV[by, Indices[by, s_i, bz, i_i * BS + j + s * half], bz, d * 4], dkv_stage[j, d * 4]
                        )
                    for j, d in T.Parallel(half, DT // 4):
                        T.atomic_addx4(
                            dKV[by, Indices[by, s_i, bz, i_i * BS + j + s * half], bz, D + d * 4],
                            dkv_tail_stage[j, d * 4],
                        )
            T.copy(acc_dq, dQ[by, s_i, 0:H, :D])
            T.copy(acc_dq_tail, dQ[by, s_i, 0:H, D:])

    return bwd


def run_sparse_mla_bwd(S, SKV, H, D, DT, topk, BS, seed):
    """The kernel of ``sparse_mla_bwd`` run on random inputs (dQ pre-filled with NaN), its dQ and dKV
    checked against float64 torch autograd; returns the compiled kernel."""
    torch.manual_seed(seed)
    bf = torch.bfloat16
    q = torch.randn(1, S, H, D + DT).to(bf)
    kv = torch.randn(1, SKV, 1, D + DT).to(bf)
    do = torch.randn(1, S, H, D).to(bf)
    idx = torch.full((1, S, 1, topk), SKV, dtype=torch.int32)  # padded with SKV, as the example does
    for t in range(S):
        perm = torch.randperm(max(1, t + 1))[:topk]
        idx[0, t, 0, : len(perm)] = perm.to(torch.int32)
    qf, kvf = q.double().requires_grad_(True), kv.double().requires_grad_(True)
    ids = idx[0, :, 0].long()
    valid = ids <= torch.arange(S)[:, None]
    sel = kvf[0, ids.clamp(max=SKV - 1), 0]
    scores = torch.einsum("shd,skd->shk", qf[0], sel) * (D + DT) ** -0.5
    scores = scores.masked_fill(~valid[:, None, :], float("-inf"))
    lse = torch.logsumexp(scores, -1)
    o = torch.einsum("shk,skd->shd", torch.softmax(scores, -1), sel[..., :D])
    o.backward(do[0].double())
    delta = (o.detach() * do[0].double()).sum(-1)
    kernel = tilelang.compile(sparse_mla_bwd(S, SKV, H, D, DT, topk, BS))
    dkv = torch.zeros(1, SKV, 1, D + DT)
    dq = torch.full((1, S, H, D + DT), float("nan")).to(bf)
    kernel(q, kv, do, idx, (lse * 1.44269504)[None].float(), delta[None].float(), dkv, dq)
    assert_close(dq, qf.grad, 3e-2, 3e-2)
    assert_close(dkv, kvf.grad, 3e-2, 3e-2)
    return kernel


@pytest.mark.parametrize("staged", ["1", "0"])
def test_sparse_mla_bwd(staged, monkeypatch):
    monkeypatch.setenv("TILE2TRITON_STAGED_ATOMICS", staged)
    kernel = run_sparse_mla_bwd(5, 19, 12, 40, 12, 24, 12, seed=4)
    src = _code(kernel)
    assert (src.count("tl.atomic_add(") == 2 and "for s" not in src) == (staged == "1")


def test_stage_kept_from_an_earlier_iteration_is_not_forwarded():
    """The stage is stored only in the loop's first iteration (its condition is not provable at
    the reads), and acc changes before the store: the second iteration's atomics must add the
    stage of the first, not acc as it is then."""

    @T.prim_func
    def main(G: T.Tensor((10, 12), "float32"), Out: T.Tensor((10, 12), "float32")):
        with T.Kernel(1, threads=32) as _:
            acc = T.alloc_fragment((10, 12), "float32")
            stage = T.alloc_shared((10, 12), "float32")
            T.copy(G, acc)
            for s in range(2):
                for i, j in T.Parallel(10, 12):
                    acc[i, j] = acc[i, j] * 3
                for i, j in T.Parallel(10, 12):
                    if s < 1:
                        stage[i, j] = acc[i, j]
                for i, j in T.Parallel(10, 12):
                    T.atomic_add(Out[i, j], stage[i, j])

    kernel = tilelang.compile(main)
    torch.manual_seed(5)
    g = torch.randn(10, 12)
    out = torch.randn(10, 12)
    ref = out.double() + 2 * 3 * g.double()
    kernel(g, out)
    assert_close(out, ref, 1e-5, 1e-5)


def test_overlapping_rows_fold_without_merging_axes():
    """``Out[i + s * 3]`` for i < 5: the loop's rows overlap, so its axis stays its own (a merged
    axis would need the stride 5); the atomics still fold into one T.Parallel."""

    @T.prim_func
    def main(G: T.Tensor((2, 5), "float32"), Out: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32) as _:
            for s in range(2):
                for i in T.Parallel(5):
                    T.atomic_add(Out[i + s * 3], G[s, i])

    kernel = tilelang.compile(main)
    torch.manual_seed(6)
    g = torch.randn(2, 5)
    out = torch.randn(8)
    ref = out.double().clone()
    for s in range(2):
        ref[s * 3 : s * 3 + 5] += g[s].double()
    kernel(g, out)
    assert_close(out, ref, 1e-6, 1e-6)
    assert "for s" not in _code(kernel)


def test_stage_rounds_to_its_dtype():
    """A float16 stage of float32 values: the atomics add the rounded values, as TileLang's do."""

    @T.prim_func
    def main(G: T.Tensor((6, 10), "float32"), Out: T.Tensor((6, 10), "float32")):
        with T.Kernel(1, threads=32) as _:
            acc = T.alloc_fragment((6, 10), "float32")
            stage = T.alloc_shared((6, 10), "float16")
            for i, j in T.Parallel(6, 10):
                acc[i, j] = G[i, j] * 3
            for i, j in T.Parallel(6, 10):
                stage[i, j] = acc[i, j]
            for i, j in T.Parallel(6, 10):
                T.atomic_add(Out[i, j], stage[i, j])

    kernel = tilelang.compile(main)
    g = torch.randn(6, 10) + 1 / 3
    out = torch.zeros(6, 10)
    kernel(g, out)
    assert "stage" not in _code(kernel)
    assert torch.equal(out, (g * 3).half().float())


@pytest.mark.parametrize("source", ["global", "loop"])
def test_stage_of_a_global_load_or_read_in_a_loop_stays(source):
    """A stage of global elements (forwarding would load them again at each read) and a stage
    read in a loop (computed again each iteration) are not forwarded."""

    @T.prim_func
    def main(G: T.Tensor((6, 10), "float32"), Out: T.Tensor((6, 10), "float32")):
        with T.Kernel(1, threads=32) as _:
            acc = T.alloc_fragment((6, 10), "float32")
            stage = T.alloc_shared((6, 10), "float32")
            for i, j in T.Parallel(6, 10):
                acc[i, j] = G[i, j] * 3
            for i, j in T.Parallel(6, 10):
                stage[i, j] = G[i, j] * 3 if source == "global" else acc[i, j]
            if source == "loop":
                for t in T.serial(2):
                    for i, j in T.Parallel(6, 10):
                        T.atomic_add(Out[i, j], stage[i, j])
                    for i in T.Parallel(6):
                        Out[i, t] = Out[i, t] * 1  # a store: the loop does not fold either
            else:
                for i, j in T.Parallel(6, 10):
                    T.atomic_add(Out[i, j], stage[i, j])

    kernel = tilelang.compile(main)
    g = torch.randn(6, 10)
    out = torch.zeros(6, 10)
    kernel(g, out)
    assert "stage" in _code(kernel)
    assert_close(out, g.double() * 3 * (2 if source == "loop" else 1), 1e-5, 1e-5)
