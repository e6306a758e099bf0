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
| ``TILE2TRITON_FORWARD_SHARED`` | on/off (default on) | a warp-specialized producer's shared ring forwarded into the consumers' reads (the gathers feed the dots; passes/forward_shared.py) |
| ``TILE2TRITON_TENSOR_DESCRIPTORS`` | on/off (default: the card decides) | TMA loads through tensor descriptors |
| ``TILE2TRITON_GLUON`` | on (default), off, ``log``, ``force`` | the Gluon attention routes; ``log`` says why a kernel keeps ``tl``; ``force`` takes them wherever they apply, past the measured cost model (for sweeps) |
| ``TILE2TRITON_TMA_VECTORS`` | on/off (default on) | one-axis boxes (a row statistic: lse, Delta) load through TMA too; off: through pointers |
| ``TILE2TRITON_TMA_MIN_TRIPS`` | an integer (default 0) | copies in loops of fewer iterations (known when compiling) load through pointers: each program builds its descriptors at its start, a cost a short loop does not repay |
| ``TILE2TRITON_HOST_DESCRIPTORS`` | on/off (default on) | descriptors of kernel parameters made on the host per call and passed as arguments, not built by every program |
| ``TILE2TRITON_VECTORIZE_LOOPS`` | on/off (default on) | loops without carried dependences as tile axes |
| ``TILE2TRITON_BLOCK_SLICES`` | on/off (default on) | a register tile read at an aligned block of rows (``acc[:4, :]``) through ``tl.reshape`` |
| ``TILE2TRITON_SPECULATE_COPIES`` | on/off (default on) | copies under an ``if`` in a pipelined loop issued before it, masked by its condition |
| ``TILE2TRITON_FEW_WARPS`` | on/off (default off) | attention loops of a 1- or 2-warp source keep its warps (runtime/tuning.py) |
| ``TILE2TRITON_SHARED_SCRATCH`` | on/off (default off) | every shared buffer in global scratch (testing) |
| ``TILE2TRITON_SCRATCH_CTA_ATOMICS`` | on/off (default on) | relaxed atomics on a scratch-backed shared buffer are block-scoped (``scope="cta"``) |
| ``TILE2TRITON_SCRATCH_BLOCK_CLAIMS`` | on/off (default off) | a shared counter's slot claims as one atomic per block and a cumsum (else one atomic per lane) |
| ``TILE2TRITON_VECTORIZE_ATOMIC_LOOPS`` | on/off (default off) | loops whose bodies are branches and commuting atomics with no result also as tile axes |
| ``TILE2TRITON_SCRATCH_HISTOGRAM`` | on/off (default off) | a shared histogram's atomics as ``tl.histogram`` and one atomic per bin |
| ``TILE2TRITON_SCRATCH_ATOMIC_BARRIERS`` | ``reductions`` (default), ``atomics``, ``keep`` | which barriers between two atomics on one scratch buffer are left out (codegen/scratch.py) |
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

# Defaults of the two TMA switches (issue 23, attention backward): behaviour as before until the
# H200 probe (benchmarks/attnbwd_probe.py) has measured them.  Offline (sm_90 SASS, Triton 3.9),
# mha_bwd_bhsd's main kernel at 8 iterations a program: 1352 instructions with descriptors, 808
# without (four in-kernel tensormap creations gone), 12 -> 4 BAR.SYNC an iteration.
TMA_VECTORS_DEFAULT = True
TMA_MIN_TRIPS_DEFAULT = 17  # H200 probe: no descriptors 26.7 -> 18.8 us at 8 iterations, 159.6 -> 142.0 at 32
# on: kernel time down (probe), but about 20 us more host time per call on Triton 3.6 (suite part 1)
HOST_DESCRIPTORS_DEFAULT = False

# passes/forward_shared.py: on from offline evidence (the session 10 probe did not run): the sparse MLA
# forward's kernel compiles (Triton 3.6, sm_90) to 8 warps, 255 registers, no spills, 221440 B of shared
# memory, as the hand block-view kernel measured at 50 us on the H200 (this lowering without it: 814-904 us)
FORWARD_SHARED_DEFAULT = True

_ON = ("1", "on", "true", "yes")
_OFF = ("0", "off", "false", "no")

