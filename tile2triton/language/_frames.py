"""What ``T.serial(...)`` returns when host code calls it outside a kernel body.

In TileLang a loop primitive called outside a kernel builds a TVM IR-builder frame (``ForFrame``), or,
for a step other than 1, TileLang's own ``SerialForWithStep`` (not a frame).  Scripts check which
(``isinstance(T.serial(0, n, 1), IRBuilderFrame)``).  tile2triton builds no TVM IR: these objects only
record the loop's bounds; a loop runs only where a kernel body iterates over it (the binder reads the
call, never these objects).  ``tvm.script.ir_builder.base.IRBuilderFrame`` is the class below.
"""

from __future__ import annotations

from .dtypes import TypedLiteral


class IRBuilderFrame:
    """TVM's IR-builder frame, as host code sees it: entering or iterating over it outside a kernel
    body is an error (there is no IR builder to add the loop to)."""

    def _outside(self):
        from . import KernelOnlyError

        raise KernelOnlyError(f"{self!r} can only be used inside a @T.prim_func or @tilelang.jit kernel body")

    def __enter__(self):
        self._outside()

    def __exit__(self, *exc):
        return False

    def __iter__(self):
        self._outside()


class _Loop:
    def __init__(self, start, stop, step, annotations):
        self.start, self.stop, self.step, self.annotations = start, stop, step, annotations

    def __repr__(self) -> str:
        return f"T.serial({self.start!r}, {self.stop!r}, {self.step!r})"


class ForFrame(_Loop, IRBuilderFrame):
    """A unit-step sequential loop's frame (TVM's ``tirx.frame.ForFrame``)."""


class SerialForWithStep(_Loop):
    """A sequential loop with a step other than 1 (TileLang's class of the same name; not a frame)."""

    def __iter__(self):
        IRBuilderFrame._outside(self)


def _is_one(step) -> bool:
    if isinstance(step, TypedLiteral):
        step = step.value
    return isinstance(step, int) and not isinstance(step, bool) and step == 1


def serial_frame(start, stop=None, step=None, annotations=None) -> ForFrame | SerialForWithStep:
    """``T.serial(start, stop, step)`` outside a kernel: a ``ForFrame`` when the step is absent or the
    constant 1 (a Python int or a typed int constant), else a ``SerialForWithStep`` (as TileLang's
    ``T.serial`` chooses)."""
    if step is None or _is_one(step):
        return ForFrame(start, stop, 1, annotations)
    if stop is None:
        start, stop = 0, start
    return SerialForWithStep(start, stop, step, annotations)
