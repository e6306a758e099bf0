"""examples/online_softmax: row softmax in two passes over column blocks (online max/log-sum-exp, then exp)."""

import os
import sys
import types

import tilelang
import tilelang.testing
import torch

EXAMPLES = os.path.join(os.environ["TILELANG_EXAMPLES"], "online_softmax")


def load_example():
    """online_softmax.py runs its own 8192 x 8192 check and benchmark at import, after the kernel: run only the
    source above that (the kernel and its imports), under the file's own name so its lines are the file's."""
    path = os.path.join(EXAMPLES, "online_softmax.py")
    with open(path) as f:
        source = f.read()
    module = types.ModuleType("online_softmax")
    module.__file__ = path
    sys.modules["online_softmax"] = module
    exec(compile(source[: source.index("\nM = ")], path, "exec"), module.__dict__)
    return module


SMALL = {"run_online_softmax": {"M": 70, "N": 384, "BLOCK_N": 128}}


def run_online_softmax(M=8192, N=8192, BLOCK_M=1, BLOCK_N=8192):
    example = load_example()
    example.M, example.N = M, N  # the kernel's X shape reads these module globals, as the example sets them
    X = torch.randn(M, N, dtype=torch.float16, device="cuda")
    return tilelang.profiler.do_bench(lambda: example.softmax_kernel(X, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N))


def regression_online_softmax():
    tilelang.testing.process_func(run_online_softmax)
