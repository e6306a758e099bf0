"""GPU probe (issue 23, attention forwards below TileLang: mha_inference 0.90x, the sink forward 0.81-0.94x):
what the generated kernels gain from a launch choice or a text edit, kernel by kernel.

TileLang's examples through tile2triton, with the runtime's launch plumbing intact: the generated
source is edited on its way to the cache file Triton reads (``runtime.cache.source_path``), and the
launch choice is the heuristic's with fields replaced (``runtime.tuning.heuristic``).  Variants:

- ``base``: what main generates and launches;
- ``wN`` / ``sN``: N warps / N pipeline stages (every kernel of the prim_func);
- ``fdiv``: float32 ``tl.math.div_rn(a, b)`` as ``a / b`` (what TL_ENABLE_FAST_MATH gives);
- ``sd``: ``TILE2TRITON_SHARED_DIVISORS=1`` (a quotient of a shared divisor correctly rounded by one FMA
  pair after its reciprocal, one tile-wide fallback branch: ``_div_rn_shared``, codegen/emit.py);
- ``sdoff``: ``TILE2TRITON_SHARED_DIVISORS=0`` (``tl.math.div_rn`` per element: the default before);
- ``nomask``: ``TILE2TRITON_ARITHMETIC_MASKS=0`` (masks of 0 / -inf as ``tl.where`` of a boolean tile, as before
  session 31; codegen/masks.py);
- ``sd0``: ``sd`` without its range test and fallback (not exact for extreme values: what the test
  and the branch cost);
- ``tilelang``: real TileLang (the same example, from the directory ``TILELANG_SITE`` names), for reference;
- ``g`` and ``g+FLAG+...``: the Gluon rows route (``TILE2TRITON_GLUON=force``) with its module edited as TileLang's
  warp-specialized kernel does it (session 29's CUDA source, gpu_logs/2026-12-04_s29_tilelang_sink_fwd_*.cu.txt);
  flags: ``serial`` (``TILE2TRITON_GLUON_SCHEDULE=serial``), ``qlate`` (each consumer waits for its Q at its
  first S = Q K^T, not right after issuing the load: the mask before it overlaps the load), ``kfree`` (a K stage
  and a V stage freed apart: K once S is waited for, V once P V is; one ``kv_free`` after P V before), ``st2``
  (two ring stages, as TileLang's ``num_stages=2``, not three);

timed with ``triton.testing.do_bench`` (warmup 25, rep 200, median, event time) and CUPTI per kernel
(the suite's ``kernel_times``), outputs checked against ``base``'s (max abs difference).  One child
process per variant (the cache and the patched functions are per process).

    PYTHONPATH=. python3 benchmarks/hand_variants/attn_fwd_edits.py EXAMPLES [VARIANT,...] [CASE_SUBSTRING,...]
    (EXAMPLES: TileLang's examples/; the cases whose names contain one of the substrings, all without them)

Session 30 wrote the ``g`` variants; their edits compile for sm_90 offline with Triton 3.6 and 3.9 (both schedules,
a window too), not yet run on the GPU. The run they were written for (TileLang 10-13% ahead of both routes at 256
keys, session 29):

    TILELANG_SITE=/tmp/tlsite PYTHONPATH=. python3 benchmarks/hand_variants/attn_fwd_edits.py .tlx/examples \
      base,tilelang,g,g+qlate,g+kfree,g+qlate+kfree,g+qlate+kfree+st2,g+serial+qlate+kfree+st2 \
      "sink fwd 1x32 256/256,sink fwd 2x24 384/640,sink fwd 1x16"

Session 31 ran the ``g`` variants above (gpu_logs/2026-12-04_s31_calls.log), then ``base,mintf,tilelang`` with
``mintf`` the text edit that became codegen/masks.py, then ``base,nomask``.

Session 29 ran ``base,tilelang,s2`` on the sink and mha_fwd_bhsd cases (gpu_logs/2026-12-04_s29_call1.log).
Session 23 ran ``base,w8,s2,s4,fdiv``, ``base,sd,fdiv``, ``base,sd,sd0,fdiv`` and ``sdoff,sd`` on the first six cases
(gpu_logs/2026-12-04_s23_division.log).  Session 24 ran ``base,s4`` and then ``base,s2,s4`` on the one-wave grids
(gpu_logs/2026-12-04_s24_stages.log): the short-loop stage choice now counts only the blocks a grid gives an SM.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# name, example module (folder/file), builder arguments, inputs
CASES = {
    "mha_inference 1x32 128/2048": ("flash_decoding/example_mha_inference", "inference", (1, 32, 128, 2048)),
    "mha_inference 2x16 256/3072": ("flash_decoding/example_mha_inference", "inference", (2, 16, 256, 3072)),
    # one-wave grids (64 and 128 blocks on 132 SMs) with longer loops: does "s4" pay wherever a grid is one wave?
    "mha_inference 1x16 128/4096": ("flash_decoding/example_mha_inference", "inference", (1, 16, 128, 4096)),
    "mha_inference 1x32 128/8192": ("flash_decoding/example_mha_inference", "inference", (1, 32, 128, 8192)),
    "sink fwd 1x32 256/256": ("attention_sink/example_mha_sink_fwd_bhsd", "sink", (1, 32, 256, 256, None)),
    "sink fwd 1x32 256/256 w128": ("attention_sink/example_mha_sink_fwd_bhsd", "sink", (1, 32, 256, 256, 128)),
    "sink fwd 2x24 384/640": ("attention_sink/example_mha_sink_fwd_bhsd", "sink", (2, 24, 384, 640, None)),
    "sink fwd 2x24 384/640 w128": ("attention_sink/example_mha_sink_fwd_bhsd", "sink", (2, 24, 384, 640, 128)),
    "mha_fwd_bhsd 2x16 384/640": ("flash_attention/example_mha_fwd_bhsd", "bhsd", (2, 16, 384, 640)),
    # more one-wave grids (session 24's stage sweep): 128 and 96 blocks, 64- and 128-wide heads
    "mha_fwd_bhsd 1x16 1024/1024": ("flash_attention/example_mha_fwd_bhsd", "bhsd", (1, 16, 1024, 1024)),
    "mha_fwd_bhsd 1x8 2000/2000": ("flash_attention/example_mha_fwd_bhsd", "bhsd", (1, 8, 2000, 2000)),
    "sink fwd 1x16 1024/1024": ("attention_sink/example_mha_sink_fwd_bhsd", "sink", (1, 16, 1024, 1024, None)),
    "sink fwd 1x8 1500/1500 w256": ("attention_sink/example_mha_sink_fwd_bhsd", "sink", (1, 8, 1500, 1500, 256)),
    "mha_inference 1x8 128/16384": ("flash_decoding/example_mha_inference", "inference", (1, 8, 128, 16384)),
}
VARIANTS = ["base", "sd", "sd0", "fdiv", "w8", "s2", "s4"]


def build(kind: str, example, args):
    import torch

    if kind == "inference":
        b, h, q_len, kv_len = args
        kernel = example.flashattn(b, h, q_len, kv_len, 128, False, 128, 64)
        q = torch.randn(b, q_len, h, 128, dtype=torch.float16, device="cuda")
        k = torch.randn(b, kv_len, h, 128, dtype=torch.float16, device="cuda")
        v = torch.randn(b, kv_len, h, 128, dtype=torch.float16, device="cuda")
        return kernel, (q, k, v)
    if kind == "sink":
        b, h, q_len, kv_len, window = args
        kernel = example.flashattn(
            b, h, q_len, kv_len, 128, window, block_M=128, block_N=128, num_stages=2, threads=256
        )
        return kernel, example.gen_inputs(b, h, q_len, kv_len, 128, dtype=torch.float16)
    b, h, q_len, kv_len = args
    kernel = example.flashattn(b, h, q_len, kv_len, 64, True, block_M=128, block_N=128, num_stages=2, threads=256)
    q = torch.randn(b, h, q_len, 64, dtype=torch.float16, device="cuda")
    k = torch.randn(b, h, kv_len, 64, dtype=torch.float16, device="cuda")
    v = torch.randn(b, h, kv_len, 64, dtype=torch.float16, device="cuda")
    return kernel, (q, k, v)


def gluon_edit(source: str, flags: set) -> str:
    """The Gluon rows route's module (codegen/gluon_attention.py's text) with the ``g+...`` flags' edits."""
    if not source.startswith("# Gluon generated"):
        return source
    lines = source.split("\n")
    if "qlate" in flags:  # the consumer's Q wait moves to just before its first K wait
        at = next(i for i, line in enumerate(lines) if line.strip() == "mbarrier.wait(q_ready, 0)")
        del lines[at]
        first_k = next(i for i in range(at, len(lines)) if "mbarrier.wait(k_ready.index(" in lines[i])
        indent = lines[first_k][: len(lines[first_k]) - len(lines[first_k].lstrip())]
        lines.insert(first_k, indent + "mbarrier.wait(q_ready, 0)")
    if "kfree" in flags:
        out, stage = [], "0"
        for line in lines:
            indent = line[: len(line) - len(line.lstrip())]
            text = line.strip()
            if text.startswith("kv_free = gl.allocate_shared_memory("):
                out += [line.replace("kv_free =", "k_free ="), line.replace("kv_free =", "v_free =")]
            elif text.startswith("mbarrier.init(kv_free.index(stage)"):
                out += [line.replace("kv_free", "k_free"), line.replace("kv_free", "v_free")]
            elif text.startswith("mbarrier.wait(kv_free.index(stage), phase ^ 1)"):
                continue  # the loader waits for each ring apart, below
            elif text.startswith("mbarrier.expect(k_ready.index(stage)") or text.startswith("mbarrier.expect(v_ready"):
                ring = "k_free" if "k_ready" in text else "v_free"
                out += [f"{indent}mbarrier.wait({ring}.index(stage), phase ^ 1)", line]
            elif text.startswith("mbarrier.arrive(kv_free.index("):
                out.append(line.replace("kv_free", "v_free"))
            else:
                m = re.match(r"mbarrier\.wait\(k_ready\.index\((\w+)\)", text)
                if m:
                    stage = m[1]
                out.append(re.sub(r"\bkv_free\b", "k_free, v_free", line) if "kv_free" in line else line)
                if re.match(r"(\w+) = warpgroup_mma_wait\([01], deps=\(\1,\)\)", text):  # S waited for: K is free
                    out.append(f"{indent}mbarrier.arrive(k_free.index({stage}), count=1)")
        lines = out
    return "\n".join(lines)


