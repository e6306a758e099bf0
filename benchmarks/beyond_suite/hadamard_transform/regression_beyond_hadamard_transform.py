"""examples/hadamard_transform: fast Walsh-Hadamard transform of each row (in-thread, warp-shuffle and
shared-memory exchange stages)."""

import importlib.util
import os
import sys
import types

import tilelang
import tilelang.language as T
import tilelang.testing
import torch

if importlib.util.find_spec("scipy") is None:
    # example_hadamard imports scipy at module level only for its reference (scipy.linalg.hadamard)
    sys.modules["scipy"] = types.ModuleType("scipy")
sys.path.insert(0, os.path.join(os.environ["TILELANG_EXAMPLES"], "hadamard_transform"))
import example_hadamard  # noqa: E402

SMALL = {"run_hadamard": {"b": 5, "n": 1024}}


def run_hadamard(b=1024, n=32768):
    # n: a power of 2 in [2, 32768] (the example asserts it); the example's main uses 32768 with fp32 rows
    x = torch.randn((b, n), device="cuda")
    return tilelang.profiler.do_bench(lambda: example_hadamard.hadamard(x, n, T.float32))


def regression_hadamard():
    tilelang.testing.process_func(run_hadamard)
