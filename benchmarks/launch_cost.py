"""Host cost of a launch: tile2triton's call vs plain Triton ``kernel[grid](...)``.

On the GPU (under a minute):

    PYTHONPATH=. python3 benchmarks/launch_cost.py

Two kernels small enough that the GPU waits on the host: a copy of one 256-element block, and
a prim_func of three such kernels (three ``T.Kernel`` blocks, so three launches per call).  Each
row is the CUDA-event time of 1000 back-to-back calls divided by 1000 (median of 5 rounds):
what a user's loop pays per call.  Rows:

  triton fn[grid](a, b)            plain Triton, output preallocated
  triton torch.empty + fn[grid]    what a call that returns its output must do at least
  tile2triton kernel(a)            the generated launcher, launches through DirectLaunch
  tile2triton via JITFunction.run  the same with every launch through ``fn.run`` (the path before)

``--host-only`` (any machine, no GPU needed) measures one launch's Python on this host: Triton's
``JITFunction.run`` against ``runtime.launcher.DirectLaunch``, both ending in a no-op launcher
(``FakeDriver`` below stands in for the CUDA driver; Triton compiles for sm_90 offline).
``fake_cuda`` goes further, for whole calls (tests, benchmarks/call_cost.py ``--host-only``): CPU
tensors pass for CUDA tensors, so ``kernel(...)`` takes its GPU path down to a no-op C launch.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch

import tile2triton as tilelang
import tile2triton.language as T

BLOCK = 256


@tilelang.jit(out_idx=[-1])
def copy(N):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, BLOCK), threads=128) as bx:
            T.copy(A[bx * BLOCK : bx * BLOCK + BLOCK], B[bx * BLOCK : bx * BLOCK + BLOCK])

    return main


@tilelang.jit(out_idx=[-1])
def three_kernels(N):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32), C: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, BLOCK), threads=128) as bx:
            for i in T.Parallel(BLOCK):
                B[bx * BLOCK + i] = A[bx * BLOCK + i] + 1.0
        with T.Kernel(T.ceildiv(N, BLOCK), threads=128) as bx:
            for i in T.Parallel(BLOCK):
                B[bx * BLOCK + i] = B[bx * BLOCK + i] * 2.0
        with T.Kernel(T.ceildiv(N, BLOCK), threads=128) as bx:
            for i in T.Parallel(BLOCK):
                C[bx * BLOCK + i] = B[bx * BLOCK + i] - 1.0

    return main


# ----------------------------------------------------------------------------- a driver for the CPU
class _NoLaunch:
    """Triton's CudaLauncher stand-in: calls the launch hooks, launches nothing (records into ``calls`` if set)."""

    def __init__(self, src, metadata):
        self.calls = None

    def __call__(self, gx, gy, gz, stream, function, packed_metadata, launch_metadata, enter, leave, *args):
        if enter is not None:  # as the C launcher: the hooks around the launch
            enter(launch_metadata)
        if self.calls is not None:
            self.calls.append(((gx, gy, gz), function, args))
        if leave is not None:
            leave(launch_metadata)


class FakeDriver:
    """Enough of Triton's CUDA driver for ``JITFunction.run`` on a machine without a GPU: compiles
    for sm_90 (Triton does that offline), "loads" the binary and launches nothing."""

    launcher_cls = _NoLaunch

    class utils:  # noqa: N801 - Triton's attribute name
        @staticmethod
        def load_binary(name, kernel, shared, device):
            return (1, hash(kernel) & 0xFFFFFF, 32, 0, 1024)  # module, function (one per binary), regs, spills, threads

        @staticmethod
        def get_device_properties(device):
            return {"max_shared_mem": 232448, "multiprocessor_count": 132}

    def get_current_target(self):
        from triton.backends.compiler import GPUTarget

        return GPUTarget("cuda", 90, 32)

    def get_current_device(self):
        return 0

    def get_current_stream(self, device):
        return 0

    def get_active_torch_device(self):
        return torch.device("cpu")


class fake_driver:
    """``with fake_driver():`` Triton's active driver is a ``FakeDriver``."""

    def __enter__(self):
        from triton.runtime.driver import driver

        self.saved = driver._active
        driver.set_active(FakeDriver())
        return driver.active

    def __exit__(self, *exc):
        from triton.runtime.driver import driver

        driver._active = self.saved


class _WrappedLaunch:
    """A CudaLauncher built as Triton builds one: its C launch (a no-op here) wrapped by Triton's own
    ``wrap_handle_tensordesc``, which expands each ``TensorDescriptor`` argument through
    ``make_tensordesc_arg``, so ``runtime.host_descriptors.EncodedDescriptors`` finds the structure
    it caches on (Triton 3.9's CUDA backend; its tensormaps encoded by ``_fill_tiled``)."""

    calls: list | None = None  # set to a list: each launch's kernel arguments as the C launch gets them

    def __init__(self, src, metadata):
        from triton.backends.nvidia import driver as nvidia

        meta = getattr(metadata, "tensordesc_meta", None)
        self.launch = nvidia.wrap_handle_tensordesc(self._c_launch, dict(src.signature.items()), meta)

    @staticmethod
    def _c_launch(*args):
        if _WrappedLaunch.calls is not None:  # Triton 3.9's C launch: the kernel's arguments last
            _WrappedLaunch.calls.append(tuple(args[-1]))

    def __call__(self, gx, gy, gz, stream, function, packed, launch_metadata, enter, leave, *args):
        self.launch(gx, gy, gz, stream, function, 0, 0, packed, launch_metadata, enter, leave, None, None, None, None, args)  # fmt: skip


def _fill_tiled(ptr, swizzle, elem_size, elem_type, block, shape, strides, padding):
    """cuTensorMapEncodeTiled's stand-in: a value holding every input, so equal maps compare equal."""
    return ("tensormap", ptr, swizzle, elem_size, elem_type, tuple(block), tuple(shape), tuple(strides), padding)


_FILLS = ("fill_tma_descriptor_tiled", "fill_tma_descriptor")  # Triton 3.9's name, 3.6's


class fake_cuda:
    """``with fake_cuda():`` tile2triton's GPU call path on a machine without one, for host profiles:
    CPU tensors pass for tensors on CUDA device 0 (``is_cuda``, ``get_device``, ``current_device``),
    Triton's driver is a ``FakeDriver`` whose launches do nothing, descriptors are on
    (``TILE2TRITON_TENSOR_DESCRIPTORS=1``, as on sm_90).  The patched tensor properties are Python
    functions, slower than torch's own: absolute numbers run high, the calls' costs compare.

    ``h200=True`` also makes ``torch.cuda.is_available()`` true and the device's target sm_90, so
    the runtime lowers and launches as on the H200 (its launch choices, the passes the target
    enables, the shared-memory fit); without it a kernel takes the literal launch choice."""

    def __init__(self, h200: bool = False):
        self.h200 = h200

    def __enter__(self):
        import os

        from tile2triton.runtime import target

        self.saved = (torch.cuda.current_device, os.environ.get("TILE2TRITON_TENSOR_DESCRIPTORS"))
        self.saved_target = (torch.cuda.is_available, dict(target._device_targets))
        if self.h200:
            torch.cuda.is_available = lambda: True
            target._device_targets[0] = target.arch_target("sm_90")
        os.environ["TILE2TRITON_TENSOR_DESCRIPTORS"] = "1"
        torch.Tensor.is_cuda = property(lambda self: True)
        torch.Tensor.is_cpu = property(lambda self: False)
        torch.Tensor.get_device = lambda self: 0
        torch.cuda.current_device = lambda: 0
        self.driver = fake_driver()
        drv = self.driver.__enter__()
        drv.launcher_cls = _WrappedLaunch
        self.utils = {name: getattr(drv.utils, name, None) for name in _FILLS}
        for name in _FILLS:
            setattr(drv.utils, name, _fill_tiled)
        return drv

    def __exit__(self, *exc):
        import os

        for name, value in self.utils.items():  # FakeDriver.utils is a class: leave it as it was
            if value is None:
                delattr(FakeDriver.utils, name)
            else:
                setattr(FakeDriver.utils, name, value)
        self.driver.__exit__(*exc)
        del torch.Tensor.is_cuda, torch.Tensor.is_cpu, torch.Tensor.get_device
        torch.cuda.current_device, env = self.saved
        from tile2triton.runtime import target

        torch.cuda.is_available = self.saved_target[0]
        target._device_targets.clear()
        target._device_targets.update(self.saved_target[1])
        if env is None:
            os.environ.pop("TILE2TRITON_TENSOR_DESCRIPTORS", None)
        else:
            os.environ["TILE2TRITON_TENSOR_DESCRIPTORS"] = env


