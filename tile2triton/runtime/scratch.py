"""The per-program global scratch area of kernels that keep shared buffers in global memory
(codegen/scratch.py): one more, hidden, last kernel argument.

Each launch gets its own ``torch.empty`` of ``programs x bytes per program`` bytes on the kernel's
device (on CUDA the caching allocator makes that cheap, and a buffer is never shared by two
launches, whatever the streams).
"""

from __future__ import annotations

import torch


def scratch_tensor(bytes_per_program: int, grid, device) -> torch.Tensor:
    programs = 1
    for g in grid:
        programs *= g
    return torch.empty(programs * bytes_per_program, dtype=torch.uint8, device=device)


def _device(args):
    for a in args:
        if isinstance(a, torch.Tensor):
            return a.device
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class WithScratch:
    """A generated Triton function whose callers do not pass the scratch argument: ``fn[grid](...)``
    and ``fn.run(...)`` as for the function itself, the scratch area appended."""

    def __init__(self, fn, bytes_per_program: int):
        self.fn = fn
        self.bytes_per_program = bytes_per_program

    def __getitem__(self, grid):
        launch = self.fn[grid]

        def run(*args, **kwargs):
            return launch(*args, scratch_tensor(self.bytes_per_program, grid, _device(args)), **kwargs)

        return run

    def run(self, *args, grid, **kwargs):
        return self.fn.run(*args, scratch_tensor(self.bytes_per_program, grid, _device(args)), grid=grid, **kwargs)

    def __getattr__(self, name):
        return getattr(self.fn, name)
