"""Helpers shared by the tile2triton execution tests (imported as ``from t2t_util import ...``)."""

import importlib.util
import pathlib

import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent

_INT_SENTINEL = {
    torch.int8: -77,
    torch.uint8: 201,
    torch.int16: -7777,
    torch.int32: -123456789,
    torch.int64: -123456789,
}


def in_scratch(src: str) -> bool:
    """Does generated source keep a shared buffer in scratch (codegen/scratch.py): global memory
    (the hidden ``scratch_ptr`` argument) or, on CUDA, the on-chip array?"""
    return "scratch_ptr" in src or ".b8 t2t_scratch[" in src


def poison(shape, dtype=torch.float32, device="cpu"):
    """A tensor whose every element is NaN (floats) or an unlikely sentinel (ints/bool),
    so that any element the kernel fails to write is caught."""
    if dtype.is_floating_point:
        return torch.full(shape, float("nan"), dtype=dtype, device=device)
    if dtype == torch.bool:
        # no sentinel exists for bool; callers compare against the complement of the expected value
        return torch.zeros(shape, dtype=dtype, device=device)
    return torch.full(shape, _INT_SENTINEL[dtype], dtype=dtype, device=device)


class Guarded:
    """An output tensor that is a view at the start of a larger allocation whose tail holds a
    sentinel: a store past the end of the tensor lands in the tail and is detected by check()."""

    TAIL = 8192

    def __init__(self, shape, dtype=torch.float32, device="cpu", fill=float("nan"), sentinel=7.25):
        n = 1
        for s in shape:
            n *= s
        self.n = n
        self.sentinel = sentinel
        self.storage = torch.full((n + self.TAIL,), sentinel, dtype=dtype, device=device)
        self.tensor = self.storage[:n].view(*shape)
        self.tensor.fill_(fill)

    def check_tail(self):
        tail = self.storage[self.n :]
        bad = (tail != self.sentinel).sum().item()
        assert bad == 0, f"{bad} element(s) written past the end of the output tensor"


def assert_close(out, ref, atol, rtol, msg=""):
    """Compare every element of ``out`` (any device/dtype) with ``ref`` in float64; NaN fails."""
    assert tuple(out.shape) == tuple(ref.shape), f"shape {tuple(out.shape)} != {tuple(ref.shape)} {msg}"
    o = out.detach().cpu().to(torch.float64)
    r = ref.detach().cpu().to(torch.float64)
    torch.testing.assert_close(
        o, r, atol=atol, rtol=rtol, equal_nan=False, msg=(lambda m: f"{m}\n{msg}") if msg else None
    )


def assert_equal(out, ref):
    """Exact comparison (integers, bools, copies)."""
    assert tuple(out.shape) == tuple(ref.shape), f"shape {tuple(out.shape)} != {tuple(ref.shape)}"
    o = out.detach().cpu()
    r = ref.detach().cpu().to(o.dtype)
    if o.dtype.is_floating_point:
        assert not torch.isnan(o).any(), f"{torch.isnan(o).sum().item()} NaN element(s) (unwritten?)"
    mism = o != r
    assert not mism.any(), (
        f"{mism.sum().item()} mismatching element(s); first at {mism.nonzero()[0].tolist()}: {o[tuple(mism.nonzero()[0])]} != {r[tuple(mism.nonzero()[0])]}"
    )


def gemm_tol(dtype, device):
    """(atol, rtol) for a gemm with fp32 accumulation, given operand dtype and device."""
    if dtype in (torch.float16, torch.bfloat16):
        return 1e-2, 1e-2
    if dtype == torch.float32:
        # TileLang (and tl.dot by default) use TF32 on NVIDIA GPUs; the interpreter is exact fp32.
        return (5e-2, 5e-2) if str(device).startswith("cuda") else (1e-4, 1e-4)
    return 0, 0


def load_example(name):
    """Import examples/<name>.py as a module (examples/ is not a package)."""
    path = ROOT / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"t2t_example_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def compile_gluon_for_hopper(module, tmp_path, arg_type="*fp16", arg_types=None):
    """Compile a generated Gluon module's kernel for sm_90 with the installed Triton (no GPU
    needed): every argument a pointer of ``arg_type`` unless ``arg_types`` names it."""
    import sys

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    name = f"generated_gluon_{tmp_path.name}"
    path = tmp_path / f"{name}.py"
    path.write_text(module.source)
    spec = importlib.util.spec_from_file_location(name, path)
    generated = importlib.util.module_from_spec(spec)
    sys.modules[name] = generated  # Gluon reads the kernel's source through its module
    spec.loader.exec_module(generated)
    kernel = getattr(generated, module.launches[0].name)
    signature = {a: (arg_types or {}).get(a, arg_type) for a in kernel.arg_names}
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(len(kernel.arg_names))}
    return triton.compile(
        GluonASTSource(kernel, signature, {}, attrs), target=GPUTarget("cuda", 90, 32), options={"num_warps": 4}
    )


def gluon_descriptor_types(launch) -> dict:
    """Per host-made descriptor parameter of a generated Gluon launch, the type Triton's JIT gives
    the descriptor the runtime passes (a Gluon ``TensorDescriptor`` of the parameter's shape and
    dtype, with the default shared layout of its box), for ``compile_gluon_for_hopper``."""
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    from triton.runtime.jit import mangle_type

    types = {}
    for name, index, box in launch.host_descriptors:
        buf = launch.args[index]
        t = torch.empty([int(d) for d in buf.shape], dtype=getattr(torch, buf.dtype.triton))
        layout = gl.NVMMASharedLayout.get_default_for(list(box), getattr(gl, buf.dtype.triton))
        types[name] = mangle_type(TensorDescriptor(t, list(t.shape), list(t.stride()), list(box), layout))
    return types


_SM90_PTX = """
import importlib.util, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
spec = importlib.util.spec_from_file_location("m", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
sig = dict(p.split("=", 1) for p in sys.argv[2].split())
k = triton.compile(ASTSource(getattr(m, sys.argv[3]), sig, {}), target=GPUTarget("cuda", 90, 32),
                   options={"num_warps": int(sys.argv[4])})
assert k.asm["cubin"]
sys.stdout.write(k.asm["ptx"])
"""


def sm90_ptx(module, sig: str, tmp_path) -> str:
    """The PTX of a generated module's (one) kernel compiled for sm_90 by the installed Triton, with
    ptxas assembling it too (no GPU needed), in a fresh process (the interpreter patches
    triton.language).  ``sig``: ``name=type`` per parameter, space-separated."""
    import os
    import subprocess
    import sys

    (launch,) = module.launches
    path = tmp_path / "gpu_source.py"
    path.write_text(module.source)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", _SM90_PTX, str(path), sig, launch.name, str(launch.num_warps)],
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout
