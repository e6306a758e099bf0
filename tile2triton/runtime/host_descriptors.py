"""Tensor descriptors made on the host (``TILE2TRITON_HOST_DESCRIPTORS``).

A generated kernel whose TMA loads read a kernel parameter takes that parameter's descriptor as
an argument (``codegen.module.KernelLaunch.host_descriptors``) instead of building it in every
program (``tl.make_tensor_descriptor``: a 128-byte tensormap written to global memory and fenced
before the first load, then a barrier).  TileLang passes its ``CUtensorMap``s the same way, as
``__grid_constant__`` kernel arguments.  Here a ``triton.tools.tensor_descriptor.TensorDescriptor``
per call, from the tensor as passed; Triton's launcher encodes it (Triton 3.6 and 3.9).

That costs host time on every call: per descriptor a ``TensorDescriptor`` (a dataclass whose
``__post_init__`` validates it, 2.6 us on a 2-core CI host) and Triton's ``make_tensordesc_arg``
(``cuTensorMapEncodeTiled`` into a fresh ``PyCUtensorMap``).  ``EncodedDescriptors``
(``TILE2TRITON_HOST_DESCRIPTOR_CACHE``) keeps the encoded arguments per tensor address, shape,
strides and dtype and hands them to Triton's C launcher directly.
"""

from __future__ import annotations

import copy

import torch

from .launch_args import ExtraArguments


def launch_specs(launch) -> tuple:
    """A generated launch's host descriptors (``codegen.module.KernelLaunch.host_descriptors``) as
    ``(index in args, block shape, Gluon dtype)``: the dtype's name (``float16``) where they are a
    Gluon kernel's, whose descriptors carry a layout of it, else None."""
    gluon = getattr(launch, "gluon_descriptors", False)
    return tuple(
        (index, tuple(box), launch.args[index].dtype.triton if gluon else None)
        for _, index, box in getattr(launch, "host_descriptors", ())
    )


def descriptors_for(args: tuple, specs: tuple) -> list:
    """The descriptor arguments of one launch: per ``(index in args, block shape, Gluon dtype)``.  A
    Gluon kernel's descriptor (its dtype's name given: ``float16``) carries the shared-memory layout
    its entry made in the kernel before (``gluon_layout``: codegen/gluon_attention.entry_head);
    the others are Triton's."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    out = []
    for index, box, gluon_dtype in specs:
        t = args[index]
        if gluon_dtype is None:
            out.append(TensorDescriptor(t, list(t.shape), list(t.stride()), list(box)))
        else:
            from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as GluonDescriptor

            layout = gluon_layout(box, gluon_dtype)
            out.append(GluonDescriptor(t, list(t.shape), list(t.stride()), list(box), layout))
    return out


def gluon_layout(box: list, dtype: str):
    """The shared-memory layout of a Gluon kernel's TMA box of ``dtype`` (a name: ``float16``)."""
    from triton.experimental.gluon import language as gl

    return gl.NVMMASharedLayout.get_default_for(list(box), getattr(gl, dtype))


class WithHostDescriptors(ExtraArguments):
    """A generated Triton function whose callers pass its tensors only: ``fn[grid](...)`` and
    ``fn.run(...)`` as for the function itself, the descriptors inserted after the first ``count``
    arguments (the kernel's own; a scratch argument, if any, follows them)."""

    def __init__(self, fn, specs: tuple, count: int):
        super().__init__(fn)
        self.specs = specs
        self.count = count

    def arguments(self, args: tuple, grid) -> tuple:
        n = self.count
        return (*args[:n], *descriptors_for(args, self.specs), *args[n:])


