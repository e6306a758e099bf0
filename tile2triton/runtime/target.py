"""Where a kernel runs: the ``target`` option, the device of a launch, and the device-side
features (tensor descriptors) a lowering may use.

CUDA tensors run through Triton's compiler on their own GPU; CPU tensors through Triton's
interpreter.  ``target`` pins one of the two (``"cuda"``, ``"hip"``, ``"cpu"``), names a card
(``"sm_80"``, ``"sm_100"``, ``"gfx942"``, ...), or follows the tensors (``None``, ``"auto"``).

``Target`` is the one description of a card that code generation and launch parameters read:
backend, architecture, warp size, shared memory and registers, tensor descriptors (TMA), fp8
formats.  At run time it is read from the device (``device_target``); a named card
(``parse_target``) serves compile-only work (``JITKernel.lowered_for``, ``tile2triton show
--target``, tools/target_matrix.py) on a machine that has none.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from .. import settings
from .host_descriptors import gluon_layout, launch_specs
from .launch_args import size_multiple

try:
    from triton.runtime import _allocation
except ImportError:  # a Triton without device-side allocations has no tensor descriptors either
    _allocation = None

NULL_CONTEXT = contextlib.nullcontext()

_AUTO = ("auto", "none")
_CUDA = ("cuda", "hip", "rocm")  # ROCm's torch names its devices "cuda" too
_CPU = ("cpu", "interpreter", "interpret", "llvm", "c")  # TVM names its CPU targets llvm and c


def target_kind(target) -> str | None:
    """``None`` (follow the tensors), ``"cuda"`` or ``"cpu"`` (Triton's interpreter), for a
    target given as TileLang takes it: a string such as ``"cuda -arch=sm_90"``, a dict with a
    ``"kind"``, or an object with a ``kind``.  A target tile2triton cannot run on is an error."""
    if target is None:
        return None
    if isinstance(target, dict):
        target = target.get("kind")
    kind = getattr(target, "kind", target)
    kind = getattr(kind, "name", kind)  # TVM's Target.kind is a TargetKind with a name
    kind = str(kind).split()[0].lower() if kind else "auto"
    if _ARCH.fullmatch(kind):  # a card named by its architecture: sm_90, gfx942
        return "cuda"
    if kind in _AUTO:
        return None
    if kind in _CUDA:
        return "cuda"
    if kind in _CPU:
        return "cpu"
    raise ValueError(
        f"unknown target {target!r}: tile2triton runs on 'cuda' (Triton on an NVIDIA GPU), 'hip' (an AMD GPU) "
        "or 'cpu' (Triton's interpreter), or a card named by its architecture ('sm_90', 'gfx942'); "
        "'auto' follows the tensors' device"
    )


_ARCH = re.compile(r"sm_(\d+)[af]?|gfx[0-9a-f]+")


@dataclass(frozen=True)
class Target:
    """One card as Triton compiles for it.

    ``smem`` is the shared memory (LDS on AMD) one block may use, ``regs`` the registers of one
    SM / CU; ``tma``: tensor descriptors lower to the TMA engine (NVIDIA sm_90 and newer);
    ``fp8`` the TileLang fp8 dtypes Triton compiles there; ``sms`` the SMs / CUs of a device
    read from it (0 for an architecture named offline: one name covers cards of several counts,
    an H100 PCIe's 114 and an H200's 132)."""

    backend: str  # "cuda", "hip" or "cpu" (Triton's interpreter)
    arch: str  # "sm_90", "gfx942"; "" for the interpreter
    warp_size: int = 32
    smem: int = 0
    regs: int = 65536
    tma: bool = False
    fp8: tuple[str, ...] = ()
    sms: int = 0

    @property
    def capability(self) -> tuple[int, int] | None:
        """The CUDA compute capability, (9, 0) for sm_90; None elsewhere."""
        if self.backend != "cuda":
            return None
        digits = re.sub(r"\D", "", self.arch)
        return (int(digits[:-1]), int(digits[-1]))

    @property
    def name(self) -> str:
        return self.arch or "interpreter"

    def gpu_target(self):
        """Triton's ``GPUTarget`` for compiling offline."""
        from triton.backends.compiler import GPUTarget

        if self.backend == "cuda":
            major, minor = self.capability
            return GPUTarget("cuda", major * 10 + minor, self.warp_size)
        if self.backend == "hip":
            return GPUTarget("hip", self.arch, self.warp_size)
        raise ValueError("the interpreter is not a compile target")

    def lowering(self) -> dict:
        """The ``LoweringOptions`` fields code generation reads from the target."""
        if self.backend == "cpu":
            return {"interpret": True}
        fields = {"backend": self.backend, "arch": self.arch, "warp_size": self.warp_size, "fp8": self.fp8}
        if self.arch == "sm_90" and not ptxas_keeps_wgmma_sign_flips():
            fields["bitwise_signs"] = False
        return fields


# ptxas releases seen to compile a sign flip of a wgmma accumulator right start here (13.0: CUDA 13's,
# 13.4: Triton 3.9's for sm_90); 12.8 and 12.9 fold it
_PTXAS_SIGN_FLIPS_FIXED = (13, 0)


def ptxas_keeps_wgmma_sign_flips() -> bool:
    """Whether the ptxas Triton runs for sm_90 keeps a sign flip of a wgmma accumulator.

    ptxas 12.8 and 12.9 (12.8 is what Triton 3.6 runs for sm_90) fold ``xor.b32 r, 0x80000000``
    (and ``and.b32 r, 0x7fffffff``) of an accumulator register to the value it held before the
    wgmmas wrote it, flipped (its initial constant: 0.5 -> -0.5, 0 -> -0.0); 13.0 (CUDA 13's, seen
    on seed 9442089's PTX) and 13.4 (Triton 3.9's) keep the operation.  LLVM emits it for an
    ``fneg`` / ``fabs`` of an accumulator element stored as bits, as ``x * -1.0`` and ``tl.abs``
    become where the element's branch of a ``tl.where`` is known (GPU fuzz seeds 9442089, 9450384)."""
    try:
        from triton.backends.nvidia.compiler import get_ptxas

        version = get_ptxas(90).version
    except Exception:  # no NVIDIA backend or no ptxas: nothing compiles for sm_90 here
        return True
    return tuple(int(part) for part in re.findall(r"\d+", version)[:2]) >= _PTXAS_SIGN_FLIPS_FIXED


_FP8_ALL = ("float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu")
_FP8_AMPERE = ("float8_e5m2", "float8_e8m0fnu")  # Triton has no e4m3fn (fp8e4nv) below sm_89
_KB = 1024
# what Triton's backends and the vendors' tables say of the cards tile2triton names
KNOWN: dict[str, Target] = {
    t.arch: t
    for t in (
        Target("cuda", "sm_80", 32, 163 * _KB, 65536, False, _FP8_AMPERE),  # A100
        Target("cuda", "sm_86", 32, 99 * _KB, 65536, False, _FP8_AMPERE),  # RTX 30xx, A10
        Target("cuda", "sm_89", 32, 99 * _KB, 65536, False, _FP8_ALL),  # L4, RTX 40xx
        Target("cuda", "sm_90", 32, 227 * _KB, 65536, True, _FP8_ALL),  # H100, H200
        Target("cuda", "sm_100", 32, 227 * _KB, 65536, True, _FP8_ALL),  # B200
        Target("cuda", "sm_120", 32, 99 * _KB, 65536, True, _FP8_ALL),  # RTX 50xx
        Target("hip", "gfx90a", 64, 64 * _KB, 131072, False, _FP8_ALL),  # MI200
        Target("hip", "gfx942", 64, 64 * _KB, 131072, False, _FP8_ALL),  # MI300X
        Target("hip", "gfx950", 64, 160 * _KB, 131072, False, _FP8_ALL),  # MI355X
        Target("hip", "gfx1100", 32, 64 * _KB, 131072, False, _FP8_ALL),  # RX 7900 (RDNA3: wave32)
        Target("hip", "gfx1201", 32, 64 * _KB, 131072, False, _FP8_ALL),  # RX 9070 (RDNA4)
    )
}
INTERPRETER = Target("cpu", "", 32)
# the targets tools/target_matrix.py compiles for
MATRIX = ("sm_80", "sm_89", "sm_90", "sm_100", "sm_120", "gfx942", "gfx950", "gfx1100")


def parse_target(target) -> Target:
    """The card a target names: ``"sm_100"``, ``"cuda -arch=sm_80"``, ``{"kind": "hip", "arch":
    "gfx942"}``, ``"gfx1100"``, ``"cpu"``; a bare ``"cuda"`` / ``"hip"`` / ``"auto"`` is the device
    this process would launch on (sm_90 / gfx942 on a machine without one)."""
    if isinstance(target, Target):
        return target
    kind = target.get("kind") if isinstance(target, dict) else getattr(target, "kind", target)
    kind = str(getattr(kind, "name", kind) or "auto")
    arch = target.get("arch") if isinstance(target, dict) else None
    attrs = getattr(target, "attrs", None)
    if arch is None and isinstance(attrs, dict):
        arch = attrs.get("arch")
    found = _ARCH.search(str(arch or kind).lower())
    if found:
        return arch_target(found.group(0))
    if target_kind(target) == "cpu":
        return INTERPRETER
    hip = kind.split()[0].lower() in ("hip", "rocm") if kind.split() else False
    if torch.cuda.is_available() and hip == (torch.version.hip is not None):
        return device_target()
    return KNOWN["gfx942" if hip else "sm_90"]


def arch_target(arch: str) -> Target:
    """The ``Target`` of an architecture name; one not in ``KNOWN`` gets its family's values."""
    arch = arch.lower()
    if arch.startswith("sm_"):
        base = re.sub(r"[af]$", "", arch)
        if base in KNOWN:
            return KNOWN[base]
        n = int(base[3:])
        fp8 = _FP8_ALL if n >= 89 else _FP8_AMPERE
        return Target("cuda", base, 32, (227 if n in (90, 100, 103) else 99) * _KB, 65536, n >= 90, fp8)
    if arch in KNOWN:
        return KNOWN[arch]
    wave = 64 if arch.startswith("gfx9") else 32  # CDNA and GCN: 64-wide wavefronts; RDNA: 32
    return Target("hip", arch, wave, 64 * _KB, 131072, False, _FP8_ALL)


_device_targets: dict[int, Target] = {}


def device_target(index: int | None = None) -> Target:
    """The ``Target`` of a CUDA / ROCm device (the current one by default), read once per device."""
    if index is None:
        index = torch.cuda.current_device()
    found = _device_targets.get(index)
    if found is None:
        props = torch.cuda.get_device_properties(index)
        if torch.version.hip is not None:
            known = arch_target(str(getattr(props, "gcnArchName", "gfx942")).split(":")[0])
        else:
            major, minor = torch.cuda.get_device_capability(index)
            known = arch_target(f"sm_{major}{minor}")
        warp = int(getattr(props, "warp_size", known.warp_size) or known.warp_size)
        smem = int(getattr(props, "shared_memory_per_block_optin", 0) or known.smem)
        regs = int(getattr(props, "regs_per_multiprocessor", 0) or known.regs)
        sms = int(getattr(props, "multi_processor_count", 0) or 0)
        found = Target(known.backend, known.arch, warp, smem, regs, known.tma, known.fp8, sms)
        _device_targets[index] = found
    return found


_warned_fallback = False


def resolve_target(target) -> str | None:
    """``target_kind``, except that ``"cuda"`` on a machine without CUDA follows the tensors
    (Triton's interpreter runs CPU tensors), with a warning on stderr the first time."""
    kind = target_kind(target)
    if kind == "cuda" and not torch.cuda.is_available():
        global _warned_fallback
        if not _warned_fallback:
            _warned_fallback = True
            print(
                f"tile2triton: warning: target {target!r} asks for CUDA, but this machine has no CUDA device; "
                "kernels run on CPU tensors through Triton's interpreter instead (slow: for testing)",
                file=sys.stderr,
            )
        return None
    return kind


def default_interpret() -> bool:
    return not torch.cuda.is_available()


def tensor_descriptors_supported(interpret: bool, target: Target | None = None) -> bool:
    """Tensor-descriptor (TMA) loads: on a target with TMA (NVIDIA sm_90 and newer; ``target``, else
    the current device) with a Triton that has them.  ``TILE2TRITON_TENSOR_DESCRIPTORS=0`` turns them
    off, ``=1`` on (the interpreter runs them too)."""
    forced = settings.current().tensor_descriptors
    if forced is not None:
        return forced
    if interpret or not hasattr(tl, "make_tensor_descriptor"):
        return False
    if target is None:
        if not torch.cuda.is_available():
            return False
        target = device_target()
    return target.tma


def gluon_attention_supported(interpret: bool, target: Target | None = None) -> bool:
    """Attention loops as Gluon (codegen/gluon_attention.py): on Hopper (sm_90, whose wgmma and TMA
    the generated code uses; ``target``, else the current device) with a Triton that has Gluon's
    Hopper module.  ``TILE2TRITON_GLUON=0`` keeps every kernel on the ``tl`` lowering; ``=log``
    reports on stderr which kernels take the Gluon route and why the others do not."""
    if interpret or settings.current().gluon == "off":
        return False
    if target is None:
        if not torch.cuda.is_available():
            return False
        target = device_target()
    if target.arch != "sm_90":
        return False
    try:
        from triton.experimental.gluon.language.nvidia.hopper import tma, warpgroup_mma  # noqa: F401
    except ImportError:
        return False
    return hasattr(tma, "make_tensor_descriptor")


def cuda_device_guard(index: int):
    """Triton launches on the current CUDA device: a context making ``index`` current for the
    launch, or a no-op context when it already is (the common case costs one device query)."""
    if index == torch.cuda.current_device():
        return NULL_CONTEXT
    return torch.cuda.device(index)


def _cuda_workspace(size: int, alignment: int, stream):
    return torch.empty(size, dtype=torch.int8, device="cuda")  # the current device: the launch's


def ensure_allocator() -> None:
    """Device-side tensor descriptors live in a workspace Triton asks an allocator for; install
    one unless the user did (the setting is per thread: a context variable)."""
    if _allocation is not None and _allocation._allocator.get() is _allocation._NULL_ALLOCATOR:
        triton.set_allocator(_cuda_workspace)


def interpret_env_on() -> bool:
    """Is TRITON_INTERPRET=1 set now (a warm interpreted launch then needs no mode switch)?"""
    return settings.current().interpret_env


# ------------------------------------------------------------------------------ compiling offline
def triton_signature(launch) -> dict:
    """The Triton signature of a generated kernel's parameters (``codegen.emit.KernelLaunch``), as
    the JIT would specialize a call: global buffers as typed pointers, scalars by their dtype, the
    scratch area as bytes."""
    from ..ir import Buffer

    types = []
    for a in launch.args:
        name = getattr(tl, a.dtype.triton).name  # fp16, bf16, fp8e4nv; int32, uint8, int1
        if name.startswith(("int", "uint")):
            name = name.replace("uint", "u").replace("int", "i")  # Triton's signature spells i32, u8, i1
        types.append(f"*{name}" if isinstance(a, Buffer) else name)
    for index, box, gluon_dtype in launch_specs(launch):  # host-made tensor descriptors
        element = types[index].lstrip("*")
        layout = "" if gluon_dtype is None else f",{gluon_layout(box, gluon_dtype)!r}"  # a Gluon kernel's
        types.append(f"tensordesc<{element}[{', '.join(str(e) for e in box)}]{layout}>")
    if launch.scratch_param is not None:
        types.append("*i8")
    types += ["constexpr"] * len(launch.multiples)  # the sizes' multiples, last
    return types


def compile_offline(
    module, target, registers_too: bool = True, sizes: dict | None = None, ptx: bool = False
) -> list[dict]:
    """Compile every kernel of a generated module (``codegen.emit.TritonModule``) for ``target``
    with Triton, no GPU needed: per kernel its name, the binary's size in bytes, registers a
    thread, spilled registers and shared memory (bytes), where Triton reports them (registers: the
    AMDGCN metadata, or cuobjdump from Triton's wheel for a cubin; ``registers_too=False`` skips
    them).  ``sizes``: values of size parameters by name (``{"k": 1000}``), specialised as a launch
    with them would be (divisibility by 16, the value 1, ``KernelLaunch.multiples``); a size not
    given is compiled as one of no known divisibility.  ``ptx``: each kernel's PTX too, where there is one."""
    import importlib.util
    import tempfile

    from triton.compiler import ASTSource

    spec_target = parse_target(target)
    gpu = spec_target.gpu_target()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"t2t_offline_{abs(hash(module.source))}.py")
        with open(path, "w") as f:
            f.write(module.source)
        name = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        generated = importlib.util.module_from_spec(spec)
        sys.modules[name] = generated  # Gluon reads a kernel's source through its module
        try:
            spec.loader.exec_module(generated)
            results = []
            for launch in module.launches:
                fn = getattr(generated, launch.name)
                types = triton_signature(launch)
                signature = dict(zip(fn.arg_names, types))
                attrs = {(i,): [["tt.divisibility", 16]] for i, t in enumerate(types) if t.startswith("*")}
                constants = _size_constants(launch, fn.arg_names, signature, attrs, sizes or {})
                source_class = ASTSource
                if type(fn).__module__.startswith("triton.experimental.gluon"):
                    from triton.experimental.gluon._runtime import GluonASTSource as source_class
                compiled = triton.compile(
                    source_class(fn, signature, constants, attrs), target=gpu, options={"num_warps": launch.num_warps}
                )
                binary = compiled.asm.get("cubin") or compiled.asm.get("hsaco") or b""
                registers, spills = _register_usage(compiled, registers_too)
                results.append(
                    {
                        "name": launch.name,
                        "bytes": len(binary),
                        "registers": registers,
                        "spills": spills,
                        "shared": getattr(compiled.metadata, "shared", None),
                    }
                )
                if ptx:
                    results[-1]["ptx"] = compiled.asm.get("ptx")
            return results
        finally:
            sys.modules.pop(name, None)


