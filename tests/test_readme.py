"""Every README example runs: its Python snippets, in order, as one script (line numbers kept, so
a failure names the README line), and every ``$ tile2triton ...`` command of its console blocks,
against the shipped files in examples/, with the output the README shows."""

import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def blocks(text: str):
    """(language, first line number, lines) of each fenced block."""
    lines = text.splitlines()
    k = 0
    while k < len(lines):
        m = re.fullmatch(r"```(\w*)\s*", lines[k])
        if m:
            end = next(j for j in range(k + 1, len(lines)) if lines[j].startswith("```"))
            yield m.group(1), k + 2, lines[k + 1 : end]
            k = end
        k += 1


def python_snippets(path: pathlib.Path = README) -> str:
    """A page's Python blocks at their line numbers (blank elsewhere); blocks that show generated
    Triton (``@triton.jit``) are output, not code."""
    text = path.read_text(encoding="utf-8")
    code = [""] * len(text.splitlines())
    for lang, first, body in blocks(text):
        if lang == "python" and not any("@triton.jit" in line for line in body):
            code[first - 1 : first - 1 + len(body)] = body
    return "\n".join(code) + "\n"


def console_commands():
    """(README line, command, expected output) of each ``$ tile2triton`` line in a console block."""
    out = []
    for lang, first, body in blocks(README.read_text(encoding="utf-8")):
        if lang:
            continue
        for i, line in enumerate(body):
            if not line.startswith("$ tile2triton"):
                continue
            expected = []
            for nxt in body[i + 1 :]:
                if nxt.startswith("$ "):
                    break
                expected.append(nxt)
            out.append((first + i, line[2:], "\n".join(expected).rstrip()))
    return out


def _env():
    return {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}


# pages whose Python blocks are one runnable script (the others' include README sections)
PAGES = [README, ROOT / "docs" / "getting-started.md"]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_python_snippets_run(page, tmp_path):
    script = tmp_path / "snippets.py"
    script.write_text(python_snippets(page))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=_env(), cwd=tmp_path,
                       timeout=900)  # fmt: skip
    assert r.returncode == 0, (r.stdout + r.stderr).replace(str(script), page.name)
    if page == README:
        assert "t2t_example::scale_rows(Tensor A, Tensor w) -> Tensor" in r.stdout
    assert "def main_kernel" in r.stdout


COMMANDS = console_commands()


def test_readme_has_cli_examples():
    assert len(COMMANDS) >= 7
    named = {w for _, cmd, _ in COMMANDS for w in shlex.split(cmd) if w.endswith(".py") or "::" in w}
    # every file a command names is shipped (in examples/), but the one a command shows missing
    shipped = {w.split("::")[0] for w in named} - {"nope.py"}
    assert all((ROOT / "examples" / f).exists() for f in shipped), shipped


@pytest.mark.parametrize("line,command,expected", COMMANDS, ids=[f"README:{c[0]}" for c in COMMANDS])
def test_cli_example_output(line, command, expected):
    if "run add.py" in command and torch.cuda.is_available():
        pytest.skip("the no-CUDA message needs a machine without CUDA")
    if "--device cpu" in command and torch.cuda.is_available():
        pytest.skip("the CUDA-as-CPU mapping is for machines without CUDA")
    argv = [sys.executable, "-m", "tile2triton", *shlex.split(command)[1:]]
    r = subprocess.run(argv, capture_output=True, text=True, env=_env(), cwd=ROOT / "examples", timeout=600)
    got = "\n".join(x.rstrip() for x in (r.stdout + r.stderr).rstrip().splitlines())
    assert got == "\n".join(x.rstrip() for x in expected.splitlines()), f"README.md:{line}: {command}\n{got}"
