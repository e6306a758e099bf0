"""examples/norm: RMS norm (one row block in registers; and the split-K form) and layer norm (forward; backward
with dgamma/dbeta by atomic adds)."""

import os
import sys

import tilelang
import tilelang.testing
import torch

sys.path.insert(0, os.path.join(os.environ["TILELANG_EXAMPLES"], "norm"))
import layernorm  # noqa: E402
import rms_norm  # noqa: E402

SMALL = {
    "run_rms_norm": {"M": 70, "N": 300},
    "run_rms_norm_splitk": {"M": 70, "N": 300, "blk_k": 128},
    "run_layernorm": {"N": 70, "D": 300},
    "run_layernorm_bwd": {"N": 96, "D": 300},  # N: a multiple of blk_m (the example asserts it)
}


def run_rms_norm(M=8192, N=8192, blk_m=1):
    kernel = rms_norm.rms_norm.compile(M=M, N=N, blk_m=blk_m)
    a = torch.randn(M, N, device="cuda")
    return tilelang.profiler.do_bench(lambda: kernel(a))


def run_rms_norm_splitk(M=8192, N=8192, blk_m=1, blk_k=512):
    kernel = rms_norm.rms_norm_splitk.compile(M=M, N=N, blk_m=blk_m, blk_k=blk_k)
    a = torch.randn(M, N, device="cuda")
    return tilelang.profiler.do_bench(lambda: kernel(a))


def run_layernorm(N=4096, D=8192, eps=1e-5):
    # as LayerNormFn.forward (the example's main size, bf16): returns y, mean, rstd
    kernel = layernorm._layernorm_fwd(N, D, eps=eps, in_dtype="bfloat16", out_dtype="bfloat16")
    x = torch.randn(N, D, dtype=torch.bfloat16, device="cuda")
    gamma = torch.randn(D, dtype=torch.bfloat16, device="cuda")
    beta = torch.randn(D, dtype=torch.bfloat16, device="cuda")
    return tilelang.profiler.do_bench(lambda: kernel(x, gamma, beta))


def run_layernorm_bwd(N=4096, D=8192, eps=1e-5):
    # as LayerNormFn.backward: returns dx; dgamma and dbeta accumulate (atomic adds) into zeroed fp32 vectors
    kernel = layernorm._layernorm_bwd(N, D, in_dtype="bfloat16")
    x = torch.randn(N, D, dtype=torch.bfloat16, device="cuda")
    gamma = torch.randn(D, dtype=torch.bfloat16, device="cuda")
    dy = torch.randn(N, D, dtype=torch.bfloat16, device="cuda")
    mean = x.float().mean(dim=1)
    rstd = torch.rsqrt(x.float().var(dim=1, unbiased=False) + eps)
    dgamma = torch.zeros(D, dtype=torch.float32, device="cuda")
    dbeta = torch.zeros(D, dtype=torch.float32, device="cuda")
    return tilelang.profiler.do_bench(lambda: (kernel(dy, x, gamma, mean, rstd, dgamma, dbeta), dgamma, dbeta))


def regression_rms_norm():
    tilelang.testing.process_func(run_rms_norm)


def regression_rms_norm_splitk():
    tilelang.testing.process_func(run_rms_norm_splitk)


def regression_layernorm():
    tilelang.testing.process_func(run_layernorm)


def regression_layernorm_bwd():
    tilelang.testing.process_func(run_layernorm_bwd)
