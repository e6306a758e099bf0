"""``tile2triton fix-annotations``: call-form buffer annotations become subscripts, and nothing
else in the file changes (comments, spacing, line breaks, non-ASCII text, other calls)."""

import os
import pathlib
import subprocess
import sys
import textwrap

from tile2triton.fix_annotations import rewrite

ROOT = pathlib.Path(__file__).resolve().parent.parent

BEFORE = textwrap.dedent('''\
    import tilelang.language as T  # é: a non-ASCII comment shifts byte columns


    def factory(M, N, K, dtype="float16"):
        @T.prim_func
        def main(
            A: T.Tensor((M, K), dtype),  # keep this comment
            B: T.Buffer(  (K, N) ,  dtype ),
            S: T.StridedTensor((M, N), (N, 1), dtype),
            C: T.Tensor((M, N), dtype=dtype),
            alpha: T.float32,
            D: T.Tensor[(M,), dtype],
        ) -> None:
            x: T.Tensor((M, N), T.dtype("float16"))
            y = T.Tensor((M, N), dtype)  # not an annotation: a value
            T.copy(A, B)

        return main
''')

AFTER = textwrap.dedent('''\
    import tilelang.language as T  # é: a non-ASCII comment shifts byte columns


    def factory(M, N, K, dtype="float16"):
        @T.prim_func
        def main(
            A: T.Tensor[(M, K), dtype],  # keep this comment
            B: T.Buffer[  (K, N) ,  dtype ],
            S: T.StridedTensor[(M, N), (N, 1), dtype],
            C: T.Tensor((M, N), dtype=dtype),
            alpha: T.float32,
            D: T.Tensor[(M,), dtype],
        ) -> None:
            x: T.Tensor[(M, N), T.dtype("float16")]
            y = T.Tensor((M, N), dtype)  # not an annotation: a value
            T.copy(A, B)

        return main
''')


def test_rewrite_changes_only_the_brackets():
    result = rewrite(BEFORE.encode())
    assert result.source.decode() == AFTER
    assert result.rewritten == 4
    assert result.skipped == [10]  # C's keyword argument has no subscript spelling
    assert len(result.source) == len(BEFORE.encode())
    assert rewrite(result.source).rewritten == 0  # idempotent


def test_command_rewrites_in_place_and_check_mode(tmp_path):
    path = tmp_path / "kern.py"
    path.write_bytes(BEFORE.encode())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def cli(*args):
        cmd = [sys.executable, "-m", "tile2triton", "fix-annotations", *args]
        return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path)

    check = cli("--check", "kern.py")
    assert check.returncode == 1 and path.read_bytes() == BEFORE.encode()
    assert check.stdout.strip() == "kern.py: would rewrite 4 annotation(s); left 1 with keyword arguments (lines 10)"
    done = cli("kern.py")
    assert done.returncode == 0, done.stderr
    assert path.read_bytes() == AFTER.encode()
    assert cli("--check", "kern.py").returncode == 0
    bad = tmp_path / "bad.py"
    bad.write_text("def f(:\n")
    proc = cli("bad.py")
    assert proc.returncode == 2 and proc.stderr.startswith("tile2triton: error: bad.py:1: not valid Python")
