"""GPU probe for TileLang's ``topk_selector`` (examples/deepseek_v32/topk_selector.py) through
tile2triton, and a histogram microbenchmark: warp-aggregated atomics
(``TILE2TRITON_WARP_AGGREGATED_ATOMICS``, codegen/warp_atomics.py) and the on-chip scratch area
(``TILE2TRITON_ON_CHIP_SCRATCH``, codegen/scratch.py) against global scratch.

topk rows (each a source tile2triton generates for sm_90, launched here; earlier switches'
rows are in gpu_logs/2026-12-01_s9_probe_topk.log):

- ``tile2triton runtime (defaults)``: the example's own call;
- ``global scratch``: the generated source with the shared buffers in per-program global memory;
- ``warp-aggregated atomics``: ``TILE2TRITON_WARP_AGGREGATED_ATOMICS=1``: the histograms' and the
  slot claims' atomics on the scratch-backed shared buffers as one atomic per distinct address a
  warp (match.any.sync);
- ``on-chip scratch``: ``TILE2TRITON_ON_CHIP_SCRATCH=1``: the buffers in a static ``.shared`` array,
  ``ld/st/atom.shared`` in inline PTX (the default since session 15);
- ``torch.topk``.

Each: ``triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")`` in microseconds,
the recall of ``torch.topk``'s index set (1.0000 expected), registers, spills and shared memory.

histogram rows: 1e6 int32 bins in [0, 256) into a 256-bin histogram, a shared histogram per block
of 8192 values (512 threads), added into the global one; ``thread view`` (each thread 16 values in
a loop) and ``T.Parallel`` (one 8192-lane tile); ``skewed`` (topk_selector's bins of random-normal
values: fp16 sign, exponent, 2 mantissa bits) and ``uniform``; switch off and on; checked exactly
against ``torch.bincount``.  Run from the worktree root on the GPU (< 60 s):

    PYTHONPATH=. python3 benchmarks/topk_probe.py [/path/to/tilelang/examples]
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import sys
import tempfile
import time

import torch
import triton

from tile2triton.cli import install_tilelang_alias

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mhc_topk_cases import load  # noqa: E402 - a TileLang example as a module

from tile2triton.runtime.launch_args import size_multiple

EXAMPLES = next((a for a in sys.argv[1:] if not a.startswith("--")), "/work/tl/examples")
CASES = [(64, 32 * 1024, 2048), (32, 64 * 1024, 2048), (48, 24000, 1024), (132, 8191, 512)]  # the suite's, others


def load_example():
    return load(os.path.join(EXAMPLES, "deepseek_v32", "topk_selector.py"), "topk_selector")


# ------------------------------------------------------------------ source variants
def build(src: str, tag: str):
    name = "topk_" + re.sub(r"\W", "_", tag)
    path = os.path.join(tempfile.mkdtemp(prefix=f"{name}_"), f"{name}.py")
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.tl_topk_impl_kernel


def sources_barriers_only(src: str) -> str:
    """``src`` without the barriers the scratch model adds (those not at a ``T.sync_threads()``):
    what TileLang runs under ``TL_DISABLE_THREAD_STORAGE_SYNC``, one lane per thread.  Session 16
    timed it as a row (gpu_logs/2026-12-02_s16_gpu_checks.log: 33.1 -> 31.6 us at 64 x 32768); the
    example's pass config now gives that source itself (scratch.py), which main() checks."""
    lines, out = src.splitlines(), []
    for i, line in enumerate(lines):
        if line.strip() == "tl.debug_barrier()" and "sync_threads(" not in lines[i - 1]:
            continue
        out.append(line)
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ timing
def bench(fn) -> float:
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e3


def recall(index, x, topk):
    ref = torch.topk(x, topk, dim=-1)[1]
    hits = sum(len(set(a.tolist()) & set(b.tolist())) for a, b in zip(index.cpu(), ref.cpu()))
    return hits / (x.shape[0] * topk)


def stats(compiled) -> str:
    try:
        return f"regs {compiled.n_regs:>3} spills {compiled.n_spills:>3} smem {compiled.metadata.shared:>6}"
    except Exception as exc:  # noqa: BLE001 - informative only
        return f"({type(exc).__name__})"


