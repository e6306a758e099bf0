"""CUDA graph capture of tile2triton launches (GPU only): torch.cuda.graph around a kernel call, and
torch.compile(mode="reduce-overhead") of a function calling a registered op; replays see new inputs."""

import pytest
import torch
from stress_kernels import matmul, scale_add

import tile2triton

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")


def test_torch_cuda_graph_replays_a_launch_cuda():
    kernel = scale_add(0)
    a, b = torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda")
    kernel(a, b)  # warm: compiled and launched once outside the capture
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        kernel(a, b)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = kernel(a, b)
    for _ in range(3):
        a.copy_(torch.randn_like(a))
        b.copy_(torch.randn_like(b))
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(out, 2 * a + b)


def test_reduce_overhead_compile_of_a_registered_op_cuda():
    op = tile2triton.register_op("t2t_stress::matmul_graph", matmul(64, 48, 40))

    @torch.compile(mode="reduce-overhead")
    def layer(x, y):
        return op(x, y).relu()

    for _ in range(4):  # the first calls record, later ones replay the graph
        x, y = torch.randn(64, 40, device="cuda"), torch.randn(40, 48, device="cuda")
        torch.testing.assert_close(layer(x, y), (x @ y).relu(), atol=1e-2, rtol=1e-2)
