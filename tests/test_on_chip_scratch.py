"""The on-chip scratch area (codegen/on_chip.py, ``TILE2TRITON_ON_CHIP_SCRATCH``): on CUDA, shared
buffers the register path cannot hold live in a static ``.shared`` array the kernel declares in
inline PTX, read, written and updated with ``ld/st/atom.shared``, instead of per-program global
memory.

Triton's interpreter cannot run inline PTX, so on the CPU the tests check where the generated CUDA
source takes the form and where it keeps global scratch (AMD, the interpreter, 8-bit buffers,
atomics PTX lacks, tiles smaller than the block's threads, areas past CUDA's static limit), and
that ptxas accepts the result for sm_90.  On a GPU (``TILE2TRITON_TEST_DEVICE=cuda``) the kernels
run with the form on and are compared exactly with torch: a counting sort (histogram atomics and
slot claims), every element width and atomic kind the form serves, a bitonic sort (gathers and
scatters in loops: the default ``loops`` takes the form after lowering, ``on_chip.wanted_after``),
and a kernel whose static array and Triton's own shared memory together pass 48 KiB
(runtime/static_shared.py)."""

import re

import pytest
import torch
from t2t_util import ROOT, sm90_ptx
from test_warp_atomics import check_sort, parallel_histogram, skewed, sort_by_bins

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.codegen import on_chip as on_chip_form

SWITCH = "TILE2TRITON_ON_CHIP_SCRATCH"
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.fixture
def switch(monkeypatch):
    """The form wherever it serves (``on``), also for kernels without atomics."""
    monkeypatch.delenv("TILE2TRITON_SHARED_SCRATCH", raising=False)
    monkeypatch.setenv(SWITCH, "on")


def body(src: str) -> str:
    """The kernel function (after the helpers), comments dropped."""
    kernel = src[src.rindex("@triton.jit") :]
    return "\n".join(line for line in kernel.splitlines() if not line.strip().startswith("#"))


def on_chip(module) -> bool:
    """Did the kernel take the on-chip area (and not the global one)?"""
    src = module.source
    taken = f".b8 {on_chip_form.ARRAY}[" in src
    assert taken != ("scratch_ptr" in src), src
    assert taken == bool(module.launches[0].static_shared)
    return taken


def elements(threads):
    """Every width and atomic kind the on-chip form serves, in one thread-view kernel: each thread
    stores its value into 16-, 32- and 64-bit buffers, reads its neighbour's after a barrier, and
    updates shared counters with add (int32, uint32, float32), max, min, or and a relaxed store
    (an exchange)."""

    @T.prim_func
    def main(
        X: T.Tensor((threads,), "int32"),
        H: T.Tensor((threads,), "float16"),
        L: T.Tensor((threads,), "int64"),
        F: T.Tensor((threads,), "float32"),
        R: T.Tensor((4, threads), "float32"),
        C: T.Tensor((9,), "int32"),
        D: T.Tensor((1,), "float32"),
    ):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            h = T.alloc_shared((threads,), "float16")
            wide = T.alloc_shared((threads,), "int64")
            f = T.alloc_shared((threads,), "float32")
            counters = T.alloc_shared((9,), "int32")
            unsigned = T.alloc_shared((1,), "uint32")
            total = T.alloc_shared((1,), "float32")
            old = T.alloc_var("int32")
            if tx < 9:
                counters[tx] = 0
            if tx == 0:
                counters[2] = 1 << 30
                counters[3] = -1
                unsigned[0] = 0
                total[0] = 0.0
            h[tx] = H[tx]
            wide[tx] = L[tx]
            f[tx] = F[tx]
            T.sync_threads()
            nb = (tx + 1) % threads
            R[0, tx] = T.cast(h[nb], "float32")
            R[1, tx] = T.cast(wide[nb] % 1000, "float32")
            R[2, tx] = f[nb]
            T.atomic_add(counters[0], X[tx])
            T.atomic_max(counters[1], X[tx])
            T.atomic_min(counters[2], X[tx])
            T.atomic_or(counters[4], X[tx])
            old = T.atomic_add(counters[6], 1, return_prev=True)
            R[3, tx] = T.cast(old, "float32")
            T.atomic_add(unsigned[0], T.cast(X[tx], "uint32"))
            T.atomic_add(total[0], F[tx])
            if tx == threads - 1:
                T.atomic_store(counters[7], X[tx], memory_order="relaxed")
            T.sync_threads()
            if tx == 0:
                for i in T.serial(8):
                    C[i] = counters[i]
                C[8] = T.cast(unsigned[0], "int32")
                D[0] = total[0]

    return main


