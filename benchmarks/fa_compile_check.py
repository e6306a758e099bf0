"""Compile bench.py's flash-attention kernels for sm_90 without a GPU, with the Triton installed.

For every (head dim, causal) case of bench.py: the transpiled examples/flash_attention.py at each
FA_TL_* config, and hw_attn_fwd (host descriptors, in-kernel descriptors, pointer loads, warp-specialized) at each
FA_HAND_* config (every variant) -- the signature and specialisation a launch would give them. Prints per kernel
the shared memory it needs (an H100/H200 block may have 232448 bytes) and, from ptxas -v,
registers and spill bytes. Exit status 1 when any fails to compile or needs too much shared memory.

    TRITON_CACHE_DIR=$(mktemp -d) PYTHONPATH=. python benchmarks/fa_compile_check.py [--all]

Without --all only the default configs (FA_TL_CONFIG, FA_HAND_CONFIG) are compiled; with it also
FA_TL_SWEEP, FA_HAND_SWEEP and FA_HAND_WS_SWEEP.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench  # noqa: E402

SMEM_LIMIT = 232448  # bytes per block on sm_90 (opt-in maximum)
SEQ, HEADS = 4096, 128  # bench.py: seq 4096, batch*heads = 4*32


def _ptxas_info(ptx: str) -> str:
    ptxas = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
    if not ptxas.exists():
        return ""
    arch = re.search(r"\.target\s+(sm_\w+)", ptx)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.ptx"
        src.write_text(ptx)
        run = subprocess.run([str(ptxas), "-v", f"--gpu-name={arch.group(1) if arch else 'sm_90a'}", str(src),
                              "-o", str(Path(tmp) / "k.o")], capture_output=True, text=True)  # fmt: skip
    regs = re.search(r"Used (\d+) registers", run.stderr)
    spills = re.findall(r"(\d+) bytes spill (stores|loads)", run.stderr)
    return (
        f"{regs.group(1) if regs else '?'} regs, spills " + "/".join(s for s, _ in spills)
        if spills
        else run.stderr[-200:]
    )


def _compile(fn, signature: dict, constexprs: dict, num_warps: int, num_stages: int):
    # as a launch specialises: pointers 16-byte aligned, integer arguments that are multiples of 16 marked so
    attrs = {
        (i,): [["tt.divisibility", 16]]
        for i, name in enumerate(fn.arg_names)
        if signature[name].startswith("*") or _INT_VALUES.get(name, 1) % 16 == 0
    }
    src = ASTSource(fn, signature, constexprs, attrs)
    options = {"num_warps": num_warps, "num_stages": num_stages}
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options)


_INT_VALUES = {"ZH": HEADS}


def check_hand(dim: int, causal: bool, cfg, variant: str) -> tuple[bool, str]:
    bm, bn, stages, warps = cfg
    fn = bench.hw_attn_fwd
    desc, _, ws = variant.partition("-")
    if desc == "host":
        sig = {"Q": f"tensordesc<fp16[{bm},{dim}]>", "K": f"tensordesc<fp16[{bn},{dim}]>",
               "V": f"tensordesc<fp16[{bn},{dim}]>", "Out": f"tensordesc<fp16[{bm},{dim}]>"}  # fmt: skip
    else:
        sig = {n: "*fp16" for n in ("Q", "K", "V", "Out")}
    consts = {"N_CTX": SEQ, "HEAD_DIM": dim, "BLOCK_M": bm, "BLOCK_N": bn, "CAUSAL": causal, "DESC": desc != "ptr",
              "WARP_SPECIALIZE": ws == "ws"}  # fmt: skip
    sig.update({"sm_scale": "fp32", "ZH": "i32", **{k: "constexpr" for k in consts}})
    compiled = _compile(fn, sig, consts, warps, stages)
    return compiled.metadata.shared <= SMEM_LIMIT, _describe(compiled)


def check_tl(dim: int, causal: bool, cfg) -> tuple[bool, str]:
    kernel = bench.flashattn(4, 32, SEQ, SEQ, dim, causal, *cfg)
    source = kernel.get_kernel_source(interpret=False)
    module = kernel.lowered(False)
    launch = module.launches[0]
    path = Path(tempfile.mkdtemp()) / "fa_generated.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("fa_generated", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fn = getattr(mod, launch.name)
    sig = {a: "*fp16" for a in fn.arg_names}
    compiled = _compile(fn, sig, {}, launch.num_warps, 3)  # launched with Triton's default; its loop names num_stages
    return compiled.metadata.shared <= SMEM_LIMIT, _describe(compiled)


def _describe(compiled) -> str:
    return (
        f"shared {compiled.metadata.shared} B, {compiled.metadata.num_warps} warps, {_ptxas_info(compiled.asm['ptx'])}"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="also every FA_*_SWEEP config")
    parser.add_argument("--dims", default="128,64")
    args = parser.parse_args(argv)
    print(f"triton {triton.__version__}, sm_90, TRITON_CACHE_DIR={os.environ.get('TRITON_CACHE_DIR', '(default)')}")
    failed = 0
    for dim in (int(d) for d in args.dims.split(",")):
        for causal in (False, True):
            case = f"D{dim}{' causal' if causal else ''}"
            tl_cfgs = dict.fromkeys([bench.FA_TL_CONFIG[dim], *(bench.FA_TL_SWEEP[dim] if args.all else [])])
            hand_cfgs = dict.fromkeys([bench.FA_HAND_CONFIG[dim], *(bench.FA_HAND_SWEEP[dim] if args.all else [])])
            jobs = [(f"t2t {cfg}", lambda cfg=cfg: check_tl(dim, causal, cfg)) for cfg in tl_cfgs]
            jobs += [(f"hand {variant} {cfg}", lambda cfg=cfg, v=variant: check_hand(dim, causal, cfg, v))
                     for cfg in hand_cfgs if not (causal and cfg[0] % cfg[1]) for variant in bench.FA_HAND_VARIANTS
                     if not (causal and variant.endswith("-ws"))]  # fmt: skip
            if args.all and not causal:
                jobs += [(f"hand device-ws {cfg}", lambda cfg=cfg: check_hand(dim, causal, cfg, "device-ws"))
                         for cfg in bench.FA_HAND_WS_SWEEP[dim] if cfg not in hand_cfgs]  # fmt: skip
            for label, job in jobs:
                start = time.perf_counter()
                try:
                    ok, info = job()
                except Exception as exc:  # noqa: BLE001 - report every kernel
                    ok, info = False, f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1][:300]}"
                failed += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {case:<12} {label:<34} {info} ({time.perf_counter() - start:.1f} s)",
                      flush=True)  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
