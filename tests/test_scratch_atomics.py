"""Atomics on shared buffers kept in global scratch (codegen/scratch.py, codegen/atomics.py): relaxed
ones block-scoped (``TILE2TRITON_SCRATCH_CTA_ATOMICS``), no barrier between atomics of one commuting
kind on one buffer (``TILE2TRITON_SCRATCH_ATOMIC_BARRIERS``), and a shared counter's slot claims
per block or per lane (``TILE2TRITON_SCRATCH_BLOCK_CLAIMS``).  Kernels modelled on TileLang's
radix top-k (examples/deepseek_v32/topk_selector.py): a per-block histogram, offsets, then each
element claiming its slot with ``return_prev=True``; outputs are NaN/sentinel-poisoned and compared
exactly with torch."""

import re

import pytest
import torch
from t2t_util import sm90_ptx

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import ir


@pytest.fixture(autouse=True)
def _global_scratch(monkeypatch):
    """These tests are of the scratch area in global memory (the form on AMD and the interpreter, and
    wherever the on-chip one does not serve): the on-chip form has its own, tests/test_on_chip_scratch.py."""
    monkeypatch.setenv("TILE2TRITON_ON_CHIP_SCRATCH", "0")

SETTINGS = (
    "TILE2TRITON_SCRATCH_CTA_ATOMICS",
    "TILE2TRITON_SCRATCH_ATOMIC_BARRIERS",
    "TILE2TRITON_SCRATCH_BLOCK_CLAIMS",
    "TILE2TRITON_SCRATCH_HISTOGRAM",
)


def bin_sort(rows, n, threads, bins, order=None):
    """Per row, a counting sort of values in [0, bins): a shared histogram (shifted by one), its
    running sum by thread 0, then each element's slot ``pos = atomic_add(start[v], 1, return_prev)``."""
    kwargs = {} if order is None else {"memory_order": order}

    @T.prim_func
    def main(A: T.Tensor((rows, n), "int32"), O: T.Tensor((rows, n), "int32")):
        with T.Kernel(rows, threads=threads) as bx:
            tx = T.get_thread_binding()
            hist = T.alloc_shared((bins + 1,), "int32")
            pos = T.alloc_var("int32")
            for i in T.serial(T.ceildiv(bins + 1, threads)):
                if i * threads + tx < bins + 1:
                    hist[i * threads + tx] = 0
            T.sync_threads()
            for s in T.serial(T.ceildiv(n, threads)):
                if s * threads + tx < n:
                    T.atomic_add(hist[A[bx, s * threads + tx] + 1], 1, **kwargs)
            T.sync_threads()
            if tx == 0:
                for b in T.serial(bins):
                    hist[b + 1] = hist[b + 1] + hist[b]
            T.sync_threads()
            for s in T.serial(T.ceildiv(n, threads)):
                if s * threads + tx < n:
                    pos = T.atomic_add(hist[A[bx, s * threads + tx]], 1, return_prev=True)
                    O[bx, pos] = A[bx, s * threads + tx]

    return main


def compaction(rows, n, threads, cap):
    """Per row, the positions of the values above 0 gathered through a shared counter
    (``pos = atomic_add(count[0], 1, return_prev)``: the same address in every lane), and the count."""

    @T.prim_func
    def main(A: T.Tensor((rows, n), "float32"), O: T.Tensor((rows, cap), "int32"), C: T.Tensor((rows,), "int32")):
        with T.Kernel(rows, threads=threads) as bx:
            tx = T.get_thread_binding()
            count = T.alloc_shared((1,), "int32")
            pos = T.alloc_var("int32")
            if tx == 0:
                count[0] = 0
            T.sync_threads()
            for s in T.serial(T.ceildiv(n, threads)):
                if s * threads + tx < n:
                    if A[bx, s * threads + tx] > 0:
                        pos = T.atomic_add(count[0], 1, return_prev=True)
                        O[bx, pos] = s * threads + tx
            T.sync_threads()
            if tx == 0:
                C[bx] = count[0]

    return main


