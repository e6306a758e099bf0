"""Thread-view GEMV (issue 14's ``gemv_threads(16384, 16384, 2, 32)`` row): the transpiled kernel
at its default launch and at the launch/code variants that could explain its gap to TileLang.

    PYTHONPATH=. python3 benchmarks/gemv_thread_view_variants.py          # on the GPU machine (H200): < 90 s
    PYTHONPATH=. python3 benchmarks/gemv_thread_view_variants.py --cpu    # tiny sizes, Triton's interpreter (no times)

What the compiled code shows (Triton 3.6, sm_90, compiled offline): the kernel is
``threads=(BLOCK_N=2, reduce_threads=32)``, so its lanes are a [32, 2] tile and each iteration of
the serial K loop loads ``A_local`` ([32, 1, 8]: the vector ``a`` does not depend on the row thread)
and ``B_local`` ([32, 2, 8]).  With num_warps=2 Triton's coalescing gives the smaller A load its
own layout (4 fp16 per thread over all 64 threads, a 64-bit load) and converts it to B's layout
(8 per thread, one warp per row) through shared memory: one STS.128, two BAR.SYNC and two LDS.128
in every iteration.  With num_warps=1 the 256 elements of A fill the 32 threads exactly like B's,
and there is no conversion (the likely reason num_warps=1 measured faster).  Loading A at the
thread tile's full shape (every thread its own 128-bit load, as in TileLang's CUDA) removes the
conversion at any warp count: the "per-thread loads" rows, which are what
``TILE2TRITON_PER_THREAD_LOADS=1`` (runtime/tuning.py ``PER_THREAD_LOADS``) generates; the row
"per-thread loads, num_warps=2" is that switch at this kernel's default launch (the heuristic
keeps the source's 64 threads = 2 warps, Triton's default stages).  The launch option num_stages
changes nothing in the SASS (a plain ``range`` loop of plain loads is not pipelined); ptxas
already unrolls the 64-iteration loop (about 8 iterations a body at num_warps=2, 4 at 1); the
unroll rows check ``tl.range(..., loop_unroll_factor=k)`` anyway, and ``tl.range(...,
num_stages=3)`` pipelines the loads through cp.async into shared memory with barriers in every
iteration (benchmarks/gemv_thread_view_sass.py prints the loop bodies).

Each row's output is checked against float64 torch (C pre-filled with NaN); the times are
``triton.testing.do_bench`` medians (L2 flushed before each run, as benchmarks/vs_tilelang.py).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CPU = "--cpu" in sys.argv or not __import__("torch").cuda.is_available()
if CPU and __name__ == "__main__":  # (benchmarks/gemv_thread_view_sass.py imports this file to compile for sm_90)
    os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402

import tile2triton  # noqa: E402
import tile2triton.language  # noqa: E402

PER_THREAD = "TILE2TRITON_PER_THREAD_LOADS"


def load_kernels():
    """benchmarks/vs_tilelang_kernels.py with ``tilelang`` bound to tile2triton."""
    sys.modules["tilelang"], sys.modules["tilelang.language"] = tile2triton, tile2triton.language
    spec = importlib.util.spec_from_file_location("vs_tilelang_kernels_t2t", ROOT / "benchmarks/vs_tilelang_kernels.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compile_t2t(factory, args, inputs, per_thread: bool):
    """tile2triton's kernel (C passed in, so that it can start as NaN) and its generated source."""
    saved = os.environ.get(PER_THREAD)
    os.environ[PER_THREAD] = "1" if per_thread else "0"
    try:  # lowered (and its launch chosen) while the switch holds
        kernel = tile2triton.compile(factory(*args))
        source = kernel.get_kernel_source()
        kernel(*inputs)
    finally:
        if saved is None:
            os.environ.pop(PER_THREAD, None)
        else:
            os.environ[PER_THREAD] = saved
    return kernel, source


_modules: list = []


def jit_from_source(source: str, tag: str):
    """The ``@triton.jit`` kernel of a (possibly hand-edited) generated source."""
    folder = Path(tempfile.mkdtemp(prefix="gemv_variants_"))
    path = folder / f"gemv_{tag}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"gemv_{tag}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _modules.append(module)
    return module.main_kernel


def ranged(source: str, keyword: str) -> str:
    """The serial K loop as ``tl.range(..., keyword)`` (``loop_unroll_factor=4``, ``num_stages=3``)."""
    out, n = re.subn(r"for (\w+) in range\((\d+)\):", rf"for \1 in tl.range(\2, {keyword}):", source, count=1)
    assert n == 1, "no serial loop in the generated source"
    return out


def code_facts(kernel) -> tuple[str, str]:
    """Registers a thread and ``bar.sync`` instructions in the PTX (a layout conversion through
    shared memory needs two per execution) of a compiled variant; '-' where not known."""
    if CPU or kernel is None:
        return "-", "-"
    try:
        regs = str(kernel.n_regs)
    except Exception:
        regs = "-"
    ptx = kernel.asm.get("ptx", "") if hasattr(kernel, "asm") else ""
    return regs, str(len(re.findall(r"\bbar\.sync\b", ptx))) if ptx else "-"


