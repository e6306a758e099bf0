"""The per-program global scratch area of kernels that keep shared buffers in global memory
(codegen/scratch.py): one more, hidden, last kernel argument.

Each launch gets a ``torch.empty`` of ``programs x bytes per program`` bytes on the kernel's device;
a direct launch (``runtime/launcher.DirectLaunch``) takes it from a ``KeptWorkspace`` instead, kept per
thread and stream (``TILE2TRITON_KEEP_WORKSPACES``: launches on one stream run one after another, so
they may share it; ``torch.empty`` from Python costs 5.7 us on the H200 host).
"""

from __future__ import annotations

import torch

from .launch_args import ExtraArguments


def scratch_size(bytes_per_program: int, grid) -> int:
    programs = 1
    for g in grid:
        programs *= g
    return programs * bytes_per_program


def scratch_tensor(bytes_per_program: int, grid, device) -> torch.Tensor:
    return torch.empty(scratch_size(bytes_per_program, grid), dtype=torch.uint8, device=device)


def _device(args):
    for a in args:
        if isinstance(a, torch.Tensor):
            return a.device
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class WithScratch(ExtraArguments):
    """A generated Triton function whose callers do not pass the scratch argument: ``fn[grid](...)``
    and ``fn.run(...)`` as for the function itself, the scratch area appended."""

    def __init__(self, fn, bytes_per_program: int):
        super().__init__(fn)
        self.bytes_per_program = bytes_per_program

    def arguments(self, args: tuple, grid) -> tuple:
        return (*args, scratch_tensor(self.bytes_per_program, grid, _device(args)))