def rotate(n, threads):
    """Each element to a shared position 7 places on, then read back in order: plain stores and loads
    (n x threads positions past the one-hot limit: the buffer is in scratch)."""

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), O: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            buf = T.alloc_shared((n,), "float32")
            for i in T.serial(T.ceildiv(n, threads)):
                if i * threads + tx < n:
                    buf[(i * threads + tx + 7) % n] = A[i * threads + tx]
            T.sync_threads()
            for i in T.serial(T.ceildiv(n, threads)):
                if i * threads + tx < n:
                    O[i * threads + tx] = buf[i * threads + tx]

    return main


def bitonic(rows, n, threads):
    """Each row's ``n`` values (a power of two) sorted ascending by a bitonic network in a shared
    buffer: every round each lane compares its element with the one at ``i ^ (1 << s)`` and swaps
    them (a gather and a scatter at computed positions, in loops)."""
    steps = n.bit_length() - 1

    @T.prim_func
    def main(A: T.Tensor((rows, n), "float32"), O: T.Tensor((rows, n), "float32")):
        with T.Kernel(rows, threads=threads) as r:
            v = T.alloc_shared((n,), "float32")
            for i in T.Parallel(n):
                v[i] = A[r, i]
            T.sync_threads()
            for a in T.serial(steps):
                for b in T.serial(a + 1):
                    for i in T.Parallel(n):
                        j = i ^ (1 << (a - b))
                        up = (i & (1 << (a + 1))) == 0
                        if i < j and ((up and v[i] > v[j]) or (not up and v[i] < v[j])):
                            t = v[i]
                            v[i] = v[j]
                            v[j] = t
                    T.sync_threads()
            for i in T.Parallel(n):
                O[r, i] = v[i]

    return main


def staged(n, rounds):
    """A row staged once through a shared buffer at permuted positions (which puts it in scratch), then
    read at plain positions in a loop: no gather inside a loop."""

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), O: T.Tensor((rounds, n), "float32")):
        with T.Kernel(1, threads=128):
            buf = T.alloc_shared((n,), "float32")
            for i in T.Parallel(n):
                buf[(i + 7) % n] = A[i]
            for k in T.serial(rounds):
                for i in T.Parallel(n):
                    O[k, i] = buf[i] * (k + 1)

    return main


# ------------------------------------------------------------------ where the form is taken
def test_cuda_source_takes_the_form(switch):
    module = tilelang.compile(sort_by_bins(2, 300, 96, 300, 3)).lowered_for("sm_90")
    assert on_chip(module)
    kernel = body(module.source)
    assert "_shared_atomic_add_s32(hist + " in kernel and "tl.atomic_add" not in kernel
    assert "tl.load(hist" not in kernel and "_shared_load(" in kernel and "_shared_store(" in kernel


def test_default_takes_it_for_atomics_and_gathers_in_loops(monkeypatch):
    """``loops`` (the default): a kernel with atomics on shared buffers takes the form, and so does one
    that loads or stores the area at computed positions inside a loop (the bitonic sort's partners,
    the rotation's ``% n``); one whose loop reads the area at plain positions keeps global memory,
    where its accesses are vector loads.  ``atomics`` takes it for the atomics alone."""
    monkeypatch.delenv(SWITCH, raising=False)
    monkeypatch.delenv("TILE2TRITON_SHARED_SCRATCH", raising=False)
    assert on_chip(tilelang.compile(sort_by_bins(2, 300, 96, 300, 3)).lowered_for("sm_90"))
    assert on_chip(tilelang.compile(bitonic(3, 256, 128)).lowered_for("sm_90"))
    assert on_chip(tilelang.compile(rotate(600, 128)).lowered_for("sm_90"))
    assert not on_chip(tilelang.compile(staged(600, 3)).lowered_for("sm_90"))
    monkeypatch.setenv(SWITCH, "atomics")
    assert on_chip(tilelang.compile(sort_by_bins(2, 300, 96, 300, 3)).lowered_for("sm_90"))
    assert not on_chip(tilelang.compile(bitonic(3, 256, 128)).lowered_for("sm_90"))
    assert not on_chip(tilelang.compile(rotate(600, 128)).lowered_for("sm_90"))
    monkeypatch.setenv(SWITCH, "on")
    assert on_chip(tilelang.compile(staged(600, 3)).lowered_for("sm_90"))