def bench(fn) -> float:
    if CPU:
        return float("nan")
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", action="store_true", help="tiny sizes on Triton's interpreter")
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--k", type=int, default=None)
    opts = parser.parse_args()
    block_n, reduce_threads = 2, 32
    n = opts.n or (6 if CPU else 16384)
    k = opts.k or (512 if CPU else 16384)
    dev = "cpu" if CPU else "cuda"
    t0 = time.perf_counter()
    kernels = load_kernels()
    args = (n, k, block_n, reduce_threads)

    torch.manual_seed(0)
    a = torch.randn(k, device=dev, dtype=torch.float16)
    b = torch.randn(n, k, device=dev, dtype=torch.float16)
    c = torch.full((n,), float("nan"), device=dev, dtype=torch.float16)  # the output every variant writes
    ref = (b.double() @ a.double()).cpu()
    scale = ref.abs().max().item()

    def check(out) -> float:
        err = (out.double().cpu() - ref).abs().max().item()
        return err / scale

    t2t_default, src_default = compile_t2t(kernels.gemv_threads, args, (a, b, c), per_thread=False)
    t2t_per_thread, src_per_thread = compile_t2t(kernels.gemv_threads, args, (a, b, c), per_thread=True)
    grid = (n // block_n,)
    assert "tl.broadcast_to(offs" not in src_default and "tl.broadcast_to(offs" in src_per_thread, (
        "the switch did nothing"
    )
    compiled: dict = {}  # variant -> Triton's compiled kernel (the GPU's: its PTX and registers)

    def raw(source: str, tag: str, **launch):
        fn = jit_from_source(source, tag)

        def run():
            compiled[tag] = fn[grid](a, b, c, **launch)

        run.tag = tag
        return run

    rows: list[tuple[str, object]] = [
        ("tile2triton call (default: heuristic launch)", lambda: t2t_default(a, b, c)),
        ("tile2triton call, TILE2TRITON_PER_THREAD_LOADS=1", lambda: t2t_per_thread(a, b, c)),
    ]
    for w in (1, 2, 4):
        rows.append((f"generated, num_warps={w}", raw(src_default, f"d_w{w}", num_warps=w)))
    for s in (1, 2, 3):
        rows.append((f"generated, num_warps=2 num_stages={s}", raw(src_default, f"d_s{s}", num_warps=2, num_stages=s)))
    for u in (2, 4, 8):
        rows.append(
            (
                f"generated + loop_unroll_factor={u}, num_warps=2",
                raw(ranged(src_default, f"loop_unroll_factor={u}"), f"d_u{u}", num_warps=2),
            )
        )
    # software pipelining of the plain loads: cp.async into shared memory, a barrier per iteration
    rows.append(
        (
            "generated + tl.range(num_stages=3), num_warps=2",
            raw(ranged(src_default, "num_stages=3"), "d_p3", num_warps=2),
        )
    )
    for w in (1, 2, 4):
        rows.append((f"per-thread loads, num_warps={w}", raw(src_per_thread, f"p_w{w}", num_warps=w)))
    for u in (2, 4):
        rows.append(
            (
                f"per-thread loads + loop_unroll_factor={u}, num_warps=2",
                raw(ranged(src_per_thread, f"loop_unroll_factor={u}"), f"p_u{u}", num_warps=2),
            )
        )
    rows.append(("torch (b @ a, cuBLAS)", lambda: torch.matmul(b, a, out=c)))

    gbytes = (n * k + k + n) * 2 / 1e9
    print(
        f"thread-view GEMV N={n} K={k} threads=({block_n}, {reduce_threads}), {'CPU interpreter' if CPU else torch.cuda.get_device_name()}, triton {triton.__version__}"
    )
    print(f"{'variant':<58} {'ms':>8} {'GB/s':>7} {'max err/max|ref|':>17} {'regs':>5} {'bar.sync':>8}")
    failed = 0
    for name, fn in rows:
        c.fill_(float("nan"))  # an element a variant does not write fails the check
        fn()
        if not CPU:
            torch.cuda.synchronize()
        err = check(c)
        ok = err <= 2e-3
        failed += not ok
        ms = bench(fn)
        rate = f"{gbytes / ms * 1e3:7.0f}" if ms == ms else f"{'-':>7}"
        regs, bars = code_facts(compiled.get(getattr(fn, "tag", None)))
        print(f"{name:<58} {ms:8.4f} {rate} {err:17.2e} {regs:>5} {bars:>8}{'' if ok else '  WRONG'}")
    print(f"({len(rows)} variants, {failed} wrong, {time.perf_counter() - t0:.0f} s)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