def mixed_kinds(rows, n, threads, bins):
    """An add and a max on one shared buffer in one loop: they do not commute, so a barrier stays
    between them (hist[bins] holds the row's largest value).  threads x (bins + 1) past the
    register path's one-hot limit keeps the buffer in scratch."""

    @T.prim_func
    def main(A: T.Tensor((rows, n), "int32"), H: T.Tensor((rows, bins + 1), "int32")):
        with T.Kernel(rows, threads=threads) as bx:
            tx = T.get_thread_binding()
            hist = T.alloc_shared((bins + 1,), "int32")
            for i in T.serial(T.ceildiv(bins + 1, threads)):
                if i * threads + tx < bins + 1:
                    hist[i * threads + tx] = 0
            T.sync_threads()
            for s in T.serial(T.ceildiv(n, threads)):
                if s * threads + tx < n:
                    T.atomic_add(hist[A[bx, s * threads + tx] % bins], 1)
                    T.atomic_max(hist[bins], A[bx, s * threads + tx])
            T.sync_threads()
            for i in T.serial(T.ceildiv(bins + 1, threads)):
                if i * threads + tx < bins + 1:
                    H[bx, i * threads + tx] = hist[i * threads + tx]

    return main


@pytest.fixture
def settings(monkeypatch):
    """Set the three switches (unset: the defaults) for kernels compiled afterwards."""
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("TILE2TRITON_SHARED_SCRATCH", raising=False)

    def set_(cta=None, barriers=None, claims=None, histogram=None):
        for name, value in zip(SETTINGS, (cta, barriers, claims, histogram)):
            if value is not None:
                monkeypatch.setenv(name, value)

    return set_


def code(kernel) -> str:
    src = kernel.get_kernel_source(interpret=False)
    return "\n".join(line for line in src.splitlines() if not line.strip().startswith("#"))


def loop_body(src: str, header: str) -> str:
    """The lines of the first loop whose header contains ``header`` (up to its dedent)."""
    lines = src.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("for ") and header in line)
    indent = len(lines[start]) - len(lines[start].lstrip())
    body = []
    for line in lines[start + 1 :]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        body.append(line)
    return "\n".join(body)


def scratch_atomics(src: str) -> list:
    return [line.strip() for line in src.splitlines() if "tl.atomic_" in line]


# ------------------------------------------------------------------ results under every setting
@pytest.mark.parametrize(
    "cta,barriers,claims,histogram",
    [
        (None, None, None, None),
        ("0", "keep", None, None),
        ("1", "atomics", None, None),
        (None, "atomics", "0", None),
        (None, None, "0", "1"),
    ],
)
def test_bin_sort_and_compaction(dev, settings, cta, barriers, claims, histogram):
    settings(cta, barriers, claims, histogram)
    rows, n, threads, bins = 3, 300, 96, 37
    a = torch.randint(0, bins, (rows, n), dtype=torch.int32, device=dev)
    out = torch.full((rows, n), -7, dtype=torch.int32, device=dev)
    kernel = tilelang.compile(bin_sort(rows, n, threads, bins))  # a fresh compilation under these settings
    kernel(a, out)
    assert "scratch_ptr" in code(kernel)
    assert ("tl.histogram(" in code(kernel)) == (histogram == "1")
    assert torch.equal(out.cpu(), torch.sort(a.cpu(), dim=1).values)

    x = torch.randn(rows, n, device=dev)
    got = torch.full((rows, n), -7, dtype=torch.int32, device=dev)
    count = torch.full((rows,), -7, dtype=torch.int32, device=dev)
    tilelang.compile(compaction(rows, n, threads, n))(x, got, count)
    for r in range(rows):
        want = torch.nonzero(x[r].cpu() > 0).flatten()
        assert count[r].item() == len(want)
        assert torch.equal(torch.sort(got[r, : len(want)].cpu()).values, want.to(torch.int32))
        assert bool((got[r, len(want) :] == -7).all())


@pytest.mark.parametrize("histogram", [None, "1"])
def test_mixed_kinds(dev, settings, histogram):
    settings(histogram=histogram)
    rows, n, threads, bins = 2, 250, 128, 301
    a = torch.randint(0, 1000, (rows, n), dtype=torch.int32, device=dev)
    h = torch.full((rows, bins + 1), -7, dtype=torch.int32, device=dev)
    kernel = tilelang.compile(mixed_kinds(rows, n, threads, bins))
    kernel(a, h)
    ref = torch.stack([torch.bincount(a[r].cpu() % bins, minlength=bins) for r in range(rows)]).to(torch.int32)
    assert torch.equal(h[:, :bins].cpu(), ref)
    assert torch.equal(h[:, bins].cpu(), a.cpu().max(dim=1).values)
    # a barrier before each of the two atomics (the other kind is pending), as with barriers kept
    body = loop_body(code(kernel), "for s in")
    assert body.count("tl.debug_barrier()") == 2


