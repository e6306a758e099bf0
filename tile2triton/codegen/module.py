"""What code generation hands the runtime: a module's source and how to launch its kernels.
Every route (the ``tl`` lowering, the Gluon routes) produces one."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class KernelLaunch:
    """How the runtime launches one generated kernel."""

    name: str
    grid: list  # ir.Expr per axis, evaluated on the host
    num_warps: int
    args: list  # ir.Buffer / ir.Var in Triton parameter order
    aligned: list = field(default_factory=list)  # args whose base address must be 16-byte aligned (TMA)
    # shared buffers in global scratch: bytes per program, passed as the hidden last argument
    # ``scratch_param`` (runtime/scratch.py allocates it)
    scratch_bytes: int = 0
    scratch_param: str | None = None
    # tensor descriptors made on the host (TILE2TRITON_HOST_DESCRIPTORS): per descriptor parameter,
    # after ``args`` and before the scratch one, (its name, the index in ``args`` of the tensor it
    # describes, its block shape); runtime/host_descriptors.py builds them per call
    host_descriptors: list = field(default_factory=list)
    # sizes the kernel takes as a multiple of a power of two (TILE2TRITON_SIZE_MULTIPLES): per
    # entry, the index in ``args`` of a size Var in a global tensor's strides; the kernel has one
    # trailing ``tl.constexpr`` parameter each, after all others, the largest of 1, 2, 4, 8 that
    # divides the size, which the runtime computes at launch (runtime/launch_args.size_multiple)
    multiples: list = field(default_factory=list)
    # bytes of a static .shared array the kernel declares itself (on_chip.py's scratch area), beside
    # the shared memory Triton allocates: the runtime lets the launch have both (runtime/static_shared.py)
    static_shared: int = 0
    # the host descriptors are Gluon's (a Gluon route's kernel): each made with its shared-memory layout
    gluon_descriptors: bool = False


@dataclass
class TritonModule:
    source: str
    launches: list = field(default_factory=list)
    line_map: dict = field(default_factory=dict)  # generated line -> ir.Loc
