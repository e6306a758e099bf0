"""GPU launches through Triton's compiled kernel (runtime/launcher.py, ``DirectLaunch``), checked on
the CPU: a stand-in driver (benchmarks/launch_cost.py's ``FakeDriver``) lets Triton compile for
sm_90 and records what each launch would pass to the CUDA launcher.  The direct path must pass
what ``JITFunction.run`` passes, pick the kernel ``JITFunction.run`` would pick for every
specialisation, and step aside for launch hooks."""

import importlib.util
import pathlib
from types import SimpleNamespace

import pytest
import torch
from triton import knobs

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.runtime.kernel import JITKernel
from tile2triton.runtime.launcher import launch_entry, scalar_key

ROOT = pathlib.Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("launch_cost_bench", ROOT / "benchmarks" / "launch_cost.py")
launch_cost = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(launch_cost)

BLOCK = 64


@tilelang.jit
def scaled_steps(N, block=BLOCK):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32), s: T.float32, n: T.int32):
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] * s
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = B[bx * block + i] + n

    return main


CALLS: list = []  # one list for the module: Triton keeps each compiled kernel's launcher for the process


class _Recording(launch_cost._NoLaunch):
    def __init__(self, src, metadata):
        self.calls = CALLS


@pytest.fixture
def recorded():
    """A fake CUDA driver whose launchers record their launches into the list this yields."""
    CALLS.clear()
    with launch_cost.fake_driver() as drv:
        drv.launcher_cls = _Recording
        yield CALLS


def _direct(kernel) -> tuple:
    lowered = kernel._compile(False)  # the GPU lowering: JITFunctions, compiled by Triton for sm_90
    return lowered, [d for d in lowered.direct]


def test_direct_launch_passes_what_jit_run_passes(recorded):
    lowered, directs = _direct(scaled_steps(150))
    fn, _, _, _, num_warps = lowered.launches[0]
    a, b = torch.randn(150), torch.full((150,), float("nan"))
    fn.run(a, b, 0.5, 7, grid=(3, 1, 1), warmup=False, num_warps=num_warps)
    via_run = recorded.pop()
    d = directs[0]
    d((3, 1, 1), (0, True, scalar_key(0.5), scalar_key(7)), (a, b, 0.5, 7))  # a miss: through JITFunction.run
    assert recorded.pop() == via_run and len(d.kernels) == 1
    d((3, 1, 1), (0, True, scalar_key(0.5), scalar_key(7)), (a, b, 0.5, 7))  # a hit: straight to the launcher
    assert recorded.pop() == via_run


@pytest.mark.parametrize("n", [1, 16, 7, 2**31 + 5, -3])
def test_each_specialisation_launches_the_kernel_jit_run_picks(recorded, n):
    """A misaligned view and ints Triton specialises (1, multiples of 16, i64) get their own kernels."""
    lowered, directs = _direct(scaled_steps(150))
    fn, _, _, _, num_warps = lowered.launches[0]
    base = torch.randn(151)
    b = torch.empty(150)
    d = directs[0]
    for a in (base[:150], base[1:]):  # aligned, then 4 bytes off
        for _ in range(2):  # the second call hits the remembered kernel
            key = (0, a.data_ptr() % 16 == 0, scalar_key(0.5), scalar_key(n))
            d((3, 1, 1), key, (a, b, 0.5, n))
            direct_call = recorded.pop()
            fn.run(a, b, 0.5, n, grid=(3, 1, 1), warmup=False, num_warps=num_warps)
            assert recorded.pop() == direct_call
    # one kernel per alignment, each the one JITFunction.run launches (the fake function handle
    # differs per binary)
    mine = [k for key, k in d.kernels.items() if key[3] == scalar_key(n)]
    assert len(mine) == 2 and mine[0].hash != mine[1].hash


def test_launch_hooks_take_jit_run(recorded):
    lowered, directs = _direct(scaled_steps(100))
    slots = [torch.randn(100), torch.empty(100), 0.5, 3]
    args = tuple(slots[k] for k in lowered.launches[1][3])
    d = directs[1]
    key = (0, *[x.data_ptr() % 16 == 0 if isinstance(x, torch.Tensor) else scalar_key(x) for x in args])
    d((2, 1, 1), key, args)
    seen = []
    hook = lambda metadata: seen.append(metadata.get()["name"])
    knobs.runtime.launch_enter_hook.add(hook)
    try:
        d((2, 1, 1), key, args)
    finally:
        knobs.runtime.launch_enter_hook.remove(hook)
    assert len(seen) == 1  # the hook saw the launch: it went through JITFunction.run
    d((2, 1, 1), key, args)  # hook removed: direct again
    assert len(recorded) == 3 and len(seen) == 1 and recorded[0] == recorded[1] == recorded[2]


