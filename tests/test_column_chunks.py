"""passes/column_chunks.py: wide columns of a kernel past the register budget, 128 at a time.

The sparse MLA backward of test_staged_atomics (TileLang's deepseek_v32 kernel at small sizes) with
256 and 512 head dims: the pass takes it only past the register budget, which these sizes are not,
so the tests stand the budget test in for the H200's 512-column kernel (``past``)."""

import pytest
import torch
from t2t_util import assert_close
from test_staged_atomics import run_sparse_mla_bwd, sparse_mla_bwd

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.passes import column_chunks


def _code(kernel) -> str:
    return "\n".join(line for line in kernel.get_kernel_source().splitlines() if not line.strip().startswith("#"))


@pytest.fixture
def past(monkeypatch):
    monkeypatch.setattr(column_chunks, "accumulators_past_budget", lambda kernel, warps: True)


@pytest.mark.parametrize("D", [256, 512])
def test_sparse_mla_bwd_in_chunks(D, past):
    kernel = run_sparse_mla_bwd(5, 19, 12, D, 12, 24, 12, seed=5)
    src = _code(kernel)
    chunks = D // 128
    assert f"KV_shared_c{chunks - 1}" in src and f"KV_shared_c{chunks}" not in src
    lines = [line.strip() for line in src.splitlines()]
    # the two gemms reading a KV chunk side by side; a dKV chunk's atomic right after its gemms
    for c in range(chunks):
        at = next(
            i for i, line in enumerate(lines) if line.startswith("acc_p = tl.dot(") and f"KV_shared_c{c})" in line
        )
        assert lines[at + 1].startswith("acc_dp = tl.dot(") and f"KV_shared_c{c})" in lines[at + 1]
    atomics = [i for i, line in enumerate(lines) if line.startswith("tl.atomic_add(")]
    dkv_gemms = [i for i, line in enumerate(lines) if line.startswith("acc_dkv_c")]
    assert len(atomics) == chunks + 1 and atomics[0] < dkv_gemms[-1]


def test_under_the_budget_nothing_changes():
    kernel = tilelang.compile(sparse_mla_bwd(5, 19, 12, 256, 12, 24, 12))
    assert "_c0" not in _code(kernel)


def test_switch_off(past, monkeypatch):
    monkeypatch.setenv("TILE2TRITON_COLUMN_CHUNKS", "0")
    kernel = tilelang.compile(sparse_mla_bwd(5, 19, 12, 256, 12, 24, 12))
    assert "_c0" not in _code(kernel)


def test_a_buffer_read_as_a_whole_stays_whole(past):
    """A reduction over the wide buffer is not a column statement: nothing is chunked, and the
    results hold."""
    M, N, K = 20, 256, 24

    @T.prim_func
    def gemm_rowsum(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), S: T.Tensor((M,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((M, K), "float16")
            b = T.alloc_shared((K, N), "float16")
            c = T.alloc_fragment((M, N), "float32")
            s = T.alloc_fragment((M,), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, c, clear_accum=True)
            T.reduce_sum(c, s, dim=1)
            T.copy(s, S)

    kernel = tilelang.compile(gemm_rowsum)
    a, b = torch.randn(M, K).half(), torch.randn(K, N).half()
    out = torch.full((M,), float("nan"))
    kernel(a, b, out)
    assert_close(out, (a.double() @ b.double()).sum(1), 1e-2, 1e-2)
    assert "_c0" not in _code(kernel)


def test_gemm_chunks_over_n_and_k(past):
    """C = A B with B's 256 columns chunked over N, then D = C' E^T over K (C' and E of 256
    columns), and a T.Parallel over the chunked columns between them."""
    M, N, K, P = 20, 256, 24, 36

    @T.prim_func
    def two_gemms(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        E: T.Tensor((P, N), "float16"),
        C: T.Tensor((M, N), "float32"),
        D: T.Tensor((M, P), "float32"),
    ):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((M, K), "float16")
            b = T.alloc_shared((K, N), "float16")
            e = T.alloc_shared((P, N), "float16")
            c = T.alloc_fragment((M, N), "float32")
            c16 = T.alloc_shared((M, N), "float16")
            d = T.alloc_fragment((M, P), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.copy(E, e)
            T.gemm(a, b, c, clear_accum=True)
            for i, j in T.Parallel(M, N):
                c[i, j] = c[i, j] * 0.5 + j
            T.copy(c, C)
            T.copy(c, c16)
            T.gemm(c16, e, d, transpose_B=True, clear_accum=True)
            T.copy(d, D)

    kernel = tilelang.compile(two_gemms)
    a, b, e = torch.randn(M, K).half(), torch.randn(K, N).half(), torch.randn(P, N).half()
    c = torch.full((M, N), float("nan"))
    d = torch.full((M, P), float("nan"))
    kernel(a, b, e, c, d)
    c_ref = (a.double() @ b.double()) * 0.5 + torch.arange(N).double()
    assert_close(c, c_ref, 1e-2, 1e-2)
    assert_close(d, c_ref.half().double() @ e.double().T, 2e-2, 2e-2)
    src = _code(kernel)
    assert "c_c1" in src and "b_c1" in src and "e_c1" in src and "c_c2" not in src
