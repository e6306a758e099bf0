"""Per-thread copy nests of a thread-range section as block-level copies
(``TILE2TRITON_THREAD_COPY_TILES``, passes/thread_copies.py).

A small warp-specialized kernel shaped like TileLang's pipelined sparse MLA forward: a producer
warpgroup gathers rows ``Idx[...]`` of G into a two-stage shared ring with ``T.ptx_cp_async``
(each thread a piece of a row, its row and columns from its thread index and loop counters), marks
the rows whose index passes a limit, and signals mbarriers; a consumer warpgroup reads each stage.
Both lowerings (the rewrite on, and off) run under the interpreter against torch, with
NaN-prefilled outputs and rows that are skipped."""

import pytest
import torch
from t2t_util import assert_close, in_scratch, poison

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import ir
from tile2triton.compiler import compile_prim_func
from tile2triton.passes.thread_copies import rewrite_thread_copies


def gather_ring(M, N, NB, BI, C, limit, vec=4, lanes_per_row=8, row_shift=0, named_row=False):
    """Per query ``bx``: NB blocks of BI rows ``Idx[bx, b * BI + i]`` of G (N x C) through a
    two-stage ring; Out[bx, row] = 2 * G[idx] for rows with idx < limit, -1 otherwise; Sum[bx] the
    sum of the kept rows.  ``row_shift`` moves the producer's row by one (a layout the rewrite
    must refuse: rows of two threads collide).  ``named_row``: the copy's row is a name bound in
    the nest (``row = r * 16 + (tx - 128) // 8``), as TileLang's MLA decode producer writes it."""
    stages = 2
    producers = 128
    rows_per_round = producers // lanes_per_row
    step = lanes_per_row * vec

    @T.prim_func
    def main(
        Idx: T.Tensor((M, NB * BI), "int32"),
        G: T.Tensor((N, C), "float32"),
        Out: T.Tensor((M, NB * BI, C), "float32"),
        Sum: T.Tensor((M, C), "float32"),
    ):
        with T.Kernel(M, threads=256) as bx:
            S = T.alloc_shared((stages, BI, C), "float32")
            valid = T.alloc_shared((stages, BI), "bool")
            part = T.alloc_fragment((BI, C), "float32")
            rowsum = T.alloc_fragment((C,), "float32")
            acc = T.alloc_fragment((C,), "float32")
            idx = T.alloc_var("int32")
            ready = T.alloc_barrier([producers] * stages)
            free = T.alloc_barrier([128] * stages)
            tx = T.get_thread_binding()
            if tx < 128:
                T.clear(acc)
                for i_i in T.serial(NB // stages):
                    for stage in T.unroll(stages):
                        T.barrier_wait(ready[stage], i_i & 1)
                        for i, c in T.Parallel(BI, C):
                            part[i, c] = T.if_then_else(valid[stage, i], S[stage, i, c], 0.0)
                            Out[bx, (i_i * stages + stage) * BI + i, c] = T.if_then_else(
                                valid[stage, i], S[stage, i, c] * 2.0, -1.0
                            )
                        T.reduce_sum(part, rowsum, dim=0)
                        for c in T.Parallel(C):
                            acc[c] += rowsum[c]
                        T.barrier_arrive(free[stage])
                T.copy(acc, Sum[bx, 0])
            elif tx >= 128:
                for i_i in T.serial(NB // stages):
                    for stage in T.unroll(stages):
                        T.barrier_wait(free[stage], (i_i & 1) ^ 1)
                        for r in T.serial(BI // rows_per_round):
                            row = r * rows_per_round + (tx - 128) // lanes_per_row
                            idx = Idx[
                                bx, (i_i * stages + stage) * BI + r * rows_per_round + (tx - 128) // lanes_per_row
                            ]
                            valid[stage, r * rows_per_round + (tx - 128 + row_shift) // lanes_per_row] = idx < limit
                            if valid[stage, r * rows_per_round + (tx - 128 + row_shift) // lanes_per_row]:
                                for u in T.serial(C // step):
                                    T.ptx_cp_async(
                                        T.access_ptr(
                                            S[
                                                stage,
                                                row if named_row else r * rows_per_round + (tx - 128) // lanes_per_row,
                                                step * u + (tx - 128) % lanes_per_row * vec,
                                            ],
                                            "w",
                                            vec,
                                        ),
                                        T.access_ptr(G[idx, step * u + (tx - 128) % lanes_per_row * vec], "r", vec),
                                        vec,
                                    )
                        T.cp_async_barrier_noinc(ready[stage])

    return main


def _reference(idx, g, limit):
    rows = g.double().cpu()[idx.cpu().long().clamp(0, g.shape[0] - 1)]  # [M, K, C]
    keep = (idx.cpu() < limit)[..., None]
    out = torch.where(keep, rows * 2, torch.full_like(rows, -1.0))
    return out, torch.where(keep, rows, torch.zeros_like(rows)).sum(1)


# (M, N, NB, BI, C, limit): 96 and 160 columns (3 / 5 copies of 8 threads x 4 a row), 32 / 16 rows a block
CASES = [(3, 70, 4, 32, 96, 50), (2, 45, 2, 16, 160, 30)]


@pytest.mark.parametrize("switch", ["0", "1"])
@pytest.mark.parametrize("M, N, NB, BI, C, limit, named_row", [(*c, False) for c in CASES] + [(*CASES[0], True)])
def test_gather_ring_both_lowerings(dev, monkeypatch, switch, M, N, NB, BI, C, limit, named_row):
    monkeypatch.setenv("TILE2TRITON_THREAD_COPY_TILES", switch)
    monkeypatch.setenv("TILE2TRITON_FORWARD_SHARED", "0")  # the copies themselves (forwarding: test_forward_shared.py)
    torch.manual_seed(1)
    kernel = tilelang.compile(gather_ring(M, N, NB, BI, C, limit, named_row=named_row))
    idx = torch.randint(0, N, (M, NB * BI), dtype=torch.int32)
    idx[:, ::5] = N - 1  # past the limit: skipped
    g = torch.randn(N, C)
    out = poison((M, NB * BI, C), torch.float32, dev)
    total = poison((M, C), torch.float32, dev)
    kernel(idx.to(dev), g.to(dev), out, total)
    ref_out, ref_sum = _reference(idx, g, limit)
    assert_close(out, ref_out, 0, 0)
    assert_close(total, ref_sum, 1e-5, 1e-5)


def _kernel_ir(func) -> ir.Kernel:
    return compile_prim_func(func).kernels[0]


def _producer(kernel: ir.Kernel) -> list:
    """The statements under the producer's ``if tx >= 128`` inside the fused loop."""
    for s in ir.walk(kernel.body):
        if (
            isinstance(s, ir.If)
            and "128" in repr(s.cond)
            and any(isinstance(x, ir.Store) and x.buffer.name == "S" for x in ir.walk(s.then_body))
        ):
            return s.then_body
    raise AssertionError("no producer section")


@pytest.mark.parametrize("named_row", [False, True])
def test_rewrite_makes_block_copies(named_row):
    """The nest becomes two T.Parallel copies over the boxes it covers: valid[stage, 0:32] and
    S[stage, 0:32, 0:96]; nothing in them names the thread index."""
    kernel = _kernel_ir(gather_ring(3, 70, 4, 32, 96, 50, named_row=named_row))
    rewritten = _producer(rewrite_thread_copies(kernel))
    assert [type(s).__name__ for s in rewritten] == ["Parallel", "Parallel"]
    assert [p.extents for p in rewritten] == [[32], [32, 96]]
    tx = kernel.thread_vars[0]
    names = {id(v) for s in ir.walk(rewritten) for v in _vars(s)}
    assert id(tx) not in names
    assert rewrite_thread_copies(kernel) is not kernel
    assert any(isinstance(s, ir.For) and s.var.name == "r" for s in ir.walk(_producer(kernel)))  # input unchanged


def test_rewrite_refuses_colliding_rows():
    """Rows shifted by one thread: the flag's store and the copy's condition name different
    elements (another thread's flag), so the nest keeps its per-thread lowering."""
    kernel = _kernel_ir(gather_ring(3, 70, 4, 32, 96, 50, row_shift=1))
    assert rewrite_thread_copies(kernel) is kernel


def _vars(stmt):
    from tile2triton.passes.thread_copies import _exprs, _nodes

    for e in _exprs(stmt):
        for n in _nodes(e):
            if isinstance(n, ir.VarRef):
                yield n.var


def _section_kernel(body_kind):
    """A 128-thread section (``tx >= 64``) of 192 threads copying G (16 x 24) into S, 8 threads a
    row and 3 columns a thread; ``plain`` is rewritten, the others are refused."""
    R, C = 16, 24

    @T.prim_func
    def main(G: T.Tensor((R, C), "float32"), Out: T.Tensor((R, C), "float32")):
        with T.Kernel(1, threads=192):
            S = T.alloc_shared((R, C), "float32")
            v = T.alloc_var("float32")
            tx = T.get_thread_binding()
            if tx >= 64:
                v = 0.5
                for u in T.serial(3):
                    if body_kind == "plain":
                        S[(tx - 64) // 8, (tx - 64) % 8 * 3 + u] = G[(tx - 64) // 8, (tx - 64) % 8 * 3 + u]
                    elif body_kind == "global":  # a global store
                        Out[(tx - 64) // 8, (tx - 64) % 8 * 3 + u] = G[(tx - 64) // 8, u]
                    elif body_kind == "product":  # (tx % 8) * u: a product of digits, not one mixed radix
                        S[(tx - 64) // 8, ((tx - 64) % 8) * u % C] = G[(tx - 64) // 8, u]
                    else:  # a var stored twice (v = v + u): not a name for one value
                        v = v + u
                        S[(tx - 64) // 8, (tx - 64) % 8 * 3 + u] = v
            T.sync_threads()
            if body_kind != "global":
                T.copy(S, Out)

    return main


@pytest.mark.parametrize("body_kind", ["global", "product", "accumulate"])
def test_rewrite_refuses(body_kind):
    kernel = _kernel_ir(_section_kernel(body_kind))
    assert rewrite_thread_copies(kernel) is kernel


@pytest.mark.parametrize("switch", ["0", "1"])
def test_section_copy_both_lowerings(dev, monkeypatch, switch):
    monkeypatch.setenv("TILE2TRITON_THREAD_COPY_TILES", switch)
    monkeypatch.setenv("TILE2TRITON_FORWARD_SHARED", "0")  # the copies themselves (forwarding: test_forward_shared.py)
    kernel = _kernel_ir(_section_kernel("plain"))
    assert rewrite_thread_copies(kernel) is not kernel
    g = torch.randn(16, 24, device=dev)
    out = poison((16, 24), torch.float32, dev)
    tilelang.compile(_section_kernel("plain"))(g, out)
    assert_close(out, g.double(), 0, 0)


@pytest.mark.parametrize("switch", ["0", "1"])
def test_gather_ring_source(monkeypatch, switch):
    """With the switch on the generated kernel has no thread lanes and no scratch: the ring and
    the flags are block-level tiles; off, today's lane space and scratch stay."""
    monkeypatch.setenv("TILE2TRITON_THREAD_COPY_TILES", switch)
    monkeypatch.setenv("TILE2TRITON_FORWARD_SHARED", "0")  # the copies themselves (forwarding: test_forward_shared.py)
    src = tilelang.compile(gather_ring(3, 70, 4, 32, 96, 50), target="cuda").get_kernel_source()
    code = "\n".join(line for line in src.splitlines() if not line.strip().startswith("#"))
    lanes = "tl.arange(0, 256)" in code
    assert lanes == (switch == "0") and in_scratch(code) == (switch == "0")


@pytest.mark.parametrize("switch", ["0", "1"])
def test_large_ring_stays_in_scratch(dev, monkeypatch, switch):
    """A ring past the one-hot limit (2 x 64 x 288, padded 65536 elements) keeps its scratch with
    the switch on (as a register tile it would spill); the copies are still block-level."""
    monkeypatch.setenv("TILE2TRITON_THREAD_COPY_TILES", switch)
    monkeypatch.setenv("TILE2TRITON_FORWARD_SHARED", "0")  # the copies themselves (forwarding: test_forward_shared.py)
    M, N, NB, BI, C, limit = 1, 90, 2, 64, 288, 70
    kernel = tilelang.compile(gather_ring(M, N, NB, BI, C, limit))
    code = kernel.get_kernel_source()
    assert in_scratch(code) and ("tl.arange(0, 256)" in code) == (switch == "0")
    torch.manual_seed(2)
    idx = torch.randint(0, N, (M, NB * BI), dtype=torch.int32)
    idx[:, ::3] = N - 1
    g = torch.randn(N, C)
    out = poison((M, NB * BI, C), torch.float32, dev)
    total = poison((M, C), torch.float32, dev)
    kernel(idx.to(dev), g.to(dev), out, total)
    ref_out, ref_sum = _reference(idx, g, limit)
    assert_close(out, ref_out, 0, 0)
    assert_close(total, ref_sum, 1e-5, 1e-5)
