"""Host cost of one call of four short TileLang regression kernels, CUDA faked (no GPU needed).

Session 13's suite run timed three cases' event time well above session 11's while their kernel
time held: ``example_mha_inference`` (two kernels, a ``T.alloc_global`` workspace),
``example_gqa_decode`` (a split-KV decode) and ``example_mha_sink_fwd_bhsd``. This probe runs each
example's kernel as its ``run_regression_perf`` builds it and calls ``kernel(...)`` as the profiler
does, with benchmarks/launch_cost.py's ``fake_cuda(h200=True)`` (Triton compiles for sm_90 offline, launches do
nothing) and hostcost_probe's ``cpu_for_cuda`` (the example's CUDA tensors on the CPU): each row is
the thread's CPU time per call, the least of 25 rounds of 300 calls. Run it from two checkouts to
compare their host paths:

    PYTHONPATH=. python benchmarks/host_calls_probe.py [/path/to/tilelang/examples]
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))


def load(path: str):
    sys.path.insert(0, os.path.dirname(path))
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def per_call_us(fn) -> float:
    for _ in range(20):
        fn()
    rounds = []
    for _ in range(25):
        t0 = time.thread_time()
        for _ in range(300):
            fn()
        rounds.append((time.thread_time() - t0) / 300 * 1e6)
    return min(rounds)


def main() -> None:
    examples = sys.argv[1] if len(sys.argv) > 1 else "/tmp/tl/examples"
    sys.path.insert(0, HERE)
    sys.modules.setdefault("einops", types.SimpleNamespace(rearrange=None, einsum=None))  # references only
    import torch
    from hostcost_probe import cpu_for_cuda
    from launch_cost import fake_cuda

    from tile2triton.cli import install_tilelang_alias

    install_tilelang_alias()
    half = torch.float16
    rows = []
    with fake_cuda(h200=True), cpu_for_cuda():
        inference = load(f"{examples}/flash_decoding/example_mha_inference.py")
        kernel = inference.flashattn(1, 32, 128, 8192, 128, False, 128, 64)  # its run_regression_perf's
        q, kv = torch.randn(1, 128, 32, 128, dtype=half), torch.randn(1, 8192, 32, 128, dtype=half)
        rows.append(("example_mha_inference: kernel(Q, K, V)", per_call_us(lambda: kernel(q, kv, kv))))

        decode = load(f"{examples}/flash_decoding/example_gqa_decode.py")
        # get_heuristic_config()'s choice for sm_90 (it asks the device, which is faked here)
        config = dict(block_N=128, block_H=64, num_split=8, num_stages=2, threads=128)
        split = decode.flashattn(1, 32, 8, 8192, 128, **config)
        Q, K = torch.randn(1, 32, 128, dtype=half), torch.randn(1, 8192, 8, 128, dtype=half)
        mask = torch.ones(1, 8192, 8, dtype=torch.uint8)
        rows.append(("example_gqa_decode: kernel(Q, K, V, mask)", per_call_us(lambda: split(Q, K, K, mask))))

        sink = load(f"{examples}/attention_sink/example_mha_sink_fwd_bhsd.py")
        fwd = sink.flashattn(1, 32, 256, 256, 128, None, block_M=128, block_N=128, num_stages=2, threads=256)
        x, sinks = torch.randn(1, 32, 256, 128, dtype=half), torch.randn(32, dtype=half)
        rows.append(("example_mha_sink_fwd_bhsd: kernel(Q, K, V, sinks)", per_call_us(lambda: fwd(x, x, x, sinks))))

        # an eager @autotune(216 configs) @jit kernel called with every tunable given (session 16: 190 -> 9 us)
        sparse = load(f"{examples}/blocksparse_gemm/example_blocksparse_gemm.py")
        a, mask = torch.randn(1024, 1024, dtype=half), torch.rand(8, 8, 32) > 0.5
        rows.append(
            (
                "example_blocksparse_gemm: blocksparse_matmul(A, B, mask, 128, 128, 32, 2, 128, True)",
                per_call_us(lambda: sparse.blocksparse_matmul(a, a, mask, 128, 128, 32, 2, 128, True)),
            )
        )
    for name, us in rows:
        print(f"| {name} | {us:.2f} |")


if __name__ == "__main__":
    main()
