"""Compile generated Triton modules for sm_90 without a GPU (catches Triton-version errors).

Usage: python tools/compile_check.py FILE.py [FILE.py ...]   (run with the Triton version to check)
Every @triton.jit function is compiled with pointer arguments of the dtype named in a trailing
'# sig:' comment if present, else float32 pointers and int32 scalars.  ``num_warps=N`` /
``num_stages=N`` on the command line set Triton's compile options (defaults: Triton's); each
kernel's line reports the shared memory Triton allocates for it (``compiled.metadata.shared``).
"""

import importlib.util
import sys
import traceback

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


def file_signatures(path: str) -> dict:
    sigs = {}
    for line in open(path):
        if line.startswith("# sig "):
            name, rest = line[len("# sig ") :].split(":", 1)
            sigs[name.strip()] = dict(p.split("=", 1) for p in rest.split())
    return sigs


def check(path: str, sig: dict, options: dict | None = None) -> bool:
    per_kernel = file_signatures(path)
    spec = importlib.util.spec_from_file_location("m", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ok = True
    for name in dir(mod):
        fn = getattr(mod, name)
        if not isinstance(fn, triton.runtime.jit.JITFunction) or name.startswith("_"):
            continue
        given = per_kernel.get(name, sig)
        # a tl.constexpr parameter (a size multiple, TILE2TRITON_SIZE_MULTIPLES) takes the sig's number, else 1
        constexprs = {a: int(given.get(a, 1)) for a, p in zip(fn.arg_names, fn.params) if p.is_constexpr}
        signature = {a: "constexpr" if a in constexprs else given.get(a, "*fp32") for a in fn.arg_names}
        try:
            # as the JIT specializes 16-byte-aligned pointers
            attrs = {
                (i,): [["tt.divisibility", 16]] for i, a in enumerate(fn.arg_names) if signature[a].startswith("*")
            }
            constants = {(fn.arg_names.index(a),): v for a, v in constexprs.items()}
            compiled = triton.compile(
                ASTSource(fn, signature, constants, attrs), target=GPUTarget("cuda", 90, 32), options=options or {}
            )
            print("ok  ", path, name, f"shared={compiled.metadata.shared}")
        except Exception:
            ok = False
            print("FAIL", path, name)
            print("".join(traceback.format_exc(limit=-2).splitlines(True)[-6:]))
    return ok


if __name__ == "__main__":
    sigs = {}
    options = {}
    files = []
    for arg in sys.argv[1:]:
        if "=" in arg:
            k, v = arg.split("=", 1)
            if k in ("num_warps", "num_stages"):
                options[k] = int(v)
            else:
                sigs[k] = v
        else:
            files.append(arg)
    results = [check(f, sigs, options) for f in files]
    sys.exit(0 if all(results) else 1)
