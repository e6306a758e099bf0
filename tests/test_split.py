"""Index-set splitting (passes/split.py): a loop whose T.Parallel conditions hold for every lane
in a prefix of its iterations runs as two loops, the first without those conditions."""

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


@tilelang.jit(out_idx=[-1])
def causal_row_sums(M, N, BM, BN, use_if):
    """out[r] = sum of A[r, c] for c <= r + shift: a lower-triangular mask built per K block, as
    causal attention does, either with T.if_then_else or with an ``if`` in the T.Parallel."""
    shift = N - M

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), Out: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, BM), threads=128) as bx:
            acc = T.alloc_fragment((BM, BN), "float32")
            total = T.alloc_fragment((BM,), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(N, BN), num_stages=2):
                for i, j in T.Parallel(BM, BN):
                    row = bx * BM + i + shift
                    col = k * BN + j
                    if use_if:
                        if (row >= col) & (col < N):
                            acc[i, j] += A[bx * BM + i, col]
                    else:
                        acc[i, j] += T.if_then_else((row >= col) & (col < N), A[bx * BM + i, col], 0.0)
            T.reduce_sum(acc, total, dim=1)
            for i in T.Parallel(BM):
                Out[bx * BM + i] = total[i]

    return main


@pytest.mark.parametrize("use_if", [False, True])
@pytest.mark.parametrize("M, N, BM, BN", [(70, 70, 16, 16), (45, 90, 32, 16), (100, 130, 16, 32)])
def test_split_causal_mask(dev, M, N, BM, BN, use_if):
    kernel = causal_row_sums(M, N, BM, BN, use_if)
    a = torch.randn(M, N, device=dev)
    rows = torch.arange(M, device=dev)[:, None] + (N - M)
    cols = torch.arange(N, device=dev)[None, :]
    ref = torch.where(cols <= rows, a.double(), 0).sum(1)
    torch.testing.assert_close(kernel(a).double(), ref, atol=1e-4, rtol=1e-4)


def test_split_source():
    source = causal_row_sums(70, 70, 16, 16, False).get_kernel_source(interpret=True)
    code = "\n".join(line for line in source.splitlines() if not line.strip().startswith("#"))
    # below the diagonal the mask is known true: the first loop adds without a select
    assert "k_split = " in code
    first, second = code.split("for k in tl.range(k_split")
    assert "for k in tl.range(0, k_split" in first
    assert "tl.where" not in first.split("for k in tl.range(0, k_split")[1]
    # the second loop keeps the condition: a select, or the load's mask (T.if_then_else(c, A[...], 0))
    assert "tl.where" in second or ("& keep" in second and "other=0" in second)
    assert "num_stages=2" in first and "num_stages=2" in second


@tilelang.jit(out_idx=[-1])
def upper_mask(N, BN):
    """A condition true for a suffix of the iterations (col >= row): not split."""

    @T.prim_func
    def main(A: T.Tensor((N, N), "float32"), Out: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, BN), threads=128) as bx:
            acc = T.alloc_fragment((BN, BN), "float32")
            total = T.alloc_fragment((BN,), "float32")
            T.clear(acc)
            for k in T.serial(T.ceildiv(N, BN)):
                for i, j in T.Parallel(BN, BN):
                    acc[i, j] += T.if_then_else(k * BN + j >= bx * BN + i, A[bx * BN + i, k * BN + j], 0.0)
            T.reduce_sum(acc, total, dim=1)
            for i in T.Parallel(BN):
                Out[bx * BN + i] = total[i]

    return main


def test_suffix_conditions_stay_one_loop(dev):
    kernel = upper_mask(50, 16)
    assert "k_split" not in kernel.get_kernel_source(interpret=dev == "cpu")
    a = torch.randn(50, 50, device=dev)
    ref = torch.triu(a.double()).sum(1)
    torch.testing.assert_close(kernel(a).double(), ref, atol=1e-4, rtol=1e-4)


@tilelang.jit(out_idx=[-1])
def masked_pair_sums(M, N, BM, BN):
    """out[r] = sum over c < lens[0] of A[r, c] + B[r, c]: two T.Parallel statements masked by the
    same prefix condition on a length read at run time, as a varlen kernel's loads are."""

    @T.prim_func
    def main(
        A: T.Tensor((M, N), "float32"),
        B: T.Tensor((M, N), "float32"),
        Lens: T.Tensor((1,), "int32"),
        Out: T.Tensor((M,), "float32"),
    ):
        with T.Kernel(T.ceildiv(M, BM), threads=128) as bx:
            acc = T.alloc_fragment((BM, BN), "float32")
            total = T.alloc_fragment((BM,), "float32")
            n = Lens[0]
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(N, BN), num_stages=2):
                for i, j in T.Parallel(BM, BN):
                    acc[i, j] += T.if_then_else(k * BN + j < n, A[bx * BM + i, k * BN + j], 0.0)
                for i, j in T.Parallel(BM, BN):
                    acc[i, j] += T.if_then_else(k * BN + j < n, B[bx * BM + i, k * BN + j], 0.0)
            T.reduce_sum(acc, total, dim=1)
            for i in T.Parallel(BM):
                Out[bx * BM + i] = total[i]

    return main


