"""Copies under a block-uniform ``if`` in a pipelined loop issued before it, masked by its condition
(TILE2TRITON_SPECULATE_COPIES, codegen/speculate.py), so that Triton's pipeliner prefetches them:
block-sparse attention (``if mask[k]``) and gathered blocks (``if 0 <= i_s``), against torch, with
the switch on and off; and the copies that must stay where they are."""

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T


@pytest.fixture(autouse=True)
def _guards_stay(monkeypatch):
    """These loops' guarded bodies are what speculation works on; compacting them (passes/compact_guarded.py,
    tests/test_compact_guarded.py) would take the guard away."""
    monkeypatch.setenv("TILE2TRITON_COMPACT_GUARDED_LOOPS", "0")



def _code(kernel) -> str:
    src = kernel.get_kernel_source(interpret=False)
    return "\n".join(line for line in src.splitlines() if not line.strip().startswith("#"))


def block_sparse(heads, seq, dim, block, read_after=False):
    """Attention over the key blocks whose mask entry is set (one query block a program)."""
    nb = -(-seq // block)
    sc = dim**-0.5 * 1.44269504

    @T.prim_func
    def main(
        Q: T.Tensor((heads, seq, dim), "float16"),
        K: T.Tensor((heads, seq, dim), "float16"),
        V: T.Tensor((heads, seq, dim), "float16"),
        M: T.Tensor((heads, nb, nb), "int8"),
        O: T.Tensor((heads, seq, dim), "float32"),
    ):
        with T.Kernel(nb, heads, threads=128) as (bx, by):
            q = T.alloc_shared((block, dim), "float16")
            k_s = T.alloc_shared((block, dim), "float16")
            v_s = T.alloc_shared((block, dim), "float16")
            s = T.alloc_fragment((block, block), "float32")
            p = T.alloc_fragment((block, block), "float16")
            o = T.alloc_fragment((block, dim), "float32")
            m = T.alloc_fragment((block,), "float32")
            m_prev = T.alloc_fragment((block,), "float32")
            r = T.alloc_fragment((block,), "float32")
            l_sum = T.alloc_fragment((block,), "float32")
            row = T.alloc_fragment((block,), "float32")
            T.copy(Q[by, bx * block, 0], q)
            T.fill(o, 0)
            T.fill(l_sum, 0)
            T.fill(m, -1e30)
            for kb in T.Pipelined(nb, num_stages=2):
                if M[by, bx, kb] != 0:
                    T.copy(K[by, kb * block, 0], k_s)
                    for i, j in T.Parallel(block, block):
                        s[i, j] = T.if_then_else(kb * block + j < seq, 0, -1e30)
                    T.gemm(q, k_s, s, transpose_B=True)
                    T.copy(m, m_prev)
                    T.reduce_max(s, m, dim=1, clear=False)
                    for i in T.Parallel(block):
                        r[i] = T.exp2(m_prev[i] * sc - m[i] * sc)
                    for i, j in T.Parallel(block, block):
                        s[i, j] = T.exp2(s[i, j] * sc - m[i] * sc)
                    T.reduce_sum(s, row, dim=1)
                    for i in T.Parallel(block):
                        l_sum[i] = l_sum[i] * r[i] + row[i]
                    T.copy(s, p)
                    for i, j in T.Parallel(block, dim):
                        o[i, j] *= r[i]
                    T.copy(V[by, kb * block, 0], v_s)
                    T.gemm(p, v_s, o)
            for i, j in T.Parallel(block, dim):
                o[i, j] /= l_sum[i]
            if read_after:  # the last V block read after the loop: that copy must stay under its `if`
                for i, j in T.Parallel(block, dim):
                    o[i, j] += v_s[i, j]
            T.copy(o, O[by, bx * block, 0])

    return main


def _reference(q, k, v, mask, block):
    H, S, D = q.shape
    qf, kf, vf = q.double().cpu(), k.double().cpu(), v.double().cpu()
    keep = mask.cpu().bool().repeat_interleave(block, 1).repeat_interleave(block, 2)[:, :S, :S]
    s = (qf @ kf.transpose(1, 2)) * D**-0.5
    s = s.masked_fill(~keep, float("-inf"))
    return torch.softmax(s, -1) @ vf


@pytest.mark.parametrize("switch", ["1", "0"])
@pytest.mark.parametrize("heads,seq,dim,block", [(2, 100, 32, 32), (3, 70, 16, 16)])
def test_block_sparse_guarded_copies(dev, monkeypatch, switch, heads, seq, dim, block):
    monkeypatch.setenv("TILE2TRITON_SPECULATE_COPIES", switch)
    torch.manual_seed(seq + heads)
    nb = -(-seq // block)
    q, k, v = (torch.randn(heads, seq, dim, device=dev).half() for _ in range(3))
    mask = (torch.rand(heads, nb, nb, device=dev) < 0.5).to(torch.int8)
    mask[:, :, 0] = 1  # every query row sees a block
    kernel = tilelang.jit(block_sparse)(heads, seq, dim, block)
    out = poison((heads, seq, dim), device=dev)
    kernel(q, k, v, mask, out)
    assert_close(out, _reference(q, k, v, mask, block), atol=2e-2, rtol=2e-2)
    code = _code(kernel)
    speculated = "mask=guard" in code or "& guard" in code
    assert speculated == (switch == "1"), code


def test_copy_read_after_the_loop_stays(dev):
    """The V tile is read after the loop: with its copy issued ahead a false last test would leave
    zeros there instead of the last block copied, so it stays under the `if`; K still moves."""
    heads, seq, dim, block = 2, 48, 16, 16
    torch.manual_seed(1)
    nb = -(-seq // block)
    q, k, v = (torch.randn(heads, seq, dim, device=dev).half() for _ in range(3))
    mask = (torch.rand(heads, nb, nb, device=dev) < 0.5).to(torch.int8)
    mask[:, :, 0] = 1
    mask[:, :, -1] = 0  # the last test is false: the V tile after the loop is an earlier block's
    kernel = tilelang.jit(block_sparse)(heads, seq, dim, block, read_after=True)
    out = poison((heads, seq, dim), device=dev)
    kernel(q, k, v, mask, out)
    ref = _reference(q, k, v, mask, block)
    last = mask.cpu().bool().nonzero()  # (h, query block, key block), in order
    for h in range(heads):
        for b in range(nb):
            kb = int(last[(last[:, 0] == h) & (last[:, 1] == b)][-1, 2])
            rows = slice(b * block, min((b + 1) * block, seq))
            vb = torch.zeros(block, dim, dtype=torch.float64)
            src = v[h, kb * block : (kb + 1) * block].double().cpu()
            vb[: src.shape[0]] = src
            ref[h, rows] += vb[: rows.stop - rows.start]
    assert_close(out, ref, atol=2e-2, rtol=2e-2)
    code = _code(kernel)
    # the tiles' loads: tl.load, or on sm_90 a tensor descriptor's (V_desc.load)
    k_load = next(line for line in code.splitlines() if "k_s = " in line and ".load(" in line)
    v_load = next(line for line in code.splitlines() if "v_s = " in line and ".load(" in line)
    indent = len(v_load) - len(v_load.lstrip())
    assert "guard" in k_load and "guard" not in v_load and indent > len(k_load) - len(k_load.lstrip())


def gathered_rows(n_out, seq, dim, block, picks):
    """Each program sums the key blocks its index row names (an index < 0 or past the end: none):
    ``i_s`` is loaded in the loop, the copy at ``i_s`` stands under ``if 0 <= i_s < seq``."""

    @T.prim_func
    def main(
        X: T.Tensor((seq, dim), "float32"),
        Idx: T.Tensor((n_out, picks), "int32"),
        O: T.Tensor((n_out, block, dim), "float32"),
    ):
        with T.Kernel(n_out, threads=64) as bx:
            tile = T.alloc_shared((block, dim), "float32")
            acc = T.alloc_fragment((block, dim), "float32")
            T.clear(acc)
            for p in T.Pipelined(picks, num_stages=3):
                i_s = Idx[bx, p] * block
                if i_s >= 0 and i_s < seq:
                    T.copy(X[i_s : i_s + block, :], tile)
                    for i, j in T.Parallel(block, dim):
                        acc[i, j] += tile[i, j]
            T.copy(acc, O[bx, 0, 0])

    return main


@pytest.mark.parametrize("switch", ["1", "0"])
def test_gathered_blocks_guarded_copy(dev, monkeypatch, switch):
    monkeypatch.setenv("TILE2TRITON_SPECULATE_COPIES", switch)
    n_out, seq, dim, block, picks = 5, 90, 24, 16, 4
    torch.manual_seed(3)
    x = torch.randn(seq, dim, device=dev)
    idx = torch.randint(-1, -(-seq // block) + 1, (n_out, picks), dtype=torch.int32, device=dev)
    kernel = tilelang.jit(gathered_rows)(n_out, seq, dim, block, picks)
    out = poison((n_out, block, dim), device=dev)
    kernel(x, idx, out)
    padded = torch.zeros(seq + block * (picks + 2), dim, dtype=torch.float64)
    padded[:seq] = x.double().cpu()
    ref = torch.zeros(n_out, block, dim, dtype=torch.float64)
    for o in range(n_out):
        for s in idx[o].tolist():
            if 0 <= s * block < seq:
                ref[o] += padded[s * block : s * block + block]
    assert_close(out, ref, atol=1e-5, rtol=1e-5)
    assert ("& guard" in _code(kernel)) == (switch == "1")