def _size_constants(launch, names: list, signature: dict, attrs: dict, sizes: dict) -> dict:
    """The constants of an offline compile for the sizes' values in ``sizes`` (by parameter name),
    as a launch specialises them: 1 a constant, a multiple of 16 divisible (``attrs``), and each
    trailing size multiple (``KernelLaunch.multiples``; 1 for a size not given)."""
    constants = {}
    for i, name in enumerate(names[: len(launch.args)]):
        value = sizes.get(name)
        if value is None or signature[name].startswith("*"):
            continue
        if value == 1:
            constants[(i,)] = 1
            signature[name] = "constexpr"
        elif value % 16 == 0:
            attrs[(i,)] = [["tt.divisibility", 16]]
    first = len(names) - len(launch.multiples)
    for k, index in enumerate(launch.multiples):
        value = sizes.get(names[index])
        constants[(first + k,)] = 1 if value is None else size_multiple(value)
    return constants


def _register_usage(compiled, wanted: bool) -> tuple[int | None, int | None]:
    """(registers a thread, spilled registers) of a compiled kernel, where they can be read offline."""
    if not wanted:
        return None, None
    amdgcn = compiled.asm.get("amdgcn")
    if amdgcn:
        regs = re.search(r"\.vgpr_count:\s+(\d+)", amdgcn)
        spills = re.search(r"\.vgpr_spill_count:\s+(\d+)", amdgcn)
        return (int(regs.group(1)) if regs else None), (int(spills.group(1)) if spills else None)
    cubin = compiled.asm.get("cubin")
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    if not cubin or not os.path.exists(tool):
        return None, None
    import subprocess
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        try:
            text = subprocess.run([tool, "-res-usage", f.name], capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.SubprocessError):
            return None, None
    regs = re.search(r"REG:(\d+)", text)
    return (int(regs.group(1)) if regs else None), None
