"""What Triton makes of the thread-view GEMV's K loop, without a GPU (the evidence behind
benchmarks/gemv_thread_view_variants.py): compiles tile2triton's source for sm_90, with and without per-thread
loads, at 1, 2 and 4 warps, and counts the instructions of the SASS loop body (cuobjdump from
Triton's own NVIDIA backend) and the TTGIR layout conversions.

    PYTHONPATH=<a Triton 3.6 install>:. python3 benchmarks/gemv_thread_view_sass.py
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gemv_variants import PER_THREAD, load_kernels  # noqa: E402

import tile2triton  # noqa: E402

BIN = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
PATTERNS = {
    "LDG.128": r"LDG\.E\.128",
    "LDG.64": r"LDG\.E\.64",
    "STS": r"\bSTS\b",
    "LDS": r"\bLDS\b",
    "BAR": r"\bBAR\b",
    "SHFL": r"\bSHFL\b",
}


def source(per_thread: bool) -> str:
    os.environ[PER_THREAD] = "1" if per_thread else "0"
    kernel = tile2triton.compile(load_kernels().gemv_threads(16384, 16384, 2, 32), out_idx=[2])
    return kernel.get_kernel_source(interpret=False)


def compiled(src: str, num_warps: int):
    path = Path(tempfile.mkdtemp(prefix="gemv_sass_")) / "gemv.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("gemv_sass_src", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    signature = {"A": "*fp16", "B": "*fp16", "C": "*fp16"}
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(3)}
    return triton.compile(
        ASTSource(module.main_kernel, signature, {}, attrs),
        target=GPUTarget("cuda", 90, 32),
        options={"num_warps": num_warps},
    )


def loop_body(sass: str) -> list[str]:
    """The instructions between the K loop's backward branch and its target."""
    ins = [
        (int(m.group(1), 16), m.group(2))
        for m in (re.match(r"\s+/\*([0-9a-f]{4})\*/\s+(.*?);", line) for line in sass.splitlines())
        if m
    ]
    lo = hi = None
    for addr, text in ins:
        m = re.search(r"@!?U?P\d+\s+BRA (0x[0-9a-f]+)", text)
        if m and int(m.group(1), 16) < addr:
            lo, hi = int(m.group(1), 16), addr
    return [t for a, t in ins if lo is not None and lo <= a <= hi]


def main() -> None:
    print(f"triton {triton.__version__}, sm_90; counts are of the SASS K-loop body (ptxas unrolls it)")
    print(f"{'source':<18} {'warps':>5} {'regs':>5} {'cvt':>4} {'body':>5} " + " ".join(f"{k:>7}" for k in PATTERNS))
    for per_thread in (False, True):
        src = source(per_thread)
        for warps in (1, 2, 4):
            kernel = compiled(src, warps)
            cubin = Path(tempfile.mkdtemp(prefix="gemv_sass_")) / "k.cubin"
            cubin.write_bytes(kernel.asm["cubin"])
            sass = subprocess.run([str(BIN / "cuobjdump"), "-sass", str(cubin)], capture_output=True, text=True).stdout
            ptx = Path(cubin.parent / "k.ptx")
            ptx.write_text(kernel.asm["ptx"])
            info = subprocess.run(
                [str(BIN / "ptxas"), "-arch=sm_90a", "-v", str(ptx), "-o", str(cubin.parent / "x.cubin")],
                capture_output=True,
                text=True,
            ).stderr
            regs = re.search(r"Used (\d+) registers", info)
            converts = kernel.asm["ttgir"].count("ttg.convert_layout")
            body = loop_body(sass)
            counts = [sum(1 for t in body if re.search(p, t)) for p in PATTERNS.values()]
            name = "per-thread loads" if per_thread else "default"
            print(
                f"{name:<18} {warps:>5} {regs.group(1) if regs else '-':>5} {converts:>4} {len(body):>5} "
                + " ".join(f"{c:>7}" for c in counts)
            )


if __name__ == "__main__":
    main()
