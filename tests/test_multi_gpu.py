"""Two GPUs: kernels run on the device their tensors are on, not only on the current one.

* Tensors on cuda:1 while cuda:0 is current: lazy, eager and ``register_op`` kernels, on the
  first call (generic path) and warm calls (generated launcher); the current device is left as it
  was.  Tensors on two GPUs are one clear error naming the parameters.
* ``torch.distributed`` with 2 processes (NCCL, spawned), one GPU each: a ``register_op`` op under
  ``torch.compile``, then an ``all_reduce`` of the results checked against torch.

Skipped unless 2 CUDA GPUs are visible (the distributed test also runs on the CPU: gloo, the
interpreter).  Run: ``python3 -m pytest -q tests/test_multi_gpu.py``.
"""

import os
import socket
import sys
import time

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import KernelCallError

pytestmark = pytest.mark.poison_empty  # outputs the runtime allocates start as NaN
two_gpus = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA GPUs")

M, N = 37, 70  # not multiples of the tile (32)


@tilelang.jit(out_idx=[-1])
def scale_add(M, N, block=32):
    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), B: T.Tensor((M, N), T.float32), s: T.float32,
             C: T.Tensor((M, N), T.float32)):  # fmt: skip
        with T.Kernel(T.ceildiv(N, block), M, threads=32) as (bx, by):
            for j in T.Parallel(block):
                C[by, bx * block + j] = A[by, bx * block + j] * s + B[by, bx * block + j]

    return main