@pytest.mark.parametrize("n", [64, 256])
def test_bitonic_sort(dev, n):
    """The sort's results where it runs (the interpreter keeps global scratch; CUDA takes the form)."""
    rows = 3
    kernel = tilelang.compile(bitonic(rows, n, 128))
    torch.manual_seed(n)
    a = torch.randn(rows, n)
    out = torch.full((rows, n), float("nan"), device=dev)
    kernel(a.to(dev), out)
    assert torch.equal(out.cpu(), torch.sort(a, dim=1).values)


def test_staged_row(dev):
    n, rounds = 600, 3
    kernel = tilelang.compile(staged(n, rounds))
    a = torch.randn(n)
    out = torch.full((rounds, n), float("nan"), device=dev)
    kernel(a.to(dev), out)
    want = torch.roll(a, 7)[None, :] * torch.arange(1, rounds + 1)[:, None]
    assert torch.equal(out.cpu(), want)


def test_bitonic_sort_compiles_for_sm90(monkeypatch, tmp_path):
    monkeypatch.delenv(SWITCH, raising=False)
    monkeypatch.setenv("TILE2TRITON_SIZE_MULTIPLES", "0")  # the signature below has no size multiples
    module = tilelang.compile(bitonic(3, 256, 128)).lowered_for("sm_90")
    ptx = sm90_ptx(module, "A=*fp32 O=*fp32", tmp_path)
    assert f".shared .align 16 .b8 {on_chip_form.ARRAY}[1024]" in ptx
    assert {"ld.shared.b32", "st.shared.b32"} <= set(re.findall(r"\b(?:ld|st)\.shared\.[\w.]+", ptx))


def test_switch_off_amd_and_interpreter_keep_global_scratch(switch, monkeypatch):
    kernel = tilelang.compile(sort_by_bins(2, 300, 96, 300, 3))
    assert not on_chip(kernel.lowered_for("gfx942"))
    assert not on_chip(kernel.lowered_for("cpu"))
    monkeypatch.setenv(SWITCH, "0")
    assert not on_chip(tilelang.compile(sort_by_bins(2, 300, 96, 300, 3)).lowered_for("sm_90"))


def test_unused_previous_value_keeps_the_atomic(switch):
    """``T.atomic_add(first[0], 1, return_prev=True)`` whose value nothing reads: the helper call
    stays, as a statement (emit.drop_dead_assignments)."""
    from test_perf_mhc_topk import row_histogram

    kernel = body(row_histogram(3, 500, 300, 128, 1).lowered_for("sm_90").source)
    assert "_shared_atomic_add_s32(first + " in kernel and "_shared_atomic_add_s32(hist + " in kernel


def test_all_widths_and_atomic_kinds_on_chip(switch):
    module = tilelang.compile(elements(160)).lowered_for("sm_90")
    assert on_chip(module)
    for helper in ("add_s32", "max_s32", "min_s32", "or_b32", "exch_b32", "add_u32", "add_f32"):
        assert f"_shared_atomic_{helper}(" in module.source, helper


def test_tile_smaller_than_the_threads_keeps_global_scratch(switch):
    """A 2-D T.Parallel of 6 x 10 (padded 8 x 16 = 128 elements) under 256 threads: Triton would give
    an element to two threads, and an atomic in inline PTX would run twice."""
    assert not on_chip(tilelang.compile(parallel_histogram(2, 6, 10, 600, 256)).lowered_for("sm_90"))
    assert on_chip(tilelang.compile(parallel_histogram(2, 6, 10, 600, 128)).lowered_for("sm_90"))


