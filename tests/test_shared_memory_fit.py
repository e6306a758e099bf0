"""A kernel Triton cannot fit in shared memory (``OutOfResources`` at its first GPU launch) is
lowered again with fewer pipeline stages (2, then 1, every loop), then with its shared buffers in
global scratch memory (runtime/tuning.py FIT_STEPS), and only then reported at the kernel's line
with the bytes.  No GPU here: the GPU launch is replaced by one that raises Triton's own
``OutOfResources`` while the lowering still has more than ``fits_at`` stages."""

import re

import pytest
import torch
from t2t_util import assert_close
from test_fuzz_regressions import compile_for_hopper
from triton.runtime.errors import OutOfResources

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import TileLangCompileError
from tile2triton.runtime import tuning

M, N, K = 70, 90, 200


@tilelang.jit
def pipelined_gemm(stages=3, twice=False):
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 64), threads=128) as (bx, by):
            A_s = T.alloc_shared((64, 32), T.float16)
            B_s = T.alloc_shared((32, 64), T.float16)
            acc = T.alloc_fragment((64, 64), T.float32)
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, 32), num_stages=stages):
                T.copy(A[by * 64, k * 32], A_s)
                T.copy(B[k * 32, bx * 64], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C[by * 64, bx * 64])
        if twice:  # a second kernel: C += 1 (it must run once, also when the first one is retried)
            with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 64), threads=128) as (bx, by):
                for i, j in T.Parallel(64, 64):
                    if by * 64 + i < M and bx * 64 + j < N:
                        C[by * 64 + i, bx * 64 + j] = C[by * 64 + i, bx * 64 + j] + 1.0

    return main


def fresh(stages=3, twice=False):
    """A new kernel object (the JIT cache would hand every test the same one, already fitted)."""
    return tilelang.compile(pipelined_gemm.func(stages, twice))


def stage_counts(source: str) -> set:
    return {int(n) for n in re.findall(r"num_stages=(\d+)", source)}


class FakeGPU:
    """Stands in for ``JITKernel._launch`` on the GPU path: launch ``failing_launch`` of a lowering
    that pipelines deeper than ``fits_at`` stages (or keeps shared buffers in shared memory, with
    ``scratch``) raises OutOfResources; the others "run" (recorded, nothing executes)."""

    def __init__(self, fits_at: int, scratch: bool = False, failing_launch: int = 0):
        self.fits_at, self.scratch, self.failing_launch = fits_at, scratch, failing_launch
        self.attempts: list = []  # (source, first launch index run)
        self.ran: list = []  # launch indices run

    def __call__(self, launcher, slots, values, start=0):
        source = launcher.module.source
        self.attempts.append((source, start))
        fits = max(stage_counts(source) or {3}) <= self.fits_at and (not self.scratch or "scratch" in source)
        for index in range(start, len(launcher.launches)):
            if index == self.failing_launch and not fits:
                exc = OutOfResources(294912, 232448, "shared memory")
                exc.launch_index = index
                raise exc
            self.ran.append(index)


def first_gpu_launch(kernel, fake):
    kernel._launch = fake
    A, B, C = torch.randn(M, K).half(), torch.randn(K, N).half(), torch.empty(M, N)
    return kernel._first_launch(kernel._compile(False), [A, B, C], {}, interpret=False)


@pytest.mark.parametrize("fits_at, fit", [(2, tuning.FIT_STEPS[1]), (1, tuning.FIT_STEPS[2])])
def test_fewer_stages_until_it_fits(fits_at, fit):
    kernel = fresh()
    fake = FakeGPU(fits_at)
    launcher = first_gpu_launch(kernel, fake)
    assert stage_counts(fake.attempts[0][0]) == {3}  # as written first
    assert kernel.shared_memory_fit == fit
    assert max(stage_counts(launcher.module.source)) == fits_at
    # the first step (small-M gemms transposed) changes nothing in this kernel: skipped, not launched
    assert len(fake.attempts) == 1 + tuning.FIT_STEPS.index(fit)


def test_shared_buffers_in_global_memory_last():
    kernel = fresh()
    fake = FakeGPU(1, scratch=True)
    launcher = first_gpu_launch(kernel, fake)
    assert kernel.shared_memory_fit == tuning.FIT_STEPS[-1]
    assert "scratch" in launcher.module.source and stage_counts(launcher.module.source) == {1}
    assert len(fake.attempts) == len(tuning.FIT_STEPS)  # the unchanged first step is not launched


def test_what_does_not_fit_is_named_at_the_kernel_line():
    kernel = fresh()
    fake = FakeGPU(0)  # never fits
    with pytest.raises(TileLangCompileError) as info:
        first_gpu_launch(kernel, fake)
    text = str(info.value)
    assert "test_shared_memory_fit.py:" in text and "with T.Kernel(" in text
    assert "needs 294912 bytes of shared memory" in text and "232448 bytes" in text
    assert "1 pipeline stage and its shared buffers in global memory" in text
    assert isinstance(info.value.__cause__, OutOfResources)


def test_other_errors_are_not_retried():
    kernel = fresh()
    calls = []

    def broken(launcher, slots, values, start=0):
        calls.append(start)
        raise RuntimeError("an unrelated launch failure")

    with pytest.raises(RuntimeError, match="unrelated"):
        first_gpu_launch(kernel, broken)
    assert calls == [0] and kernel.shared_memory_fit == {}


def test_launches_that_ran_are_not_repeated():
    kernel = fresh(twice=True)
    fake = FakeGPU(2, failing_launch=1)  # the first kernel ran (it updated C), the second did not fit
    first_gpu_launch(kernel, fake)
    assert [start for _, start in fake.attempts] == [0, 1]
    assert fake.ran == [0, 1]


def test_shortfall_is_read_through_wrapping_errors():
    inner = OutOfResources(300000, 232448, "shared memory")
    try:
        try:
            raise inner
        except OutOfResources as exc:
            raise RuntimeError("wrapped") from exc
    except RuntimeError as outer:
        assert tuning.shared_memory_shortfall(outer) == (300000, 232448)
    assert tuning.shared_memory_shortfall(OutOfResources(10, 5, "registers")) is None


def test_the_fitted_lowering_compiles_for_hopper_and_computes_the_gemm(tmp_path, monkeypatch):
    kernel = fresh()
    first_gpu_launch(kernel, FakeGPU(1, scratch=True))
    del kernel._launch
    compile_for_hopper(kernel, tmp_path)  # the GPU source with 1 stage and shared buffers in scratch
    monkeypatch.setenv("TILE2TRITON_SHARED_SCRATCH", "1")  # the interpreter's lowering of the same plan
    A, B = torch.randn(M, K).half(), torch.randn(K, N).half()
    C = torch.full((M, N), float("nan"))
    fresh()(A, B, C)
    assert_close(C, A.double() @ B.double(), atol=2e-2, rtol=2e-3)