def test_split_point_takes_each_condition_once(dev):
    """The same condition in two statements gives the split point once (no min of a bound with itself)."""
    M, N, n = 45, 90, 77
    kernel = masked_pair_sums(M, N, 16, 16)
    code = kernel.get_kernel_source(interpret=dev == "cpu")
    split = [line.strip() for line in code.splitlines() if line.strip().startswith("k_split = ")]
    assert len(split) == 1 and split[0].count("tl.minimum(") == 1, code
    a, b = torch.randn(M, N, device=dev), torch.randn(M, N, device=dev)
    lens = torch.tensor([n], dtype=torch.int32, device=dev)
    ref = (a.double() + b.double())[:, :n].sum(1)
    torch.testing.assert_close(kernel(a, b, lens).double(), ref, atol=1e-4, rtol=1e-4)


@tilelang.jit(out_idx=[-1])
def varlen_causal_row_sums(M, N, BM, BN):
    """out[r] = sum of A[r, c] over c <= r + (kv_len - q_len), c < kv_len, for rows r < q_len (0 past
    q_len): the varlen attention example's mask, ``T.if_then_else(past_diagonal or row_out or
    col_out, -1e9, 0)``, a disjunction whose comparisons on the key are false for a prefix of the
    iterations."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), Lens: T.Tensor((2,), "int32"), Out: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, BM), threads=128) as bx:
            acc = T.alloc_fragment((BM, BN), "float32")
            total = T.alloc_fragment((BM,), "float32")
            q_len = Lens[0]
            kv_len = Lens[1]
            offset = kv_len - q_len
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(kv_len, BN), num_stages=2):
                for i, j in T.Parallel(BM, BN):
                    acc[i, j] += T.if_then_else(
                        (bx * BM + i + offset < k * BN + j) or (bx * BM + i >= q_len or k * BN + j >= kv_len),
                        0.0,
                        A[bx * BM + i, k * BN + j],
                    )
            T.reduce_sum(acc, total, dim=1)
            for i in T.Parallel(BM):
                Out[bx * BM + i] = total[i]

    return main


@pytest.mark.parametrize("q_len, kv_len", [(61, 90), (45, 45), (30, 77)])
def test_split_disjunction_false_for_a_prefix(dev, q_len, kv_len):
    """Before the diagonal and the key tail, the first loop keeps only the row's own comparison."""
    M, N, BM, BN = 61, 90, 16, 16
    kernel = varlen_causal_row_sums(M, N, BM, BN)
    code = "\n".join(
        line for line in kernel.get_kernel_source(interpret=dev == "cpu").splitlines() if not line.strip().startswith("#")
    )
    first, second = code.split("for k in tl.range(k_split")
    body = first.split("for k in tl.range(0, k_split")[1]
    assert "q_len" in body and "offset" not in body and "kv_len" not in body, body
    assert "offset" in second and "kv_len" in second
    a = torch.randn(M, N, device=dev)
    lens = torch.tensor([q_len, kv_len], dtype=torch.int32, device=dev)
    rows = torch.arange(M, device=dev)[:, None]
    cols = torch.arange(N, device=dev)[None, :]
    masked = (rows + kv_len - q_len < cols) | (rows >= q_len) | (cols >= kv_len)
    ref = torch.where(masked, 0, a.double()).sum(1)
    torch.testing.assert_close(kernel(a, lens).double(), ref, atol=1e-4, rtol=1e-4)


@tilelang.jit(out_idx=[-1])
def upper_from_diagonal(N, BM, BN):
    """out[r] = sum of A[r, c] over c >= r, the loop starting at the diagonal's block (``by * BM // BN``,
    as the causal attention backward examples do): the mask is false only before that block."""

    @T.prim_func
    def main(A: T.Tensor((N, N), "float32"), Out: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, BM), threads=128) as by:
            acc = T.alloc_fragment((BM, BN), "float32")
            total = T.alloc_fragment((BM,), "float32")
            T.clear(acc)
            loop_st = T.floordiv(by * BM, BN)
            for k in T.Pipelined(loop_st, T.ceildiv(N, BN), num_stages=2):
                for i, j in T.Parallel(BM, BN):
                    acc[i, j] += T.if_then_else(by * BM + i <= k * BN + j, A[by * BM + i, k * BN + j], 0.0)
            T.reduce_sum(acc, total, dim=1)
            for i in T.Parallel(BM):
                Out[by * BM + i] = total[i]

    return main


@pytest.mark.parametrize("BM, BN", [(16, 16), (32, 16)])
def test_no_split_at_the_loop_start(dev, BM, BN):
    """A comparison false only before the loop's first iteration gives no split (an empty first loop)."""
    N = 75
    kernel = upper_from_diagonal(N, BM, BN)
    assert "k_split" not in kernel.get_kernel_source(interpret=dev == "cpu")
    a = torch.randn(N, N, device=dev)
    ref = torch.triu(a.double()).sum(1)
    torch.testing.assert_close(kernel(a).double(), ref, atol=1e-4, rtol=1e-4)
