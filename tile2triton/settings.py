"""tile2triton's settings: every environment variable the package reads, parsed in one place.

``current()`` is a frozen :class:`Settings` made from the environment as it is now (one parser for
every on/off switch), cached until a variable changes, so a test's ``monkeypatch.setenv`` or a
script's ``os.environ[...] = ...`` takes effect at the next compile. Only the runtime and the
surfaces read it: code generation is handed what it needs in ``LoweringOptions``.

| variable | values | effect |
|---|---|---|
| ``TILE2TRITON_CACHE_DIR`` | a folder | where generated sources are kept (default ``~/.cache/tile2triton``) |
| ``TILE2TRITON_DISABLE_CACHE`` | on/off | generated sources go to a private temporary folder |
| ``TILE2TRITON_DEBUG`` | on/off | errors keep tile2triton's internal frames |
| ``TILE2TRITON_TUNE`` | ``heuristic`` (default), ``off``, ``search`` | launch parameters (runtime/tuning.py) |
| ``TILE2TRITON_PER_THREAD_LOADS`` | on/off (default on) | thread-view loads made by every thread |
| ``TILE2TRITON_THREAD_COPY_TILES`` | on/off (default off) | per-thread copy nests of thread-range sections as block copies |
| ``TILE2TRITON_TENSOR_DESCRIPTORS`` | on/off (default: the card decides) | TMA loads through tensor descriptors |
| ``TILE2TRITON_GLUON`` | on (default), off, ``log`` | the Gluon attention routes; ``log`` says why a kernel keeps ``tl`` |
| ``TILE2TRITON_VECTORIZE_LOOPS`` | on/off (default on) | loops without carried dependences as tile axes |
| ``TILE2TRITON_SHARED_SCRATCH`` | on/off (default off) | every shared buffer in global scratch (testing) |
| ``TRITON_INTERPRET`` | ``1`` | Triton's own switch; read to know the interpreter's mode |
| ``T2T_SUITE_CUDA_AS_CPU`` | ``1`` | ``tile2triton run --device cpu`` / the suite runner: CUDA is mapped onto the CPU |
| ``NO_COLOR`` | any | the command's diagnostics without colour |
| ``TILELANG_TMP_DIR``, ``TILELANG_DEFAULT_TARGET``, ``CUDA_HOME`` / ``CUDA_PATH`` | | ``tilelang.env``'s values, as TileLang reads them |
| ``TL_PERF_REGRESSION_ONLY``, ``TL_PERF_REGRESSION_FORMAT`` | | ``tilelang.testing.regression()``: which cases, ``text`` or ``json`` |

On/off values: ``1``, ``on``, ``true``, ``yes`` and ``0``, ``off``, ``false``, ``no`` (any case); an
empty value is the default. Anything else is an error naming the variable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

_ON = ("1", "on", "true", "yes")
_OFF = ("0", "off", "false", "no")

VARIABLES = (
    "TILE2TRITON_CACHE_DIR",
    "TILE2TRITON_DISABLE_CACHE",
    "TILE2TRITON_DEBUG",
    "TILE2TRITON_TUNE",
    "TILE2TRITON_PER_THREAD_LOADS",
    "TILE2TRITON_THREAD_COPY_TILES",
    "TILE2TRITON_TENSOR_DESCRIPTORS",
    "TILE2TRITON_GLUON",
    "TILE2TRITON_VECTORIZE_LOOPS",
    "TILE2TRITON_SHARED_SCRATCH",
    "TRITON_INTERPRET",
    "T2T_SUITE_CUDA_AS_CPU",
    "NO_COLOR",
    "TILELANG_TMP_DIR",
    "TILELANG_DEFAULT_TARGET",
    "CUDA_HOME",
    "CUDA_PATH",
    "TL_PERF_REGRESSION_ONLY",
    "TL_PERF_REGRESSION_FORMAT",
)


class SettingError(ValueError):
    """An environment variable of tile2triton's with a value it does not understand."""


def flag(name: str, raw: str | None, default: bool | None) -> bool | None:
    """The one parser of on/off switches: ``default`` when unset or empty."""
    value = (raw or "").strip().lower()
    if not value:
        return default
    if value in _ON:
        return True
    if value in _OFF:
        return False
    raise SettingError(f"{name}={raw!r}: expected one of {', '.join(_ON + _OFF)}")


