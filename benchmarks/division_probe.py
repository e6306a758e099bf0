"""What correctly rounded float32 division costs where a row of numerators shares its divisor
(``acc_o[i, j] /= logsum[i]``, ``x[j] / total[0]``), and what ``TILE2TRITON_SHARED_DIVISORS`` saves.

Each kernel (benchmarks/vs_tilelang_kernels.py; the sink one sinkfwd_probe.py's; the ``tl``
lowering, ``TILE2TRITON_GLUON=off``) is compiled three ways from the same source: without fast math
and the switch off (``tl.math.div_rn`` per element), without fast math and the switch on (one
correctly rounded reciprocal a divisor, two FMA corrections a quotient), and with
``TL_ENABLE_FAST_MATH`` (Triton's approximate ``/``).  The two exact forms must agree bit for bit.  ``triton.testing.do_bench`` medians (L2 flushed). On an H200:

    PYTHONPATH=. python benchmarks/division_probe.py
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from prewarm import prewarm

HERE = Path(__file__).resolve().parent

CASES = [  # kernel factory (vs_tilelang_kernels.py or sinkfwd_probe.py), its arguments
    ("causal_sink", (1, 32, 256, 256, 128, 128, 128, 2, 256)),
    ("causal_sink", (2, 24, 384, 640, 128, 128, 64, 2, 256)),
    ("causal_sink", (2, 24, 384, 640, 128, 128, 128, 2, 256)),
    ("mha_bhsd", (2, 16, 1000, 1000, 128, True, 128, 128, 2, 256)),
    ("softmax", (8192, 1000, 128)),
]
CONFIGS = (("exact, per element", False, "0"), ("exact, shared divisor", False, "1"), ("fast math", True, "1"))


def _kernels():
    spec = importlib.util.spec_from_file_location("vs_tilelang", HERE / "vs_tilelang.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["vs_tilelang"] = module
    spec.loader.exec_module(module)
    return module.load_kernels("t2t")


def inputs(name, args):
    import torch

    gen = torch.Generator(device="cpu").manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float16).cuda()

    if name == "softmax":
        return [randn(args[0], args[1])]
    b, h, sq, skv, d = args[:5]
    sinks = [randn(h)] if name == "causal_sink" else []
    return [randn(b, h, sq, d), randn(b, h, skv, d), randn(b, h, skv, d), *sinks]


def compile_one(module, name, args, fast, shared):
    from tile2triton.runtime.kernel import JITKernel

    os.environ["TILE2TRITON_SHARED_DIVISORS"] = shared
    pass_configs = {"tl.enable_fast_math": fast}
    if name == "causal_sink":  # benchmarks/sinkfwd_probe.py's kernel: Q, K, V, Output, Sinks
        import sinkfwd_probe

        factory, out_idx = sinkfwd_probe.causal_sink, [3]
    else:
        factory, out_idx = getattr(module, name), [-1]
    made = module.frontend.jit(out_idx=out_idx, pass_configs=pass_configs)(factory)(*args)
    return JITKernel(made.prim_func, pass_configs=made.pass_configs)


def _warm(task):
    name, args, fast, shared = task
    os.environ["TILE2TRITON_GLUON"] = "off"
    compile_one(_kernels(), name, args, fast, shared)(*inputs(name, args))


def main() -> int:
    import torch
    import triton

    os.environ["TILE2TRITON_GLUON"] = "off"
    tasks = [(name, args, fast, shared) for name, args in CASES for _, fast, shared in CONFIGS]
    prewarm(tasks, _warm, min(len(tasks), 15))
    module = _kernels()
    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, Triton {triton.__version__}")
    print("| kernel | shape | " + " | ".join(f"{c[0]} us" for c in CONFIGS) + " | exact forms agree |")
    print("|---|---|" + "---|" * (len(CONFIGS) + 1))
    for name, args in CASES:
        ins = inputs(name, args)
        cells, outs = [], []
        for _, fast, shared in CONFIGS:
            kernel = compile_one(module, name, args, fast, shared)
            outs.append(kernel(*ins))
            us = triton.testing.do_bench(lambda: kernel(*ins), warmup=25, rep=100, return_mode="median") * 1e3
            cells.append(f"{us:.1f}")
        agree = torch.equal(outs[0].view(torch.int16), outs[1].view(torch.int16))
        print(
            f"| {name} | {','.join(str(a) for a in args)} | {' | '.join(cells)} | {'yes' if agree else 'NO'} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
