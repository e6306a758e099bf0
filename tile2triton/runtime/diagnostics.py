"""Map errors Triton raises on generated code back to the TileLang line that produced it.

``codegen/emit.py`` keeps ``TritonModule.line_map`` (generated line -> TileLang ``Loc``).  When
Triton rejects the generated code -- a ``CompilationError`` when compiling for the GPU, or an
``InterpreterError`` (wrapping the real exception, raised from a frame of the generated file)
under the interpreter -- :func:`launch` re-raises it as a ``GeneratedCodeError`` (a ``TileLangCompileError``) at the user's
line, with the generated line as a hint and the original exception chained.
"""

from __future__ import annotations

import bisect
import os
import traceback

from ..errors import GeneratedCodeError, TileLangCompileError, hide_library_frames


def launch(launcher, fn, grid, args, num_warps):
    """``fn[grid](*args, num_warps=num_warps)``, with Triton's errors mapped to the TileLang line."""
    try:
        return fn[grid](*args, num_warps=num_warps)
    except Exception as exc:
        mapped = translate(exc, launcher.module, getattr(launcher.loaded, "__file__", None))
        if mapped is None:
            raise
        raise mapped from exc


def origin_of(line_map: dict, line: int):
    """The TileLang Loc of generated ``line``: the closest mapped line at or above it."""
    if not line_map:
        return None
    keys = sorted(line_map)
    k = bisect.bisect_right(keys, line) - 1
    return line_map[keys[k]] if k >= 0 else None


def _chain(exc):
    seen = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


def generated_line(exc, module, path: str | None):
    """(generated line, the exception that names it) for an error raised on generated code, else None."""
    try:
        from triton.compiler.errors import CompilationError
    except ImportError:  # pragma: no cover - very old Triton
        CompilationError = ()  # noqa: N806
    lines = module.source.split("\n")
    placed = []
    for e in _chain(exc):
        if CompilationError and isinstance(e, CompilationError) and getattr(e, "src", None):
            node_line = getattr(getattr(e, "node", None), "lineno", None)
            first = e.src.split("\n", 1)[0].strip()
            start = next((k for k, text in enumerate(lines, 1) if first and text.strip() == first), None)
            if node_line is not None and start is not None:
                placed.append((start + node_line - 1, e))
    # a function called from another (a Gluon partition under gl.warp_specialize) fails inside: the
    # innermost error whose line the map places names the statement; a helper's has no origin
    for line, e in reversed(placed):
        if origin_of(module.line_map, line) is not None:
            return line, e
    if placed:
        return placed[0]
    if path is None:
        return None
    path = os.path.abspath(path)
    # the innermost frame in the generated file, searching the deepest cause first
    for e in reversed(_chain(exc)):
        frames = [f for f in traceback.extract_tb(e.__traceback__) if os.path.abspath(f.filename) == path]
        if frames:
            return frames[-1].lineno, e
    return None


def translate(exc, module, path: str | None):
    """A TileLangCompileError at the user's line for ``exc``, or None when it cannot be placed."""
    if isinstance(exc, TileLangCompileError):
        return None
    found = generated_line(exc, module, path)
    if found is None:
        return None
    line, cause = found
    loc = origin_of(module.line_map, line)
    if loc is None or not loc.line:
        return None
    text = module.source.split("\n")[line - 1].strip() if 0 < line <= module.source.count("\n") + 1 else ""
    reason = _reason(cause)
    where = f"{path}:{line}" if path else f"generated line {line}"
    # the diagnostic names the line and the reason; Triton's frames (and the generated file's) only bury it
    hide_library_frames(exc, (os.path.abspath(path),) if path else ())
    return GeneratedCodeError(
        f"Triton rejected the code generated for this line: {reason}",
        loc,
        f"generated code at {where}: {text}" if text else f"generated code at {where}",
    )


def _reason(exc) -> str:
    msg = getattr(exc, "error_message", None)
    if msg:
        return f"{type(exc).__name__}: {msg.strip().splitlines()[-1]}"
    text = str(exc).strip()
    text = text.splitlines()[-1] if text else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
