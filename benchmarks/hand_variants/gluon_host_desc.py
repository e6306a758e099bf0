"""GPU probe (issue 23, session 29): what the Gluon attention route (codegen/gluon_attention.py) costs at short
loops because each program builds its three tensor descriptors in the kernel (``tma.make_tensor_descriptor``:
a tensormap written to global memory and fenced, every program), where TileLang passes host-made
``CUtensorMap`` kernel parameters and the ``tl`` lowering does too (``TILE2TRITON_HOST_DESCRIPTORS``).

TileLang's attention-sink forward (examples/attention_sink/example_mha_sink_fwd_bhsd: 128 x 128 tiles, 256
threads, fast math) through tile2triton with ``TILE2TRITON_GLUON=force``; its generated Gluon module is then
edited to take ``q_desc``/``k_desc``/``v_desc`` as parameters (the ``make_tensor_descriptor`` lines removed)
and launched by hand with Gluon's host ``TensorDescriptor``.  Rows: kernel us by CUPTI (the suite's
``kernel_times``) and event us (do_bench, L2 flushed; the hand launch builds its descriptors per call in
Python, so only its kernel time compares), output max error against the example's torch reference.

    PYTHONPATH=. python3 benchmarks/hand_variants/gluon_host_desc.py EXAMPLES

Session 29 ran it (gpu_logs/2026-12-04_s29_gluon_host_desc.log); since then the routes take host-made
descriptors themselves (``TILE2TRITON_HOST_DESCRIPTORS``), so the probe turns that switch off for the
route's own form and makes the host-descriptor form by hand, as it did then.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHAPES = [(1, 32, 256, 256), (2, 24, 384, 640), (1, 16, 1024, 1024), (1, 32, 512, 512), (2, 16, 2048, 2048)]
MAKE = re.compile(r"^\s+(\w+_desc) = tma\.make_tensor_descriptor\((\w+), (\[[^\]]*\]), (\[[^\]]*\]), (\[[^\]]*\]), .*$")


def host_module(source: str, entry: str):
    """The Gluon module with its entry taking host descriptors; returns (module, [(desc, param, shape,
    strides, box)])."""
    descs = []
    lines = []
    for line in source.splitlines():
        m = MAKE.match(line)
        if m:
            descs.append((m[1], m[2], eval(m[3]), eval(m[4]), eval(m[5])))
            continue
        lines.append(line)
    text = "\n".join(lines)
    head = re.search(rf"def {entry}\(([^)]*)\):", text)
    params = [p.strip() for p in head[1].split(",")]
    text = text.replace(head[0], f"def {entry}({', '.join(params + [d[0] for d in descs])}):")
    path = os.path.join(tempfile.mkdtemp(prefix="gluon_hd_"), "gluon_hd.py")
    with open(path, "w") as f:
        f.write(text)
    spec = importlib.util.spec_from_file_location("gluon_hd", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, entry), params, descs


def main() -> None:
    import torch
    import triton.testing
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    sys.path.insert(0, ROOT)
    sys.path.insert(0, os.path.join(ROOT, "benchmarks", "tilelang_regression_suite"))
    from child import kernel_times

    from tile2triton.cli import install_tilelang_alias

    install_tilelang_alias()
    sys.path.insert(0, os.path.join(sys.argv[1], "attention_sink"))
    import example_mha_sink_fwd_bhsd as example

    os.environ["TILE2TRITON_GLUON"] = "force"  # read when compiling; the jit caches kernels per shape
    os.environ["TILE2TRITON_HOST_DESCRIPTORS"] = "0"  # the route's in-kernel form (its default before session 29)
    print("| batch, heads, seq_q, seq_kv | gluon kernel us | gluon + host descriptors kernel us | "
          "event us (gluon / hd) | max error vs torch (gluon / hd) |")  # fmt: skip
    print("|---|---|---|---|---|")
    for b, h, sq, skv in SHAPES:
        torch.manual_seed(0)
        inputs = example.gen_inputs(b, h, sq, skv, 128, dtype=torch.float16)
        ref = example.ref_program(*inputs, None, dtype=torch.float16).float()
        kernel = example.flashattn(b, h, sq, skv, 128, None, block_M=128, block_N=128, num_stages=2, threads=256)
        source = kernel.get_kernel_source()
        if "gl.warp_specialize" not in source:
            print(f"| {b}, {h}, {sq}, {skv} | (no Gluon route) | | | |")
            continue
        g_out = kernel(*inputs)
        g_event = triton.testing.do_bench(lambda: kernel(*inputs), warmup=25, rep=200, return_mode="median") * 1e3
        g_kernel = kernel_times(lambda: kernel(*inputs))[0] * 1e3
        fn, params, descs = host_module(source, "main_kernel")
        q, k, v, sinks = inputs
        out = torch.full_like(q, float("nan"))
        tensors = dict(zip(params, (q, k, v, out, sinks)))
        grid = ((sq + 127) // 128, h, b)

        def call():
            made = [
                TensorDescriptor(tensors[p], shape, strides, box, gl.NVMMASharedLayout.get_default_for(box, gl.float16))
                for _, p, shape, strides, box in descs
            ]
            fn[grid](*(tensors[p] for p in params), *made, num_warps=4)

        call()
        torch.cuda.synchronize()
        hd_event = triton.testing.do_bench(call, warmup=25, rep=200, return_mode="median") * 1e3
        hd_kernel = kernel_times(call)[0] * 1e3
        d_g = float((g_out.float() - ref).abs().max())
        d_h = float((out.float() - ref).abs().max())
        print(f"| {b}, {h}, {sq}, {skv} | {g_kernel:.2f} | {hd_kernel:.2f} | {g_event:.1f} / {hd_event:.1f} | "
              f"{d_g:.1e} / {d_h:.1e} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