def patch(variant: str) -> None:
    from tile2triton.runtime import cache, tuning

    if variant == "g" or variant.startswith("g+"):
        flags = set(variant.split("+")[1:])
        os.environ["TILE2TRITON_GLUON"] = "force"
        os.environ["TILE2TRITON_GLUON_SCHEDULE"] = "serial" if "serial" in flags else "auto"
        if "st2" in flags:
            from tile2triton.codegen import gluon_attention

            plan = gluon_attention.plan

            def two_stages(*args, **kwargs):
                p = plan(*args, **kwargs)
                p.stages = 2
                return p

            gluon_attention.plan = two_stages
        source_path = cache.source_path
        cache.source_path = lambda source, stem: source_path(gluon_edit(source, flags), stem)
        return

    if variant == "nomask":
        os.environ["TILE2TRITON_ARITHMETIC_MASKS"] = "0"
    if variant in ("sd", "sd0", "sdoff"):
        os.environ["TILE2TRITON_SHARED_DIVISORS"] = "0" if variant == "sdoff" else "1"
    m = re.fullmatch(r"([ws])(\d)", variant)
    if m:
        heuristic = tuning.heuristic

        def forced(func, capability):
            choice = heuristic(func, capability)
            n = int(m.group(2))
            warps, stages = (n, choice.num_stages) if m.group(1) == "w" else (choice.num_warps, n)
            return tuning.LaunchChoice(warps, stages, choice.warp_specialize)

        tuning.heuristic = forced
    edit = None
    if variant == "fdiv":

        def edit(source):
            return re.sub(r"tl\.math\.div_rn\(([^,]+), ([^\n]+)\)\n", r"(\1) / (\2)\n", source)

    if variant == "sd0":

        def edit(source):
            start = source.find("    if tl.min(in_range")
            if start < 0:
                return source
            end = source.index("        q = a * b_inv\n", start)
            body = source[end:].split("    return q\n", 1)
            return (
                source[:start]
                + body[0].replace("\n        ", "\n    ").replace("        q = a", "    q = a", 1)
                + "    return q\n"
                + body[1]
            )

    if edit is not None:
        source_path = cache.source_path
        cache.source_path = lambda source, stem: source_path(edit(source), stem)


def child(examples: str, variant: str, only: list[str]) -> None:
    import torch
    import triton.testing

    sys.path.insert(0, ROOT)
    sys.path.insert(0, os.path.join(ROOT, "benchmarks", "tilelang_regression_suite"))
    from child import kernel_times

    from tile2triton.cli import install_tilelang_alias

    if variant != "tilelang":
        install_tilelang_alias()
        patch(variant)
    for name, (module, kind, args) in CASES.items():
        if only and not any(o in name for o in only):
            continue
        folder, file = module.split("/")
        sys.path.insert(0, os.path.join(examples, folder))
        example = __import__(file)
        torch.manual_seed(0)
        try:
            kernel, inputs = build(kind, example, args)
            out = kernel(*inputs)
            torch.cuda.synchronize()
            event = triton.testing.do_bench(lambda: kernel(*inputs), warmup=25, rep=200, return_mode="median")
            total, per_kernel = kernel_times(lambda: kernel(*inputs))
            path = f"/tmp/attn_edits_{re.sub(r'[^a-z0-9]+', '_', name)}.pt"
            if variant == "base":
                torch.save(out, path)
            diff = float((out.float() - torch.load(path).float()).abs().max()) if os.path.exists(path) else None
            row = dict(name=name, variant=variant, event_us=event * 1e3, kernel_us=total * 1e3, diff=diff,
                       kernels={k: round(v * 1e3, 2) for k, v in per_kernel.items()}, launch=str(getattr(kernel, "launch_choice", None)))  # fmt: skip
        except Exception as e:  # noqa: BLE001 - a variant that does not compile is a row too
            row = dict(name=name, variant=variant, error=f"{type(e).__name__}: {e}"[:300])
        print("ROW " + json.dumps(row), flush=True)