def test_generic_path_launches_every_kernel_directly(recorded):
    """JITKernel._launch (the generic path) on a warm GPU lowering: both kernels of a two-kernel
    prim_func, the same launches on a miss and on a hit, and the same as JITFunction.run's."""
    kernel = scaled_steps(150)
    lowered = kernel._compile(False)
    lowered.warm = True
    a, b = torch.randn(150), torch.empty(150)
    slots = [a, b, 0.5, 4]
    for _ in range(2):
        JITKernel._launch(lowered, slots, {})
    first, second = recorded[:2], recorded[2:]
    assert first == second and len(first) == 2
    recorded.clear()
    for fn, grid, _, positions, num_warps in lowered.launches:
        fn.run(*[slots[k] for k in positions], grid=grid, warmup=False, num_warps=num_warps)
    assert recorded == first
    assert all(sum(k[1] == "generic" for k in d.kernels) == 1 for d in lowered.direct)


def test_interpreted_lowering_has_no_direct_launch():
    assert all(d is None for d in scaled_steps(150)._compile(True).direct)


@pytest.mark.parametrize(
    "make, keys",
    [
        # two kernels, each passed every parameter: the tensors' alignment (one part) and the scalars, one key
        (lambda: scaled_steps(150), ["(dev, aligned0, key_a2, key_a3, )"]),
        # an output (fresh from torch.empty, aligned) is not in the key
        (lambda: launch_cost.copy(300), ["(dev, aligned0, )"]),
    ],
)
def test_generated_launcher_keys_gpu_launches(make, keys):
    """The generated launcher's GPU branch launches every kernel through DirectLaunch, the key
    parts computed once per call."""
    from tile2triton.runtime.launcher import generate_launcher

    kernel = make()
    lowered = kernel._compile(False)
    lowered.warm = True
    src = generate_launcher(kernel._plan, {False: lowered}, kernel._call).source
    lines = [line.strip() for line in src.splitlines()]
    # twice: launched on the current device, or under a guard making the tensors' device current
    found = [line.split(" = ", 1)[1] for line in lines if line.startswith("key") and line[3].isdigit()]
    assert found == keys * 2, src
    assert "p0 = a0.data_ptr()" in lines, src
    assert (
        "aligned0 = p0 % 16 == 0" in lines or "aligned0 = (p0 | p1) & 15 == 0 or (p0 % 16 == 0, p1 % 16 == 0)" in lines
    ), src
    # each launch by address (the tensors as the ints read once), then through __call__ where that declines
    by_address = [line for line in lines if line.startswith("if not direct")]
    assert len(by_address) == 2 * len(lowered.launches), src
    assert all(".launch_addresses(" in line and ", key0, (p0, p1, a2, a3, )" in line for line in by_address) or (
        all(", key0, (p0, p1, )" in line for line in by_address)
    ), src
    launches = [line for line in lines if line.startswith("direct")]
    assert len(launches) == 2 * len(lowered.launches) and all(", key0, (a0, " in line for line in launches), src


def test_launch_by_address_passes_the_addresses(recorded):
    """DirectLaunch.launch_addresses: once the key's kernel is known, the launch __call__ makes with
    each tensor as its address; on a miss or under a launch hook it launches nothing (False)."""
    lowered, directs = _direct(scaled_steps(150))
    a, b = torch.randn(150), torch.full((150,), float("nan"))
    d = directs[0]
    key = (0, True, scalar_key(0.5), scalar_key(7))
    by_address = (a.data_ptr(), b.data_ptr(), 0.5, 7)
    d.kernels.pop(key, None)  # the lowering is the jit cache's: an earlier test may have launched it
    d.entries.pop(key, None)
    assert d.launch_addresses((3, 1, 1), key, by_address) is False and not recorded  # a miss
    d((3, 1, 1), key, (a, b, 0.5, 7))
    grid, function, args = recorded.pop()
    assert d.launch_addresses((3, 1, 1), key, by_address) is True
    assert recorded.pop() == (grid, function, by_address) and args[2:] == by_address[2:]
    hook = lambda metadata: None
    knobs.runtime.launch_enter_hook.add(hook)
    try:
        assert d.launch_addresses((3, 1, 1), key, by_address) is False and not recorded
    finally:
        knobs.runtime.launch_enter_hook.remove(hook)


