"""What the hand-variant probes share: a kernel built from an edited source, and the first calls
(twice and stop, under ``ONLY=name``, for Nsight Compute to profile the second)."""

import importlib.util

import torch


def kernel_from_source(src: str, module: str, kernel: str):
    """The @triton.jit function ``kernel`` of ``src``, written to /tmp/``module``.py (Triton reads a
    kernel's source from its file)."""
    path = f"/tmp/{module}.py"
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location(module, path)
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return getattr(loaded, kernel)


def first_calls(run, only: str | None, name: str) -> bool:
    """Run once (compile, outputs); under ``ONLY`` once more, and say the probe is done."""
    run()
    torch.cuda.synchronize()
    if only:
        run()
        torch.cuda.synchronize()
        print("ran", name)
    return bool(only)
