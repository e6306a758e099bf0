"""pytest plugin: also emit the GPU (non-interpreter) source of every kernel the tests build, into
$T2T_GPU_DUMP, with a '# sig:' line, so tools/compile_check.py can compile them for sm_90 offline.

    T2T_GPU_DUMP=/tmp/gpu python -m pytest -p tools.gpu_sources_plugin tests
    python tools/compile_check.py /tmp/gpu/*.py     # with the Triton version to check

With $T2T_INTERP_DUMP set, the interpreter sources go there too (to diff a refactor's output).
"""

import hashlib
import os

from tile2triton import ir
from tile2triton.codegen import emit
from tile2triton.codegen.lower import LoweringOptions

_TRITON = {
    "float16": "fp16",
    "bfloat16": "bf16",
    "float32": "fp32",
    "float64": "fp64",
    "bool": "i1",
    "float8_e4m3fn": "fp8e4nv",
    "float8_e5m2": "fp8e5",
    "float8_e8m0fnu": "u8",  # stored as bytes
    "float4_e2m1fn": "u8",  # two values per byte
    "handle": "i64",  # a raw address (T.ptr), passed as an int
}


def _sig(func, launch):
    parts = []
    for a in launch.args:
        if isinstance(a, ir.Buffer):
            parts.append(f"{a.name}=*{_TRITON.get(a.dtype.name, a.dtype.name.replace('int', 'i').replace('ui', 'u'))}")
        else:
            parts.append(f"{a.name}={_TRITON.get(a.dtype.name, a.dtype.name.replace('int', 'i'))}")
    if launch.scratch_bytes:  # shared buffers in global scratch: the hidden last argument (bytes)
        parts.append(f"{launch.scratch_param}=*u8")
    return " ".join(parts)


_original = emit.emit_module


def emit_module(func, options):
    module = _original(func, options)
    if options.interpret and os.environ.get("T2T_INTERP_DUMP"):
        _dump(module, func, os.environ["T2T_INTERP_DUMP"])
    if options.interpret:
        for descriptors in (False, True):  # Hopper sources use tensor descriptors
            _dump(_original(func, LoweringOptions(interpret=False, tensor_descriptors=descriptors)), func)
    return module


def _dump(gpu, func, out=None) -> None:
    out = out or os.environ.get("T2T_GPU_DUMP", "/tmp/t2t_gpu")
    os.makedirs(out, exist_ok=True)
    digest = hashlib.sha256(gpu.source.encode()).hexdigest()[:16]
    sigs = "\n".join(f"# sig {launch.name}: {_sig(func, launch)}" for launch in gpu.launches)
    with open(os.path.join(out, f"{func.name}_{digest}.py"), "w") as f:
        f.write(gpu.source + "\n" + sigs + "\n")


emit.emit_module = emit_module
try:
    from tile2triton.runtime import kernel as _kernel

    _kernel.emit_module = emit_module
except ImportError:
    pass
