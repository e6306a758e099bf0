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


def fresh(jit) -> None:
    """Forget the kernels a tile2triton ``@jit`` made, so that the next call or compile makes a new one (one that
    takes a launch choice forced since): its call and kernel caches, an eager-style kernel's own, and an
    ``@autotune`` wrapper's chosen configuration (session 38's version cleared only ``_kernels``, and session 43's
    sweep first missed the eager caches: every choice ran the default)."""
    inner = getattr(jit, "jit_impl", jit)  # an @autotune wrapper: its @jit
    for owner in (inner, getattr(inner, "_eager", None)):
        for name in ("_calls", "_kernels", "_plans", "_fast", "_keyword_calls", "_pickers"):
            cache = getattr(owner, name, None)
            if isinstance(cache, dict):
                cache.clear()
    getattr(jit, "_best", {}).clear()


def first_calls(run, only: str | None, name: str) -> bool:
    """Run once (compile, outputs); under ``ONLY`` once more, and say the probe is done."""
    run()
    torch.cuda.synchronize()
    if only:
        run()
        torch.cuda.synchronize()
        print("ran", name)
    return bool(only)