@contextlib.contextmanager
def environment(**values):
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def generated(jit, **switches) -> str:
    with environment(**switches):
        return jit.lowered_for("sm_90").source


# ------------------------------------------------------------------ histogram microbenchmark
HIST_N, HIST_BINS, HIST_THREADS, HIST_PER = 1_000_000, 256, 512, 16
HIST_CHUNK = HIST_THREADS * HIST_PER


def histogram_kernels():
    import tile2triton as tilelang
    import tile2triton.language as T

    n, bins, threads, per, chunk = HIST_N, HIST_BINS, HIST_THREADS, HIST_PER, HIST_CHUNK

    @T.prim_func
    def thread_view(A: T.Tensor((n,), "int32"), H: T.Tensor((bins,), "int32")):
        with T.Kernel(T.ceildiv(n, chunk), threads=threads) as bx:
            tx = T.get_thread_binding()
            hist = T.alloc_shared((bins,), "int32")
            if tx < bins:
                hist[tx] = 0
            T.sync_threads()
            for k in T.serial(per):
                if bx * chunk + k * threads + tx < n:
                    T.atomic_add(hist[A[bx * chunk + k * threads + tx]], 1)
            T.sync_threads()
            if tx < bins:
                T.atomic_add(H[tx], hist[tx])

    @T.prim_func
    def parallel(A: T.Tensor((n,), "int32"), H: T.Tensor((bins,), "int32")):
        with T.Kernel(T.ceildiv(n, chunk), threads=threads) as bx:
            hist = T.alloc_shared((bins,), "int32")
            T.fill(hist, 0)
            T.sync_threads()
            for i in T.Parallel(chunk):
                if bx * chunk + i < n:
                    T.atomic_add(hist[A[bx * chunk + i]], 1)
            T.sync_threads()
            for b in T.Parallel(bins):
                T.atomic_add(H[b], hist[b])

    return {"thread view": thread_view, "T.Parallel": parallel}, tilelang


def skewed_bins(n):
    """topk_selector's first-pass bins of random-normal values (convert_to_uint16)."""
    x = torch.randn(n, device="cuda")
    bits = x.half().view(torch.int16).to(torch.int32) & 0xFFFF
    bits = torch.where(x < 0, ~bits & 0xFFFF, bits | 0x8000)
    return (bits >> 8).to(torch.int32)


