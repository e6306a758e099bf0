"""Fuzz seed 9442089's generated kernel (fuzz_9442089_sm90.py, tile2triton's sm_90 source) run by hand on the GPU with
text edits, each against a float64 torch product: where the wrong outputs come from.
    python3 gpu_logs/2026-12-06_s44_h100/fuzz_9442089_probe.py"""
import importlib.util
import os
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = open(os.path.join(HERE, "fuzz_9442089_sm90.py")).read()
EDITS = {
    "as generated": [],
    "no second (all-masked) dot": [("        Cf = tl.dot(As_32, Bs_32, Cf)\n", "")],
    "second dot first": [
        ("        Cf = tl.dot(As_0, Bs_0, Cf)\n        Cf = tl.dot(As_32, Bs_32, Cf)\n",
         "        Cf = tl.dot(As_32, Bs_32, Cf)\n        Cf = tl.dot(As_0, Bs_0, Cf)\n")],
    "K 16 tiles, one dot": [
        ("        Cf = tl.dot(As_32, Bs_32, Cf)\n", ""),
        ("        i1 = tl.arange(0, 32)[None, :]\n", "        i1 = tl.arange(0, 16)[None, :]\n"),
        ("        i0_2 = tl.arange(0, 32)[:, None]\n", "        i0_2 = tl.arange(0, 16)[:, None]\n")],
    "no A/B masks on K (other rows zero)": [
        ("        mask = (by * 64 + i0 < 44) & (ko * 48 + i1 < 4)\n",
         "        mask = (by * 64 + i0 < 44) & (i1 < 4)\n"),
        ("        mask_2 = (ko * 48 + i0_2 < 4) & (bx * 64 + i1_2 < 66)\n",
         "        mask_2 = (i0_2 < 4) & (bx * 64 + i1_2 < 66)\n")],
    "accumulator 0, 0.5 added after": [
        ("    Cf = tl.full([64, 64], 0.5, tl.float32)\n", "    Cf = tl.zeros([64, 64], tl.float32)\n"),
        ("    i = tl.arange(0, 64)[:, None]\n", "    Cf = Cf + 0.5\n    i = tl.arange(0, 64)[:, None]\n")],
}
DEV = os.environ.get("DEV", "cuda")
M, N, K = 44, 66, 4
torch.manual_seed(0)
for trial in range(3):
    a = torch.randn(M, K, dtype=torch.float16, device=DEV)
    b = torch.randn(K, N, dtype=torch.float16, device=DEV)
    ref = (a.double() @ b.double() + 0.5)
    ref = torch.where(torch.arange(M)[:, None].to(DEV) > torch.arange(N)[None, :].to(DEV) % 64, -ref, ref)
    for name, edits in EDITS.items():
        src = SRC
        for old, new in edits:
            assert old in src, (name, old)
            src = src.replace(old, new)
        for warps in (2, 4, 8):
            path = os.path.join(tempfile.mkdtemp(), "k.py")
            open(path, "w").write(src)
            spec = importlib.util.spec_from_file_location("k", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            c = torch.full((M, N), float("nan"), device=DEV)
            mod.main_kernel[(2, 1)](a, b, c, num_warps=warps)
            bad = ((c.double() - ref).abs() > 1e-2).sum().item()
            print(f"trial {trial} {name:34s} warps {warps}: {bad} of {M * N} wrong", flush=True)
            if bad and trial == 0:
                wrong = ((c.double() - ref).abs() > 1e-2).nonzero().tolist()
                rows = sorted({r for r, _ in wrong})
                cols = sorted({q for _, q in wrong})
                print(f"    rows {rows}\n    cols {cols}\n    first {wrong[:6]}", flush=True)
                r0, c0 = wrong[0]
                print(f"    got {c[r0, c0].item():.4f} want {ref[r0, c0].item():.4f}", flush=True)
