"""``tile2triton fix-annotations FILE``: rewrite TileLang's call-form annotations to the subscript form.

``A: T.Tensor((M, K), dtype)`` compiles, but a call inside an annotation is always a type error
for pyright ("Call expression not allowed in type expression", ``reportInvalidTypeForm``) and
mypy, whatever the stub says: type checkers have no plugin hook for it. The subscript form
``A: T.Tensor[(M, K), dtype]`` means the same to tile2triton (and to TileLang) and type-checks.

The rewrite is read from the AST and applied to the file's bytes: only the two brackets of each
rewritten call change, everything else (comments, spacing, line breaks inside the call) stays
byte for byte. A call with keyword arguments (``T.Tensor(shape, dtype=...)``) has no subscript
spelling and is left as it is (and counted). Needs neither torch nor Triton.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

# the buffer annotations whose call and subscript forms mean the same
NAMES = ("Tensor", "Buffer", "StridedTensor", "FragmentBuffer", "SharedBuffer", "LocalBuffer")


@dataclass
class Result:
    source: bytes
    rewritten: int
    skipped: list[int]  # lines of call-form annotations left as they are (keyword arguments)


def _annotations(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
                if arg is not None and arg.annotation is not None:
                    yield arg.annotation
            if not isinstance(node, ast.Lambda) and node.returns is not None:
                yield node.returns
        elif isinstance(node, ast.AnnAssign):
            yield node.annotation


def _is_buffer_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    return name in NAMES


def rewrite(source: bytes) -> Result:
    """The file's bytes with every call-form buffer annotation in subscript form."""
    tree = ast.parse(source)
    starts = [0]  # byte offset of each line (AST columns are UTF-8 byte offsets)
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(line: int, col: int) -> int:
        return starts[line - 1] + col

    edits: list[tuple[int, bytes]] = []  # (byte offset, replacement of the one bracket byte there)
    skipped: list[int] = []
    rewritten = 0
    for ann in _annotations(tree):
        for node in ast.walk(ann):
            if not _is_buffer_call(node):
                continue
            if node.keywords or not node.args or any(isinstance(a, ast.Starred) for a in node.args):
                skipped.append(node.lineno)
                continue
            # the "(" is the first one after the callee, past spaces and comments
            i = offset(node.func.end_lineno, node.func.end_col_offset)
            while source[i : i + 1] != b"(":
                i += 1
            j = offset(node.end_lineno, node.end_col_offset) - 1  # the call's closing ")"
            assert source[j : j + 1] == b")"
            edits += [(i, b"["), (j, b"]")]
            rewritten += 1
    out = bytearray(source)
    for pos, text in edits:
        out[pos : pos + 1] = text
    return Result(bytes(out), rewritten, sorted(skipped))


def fix_file(path: str, check: bool = False) -> Result:
    """Rewrite ``path`` in place (``check``: leave it, report what would change)."""
    with open(path, "rb") as f:
        source = f.read()
    result = rewrite(source)
    if result.rewritten and not check:
        with open(path, "wb") as f:
            f.write(result.source)
    return result
