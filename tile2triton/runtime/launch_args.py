"""Arguments a generated Triton function takes beyond what its callers pass: one wrapper shape
(``ExtraArguments``) for the host descriptors (host_descriptors.py), the size multiples
(launcher.py) and the scratch area (scratch.py), and ``size_multiple``, which both the launches
and the offline compiles (target.py) compute."""

from __future__ import annotations


def size_multiple(value: int) -> int:
    """The largest of 1, 2, 4, 8 that divides ``value``: what a kernel taking the size as a multiple
    (``KernelLaunch.multiples``, TILE2TRITON_SIZE_MULTIPLES) is passed for it; a function of
    ``value & 7``, which the launch keys of such a kernel hold."""
    return 8 if value & 7 == 0 else value & -value


class ExtraArguments:
    """A Triton function called as the function itself (``fn[grid](...)``, ``fn.run(...)``, its
    other attributes), each launch's arguments completed by ``arguments(args, grid)``."""

    def __init__(self, fn):
        self.fn = fn

    def arguments(self, args: tuple, grid) -> tuple:
        raise NotImplementedError

    def __getitem__(self, grid):
        launch = self.fn[grid]

        def run(*args, **kwargs):
            return launch(*self.arguments(args, grid), **kwargs)

        return run

    def run(self, *args, grid, **kwargs):
        return self.fn.run(*self.arguments(args, grid), grid=grid, **kwargs)

    def __getattr__(self, name):
        return getattr(self.fn, name)
