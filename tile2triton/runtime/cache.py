"""Content-addressed files of generated Triton source (``@triton.jit`` reads source from files)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import warnings
from pathlib import Path

_modules: dict[str, object] = {}


def cache_dir() -> Path:
    root = os.environ.get("TILE2TRITON_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "tile2triton")
    path = Path(root)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".probe-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
        return path
    except OSError:
        fallback = Path(tempfile.gettempdir()) / f"tile2triton-{os.getuid() if hasattr(os, 'getuid') else 'user'}"
        fallback.mkdir(parents=True, exist_ok=True)
        warnings.warn(f"tile2triton cache directory {path} is not writable; using {fallback}", stacklevel=3)
        return fallback


def source_path(source: str, stem: str) -> Path:
    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    path = cache_dir() / f"{stem}_{digest}.py"
    if not path.exists() or path.read_text() != source:
        # atomic: another process may be writing the same file at the same time
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(source)
        os.replace(tmp, path)
    return path


def load_module(source: str, stem: str, interpret: bool):
    """Import the generated module; under the interpreter ``@triton.jit`` must see TRITON_INTERPRET."""
    path = source_path(source, stem)
    key = f"{path}:{interpret}"
    if key in _modules:
        return _modules[key]
    name = f"tile2triton_gen.{path.stem}{'_interp' if interpret else ''}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    with interpreter_mode(interpret):
        spec.loader.exec_module(module)
    sys.modules[name] = module
    _modules[key] = module
    return module


class interpreter_mode:
    """Set TRITON_INTERPRET for the duration of a block (decoration and launch both read it)."""

    def __init__(self, on: bool):
        self.on = on

    def __enter__(self):
        self.saved = os.environ.get("TRITON_INTERPRET")
        if self.on:
            os.environ["TRITON_INTERPRET"] = "1"
        elif self.saved is not None:
            del os.environ["TRITON_INTERPRET"]

    def __exit__(self, *exc):
        if self.saved is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = self.saved