@pytest.mark.parametrize("keep", ["1", "0"])
def test_scratch_kernel_gets_its_scratch_area(recorded, monkeypatch, keep):
    """A kernel with its shared buffers in global scratch: the direct launch appends the area
    (programs x bytes per program), as WithScratch.run does; kept between launches on one stream
    (TILE2TRITON_KEEP_WORKSPACES), else one per launch."""
    monkeypatch.setenv("TILE2TRITON_KEEP_WORKSPACES", keep)
    monkeypatch.setenv("TILE2TRITON_SHARED_SCRATCH", "1")
    monkeypatch.setenv("TILE2TRITON_ON_CHIP_SCRATCH", "0")  # global memory: the on-chip area is no argument

    @tilelang.jit(out_idx=[-1])
    def staged(N, block=32):
        @T.prim_func
        def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
            with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
                S = T.alloc_shared((block,), T.float32)
                T.copy(A[bx * block], S)
                T.copy(S, B[bx * block])

        return main

    lowered = staged(90)._compile(False)
    d = lowered.direct[0]
    assert d is not None and d.scratch_bytes > 0
    a, b = torch.randn(90), torch.empty(90)
    for _ in range(2):  # a miss (JITFunction.run through WithScratch's argument), then a hit
        d((3, 1, 1), (0, True), (a, b))
    for grid, _, args in recorded:
        assert grid == (3, 1, 1) and args[:2] == (a, b)
        assert args[2].dtype == torch.uint8 and args[2].numel() == 3 * d.scratch_bytes
    assert len(recorded) == 2
    assert (recorded[0][2][2] is recorded[1][2][2]) == (keep == "1")


