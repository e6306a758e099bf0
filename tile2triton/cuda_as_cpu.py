"""Run a script written for a CUDA machine on the CPU, unmodified (``tile2triton run --device cpu``).

TileLang scripts make their tensors with ``device="cuda"`` or ``.cuda()`` and time with
``torch.cuda.synchronize()`` / ``torch.cuda.Event``. On a machine without CUDA this maps them onto
the CPU, where tile2triton runs the kernels through Triton's interpreter:

* ``device="cuda"`` (or ``"cuda:1"``, a ``torch.device("cuda")``, an int) in any torch function, and
  ``tensor.cuda()`` / ``tensor.to("cuda")``, give CPU tensors;
* ``torch.Generator(device="cuda")`` is a CPU generator;
* ``torch.cuda.synchronize``, ``empty_cache``, ``manual_seed(_all)`` do nothing (``manual_seed``
  seeds the CPU generator through ``torch.manual_seed`` already), and ``torch.cuda.Event(enable_timing=True)``
  measures wall-clock time between its ``record()`` calls;
* streams (``torch.cuda.Stream()``, ``current_stream()``, ``default_stream()``, ``with torch.cuda.stream(s)``)
  are one CPU stream where every operation has completed when it returns (TileLang's fusedmoe example
  runs its experts on streams).

``torch.cuda.is_available()`` stays False, so code that asks gets the truth. Used by the command
and by ``tools/tilelang_suite.py --cuda-as-cpu`` (TileLang's test suites on a CPU machine).
"""

from __future__ import annotations

import contextlib
import os
import time

_installed = False


def map_cuda_to_cpu() -> bool:
    """Install the mapping for the rest of the process; False (and nothing done) when CUDA is there."""
    global _installed
    import torch
    from torch.overrides import TorchFunctionMode

    if torch.cuda.is_available():
        return False
    if _installed:
        return True
    # the rest of tile2triton asks settings.cuda_as_cpu: the carver's device queries answer for the
    # interpreter (driver.get_num_sms() for a persistent grid) and tilelang.testing runs its
    # requires_cuda tests there
    os.environ["T2T_SUITE_CUDA_AS_CPU"] = "1"

    def fix(dev):
        if isinstance(dev, str) and dev.startswith("cuda"):
            return "cpu"
        if isinstance(dev, int) and not isinstance(dev, bool):
            return "cpu"
        if isinstance(dev, torch.device) and dev.type == "cuda":
            return torch.device("cpu")
        return dev

    class CudaAsCpu(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if "device" in kwargs:
                kwargs["device"] = fix(kwargs["device"])
            if func is torch.Tensor.cuda:
                return args[0]
            if func is torch.Tensor.to and args:
                args = (args[0], *(fix(a) for a in args[1:]))
            return func(*args, **kwargs)

    CudaAsCpu().__enter__()

    base_generator = torch.Generator

    class Generator(base_generator):  # torch.Generator(device="cuda") is not a torch function
        def __new__(cls, device="cpu"):
            return base_generator.__new__(cls, device=fix(device))

    torch.Generator = Generator
    torch.cuda.synchronize = lambda *a, **k: None
    torch.cuda.empty_cache = lambda *a, **k: None
    torch.cuda.manual_seed = lambda *a, **k: None
    torch.cuda.manual_seed_all = lambda *a, **k: None
    torch.cuda.Event = WallClockEvent
    torch.cuda.Stream = CpuStream
    torch.cuda.current_stream = torch.cuda.default_stream = lambda *a, **k: _THE_STREAM
    torch.cuda.stream = lambda stream=None: contextlib.nullcontext(stream)
    torch.cuda.set_stream = lambda *a, **k: None
    _installed = True
    return True


class WallClockEvent:
    """``torch.cuda.Event`` on the CPU: ``record()`` notes the time, ``elapsed_time(end)`` is in ms."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        self.enable_timing = enable_timing
        self._t: float | None = None

    def record(self, stream=None) -> None:
        self._t = time.perf_counter()

    def synchronize(self) -> None:
        pass

    def wait(self, stream=None) -> None:
        pass

    def query(self) -> bool:
        return True

    def elapsed_time(self, end: WallClockEvent) -> float:
        if self._t is None or end._t is None:
            raise RuntimeError("elapsed_time: both events must be recorded first")
        return (end._t - self._t) * 1e3


class CpuStream:
    """``torch.cuda.Stream`` on the CPU: every operation has completed when it returns, so waiting,
    recording and synchronising do nothing."""

    cuda_stream = 0
    device = None

    def __init__(self, device=None, priority: int = 0, **kwargs):
        self.priority = priority

    def wait_stream(self, stream) -> None:
        pass

    def wait_event(self, event) -> None:
        pass

    def record_event(self, event=None) -> WallClockEvent:
        event = event if event is not None else WallClockEvent()
        event.record(self)
        return event

    def synchronize(self) -> None:
        pass

    def query(self) -> bool:
        return True


_THE_STREAM = CpuStream()
