"""Print the CUDA source real TileLang generates for a kernel, on a machine without a GPU or nvcc.

TileLang's lowering runs on the CPU; only its device compile needs nvcc. This lowers a ``@tilelang.jit``
function (``@tilelang.autotune`` around it too) for a given card and prints ``kernel_source``, to compare
with tile2triton's output without spending device time.

TileLang 0.1.15's wheels need Python 3.12 (apache-tvm-ffi is cp312-abi3). Once, from the repo root:

    DEST=.whl bash ../shared/tools/tilelang-wheels.sh      # unless .whl holds the wheels already
    python3.12 -m venv /tmp/tl312 && /tmp/tl312/bin/pip install -q .whl/*.whl torch==2.13.0 numpy \\
        cloudpickle ml-dtypes psutil tqdm typing_extensions
    ln -sf libz3.so.4.15 /tmp/tl312/lib/python3.12/site-packages/z3/lib/libz3.so

Then (ARGS: Python expressions evaluated with ``torch`` in scope; tensors for an eager-style kernel, sizes
and configs for a lazy one):

    /tmp/tl312/bin/python tools/tilelang_cuda_source.py EXAMPLE.py::FUNC ARG ... [--arch sm_90]

e.g. ``examples/blocksparse_gemm/example_blocksparse_gemm.py::blocksparse_matmul
"torch.randn(2048, 2560, dtype=torch.float16)" "torch.randn(2560, 1024, dtype=torch.float16)"
"torch.rand(16, 8, 80) < 0.5" 128 128 32 2 128 True``.
"""

import argparse
import importlib.util
import os
import sys


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("target", help="FILE.py::FUNC (a @tilelang.jit function, autotuned or not)")
    p.add_argument("args", nargs="*", help="the function's arguments, as Python expressions")
    p.add_argument("--arch", default="sm_90", help="the card, as TileLang's CUDA target names it (sm_90)")
    a = p.parse_args(argv)

    import tilelang
    import torch  # in scope for the argument expressions
    from tvm.target import Target

    path, _, name = a.target.partition("::")
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))  # the example's sibling imports
    spec = importlib.util.spec_from_file_location("_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    jit = getattr(module, name)
    jit = getattr(jit, "jit_impl", jit)  # @tilelang.autotune wraps the JIT function
    args = [eval(x, {"torch": torch}) for x in a.args]
    target = Target({"kind": "cuda", "arch": a.arch})
    with target:  # TileLang's passes read the current target
        artifact = tilelang.lower(jit.get_tir(*args), target=target)
    print(artifact.kernel_source)
    return 0


if __name__ == "__main__":
    sys.exit(main())
