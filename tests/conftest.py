"""Shared test configuration for tile2triton.

* Every test gets a freshly seeded torch RNG (autouse fixture).
* Tests marked ``@pytest.mark.gpu`` are skipped when CUDA is unavailable.
* In modules marked ``poison_empty`` (``pytestmark = pytest.mark.poison_empty``), every
  ``torch.empty`` returns NaN-filled floats / sentinel-filled integers, so the outputs that
  the runtime allocates for ``out_idx`` start poisoned: an element the kernel never writes
  fails the comparison instead of passing by luck (recycled memory).
* The ``dev`` fixture is the torch device execution tests allocate their tensors on.
  By default it is parametrized over ``cpu`` (Triton's interpreter) and ``cuda``
  (marked ``gpu``, hence skipped on machines without CUDA), so one suite runs on
  both kinds of machine.  ``TILE2TRITON_TEST_DEVICE`` restricts it:
  ``TILE2TRITON_TEST_DEVICE=cuda`` runs the execution tests on CUDA tensors only,
  ``TILE2TRITON_TEST_DEVICE=cpu`` on the interpreter only, ``cpu,cuda`` on both.
"""

import os
import pathlib
import sys

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
TESTS = pathlib.Path(__file__).resolve().parent
for _p in (str(ROOT), str(TESTS)):
    if _p not in sys.path:
        sys.path.insert(0, _p)


def _requested_devices():
    env = os.environ.get("TILE2TRITON_TEST_DEVICE", "").strip().lower()
    if not env:
        return ["cpu", "cuda"]
    devs = [d.strip() for d in env.split(",") if d.strip()]
    bad = [d for d in devs if d not in ("cpu", "cuda")]
    if bad:
        raise pytest.UsageError(f"TILE2TRITON_TEST_DEVICE: unknown device(s) {bad}; use cpu and/or cuda")
    return devs


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device (skipped when torch.cuda.is_available() is False)")
    config.addinivalue_line("markers", "poison_empty: torch.empty returns NaN/sentinel-filled tensors in this test")


def pytest_generate_tests(metafunc):
    if "dev" in metafunc.fixturenames:
        params = []
        for d in _requested_devices():
            if d == "cuda":
                params.append(pytest.param("cuda", marks=pytest.mark.gpu, id="cuda"))
            else:
                params.append(pytest.param("cpu", id="cpu"))
        metafunc.parametrize("dev", params)


def pytest_runtest_setup(item):
    if item.get_closest_marker("gpu") is not None and not torch.cuda.is_available():
        pytest.skip("needs CUDA (test marked gpu)")


@pytest.fixture(autouse=True)
def _seed_rng(request):
    # A different but deterministic seed per test, so tests do not all see the same data.
    seed = sum(ord(c) * (i + 1) for i, c in enumerate(request.node.nodeid)) % (2**31)
    torch.manual_seed(seed)
    yield


_EMPTY_SENTINEL = {
    torch.uint8: 165,
    torch.int8: -91,
    torch.int16: -12345,
    torch.int32: -123456789,
    torch.int64: -123456789,
}


@pytest.fixture(autouse=True)
def _poison_torch_empty(request, monkeypatch):
    if request.node.get_closest_marker("poison_empty") is None:
        yield
        return
    real_empty = torch.empty

    def poisoned_empty(*args, **kwargs):
        t = real_empty(*args, **kwargs)
        if t.dtype.is_floating_point or t.dtype.is_complex:
            t.fill_(float("nan"))
        elif t.dtype in _EMPTY_SENTINEL:
            t.fill_(_EMPTY_SENTINEL[t.dtype])
        return t

    monkeypatch.setattr(torch, "empty", poisoned_empty)
    yield