class EncodedDescriptors:
    """One compiled kernel's launch with its host descriptors already encoded.

    Triton's CUDA launcher (``CompiledKernel.run``, a ``CudaLauncher``) wraps its C launch in a
    function that expands each ``TensorDescriptor`` argument into the kernel's parameters:
    ``make_tensordesc_arg(desc, meta)`` -> ``[PyCUtensorMap, *shape, *strides]`` (Triton 3.6's
    ``wrap_handle_tensordesc``, 3.9's ``wrap_handle_tensordesc_impl``; both keep the C launch as
    ``launcher`` in the wrapper's closure).  Here the expansion is made once per distinct set of
    descriptor tensors, with Triton's own ``make_tensordesc_arg`` and the kernel's own descriptor
    metadata, and a copy of the ``CudaLauncher`` whose ``launch`` is the C launch itself takes the
    expanded arguments.

    The key holds everything a tensormap encodes that can differ between calls of one compiled
    kernel: the base address, shape, strides and dtype of each tensor (the box, swizzle and
    padding are the kernel's).  A map holds no reference to its tensor, only the address: a
    tensor freed and another allocated at the same address with the same shape, strides and
    dtype encodes to the same bytes.  At most ``LIMIT`` entries (then the cache starts over).
    """

    __slots__ = ("launcher", "encode", "meta", "specs", "indices", "cache", "checked")

    LIMIT = 64

    def __init__(self, launcher, encode, meta: list, specs: tuple):
        self.launcher = launcher  # the CudaLauncher copy that launches the expanded arguments
        self.encode = encode  # Triton's make_tensordesc_arg, as (TensorDescriptor, meta) -> list
        self.meta = meta  # per descriptor, the compiler's tensormap metadata (swizzle, box, dtype)
        self.specs = specs
        self.indices = tuple(i for i, *_ in specs)  # the descriptors' tensors in the launch's arguments
        self.cache: dict = {}  # (address, shape, strides, dtype) per descriptor -> expanded arguments
        self.checked: dict = {}  # a generated launcher's key (what its checks leave open) -> the same

    @classmethod
    def of(cls, kernel, specs: tuple) -> EncodedDescriptors | None:
        """For a ``CompiledKernel`` whose launcher has the structure above, else None (its
        calls keep passing ``TensorDescriptor`` objects)."""
        try:
            run = kernel.run
            wrapped = run.launch
            free = dict(zip(wrapped.__code__.co_freevars, (c.cell_contents for c in wrapped.__closure__ or ())))
        except Exception:  # not a closure (a launcher of another make): its launches stay as they are
            return None
        raw = free.get("launcher")
        encode = free.get("make_tensordesc_arg") or wrapped.__globals__.get("make_tensordesc_arg")
        meta = getattr(kernel.metadata, "tensordesc_meta", None)
        if not callable(raw) or not callable(encode) or not meta or len(meta) != len(specs):
            return None  # no nvTmaDesc lowering: the descriptors are decomposed into pointers
        code = getattr(encode, "__code__", None)
        argc = getattr(code, "co_argcount", None)
        if argc == 3 and code.co_varnames[2] == "_":  # Triton 3.9 on CUDA: (arg, metadata, _ unused)
            three = encode

            def encode(desc, m):
                return three(desc, m, None)

        elif argc != 2:
            return None
        fast = copy.copy(run)
        fast.launch = raw
        return cls(fast, encode, list(meta), specs)

    def arguments(self, args: tuple, checked: tuple | None = None) -> tuple:
        """The expanded descriptor arguments of a launch on ``args``.  ``checked``: a generated
        launcher's key for them (``launcher._descriptor_parts``: per descriptor the address, and the
        shape and strides where its checks leave them open), looked up first; ints and a shape or
        two, cheaper than reading every tensor's shape, strides and dtype."""
        if checked is not None:
            got = self.checked.get(checked)
            if got is not None:
                return got
        key = ()
        for i in self.indices:  # a flat tuple: cheaper to build than one per tensor
            t = args[i]
            key += (t.data_ptr(), t.shape, t.stride(), t.dtype)
        got = self.cache.get(key)
        if got is None:
            got = ()
            for desc, m in zip(descriptors_for(args, self.specs), self.meta):
                got += tuple(self.encode(desc, m))
            if any(isinstance(a, torch.Tensor) for a in got):
                return got  # a decomposed descriptor holds its tensor: not kept
            if len(self.cache) >= self.LIMIT:
                self.cache.clear()
            self.cache[key] = got
        if checked is not None:
            if len(self.checked) >= self.LIMIT:
                self.checked.clear()
            self.checked[checked] = got
        return got
