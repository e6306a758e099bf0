"""Warp-aggregated atomics (codegen/warp_atomics.py, ``TILE2TRITON_WARP_AGGREGATED_ATOMICS``): an
integer ``T.atomic_add`` into a scratch-backed shared buffer with a lane-uniform value as one atomic
per distinct address in each warp (inline PTX: ``match.any.sync``, a leader, ``shfl.sync``).

Triton's interpreter cannot run inline PTX, so the tests check: (a) the interpreter's results with
the switch off and on (there: the per-lane atomics); (b) the wiring of the rule, run on the
interpreter with the two PTX helpers replaced by Triton emulations of their per-warp results (the
warps' lanes taken as runs of 32 consecutive elements): keys, masked, padded and inactive lanes,
2-D lane spaces, values other than 1, slot claims; (c) where the generated CUDA source takes the
rule and where not (a tile smaller than the block's threads, whose elements Triton replicates over
lanes; float or lane-dependent values; AMD; the interpreter); (d) offline sm_90 compiles (ptxas
accepts the PTX) of a histogram kernel and of TileLang's topk_selector."""

import importlib.util
import os
import re

import pytest
import torch
from t2t_util import sm90_ptx

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.codegen import emit, warp_atomics


@pytest.fixture(autouse=True)
def _global_scratch(monkeypatch):
    """These tests are of the scratch area in global memory (the form on AMD and the interpreter, and
    wherever the on-chip one does not serve): the on-chip form has its own, tests/test_on_chip_scratch.py."""
    monkeypatch.setenv("TILE2TRITON_ON_CHIP_SCRATCH", "0")

SWITCH = "TILE2TRITON_WARP_AGGREGATED_ATOMICS"
TOPK = "/tmp/tl/examples/deepseek_v32/topk_selector.py"

# the PTX helpers' results in Triton, for the interpreter: per run of 32 elements (a warp's lanes),
# the elements that share a key (-1: inactive) form a group whose lowest lane leads
EMULATED = {
    "_warp_aggregated_count": """
@triton.jit
def _warp_aggregated_count(key):
    k = tl.reshape(key, [key.numel // 32, 32])
    lane = tl.arange(0, 32)
    same = k[:, :, None] == k[:, None, :]
    size = tl.sum(same.to(tl.int32), axis=2)
    rank = tl.sum((same & (lane[None, None, :] < lane[None, :, None])).to(tl.int32), axis=2)
    return tl.reshape(tl.where((rank == 0) & (k != -1), size, 0), key.shape)
""",
    "_warp_aggregated_claim": """
@triton.jit
def _warp_aggregated_claim(key, ptr, value):
    k = tl.reshape(key, [key.numel // 32, 32])
    p = tl.reshape(ptr, [key.numel // 32, 32])
    lane = tl.arange(0, 32)
    same = k[:, :, None] == k[:, None, :]
    size = tl.sum(same.to(tl.int32), axis=2)
    rank = tl.sum((same & (lane[None, None, :] < lane[None, :, None])).to(tl.int32), axis=2)
    lead = (rank == 0) & (k != -1)
    old = tl.atomic_add(p, size * value, mask=lead, sem="relaxed", scope="cta")
    old = tl.where(lead, old, 0)
    first = tl.sum(tl.where(same & lead[:, None, :], old[:, None, :], 0), axis=2)
    return tl.reshape(first + rank * value, key.shape)
""",
}


@pytest.fixture
def switch(monkeypatch):
    monkeypatch.delenv("TILE2TRITON_SHARED_SCRATCH", raising=False)

    def set_(value):
        monkeypatch.setenv(SWITCH, value)

    return set_


@pytest.fixture
def emulated(monkeypatch, switch):
    """The rule taken on the interpreter, with the PTX helpers emulated."""
    switch("1")
    monkeypatch.setattr(warp_atomics, "ptx_allowed", lambda options: True)
    for name, src in EMULATED.items():
        monkeypatch.setitem(emit.JIT_HELPER_SOURCES, name, src)


