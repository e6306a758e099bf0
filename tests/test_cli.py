"""The tile2triton command, through a subprocess: show, list, run, bad path, bad argument."""

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

ADD_FILE = textwrap.dedent("""
    import tilelang
    import tilelang.language as T


    @tilelang.jit(out_idx=[-1])
    def add(M, N, block_M=32, block_N=32, dtype="float32"):
        @T.prim_func
        def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
                for i, j in T.Parallel(block_M, block_N):
                    C[by * block_M + i, bx * block_N + j] = A[by * block_M + i, bx * block_N + j] + B[by * block_M + i, bx * block_N + j]

        return main


    @tilelang.jit(out_idx=[-1])
    def scale(N, factor=2.0):
        @T.prim_func
        def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
            with T.Kernel(T.ceildiv(N, 64), threads=64) as bx:
                for i in T.Parallel(64):
                    B[bx * 64 + i] = A[bx * 64 + i] * factor

        return main


    if __name__ == "__main__":
        import sys
        import torch

        M, N = int(sys.argv[1]), int(sys.argv[2])
        kernel = add(M, N)
        a, b = torch.randn(M, N), torch.randn(M, N)
        torch.testing.assert_close(kernel(a, b), a + b)
        profiler = kernel.get_profiler(tilelang.TensorSupplyType.Normal)
        profiler.assert_allclose(lambda x, y: x + y)
        tilelang.testing.set_random_seed(0)
        print("tilelang is", tilelang.__name__, "T is", T.__name__, "args", sys.argv[1:])
""")


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("FORCE_COLOR", None)
    return env


def t2t(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "tile2triton", *map(str, args)],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=cwd,
        timeout=300,
    )


@pytest.fixture
def kfile(tmp_path):
    path = tmp_path / "kern.py"
    path.write_text(ADD_FILE)
    return path


def test_help_has_examples():
    r = t2t("--help")
    assert r.returncode == 0
    assert "tile2triton show" in r.stdout and "tile2triton run" in r.stdout and "examples:" in r.stdout


def test_list_kernels(kfile):
    r = t2t("show", kfile)
    assert r.returncode == 0, r.stderr
    assert "add(M, N, block_M=32, block_N=32, dtype='float32')" in r.stdout
    assert "scale(N, factor=2.0)" in r.stdout
    assert "lazy factory" in r.stdout


def test_show_prints_triton_source_plain_when_piped(kfile):
    r = t2t("show", f"{kfile}::add", "--arg", "M=100", "--arg", "N=70", "--arg", "dtype=float16")
    assert r.returncode == 0, r.stderr
    assert "@triton.jit" in r.stdout and "tl.program_id(0)" in r.stdout
    assert "\x1b[" not in r.stdout  # no ANSI colors when piped
    assert "tl.float16" in r.stdout or "fp16" in r.stdout or "tl.load" in r.stdout
    # origin comments name the TileLang line
    assert "kern.py:" in r.stdout


def test_show_color_always(kfile):
    pytest.importorskip("pygments")
    r = t2t("show", f"{kfile}::scale", "--arg", "N=100", "--color", "always")
    assert r.returncode == 0, r.stderr
    assert "\x1b[" in r.stdout


def test_show_comma_separated_args_and_interpret(kfile):
    r = t2t("show", f"{kfile}::add", "--arg", "M=64,N=64", "--interpret")
    assert r.returncode == 0, r.stderr
    assert "@triton.jit" in r.stdout


def test_show_example_file():
    r = t2t(
        "show", ROOT / "examples" / "matmul.py::matmul", "--arg", "M=128,N=128,K=64,block_M=64,block_N=64,block_K=32"
    )
    assert r.returncode == 0, r.stderr
    assert "tl.dot" in r.stdout


def test_bad_path_is_one_line_exit_2(tmp_path):
    r = t2t("show", tmp_path / "missing.py")
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "no such file" in r.stderr
    assert "Traceback" not in r.stderr


def test_unknown_kernel_name(kfile):
    r = t2t("show", f"{kfile}::ad")
    assert r.returncode == 2
    assert "no kernel named 'ad'" in r.stderr and "did you mean add" in r.stderr
    assert r.stderr.strip().count("\n") == 0


