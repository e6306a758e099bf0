"""A newcomer's rough edges (issue 27): keyword calls, errors that name the factory, a factory
without ``return main``, re-registering an op, the decorator form of register_op, a torch-free
``tile2triton --help``."""

import itertools
import os
import pathlib
import subprocess
import sys
import traceback
import warnings

import pytest
import torch

import tile2triton
import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import KernelCallError, TileLangCompileError
from tile2triton.torch_ops import RegisterOpError

ROOT = pathlib.Path(__file__).resolve().parent.parent
_ids = itertools.count()


@tilelang.jit(out_idx=[-1])
def fma(M, block=32):
    @T.prim_func
    def main(A: T.Tensor[(M,), T.float32], B: T.Tensor[(M,), T.float32], s: T.float32, C: T.Tensor[(M,), T.float32]):
        with T.Kernel(T.ceildiv(M, block), threads=32) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] * s + B[bx * block + i]

    return main


def _ab(m=70):
    return torch.randn(m), torch.randn(m)


@pytest.mark.parametrize("warm", [False, True])
def test_keyword_arguments_bind_by_parameter_name(warm):
    kernel = fma(70)
    a, b = _ab()
    want = a.double() * 1.5 + b.double()
    if warm:  # the generated launcher (after a first positional call) forwards keywords too
        kernel(a, b, 1.5)
    for call in (lambda: kernel(A=a, B=b, s=1.5), lambda: kernel(a, s=1.5, B=b), lambda: kernel(B=b, A=a, s=1.5)):
        torch.testing.assert_close(call().double(), want)


def test_keyword_argument_errors_name_the_kernel():
    kernel = fma(70)
    a, b = _ab()
    with pytest.raises(KernelCallError, match=r"fma\.main got an unexpected keyword argument 'X'; its inputs are A, B, s"):
        kernel(a, b, X=1.5)
    with pytest.raises(KernelCallError, match=r"fma\.main got multiple values for argument 'A'"):
        kernel(a, b, A=a)
    with pytest.raises(KernelCallError, match=r"fma\.main missing argument 's'"):
        kernel(A=a, B=b)
    with pytest.raises(KernelCallError, match=r"'C' is an output \(out_idx\)"):
        kernel(a, b, 1.0, C=a)


def test_call_errors_name_factory_and_prim_func():
    a, b = _ab()
    with pytest.raises(KernelCallError, match=r"^fma\.main expects 3 argument\(s\) \(A, B, s\), got 2"):
        fma(70)(a, b)
    with pytest.raises(KernelCallError, match=r"^fma\.main: parameter 'B' expects dtype torch.float32"):
        fma(70)(a, b.double(), 1.0)


def test_prim_func_compiled_directly_keeps_its_name():
    @T.prim_func
    def copy_kernel(A: T.Tensor[(8,), T.float32], B: T.Tensor[(8,), T.float32]):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(8):
                B[i] = A[i]

    with pytest.raises(KernelCallError, match=r"^copy_kernel expects 1 argument"):
        tilelang.compile(copy_kernel, out_idx=[-1])()


def test_factory_without_return_is_an_error_at_the_users_line():
    @tilelang.jit(out_idx=[-1])
    def forgot(M):
        @T.prim_func
        def main(A: T.Tensor[(M,), T.float32], B: T.Tensor[(M,), T.float32]):
            with T.Kernel(1, threads=32) as bx:
                for i in T.Parallel(M):
                    B[i] = A[i]

    with pytest.raises(TileLangCompileError) as info:
        forgot(8)
    err = info.value
    assert isinstance(err, TypeError)  # what it was before: code catching TypeError still does
    text = str(err)
    assert f"{os.path.basename(__file__)}:" in text and "forgot returned None, not a @T.prim_func" in text
    assert "hint: end forgot with `return main`" in text
    assert err.loc.line == forgot.func.__code__.co_firstlineno + 1  # the `def forgot` line (after the decorator)
    frames = [f.filename for f in traceback.extract_tb(err.__traceback__)]
    assert frames and all("tile2triton" + os.sep not in f or "tests" in f for f in frames), frames


def _name(base):
    return f"t2t_edges::{base}_{next(_ids)}"


