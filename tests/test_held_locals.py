"""Per-thread local arrays held one value per element (passes/held_locals.py, codegen/held.py): a
Walsh-Hadamard butterfly in the form of TileLang's examples/hadamard_transform (in-thread stages
over a local array in unrolled loops, then warp-shuffle stages), checked against torch, and the
source it lowers to: one value per element, no one-hot select, shuffles along a warp's lanes."""

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T


@tilelang.jit
def butterflies(rows, threads, elems, rounds, held=True):
    n = threads * elems
    thread_round = elems.bit_length() - 1

    @T.prim_func
    def main(A: T.Tensor((rows, n), "float32"), B: T.Tensor((rows, n), "float32")):
        with T.Kernel(rows, threads=threads) as bx:
            tx = T.get_thread_binding(0)
            local = T.alloc_local((elems,), "float32")
            other = T.alloc_local((elems,), "float32")
            for i in T.vectorized(elems):
                local[i] = A[bx, tx * elems + i]
            for i in T.serial(thread_round):
                chunksize = 1 << (i + 1)
                for j in T.serial(elems // chunksize):
                    base = j * chunksize
                    for k in T.serial(chunksize // 2):
                        local[base + k] = local[base + k] + local[base + k + chunksize // 2]
                        local[base + k + chunksize // 2] = local[base + k] - 2 * local[base + k + chunksize // 2]
            for r in T.serial(rounds):
                partner = tx ^ (1 << r)
                sign = (tx >> r) & 1
                for j in T.Pipelined(elems, num_stages=1):
                    other[j] = T.tvm_warp_shuffle(0xFFFFFFFF, local[j], partner % 32, 32, 32)
                    local[j] = T.if_then_else(sign == 0, local[j] + other[j], other[j] - local[j])
            for i in T.vectorized(elems):
                B[bx, tx * elems + i] = local[i]

    return main


def _hadamard(size: int) -> torch.Tensor:
    h = torch.ones(1, 1, dtype=torch.float64)
    while h.shape[0] < size:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
    return h


@pytest.mark.parametrize("rows, threads, elems, rounds", [(7, 64, 4, 5), (3, 96, 8, 3)])
def test_butterflies(dev, rows, threads, elems, rounds):
    n = threads * elems
    a = torch.randn(rows, n, device=dev)
    b = poison((rows, n), device=dev)
    butterflies(rows, threads, elems, rounds)(a, b)
    # the stages cover the index bits of the elements and `rounds` bits of the thread: blocks of
    # elems << rounds consecutive elements are transformed alike
    block = elems << rounds
    ref = (a.cpu().double().view(rows, n // block, block) @ _hadamard(block)).view(rows, n)
    assert_close(b, ref, atol=1e-4, rtol=1e-5)


def test_butterflies_source():
    src = butterflies(7, 64, 4, 5).get_kernel_source(interpret=False)
    code = "\n".join(line for line in src.splitlines() if not line.strip().startswith("#"))
    assert "local_0 = local_0 + local_1" in code and "local_3 = local_1 - 2 * local_3" in code
    assert "tl.sum" not in code and "tl.static_range" not in code
    # a warp shuffle is a gather along the 32 lanes of each warp: (warps, 32), axis 1
    assert "tl.gather(tl.reshape(local_0, (2, 32)), source, 1)" in code
