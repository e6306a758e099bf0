"""An ``if`` / ``else`` copying one tensor's tiles into one buffer from two places is one copy whose start
the condition picks (passes/branch_copies.py): the software pipeliner stages it.  Block-causal attention's
key loop has this form."""

import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T


@tilelang.jit
def two_sources(M, N, block_m, block_n, steps):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), "float32"), Flags: T.Tensor((steps,), "int32"), Out: T.Tensor((block_m, N), "float32")
    ):
        with T.Kernel(T.ceildiv(N, block_n), threads=128) as bx:
            tile = T.alloc_shared((block_m, block_n), "float32")
            acc = T.alloc_fragment((block_m, block_n), "float32")
            T.clear(acc)
            for s in T.Pipelined(steps, num_stages=2):
                if Flags[s] != 0:
                    T.copy(A[s * block_m, bx * block_n], tile)
                else:
                    T.copy(A[(steps + s) * block_m, bx * block_n], tile)
                for i, j in T.Parallel(block_m, block_n):
                    acc[i, j] += tile[i, j] * (s + 1)
            T.copy(acc, Out[0, bx * block_n])

    return main


def test_branch_copies(dev):
    block_m, block_n, steps, N = 16, 32, 5, 70
    M = 2 * steps * block_m
    a = torch.randn(M, N, device=dev)
    flags = torch.tensor([1, 0, 0, 1, 0], dtype=torch.int32, device=dev)
    out = poison((block_m, N), device=dev)
    kernel = two_sources(M, N, block_m, block_n, steps)
    kernel(a, flags, out)
    tiles = a.cpu().double().view(2 * steps, block_m, N)
    ref = sum((s + 1) * tiles[s if flags[s] else steps + s] for s in range(steps))
    assert_close(out, ref, atol=1e-4, rtol=1e-5)
    src = kernel.get_kernel_source(interpret=False)
    assert "A_start = tl.where(" in src and "\n            if " not in src
