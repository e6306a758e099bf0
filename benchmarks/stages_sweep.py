"""Attention backward kernels at several shapes with ``TILE2TRITON_OCCUPANCY_STAGES`` on and off (tile2triton only;
runtime/tuning.py: a longer attention loop on a grid of more blocks than SMs takes the stage count, of 3 and 2,
that lets the most blocks share an SM).  One child process a shape and setting; each prints the kernels'
launch choices and the case's ``do_bench`` median.

    TILELANG_EXAMPLES=CHECKOUT/examples PYTHONPATH=. python3 benchmarks/stages_sweep.py [--offline]

``--offline``: only the launch choices, on any machine (no launch).
"""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = [  # (folder under TILELANG_EXAMPLES or "beyond:...", module, builder, arguments)
    ("beyond:block_causal_attention", "regression_beyond_block_causal_attention", "run_block_causal_bwd",
     dict(batch=1, seq_len=2048, heads=16, dim=128, dllm_block=32)),
    ("beyond:block_causal_attention", "regression_beyond_block_causal_attention", "run_block_causal_bwd",
     dict(batch=2, seq_len=4096, heads=16, dim=64, dllm_block=32)),
    ("beyond:block_causal_attention", "regression_beyond_block_causal_attention", "run_block_causal_bwd",
     dict(batch=1, seq_len=8192, heads=8, dim=128, dllm_block=64)),
    ("flash_attention", "example_mha_bwd_bhsd", "_mha_bwd", ["bhsd", 4, 16, 2048, 64, True]),
    ("flash_attention", "example_mha_bwd_bhsd", "_mha_bwd", ["bhsd", 2, 32, 4096, 128, True]),
    ("flash_attention", "example_mha_bwd_bshd", "_mha_bwd", ["bshd", 8, 16, 1024, 128, False]),
    ("flash_attention", "example_gqa_bwd", "_gqa_bwd", [2, 16, 2048, 128, 128, 4]),
]  # fmt: skip


def child(index: int, offline: bool) -> None:
    sys.path.insert(0, os.path.dirname(HERE))
    from tile2triton.cli import install_tilelang_alias

    install_tilelang_alias()
    from tile2triton.runtime import kernel as kernel_mod
    from tile2triton.runtime import tuning
    from tile2triton.runtime.target import parse_target

    init = kernel_mod.JITKernel.__init__

    def reporting(self, *args, **kwargs):
        init(self, *args, **kwargs)
        choice = tuning.heuristic(self.prim_func, parse_target("sm_90"))
        print(f"CHOICE {self.prim_func.name} warps={choice.num_warps} stages={choice.num_stages}", flush=True)

    kernel_mod.JITKernel.__init__ = reporting
    if offline:
        from tile2triton.cuda_as_cpu import map_cuda_to_cpu

        map_cuda_to_cpu()
        kernel_mod.JITKernel._first_launch = lambda self, launcher, *a, **k: launcher
        kernel_mod.JITKernel._launch = lambda self, *a, **k: None
    folder, module, builder, args = CASES[index]
    examples = os.environ["TILELANG_EXAMPLES"]
    if folder.startswith("beyond:"):
        path = os.path.join(HERE, "beyond_suite", folder[len("beyond:") :])
    else:
        path = os.path.join(examples, folder)
    sys.path.insert(0, path)
    mod = __import__(module)
    if builder.startswith("_"):
        sys.path.insert(0, os.path.join(HERE, "tilelang_regression_suite"))
        import variants

        ms = getattr(variants, builder)(*args)(mod)
    else:
        ms = getattr(mod, builder)(**args)
    print(f"RESULT {float(ms):.4f}", flush=True)


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child(int(sys.argv[2]), sys.argv[3] == "1")
        return
    offline = "--offline" in sys.argv
    for i, (_, module, builder, args) in enumerate(CASES):
        for setting in ("1", "0"):
            env = dict(os.environ, TILE2TRITON_OCCUPANCY_STAGES=setting)
            cmd = [sys.executable, __file__, "--child", str(i), "1" if offline else "0"]
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
            choices = sorted({line[7:] for line in proc.stdout.splitlines() if line.startswith("CHOICE")})
            result = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("RESULT")]
            what = (
                result[0] + " ms" if result else ("" if offline else "FAILED " + proc.stderr[-200:].replace("\n", " "))
            )
            print(
                f"{module}.{builder} {json.dumps(args)} occupancy={setting}: {what} | {'; '.join(choices)}", flush=True
            )


if __name__ == "__main__":
    main()
