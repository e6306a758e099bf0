"""The ``T`` namespace is typed: tile2triton/language/__init__.pyi declares every public name of
the runtime module (so the two cannot drift), ships with a py.typed marker, and -- where pyright
is installed -- the documented style type-checks with 0 errors (tools/typecheck.sh)."""

import ast
import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap
import types

import pytest

import tile2triton.language as T

ROOT = pathlib.Path(__file__).resolve().parent.parent
STUB = ROOT / "tile2triton" / "language" / "__init__.pyi"


def stub_names(tree: ast.Module) -> set[str]:
    """Names a stub module declares at its top level (``import x as x`` re-exports included)."""
    names: set[str] = set()

    def visit(body):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                # only the explicit re-export form counts in a stub
                names.update(a.asname for a in node.names if a.asname is not None and a.asname == a.name.split(".")[-1])
            elif isinstance(node, ast.If):
                visit(node.body)
                visit(node.orelse)

    visit(tree.body)
    return names


def runtime_names() -> set[str]:
    """The public API of ``tile2triton.language``: ``__all__`` minus the modules and the
    ``from __future__`` feature it happens to bind."""
    out = set()
    for name in T.__all__:
        value = getattr(T, name)
        if isinstance(value, types.ModuleType) and name in ("builtins",):
            continue
        if type(value).__name__ == "_Feature":  # from __future__ import annotations
            continue
        out.add(name)
    return out


def test_stub_declares_every_public_runtime_name():
    declared = stub_names(ast.parse(STUB.read_text()))
    missing = sorted(runtime_names() - declared)
    assert not missing, f"add these tile2triton.language names to {STUB.relative_to(ROOT)}: {missing}"


def test_stub_declares_nothing_the_runtime_lacks():
    declared = {n for n in stub_names(ast.parse(STUB.read_text())) if not n.startswith("_")}
    # names that exist only for type checkers: the types of kernel values and of T.Kernel's result
    typing_only = {"PrimExpr", "BaseTensor", "KernelLaunch"}
    extra = sorted(n for n in declared - typing_only if not hasattr(T, n))
    assert not extra, f"{STUB.relative_to(ROOT)} declares names tile2triton.language does not have: {extra}"


def test_py_typed_marker_and_stub_are_package_data():
    assert (ROOT / "tile2triton" / "py.typed").exists()
    if sys.version_info < (3, 11):
        pytest.skip("tomllib needs Python 3.11")
    import tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    package_data = data["tool"]["setuptools"]["package-data"]["tile2triton"]
    assert "py.typed" in package_data and "language/*.pyi" in package_data


def _pyright():
    exe = shutil.which("pyright")
    if exe is None:
        pytest.skip("pyright is not installed (npm install -g pyright)")
    return exe


CALL_FORM = textwrap.dedent("""
    import torch

    import tile2triton as tilelang
    import tile2triton.language as T


    @tilelang.jit(out_idx=[-1])
    def matmul(M, N, K, block_M=64, block_N=64, block_K=32, dtype=T.float16):
        @T.prim_func
        def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):  # TileLang's form
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
                A_shared = T.alloc_shared((block_M, block_K), dtype)
                B_shared = T.alloc_shared((block_K, block_N), dtype)
                C_local = T.alloc_fragment((block_M, block_N), T.float32)
                T.clear(C_local)
                for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                    T.copy(A[by * block_M, k * block_K], A_shared)
                    T.copy(B[k * block_K, bx * block_N], B_shared)
                    T.gemm(A_shared, B_shared, C_local)
                T.copy(C_local, C[by * block_M, bx * block_N])

        return main


    kernel = matmul(100, 80, 64)
    c = kernel(A=torch.randn(100, 64, dtype=torch.float16), B=torch.randn(64, 80, dtype=torch.float16))
""")


