"""User-facing errors: each names the user's file and line and shows the line with a caret."""

from __future__ import annotations

import linecache
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .ir import Loc


class Tile2TritonError(Exception):
    """Base of every error tile2triton raises on purpose."""


class TileLangCompileError(Tile2TritonError):
    """A kernel that cannot be compiled, reported at the user's source line."""

    def __init__(self, message: str, loc: Loc | None = None, hint: str | None = None):
        self.message = message
        self.loc = loc
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        if self.loc is None or self.loc.line <= 0:
            return self.message
        text = f"{_short(self.loc.file)}:{self.loc.line}:{self.loc.col + 1}: error: {self.message}"
        line = linecache.getline(self.loc.file, self.loc.line).rstrip("\n")
        if line:
            width = 1
            if self.loc.end_col is not None and self.loc.end_col > self.loc.col:
                width = self.loc.end_col - self.loc.col
            text += f"\n    {line}\n    {' ' * self.loc.col}{'^' * width}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class GeneratedCodeError(TileLangCompileError):
    """Triton rejected the generated code; reported at the TileLang line that produced it
    (runtime/diagnostics.py maps the generated line back through TritonModule.line_map)."""


class KernelCallError(Tile2TritonError, ValueError):
    """Bad arguments when a compiled kernel is called (dtype, shape, device, layout, count)."""


def _short(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if not rel.startswith("..") else path