# ------------------------------------------------------------------ generated source
def test_default_atomics_are_block_scoped_without_barriers_between_reductions(settings):
    settings()
    src = code(tilelang.compile(bin_sort(3, 300, 96, 37)))
    atomics = scratch_atomics(src)
    assert len(atomics) == 2 and all("sem='relaxed', scope='cta'" in line for line in atomics)
    histogram, claims = loop_body(src, "for s in"), loop_body(src, "for s_1 in")
    assert "tl.atomic_add" in histogram and "tl.debug_barrier()" not in histogram
    # a claim after the previous iteration's claims keeps its barrier by default
    assert "tl.atomic_add" in claims and "tl.debug_barrier()" in claims


def test_barriers_kept_and_gpu_scope_when_switched_off(settings):
    settings(cta="0", barriers="keep")
    src = code(tilelang.compile(bin_sort(3, 300, 96, 37)))
    assert all("sem=" not in line and "scope=" not in line for line in scratch_atomics(src))
    assert "tl.debug_barrier()" in loop_body(src, "for s in")
    assert "tl.debug_barrier()" in loop_body(src, "for s_1 in")


def test_barriers_between_claims_left_out_with_atomics(settings):
    settings(barriers="atomics")
    src = code(tilelang.compile(bin_sort(3, 300, 96, 37)))
    assert "tl.debug_barrier()" not in loop_body(src, "for s in")
    assert "tl.debug_barrier()" not in loop_body(src, "for s_1 in")


def test_block_claims_switch(settings):
    settings(claims="1")  # on: one claim per block and a cumsum (the default is one per lane)
    src = code(tilelang.compile(compaction(3, 300, 96, 300)))
    assert "tl.cumsum(" in src and "count_claimed" in src
    claim = next(line for line in scratch_atomics(src))
    assert "sem='relaxed', scope='cta'" in claim
    settings(claims="0")
    src = code(tilelang.compile(compaction(3, 300, 96, 300)))
    assert "tl.cumsum(" not in src and "sem='relaxed', scope='cta'" in scratch_atomics(src)[0]


def test_stronger_orders_keep_gpu_scope(settings):
    settings()
    src = code(tilelang.compile(bin_sort(3, 300, 96, 37, order="release")))
    histogram = next(line for line in scratch_atomics(src) if "prev" not in line)
    assert "sem='release'" in histogram and "scope=" not in histogram


def test_global_atomics_unchanged(settings):
    """Atomics on global tensors keep GPU scope (other blocks see them)."""

    @T.prim_func
    def main(A: T.Tensor((300,), "int32"), H: T.Tensor((37,), "int32")):
        with T.Kernel(T.ceildiv(300, 128), threads=128) as bx:
            tx = T.get_thread_binding()
            if bx * 128 + tx < 300:
                T.atomic_add(H[A[bx * 128 + tx]], 1)

    settings()
    (line,) = scratch_atomics(code(tilelang.compile(main)))
    assert "sem='relaxed'" in line and "scope=" not in line


def test_accesses_of_an_atomic(settings):
    """The barrier analysis sees an element atomic's destination as one commuting update (not a
    load and a store) and the loads in its index and value as loads."""
    from tile2triton.codegen.scratch import _accesses

    idx = ir.Buffer("idx", ir.SHARED, (4,), ir.INT32)
    hist = ir.Buffer("hist", ir.SHARED, (8,), ir.INT32)
    load = ir.Load(idx, (ir.Const(0, ir.INT32),))
    s = ir.Atomic(None, "add", ir.Load(hist, (load,)), ir.Const(1, ir.INT32))
    assert list(_accesses(s)) == [(hist, ("add", False)), (idx, False)]
    x = ir.Atomic(None, "xchg", ir.Load(hist, (load,)), ir.Const(1, ir.INT32))
    assert (hist, True) in list(_accesses(x))