def test_host_descriptors_follow_the_kernels_arguments(recorded, monkeypatch):
    """TILE2TRITON_HOST_DESCRIPTORS=1: the direct launch builds each TMA descriptor from the
    call's tensor (its shape, strides and the box) and passes it after the kernel's own
    arguments, on a miss (JITFunction.run) and on a hit alike."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    monkeypatch.setenv("TILE2TRITON_TENSOR_DESCRIPTORS", "1")
    monkeypatch.setenv("TILE2TRITON_HOST_DESCRIPTORS", "1")
    monkeypatch.setenv("TILE2TRITON_TMA_MIN_TRIPS", "0")

    @tilelang.jit(out_idx=[-1])
    def row_blocks(M, N, block=16):
        @T.prim_func
        def main(A: T.Tensor((M, N), T.float16), B: T.Tensor((block, N), T.float32)):
            with T.Kernel(1, threads=128) as bx:
                S = T.alloc_shared((block, N), T.float16)
                acc = T.alloc_fragment((block, N), T.float32)
                T.clear(acc)
                for k in T.Pipelined(T.ceildiv(M, block), num_stages=2):
                    T.copy(A[k * block, 0], S)
                    for i, j in T.Parallel(block, N):
                        acc[i, j] += S[i, j]
                T.copy(acc, B[bx * block, 0])

        return main

    lowered = row_blocks(80, 32)._compile(False)
    assert "make_tensor_descriptor" not in lowered.module.source
    d = lowered.direct[0]
    assert d is not None and d.descriptors == ((0, (16, 32), None),)
    a, b = torch.randn(80, 32).half(), torch.empty(16, 32)
    for _ in range(2):  # a miss, then a hit
        d((1, 1, 1), (0, True, True), (a, b))
    assert len(recorded) == 2
    for grid, _, args in recorded:
        desc = args[2]
        assert grid == (1, 1, 1) and args[:2] == (a, b) and isinstance(desc, TensorDescriptor)
        assert desc.base is a and list(desc.shape) == [80, 32] and list(desc.strides) == [32, 1]
        assert list(desc.block_shape) == [16, 32]


@tilelang.jit(out_idx=[-1])
def dyn_add(block=16):
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    B[bx * block + i] = A[bx * block + i] + 1.0

    return main


def test_generated_size_keys_pick_the_kernels_jit_run_picks():
    """A size read from a shape is keyed inline (what Triton specialises an int on: 1, a multiple
    of 16, i32 or i64): through the generated launcher (CUDA faked), every size launches the kernel
    ``JITFunction.run`` picks for it."""
    CALLS.clear()
    with launch_cost.fake_cuda() as drv:
        drv.launcher_cls = _Recording
        kernel = JITKernel(dyn_add().prim_func)
        sizes = [1, 16, 7, 17, 32, 48, 1, 16]
        for n in sizes:
            kernel(torch.randn(n))
        assert "key_v0 = (v0 % 16 == 0) | (v0 == 1) << 1 | (v0 > 0x7FFFFFFF) << 2" in kernel._entry.source
        lowered = kernel._compile(False)
        fn, _, _, _, num_warps = lowered.launches[0]
        direct = [function for _, function, _ in CALLS]
        CALLS.clear()
        for n in sizes:
            a = torch.randn(n)
            fn.run(a, torch.empty(n), n, grid=(-(-n // 16), 1, 1), warmup=False, num_warps=num_warps)
        by_run = [function for _, function, _ in CALLS]
    assert direct == by_run and len(set(by_run)) >= 2  # multiples of 16 apart (Triton 3.9 keeps 1 with the others)
    generated = [key for key in lowered.direct[0].kernels if key[1] != "generic"]
    assert len(generated) == 3  # 1; multiples of 16; the others


@tilelang.jit(out_idx=[-1])
def dyn_sum(block=16):
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32), C: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    C[bx * block + i] = A[bx * block + i] + B[bx * block + i]

    return main


def test_generated_alignment_key_picks_the_kernels_jit_run_picks():
    """The generated launcher keys its tensors' alignment as one part (True where every address is
    16-byte aligned, else each one's): aligned and misaligned views of either input (CUDA faked)
    launch the kernel ``JITFunction.run`` picks for them, one key per combination."""
    CALLS.clear()
    base_a, base_b = torch.randn(101), torch.randn(101)
    views = [
        (base_a[:100], base_b[:100]),
        (base_a[1:], base_b[:100]),
        (base_a[:100], base_b[1:]),
        (base_a[1:], base_b[1:]),
    ]
    with launch_cost.fake_cuda() as drv:
        drv.launcher_cls = _Recording
        kernel = JITKernel(dyn_sum().prim_func)
        for a, b in views * 2:
            kernel(a, b)
        assert "aligned0 = (p0 | p1) & 15 == 0 or (p0 % 16 == 0, p1 % 16 == 0)" in kernel._entry.source
        lowered = kernel._compile(False)
        fn, _, _, _, num_warps = lowered.launches[0]
        direct = [function for _, function, _ in CALLS]
        CALLS.clear()
        for a, b in views * 2:
            fn.run(a, b, torch.empty(100), 100, grid=(7, 1, 1), warmup=False, num_warps=num_warps)
        by_run = [function for _, function, _ in CALLS]
    assert direct == by_run
    generated = {key[1]: k.hash for key, k in lowered.direct[0].kernels.items() if key[1] != "generic"}
    assert sorted(map(str, generated)) == sorted(map(str, [True, (False, True), (True, False), (False, False)]))
    assert len(set(generated.values())) == 4  # a binary per combination, as Triton specialises them


@tilelang.jit(out_idx=[-1])
def split_rows(rows, block=16):
    """The host shape of TileLang's split-KV decode examples: the caller sizes a workspace by a
    ``T.dynamic`` split count it picks per call, a first kernel gridded by it fills the workspace,
    a second sums it; the factory is called again on every use."""
    n_split = T.dynamic("n_split")
    seq = T.dynamic("seq")

    @T.prim_func
    def main(
        X: T.Tensor((rows, seq), T.float32),
        Part: T.Tensor((rows, n_split), T.float32),
        Out: T.Tensor((rows,), T.float32),
    ):
        with T.Kernel(rows, n_split, threads=32) as (r, s):
            acc = T.alloc_var(T.float32)
            acc = 0.0
            for k in T.serial(T.ceildiv(seq, n_split)):
                if s * T.ceildiv(seq, n_split) + k < seq:
                    acc += X[r, s * T.ceildiv(seq, n_split) + k]
            Part[r, s] = acc
        with T.Kernel(rows, threads=32) as r:
            total = T.alloc_var(T.float32)
            total = 0.0
            for s in T.serial(n_split):
                total += Part[r, s]
            Out[r] = total

    return main


def test_split_counts_and_sizes_keep_the_generated_launcher(monkeypatch):
    """A call's dynamic sizes (a split count of 1, which Triton makes a constant; multiples of 16
    and not; a workspace stride that is one or not) change only the key of an already warm kernel:
    once each key's first call has compiled or found its kernel, repeated calls at any of them go
    through the generated launcher to the compiled kernels (no ``JITFunction.run``, no generic
    path), with the factory looked up per call as the examples do."""
    from triton.runtime.jit import JITFunction

    counts = {"run": 0, "generic": 0}
    run, launch = JITFunction.run, JITKernel._launch

    def counting_run(self, *args, **kwargs):
        counts["run"] += 1
        return run(self, *args, **kwargs)

    def counting_launch(*args, **kwargs):
        counts["generic"] += 1
        return launch(*args, **kwargs)

    rows = 3
    shapes = [(12, 40), (4, 61), (1, 33), (16, 48), (5, 7)]  # (n_split, seq)
    with launch_cost.fake_cuda():
        monkeypatch.setattr(JITFunction, "run", counting_run)
        monkeypatch.setattr(JITKernel, "_launch", staticmethod(counting_launch))

        def forward(n_split, seq):
            part = torch.empty((rows, n_split), dtype=torch.float32)
            return split_rows(rows)(torch.randn(rows, seq), part)

        for shape in shapes * 2:  # the first round compiles and keys each shape
            forward(*shape)
        kernel = split_rows(rows)
        assert hasattr(kernel._entry, "source")  # the generated launcher
        counts.update(run=0, generic=0)
        for shape in shapes * 3:
            forward(*shape)
    assert counts == {"run": 0, "generic": 0}


def test_split_rows_sums_on_the_interpreter():
    """The kernel of the test above computes what it says (Triton's interpreter, CPU tensors)."""
    for n_split, seq in [(4, 61), (1, 33)]:
        x = torch.randn(3, seq)
        part = torch.full((3, n_split), float("nan"))
        out = split_rows(3)(x, part)
        torch.testing.assert_close(out.double(), x.double().sum(1), rtol=1e-5, atol=1e-5)


class _CudaLauncher36:
    """Triton 3.6's ``CudaLauncher`` as far as ``launch_entry`` reads it: its attributes, its
    ``__call__``'s parameters, and what that passes the C function when no scratch is needed
    (triton/backends/nvidia/driver.py)."""

    def __init__(self, launch, scratch: int = 0):
        self.launch = launch
        self.global_scratch_size, self.profile_scratch_size = scratch, 0
        self.launch_cooperative_grid, self.launch_pdl = False, True

    def __call__(self, gridX, gridY, gridZ, stream, function, *args):
        self.launch(gridX, gridY, gridZ, stream, function, self.launch_cooperative_grid, self.launch_pdl, None, None, *args)  # fmt: skip


class _CudaLauncher39(_CudaLauncher36):
    """Triton 3.9's parameters (the C function takes its arguments in another order)."""

    def __call__(self, gridX, gridY, gridZ, stream, function, kernel_metadata, launch_metadata, launch_enter_hook, launch_exit_hook, *args):  # fmt: skip
        raise AssertionError("not called here")


_CudaLauncher36.__module__ = _CudaLauncher39.__module__ = "triton.backends.nvidia.driver"


class _CFunction:
    """The C launch function: records its arguments."""

    def __init__(self):
        self.calls: list = []

    def __call__(self, *args):
        self.calls.append(args)


def test_launch_entry_calls_the_c_launcher_with_what_cuda_launcher_passes_it():
    """Where Triton's CUDA launcher adds only fixed values, the entry is its C function, called with
    exactly the arguments ``CompiledKernel.run`` (as JITFunction.run calls it) would hand that."""
    c = _CFunction()
    kernel = SimpleNamespace(run=_CudaLauncher36(c), function=0x1234, packed_metadata=(4, 1, 1024))
    launch, head = launch_entry(kernel, kernel.run)
    assert launch is c
    launch(3, 2, 1, 77, *head, 0xA0, 0xB0, 0.5, 7)
    kernel.run(3, 2, 1, 77, kernel.function, kernel.packed_metadata, None, None, None, 0xA0, 0xB0, 0.5, 7)
    assert len(c.calls) == 2 and c.calls[0] == c.calls[1]


@pytest.mark.parametrize(
    "run",
    [
        _CudaLauncher36(_CFunction(), scratch=256),  # global scratch: __call__ allocates it per launch
        _CudaLauncher36(lambda *args: None),  # tensor descriptors: Triton's Python wrapper of the C function
        _CudaLauncher39(_CFunction()),  # another argument order
        launch_cost._NoLaunch.__new__(launch_cost._NoLaunch),  # not Triton's CUDA launcher
    ],
)
def test_launch_entry_keeps_triton_s_launcher_otherwise(run):
    kernel = SimpleNamespace(run=run, function=0x1234, packed_metadata=(4, 1, 1024))
    launch, head = launch_entry(kernel, kernel.run)
    assert launch is run and head == (0x1234, (4, 1, 1024), None, None, None)