def sort_by_bins(rows, n, threads, bins, step):
    """Per row: a shared histogram of the values (``step`` per element), its exclusive running sum,
    then each element's slot ``pos = atomic_add(start[v], step, return_prev)``, written at
    ``pos // step`` (a counting sort), and the number of values above the middle bin through a
    counter every active lane claims from (one address)."""

    @T.prim_func
    def main(A: T.Tensor((rows, n), "int32"), O: T.Tensor((rows, n), "int32"), C: T.Tensor((rows, bins), "int32")):
        with T.Kernel(rows, threads=threads) as bx:
            tx = T.get_thread_binding()
            hist = T.alloc_shared((bins,), "int32")
            start = T.alloc_shared((bins,), "int32")
            count = T.alloc_shared((1,), "int32")
            pos = T.alloc_var("int32")
            for i in T.serial(T.ceildiv(bins, threads)):
                if i * threads + tx < bins:
                    hist[i * threads + tx] = 0
            if tx == 0:
                count[0] = 0
            T.sync_threads()
            for s in T.serial(T.ceildiv(n, threads)):
                if s * threads + tx < n:
                    T.atomic_add(hist[A[bx, s * threads + tx]], step)
            T.sync_threads()
            if tx == 0:
                start[0] = 0
                for b in T.serial(bins - 1):
                    start[b + 1] = start[b] + hist[b]
            T.sync_threads()
            for i in T.serial(T.ceildiv(bins, threads)):
                if i * threads + tx < bins:
                    C[bx, i * threads + tx] = hist[i * threads + tx]
            for s in T.serial(T.ceildiv(n, threads)):
                if s * threads + tx < n:
                    pos = T.atomic_add(start[A[bx, s * threads + tx]], step, return_prev=True)
                    O[bx, pos // step] = A[bx, s * threads + tx]
                    if A[bx, s * threads + tx] > bins // 2:
                        pos = T.atomic_add(count[0], 1, return_prev=True)
            T.sync_threads()
            if tx == 0:
                C[bx, 0] = C[bx, 0] * 1000 + count[0]

    return main


def parallel_histogram(rows, m, k, bins, threads):
    """A histogram over a 2-D ``T.Parallel`` (m x k, padded) of a tile's values."""

    @T.prim_func
    def main(A: T.Tensor((rows, m, k), "int32"), H: T.Tensor((rows, bins), "int32")):
        with T.Kernel(rows, threads=threads) as bx:
            tx = T.get_thread_binding()
            hist = T.alloc_shared((bins,), "int32")
            for i in T.serial(T.ceildiv(bins, threads)):
                if i * threads + tx < bins:
                    hist[i * threads + tx] = 0
            T.sync_threads()
            for i, j in T.Parallel(m, k):
                if A[bx, i, j] >= 0:  # negative values are skipped: lanes under a false `if`
                    T.atomic_add(hist[A[bx, i, j] % bins], 1)
            T.sync_threads()
            for i in T.serial(T.ceildiv(bins, threads)):
                if i * threads + tx < bins:
                    H[bx, i * threads + tx] = hist[i * threads + tx]

    return main


def skewed(rows, n, bins):
    """Values most of which fall on a few bins (as topk_selector's exponents do), some on all."""
    few = torch.randint(0, 3, (rows, n), dtype=torch.int32) * 7 % bins
    spread = torch.randint(0, bins, (rows, n), dtype=torch.int32)
    return torch.where(torch.rand(rows, n) < 0.8, few, spread)


def check_sort(a, out, c, bins, step):
    rows = a.shape[0]
    hist = torch.stack([torch.bincount(a[r], minlength=bins) for r in range(rows)]).to(torch.int32) * step
    above = (a > bins // 2).sum(dim=1).to(torch.int32)
    want = hist.clone()
    want[:, 0] = hist[:, 0] * 1000 + above
    assert torch.equal(c.cpu(), want)
    assert torch.equal(out.cpu(), torch.sort(a, dim=1).values)


def code(kernel, interpret=False) -> str:
    src = kernel.get_kernel_source(interpret=interpret)
    return "\n".join(line for line in src.splitlines() if not line.strip().startswith("#"))


def kernel_body(src: str) -> str:
    """The source after the helpers (the kernel function itself)."""
    return src[src.rindex("@triton.jit") :]


# ------------------------------------------------------------------ (a) the interpreter: switch off and on
@pytest.mark.parametrize("value", ["0", "1"])
def test_interpreter_results_with_switch(dev, switch, value):
    switch(value)
    rows, n, threads, bins = 2, 300, 96, 300
    a = skewed(rows, n, bins)
    out = torch.full((rows, n), -7, dtype=torch.int32, device=dev)
    c = torch.full((rows, bins), -7, dtype=torch.int32, device=dev)
    kernel = tilelang.compile(sort_by_bins(rows, n, threads, bins, 1))
    kernel(a.to(dev), out, c)
    check_sort(a, out, c, bins, 1)
    if dev == "cpu":  # the interpreter runs no PTX: the per-lane atomics
        assert "_warp_aggregated" not in code(kernel, interpret=True)


# ------------------------------------------------------------------ (b) the rule's wiring, PTX emulated
@pytest.mark.parametrize("threads,step", [(96, 1), (128, 3), (64, 2)])
def test_sort_by_bins_emulated(emulated, threads, step):
    rows, n, bins = 3, 333, 600  # past the one-hot limit: the histogram in scratch
    a = skewed(rows, n, bins)
    out = torch.full((rows, n), -7, dtype=torch.int32)
    c = torch.full((rows, bins), -7, dtype=torch.int32)
    kernel = tilelang.compile(sort_by_bins(rows, n, threads, bins, step))
    body = kernel_body(code(kernel, interpret=True))
    # the histogram, the bins' claims and the counter's claims (one address) are aggregated
    assert body.count("_warp_aggregated_count(") == 1 and body.count("_warp_aggregated_claim(") == 2
    kernel(a, out, c)
    check_sort(a, out, c, bins, step)


def test_parallel_histogram_emulated(emulated):
    rows, m, k, bins, threads = 2, 13, 50, 300, 128  # lanes 16 x 64 (padded) over 4 warps
    a = skewed(rows, m * k, bins).reshape(rows, m, k)
    a[:, ::3, ::2] = -5  # skipped: the lanes' `if` is false
    h = torch.full((rows, bins), -7, dtype=torch.int32)
    kernel = tilelang.compile(parallel_histogram(rows, m, k, bins, threads))
    assert "_warp_aggregated_count(" in code(kernel, interpret=True)
    kernel(a, h)
    kept = [a[r][a[r] >= 0] for r in range(rows)]
    ref = torch.stack([torch.bincount(v % bins, minlength=bins) for v in kept]).to(torch.int32)
    assert torch.equal(h, ref)


# ------------------------------------------------------------------ (c) where the CUDA source takes it
def test_cuda_source_takes_the_rule(switch):
    switch("1")
    src = code(tilelang.compile(sort_by_bins(2, 300, 96, 300, 1)))
    body = kernel_body(src)
    assert body.count("_warp_aggregated_count(") == 1 and body.count("_warp_aggregated_claim(") == 2
    (histogram,) = [line for line in body.splitlines() if "tl.atomic_add" in line]
    assert "hist_count > 0" in histogram and "sem='relaxed', scope='cta'" in histogram
    assert "match.any.sync.b32" in src and "atom.relaxed.cta.global.add.u32" in src
    switch("0")
    assert "_warp_aggregated" not in code(tilelang.compile(sort_by_bins(2, 300, 96, 300, 1)))


def test_replicated_tile_keeps_per_lane_atomics(switch):
    """A 2 x 24 lane space (2 x 32 padded) in a 128-thread block: Triton holds each element in two
    lanes, which match.any would count twice; a 16 x 32 one (512 elements) takes the rule."""
    switch("1")
    assert "_warp_aggregated" not in code(tilelang.compile(parallel_histogram(2, 2, 24, 300, 128)))
    assert "_warp_aggregated_count(" in code(tilelang.compile(parallel_histogram(2, 13, 30, 300, 128)))


def test_other_atomics_keep_per_lane_atomics(switch):
    """A lane-dependent value, a float buffer and a stronger order's claims: not the rule."""
    switch("1")

    @T.prim_func
    def others(A: T.Tensor((2, 256), "int32"), H: T.Tensor((2, 300), "float32"), P: T.Tensor((2, 256), "int32")):
        with T.Kernel(2, threads=128) as bx:
            tx = T.get_thread_binding()
            hi = T.alloc_shared((300,), "int32")
            hf = T.alloc_shared((300,), "float32")
            for i in T.serial(3):
                if i * 128 + tx < 300:
                    hi[i * 128 + tx] = 0
                    hf[i * 128 + tx] = 0
            T.sync_threads()
            for s in T.serial(2):
                T.atomic_add(hi[A[bx, s * 128 + tx] % 300], A[bx, s * 128 + tx])
                T.atomic_add(hf[A[bx, s * 128 + tx] % 300], 1.0)
                P[bx, s * 128 + tx] = T.atomic_add(hi[A[bx, s * 128 + tx] % 300], 1, return_prev=True,
                                                   memory_order="acquire")  # fmt: skip
            T.sync_threads()
            for i in T.serial(3):
                if i * 128 + tx < 300:
                    H[bx, i * 128 + tx] = hf[i * 128 + tx] + hi[i * 128 + tx]

    assert "_warp_aggregated" not in code(tilelang.compile(others))


def test_amd_and_interpreter_keep_per_lane_atomics(switch):
    switch("1")
    kernel = tilelang.compile(sort_by_bins(2, 300, 96, 300, 1))
    assert "_warp_aggregated" in kernel.lowered_for("sm_90").source
    assert "_warp_aggregated" not in kernel.lowered_for("gfx942").source
    assert "_warp_aggregated" not in kernel.lowered_for("cpu").source


def test_settings_parse(monkeypatch):
    from tile2triton import settings

    monkeypatch.delenv(SWITCH, raising=False)
    assert settings.current().warp_aggregated_atomics is False
    monkeypatch.setenv(SWITCH, "on")
    assert settings.current().warp_aggregated_atomics is True
    monkeypatch.setenv(SWITCH, "maybe")
    with pytest.raises(settings.SettingError, match=SWITCH):
        settings.current()


# ------------------------------------------------------------------ (d) offline sm_90 compiles
def _compile_sm90(module, sig, tmp_path):
    ptx = sm90_ptx(module, sig, tmp_path)
    return re.findall(r"\b(?:match\.any\.sync\.b32|shfl\.sync\.idx\.b32|atom\.[\w.]+|red\.[\w.]+)", ptx)


def test_histogram_compiles_for_sm90(switch, tmp_path):
    switch("1")
    module = tilelang.compile(sort_by_bins(2, 300, 96, 300, 3)).lowered_for("sm_90")
    ops = _compile_sm90(module, "A=*i32 O=*i32 C=*i32 scratch_ptr=*u8", tmp_path)
    # (loops of static trip counts unrolled: each site several times)
    assert set(ops) - {"atom.global.cta.relaxed.add.u32"} == {
        "match.any.sync.b32",  # the groups of lanes
        "red.global.cta.relaxed.add.u32",  # the histogram's leaders (Triton's atomic, masked; 3.6: atom)
        "atom.relaxed.cta.global.add.u32",  # the claims' leaders, in the PTX helper
        "shfl.sync.idx.b32",  # the leader's previous value to its group
    } - ({"red.global.cta.relaxed.add.u32"} if "atom.global.cta.relaxed.add.u32" in ops else set()), ops


@pytest.mark.skipif(not os.path.exists(TOPK), reason="TileLang's examples are not at /tmp/tl")
def test_topk_selector_compiles_for_sm90(switch, tmp_path, monkeypatch):
    from tile2triton.cli import install_tilelang_alias

    switch("1")
    monkeypatch.setenv("TILE2TRITON_SIZE_MULTIPLES", "0")  # the signature below has no size multiples
    install_tilelang_alias()
    spec = importlib.util.spec_from_file_location("topk_selector_example", TOPK)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    module = example.tl_topk_impl.compile(topk=2048).lowered_for("sm_90")
    body = kernel_body(module.source)
    # the two histogram passes and the five claims (three bins, two counters)
    assert body.count("_warp_aggregated_count(") == 2 and body.count("_warp_aggregated_claim(") == 5
    sig = "input=*fp32 index=*i32 starts=*i32 ends=*i32 batch=i32 seq_len=i32 scratch_ptr=*u8"
    ops = _compile_sm90(module, sig, tmp_path)
    # every atomic relaxed at block scope (Triton 3.9 writes the histograms' unused results as red, 3.6 as atom)
    assert "match.any.sync.b32" in ops and all(".cta." in op for op in ops if op[:4] in ("atom", "red.")), ops


@pytest.mark.skipif(not os.path.exists(TOPK), reason="TileLang's examples are not at /tmp/tl")
def test_topk_selector_emulated(emulated):
    """TileLang's radix top-k, every histogram and claim aggregated (PTX emulated): the index set
    of torch.topk, with ties absent (distinct random values)."""
    from tile2triton.cli import install_tilelang_alias

    install_tilelang_alias()
    spec = importlib.util.spec_from_file_location("topk_selector_example", TOPK)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    batch, seq_len, topk = 2, 3000, 100
    x = torch.randn(batch, seq_len)
    starts = torch.tensor([0, 100], dtype=torch.int32)
    ends = torch.tensor([seq_len, 2900], dtype=torch.int32)
    index = torch.full((batch, topk), -7, dtype=torch.int32)
    kernel = example.tl_topk_impl.compile(topk=topk)
    assert "_warp_aggregated_claim(" in kernel_body(code(kernel, interpret=True))
    kernel(x, index, starts, ends)
    for r in range(batch):
        lo, hi = int(starts[r]), int(ends[r])
        want = torch.topk(x[r, lo:hi], topk).indices + lo
        assert sorted(index[r].tolist()) == sorted(want.tolist())
