"""A narrow integer tensor beside a wider integer (``A[i] + g * 50`` with A uint8 and g an int32 loop
variable): TVM widens to the wider type (``BinaryOpMatchTypes``) and computes there; Triton would
compute in the tensor's type where the other operand is a Python int or a constexpr (a ``T.unroll``
index, any loop index under the interpreter), so 244 + 50 wrapped to 38 (found in a sparse-metadata
compressor's ``T.shift_left`` of a uint8).

Two narrow integers, or one with a Python int, compute in int32 too: TVM types ``A[i] * A[i]`` of int8 as
int8, but its CUDA is C, whose integer promotion computes it in int (TileLang 0.1.15's source:
``(int)(A[i] * A[i])``, ``(int)A[i] + 100``, ``(int)(A[i] * (signed char)-1)``), so the full product
reaches an int32 buffer and ``A[i] + A[i] > 50`` compares the sum unwrapped; a store into a narrow buffer
still truncates, as does a kernel-local name (TVM's let of the narrow type) and a select of two narrow
integers (``signed char condval``; beside a Python int it is ``int condval``)."""

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


@tilelang.jit(out_idx=[-5, -4, -3, -2, -1])
def c_promoted(M):
    @T.prim_func
    def main(
        A: T.Tensor((M,), T.int8),
        U: T.Tensor((M,), T.uint8),
        Big: T.Tensor((M,), T.int8),
        Wide: T.Tensor((M, 9), T.int32),
        Narrow: T.Tensor((M,), T.int8),
        Sum: T.Tensor((1,), T.int32),
        Half: T.Tensor((M,), T.int16),
    ):
        with T.Kernel(1, threads=64) as bx:
            twice = T.alloc_fragment((64,), T.int8)
            acc = T.alloc_var(T.int32)
            acc = 0
            for i in T.Parallel(64):
                if i < M:
                    Big[i] = T.if_then_else(A[i] + A[i] > 50, 1, 0)
                    Wide[i, 0] = A[i] * A[i]
                    Wide[i, 1] = A[i] * 3 + U[i] * 2
                    Wide[i, 2] = -A[i]
                    Wide[i, 3] = T.abs(A[i])
                    local = A[i] + A[i]  # TVM's let of an int8: `signed char local = A[i] + A[i];`
                    Wide[i, 4] = local * 2
                    Wide[i, 5] = T.max(A[i] + A[i], 3)  # `max((int)(A[i] + A[i]), 3)`
                    Wide[i, 6] = T.if_then_else(i % 2 == 0, A[i] + A[i], 0)  # `int condval`
                    Wide[i, 7] = T.if_then_else(i % 2 == 0, A[i] + A[i], A[i] * A[i])  # `signed char condval`
                    negated = -T.cast(A[i], T.int32)  # the user's own int32: a local of that type
                    Wide[i, 8] = negated
                    twice[i] = A[i] + A[i]  # a narrow fragment keeps the wrapped sum
                    Half[i] = A[i] * 300
            for i in T.Parallel(64):
                if i < M:
                    Narrow[i] = twice[i] // 3
            for j in T.serial(M):
                acc += A[j] * A[j]
            Sum[0] = acc

    return main


def test_narrow_integers_compute_in_int32_as_c_promotes_them(dev):
    M = 53
    A = torch.randint(-128, 128, (M,), dtype=torch.int8, device=dev)
    A[:3] = torch.tensor([-128, 100, -100], dtype=torch.int8)
    U = torch.randint(150, 256, (M,), dtype=torch.uint8, device=dev)
    big, wide, narrow, total, half = c_promoted(M)(A, U)
    a, u = A.cpu().long(), U.cpu().long()
    assert_equal(big, (a + a > 50).to(torch.int8))
    twice = (a + a).to(torch.int8).long()
    even = torch.arange(M) % 2 == 0
    square = (a * a).to(torch.int8).long()
    columns = [a * a, a * 3 + u * 2, -a, a.abs(), twice * 2, (a + a).clamp_min(3)]
    columns += [torch.where(even, a + a, 0), torch.where(even, twice, square), -a]
    assert_equal(wide, torch.stack(columns, dim=1).int())
    assert_equal(narrow, torch.div(twice, 3, rounding_mode="floor").to(torch.int8))
    assert_equal(total, (a * a).sum().reshape(1).int())
    assert_equal(half, (a * 300).to(torch.int16))
