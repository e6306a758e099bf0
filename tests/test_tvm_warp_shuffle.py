"""TIR's ``T.tvm_warp_shuffle`` / ``_up`` / ``_down`` (TileLang's examples/hadamard_transform/example_hadamard.py):
``__shfl{,_up,_down}_sync(mask, value, lane_or_delta, width)``, ``warp_size`` left out, as TVM's CUDA codegen."""

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.errors import TileLangCompileError

WARP = 32


@tilelang.jit
def tvm_shuffles(threads, width):
    @T.prim_func
    def main(
        V: T.Tensor((threads,), "float32"), S: T.Tensor((threads,), "int32"), Out: T.Tensor((3, threads), "float32")
    ):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            v = V[tx]
            Out[0, tx] = T.tvm_warp_shuffle(0xFFFFFFFF, v, S[tx], width, 32)
            Out[1, tx] = T.tvm_warp_shuffle_up(0xFFFFFFFF, v, 3, width, 32)
            Out[2, tx] = T.tvm_warp_shuffle_down(0xFFFFFFFF, v, 5, width, 32)

    return main


def _reference(v, src, width):
    out = torch.empty(3, v.numel(), dtype=torch.float64)
    for t in range(v.numel()):
        base, lane = t - t % WARP, t % WARP
        start = lane - lane % width
        end = start + width - 1
        picks = [start + int(src[t]) % width, lane - 3 if lane - 3 >= start else lane, lane + 5 if lane + 5 <= end else lane]
        for k, j in enumerate(picks):
            out[k, t] = v[base + j]
    return out


@pytest.mark.parametrize("threads,width", [(80, 16), (48, 8)])
def test_tvm_warp_shuffles(dev, threads, width):
    v = torch.randn(threads)
    src = torch.randint(0, 64, (threads,), dtype=torch.int32)
    out = poison((3, threads), device=dev)
    tvm_shuffles(threads, width)(v.to(dev), src.to(dev), out)
    assert_close(out, _reference(v, src, width), atol=0, rtol=0)


@T.macro
def butterfly(local, other, elems, width, rounds):
    tx = T.get_thread_binding(0)
    for i in T.serial(rounds):
        partner = tx ^ (1 << i)
        upper = (tx >> i) & 1
        for j in T.Pipelined(elems, num_stages=1):
            other[j] = T.tvm_warp_shuffle(0xFFFFFFFF, local[j], partner % width, width, width)
            local[j] = T.if_then_else(upper == 0, local[j] + other[j], other[j] - local[j])


@tilelang.jit
def warp_hadamard(rows, threads, elems):
    rounds = threads.bit_length() - 1

    @T.prim_func
    def main(A: T.Tensor((rows, threads * elems), "float32"), B: T.Tensor((rows, threads * elems), "float32")):
        with T.Kernel(rows, threads=threads) as bx:
            local = T.alloc_local((elems,), "float32")
            other = T.alloc_local((elems,), "float32")
            tx = T.get_thread_binding(0)
            for i in T.vectorized(elems):
                local[i] = A[bx, i * threads + tx]
            butterfly(local, other, elems, threads, rounds)
            for i in T.vectorized(elems):
                B[bx, i * threads + tx] = local[i]

    return main


@pytest.mark.parametrize("threads", [8, 32])
def test_hadamard_across_lanes(dev, threads):
    """The example's warp step: a Sylvester Hadamard transform across the lanes, per element slot."""
    rows, elems = 5, 3
    a = torch.randn(rows, threads * elems)
    out = poison((rows, threads * elems), device=dev)
    warp_hadamard(rows, threads, elems)(a.to(dev), out)
    h = torch.ones(1, 1, dtype=torch.float64)
    while h.shape[0] < threads:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
    ref = (a.double().reshape(rows, elems, threads) @ h).reshape(rows, -1)  # h is symmetric
    assert_close(out, ref, atol=1e-4, rtol=1e-5)


def test_tvm_warp_shuffle_width_must_be_a_power_of_two():
    @T.prim_func
    def main(V: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            V[tx] = T.tvm_warp_shuffle(0xFFFFFFFF, V[tx], 1, 12, 32)

    with pytest.raises(TileLangCompileError, match="tvm_warp_shuffle: width must be a compile-time power of two"):
        tilelang.compile(main)
