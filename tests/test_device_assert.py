"""T.device_assert: lowered to Triton's tl.device_assert (checked when Triton runs in debug mode),
with padded lanes and lanes outside an enclosing `if` passing."""

import pytest
import torch
from t2t_util import poison

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.errors import TileLangCompileError


@tilelang.jit
def checked_scale(N, block):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            tx = T.get_thread_binding()
            if bx * block + tx < N:
                T.device_assert(A[bx * block + tx] > -100.0, "input out of range")
                B[bx * block + tx] = A[bx * block + tx] * 3.0
            for i in T.Parallel(block):
                T.device_assert(i < block)

    return main


def test_device_assert_runs_and_keeps_results(dev):
    N = 100  # not a multiple of the 48-thread block, so the last block has inactive lanes
    kernel = checked_scale(N, 48)
    a = torch.randn(N, device=dev)
    b = poison((N,), device=dev)
    kernel(a, b)
    torch.testing.assert_close(b.cpu(), a.cpu() * 3.0, rtol=0, atol=0)
    src = kernel.get_kernel_source(interpret=False)
    assert src.count("tl.device_assert(") == 1  # `i < block` holds for every lane: no check left
    assert "'input out of range'" in src
    # lanes the `if` leaves out (and the 16 padding lanes of the 48-lane block) pass
    line = next(x for x in src.splitlines() if x.strip().startswith("tl.device_assert("))
    assert "tl.where(" in line and "True" in line


def test_device_assert_message_must_be_a_string():
    @T.prim_func
    def bad(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=16):
            T.device_assert(A[0] > 0, 42)

    with pytest.raises(TileLangCompileError, match="message must be a string") as info:
        tilelang.compile(bad)(torch.ones(16))
    assert "test_device_assert.py" in str(info.value)