def test_bad_arg_syntax(kfile):
    r = t2t("show", f"{kfile}::add", "--arg", "M")
    assert r.returncode == 2
    assert "NAME=VALUE" in r.stderr and r.stderr.strip().count("\n") == 0


def test_missing_factory_argument(kfile):
    r = t2t("show", f"{kfile}::add", "--arg", "M=64")
    assert r.returncode == 2
    assert "'N'" in r.stderr and r.stderr.strip().count("\n") == 0


def test_unknown_factory_argument(kfile):
    r = t2t("show", f"{kfile}::add", "--arg", "M=64,N=64,Q=3")
    assert r.returncode == 2
    assert "'Q'" in r.stderr


def test_unknown_command():
    r = t2t("frobnicate")
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0


def test_compile_error_names_user_line(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text(
        textwrap.dedent("""
        import tilelang
        import tilelang.language as T


        @tilelang.jit(out_idx=[-1])
        def bad(N):
            @T.prim_func
            def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
                with T.Kernel(1, threads=32) as bx:
                    S = T.alloc_shared((N,), "float32")
                    T.cpy(A, S)
                    T.copy(S, B)

            return main
    """)
    )
    r = t2t("show", f"{path}::bad", "--arg", "N=32")
    assert r.returncode == 1
    assert "bad.py:12:" in r.stderr and "T.cpy" in r.stderr and "^" in r.stderr
    assert "Traceback" not in r.stderr


def test_run_unmodified_tilelang_script(kfile):
    r = t2t("run", kfile, "40", "24")
    assert r.returncode == 0, r.stderr
    assert "tilelang is tile2triton T is tile2triton.language args ['40', '24']" in r.stdout


def test_run_missing_script(tmp_path):
    r = t2t("run", tmp_path / "nope.py")
    assert r.returncode == 2 and "no such file" in r.stderr


def test_run_unsupported_tilelang_module(tmp_path):
    path = tmp_path / "s.py"
    path.write_text("import tilelang.quantize\n")
    r = t2t("run", path)
    assert r.returncode != 0
    assert "tile2triton does not provide tilelang.quantize" in r.stderr


def test_console_script_entry_point():
    from tile2triton.cli import main

    assert main(["show", "/nonexistent/x.py"]) == 2


EAGER_FILE = textwrap.dedent("""
    import tilelang
    import tilelang.language as T


    @tilelang.jit
    def copy(A, BLOCK_N: int = 64):
        N = T.const("N")
        A: T.Tensor((N,), T.float16)
        B = T.empty((N,), T.float16)
        with T.Kernel(T.ceildiv(N, BLOCK_N), threads=64) as bx:
            for i in T.Parallel(BLOCK_N):
                B[bx * BLOCK_N + i] = A[bx * BLOCK_N + i]
        return B
""")


def test_show_eager_kernel(tmp_path):
    pytest.importorskip("tile2triton.eager")
    path = tmp_path / "eager_k.py"
    path.write_text(EAGER_FILE)
    r = t2t("show", path)
    assert r.returncode == 0, r.stderr
    assert "eager kernel" in r.stdout
    r = t2t("show", f"{path}::copy", "--arg", "N=100", "--arg", "BLOCK_N=32")
    assert r.returncode == 0, r.stderr
    assert "@triton.jit" in r.stdout and "< 100" in r.stdout
    r = t2t("show", f"{path}::copy")
    assert r.returncode == 2 and "'N'" in r.stderr and r.stderr.strip().count("\n") == 0


SCAN_FILE = textwrap.dedent("""
    import tilelang
    import tilelang.language as T

    print("TOP LEVEL RAN")
    if not globals().get("ALLOW_IMPORT"):
        raise RuntimeError("top-level code ran")


    @tilelang.jit(out_idx=[-1])
    def lazy(M, N, block_M=32, dtype="float16"):
        @T.prim_func
        def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
            with T.Kernel(T.ceildiv(M, block_M)) as bx:
                T.copy(A[bx * block_M, 0], B[bx * block_M, 0])

        return main


    @tilelang.jit
    def eager(A, block: int = 64):
        N = T.const("N")
        A: T.Tensor((N,), T.float16)
        B = T.empty((N,), T.float16)
        with T.Kernel(T.ceildiv(N, block), threads=64) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i]
        return B


    def plain(N, *, block=16):
        @T.prim_func
        def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
            with T.Kernel(T.ceildiv(N, block)) as bx:
                for i in T.Parallel(block):
                    B[bx * block + i] = A[bx * block + i] * 3.0

        return main


    @T.prim_func
    def bare(A: T.Tensor((37,), "float32"), B: T.Tensor((37,), "float32")):
        with T.Kernel(1) as bx:
            for i in T.Parallel(37):
                B[i] = A[i] + 1.0


    def helper(x):
        return x + 1


    compiled = tilelang.compile(plain(10), out_idx=[-1])
    import re
    PATTERN = re.compile("not a kernel")

    if __name__ == "__main__":
        not_a_kernel = lazy(64, 64)
""")


def test_list_reads_the_source_without_running_it(tmp_path):
    path = tmp_path / "scanned.py"
    path.write_text(SCAN_FILE)
    r = t2t("show", path)
    assert r.returncode == 0, r.stderr
    assert "TOP LEVEL RAN" not in r.stdout and "top-level code ran" not in r.stderr
    lines = [line.strip() for line in r.stdout.splitlines()]
    assert "lazy(M, N, block_M=32, dtype='float16')  [lazy factory, line 10]" in lines
    assert "eager(A, block: int = 64)  [eager kernel, line 20]" in lines
    assert "plain(N, *, block=16)  [factory returning a @T.prim_func, line 31]" in lines
    assert "bare  [@T.prim_func, line 41]" in lines
    assert "compiled  [compiled kernel, line 52]" in lines
    assert not any(line.startswith(("helper", "not_a_kernel", "PATTERN")) for line in lines)


def test_show_one_imports_the_file_and_says_why_it_failed(tmp_path):
    path = tmp_path / "scanned.py"
    path.write_text(SCAN_FILE)
    r = t2t("show", f"{path}::bare", "--out-idx", "-1")
    assert r.returncode == 1
    assert "top-level code ran" in r.stderr and 'if __name__ == "__main__":' in r.stderr


def test_show_plain_factory_and_bare_prim_func(tmp_path):
    path = tmp_path / "scanned.py"
    path.write_text("ALLOW_IMPORT = True\n" + SCAN_FILE)
    r = t2t("show", f"{path}::plain", "--arg", "N=45")
    assert r.returncode == 0, r.stderr
    assert "@triton.jit" in r.stdout and "< 45" in r.stdout and "3.0" in r.stdout
    r = t2t("show", f"{path}::plain", "--arg", "M=45")
    assert r.returncode == 2 and "'N'" in r.stderr
    r = t2t("show", f"{path}::bare", "--out-idx", "-1")
    assert r.returncode == 0, r.stderr
    assert "@triton.jit" in r.stdout and "< 37" in r.stdout


def test_help_says_show_imports_the_file():
    r = t2t("show", "--help")
    assert r.returncode == 0
    assert "without running it" in r.stdout and "__main__" in r.stdout


AUTOTUNE_FILE = textwrap.dedent("""
    import tilelang
    import tilelang.language as T
    from tilelang.autotuner import autotune


    @autotune(configs=[{"block_N": 32}, {"block_N": 64}], warmup=1, rep=1)
    @tilelang.jit(out_idx=[-1])
    def scale(N, block_N=16):
        @T.prim_func
        def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
            with T.Kernel(T.ceildiv(N, block_N), threads=32) as bx:
                for i in T.Parallel(block_N):
                    B[bx * block_N + i] = A[bx * block_N + i] * 3.0

        return main
""")


def test_show_autotuned_kernel_prints_one_variant_without_tuning(tmp_path):
    path = tmp_path / "tuned_k.py"
    path.write_text(AUTOTUNE_FILE)
    r = t2t("show", f"{path}::scale", "--arg", "N=100", "--arg", "block_N=64")
    assert r.returncode == 0, r.stderr
    assert "@triton.jit" in r.stdout and "tl.arange(0, 64)" in r.stdout
    r = t2t("show", f"{path}::scale", "--arg", "N=100")  # the factory's default tile, not a tuned one
    assert r.returncode == 0, r.stderr
    assert "tl.arange(0, 16)" in r.stdout