def _op(name):
    ns, n = name.split("::")
    return getattr(getattr(torch.ops, ns), n)


def test_reregistering_an_op_warns_and_a_new_schema_raises():
    name = _name("fma")
    tile2triton.register_op(name, fma(70))
    with pytest.warns(UserWarning, match=r"register_op: .*fma_\d+ is already registered; replacing its implementation"):
        tile2triton.register_op(name, fma(70, block=64))
    a, b = _ab()
    torch.testing.assert_close(_op(name)(a, b, 2.0), a * 2 + b)

    @tilelang.jit(out_idx=[-1])
    def neg(M):
        @T.prim_func
        def main(A: T.Tensor[(M,), T.float32], B: T.Tensor[(M,), T.float32]):
            with T.Kernel(T.ceildiv(M, 32), threads=32) as bx:
                for i in T.Parallel(32):
                    B[bx * 32 + i] = -A[bx * 32 + i]

        return main

    with pytest.raises(RegisterOpError, match=r"already registered with schema .*\(Tensor A, Tensor B, float s\).*"
                                              r"this kernel's is .*\(Tensor A\)"):  # fmt: skip
        tile2triton.register_op(name, neg(70))


def test_decorator_form_keeps_the_factory():
    name = _name("deco")

    @tile2triton.register_op(name, factory_args=(70,))
    @tilelang.jit(out_idx=[-1])
    def fma2(M, block=32):
        @T.prim_func
        def main(A: T.Tensor[(M,), T.float32], B: T.Tensor[(M,), T.float32], C: T.Tensor[(M,), T.float32]):
            with T.Kernel(T.ceildiv(M, block), threads=32) as bx:
                for i in T.Parallel(block):
                    C[bx * block + i] = A[bx * block + i] + 2 * B[bx * block + i]

        return main

    assert isinstance(fma2, tilelang.JITImpl)  # still the factory, not the op
    a, b = _ab()
    torch.testing.assert_close(fma2(70)(a, b), a + 2 * b)
    torch.testing.assert_close(_op(name)(a, b), a + 2 * b)
    assert fma2.torch_op is not None
    torch.testing.assert_close(fma2.torch_op(a, b), a + 2 * b)


def _cli(*args):
    code = (
        "import sys\n"
        "sys.argv[0] = 'tile2triton'\n"
        "from tile2triton.cli import main\n"
        "try:\n"
        "    rc = main(sys.argv[1:])\n"
        "finally:  # argparse's --help exits\n"
        "    print('TORCH_IMPORTED' if 'torch' in sys.modules else 'NO_TORCH')\n"
        "sys.exit(rc)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=ROOT)


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["run", "--help"], ["show", "-h"]])
def test_help_and_version_do_not_import_torch(args):
    proc = _cli(*args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip().endswith("NO_TORCH"), proc.stdout
    if args == ["--version"]:
        assert proc.stdout.startswith(f"tile2triton {tile2triton.__version__}")


def test_lazy_package_still_works_when_deferred():
    """In a deferred process (the command's --help), the package's names still load on first use."""
    code = (
        "import sys\nsys.argv[0] = 'tile2triton'; sys.argv[1:] = ['--help']\n"
        "import tile2triton as tilelang\nassert 'torch' not in sys.modules\n"
        "import tile2triton.language as T\n"
        "@T.prim_func\n"
        "def k(A: T.Tensor[(8,), T.float32]):\n"
        "    with T.Kernel(1, threads=32):\n"
        "        for i in T.Parallel(8):\n"
        "            A[i] = 1.0\n"
        "print(type(tilelang.jit).__name__, type(tilelang.compile(k)).__name__)\n"
    )
    path = ROOT / "tests" / f"_deferred_{os.getpid()}.py"  # a file: @T.prim_func reads the kernel's source
    path.write_text(code)
    try:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, cwd=ROOT)
    finally:
        path.unlink()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["function", "JITKernel"]


def test_warnings_module_untouched():
    # register_op's warning is a plain UserWarning with the caller's frame (stacklevel)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        name = _name("twice")
        tile2triton.register_op(name, fma(70))
        tile2triton.register_op(name, fma(70))
    assert [w.filename for w in caught] == [__file__]
