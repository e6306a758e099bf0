"""``T.alloc_global`` workspaces kept between calls (runtime/workspaces.py, ``TILE2TRITON_KEEP_WORKSPACES``):
one buffer per thread and stream, a fresh one for a new shape or under CUDA graph capture, and the
results of calls that take a kept buffer over (on CUDA) against torch."""

import importlib.util
import pathlib
import threading

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.runtime import workspaces
from tile2triton.runtime.kernel import JITKernel
from tile2triton.runtime.workspaces import KeptWorkspace

pytestmark = pytest.mark.poison_empty

ROOT = pathlib.Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("launch_cost_bench", ROOT / "benchmarks" / "launch_cost.py")
launch_cost = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(launch_cost)


@tilelang.jit(out_idx=[-1])
def split_sums(N, splits, block=16):
    """Column sums of a (rows, N) matrix of dynamic rows in two kernels: each split's partial sums into
    a T.alloc_global workspace, then their sum (the flash-decoding examples' shape of work)."""
    R = T.dynamic("R")

    @T.prim_func
    def main(A: T.Tensor((R, N), T.float32), B: T.Tensor((N,), T.float32)):
        partial = T.alloc_global((splits, N), T.float32)
        with T.Kernel(T.ceildiv(N, block), splits, threads=32) as (bx, s):
            acc = T.alloc_fragment((block,), T.float32)
            T.clear(acc)
            for r in T.serial(T.ceildiv(R, splits)):
                for j in T.Parallel(block):
                    if s * T.ceildiv(R, splits) + r < R:
                        acc[j] += A[s * T.ceildiv(R, splits) + r, bx * block + j]
            T.copy(acc, partial[s, bx * block])
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            total = T.alloc_fragment((block,), T.float32)
            T.clear(total)
            for k in T.serial(splits):
                for j in T.Parallel(block):
                    total[j] += partial[k, bx * block + j]
            T.copy(total, B[bx * block])

    return main


def test_one_buffer_per_thread_and_stream(monkeypatch):
    ws = KeptWorkspace(torch.float32)
    stream = [7]
    ws.stream = lambda device_index: stream[0]
    cpu = torch.device("cpu")
    first = ws(cpu, (3, 5))
    assert ws(cpu, (3, 5)) is first and first.dtype == torch.float32 and first.shape == (3, 5)
    stream[0] = 8  # another stream: its own buffer, the first one kept for its stream
    other = ws(cpu, (3, 5))
    assert other is not first
    stream[0] = 7
    assert ws(cpu, (3, 5)) is first
    seen = []
    worker = threading.Thread(target=lambda: seen.append(ws(cpu, (3, 5))))
    worker.start()
    worker.join()
    assert seen[0] is not first and ws(cpu, (3, 5)) is first  # another thread: its own buffer
    bigger = ws(cpu, (4, 5))  # a new shape replaces the buffer
    assert bigger.shape == (4, 5) and ws(cpu, (4, 5)) is bigger
    monkeypatch.setattr(workspaces, "_capturing", lambda: True)  # a graph's buffers are its own
    assert ws(cpu, (4, 5)) is not bigger and ws(cpu, (4, 5)) is not ws(cpu, (4, 5))


def _workspace_addresses(monkeypatch, keep: str) -> tuple[list, str]:
    """The workspace address each launch of three calls passes (the second kernel's first argument
    after A and B), through the generated launcher on a fake H200 (launches do nothing)."""
    monkeypatch.setenv("TILE2TRITON_KEEP_WORKSPACES", keep)
    got = []
    with launch_cost.fake_cuda():
        kernel = JITKernel(split_sums(90, 3).prim_func, out_idx=[-1])  # fresh: the settings of this test
        launch_cost._WrappedLaunch.calls = got
        try:
            for rows in (37, 37, 37):
                kernel(torch.randn(rows, 90))
        finally:
            launch_cost._WrappedLaunch.calls = None
        assert hasattr(kernel._entry, "source"), "the generated launcher's GPU branch"
        source = kernel._entry.source
    return got, source


def test_generated_launcher_keeps_the_workspace(monkeypatch):
    kept, source = _workspace_addresses(monkeypatch, "1")
    assert "workspace" in source and len(kept) == 6
    fresh, plain = _workspace_addresses(monkeypatch, "0")
    assert "workspace" not in plain and len(fresh) == 6

    def address(a):
        return a if isinstance(a, int) else a.data_ptr()

    # each call's two kernels share its workspace; with keeping, the calls through the generated
    # launcher (after the first, which compiles) share one
    for launches in (kept, fresh):
        for k in range(3):
            split, total = launches[2 * k], launches[2 * k + 1]
            assert address(split[2]) == address(total[2])
    assert address(kept[2][2]) == address(kept[4][2])


def test_calls_that_take_a_kept_workspace_over(dev):
    """Calls of a different row count, one after another, and one on a second CUDA stream: each sums
    its own input, the workspace taken over from the call before."""
    kernel = split_sums(90, 3)
    for rows in (37, 120, 37, 5):
        a = torch.randn(rows, 90, device=dev)
        out = kernel(a)
        assert_close(out, a.double().sum(0), 1e-4, 1e-4)
    if dev == "cuda":
        a, b = torch.randn(61, 90, device=dev), torch.randn(61, 90, device=dev)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            on_side = kernel(b)
        on_main = kernel(a)
        torch.cuda.current_stream().wait_stream(side)
        assert_close(on_main, a.double().sum(0), 1e-4, 1e-4)
        assert_close(on_side, b.double().sum(0), 1e-4, 1e-4)

    a, b = torch.randn(23, 90, device=dev), torch.randn(23, 90, device=dev)
    first, second = kernel(a), kernel(b)  # outputs are never kept: each call returns its own
    assert first.data_ptr() != second.data_ptr()
    assert_close(first, a.double().sum(0), 1e-4, 1e-4)
    assert_close(second, b.double().sum(0), 1e-4, 1e-4)