# ------------------------------------------------------------------ what Triton makes of it (sm_90)
@pytest.mark.parametrize("cta", ["1", "0"])
def test_ptx_atomics_for_sm90(settings, tmp_path, cta):
    settings(cta=cta)
    kernel = tilelang.compile(bin_sort(3, 300, 96, 37))
    ptx = sm90_ptx(kernel.lowered(False), "A=*i32 O=*i32 scratch_ptr=*u8", tmp_path)
    ops = re.findall(r"\b(?:atom|red)\.[\w.]+", ptx)
    assert ops, ptx
    if cta == "1":  # relaxed, block scope, no fences (Triton 3.9 writes the histogram's unused results as red)
        assert all(re.search(r"\.cta\.relaxed\.", op) for op in ops), ops
    else:
        assert all("acq_rel" in op and ".gpu." in op for op in ops), ops


def test_settings_parse(monkeypatch):
    from tile2triton import settings as s

    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)
    now = s.current()
    assert (now.scratch_cta_atomics, now.scratch_atomic_barriers, now.scratch_block_claims) == (
        True,
        "reductions",
        False,
    )
    assert now.scratch_histogram is False
    monkeypatch.setenv("TILE2TRITON_SCRATCH_ATOMIC_BARRIERS", "Atomics")
    assert s.current().scratch_atomic_barriers == "atomics"
    monkeypatch.setenv("TILE2TRITON_SCRATCH_ATOMIC_BARRIERS", "some")
    with pytest.raises(s.SettingError, match="TILE2TRITON_SCRATCH_ATOMIC_BARRIERS"):
        s.current()


# ------------------------------------------------------------------ loops of atomics as tile axes
def chunk_histogram(rows, n, threads, bins, per, shared=True):
    """topk_selector's first pass: each thread takes ``per`` consecutive elements a step
    (``for j in T.serial(per)``), each added under a bound check to a shared (or global) histogram."""

    @T.prim_func
    def main(A: T.Tensor((rows, n), "int32"), H: T.Tensor((rows, bins), "int32")):
        with T.Kernel(rows, threads=threads) as bx:
            tx = T.get_thread_binding()
            hist = T.alloc_shared((bins,), "int32")
            for i in T.serial(T.ceildiv(bins, threads)):
                if i * threads + tx < bins:
                    hist[i * threads + tx] = 0
            T.sync_threads()
            for s in T.serial(T.ceildiv(n, threads * per)):
                base = s * threads * per + tx * per
                for j in T.serial(per):
                    if base + j < n:
                        if shared:
                            T.atomic_add(hist[A[bx, base + j] % bins], 1)
                        else:
                            T.atomic_add(H[bx, A[bx, base + j] % bins], 1)
            T.sync_threads()
            if shared:
                for i in T.serial(T.ceildiv(bins, threads)):
                    if i * threads + tx < bins:
                        H[bx, i * threads + tx] = hist[i * threads + tx]

    return main


@pytest.mark.parametrize("vectorize", ["1", "0"])
@pytest.mark.parametrize("shared", [True, False])
def test_atomic_loop_as_tile_axis(dev, monkeypatch, settings, vectorize, shared):
    settings()
    monkeypatch.setenv("TILE2TRITON_VECTORIZE_ATOMIC_LOOPS", vectorize)
    rows, n, threads, bins, per = 3, 700, 128, 300, 3
    a = torch.randint(0, 5000, (rows, n), dtype=torch.int32, device=dev)
    h = torch.full((rows, bins), -7 if shared else 0, dtype=torch.int32, device=dev)
    kernel = tilelang.compile(chunk_histogram(rows, n, threads, bins, per, shared))
    kernel(a, h)
    ref = torch.stack([torch.bincount(a[r].cpu() % bins, minlength=bins) for r in range(rows)]).to(torch.int32)
    assert torch.equal(h.cpu(), ref)
    src = code(kernel)
    assert ("for j in" not in src) == (vectorize == "1")
    if vectorize == "1":
        assert "tl.arange(0, 4)[:, None]" in src  # the 3 iterations as a padded tile axis


def test_loop_with_claims_or_conditional_stores_stays_a_loop(monkeypatch, settings):
    settings()
    monkeypatch.setenv("TILE2TRITON_VECTORIZE_ATOMIC_LOOPS", "1")
    assert "for s_1 in" in code(tilelang.compile(bin_sort(3, 300, 96, 37)))  # the claims' loop

    @T.prim_func
    def last_positive(A: T.Tensor((4, 64), "float32"), O: T.Tensor((4,), "int32")):
        with T.Kernel(4, threads=32) as bx:
            for j in T.serial(64):
                if A[bx, j] > 0:
                    O[bx] = j  # the last such j wins: the iterations' order matters

    assert "for j in" in code(tilelang.compile(last_positive))
