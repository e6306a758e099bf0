"""Tensor descriptors made on the host (``TILE2TRITON_HOST_DESCRIPTORS``).

A generated kernel whose TMA loads read a kernel parameter takes that parameter's descriptor as
an argument (``codegen.module.KernelLaunch.host_descriptors``) instead of building it in every
program (``tl.make_tensor_descriptor``: a 128-byte tensormap written to global memory and fenced
before the first load, then a barrier).  TileLang passes its ``CUtensorMap``s the same way, as
``__grid_constant__`` kernel arguments.  Here a ``triton.tools.tensor_descriptor.TensorDescriptor``
per call, from the tensor as passed; Triton's launcher encodes it (Triton 3.6 and 3.9).
"""

from __future__ import annotations


def descriptors_for(args: tuple, specs: tuple) -> list:
    """The descriptor arguments of one launch: per ``(index in args, block shape)``."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    out = []
    for index, box in specs:
        t = args[index]
        out.append(TensorDescriptor(t, list(t.shape), list(t.stride()), list(box)))
    return out


class WithHostDescriptors:
    """A generated Triton function whose callers pass its tensors only: ``fn[grid](...)`` and
    ``fn.run(...)`` as for the function itself, the descriptors inserted after the first ``count``
    arguments (the kernel's own; a scratch argument, if any, follows them)."""

    def __init__(self, fn, specs: tuple, count: int):
        self.fn = fn
        self.specs = specs
        self.count = count

    def arguments(self, args: tuple) -> tuple:
        n = self.count
        return (*args[:n], *descriptors_for(args, self.specs), *args[n:])

    def __getitem__(self, grid):
        launch = self.fn[grid]

        def run(*args, **kwargs):
            return launch(*self.arguments(args), **kwargs)

        return run

    def run(self, *args, grid, **kwargs):
        return self.fn.run(*self.arguments(args), grid=grid, **kwargs)

    def __getattr__(self, name):
        return getattr(self.fn, name)
