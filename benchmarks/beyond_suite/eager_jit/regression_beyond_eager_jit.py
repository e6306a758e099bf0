"""examples/eager_jit (the kernels of eagerjit.en.ipynb, loaded from its code cells): the GEMM with `T.const` shapes,
with `T.dynamic` shapes, with runtime int32 sizes; the strided-to-contiguous copy; the element-wise map of a macro.
Not timed: the notebook's other cells (single-thread demos, a dummy kernel for call overhead, prim_func macros)."""

import importlib.util
import json
import os
import re
import tempfile

import tilelang
import tilelang.testing
import torch

NOTEBOOK = os.path.join(os.environ["TILELANG_EXAMPLES"], "eager_jit", "eagerjit.en.ipynb")

SMALL = {
    "run_gemm": {"M": 200, "N": 136, "K": 96, "block_M": 64, "block_N": 64},
    "run_gemm_dyn_K": {"M": 200, "N": 136, "K": 96},
    "run_gemm_ptr_dyn": {"M": 200, "N": 136, "K": 96},
    "run_as_contiguous": {"M": 200, "N": 300},
    "run_element_wise": {"N": 1000},
}


def _notebook(*names):
    """A module of the notebook's code cells that define `names` (each a `@tilelang.jit` kernel or a `@T.macro`,
    nothing run), in that order: written to a file, as TileLang's JIT reads a kernel's source."""
    with open(NOTEBOOK) as f:
        cells = ["".join(c["source"]) for c in json.load(f)["cells"] if c["cell_type"] == "code"]
    srcs = ["import tilelang\nimport tilelang.language as T\nimport torch\n"]
    for name in names:
        [src] = [s for s in cells if re.match(rf"@(tilelang\.jit|T\.macro)\ndef {name}\(", s)]
        srcs.append(src)
    path = os.path.join(tempfile.mkdtemp(), f"eagerjit_{names[-1]}.py")
    with open(path, "w") as f:
        f.write("\n\n".join(srcs))
    spec = importlib.util.spec_from_file_location(f"eagerjit_{names[-1]}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ab(M, N, K):
    return torch.randn(M, K, dtype=torch.float16, device="cuda"), torch.randn(K, N, dtype=torch.float16, device="cuda")


def run_gemm(M=4096, N=4096, K=4096, block_M=128, block_N=128, block_K=32):
    A, B = _ab(M, N, K)
    kernel = _notebook("gemm").gemm.compile(A, B, block_M=block_M, block_N=block_N, block_K=block_K)
    return tilelang.profiler.do_bench(lambda: kernel(A, B))


def run_gemm_dyn_K(M=4096, N=4096, K=4096):
    A, B = _ab(M, N, K)
    kernel = _notebook("gemm_impl", "gemm_dyn_K").gemm_dyn_K.compile(A, B)
    return tilelang.profiler.do_bench(lambda: kernel(A, B))


def run_gemm_ptr_dyn(M=4096, N=4096, K=4096):
    A, B = _ab(M, N, K)
    kernel = _notebook("gemm_impl", "gemm_ptr_dyn").gemm_ptr_dyn.compile(A, B, M, N, K)
    return tilelang.profiler.do_bench(lambda: kernel(A, B, M, N, K))


def run_as_contiguous(M=8192, N=8192):
    # as the notebook: the transposed view of a row-major matrix
    A = torch.randn(N, M, device="cuda").T
    kernel = _notebook("as_contingious").as_contingious.compile(A)
    return tilelang.profiler.do_bench(lambda: kernel(A))


def run_element_wise(N=1 << 26):
    ns = _notebook("element_wise")  # its cell also defines the `add_one` macro the notebook maps
    A = torch.randn(N, device="cuda")
    kernel = ns.element_wise.compile(A, ns.add_one)
    return tilelang.profiler.do_bench(lambda: kernel(A))


def regression_gemm():
    tilelang.testing.process_func(run_gemm)


def regression_gemm_dyn_K():
    tilelang.testing.process_func(run_gemm_dyn_K)


def regression_gemm_ptr_dyn():
    tilelang.testing.process_func(run_gemm_ptr_dyn)


def regression_as_contiguous():
    tilelang.testing.process_func(run_as_contiguous)


def regression_element_wise():
    tilelang.testing.process_func(run_element_wise)