@pytest.fixture(scope="module")
def installs(tmp_path_factory):
    """tile2triton installed the two ways a user does, each in a fresh venv outside the checkout
    (torch and Triton from the system's site-packages): from a wheel, and editable
    (``pip install -e``, the README's set-up) of a copy of the sources."""
    _pyright()
    base = tmp_path_factory.mktemp("installs")
    src = base / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "tile2triton", src / "tile2triton", ignore=shutil.ignore_patterns("__pycache__"))
    pip = ["-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index"]
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    str(src), "-w", str(base / "dist")], check=True, cwd=base, timeout=600)  # fmt: skip
    wheel = next((base / "dist").glob("tile2triton-*.whl"))
    pythons = {}
    for kind, target in (("wheel", [str(wheel)]), ("editable", ["-e", str(src)])):
        venv = base / kind
        # no pip of its own: the system's pip and setuptools are seen through its site-packages
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
        python = str(venv / "bin" / "python")
        subprocess.run([python, *pip, *target], check=True, cwd=base, timeout=600)
        pythons[kind] = python
    return pythons


@pytest.mark.parametrize("kind", ["wheel", "editable"])
def test_examples_readme_and_codemod_typecheck_as_installed(installs, kind, tmp_path):
    """pyright finds tile2triton as installed (no extraPaths): 0 errors on examples/, the README's
    snippets and a TileLang-style file after ``tile2triton fix-annotations`` (3 before it)."""
    from tile2triton.fix_annotations import fix_file

    user = tmp_path / "tilelang_style.py"
    user.write_text(CALL_FORM)
    env = {**os.environ, "T2T_PYTHON": installs[kind], "NO_COLOR": "1"}
    check = ["bash", str(ROOT / "tools" / "typecheck.sh"), str(user)]
    if kind == "wheel":  # the call form: one error per parameter (once is enough: pyright's, not the install's)
        before = subprocess.run(check, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
        assert before.stdout.count("reportInvalidTypeForm") == 3 and "3 errors" in before.stdout, before.stdout
    assert fix_file(str(user)).rewritten == 3
    r = subprocess.run(check, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 errors" in r.stdout


def test_pyright_sees_the_kernel_types(installs, tmp_path):
    pyright = _pyright()
    user = tmp_path / "kern.py"
    user.write_text(
        textwrap.dedent("""
        import tile2triton as tilelang
        import tile2triton.language as T


        @tilelang.jit(out_idx=[-1])
        def scale(M, N, block=32):
            @T.prim_func
            def main(A: T.Tensor[(M, N), "float16"], B: T.Buffer[(M, N), T.float16], alpha: T.float32):
                with T.Kernel(T.ceildiv(M, block), N) as (bx, by):
                    S = T.alloc_shared((block,), "float16")
                    T.copy(A[bx * block : (bx + 1) * block, by], S)
                    for i in T.Parallel(block):
                        B[bx * block + i, by] = T.exp(S[i]) * alpha - T.infinity("float16")
                    for k in T.Pipelined(T.ceildiv(N, 16), num_stages=2):
                        reveal_type(k)
                    reveal_type(bx)
                    reveal_type(S)
                    reveal_type(S[0] + 1)
                    T.alloc_shred((block,), "float16")

            return main


        reveal_type(scale)
        reveal_type(tilelang.compile(scale.func(4, 5)))
        """)
    )
    (tmp_path / "pyrightconfig.json").write_text(json.dumps({"typeCheckingMode": "basic"}))
    r = subprocess.run(
        [pyright, "--outputjson", "-p", str(tmp_path / "pyrightconfig.json"), "--pythonpath", installs["wheel"], str(user)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_COLOR": "1"},
    )
    found = json.loads(r.stdout)["generalDiagnostics"]
    errors = [d["message"] for d in found if d["severity"] == "error"]
    revealed = [d["message"] for d in found if d["severity"] == "information"]
    # the one mistake in the file is the typo, and pyright names it
    assert len(errors) == 1 and "alloc_shred" in errors[0], errors
    assert revealed == [
        'Type of "k" is "int"',
        'Type of "bx" is "int"',
        'Type of "S" is "SharedBuffer"',
        'Type of "S[0] + 1" is "PrimExpr"',
        'Type of "scale" is "JITImpl"',
        'Type of "tilelang.compile(scale.func(4, 5))" is "JITKernel"',
    ], revealed