def histogram_rows() -> list:
    forms, tilelang = histogram_kernels()
    data = {
        "skewed": skewed_bins(HIST_N),
        "uniform": torch.randint(0, HIST_BINS, (HIST_N,), dtype=torch.int32, device="cuda"),
    }
    rows = []
    for form, func in forms.items():
        kernels = {}
        for switch in ("0", "1"):
            with environment(TILE2TRITON_WARP_AGGREGATED_ATOMICS=switch):
                kernel = tilelang.compile(func)
                h = torch.zeros(HIST_BINS, dtype=torch.int32, device="cuda")
                kernel(data["uniform"], h)  # lowered and compiled under the switch
                torch.cuda.synchronize()
            taken = "_warp_aggregated_count(" in kernel.get_kernel_source()
            assert taken == (switch == "1"), (form, switch)
            kernels[switch] = kernel
        for dist, a in data.items():
            ref = torch.bincount(a, minlength=HIST_BINS).to(torch.int32)
            hot = int((ref > HIST_N // 1000).sum())
            label = f"hist {dist} ({hot} hot bins)"
            for switch, kernel in kernels.items():
                h = torch.zeros(HIST_BINS, dtype=torch.int32, device="cuda")
                kernel(a, h)
                torch.cuda.synchronize()
                ok = 1.0 if torch.equal(h, ref) else 0.0

                def run(kernel=kernel, a=a, h=h):
                    kernel(a, h)

                tag = f"{form}, {'warp-aggregated atomics' if switch == '1' else 'defaults'}"
                rows.append((label, tag, bench(run), ok, "(exact vs torch.bincount: 1.0000)"))
            rows.append((label, "torch.bincount", bench(lambda a=a: torch.bincount(a, minlength=HIST_BINS)), 1.0, ""))
    return rows


def main() -> None:
    install_tilelang_alias()
    example = load_example()
    start = time.time()
    rows = []
    for batch, seq_len, topk in CASES:
        jit = example.tl_topk_impl.compile(topk=topk)  # topk is a compile-time constant of the kernel
        (launch,) = jit.lowered(False).launches
        variants = {
            "global scratch": generated(jit, TILE2TRITON_WARP_AGGREGATED_ATOMICS="0", TILE2TRITON_ON_CHIP_SCRATCH="0"),
            "warp-aggregated atomics": generated(
                jit, TILE2TRITON_WARP_AGGREGATED_ATOMICS="1", TILE2TRITON_ON_CHIP_SCRATCH="0"
            ),
            "on-chip scratch": generated(jit, TILE2TRITON_WARP_AGGREGATED_ATOMICS="0", TILE2TRITON_ON_CHIP_SCRATCH="1"),
            "on chip, slot claims unordered": generated(
                jit, TILE2TRITON_ON_CHIP_SCRATCH="1", TILE2TRITON_SCRATCH_ATOMIC_BARRIERS="atomics"
            ),
        }
        assert sources_barriers_only(variants["on-chip scratch"]) == variants["on-chip scratch"]
        assert "_warp_aggregated_count(" in variants["warp-aggregated atomics"]
        assert "_shared_atomic_add_s32(" in variants["on-chip scratch"]
        assert "_warp_aggregated" not in variants["global scratch"]
        torch.manual_seed(1)
        x = torch.randn(batch, seq_len, dtype=torch.float32, device="cuda")
        starts = torch.zeros(batch, dtype=torch.int32, device="cuda")
        ends = torch.full((batch,), seq_len, dtype=torch.int32, device="cuda")
        index = torch.zeros(batch, topk, dtype=torch.int32, device="cuda")
        label = f"b={batch} seq={seq_len} k={topk}"

        def run_t2t():
            example.tl_topk_impl(x, index, starts, ends)

        index.fill_(-1)
        run_t2t()
        rows.append((label, "tile2triton runtime (defaults)", bench(run_t2t), recall(index, x, topk), ""))
        per_program = int(re.search(r"scratch_ptr \+ program\.to\(tl\.int64\) \* (\d+)", variants["global scratch"])[1])
        scratch = torch.empty(batch * per_program, dtype=torch.uint8, device="cuda")  # the global form's area
        for tag, src in variants.items():
            try:
                kern = build(src, tag)

                extra = (scratch,) if "scratch_ptr" in src else ()  # the on-chip form has no scratch argument
                if "seq_len_multiple" in src:  # TILE2TRITON_SIZE_MULTIPLES: the trailing constexpr
                    extra = (*extra, size_multiple(seq_len))

                def run(kern=kern, extra=extra):
                    return kern[(batch,)](x, index, starts, ends, batch, seq_len, *extra, num_warps=launch.num_warps)

                index.fill_(-1)
                compiled = run()
                torch.cuda.synchronize()
                rows.append((label, tag, bench(run), recall(index, x, topk), stats(compiled)))
            except Exception as exc:  # noqa: BLE001 - a failing candidate is a row, not the end
                rows.append((label, tag, float("nan"), float("nan"), f"{type(exc).__name__}: {str(exc)[:80]}"))
        rows.append((label, "torch.topk", bench(lambda: torch.topk(x, topk, dim=-1)), 1.0, ""))
    if "--no-histograms" not in sys.argv:
        rows += histogram_rows()
    width = max(len(r[1]) for r in rows)
    print(f"{'case':<28} {'variant':<{width}} {'us':>9} {'recall':>7}  kernel")
    for label, tag, us, rec, info in rows:
        print(f"{label:<28} {tag:<{width}} {us:>9.1f} {rec:>7.4f}  {info}")
    print(f"({time.time() - start:.0f} s; {torch.cuda.get_device_name()}, triton {triton.__version__})")


if __name__ == "__main__":
    main()
