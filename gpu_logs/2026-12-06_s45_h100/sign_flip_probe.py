"""Session 45: the negated-accumulator kernels of tests/test_wgmma_sign_flips.py on the GPU with the
sign rule as the runtime chooses it and forced off (``x * -1.0`` and ``tl.abs`` everywhere, the code before),
against float64; then which ptxas the machine has and whether each folds seed 9442089's xor.
    PYTHONPATH=. python3 gpu_logs/2026-12-06_s45_h100/sign_flip_probe.py"""

import os
import subprocess
import sys

import torch

sys.path.insert(0, "tests")
import test_wgmma_sign_flips as t  # noqa: E402

import tile2triton as tilelang  # noqa: E402
from tile2triton.runtime import target as target_mod  # noqa: E402

print("ptxas for sm_90 keeps sign flips:", target_mod.ptxas_keeps_wgmma_sign_flips())
chosen = target_mod.ptxas_keeps_wgmma_sign_flips
for rule in ("runtime", "bitwise always"):
    target_mod.ptxas_keeps_wgmma_sign_flips = chosen if rule == "runtime" else (lambda: True)
    for (M, N, K, bn, bk, fill, tr), op in [
        (shape, op)
        for op in ("neg", "abs")
        for shape in [
            (44, 66, 4, 64, 48, 0.5, False),
            (90, 70, 37, 24, 16, 0.0, True),
            (70, 100, 50, 64, 32, -1.25, False),
            (300, 260, 200, 64, 32, 0.0, False),
        ]
    ]:
        torch.manual_seed(M + N + K)
        kernel = tilelang.compile(t.flipped_gemm(M, N, K, 64, bn, bk, fill, tr, op))
        a = torch.randn((K, M) if tr else (M, K), dtype=torch.float16, device="cuda")
        b = torch.randn(K, N, dtype=torch.float16, device="cuda")
        c = torch.full((M, N), float("nan"), device="cuda")
        kernel(a, b, c)
        ref = t._reference(a, b, fill, tr, bn, op)
        bad = ((c.double().cpu() - ref).abs() > 2e-2 + 1e-2 * ref.abs()).sum().item()
        src = kernel.get_kernel_source(interpret=False)
        spelled = "arithmetic" if "-Cf, Cf)" in src or "tl.maximum(Cf, -Cf)" in src else "bitwise"
        print(
            f"{rule:16s} {op} {M}x{N}x{K} tile 64x{bn}x{bk} fill {fill:5}: {bad:5d} of {M * N} wrong ({spelled})",
            flush=True,
        )
target_mod.ptxas_keeps_wgmma_sign_flips = chosen
here = os.path.dirname(os.path.abspath(__file__))
ptx = os.path.join(here, "..", "2026-12-06_s44_h100", "fuzz_9442089_sm90.ptx")
for ptxas in ("/usr/local/cuda/bin/ptxas",):
    if not os.path.exists(ptxas) or not os.path.exists(ptx):
        print("no", ptxas if not os.path.exists(ptxas) else ptx)
        continue
    version = subprocess.run([ptxas, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    subprocess.run([ptxas, "-arch=sm_90a", ptx, "-o", "/tmp/f89.cubin"], check=True)
    sass = subprocess.run(
        ["/usr/local/cuda/bin/cuobjdump", "-sass", "/tmp/f89.cubin"], capture_output=True, text=True
    ).stdout
    print(ptxas, version, "folds the xor:", "-0x41000000" in sass or "0xbf000000" in sass)