VARIABLES = (
    "TILE2TRITON_CACHE_DIR",
    "TILE2TRITON_DISABLE_CACHE",
    "TILE2TRITON_DEBUG",
    "TILE2TRITON_TUNE",
    "TILE2TRITON_PER_THREAD_LOADS",
    "TILE2TRITON_THREAD_COPY_TILES",
    "TILE2TRITON_FORWARD_SHARED",
    "TILE2TRITON_TENSOR_DESCRIPTORS",
    "TILE2TRITON_TMA_VECTORS",
    "TILE2TRITON_TMA_MIN_TRIPS",
    "TILE2TRITON_HOST_DESCRIPTORS",
    "TILE2TRITON_GLUON",
    "TILE2TRITON_VECTORIZE_LOOPS",
    "TILE2TRITON_SHARED_SCRATCH",
    "TILE2TRITON_BLOCK_SLICES",
    "TILE2TRITON_SPECULATE_COPIES",
    "TILE2TRITON_FEW_WARPS",
    "TILE2TRITON_SCRATCH_CTA_ATOMICS",
    "TILE2TRITON_SCRATCH_ATOMIC_BARRIERS",
    "TILE2TRITON_SCRATCH_BLOCK_CLAIMS",
    "TILE2TRITON_SCRATCH_HISTOGRAM",
    "TILE2TRITON_VECTORIZE_ATOMIC_LOOPS",
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


def _count(name: str, raw: str | None, default: int) -> int:
    """A non-negative integer: ``default`` when unset or empty."""
    value = (raw or "").strip()
    if not value:
        return default
    if not value.isdigit():
        raise SettingError(f"{name}={raw!r}: expected a non-negative integer")
    return int(value)


def _choice(name: str, raw: str | None, choices: dict[str, str], default: str) -> str:
    value = (raw or "").strip().lower()
    if not value:
        return default
    if value in choices:
        return choices[value]
    raise SettingError(f"{name}={raw!r}: expected one of {', '.join(sorted(choices))}")


_TUNE = {**dict.fromkeys(_OFF, "off"), **dict.fromkeys(("heuristic", "1", "on", "true", "yes"), "heuristic")}
_TUNE.update({"search": "search", "2": "search"})
_GLUON = {**dict.fromkeys(_OFF, "off"), **dict.fromkeys(_ON, "on"), "log": "log", "force": "force"}
_ATOMIC_BARRIERS = {"reductions": "reductions", "atomics": "atomics", "keep": "keep"}


@dataclass(frozen=True)
class Settings:
    cache_dir: str
    disable_cache: bool
    debug: bool
    tune: str  # "heuristic", "off" or "search"
    per_thread_loads: bool
    thread_copy_tiles: bool  # passes/thread_copies.py
    forward_shared: bool  # passes/forward_shared.py (implies the thread copies)
    tensor_descriptors: bool | None  # None: the card decides (runtime/target.py)
    gluon: str  # "on", "off", "log" or "force"
    tma_vectors: bool  # one-axis boxes through tensor descriptors as well
    tma_min_trips: int  # loops of fewer static iterations load through pointers (0: no minimum)
    host_descriptors: bool  # descriptors of kernel parameters made on the host
    vectorize_loops: bool
    shared_scratch: bool
    block_slices: bool
    speculate_copies: bool
    few_warps: bool
    scratch_cta_atomics: bool
    scratch_atomic_barriers: str  # "reductions", "atomics" or "keep"
    scratch_block_claims: bool
    scratch_histogram: bool
    vectorize_atomic_loops: bool
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
            forward_shared=flag(
                "TILE2TRITON_FORWARD_SHARED", get("TILE2TRITON_FORWARD_SHARED"), FORWARD_SHARED_DEFAULT
            ),
            tensor_descriptors=flag("TILE2TRITON_TENSOR_DESCRIPTORS", get("TILE2TRITON_TENSOR_DESCRIPTORS"), None),
            tma_vectors=flag("TILE2TRITON_TMA_VECTORS", get("TILE2TRITON_TMA_VECTORS"), TMA_VECTORS_DEFAULT),
            tma_min_trips=_count("TILE2TRITON_TMA_MIN_TRIPS", get("TILE2TRITON_TMA_MIN_TRIPS"), TMA_MIN_TRIPS_DEFAULT),
            host_descriptors=flag(
                "TILE2TRITON_HOST_DESCRIPTORS", get("TILE2TRITON_HOST_DESCRIPTORS"), HOST_DESCRIPTORS_DEFAULT
            ),
            gluon=_choice("TILE2TRITON_GLUON", get("TILE2TRITON_GLUON"), _GLUON, "on"),
            vectorize_loops=flag("TILE2TRITON_VECTORIZE_LOOPS", get("TILE2TRITON_VECTORIZE_LOOPS"), True),
            shared_scratch=flag("TILE2TRITON_SHARED_SCRATCH", get("TILE2TRITON_SHARED_SCRATCH"), False),
            block_slices=flag("TILE2TRITON_BLOCK_SLICES", get("TILE2TRITON_BLOCK_SLICES"), True),
            speculate_copies=flag("TILE2TRITON_SPECULATE_COPIES", get("TILE2TRITON_SPECULATE_COPIES"), True),
            few_warps=flag("TILE2TRITON_FEW_WARPS", get("TILE2TRITON_FEW_WARPS"), False),
            scratch_cta_atomics=flag("TILE2TRITON_SCRATCH_CTA_ATOMICS", get("TILE2TRITON_SCRATCH_CTA_ATOMICS"), True),
            scratch_atomic_barriers=_choice(
                "TILE2TRITON_SCRATCH_ATOMIC_BARRIERS",
                get("TILE2TRITON_SCRATCH_ATOMIC_BARRIERS"),
                _ATOMIC_BARRIERS,
                "reductions",
            ),
            # off from the H200 probe: topk_selector 114 -> 80 us with one claim per lane (as TileLang)
            scratch_block_claims=flag(
                "TILE2TRITON_SCRATCH_BLOCK_CLAIMS", get("TILE2TRITON_SCRATCH_BLOCK_CLAIMS"), False
            ),
            scratch_histogram=flag("TILE2TRITON_SCRATCH_HISTOGRAM", get("TILE2TRITON_SCRATCH_HISTOGRAM"), False),
            vectorize_atomic_loops=flag(
                "TILE2TRITON_VECTORIZE_ATOMIC_LOOPS", get("TILE2TRITON_VECTORIZE_ATOMIC_LOOPS"), False
            ),
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
