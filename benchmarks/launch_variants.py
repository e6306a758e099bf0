"""Time vs_tilelang.py rows under launch and lowering variants, on the GPU (what runtime/tuning.py's
choices rest on): warps, stages, Triton's warp specialization, tensor descriptors off, and source
rewrites of plain loops (explicit pipelining, unrolling), each checked against the row's reference.

    PYTHONPATH=.:<TileLang's site folder> python benchmarks/launch_variants.py "FA bhsd D128,GQA decode"

The argument is a comma-separated list of row-name substrings; TileLang's time is printed when it
is importable.  Log of the 2026-12-01 run: gpu_logs/2026-12-01_s5_perf_variants.log."""

import dataclasses
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import torch
import vs_tilelang as V

from tile2triton.runtime import kernel as K
from tile2triton.runtime.tuning import LaunchChoice as C

_orig = K.emit_module
TRANSFORM = [None]


def _emit(func, options):
    m = _orig(func, options)
    return dataclasses.replace(m, source=TRANSFORM[0](m.source)) if TRANSFORM[0] else m


K.emit_module = _emit


def pipe(n):
    return lambda s: re.sub(r"for (\w+) in range\((.*)\):", rf"for \1 in tl.range(\2, num_stages={n}):", s)


def unroll(n):
    return lambda s: re.sub(r"for (\w+) in range\((.*)\):", rf"for \1 in tl.range(\2, loop_unroll_factor={n}):", s)


def variants(name):
    if "thread view" in name:
        return [
            ("w2 (src)", None, {}, None),
            ("w1", C(1), {}, None),
            ("w4", C(4), {}, None),
            ("pipe3", None, {}, pipe(3)),
            ("pipe4 w4", C(4), {}, pipe(4)),
            ("unroll4", None, {}, unroll(4)),
            ("unroll8", None, {}, unroll(8)),
        ]
    if "GQA decode" in name:
        return [
            ("src", None, {}, None),
            ("w4 s3", C(4, 3), {}, None),
            ("w8 s2", C(8, 2), {}, None),
            ("w4 s2 ws", C(4, 2, True), {}, None),
            ("w8 s2 ws", C(8, 2, True), {}, None),
            ("no desc", None, {"TILE2TRITON_TENSOR_DESCRIPTORS": "0"}, None),
            ("w4 s1", C(4, 1), {}, None),
        ]
    if "MLA" in name:
        return [
            ("heur", None, {}, None),
            ("w8 s1", C(8, 1), {}, None),
            ("w8 s2 ws", C(8, 2, True), {}, None),
            ("no desc", None, {"TILE2TRITON_TENSOR_DESCRIPTORS": "0"}, None),
            ("w16 s2", C(16, 2), {}, None),
            ("w4 s2", C(4, 2), {}, None),
        ]
    return [
        ("heur", None, {}, None),
        ("w8 s2", C(8, 2), {}, None),
        ("w8 s3 ws", C(8, 3, True), {}, None),
        ("w8 s2 ws", C(8, 2, True), {}, None),
        ("no desc", None, {"TILE2TRITON_TENSOR_DESCRIPTORS": "0"}, None),
        ("w4 s3", C(4, 3), {}, None),
        ("w16 s2", C(16, 2), {}, None),
    ]


def med(fn):
    runs = sorted(V.timed(fn, False))
    return runs[len(runs) // 2]


def main(spec):
    use_tl = True
    try:
        import tilelang  # noqa
    except Exception:
        use_tl = False
    allrows = V.rows(False) + V.decode_and_grouped_rows(False)
    print(f"{torch.cuda.get_device_name()} torch {torch.__version__}", flush=True)
    for r in allrows:
        if not any(w in r.name for w in spec.split(",")):
            continue
        torch.manual_seed(0)
        inputs = r.inputs("cuda")
        ref = r.ref(*inputs)
        if use_tl:
            try:
                tk = V.compile_row(r, "tilelang")
                e = V.rel_err(tk(*inputs), ref)
                print(f"{r.name} | TileLang | {med(lambda: tk(*inputs)):.4f} | err {e:.1e}", flush=True)
            except Exception as exc:
                print(f"{r.name} | TileLang failed {exc}"[:300], flush=True)
        for label, choice, env, tf in variants(r.name):
            saved = {k: os.environ.get(k) for k in env}
            os.environ.update(env)
            TRANSFORM[0] = tf
            try:
                k = V.compile_row(r, "t2t", choice)
                e = V.rel_err(k(*inputs), ref)
                torch.cuda.synchronize()
                ms = med(lambda: k(*inputs))
                print(
                    f"{r.name} | {label} ({k.launch_choice.label() if k.launch_choice else '-'}) | {ms:.4f} | err {e:.1e}",
                    flush=True,
                )
            except Exception as exc:
                print(f"{r.name} | {label} | failed {type(exc).__name__}: {str(exc)[:200]}", flush=True)
            finally:
                TRANSFORM[0] = None
                for kk, v in saved.items():
                    if v is None:
                        os.environ.pop(kk, None)
                    else:
                        os.environ[kk] = v


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "FA bhsd D128,GQA decode,MLA,thread view")