def _choice(name: str, raw: str | None, choices: dict[str, str], default: str) -> str:
    value = (raw or "").strip().lower()
    if not value:
        return default
    if value in choices:
        return choices[value]
    raise SettingError(f"{name}={raw!r}: expected one of {', '.join(sorted(choices))}")


_TUNE = {**dict.fromkeys(_OFF, "off"), **dict.fromkeys(("heuristic", "1", "on", "true", "yes"), "heuristic")}
_TUNE.update({"search": "search", "2": "search"})
_GLUON = {**dict.fromkeys(_OFF, "off"), **dict.fromkeys(_ON, "on"), "log": "log"}


@dataclass(frozen=True)
class Settings:
    cache_dir: str
    disable_cache: bool
    debug: bool
    tune: str  # "heuristic", "off" or "search"
    per_thread_loads: bool
    thread_copy_tiles: bool  # passes/thread_copies.py
    tensor_descriptors: bool | None  # None: the card decides (runtime/target.py)
    gluon: str  # "on", "off" or "log"
    vectorize_loops: bool
    shared_scratch: bool
    interpret_env: bool  # TRITON_INTERPRET=1 is set
    cuda_as_cpu: bool
    no_color: bool
    tilelang_tmp_dir: str | None
    tilelang_default_target: str
    cuda_home: str | None
    regression_only: tuple  # lower-case case-name fragments; empty: all
    regression_format: str  # "text" or "json"

    @classmethod
    def from_environment(cls, env) -> Settings:
        get = env.get
        return cls(
            cache_dir=get("TILE2TRITON_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "tile2triton"),
            disable_cache=flag("TILE2TRITON_DISABLE_CACHE", get("TILE2TRITON_DISABLE_CACHE"), False),
            debug=flag("TILE2TRITON_DEBUG", get("TILE2TRITON_DEBUG"), False),
            tune=_choice("TILE2TRITON_TUNE", get("TILE2TRITON_TUNE"), _TUNE, "heuristic"),
            per_thread_loads=flag("TILE2TRITON_PER_THREAD_LOADS", get("TILE2TRITON_PER_THREAD_LOADS"), True),
            thread_copy_tiles=flag("TILE2TRITON_THREAD_COPY_TILES", get("TILE2TRITON_THREAD_COPY_TILES"), False),
            tensor_descriptors=flag("TILE2TRITON_TENSOR_DESCRIPTORS", get("TILE2TRITON_TENSOR_DESCRIPTORS"), None),
            gluon=_choice("TILE2TRITON_GLUON", get("TILE2TRITON_GLUON"), _GLUON, "on"),
            vectorize_loops=flag("TILE2TRITON_VECTORIZE_LOOPS", get("TILE2TRITON_VECTORIZE_LOOPS"), True),
            shared_scratch=flag("TILE2TRITON_SHARED_SCRATCH", get("TILE2TRITON_SHARED_SCRATCH"), False),
            interpret_env=get("TRITON_INTERPRET") == "1",
            cuda_as_cpu=get("T2T_SUITE_CUDA_AS_CPU") == "1",
            no_color=bool(get("NO_COLOR")),
            tilelang_tmp_dir=get("TILELANG_TMP_DIR") or None,
            tilelang_default_target=get("TILELANG_DEFAULT_TARGET") or "auto",
            cuda_home=get("CUDA_HOME") or get("CUDA_PATH") or None,
            regression_only=tuple(
                x.strip().lower() for x in (get("TL_PERF_REGRESSION_ONLY") or "").split(",") if x.strip()
            ),
            regression_format=(get("TL_PERF_REGRESSION_FORMAT") or "text").strip().lower(),
        )


_cached: tuple[tuple, Settings] | None = None


def current() -> Settings:
    """The settings of the environment as it is now (re-parsed only when a variable changed)."""
    global _cached
    raw = tuple(os.environ.get(name) for name in VARIABLES)
    cached = _cached
    if cached is not None and cached[0] == raw:
        return cached[1]
    made = Settings.from_environment(dict(zip(VARIABLES, raw)))
    _cached = (raw, made)
    return made
