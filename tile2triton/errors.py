"""User-facing errors: each names the user's file and line and shows the line with a caret.

An error raised to the user carries only the user's own frames: every public entry point
(``@tilelang.jit`` factories and eager calls, ``tilelang.compile``, a kernel call,
``get_kernel_source``) is wrapped in :func:`user_facing`, which drops tile2triton's frames from
the traceback, so a script's traceback is its own call lines followed by the diagnostic.
``TILE2TRITON_DEBUG=1`` keeps every frame (for bug reports).
"""

from __future__ import annotations

import functools
import linecache
import os
import sys
import types
from collections.abc import Callable
from typing import Protocol, TypeVar

from . import settings

_F = TypeVar("_F", bound=Callable)
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class SourceLocation(Protocol):
    """Where in the user's source an error points (``ir.Loc`` is one; errors.py imports no stage)."""

    file: str
    line: int
    col: int
    end_col: int | None


class Tile2TritonError(Exception):
    """Base of every error tile2triton raises on purpose."""


class TVMError(RuntimeError):
    """``tvm.error.TVMError`` (tile2triton/tvm/error.py re-exports it): the base of TVM's errors."""


class InternalError(TVMError):
    """``tvm.error.InternalError``: what TileLang's C++ lowering checks raise."""


class TileLangCompileError(Tile2TritonError):
    """A kernel that cannot be compiled, reported at the user's source line."""

    def __init__(self, message: str, loc: SourceLocation | None = None, hint: str | None = None):
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


class InvalidArgumentError(TileLangCompileError, ValueError):
    """A compile-time argument outside what the primitive accepts (``batch=0``, a memory order an
    atomic load cannot have): a ValueError, as TileLang raises there."""


class SemanticCheckError(TileLangCompileError, ValueError):
    """A loop structure TileLang's semantic checks reject (a tile operation inside ``T.Parallel``): a
    ValueError, as TileLang's NestedLoopChecker raises."""


class LoweringCheckError(TileLangCompileError, InternalError):
    """A program TileLang's C++ lowering rejects (an ICHECK there): a ``tvm.error.InternalError`` too,
    so ``except tvm.error.InternalError`` around ``tilelang.compile`` works as with TileLang."""


class CheckFailedError(TileLangCompileError, AssertionError):
    """A check TileLang makes with ``assert`` (a bitwise reducer's integer dtype): an AssertionError too."""


class FactoryReturnError(TileLangCompileError, TypeError):
    """A ``@tilelang.jit`` factory that returned something other than a ``@T.prim_func`` (most often
    None: a forgotten ``return main``), reported at its ``def`` line; a TypeError too, as before."""


class GeneratedCodeError(TileLangCompileError):
    """Triton rejected the generated code; reported at the TileLang line that produced it
    (runtime/diagnostics.py maps the generated line back through TritonModule.line_map)."""


class KernelCallError(Tile2TritonError, ValueError):
    """Bad arguments when a compiled kernel is called (dtype, shape, device, layout, count)."""


class MissingInputsError(KernelCallError):
    """The profiler cannot make a kernel's inputs (a scalar parameter, a dynamic shape): no tuning
    configuration could run, so the autotuner raises it at once, as TileLang's (a ValueError)."""


class UnboundSizeError(KernelCallError, RuntimeError):
    """A size no argument gives (every tensor whose shape has it was None): a RuntimeError too, as
    TileLang's runtime raises it."""


def _short(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if not rel.startswith("..") else path


# ----------------------------------------------------------------------------- user-facing tracebacks
def debug_tracebacks() -> bool:
    """``TILE2TRITON_DEBUG=1``: errors keep tile2triton's internal frames."""
    try:
        return settings.current().debug
    except settings.SettingError:  # reported where the settings are read for a compile, not here
        return False


def _library_dirs(chained: bool) -> tuple[str, ...]:
    dirs = [_PACKAGE_DIR]
    triton = sys.modules.get("triton")
    if chained and triton is not None and getattr(triton, "__file__", None):
        # a chained cause (Triton rejecting generated code) is summarised by the diagnostic
        dirs.append(os.path.dirname(os.path.abspath(triton.__file__)) + os.sep)
    return tuple(dirs)


def _is_library(filename: str, dirs: tuple[str, ...], generated: tuple[str, ...]) -> bool:
    # "<tile2triton launcher ...>": functions generated by the runtime (runtime/kernel.py)
    if filename.startswith("<tile2triton"):
        return True
    path = os.path.abspath(filename) if not filename.startswith("<") else filename
    return path.startswith(dirs) or path in generated


def _user_frames(tb, dirs: tuple[str, ...], generated: tuple[str, ...]):
    """A copy of traceback ``tb`` without the frames of files in ``dirs`` or ``generated``."""
    kept = []
    while tb is not None:
        if not _is_library(tb.tb_frame.f_code.co_filename, dirs, generated):
            kept.append(tb)
        tb = tb.tb_next
    out = None
    for t in reversed(kept):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def hide_internal_frames(exc: BaseException, generated: tuple[str, ...] = ()) -> BaseException:
    """Drop tile2triton's frames from ``exc``'s traceback, and library frames (tile2triton's,
    Triton's, the generated kernel files in ``generated``) from the exceptions chained to it; the
    chained exceptions and their messages stay.  A no-op under ``TILE2TRITON_DEBUG=1``."""
    if debug_tracebacks():
        return exc
    exc.__traceback__ = _user_frames(exc.__traceback__, _library_dirs(False), generated)
    hide_library_frames(_chained(exc), generated)
    return exc


def hide_library_frames(exc: BaseException | None, generated: tuple[str, ...] = ()) -> None:
    """Drop library frames (tile2triton's, Triton's, ``generated`` files') from ``exc`` and the
    exceptions chained to it: what Triton raised on generated code, summarised by a diagnostic."""
    if debug_tracebacks():
        return
    dirs = _library_dirs(True)
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc.__traceback__ = _user_frames(exc.__traceback__, dirs, generated)
        exc = _chained(exc)


def _chained(exc: BaseException) -> BaseException | None:
    return exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)


def user_facing(fn: _F) -> _F:
    """Decorate a public entry point: a ``Tile2TritonError`` leaves it with the user's frames only.

    The bare ``raise`` re-raises without adding this frame, so the traceback a script prints is
    its own call lines followed by the diagnostic.
    """

    @functools.wraps(fn)
    def entry(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Tile2TritonError as exc:
            hide_internal_frames(exc)
            raise

    return entry  # type: ignore[return-value]
