"""One cache-key rule for compile-time arguments (``compiler.argument_key``), used by lazy
``@tilelang.jit`` factories, eager kernels and the autotuner."""

import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.compiler import argument_key


def test_key_keeps_containers_apart():
    assert argument_key([1, 2]) != argument_key((1, 2))
    assert argument_key({"a": 1}) != argument_key((("a", 1),))
    assert argument_key([1, [2, 3]]) == argument_key([1, [2, 3]])
    assert argument_key({"b": [1], "a": 2}) == argument_key({"a": 2, "b": [1]})
    assert argument_key(object) is object  # hashable values are their own key
    hash(argument_key({"k": [{"x": 1}]}))


@tilelang.jit(out_idx=[-1])
def scaled(N, block, scale):
    factor = float(sum(scale))

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    C[bx * block + i] = A[bx * block + i] * factor

    return main


def test_factory_cache_by_argument_key(dev):
    k_list = scaled(150, 64, [1.5, 0.25])
    assert scaled(150, 64, [1.5, 0.25]) is k_list  # equal lists: the same kernel
    k_tuple = scaled(150, 64, (1.5, 0.25))
    assert k_tuple is not k_list  # a tuple is another key, as in eager kernels
    a = torch.randn(150, device=dev)
    c = k_tuple(a)
    assert_close(c, a.double() * 1.75, 1e-6, 1e-6)
    assert_close(k_list(a), a.double() * 1.75, 1e-6, 1e-6)
