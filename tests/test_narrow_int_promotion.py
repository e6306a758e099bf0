"""A narrow integer tensor beside a wider integer (``A[i] + g * 50`` with A uint8 and g an int32 loop
variable): TVM widens to the wider type (``BinaryOpMatchTypes``) and computes there; Triton would
compute in the tensor's type where the other operand is a Python int or a constexpr (a ``T.unroll``
index, any loop index under the interpreter), so 244 + 50 wrapped to 38 (found in a sparse-metadata
compressor's ``T.shift_left`` of a uint8)."""

import pytest
import torch
from t2t_util import assert_equal

import tile2triton as tilelang
import tile2triton.language as T

pytestmark = pytest.mark.poison_empty


@tilelang.jit(out_idx=[-1])
def widened(M, G, unroll):
    loop = T.unroll if unroll else T.serial

    @T.prim_func
    def main(A: T.Tensor((M,), T.uint8), B: T.Tensor((M, 2 * G), T.int32)):
        with T.Kernel(T.ceildiv(M, 32), threads=32) as bx:
            for g in loop(G):
                for i in T.Parallel(32):
                    if bx * 32 + i < M:
                        B[bx * 32 + i, g] = A[bx * 32 + i] + g * 50
                        B[bx * 32 + i, G + g] = T.shift_left(A[bx * 32 + i], g + 1)

    return main


@pytest.mark.parametrize("unroll", [False, True])
def test_uint8_with_int32_loop_index_computes_in_int32(dev, unroll):
    M, G = 45, 5
    A = torch.randint(100, 256, (M,), dtype=torch.uint8, device=dev)
    B = widened(M, G, unroll)(A)
    g = torch.arange(G, dtype=torch.int64)
    a = A.cpu().long()[:, None]
    ref = torch.cat([a + g * 50, a << (g + 1)], dim=1).int()
    assert_equal(B, ref)
