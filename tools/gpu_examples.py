"""Run every example's check() on CUDA at sizes that fill the GPU (no tile multiples where the
example allows), printing one line each: name, sizes, max error vs torch, wall time.

    PYTHONPATH=. python tools/gpu_examples.py [NAME ...]
"""

import importlib
import sys
import time

import torch

LARGE = {
    "elementwise": dict(M=8191, N=8193),
    "conditional_elementwise": dict(N=(1 << 26) + 3),
    "reduction": dict(M=16383, N=4096),
    "layer_norm": dict(M=16383, N=4096),
    "matmul": dict(M=8191, N=8190, K=4097, block_M=128, block_N=128, block_K=32),
    "gemv": dict(N=16383, K=16384, BLOCK_N=64, BLOCK_K=128),
    "seed_copy": dict(N=(1 << 28) - 5),
    "batched_gemm": dict(batch=16, M=2047, N=2049, K=1031, block_M=128, block_N=128, block_K=32),
    "cumsum": dict(M=8191, N=1000, block=8),
    "dequant_gemm": dict(M=4095, N=4097, K=4096, block_M=64, block_N=64, block_K=64),
    "flash_attention": dict(
        batch=4, heads=32, seq_q=4095, seq_kv=4095, dim=128, is_causal=True, block_M=128, block_N=64
    ),
    "gemm_bias_relu": dict(M=8191, N=8190, K=4097, block_M=128, block_N=128, block_K=32),
    "gemm_int8": dict(M=4095, N=4097, K=4096, block_M=128, block_N=128, block_K=64),
    "gemm_splitk": dict(M=2047, N=2049, K=16384, block_M=128, block_N=128, block_K=64, split_k=4),
    "rms_norm": dict(M=16383, N=4096, blk_m=1),
    "softmax": dict(M=16383, N=4096, block_M=1, block_N=4096),
}


def main(names):
    sys.path.insert(0, "examples")
    print(f"{torch.cuda.get_device_name()} | torch {torch.__version__}", flush=True)
    for name in names or sorted(LARGE):
        start = time.time()
        try:
            module = importlib.import_module(name)
            result = module.check("cuda", **LARGE[name])
            torch.cuda.synchronize()
            print(f"ok   {name} {LARGE[name]} -> {result} ({time.time() - start:.1f} s)", flush=True)
        except Exception as exc:  # noqa: BLE001 - report every example
            print(f"FAIL {name} {LARGE[name]}: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