def _per_call_us(fn, n: int) -> float:
    fn()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def host_only(n: int) -> int:
    from tile2triton.runtime.kernel import JITKernel
    from tile2triton.runtime.launcher import DirectLaunch

    a, b = torch.randn(BLOCK), torch.empty(BLOCK)
    with fake_driver():
        lowered = copy(BLOCK)._compile(False)  # noqa: SLF001 - the GPU lowering's Triton function
        fn, _, _, _, num_warps = lowered.launches[0]
        direct = DirectLaunch.of(fn, num_warps)
        key = (0, True)
        rows = {
            "JITFunction.run(a, b, grid=...)": lambda: fn.run(a, b, grid=(1,), warmup=False, num_warps=num_warps),
            "DirectLaunch (key as the generated launcher builds it)": lambda: direct(
                (1, 1, 1), (0, a.data_ptr() % 16 == 0), (a, b)
            ),
            "DirectLaunch, key given": lambda: direct((1, 1, 1), key, (a, b)),
            "DirectLaunch, generic key (the generic path)": lambda: direct(
                (1, 1, 1), (direct.generic_device(), "generic", *direct.generic_parts([a, b])), (a, b)
            ),
        }
        # the three kernels of one prim_func through the generic path's _launch (a warm GPU lowering)
        three = three_kernels(BLOCK)._compile(False)  # noqa: SLF001
        three.warm = True
        slots = [a, b, torch.empty(BLOCK)]
        JITKernel._launch(three, slots, {})  # noqa: SLF001 - the launch loop itself

        def through_run():
            with _through_run():
                JITKernel._launch(three, slots, {})  # noqa: SLF001

        rows["3-kernel prim_func: JITKernel._launch, each launch via JITFunction.run"] = through_run
        rows["3-kernel prim_func: JITKernel._launch, DirectLaunch"] = lambda: JITKernel._launch(three, slots, {})  # noqa: SLF001
        t = {name: statistics.median(_per_call_us(f, n) for _ in range(5)) for name, f in rows.items()}
    print(f"# one call's launch Python on this host (no-op launcher), median of 5 x {n} calls")
    print("| launch | us per call |\n|---|---|")
    for name, us in t.items():
        print(f"| {name} | {us:.2f} |")
    return 0


# ----------------------------------------------------------------------------- the GPU
def _event_us(fn, calls: int = 1000, rounds: int = 5) -> float:
    """CUDA-event time of ``calls`` back-to-back calls / calls, median of ``rounds``."""
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3 / calls)
    return statistics.median(samples)


class _through_run:
    """Every DirectLaunch goes through ``JITFunction.run``, as every launch did before it."""

    def __enter__(self):
        from tile2triton.runtime import launcher

        self.saved = launcher.DirectLaunch.__call__

        def call(direct, grid, key, args):
            if direct.scratch_bytes:
                args = (*args, launcher.scratch_tensor(direct.scratch_bytes, grid, args[0].device))
            direct.fn.run(*args, grid=grid, warmup=False, num_warps=direct.num_warps)

        launcher.DirectLaunch.__call__ = call

    def __exit__(self, *exc):
        from tile2triton.runtime import launcher

        launcher.DirectLaunch.__call__ = self.saved


def gpu() -> int:
    import triton

    a = torch.randn(BLOCK, device="cuda")
    b = torch.empty(BLOCK, device="cuda")
    print(f"# {torch.cuda.get_device_name()}; torch {torch.__version__}; triton {triton.__version__}")
    print("# us per call: CUDA-event time of 1000 back-to-back calls / 1000, median of 5 rounds")
    print("| case | triton fn[grid](preallocated) | triton torch.empty + fn[grid] | tile2triton | "
          "tile2triton via JITFunction.run | tile2triton / triton+empty |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    cases = (("copy, 1 kernel", copy(BLOCK), (a,)), ("3 kernels", three_kernels(BLOCK), (a, b)))
    for name, kernel, inputs in cases:
        ref = kernel(*inputs)
        lowered = kernel._compile(False)  # noqa: SLF001 - its Triton functions, launched directly
        launches = [(fn, grid, positions, nw) for fn, grid, _, positions, nw in lowered.launches]
        fixed = [*inputs, torch.empty(BLOCK, device="cuda")]  # the parameters, the output preallocated

        def plain_pre():
            for fn, grid, positions, nw in launches:
                fn[grid](*[fixed[k] for k in positions], num_warps=nw)

        def plain_empty():
            slots = [*inputs, torch.empty(BLOCK, device="cuda")]
            for fn, grid, positions, nw in launches:
                fn[grid](*[slots[k] for k in positions], num_warps=nw)

        t_pre, t_empty = _event_us(plain_pre), _event_us(plain_empty)
        t_t2t = _event_us(lambda: kernel(*inputs))
        with _through_run():
            t_run = _event_us(lambda: kernel(*inputs))
        assert torch.equal(kernel(*inputs), ref)
        print(f"| {name} | {t_pre:.2f} | {t_empty:.2f} | {t_t2t:.2f} | {t_run:.2f} | {t_t2t / t_empty:.2f} |")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host-only", action="store_true", help="no GPU: one launch's Python, no-op launcher")
    parser.add_argument("--n", type=int, default=5000, help="--host-only: calls per round")
    args = parser.parse_args(argv)
    if args.host_only or not torch.cuda.is_available():
        return host_only(args.n)
    return gpu()


if __name__ == "__main__":
    sys.exit(main())
