"""User-facing errors raised to a script carry the script's frames and the diagnostic, not
tile2triton's internals (errors.user_facing); TILE2TRITON_DEBUG=1 keeps every frame."""

import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

import tile2triton

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = pathlib.Path(tile2triton.__file__).resolve().parent

LAZY_TYPO = """
    import torch
    import tile2triton as tilelang
    import tile2triton.language as T


    @tilelang.jit(out_idx=[-1])
    def copy(N, block=32):
        @T.prim_func
        def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
            with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
                S = T.alloc_shred((block,), "float32")
                T.copy(A[bx * block], S)
                T.copy(S, B[bx * block])

        return main


    def build():
        return copy(100)


    if __name__ == "__main__":
        build()
"""

EAGER_TYPO = """
    import torch
    import tile2triton as tilelang
    import tile2triton.language as T


    @tilelang.jit
    def scale(A, block: int = 32):
        N = T.const("N")
        A: T.Tensor((N,), "float32")
        B = T.empty((N,), "float32")
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] * T.alloc_shred(2)
        return B


    scale(torch.randn(70))
"""

BAD_ARGUMENT = """
    import torch
    import tile2triton as tilelang
    import tile2triton.language as T


    @tilelang.jit(out_idx=[-1])
    def add1(N):
        @T.prim_func
        def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                for i in T.Parallel(N):
                    B[i] = A[i] + 1

        return main


    kernel = add1(50)
    torch.testing.assert_close(kernel(torch.ones(50)), torch.full((50,), 2.0))
    kernel(torch.ones(51))  # the second call goes through the generated launcher first
"""

REJECTED_BY_TRITON = """
    import torch
    import tile2triton as tilelang
    import tile2triton.language as T


    @tilelang.jit(out_idx=[-1])
    def shift(N):
        @T.prim_func
        def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "int32")):
            with T.Kernel(1, threads=32) as bx:
                for i in T.Parallel(N):
                    B[i] = A[i] << 2

        return main


    shift(37)(torch.randn(37))
"""


def run_script(tmp_path, source: str, debug: bool = False) -> subprocess.CompletedProcess:
    script = tmp_path / "user_script.py"
    script.write_text(textwrap.dedent(source))
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("TILE2TRITON_DEBUG", None)
    if debug:
        env["TILE2TRITON_DEBUG"] = "1"
    return subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300
    )


def library_lines(stderr: str) -> list[str]:
    """The traceback lines that belong to tile2triton's frames (the File line and its source lines)."""
    out, inside = [], False
    for line in stderr.splitlines():
        if line.startswith('  File "'):
            inside = str(PACKAGE) in line or line.startswith('  File "<tile2triton')
            if inside:
                out.append(line)
        elif line.startswith("    ") and inside:
            out.append(line)
        else:
            inside = False
    return out


def user_frames(stderr: str, script: str = "user_script.py") -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith('  File "') and script in line]


@pytest.mark.parametrize(
    "source, error, message",
    [
        (LAZY_TYPO, "TileLangCompileError", "T.alloc_shred is not supported"),
        (EAGER_TYPO, "TileLangCompileError", "T.alloc_shred is not supported"),
        (BAD_ARGUMENT, "KernelCallError", "parameter 'A' expects shape (50,), got (51,)"),
        (REJECTED_BY_TRITON, "GeneratedCodeError", "Triton rejected the code generated for this line"),
    ],
    ids=["lazy-typo", "eager-typo", "bad-argument", "rejected-by-triton"],
)
def test_script_traceback_has_no_library_frames(tmp_path, source, error, message):
    r = run_script(tmp_path, source)
    assert r.returncode == 1, r.stderr
    stderr = r.stderr
    # the diagnostic is the end of the output, after the script's own frames
    assert f"tile2triton.errors.{error}: " in stderr and message in stderr, stderr
    assert user_frames(stderr), stderr
    assert len(library_lines(stderr)) <= 1, "\n".join(library_lines(stderr))  # at most the generated launcher
    assert not re.search(r"triton/(runtime|language|compiler)/", stderr), stderr
    last_frame = max(k for k, line in enumerate(stderr.splitlines()) if line.startswith('  File "'))
    assert f"tile2triton.errors.{error}: " in "\n".join(stderr.splitlines()[last_frame:])


def test_typo_traceback_names_the_user_calls(tmp_path):
    r = run_script(tmp_path, LAZY_TYPO)
    frames = user_frames(r.stderr)
    assert [f.rsplit(" in ", 1)[1] for f in frames] == ["<module>", "build"], r.stderr
    line = next(k for k, text in enumerate(textwrap.dedent(LAZY_TYPO).splitlines(), 1) if "alloc_shred" in text)
    assert f"user_script.py:{line}:" in r.stderr and "^^^^" in r.stderr  # the diagnostic's caret line
    assert "hint: " in r.stderr


@pytest.mark.parametrize("source", [LAZY_TYPO, REJECTED_BY_TRITON], ids=["lazy-typo", "rejected-by-triton"])
def test_debug_switch_keeps_internal_frames(tmp_path, source):
    r = run_script(tmp_path, source, debug=True)
    assert r.returncode == 1
    assert len(library_lines(r.stderr)) > 3, r.stderr
    assert user_frames(r.stderr)


def test_in_process_errors_keep_cause_and_user_frames():
    import tile2triton.language as T
    from tile2triton.errors import TileLangCompileError

    @tile2triton.jit(out_idx=[-1])
    def typo(N):
        @T.prim_func
        def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                for i in T.Parallel(N):
                    B[i] = T.exq(A[i])

        return main

    with pytest.raises(TileLangCompileError) as info:
        typo(17)
    files = []
    tb = info.value.__traceback__
    while tb is not None:
        files.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    assert files and all(str(PACKAGE) not in f for f in files), files
    assert any(f.endswith("test_tracebacks.py") for f in files)