@tilelang.jit
def scale_add_into(M, N, block=32):
    """Writes into a given output (pre-filled with NaN by the tests: an unwritten element fails)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), B: T.Tensor((M, N), T.float32), s: T.float32,
             C: T.Tensor((M, N), T.float32)):  # fmt: skip
        with T.Kernel(T.ceildiv(N, block), M, threads=32) as (bx, by):
            for j in T.Parallel(block):
                C[by, bx * block + j] = A[by, bx * block + j] * s + B[by, bx * block + j]

    return main


@tilelang.jit
def eager_double(A):
    K = T.const("K")
    A: T.Tensor((K,), T.float32)
    B = T.empty((K,), T.float32)
    with T.Kernel(T.ceildiv(K, 32), threads=32) as bx:
        for i in T.Parallel(32):
            B[bx * 32 + i] = A[bx * 32 + i] * 2.0 - 1.0
    return B


def _inputs(seed: int, device):
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(M, N, generator=gen)
    b = torch.randn(M, N, generator=gen)
    return a.to(device), b.to(device)


def _reference(a, b, s):
    return (a.double() * s + b.double()).float()


def _nan(device):
    return torch.full((M, N), float("nan"), device=device)


@pytest.fixture
def current_is_0():
    previous = torch.cuda.current_device()
    torch.cuda.set_device(0)
    yield
    torch.cuda.set_device(previous)


@pytest.mark.gpu
@two_gpus
def test_tensors_on_the_non_current_gpu(current_is_0):
    kernel_out, kernel_into = scale_add(M, N), scale_add_into(M, N)
    for call in range(3):  # the first call takes the generic path, later ones the generated launcher
        a, b = _inputs(call, "cuda:1")
        out = kernel_out(a, b, 1.5)
        assert out.device == torch.device("cuda", 1)
        assert_close(out, _reference(a, b, 1.5), rtol=1e-6, atol=1e-6)
        c = _nan("cuda:1")
        kernel_into(a, b, -0.5, c)
        assert_close(c, _reference(a, b, -0.5), rtol=1e-6, atol=1e-6)
        assert torch.cuda.current_device() == 0
    x = torch.randn(45, device="cuda:1")  # eager style
    for _ in range(2):
        y = eager_double(x)
        assert y.device == x.device
        assert_close(y, (x.double() * 2.0 - 1.0).float(), rtol=1e-6, atol=1e-6)
    assert torch.cuda.current_device() == 0


@pytest.mark.gpu
@two_gpus
def test_both_gpus_in_turn(current_is_0):
    kernel = scale_add(M, N)
    for device in ("cuda:0", "cuda:1", "cuda:0", "cuda:1"):
        a, b = _inputs(3, device)
        assert_close(kernel(a, b, 2.0), _reference(a, b, 2.0), rtol=1e-6, atol=1e-6)


@pytest.mark.gpu
@two_gpus
def test_tensors_on_two_gpus_are_an_error(current_is_0):
    kernel = scale_add(M, N)
    a, b = _inputs(4, "cuda:0")
    kernel(a, b, 1.0)  # warm: the generated launcher must fall back and name the parameters too
    for _ in range(2):
        with pytest.raises(KernelCallError, match=r"parameter 'B' is on cuda:1, but 'A' is on cuda:0; "
                                                  r"all tensors must be on one device"):  # fmt: skip
            kernel(a, b.to("cuda:1"), 1.0)


@pytest.mark.gpu
@two_gpus
def test_register_op_on_the_non_current_gpu(current_is_0):
    op = tilelang.register_op("t2t_multi_gpu::scale_add_local", scale_add(M, N))
    a, b = _inputs(5, "cuda:1")
    out = op(a, b, 0.25)
    assert out.device == torch.device("cuda", 1)
    assert_close(out, _reference(a, b, 0.25), rtol=1e-6, atol=1e-6)
    assert torch.cuda.current_device() == 0


# ------------------------------------------------------------------ torch.distributed, 2 processes

_SCALE = 0.75


def _worker(rank: int, world: int, port: int, kind: str) -> None:
    """One process per GPU (``kind`` "cuda": NCCL) or per CPU rank ("cpu": gloo, Triton's
    interpreter): the op under torch.compile on its own inputs, then a sum over the ranks."""
    import torch.distributed as dist

    if kind == "cuda":
        torch.cuda.set_device(rank)
    device = f"cuda:{rank}" if kind == "cuda" else "cpu"
    backend = "nccl" if kind == "cuda" else "gloo"
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        op = tilelang.register_op("t2t_multi_gpu::scale_add", scale_add(M, N))

        def step(a, b):
            return op(a, b, _SCALE) * 2.0

        # on the CPU, aot_eager: the op through torch.compile's tracing without a C++ toolchain
        compiled = torch.compile(step, fullgraph=True, backend="inductor" if kind == "cuda" else "aot_eager")
        a, b = _inputs(100 + rank, device)
        out = compiled(a, b)
        assert_close(out, (_reference(a, b, _SCALE).double() * 2.0).float(), rtol=1e-6, atol=1e-6)
        dist.all_reduce(out)  # a sum over the ranks
        expected = sum(_reference(*_inputs(100 + r, "cpu"), _SCALE).double() * 2.0 for r in range(world))
        assert_close(out.cpu(), expected.float(), rtol=1e-5, atol=1e-5)
        dist.barrier()
    finally:
        dist.destroy_process_group()
    # Checked and torn down: leave without the interpreter's shutdown.  CI once saw rank 0 die by
    # SIGABRT ("terminate called without an active exception", a C++ thread never joined) with no
    # failed check reported; static destructors of the process group's threads at exit are the
    # likely place.  A failed check raised above and never gets here.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("kind", [pytest.param("cuda", marks=[pytest.mark.gpu, two_gpus]), "cpu"])
def test_distributed_register_op_under_torch_compile(kind):
    import torch.multiprocessing as mp

    for name in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"):
        os.environ.setdefault(name, "0" if name == "NCCL_NVLS_ENABLE" else "1")  # no NVLink multicast
    world = 2
    context = mp.start_processes(_worker, args=(world, _free_port(), kind), nprocs=world, join=False, start_method="spawn")
    deadline = 600
    start = time.monotonic()
    while not context.join(timeout=5):  # raises ProcessRaisedException with a worker's traceback
        if time.monotonic() - start > deadline:
            for p in context.processes:
                p.kill()
            pytest.fail(f"the 2 workers did not finish within {deadline} s")