def literal_rows(m, n):
    """Negative literals stored into on-chip buffers (float32 and float16), then read back at computed
    positions in a thread-view loop (fuzz seed 9441190: ``(-1.25).to(...)`` failed to compile)."""

    @T.prim_func
    def main(A: T.Tensor((m, n), "float32"), C: T.Tensor((m, n), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding()
            s = T.alloc_shared((m, n), "float32")
            h = T.alloc_shared((m, n), "float16")
            T.copy(A[0, 0], s)
            for i, j in T.Parallel(m, n):
                if (i + j) % 3 == 0:
                    s[i, j] = -1.25
                h[i, j] = -0.5
            T.sync_threads()
            for k in T.serial(T.ceildiv(m * n, 128)):
                e = k * 128 + tx
                if e < m * n:
                    C[e // n, e % n] = s[e // n, e % n] * 2.0 + T.cast(h[e // n, e % n], "float32")

    return main


def test_negative_literals_on_chip(dev, monkeypatch, tmp_path):
    monkeypatch.delenv(SWITCH, raising=False)
    monkeypatch.setenv("TILE2TRITON_SIZE_MULTIPLES", "0")
    m, n = 30, 25
    kernel = tilelang.compile(literal_rows(m, n))
    module = kernel.lowered_for("sm_90")
    assert on_chip(module)
    sm90_ptx(module, "A=*fp32 C=*fp32", tmp_path)  # Triton and ptxas accept it
    a = torch.randn(m, n)
    out = torch.full((m, n), float("nan"), device=dev)
    kernel(a.to(dev), out)
    i, j = torch.meshgrid(torch.arange(m), torch.arange(n), indexing="ij")
    want = torch.where((i + j) % 3 == 0, torch.tensor(-1.25), a) * 2.0 - 0.5
    assert torch.equal(out.cpu(), want)


@pytest.mark.parametrize("case", ["uint8 buffer", "float16 atomic", "past the static limit"])
def test_what_the_form_does_not_serve_keeps_global_scratch(switch, case):
    dtype, atomic_dtype, n = {
        "uint8 buffer": ("uint8", "int32", 600),
        "float16 atomic": ("int32", "float16", 600),
        "past the static limit": ("int32", "int32", on_chip_form.LIMIT // 4 + 1),
    }[case]

    @T.prim_func
    def main(A: T.Tensor((n,), dtype), O: T.Tensor((n,), dtype), S: T.Tensor((1,), atomic_dtype)):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding()
            buf = T.alloc_shared((n,), dtype)
            acc = T.alloc_shared((1,), atomic_dtype)
            if tx == 0:
                acc[0] = 0
            for i in T.serial(T.ceildiv(n, 128)):
                if i * 128 + tx < n:
                    buf[(i * 128 + tx + 7) % n] = A[i * 128 + tx]
            T.sync_threads()
            T.atomic_add(acc[0], T.cast(1, atomic_dtype))
            for i in T.serial(T.ceildiv(n, 128)):
                if i * 128 + tx < n:
                    O[i * 128 + tx] = buf[i * 128 + tx]
            T.sync_threads()
            if tx == 0:
                S[0] = acc[0]

    assert not on_chip(tilelang.compile(main).lowered_for("sm_90"))


def test_settings_parse(monkeypatch):
    from tile2triton import settings

    for value, meant in (("on", "on"), ("1", "on"), ("off", "off"), ("atomics", "atomics"), ("loops", "loops"), ("", "loops")):
        monkeypatch.setenv(SWITCH, value)
        assert settings.current().on_chip_scratch == meant
    monkeypatch.setenv(SWITCH, "maybe")
    with pytest.raises(ValueError, match=SWITCH):
        settings.current()


# ------------------------------------------------------------------ ptxas accepts it
def test_counting_sort_compiles_for_sm90(switch, monkeypatch, tmp_path):
    monkeypatch.setenv("TILE2TRITON_SIZE_MULTIPLES", "0")  # the signature below has no size multiples
    module = tilelang.compile(sort_by_bins(2, 300, 96, 300, 3)).lowered_for("sm_90")
    ptx = sm90_ptx(module, "A=*i32 O=*i32 C=*i32", tmp_path)
    ops = set(re.findall(r"\b(?:atom|red|ld|st)\.shared\.[\w.]+", ptx))
    # hist, start (300 int32 each, 16-byte aligned) and count: 1200 + 1200 + 16 bytes
    assert f".shared .align 16 .b8 {on_chip_form.ARRAY}[2416]" in ptx
    assert {"atom.shared.add.s32", "ld.shared.b32", "st.shared.b32"} <= ops, ops


# ------------------------------------------------------------------ on the GPU
@cuda
@pytest.mark.parametrize("threads, step", [(96, 3), (256, 1)])
def test_counting_sort_on_gpu(switch, threads, step):
    rows, n, bins = 3, 700, 300
    kernel = tilelang.compile(sort_by_bins(rows, n, threads, bins, step))
    a = skewed(rows, n, bins)
    out = torch.full((rows, n), -1, dtype=torch.int32, device="cuda")
    c = torch.full((rows, bins), -1, dtype=torch.int32, device="cuda")
    kernel(a.cuda(), out, c)
    assert f".b8 {on_chip_form.ARRAY}[" in kernel.get_kernel_source()
    check_sort(a, out, c, bins, step)


@cuda
@pytest.mark.parametrize("form", ["on", "loops", "atomics", "off"])
def test_plain_stores_and_loads_on_gpu(monkeypatch, form):
    monkeypatch.setenv(SWITCH, form)
    n = 600
    kernel = tilelang.compile(rotate(n, 128))
    a = torch.randn(n)
    out = torch.full((n,), float("nan"), device="cuda")
    kernel(a.cuda(), out)
    assert (f".b8 {on_chip_form.ARRAY}[" in kernel.get_kernel_source()) == (form in ("on", "loops"))
    assert torch.equal(out.cpu(), torch.roll(a, 7))


@cuda
@pytest.mark.parametrize("form", ["loops", "off"])
def test_bitonic_sort_on_gpu(monkeypatch, form):
    monkeypatch.setenv(SWITCH, form)
    rows, n = 5, 1024
    kernel = tilelang.compile(bitonic(rows, n, 256))
    a = torch.randn(rows, n)
    out = torch.full((rows, n), float("nan"), device="cuda")
    kernel(a.cuda(), out)
    assert (f".b8 {on_chip_form.ARRAY}[" in kernel.get_kernel_source()) == (form == "loops")
    assert torch.equal(out.cpu(), torch.sort(a, dim=1).values)


@cuda
def test_parallel_histogram_on_gpu(switch):
    rows, m, k, bins = 3, 12, 20, 600
    kernel = tilelang.compile(parallel_histogram(rows, m, k, bins, 128))
    a = torch.randint(-5, 200, (rows, m, k), dtype=torch.int32)
    h = torch.full((rows, bins), -1, dtype=torch.int32, device="cuda")
    kernel(a.cuda(), h)
    assert f".b8 {on_chip_form.ARRAY}[" in kernel.get_kernel_source()
    kept = [a[r][a[r] >= 0] % bins for r in range(rows)]
    want = torch.stack([torch.bincount(v, minlength=bins) for v in kept]).to(torch.int32)
    assert torch.equal(h.cpu(), want)


@cuda
def test_all_widths_and_atomic_kinds_on_gpu(switch):
    threads = 160
    kernel = tilelang.compile(elements(threads))
    x = torch.randint(-(1 << 20), 1 << 20, (threads,), dtype=torch.int32)
    h = torch.randn(threads, dtype=torch.float16)
    wide = torch.randint(0, 1 << 40, (threads,), dtype=torch.int64)
    f = torch.randn(threads, dtype=torch.float32)
    r = torch.full((4, threads), float("nan"), device="cuda")
    c = torch.full((9,), -7, dtype=torch.int32, device="cuda")
    d = torch.full((1,), float("nan"), device="cuda")
    kernel(x.cuda(), h.cuda(), wide.cuda(), f.cuda(), r, c, d)
    assert f".b8 {on_chip_form.ARRAY}[" in kernel.get_kernel_source()
    nb = (torch.arange(threads) + 1) % threads
    assert torch.equal(r[0].cpu(), h[nb].float())
    assert torch.equal(r[1].cpu(), (wide[nb] % 1000).float())
    assert torch.equal(r[2].cpu(), f[nb])
    assert sorted(r[3].cpu().long().tolist()) == list(range(threads))  # each thread its own slot
    want = [int(x.sum()), int(x.max()), int(x.min())]
    either = 0
    for v in x.tolist():
        either |= v
    want += [-1, either, 0, threads, int(x[-1])]  # counters 3 and 5 stay as set
    assert c[:8].cpu().tolist() == want
    wrapped = int(x.to(torch.int64).sum()) % (1 << 32)  # the uint32 sum's bits, read as int32
    assert int(c[8]) == (wrapped + (1 << 31)) % (1 << 32) - (1 << 31)
    torch.testing.assert_close(d[0].cpu(), f.double().sum().float(), rtol=1e-5, atol=1e-4)


@cuda
def test_static_array_beside_triton_shared_memory_on_gpu(switch, monkeypatch):
    """Every shared buffer in scratch (``TILE2TRITON_SHARED_SCRATCH``): a gemm's operands and result
    on chip (32 KiB) while Triton stages the dot's operands in its own shared memory: together past
    the 48 KiB a launch gets unless the kernel's limit is raised (runtime/static_shared.py)."""
    monkeypatch.setenv("TILE2TRITON_SHARED_SCRATCH", "1")
    m, n, k, bm, bn, bk = 200, 136, 72, 64, 64, 64

    @T.prim_func
    def main(A: T.Tensor((m, k), "float16"), B: T.Tensor((k, n), "float16"), C: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=128) as (bx, by):
            a_s = T.alloc_shared((bm, bk), "float16")
            b_s = T.alloc_shared((bk, bn), "float16")
            c_s = T.alloc_shared((bm, bn), "float32")
            acc = T.alloc_fragment((bm, bn), "float32")
            T.clear(acc)
            for ko in T.serial(T.ceildiv(k, bk)):
                T.copy(A[by * bm, ko * bk], a_s)
                T.copy(B[ko * bk, bx * bn], b_s)
                T.gemm(a_s, b_s, acc)
            T.copy(acc, c_s)
            T.copy(c_s, C[by * bm, bx * bn])

    kernel = tilelang.compile(main)
    a = torch.randn(m, k, dtype=torch.float16)
    b = torch.randn(k, n, dtype=torch.float16)
    c = torch.full((m, n), float("nan"), device="cuda")
    kernel(a.cuda(), b.cuda(), c)
    torch.testing.assert_close(c.cpu(), a.double() @ b.double(), rtol=1e-2, atol=1e-2, check_dtype=False)


def test_load_hook_leaves_stand_in_drivers_alone(switch, monkeypatch):
    """A kernel that declares the array registers its name for the load hook (runtime/static_shared.py);
    loaded under a stand-in driver (the launch tests': fake handles), the hook calls no CUDA driver."""
    import importlib.util

    from tile2triton.runtime import static_shared

    spec = importlib.util.spec_from_file_location("launch_cost_bench", ROOT / "benchmarks" / "launch_cost.py")
    launch_cost = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(launch_cost)

    def no_driver():
        raise AssertionError("the CUDA driver was called with a stand-in's handle")

    monkeypatch.setattr(static_shared, "_cuda", no_driver)
    asked = []
    real_driver = static_shared._real_driver
    monkeypatch.setattr(static_shared, "_real_driver", lambda: asked.append(1) or real_driver())
    with launch_cost.fake_driver():
        kernel = tilelang.compile(sort_by_bins(2, 300, 96, 300, 3))
        lowered = kernel._compile(False)  # the GPU lowering: registers the kernel's name
        assert lowered.module.launches[0].static_shared > 0
        assert lowered.module.launches[0].name in static_shared._KERNELS
        fn, _, _, _, num_warps = lowered.launches[0]
        a = torch.zeros(2, 300, dtype=torch.int32)
        out = torch.zeros(2, 300, dtype=torch.int32)
        c = torch.zeros(2, 300, dtype=torch.int32)
        fn.run(a, out, c, grid=(2, 1, 1), warmup=False, num_warps=num_warps)  # compiled and "loaded"
    assert asked  # the hook ran, and asked which driver loaded the kernel
