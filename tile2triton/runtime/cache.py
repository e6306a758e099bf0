"""Content-addressed files of generated Triton source (``@triton.jit`` reads source from files).

* Where: ``$TILE2TRITON_CACHE_DIR``, else ``~/.cache/tile2triton`` (a per-user temporary
  directory when that is not writable).
* ``TILE2TRITON_DISABLE_CACHE=1``: nothing is reused from or left in the cache directory; the
  generated files go to a private temporary directory of this process, removed at exit.
* Files are named ``<kernel>_<sha256 of the source>.py`` and written atomically (a temporary file
  in the same directory, then ``os.replace``), so processes compiling the same kernel at once
  never see a partial file.
* ``stats`` counts what happened in this process (tests assert on ``stats.compiles``).
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
import threading
import warnings
from dataclasses import dataclass, fields
from pathlib import Path

from .. import settings
from .interpreter import use_library

_modules: dict[str, object] = {}
_lock = threading.Lock()


@dataclass
class CacheStats:
    """Counters for this process (``tile2triton.runtime.cache.stats``)."""

    binds: int = 0  # eager kernels bound and checked (one per distinct constant binding)
    compiles: int = 0  # Triton modules generated (lowering + emit), one per kernel and device kind
    loads: int = 0  # generated modules imported
    disk_hits: int = 0  # generated source already on disk with the same content
    disk_writes: int = 0  # generated source written

    def reset(self) -> None:
        for f in fields(self):
            setattr(self, f.name, 0)

    def snapshot(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


stats = CacheStats()


def compile_count() -> int:
    """How many Triton modules this process has generated."""
    return stats.compiles


def cache_disabled() -> bool:
    return settings.current().disable_cache


_dirs: dict = {}
_private: list = []


def _private_dir() -> Path:
    if not _private:
        path = Path(tempfile.mkdtemp(prefix="tile2triton-nocache-"))
        _private.append(path)
        atexit.register(shutil.rmtree, path, True)
    return _private[0]


def cache_dir() -> Path:
    if cache_disabled():
        return _private_dir()
    root = settings.current().cache_dir
    path = _dirs.get(root)
    if path is None:
        path = _dirs[root] = _usable_dir(Path(root))
    return path


def _usable_dir(path: Path) -> Path:
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".probe-")
        os.close(fd)
        os.unlink(probe)
        return path
    except OSError:
        fallback = Path(tempfile.gettempdir()) / f"tile2triton-{os.getuid() if hasattr(os, 'getuid') else 'user'}"
        fallback.mkdir(parents=True, exist_ok=True)
        warnings.warn(f"tile2triton cache directory {path} is not writable; using {fallback}", stacklevel=3)
        return fallback


def source_digest(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:20]


def source_path(source: str, stem: str) -> Path:
    """The file holding ``source``: reused when present with the same content, else written atomically."""
    path = cache_dir() / f"{stem}_{source_digest(source)}.py"
    try:
        if path.read_text() == source:
            stats.disk_hits += 1
            return path
    except (OSError, UnicodeDecodeError):
        pass
    atomic_write(path, source)
    stats.disk_writes += 1
    return path


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the whole new one, never a part."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def load_module(source: str, stem: str, interpret: bool):
    """Import the generated module; under the interpreter ``@triton.jit`` must see TRITON_INTERPRET."""
    path = source_path(source, stem)
    key = f"{path}:{interpret}"
    module = _modules.get(key)
    if module is not None:
        return module
    with _lock:
        module = _modules.get(key)
        if module is not None:
            return module
        name = f"tile2triton_gen.{path.stem}{'_interp' if interpret else ''}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        with interpreter_mode(interpret):
            spec.loader.exec_module(module)
        sys.modules[name] = module
        _modules[key] = module
        stats.loads += 1
    return module


_INTERPRETER_LOCK = threading.RLock()


class interpreter_mode:
    """Set TRITON_INTERPRET for the duration of a block (decoration and launch both read it).
    Interpreted launches are serialised: Triton's interpreter patches ``triton.language`` for the
    duration of a launch, so two threads interpreting at once would undo each other's patches."""

    def __init__(self, on: bool):
        self.on = on

    def __enter__(self):
        # both directions change process-wide state (the variable, the library's flavour)
        _INTERPRETER_LOCK.acquire()
        self.saved = os.environ.get("TRITON_INTERPRET")
        if self.on:
            os.environ["TRITON_INTERPRET"] = "1"
        elif self.saved is not None:
            del os.environ["TRITON_INTERPRET"]
        use_library(self.on)

    def __exit__(self, *exc):
        if self.saved is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = self.saved
        # back to the flavour the process's own TRITON_INTERPRET asks for (other Triton code,
        # torch.compile, and our warm launches, which skip this block when it is already "1")
        default = self.saved == "1"
        if self.on != default:
            use_library(default)
        _INTERPRETER_LOCK.release()


class interpreted_launch:
    """A warm interpreted launch: serialised with every other one (Triton's interpreter keeps the
    grid and its patches of ``triton.language`` in process-wide state), in the interpreter mode unless
    the process runs with TRITON_INTERPRET=1. The variable is read under the lock, so what is seen is
    never another thread's temporary setting inside ``interpreter_mode``."""

    def __enter__(self):
        _INTERPRETER_LOCK.acquire()
        self.mode = None if settings.current().interpret_env else interpreter_mode(True)
        if self.mode is not None:
            self.mode.__enter__()

    def __exit__(self, *exc):
        try:
            if self.mode is not None:
                self.mode.__exit__(*exc)
        finally:
            _INTERPRETER_LOCK.release()
