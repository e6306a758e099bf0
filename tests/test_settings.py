"""tile2triton/settings.py: one parser for every TILE2TRITON_* switch, read again when a variable changes."""

import pytest

from tile2triton import config, settings
from tile2triton.runtime import cache, target, tuning


@pytest.mark.parametrize("value", ["1", "on", "TRUE", "yes", " On "])
def test_on_values(monkeypatch, value):
    monkeypatch.setenv("TILE2TRITON_SHARED_SCRATCH", value)
    assert settings.current().shared_scratch is True


@pytest.mark.parametrize("value", ["0", "off", "False", "no", ""])
def test_off_values(monkeypatch, value):
    """``=off`` turns a switch off (it turned TILE2TRITON_SHARED_SCRATCH *on* before the one parser)."""
    monkeypatch.setenv("TILE2TRITON_SHARED_SCRATCH", value)
    assert settings.current().shared_scratch is False


@pytest.mark.parametrize("value", ["1", "true", "on"])
def test_cache_switch_agrees_everywhere(monkeypatch, value):
    monkeypatch.setenv("TILE2TRITON_DISABLE_CACHE", value)
    assert cache.cache_disabled() and not config.is_cache_enabled()
    monkeypatch.setenv("TILE2TRITON_DISABLE_CACHE", "false")
    assert not cache.cache_disabled() and config.is_cache_enabled()


def test_tune_and_gluon_choices(monkeypatch):
    for value, mode in (
        ("off", "off"),
        ("0", "off"),
        ("search", "search"),
        ("", "heuristic"),
        ("heuristic", "heuristic"),
    ):
        monkeypatch.setenv("TILE2TRITON_TUNE", value)
        assert tuning.mode() == mode
    monkeypatch.setenv("TILE2TRITON_GLUON", "off")
    assert not target.gluon_attention_supported(False)
    monkeypatch.setenv("TILE2TRITON_GLUON", "log")
    assert settings.current().gluon == "log"
    monkeypatch.setenv("TILE2TRITON_GLUON", "force")
    assert settings.current().gluon == "force"


def test_descriptors_forced(monkeypatch):
    monkeypatch.setenv("TILE2TRITON_TENSOR_DESCRIPTORS", "off")
    assert target.tensor_descriptors_supported(False) is False
    monkeypatch.setenv("TILE2TRITON_TENSOR_DESCRIPTORS", "on")
    assert target.tensor_descriptors_supported(True) is True


def test_tma_switches(monkeypatch):
    defaults = settings.current()
    assert (defaults.tma_vectors, defaults.tma_min_trips) == (
        settings.TMA_VECTORS_DEFAULT,
        settings.TMA_MIN_TRIPS_DEFAULT,
    )
    monkeypatch.setenv("TILE2TRITON_TMA_VECTORS", "off")
    monkeypatch.setenv("TILE2TRITON_TMA_MIN_TRIPS", "17")
    assert settings.current().tma_vectors is False and settings.current().tma_min_trips == 17
    monkeypatch.setenv("TILE2TRITON_TMA_MIN_TRIPS", "-1")
    with pytest.raises(settings.SettingError, match="TILE2TRITON_TMA_MIN_TRIPS='-1'"):
        settings.current()


def test_a_value_not_understood_names_the_variable(monkeypatch):
    monkeypatch.setenv("TILE2TRITON_VECTORIZE_LOOPS", "maybe")
    with pytest.raises(settings.SettingError, match="TILE2TRITON_VECTORIZE_LOOPS='maybe'"):
        settings.current()


def test_settings_follow_the_environment(monkeypatch):
    monkeypatch.setenv("TILE2TRITON_CACHE_DIR", "/tmp/a")
    first = settings.current()
    assert settings.current() is first  # unchanged environment: the same object
    monkeypatch.setenv("TILE2TRITON_CACHE_DIR", "/tmp/b")
    assert settings.current().cache_dir == "/tmp/b"


def test_only_settings_reads_the_environment():
    """Every other module of the package gets the environment's values from tile2triton/settings.py
    (runtime/cache.py saves and restores TRITON_INTERPRET, Triton's own switch, around interpreted
    launches: a write, with the read that undoes it)."""
    import pathlib
    import re

    root = pathlib.Path(settings.__file__).parent
    readers = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "settings.py":
            continue
        for m in re.finditer(r"os\.(environ\.get|getenv)\(\s*\"([A-Z_0-9]+)\"", path.read_text()):
            readers.append(f"{path.relative_to(root)}: {m.group(2)}")
    assert readers == ["runtime/cache.py: TRITON_INTERPRET"]