def main() -> int:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3], sys.argv[4:])
        return 0
    examples = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "/tmp/tl/examples")
    variants = sys.argv[2].split(",") if len(sys.argv) > 2 else VARIANTS
    only = sys.argv[3].split(",") if len(sys.argv) > 3 else []
    rows = []
    for variant in variants:
        env = dict(os.environ)
        if variant == "tilelang":  # real TileLang, from TILELANG_SITE (where its wheels are unpacked)
            env["PYTHONPATH"] = os.pathsep.join([os.environ["TILELANG_SITE"], env.get("PYTHONPATH", "")])
        r = subprocess.run(
            [sys.executable, __file__, "--child", examples, variant, *only], capture_output=True, text=True, env=env
        )
        if r.returncode:
            print(f"{variant} failed:\n{(r.stdout + r.stderr)[-1500:]}")
        rows += [json.loads(line[4:]) for line in r.stdout.splitlines() if line.startswith("ROW ")]
    print("| case | variant | event us | kernel us | max diff vs base | per kernel us |")
    print("|---|---|---|---|---|---|")
    for row in sorted(rows, key=lambda r: (list(CASES).index(r["name"]), variants.index(r["variant"]))):
        if "error" in row:
            print(f"| {row['name']} | {row['variant']} | {row['error']} | | | |")
            continue
        per = "; ".join(f"{k[:40]} {v}" for k, v in row["kernels"].items())
        diff = "-" if row["diff"] is None else f"{row['diff']:.1e}"
        print(f"| {row['name']} | {row['variant']} | {row['event_us']:.2f} | {row['kernel_us']:.2f} | {diff} | {per} |")
        print(f"|   | launch: {row['launch']} | | | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
