"""``T.assume`` (issue 26): a condition the host can evaluate (sizes, scalar parameters) is checked at
every call, a RuntimeError ``Assume: ...`` when it does not hold, as TileLang's host code does; one that
reads kernel values is a hint only.  The kernel is TileLang's own test's (test_tilelang_language_assume)."""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


@tilelang.jit
def _assumed(block=32):
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32), s: T.int32):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            T.assume(N % 4 == 0 and s > 1)
            x = T.alloc_var(T.int32)
            x = bx * block
            T.assume(x >= 0)  # reads a kernel value: a hint, never checked
            tx = T.get_thread_binding()
            if x + tx < N:
                B[x + tx] = A[x + tx] * s

    return main


def test_host_evaluable_assume_is_checked_at_every_call(dev):
    kernel = _assumed()
    for n in (4, 84, 4):  # the check runs on warm calls too
        a = torch.randn(n, device=dev)
        b = torch.full((n,), float("nan"), device=dev)
        kernel(a, b, 3)
        assert_close(b, a * 3, atol=1e-6, rtol=1e-6)
    with pytest.raises(RuntimeError, match=r"Assume: N % 4 == 0 and s > 1"):
        kernel(torch.randn(82, device=dev), torch.empty(82, device=dev), 3)
    with pytest.raises(RuntimeError, match=r"Assume: N % 4 == 0 and s > 1"):
        kernel(torch.randn(8, device=dev), torch.empty(8, device=dev), 1)
